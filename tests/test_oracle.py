"""The engine against Pinocchio: every robot of the shared corpus, and random trees."""

import importlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from conftest import corpus_params, load, need_corpus
from oracle import assert_matches, pin_loadable_xml, pin_model, pin_rnea, random_motion
from random_urdf import random_urdf
from rnea_cli import load_urdf, rnea

GRAVITIES = [pytest.param((0.0, 0.0, -9.81), id="gravity"), pytest.param((0.0, 0.0, 0.0), id="no-gravity"),
             pytest.param((1.3, -2.2, -9.0), id="oblique-gravity")]


@pytest.mark.parametrize("gravity", GRAVITIES)
@pytest.mark.parametrize("path", corpus_params())
def test_corpus_matches_pinocchio(path, gravity):
    path = need_corpus(path)
    model = load(path)
    pm = pin_model(xml=pin_loadable_xml(path))
    q, qd, qdd = random_motion(np.random.default_rng(7), 16, model.n)
    assert_matches(rnea(model, q, qd, qdd, gravity=gravity), pin_rnea(pm, model.joint_names, q, qd, qdd, gravity))


TREES = [seed for seed in range(42) if random_urdf(seed)[1] > 0][:40]  # trees with a movable joint


def test_a_tree_without_movable_joints_has_no_torques():
    xml, movable = random_urdf(14)
    assert movable == 0 and pin_model(xml=xml).nv == 0
    assert rnea(load_urdf(xml), np.zeros((8, 0)), np.zeros((8, 0)), np.zeros((8, 0))).shape == (8, 0)


@pytest.mark.parametrize("seed", TREES)
def test_random_trees_match_pinocchio(seed):
    xml, movable = random_urdf(seed)
    model = load_urdf(xml)
    assert model.n == movable
    pm = pin_model(xml=xml)
    rng = np.random.default_rng(seed)
    gravity = rng.normal(0, 5, 3)
    q, qd, qdd = random_motion(rng, 8, model.n)
    assert_matches(rnea(model, q, qd, qdd, gravity=gravity), pin_rnea(pm, model.joint_names, q, qd, qdd, gravity))


def test_chunks_do_not_change_the_result(monkeypatch):
    """A trajectory longer than one chunk gives the same torques as sample by sample."""
    engine = importlib.import_module("rnea_cli.rnea")  # the module, not the function it exports

    model = load_urdf(random_urdf(3, n_links=8)[0])
    q, qd, qdd = random_motion(np.random.default_rng(1), 37, model.n)
    monkeypatch.setattr(engine, "CHUNK", 5)
    chunked = rnea(model, q, qd, qdd)
    one_by_one = np.array([rnea(model, *x) for x in zip(q, qd, qdd)])
    np.testing.assert_allclose(chunked, one_by_one, rtol=0, atol=1e-12)


def test_working_arrays_are_kept_between_calls_and_change_nothing(monkeypatch):
    """The plan keeps its working arrays for the next call (64-byte aligned, viewed for any chunk
    length): calls of other lengths, before or after, and calls from several threads at once give
    the numbers of a model used for the first time."""
    engine = importlib.import_module("rnea_cli.rnea")

    xml, _ = random_urdf(5, n_links=7)
    monkeypatch.setattr(engine, "CHUNK", 16)
    rng = np.random.default_rng(4)
    motions = [random_motion(rng, N, load_urdf(xml).n) for N in (40, 3, 16, 17, 1, 40)]
    fresh = [rnea(load_urdf(xml), *m) for m in motions]  # each a new model, so a new plan
    model = load_urdf(xml)
    for m, expected in zip(motions, fresh):
        np.testing.assert_array_equal(rnea(model, *m), expected)
    plan = engine._plan(model)
    assert len(plan.spare) == 1 and plan.spare[0].N == 16
    kept = plan.spare[0]
    rnea(model, *motions[1])
    assert plan.spare == [kept]  # reused, not made anew
    work = engine._Work(model.n, 4096)
    for N in (4096, 4000, 8):
        assert all(a.ctypes.data % 64 == 0 for a in work.view(N).values())

    def many(k):
        return [rnea(model, *motions[(k + j) % len(motions)]) for j in range(30)]

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(many, range(4)))
    for k, got in enumerate(results):
        for j, tau in enumerate(got):
            np.testing.assert_array_equal(tau, fresh[(k + j) % len(motions)])
    assert len(plan.spare) == 1  # one kept, however many ran at once
    # joint wrenches need room the plain call's arrays lack: new arrays, then kept for both
    from rnea_cli.rnea import inverse_dynamics

    assert not plan.spare[0].wrenches
    W = inverse_dynamics(model, *motions[0], wrenches=True).joint_wrenches
    np.testing.assert_array_equal(W, inverse_dynamics(load_urdf(xml), *motions[0], wrenches=True).joint_wrenches)


def test_column_major_input_gives_the_same_torques(monkeypatch):
    """The CLI passes (N, n) views of (n, N) arrays; they are read in place, chunk by chunk, and
    give the same numbers as row-major arrays (also against Pinocchio, with a short last chunk)."""
    engine = importlib.import_module("rnea_cli.rnea")

    xml, _ = random_urdf(4, n_links=6)
    model, pm = load_urdf(xml), pin_model(xml=xml)
    q, qd, qdd = random_motion(np.random.default_rng(2), 23, model.n)
    monkeypatch.setattr(engine, "CHUNK", 7)
    rows = rnea(model, q, qd, qdd)
    columns = rnea(model, *(np.asfortranarray(x) for x in (q, qd, qdd)))
    np.testing.assert_array_equal(columns, rows)
    assert rows.flags.c_contiguous and columns.flags.f_contiguous and not columns.flags.c_contiguous
    # chunk rows are read in place from column-major input (no copies), copied from row-major input
    copies = []
    real = engine._rows

    def spy(x, out):
        rows = real(x, out)
        if rows is not x:
            copies.append(x.shape)
        return rows

    monkeypatch.setattr(engine, "_rows", spy)
    rnea(model, *(np.asfortranarray(x) for x in (q, qd, qdd)))
    assert copies == []
    rnea(model, q, qd, qdd)
    assert copies == [(model.n, 7)] * 9 + [(model.n, 2)] * 3  # q, qd, qdd per chunk: 23 = 7 + 7 + 7 + 2
    assert_matches(columns, pin_rnea(pm, model.joint_names, q, qd, qdd, (0.0, 0.0, -9.81)))
