"""The joint-torque regressor: Y pi against the engine's torques, and Y against Pinocchio's
computeJointTorqueRegressor, on random trees and the shared robots, fixed and floating bases."""

import numpy as np
import pinocchio as pin
import pytest

from conftest import corpus_params, load, need_corpus
from oracle import (assert_matches, pin_configuration, pin_loadable_xml, pin_model, random_base, random_motion,
                    swap_halves)
from random_urdf import random_urdf
from rnea_cli.dynamics import engine, inertial
from rnea_cli import load_urdf, regressor

TREES = [seed for seed in range(30) if random_urdf(seed)[1] > 0][:24]  # trees with a movable joint


def pin_regressor(pm, joint_names, q, qd, qdd, gravity=engine.GRAVITY, base=None):
    """Pinocchio's regressor (N, rows, 10 bodies) in our rows and columns: rows [n; f] of the base
    (for a free-flyer) then our joints; columns the free-flyer's body, then our joints' bodies."""
    pm.gravity.linear = np.asarray(gravity, dtype=float)
    data = pm.createData()
    ids = [pm.getJointId(name) for name in joint_names]
    assert pm.njoints - 1 == len(ids) + (base is not None), "Pinocchio's bodies are not ours"
    rows = [pm.joints[j].idx_v for j in ids]
    columns = [c for j in ([1] if base is not None else []) + ids for c in range(10 * (j - 1), 10 * j)]
    out = []
    for k in range(len(q)):
        Q, V, A = pin_configuration(pm, joint_names, q[k]), np.zeros(pm.nv), np.zeros(pm.nv)
        V[rows], A[rows] = qd[k], qdd[k]
        if base is not None:
            Q[:7], V[:6], A[:6] = base[0][k], swap_halves(base[1][k]), swap_halves(base[2][k])
        R = np.reshape(pin.computeJointTorqueRegressor(pm, data, Q, V, A), (pm.nv, -1))  # a 1-row one comes 1-D
        if base is not None:  # Pinocchio's base rows are [f; n]
            R = np.concatenate([R[3:6], R[0:3], R[6:]])
            out.append(R[np.ix_(list(range(6)) + rows, columns)])
        else:
            out.append(R[np.ix_(rows, columns)])
    return np.array(out)


def row_scale(reference):
    """(N, rows, 1) the largest |entry| of each row (joint) of a regressor, per sample."""
    return np.abs(reference).max(axis=2, keepdims=True)


def assert_same_regressor(Y, reference, rtol=1e-12, scale=None):
    """|Y - reference| <= rtol times the largest |entry| of the reference's row (joint), per sample."""
    assert Y.shape == reference.shape, f"shape {Y.shape} vs {reference.shape}"
    scale = row_scale(reference) if scale is None else scale
    assert np.all(scale > 0), "a row of the reference is zero"
    err = np.abs(Y - reference) / scale
    assert err.max() <= rtol, f"largest relative difference {err.max():.3g} at {np.unravel_index(err.argmax(), err.shape)}"


