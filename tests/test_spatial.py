"""The spatial-algebra module against its definitions (Featherstone ch. 2)."""

import numpy as np
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from rnea_cli.dynamics import spatial

vec3 = arrays(np.float64, 3, elements=st.floats(-10, 10))
vec6 = arrays(np.float64, 6, elements=st.floats(-10, 10))


def random_pose(rpy, p):
    return spatial.pose(spatial.rpy(*rpy), p)


@given(vec6, vec6)
def test_crm_is_the_motion_cross_product(v, m):
    w, u, mw, mu = v[:3], v[3:], m[:3], m[3:]
    np.testing.assert_allclose(spatial.crm(v) @ m, np.r_[np.cross(w, mw), np.cross(w, mu) + np.cross(u, mw)],
                               atol=1e-9)


@given(vec6, vec6, vec6)
def test_crf_is_dual_to_crm(v, m, f):
    # (v x m) . f + m . (v x* f) = 0
    scale = np.abs(v).sum() * np.abs(m).sum() * np.abs(f).sum()  # bounds every term of the sums
    assert abs((spatial.crm(v) @ m) @ f + m @ (spatial.crf(v) @ f)) <= 1e-14 * (1 + scale)


@given(vec3, vec3, vec3, vec3)
@settings(max_examples=50)
def test_xup_composes_and_inverts(rpy1, p1, rpy2, p2):
    A, B = random_pose(rpy1, p1), random_pose(rpy2, p2)
    np.testing.assert_allclose(spatial.xup(A @ B), spatial.xup(B) @ spatial.xup(A), atol=1e-9)
    np.testing.assert_allclose(spatial.xup(spatial.pose_inv(A)) @ spatial.xup(A), np.eye(6), atol=1e-9)


@given(vec3, vec3)
def test_xup_maps_velocity_of_a_point(rpy, p):
    """A body turning at w about the origin of a: the point at b's origin moves at w x p."""
    H = random_pose(rpy, p)
    w = np.array([0.3, -1.2, 0.8])
    v_b = spatial.xup(H) @ np.r_[w, 0, 0, 0]
    R = H[:3, :3]
    np.testing.assert_allclose(R @ v_b[:3], w, atol=1e-9)
    np.testing.assert_allclose(R @ v_b[3:], np.cross(w, p), atol=1e-9)


@given(st.floats(0.01, 10), vec3)
def test_mcI_round_trips_and_has_parallel_axis(m, c):
    Ic = np.diag([0.1, 0.2, 0.25])
    I = spatial.mcI(m, c, Ic)
    m2, c2, Ic2 = spatial.mass_properties(I)
    assert m2 == m
    np.testing.assert_allclose(c2, c, atol=1e-12)
    np.testing.assert_allclose(Ic2, Ic, atol=1e-9)
    # rotational inertia about the origin: Ic + m (|c|^2 1 - c c^T)
    np.testing.assert_allclose(I[:3, :3], Ic + m * (c @ c * np.eye(3) - np.outer(c, c)), atol=1e-9)


@given(vec3, st.floats(-7, 7))
@example(np.array([8.6488158, 1.29912796e-03, 1.29912796e-03]), 0.0)  # near x: e_x's projection cancelled
def test_axis_angle_and_align_z(axis, theta):
    n = np.linalg.norm(axis)
    assume(n >= 1e-3)
    axis = axis / n
    R = spatial.axis_angle(axis, theta)
    np.testing.assert_allclose(R @ axis, axis, atol=1e-12)
    np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-12)
    A = spatial.align_z(axis)
    np.testing.assert_allclose(A @ np.array([0, 0, 1.0]), axis, atol=1e-12)
    np.testing.assert_allclose(A.T @ A, np.eye(3), atol=1e-15)  # orthonormal to rounding, not to 1e-12
    assert np.linalg.det(A) > 0


