"""Closed forms and identities of rigid-body dynamics, independent of any other library."""

import numpy as np
import pytest

from conftest import ROBOTS
from random_urdf import random_urdf
from rnea_cli import load_urdf, rnea

G = 9.81

PENDULUM = """<robot name="pendulum">
  <link name="base"/>
  <link name="bob"><inertial><origin xyz="{l} 0 0"/><mass value="{m}"/>
    <inertia ixx="0.003" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="{izz}"/></inertial></link>
  <joint name="swing" type="revolute"><parent link="base"/><child link="bob"/><axis xyz="0 0 1"/>
    <limit effort="10" velocity="1" lower="-3" upper="3"/></joint>
</robot>"""


def test_single_pendulum():
    m, l, izz = 1.7, 0.35, 0.004
    model = load_urdf(PENDULUM.format(m=m, l=l, izz=izz))
    rng = np.random.default_rng(0)
    q, qd, qdd = (rng.uniform(-3, 3, (50, 1)) for _ in range(3))
    # tau = (I_c + m l^2) qdd + m g l cos q, gravity along -y in the plane of motion
    expected = (izz + m * l * l) * qdd + m * G * l * np.cos(q)
    np.testing.assert_allclose(rnea(model, q, qd, qdd, gravity=(0, -G, 0)), expected, rtol=1e-13, atol=1e-14)


def test_two_link_planar_arm():
    """robots/planar2.urdf against the textbook (Spong) equations; parameters from its header."""
    model = load_urdf(ROBOTS / "planar2.urdf")
    m1, l1, lc1, I1 = 2.0, 0.5, 0.25, 2.0 * 0.5**2 / 12
    m2, lc2, I2 = 1.5, 0.2, 1.5 * 0.4**2 / 12
    rng = np.random.default_rng(1)
    q, qd, qdd = (rng.uniform(-3, 3, (100, 2)) for _ in range(3))
    c2, s2 = np.cos(q[:, 1]), np.sin(q[:, 1])
    M11 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * c2) + I1 + I2
    M12 = m2 * (lc2**2 + l1 * lc2 * c2) + I2
    M22 = m2 * lc2**2 + I2
    k = m2 * l1 * lc2 * s2
    g1 = (m1 * lc1 + m2 * l1) * G * np.cos(q[:, 0]) + m2 * lc2 * G * np.cos(q[:, 0] + q[:, 1])
    g2 = m2 * lc2 * G * np.cos(q[:, 0] + q[:, 1])
    tau1 = M11 * qdd[:, 0] + M12 * qdd[:, 1] - k * (2 * qd[:, 0] * qd[:, 1] + qd[:, 1] ** 2) + g1
    tau2 = M12 * qdd[:, 0] + M22 * qdd[:, 1] + k * qd[:, 0] ** 2 + g2
    np.testing.assert_allclose(rnea(model, q, qd, qdd, gravity=(0, -G, 0)), np.column_stack([tau1, tau2]),
                               rtol=1e-12, atol=1e-12)
    # with the default gravity (along -z, normal to the plane) gravity does no work
    np.testing.assert_allclose(rnea(model, q, qd, qdd)[:, 0], tau1 - g1, rtol=1e-12, atol=1e-12)


def mass_matrix(model, q):
    """M(q) column by column: M e_k = rnea(q, 0, e_k) without gravity."""
    n = model.n
    eye = np.eye(n)
    return rnea(model, np.repeat(q[None], n, axis=0), np.zeros((n, n)), eye, gravity=(0, 0, 0)).T


def models_with_mass():
    yield pytest.param(load_urdf(ROBOTS / "arm7.urdf"), id="arm7")
    for seed in range(8):
        xml, _ = random_urdf(100 + seed, n_links=7, types=("revolute", "continuous", "prismatic"), massless=0)
        yield pytest.param(load_urdf(xml), id=f"random{100 + seed}")


@pytest.mark.parametrize("model", list(models_with_mass()))
def test_tau_is_mass_matrix_times_qdd_plus_bias(model):
    rng = np.random.default_rng(2)
    for _ in range(5):
        q, qd, qdd = rng.uniform(-2, 2, (3, model.n))
        M = mass_matrix(model, q)
        h = rnea(model, q, qd, np.zeros(model.n))
        np.testing.assert_allclose(rnea(model, q, qd, qdd), M @ qdd + h, rtol=1e-11, atol=1e-11)
        np.testing.assert_allclose(M, M.T, rtol=1e-12, atol=1e-12)
        assert np.linalg.eigvalsh(M).min() > 0


@pytest.mark.parametrize("model", list(models_with_mass()))
def test_tau_is_linear_in_qdd(model):
    rng = np.random.default_rng(3)
    q, qd, a, b = rng.uniform(-2, 2, (4, 10, model.n))
    alpha, beta = 0.7, -1.9
    lhs = rnea(model, q, qd, alpha * a + beta * b)
    h = rnea(model, q, qd, np.zeros_like(a))
    rhs = alpha * (rnea(model, q, qd, a) - h) + beta * (rnea(model, q, qd, b) - h) + h
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10, atol=1e-10)


def test_static_gravity_torque_is_the_gradient_of_potential_energy():
    """At rest, tau = dV/dq with V = -m g . c_total, checked by central differences."""
    model = load_urdf(ROBOTS / "arm7.urdf")
    from rnea_cli.dynamics import spatial

    def potential(q):
        V, H = 0.0, [None] * model.n
        for i, j in enumerate(model.joints):
            H[i] = (np.eye(4) if j.parent < 0 else H[j.parent]) @ model.placement(i, q[i])
            m, c, _ = spatial.mass_properties(model.inertia[i])
            V += m * G * (H[i][:3, :3] @ c + H[i][:3, 3])[2]
        return V

    q = np.random.default_rng(4).uniform(-1, 1, model.n)
    eps = 1e-6
    grad = [(potential(q + eps * e) - potential(q - eps * e)) / (2 * eps) for e in np.eye(model.n)]
    np.testing.assert_allclose(rnea(model, q, np.zeros(7), np.zeros(7)), grad, rtol=1e-6, atol=1e-6)


def test_shapes_are_checked():
    model = load_urdf(ROBOTS / "planar2.urdf")
    with pytest.raises(ValueError, match=r"qd has shape \(3, 2\), but q has shape \(4, 2\)"):
        rnea(model, np.zeros((4, 2)), np.zeros((3, 2)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match=r"expected \(N, 2\) or \(2,\)"):
        rnea(model, np.zeros((4, 3)), np.zeros((4, 3)), np.zeros((4, 3)))
    assert rnea(model, np.zeros(2), np.zeros(2), np.ones(2)).shape == (2,)
    assert rnea(model, np.zeros((0, 2)), np.zeros((0, 2)), np.zeros((0, 2))).shape == (0, 2)