def test_parameters_are_pinocchios_dynamic_parameters():
    rng = np.random.default_rng(3)
    for _ in range(5):
        m, c, L = rng.uniform(0.1, 3), rng.normal(size=3), rng.normal(size=(3, 3))
        Ic = L @ L.T
        expected = pin.Inertia(m, c, Ic).toDynamicParameters()
        pi = inertial.dynamic_parameters(inertial.spatial.mcI(m, c, Ic))
        np.testing.assert_allclose(pi, expected, rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(inertial.spatial_inertia(pi), inertial.spatial.mcI(m, c, Ic), rtol=0, atol=1e-14)
    assert inertial.PARAMETERS == ("m", "mx", "my", "mz", "ixx", "ixy", "iyy", "ixz", "iyz", "izz")


@pytest.mark.parametrize("seed", TREES)
def test_y_pi_is_the_engines_torques_on_random_trees(seed):
    model = load_urdf(random_urdf(seed)[0])
    rng = np.random.default_rng(seed)
    gravity = rng.normal(0, 5, 3)
    q, qd, qdd = random_motion(rng, 9, model.n)
    Y = regressor(model, q, qd, qdd, gravity=gravity)
    assert Y.shape == (9, model.n, 10 * model.n)
    assert_matches(Y @ inertial.parameters(model), engine.rnea(model, q, qd, qdd, gravity=gravity), rtol=1e-12)


@pytest.mark.parametrize("seed", TREES)
def test_y_pi_is_the_engines_base_wrench_and_torques_on_a_floating_base(seed):
    model = load_urdf(random_urdf(seed)[0])
    rng = np.random.default_rng(seed)
    gravity = rng.normal(0, 5, 3)
    q, qd, qdd = random_motion(rng, 9, model.n)
    base = random_base(rng, 9)
    Y = regressor(model, q, qd, qdd, gravity=gravity, base=base)
    assert Y.shape == (9, 6 + model.n, 10 * (model.n + 1))
    out = engine.inverse_dynamics(model, q, qd, qdd, gravity=gravity, base=base)
    assert_matches(Y @ inertial.parameters(model, floating=True), np.concatenate([out.base_wrench, out.tau], axis=1),
                   rtol=1e-12)


@pytest.mark.parametrize("seed", TREES)
def test_y_is_pinocchios_regressor_on_random_trees(seed):
    xml, _ = random_urdf(seed)
    model = load_urdf(xml)
    rng = np.random.default_rng(seed + 100)
    gravity = rng.normal(0, 5, 3)
    q, qd, qdd = random_motion(rng, 5, model.n)
    assert_same_regressor(regressor(model, q, qd, qdd, gravity=gravity),
                          pin_regressor(pin_model(xml=xml), model.joint_names, q, qd, qdd, gravity))
    base = random_base(rng, 5)
    assert_same_regressor(regressor(model, q, qd, qdd, gravity=gravity, base=base),
                          pin_regressor(pin_model(xml=xml, free=True), model.joint_names, q, qd, qdd, gravity, base))


@pytest.mark.parametrize("path", corpus_params())
def test_the_shared_robots_against_the_engine_and_pinocchio(path):
    path = need_corpus(path)
    model = load(path)
    xml = pin_loadable_xml(path)
    q, qd, qdd = random_motion(np.random.default_rng(11), 6, model.n)
    Y = regressor(model, q, qd, qdd)
    assert_matches(Y @ inertial.parameters(model), engine.rnea(model, q, qd, qdd), rtol=1e-12)
    assert_same_regressor(Y, pin_regressor(pin_model(xml=xml), model.joint_names, q, qd, qdd))
    base = random_base(np.random.default_rng(12), 6)
    assert_same_regressor(regressor(model, q, qd, qdd, base=base),
                          pin_regressor(pin_model(xml=xml, free=True), model.joint_names, q, qd, qdd, base=base))


@pytest.mark.parametrize("seed", [s for s in TREES if "fixed" in random_urdf(s)[0]][:8])
def test_fixed_joints_kept_as_joints_map_onto_pinocchios_merged_bodies(seed):
    """Pinocchio merges a link fixed to a body into it; a model that keeps fixed joints has a body
    for it. Its columns are those of the body it merges into, moved to its frame: with T the
    parameters' change of frame (pi_body = T pi_link), Y_link = Y_body T. The kept fixed joints'
    rows are the wrench they carry (the engine's tau for them)."""
    xml, _ = random_urdf(seed)
    folded, kept = load_urdf(xml), load_urdf(xml, fixed_joints=True)
    assert kept.n > folded.n, "the tree has no fixed joint below a movable one"
    rng = np.random.default_rng(seed)
    q, qd, qdd = random_motion(rng, 5, folded.n)
    movable = [kept.index(name) for name in folded.joint_names]
    Q, QD, QDD = (np.zeros((5, kept.n)) for _ in range(3))
    Q[:, movable], QD[:, movable], QDD[:, movable] = q, qd, qdd
    Y_kept = regressor(kept, Q, QD, QDD)
    assert_matches(Y_kept @ inertial.parameters(kept), engine.rnea(kept, Q, QD, QDD), rtol=1e-12)
    Y_pin = pin_regressor(pin_model(xml=xml), folded.joint_names, q, qd, qdd)
    link = {row.name: row for row in folded.links}
    for k, joint in enumerate(kept.joints):
        row = link[joint.child_link]
        block = Y_kept[:, movable, 10 * k:10 * k + 10]
        if row.body < 0:  # fixed to the fixed root: no motion, no columns in Pinocchio
            np.testing.assert_array_equal(block, 0.0)
            continue
        expected = Y_pin[:, :, 10 * row.body:10 * row.body + 10] @ inertial.moved(row.body_H_link)
        assert_same_regressor(block, expected, rtol=1e-12, scale=row_scale(Y_pin))


def assert_same_bits(a, b):
    """The same doubles bit for bit: a -0.0 is not a 0.0 here (assert_array_equal takes them as equal)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_array_equal(a.view(np.uint64), b.view(np.uint64))


def test_a_samples_regressor_is_the_same_bits_alone_and_in_any_chunk(monkeypatch):
    model = load_urdf(random_urdf(3, n_links=8)[0])
    rng = np.random.default_rng(5)
    q, qd, qdd = random_motion(rng, 37, model.n)
    base = random_base(rng, 37)
    for b in (None, base):
        whole = regressor(model, q, qd, qdd, base=b)
        monkeypatch.setattr(inertial, "CHUNK", 5)
        chunked = regressor(model, q, qd, qdd, base=b)
        monkeypatch.undo()
        assert_same_bits(chunked, whole)
        for k in (0, 17, 36):
            alone = regressor(model, q[k], qd[k], qdd[k], base=None if b is None else [x[k] for x in b])
            assert_same_bits(alone, whole[k])
        assert_same_bits(regressor(model, q[3:9], qd[3:9], qdd[3:9], base=b and [x[3:9] for x in b]),
                                      whole[3:9])


@pytest.mark.parametrize("seed", TREES[:8])
def test_some_columns_and_a_reused_array_give_the_whole_regressors_bits(seed):
    """columns=: the columns made are the whole Y's bits, the others stay 0 (compressed: those
    columns alone); out=: an array used again for other samples holds what a new Y would (its
    zero blocks are never written)."""
    model = load_urdf(random_urdf(seed)[0])
    rng = np.random.default_rng(seed + 7)
    for floating in (False, True):
        motions = [random_motion(rng, 11, model.n) for _ in range(2)]
        bases = [random_base(rng, 11) if floating else None for _ in range(2)]
        wholes = [regressor(model, *m, base=b) for m, b in zip(motions, bases)]
        size = wholes[0].shape[2]
        columns = np.sort(rng.choice(size, size // 3, replace=False))
        part = regressor(model, *motions[0], base=bases[0], columns=columns)
        assert_same_bits(part[..., columns], wholes[0][..., columns])
        assert not np.delete(part, columns, axis=2).any()
        assert_same_bits(regressor(model, *motions[0], base=bases[0], columns=columns, compressed=True),
                                      wholes[0][..., columns])
        out = np.zeros(wholes[0].shape[1:] + (11,))
        for m, b, whole in zip(motions, bases, wholes):
            assert_same_bits(regressor(model, *m, base=b, out=out), whole)
    with pytest.raises(ValueError, match="Y needs float64"):
        regressor(model, *motions[0], out=np.zeros((1, 1, 11)))
    with pytest.raises(ValueError, match="Y needs float64"):
        regressor(model, *motions[0], out=np.zeros(wholes[0].shape[1:] + (11,), dtype=np.float32))
    for wrong, message in (([-1], "in 0 .."), ([size], "in 0 .."), ([True, False], "indices"), ([2, 1], "ascending")):
        with pytest.raises(ValueError, match=message):
            regressor(model, *motions[0], columns=wrong, compressed=True)


def test_a_fixed_joint_that_moves_is_refused():
    kept = load_urdf(random_urdf(TREES[0])[0], fixed_joints=True)
    fixed = [i for i, j in enumerate(kept.joints) if j.type == "fixed"]
    assert fixed
    q = np.zeros((2, kept.n))
    q[:, fixed[0]] = 0.1
    with pytest.raises(ValueError, match="fixed joint"):
        regressor(kept, q, np.zeros_like(q), np.zeros_like(q))
    with pytest.raises(ValueError, match="shape"):
        regressor(kept, q[:, 1:], q[:, 1:], q[:, 1:])