def test_the_engines_cos_sin_are_within_an_ulp_of_libms():
    """The engine's cos/sin (fdlibm's method in element-wise numpy) against numpy's libm cos and
    sin, on the values where the reduction is most exposed: multiples of pi/2 and their
    neighbours, many turns, tiny angles, -0.0, and |q| up to 1e8."""
    rng = np.random.default_rng(5)
    special = np.pi / 2 * np.arange(-8, 9)
    q = np.concatenate([special, np.nextafter(special, 10), np.nextafter(special, -10), [0.0, -0.0, 1e-300, -1e-12],
                        rng.uniform(-4, 4, 20000), rng.uniform(-1e6, 1e6, 20000), rng.uniform(-1e8, 1e8, 2000),
                        rng.uniform(-1e-3, 1e-3, 2000)])
    c, s = spatial.cos_sin(q.reshape(1, -1), *np.empty((2, 1, len(q))), np.empty((5, 1, len(q))))
    for ours, libm in ((c[0], np.cos(q)), (s[0], np.sin(q))):
        assert np.all(np.abs(ours - libm) <= np.spacing(np.abs(libm)))  # at most one ulp apart
    # near large multiples of pi/2 the value is tiny: the reduction's rounding (~1e-24) is absolute
    k = rng.integers(1, 2 ** 26, 20000)
    q = np.concatenate([k * (np.pi / 2), np.nextafter(k * (np.pi / 2), 0)])
    c, s = spatial.cos_sin(q.reshape(1, -1), *np.empty((2, 1, len(q))), np.empty((5, 1, len(q))))
    assert np.abs(c[0] - np.cos(q)).max() <= 1e-22 and np.abs(s[0] - np.sin(q)).max() <= 1e-22
    assert np.signbit(s[0, len(special) * 3 + 1])  # sin(-0.0) = -0.0


def test_cos_sin_of_one_value_is_the_same_bits_as_among_many():
    rng = np.random.default_rng(6)
    q = rng.uniform(-10, 10, 257)
    c, s = spatial.cos_sin(q, np.empty(257), np.empty(257), np.empty((5, 257)))
    for k in (0, 1, 128, 256):
        assert spatial.cos_sin_of(q[k]) == (c[k], s[k])


@settings(max_examples=50, deadline=None)
@given(st.floats(0.01, 50), vec3, arrays(np.float64, 6, elements=st.floats(-2, 2)), vec6, vec6)
def test_the_engines_body_force_is_i_a_plus_v_cross_i_v(m, c, moments, v, a):
    """engine._body_forces, written with I [v, a] and three cross products (docs/engine.md,
    section 2), against the matrix form I a + crf(v) I v, for any mass, centre of mass and (even
    non-physical) inertia."""
    from types import SimpleNamespace

    from rnea_cli.dynamics import engine, workspace

    Ic = np.array([[moments[0], moments[3], moments[4]], [moments[3], moments[1], moments[5]],
                   [moments[4], moments[5], moments[2]]])
    I = spatial.mcI(m, c, Ic)
    plan = SimpleNamespace(inertia=[workspace.Linear(I)])
    va = np.stack([v.reshape(2, 3), a.reshape(2, 3)], axis=-1)[None, ..., None]  # (1, 2, 3, 2, 1): [v, a]
    f = np.empty((1, 2, 3, 1))
    engine._body_forces(plan, va, np.empty_like(va), f, np.empty((1, 2, 1)), 1)
    expected = I @ a + spatial.crf(v) @ I @ v
    # round-off of sums of products each up to |I| max(|a|, |v|^2): the result may be 0 while its
    # terms are ~1e5 (m = 47, c = v = 6.8 in every component)
    terms = np.abs(I).max() * max(np.abs(a).max(), np.abs(v).max() ** 2, 1e-300)
    np.testing.assert_allclose(f.reshape(6), expected, rtol=0, atol=30 * 2.3e-16 * terms)
