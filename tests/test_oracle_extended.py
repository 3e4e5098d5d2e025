"""Floating base, external wrenches and joint wrenches against Pinocchio."""

import warnings

import numpy as np
import pinocchio as pin
import pytest

from conftest import corpus_params, need_corpus
from oracle import assert_matches, pin_full, random_base
from random_urdf import random_urdf
from rnea_cli import load_urdf
from rnea_cli.rnea import inverse_dynamics
from test_oracle import pin_loadable_xml, random_motion

FREE = ["solo12", "anymal_c", "cassie", "simple_humanoid", "romeo", "romeo_laas_small"]


def load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_urdf(path)


def compare(model, pm, seed, *, floating, with_fext, N=6):
    rng = np.random.default_rng(seed)
    q, qd, qdd = random_motion(rng, N, model.n)
    gravity = rng.normal(0, 5, 3)
    base = random_base(rng, N) if floating else None
    bodies = list(range(model.n)) + ([-1] if floating else [])
    f_ext = {b: rng.normal(0, 3, (N, 6)) for b in bodies if rng.random() < 0.5} if with_fext else None
    ours = inverse_dynamics(model, q, qd, qdd, gravity=gravity, base=base, f_ext=f_ext, wrenches=True)
    tau, base_wrench, W = pin_full(pm, model.joint_names, q, qd, qdd, gravity=gravity, base=base, f_ext=f_ext)
    assert_matches(ours.tau, tau)
    assert_matches(ours.joint_wrenches.reshape(N, -1), W.reshape(N, -1))
    if floating:
        assert_matches(ours.base_wrench, base_wrench)


@pytest.mark.parametrize("path", corpus_params(FREE))
def test_floating_base_matches_pinocchio(path):
    path = need_corpus(path)
    pm = pin.buildModelFromXML(pin_loadable_xml(path), pin.JointModelFreeFlyer())
    compare(load(path), pm, 11, floating=True, with_fext=True)


@pytest.mark.parametrize("path", corpus_params())
def test_external_and_joint_wrenches_match_pinocchio(path):
    path = need_corpus(path)
    pm = pin.buildModelFromXML(pin_loadable_xml(path))
    compare(load(path), pm, 12, floating=False, with_fext=True)


@pytest.mark.parametrize("seed", range(15))
def test_random_trees_floating_with_wrenches(seed):
    xml, _ = random_urdf(200 + seed)
    model = load_urdf(xml)
    compare(model, pin.buildModelFromXML(xml, pin.JointModelFreeFlyer()), seed, floating=True, with_fext=True)
    compare(model, pin.buildModelFromXML(xml), seed, floating=False, with_fext=True)
