"""The engine against Pinocchio: every robot of the shared corpus, and random trees (torques and
body placements); chunks, threads and memory layout change no bit."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import FREE, corpus_params, load, need_corpus
from oracle import (assert_matches, check_placements, fixed_and_free, pin_loadable_xml, pin_model, pin_rnea,
                    random_base, random_motion)
from random_urdf import random_urdf
from rnea_cli import load_urdf, rnea, rnea_reference
from rnea_cli.dynamics import engine
from rnea_cli.dynamics.workspace import Workspace

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
    model = load_urdf(random_urdf(3, n_links=8)[0])
    q, qd, qdd = random_motion(np.random.default_rng(1), 37, model.n)
    monkeypatch.setattr(engine, "CHUNK", 5)
    chunked = rnea(model, q, qd, qdd)
    one_by_one = np.array([rnea(model, *x) for x in zip(q, qd, qdd)])
    np.testing.assert_allclose(chunked, one_by_one, rtol=0, atol=1e-12)


def test_a_workspace_reused_threads_and_chunk_lengths_change_no_bit(monkeypatch):
    """Calls of several lengths through one Workspace, from several threads at once, and with the
    engine's own threads, give exactly the numbers of a fresh model's first call."""
    xml, _ = random_urdf(5, n_links=7)
    monkeypatch.setattr(engine, "CHUNK", 16)
    rng = np.random.default_rng(4)
    motions = [random_motion(rng, N, load_urdf(xml).n) for N in (40, 3, 16, 17, 1, 40)]
    fresh = [rnea(load_urdf(xml), *m) for m in motions]
    model = load_urdf(xml)
    workspace = Workspace(model)
    for m, expected in zip(motions, fresh):
        np.testing.assert_array_equal(rnea(model, *m, workspace=workspace), expected)
        np.testing.assert_array_equal(engine.inverse_dynamics(model, *m, workspace=workspace, threads=3).tau,
                                      expected)

    def many(k):
        return [rnea(model, *motions[(k + j) % len(motions)], workspace=workspace) for j in range(30)]

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(many, range(4)))
    for k, got in enumerate(results):
        for j, tau in enumerate(got):
            np.testing.assert_array_equal(tau, fresh[(k + j) % len(motions)])
    # joint wrenches need room the plain call's arrays lack
    W = engine.inverse_dynamics(model, *motions[0], wrenches=True, workspace=workspace).joint_wrenches
    np.testing.assert_array_equal(W, engine.inverse_dynamics(load_urdf(xml), *motions[0], wrenches=True).joint_wrenches)


def test_a_samples_torques_are_the_same_bits_in_any_chunk_of_any_length(monkeypatch):
    """A sample alone, or in a call of any length cut into chunks (of at least two samples: BLAS
    multiplies a lone vector another way) on any number of threads, gives the bits it gets in one
    long call; the joint wrenches and a floating base's wrench too."""
    xml, _ = random_urdf(6, n_links=7)
    model = load_urdf(xml)
    monkeypatch.setattr(engine, "CHUNK", 16)
    monkeypatch.setattr(engine, "THREADED_CHUNK", 32)
    rng = np.random.default_rng(5)
    motion = random_motion(rng, 200, model.n)
    base = list(random_base(rng, 200))
    whole = engine.inverse_dynamics(model, *motion, base=base, wrenches=True)
    for N in (1, 2, 3, 17, 33, 65, 200):
        for threads in (1, 2, 3, 80):
            part = engine.inverse_dynamics(model, *(x[:N] for x in motion), base=[b[:N] for b in base],
                                           wrenches=True, threads=threads)
            for got, expected in zip(part, whole):
                np.testing.assert_array_equal(got, expected[:N], err_msg=f"{N} samples on {threads} threads")
    alone = engine.inverse_dynamics(model, *(x[-1] for x in motion), base=[b[-1] for b in base], wrenches=True)
    for got, expected in zip(alone, whole):
        np.testing.assert_array_equal(got, expected[-1])


def test_column_major_input_gives_the_same_torques(monkeypatch):
    """The CLI passes (N, n) views of (n, N) arrays: the same numbers as row-major arrays (also
    against Pinocchio, with a short last chunk), laid out like the input."""
    xml, _ = random_urdf(4, n_links=6)
    model, pm = load_urdf(xml), pin_model(xml=xml)
    q, qd, qdd = random_motion(np.random.default_rng(2), 23, model.n)
    monkeypatch.setattr(engine, "CHUNK", 7)
    rows = rnea(model, q, qd, qdd)
    columns = rnea(model, *(np.asfortranarray(x) for x in (q, qd, qdd)))
    np.testing.assert_array_equal(columns, rows)
    assert rows.flags.c_contiguous and columns.flags.f_contiguous and not columns.flags.c_contiguous
    assert_matches(columns, pin_rnea(pm, model.joint_names, q, qd, qdd, (0.0, 0.0, -9.81)))


@given(st.integers(0, 10_000), st.integers(1, 9))
@settings(max_examples=60, deadline=None)
def test_the_engine_is_the_textbook_algorithm(seed, n_links):
    """The fast engine equals rnea_reference (RBDA Table 5.1, one sample at a time, 6x6 matrices)
    on random trees, with gravity and external wrenches; and the reference equals Pinocchio."""
    xml, movable = random_urdf(seed, n_links=n_links + 1)
    model = load_urdf(xml)
    rng = np.random.default_rng(seed)
    gravity = rng.normal(0, 5, 3)
    q, qd, qdd = random_motion(rng, 3, model.n)
    f_ext = {b: rng.normal(size=(3, 6)) for b in range(model.n) if rng.random() < 0.5}
    fast = rnea(model, q, qd, qdd, gravity=gravity, f_ext=f_ext)
    reference = np.array([rnea_reference(model, q[k], qd[k], qdd[k], gravity, {b: w[k] for b, w in f_ext.items()})
                          for k in range(3)]).reshape(3, model.n)
    if model.n:
        assert_matches(fast, reference, rtol=1e-12)
        pm = pin_model(xml=xml)
        assert_matches(np.array([rnea_reference(model, q[k], qd[k], qdd[k], gravity) for k in range(3)]),
                       pin_rnea(pm, model.joint_names, q, qd, qdd, gravity))


@pytest.mark.parametrize("path", corpus_params(["iiwa14", "panda", "ur5", "solo12"]))
def test_the_reference_matches_pinocchio_on_real_robots(path):
    path = need_corpus(path)
    model = load(path)
    pm = pin_model(xml=pin_loadable_xml(path))
    q, qd, qdd = random_motion(np.random.default_rng(11), 4, model.n)
    reference = np.array([rnea_reference(model, *x) for x in zip(q, qd, qdd)])
    assert_matches(reference, pin_rnea(pm, model.joint_names, q, qd, qdd))
    assert_matches(rnea(model, q, qd, qdd), reference, rtol=1e-12)


@pytest.mark.parametrize("path", corpus_params())
def test_body_placements_match_pinocchio(path):
    path = need_corpus(path)
    fixed_and_free(check_placements, pin_loadable_xml(path), 21, path.stem in FREE, load(path))


@pytest.mark.parametrize("seed", range(10))
def test_body_placements_of_random_trees(seed):
    fixed_and_free(check_placements, random_urdf(300 + seed)[0], seed)
