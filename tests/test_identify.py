"""Identification: base parameters (rank and regrouping), the estimate, and the URDF it writes."""

import numpy as np
import pytest

from conftest import CORPUS, load, need_corpus
from random_urdf import random_urdf
from rnea_cli import base_parameters, identify, load_urdf

INERTIAL = ('<inertial><origin xyz="{c}" rpy="0.1 0.2 0.3"/><mass value="{m}"/>'
            '<inertia ixx="0.03" ixy="0.001" ixz="0.002" iyy="0.04" iyz="0.003" izz="0.05"/></inertial>')
LIMIT = '<limit lower="-3" upper="3" effort="100" velocity="10"/>'


def chain_urdf(offsets, axis="0 1 0", tool=False):
    """A serial chain of revolute joints about `axis`, joint k at offsets[k] in its parent; tool: a
    link fixed to the last one."""
    links = ['<link name="base"/>'] + [f'<link name="l{k}">{INERTIAL.format(c=f"0.1 0.02 {0.2 + 0.1 * k}", m=1 + k)}'
                                        f'</link>' for k in range(len(offsets))]
    joints = [f'<joint name="j{k}" type="revolute"><parent link="{"base" if k == 0 else f"l{k - 1}"}"/>'
              f'<child link="l{k}"/><origin xyz="{o}"/><axis xyz="{axis}"/>{LIMIT}</joint>'
              for k, o in enumerate(offsets)]
    if tool:
        links.append(f'<link name="tool">{INERTIAL.format(c="0.05 0.01 0.1", m=0.7)}</link>')
        joints.append(f'<joint name="tool_mount" type="fixed"><parent link="l{len(offsets) - 1}"/>'
                      '<child link="tool"/><origin xyz="0.1 0 0.3" rpy="0.4 0 0"/></joint>')
    return '<robot name="chain">' + "".join(links + joints) + "</robot>"


def effort_matches(model, base, seed=9, N=50, rtol=1e-10, gravity=(0.0, 0.0, -9.81)):
    """W_base beta = W theta on fresh random motions, theta the model's with made-up friction."""
    cols = base.layout
    theta = cols.parameters()
    rng = np.random.default_rng(seed)
    theta[10 * model.n:] = rng.uniform(0.1, 2.0, cols.size - 10 * model.n)
    W = cols.regressor(*identify.random_motion(model, N, rng), gravity=gravity)
    tau = W @ theta
    np.testing.assert_allclose(W[:, :, base.independent] @ base.beta(theta), tau, rtol=0,
                               atol=rtol * np.abs(tau).max())


@pytest.mark.parametrize("gravity, expected", [((0.0, 0.0, -9.81), 3), ((0.0, 0.0, 0.0), 1)])
def test_a_pendulums_base_parameters(gravity, expected):
    """About y, under gravity along z: I_yy about the axis and the first moments m x, m z; without
    gravity only I_yy. Friction adds its viscous and Coulomb terms."""
    model = load_urdf(chain_urdf(["0 0 1"]))
    base = base_parameters(model, gravity=gravity)
    assert base.rank == expected + 2
    names = [base.layout.names[i] for i in base.independent]
    assert names[:expected] == (["l0.mx", "l0.mz", "l0.iyy"] if expected == 3 else ["l0.iyy"])
    assert names[expected:] == ["j0.viscous", "j0.coulomb"]
    effort_matches(model, base, gravity=gravity)


@pytest.mark.parametrize("gravity, expected", [((0.0, 0.0, -9.81), 6), ((0.0, 0.0, 0.0), 4)])
def test_a_planar_two_link_arms_classic_count(gravity, expected):
    """ZZ1 + m2 l1², MX1 + m2 l1, MY1, ZZ2, MX2, MY2 in a vertical plane; without gravity the
    first moments of link 1 go (ZZR1, ZZ2, MX2, MY2)."""
    model = load_urdf(chain_urdf(["0 0 0", "0 0 0.5"]))
    base = base_parameters(model, gravity=gravity)
    assert base.rank == expected + 4
    effort_matches(model, base, gravity=gravity)
    # the second link's mass regroups into the first link's: ZZR1 = I_yy1 + l1² m2 (I about the origin)
    iyy = base.layout.names.index("l0.iyy")
    row = list(base.independent).index(iyy)
    m2 = list(base.dependent).index(base.layout.names.index("l1.m"))
    assert base.K[row, m2] == pytest.approx(0.25, rel=1e-9)


def test_a_fixed_joint_kept_or_folded_has_the_same_base_parameters():
    xml = chain_urdf(["0 0 0", "0 0 0.5", "0.1 0 0.4"], tool=True)
    folded, kept = load_urdf(xml), load_urdf(xml, fixed_joints=True)
    assert kept.n == folded.n + 1
    base_folded, base_kept = base_parameters(folded), base_parameters(kept)
    assert base_kept.rank == base_folded.rank
    assert base_kept.layout.joints == [0, 1, 2] and base_kept.layout.size == base_folded.layout.size + 10
    effort_matches(kept, base_kept)
    effort_matches(folded, base_folded)


@pytest.mark.parametrize("seed", [1, 4, 7])
def test_random_trees_base_regressor_reproduces_the_efforts(seed):
    model = load_urdf(random_urdf(seed)[0])
    base = base_parameters(model, offset=True, armature=True)
    assert 0 < base.rank < base.layout.size
    effort_matches(model, base)


def test_the_ur5s_count():
    """36 inertial base parameters for a UR-type 6R arm, plus two friction terms a joint."""
    model = load(need_corpus(CORPUS / "ur5.urdf" if CORPUS.is_dir() else None))
    base = base_parameters(model)
    assert base.rank == 36 + 12
    effort_matches(model, base)
    assert base_parameters(model, seed=5, samples=300).independent.tolist() == base.independent.tolist()
