"""Planar joints: the plane normal to the axis, their columns, against Pinocchio."""

import numpy as np
import pinocchio as pin
import pytest

from conftest import columns as read_csv, joint_columns, planar_urdf, run, write_csv
from oracle import assert_matches, pin_full, random_motion
from rnea_cli import load_urdf
from rnea_cli.dynamics.engine import inverse_dynamics


def test_planar_joint_columns(tmp_path):
    (tmp_path / "p.urdf").write_text(planar_urdf())
    q = np.zeros((3, 4))
    cols = joint_columns(["pl_x", "pl_y", "pl_theta", "arm"], q, q, q)
    result = run("torques", tmp_path / "p.urdf", write_csv(tmp_path / "p.csv", cols), "-q")
    assert result.exit_code == 0
    assert list(read_csv(result.stdout)) == ["tau_pl_x", "tau_pl_y", "tau_pl_theta", "tau_arm"]


def test_planar_joint_matches_pinocchio():
    """Ours: (x, y, theta) with rates their time derivatives, forces along the stator axes.
    Pinocchio: the planar velocity [vx, vy, w] is in the moving frame."""
    model = load_urdf(planar_urdf())
    assert model.joint_names == ["pl_x", "pl_y", "pl_theta", "arm"]
    pm = pin.buildModelFromXML(planar_urdf())
    rng = np.random.default_rng(3)
    N = 6
    q, qd, qdd = random_motion(rng, N, 4)
    ours = inverse_dynamics(model, q, qd, qdd).tau
    ip, ia = pm.joints[pm.getJointId("pl")], pm.joints[pm.getJointId("arm")]
    data = pm.createData()
    for k in range(N):
        x, y, th, arm = q[k]
        c, s = np.cos(th), np.sin(th)
        Rt = np.array([[c, s], [-s, c]])  # R(theta)^T
        dRt = np.array([[-s, c], [-c, -s]]) * qd[k, 2]
        Q, V, A = np.zeros(pm.nq), np.zeros(pm.nv), np.zeros(pm.nv)
        Q[ip.idx_q:ip.idx_q + 4] = [x, y, c, s]
        Q[ia.idx_q] = arm
        V[ip.idx_v:ip.idx_v + 3] = [*(Rt @ qd[k, :2]), qd[k, 2]]
        A[ip.idx_v:ip.idx_v + 3] = [*(Rt @ qdd[k, :2] + dRt @ qd[k, :2]), qdd[k, 2]]
        V[ia.idx_v], A[ia.idx_v] = qd[k, 3], qdd[k, 3]
        tau = pin.rnea(pm, data, Q, V, A)
        f_local = tau[ip.idx_v:ip.idx_v + 2]
        expected = [*(Rt.T @ f_local), tau[ip.idx_v + 2], tau[ia.idx_v]]
        assert_matches(ours[k], np.array(expected))


@pytest.mark.parametrize("n", [(0.0, 0.6, 0.8), (0.95, 0.3122498999199199, 0.0), (-0.3, 0.2, -0.9327379053088815)])
def test_oblique_planar_joint_is_the_plane_normal_to_its_axis(n):
    """A planar joint about n is the chain P(x') P(y') R(n) with x' = e_x projected onto the plane
    and y' = n x x' (docs/beyond-arms.md's rule, written out here), checked through Pinocchio."""
    n = np.array(n) / np.linalg.norm(n)
    x = np.array([1.0, 0.0, 0.0]) - n[0] * n
    x /= np.linalg.norm(x)
    y = np.cross(n, x)
    oblique = load_urdf(planar_urdf(" ".join(repr(float(v)) for v in n)))
    for part, axis in zip(oblique.joints[:3], (x, y, n)):
        np.testing.assert_allclose(part.axis, axis, atol=1e-15)
    rng = np.random.default_rng(8)
    q, qd, qdd = random_motion(rng, 5, 4)
    chain = planar_urdf().replace('<joint name="pl" type="planar">', "").split("<joint name=\"arm\"")
    limit = '<limit effort="1" velocity="1" lower="-9" upper="9"/>'
    xml = f"""<robot name="ppr"><link name="w"/><link name="m1"/><link name="m2"/>
      {chain[0].split('<link name="w"/>')[1].split("<parent link")[0]}
      <joint name="x" type="prismatic"><parent link="w"/><child link="m1"/><origin xyz="0 0 1" rpy="0.5 0 0"/>
        <axis xyz="{' '.join(repr(float(v)) for v in x)}"/>{limit}</joint>
      <joint name="y" type="prismatic"><parent link="m1"/><child link="m2"/>
        <axis xyz="{' '.join(repr(float(v)) for v in y)}"/>{limit}</joint>
      <joint name="t" type="continuous"><parent link="m2"/><child link="b"/><axis xyz="{' '.join(repr(float(v)) for v in n)}"/></joint>
      <joint name="arm"{chain[1]}"""
    reference = pin.buildModelFromXML(xml)
    assert_matches(inverse_dynamics(oblique, q, qd, qdd).tau, pin_full(reference, ["x", "y", "t", "arm"], q, qd, qdd)[0])
