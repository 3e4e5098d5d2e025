"""`rnea identify --links`: a payload fixed on a UR5's tool identified alone, the rest of the robot
held at its URDF's values. Efforts are simulated through Pinocchio on the URDF with the true
payload (never through rnea's engine); rnea is given the URDF with a wrong guess."""

import json
import re

import numpy as np
import polars as pl
import pytest

from conftest import ROBOTS, corpus_robot, run
from rnea_cli import base_parameters, load_urdf
from rnea_cli.dynamics.inertial import dynamic_parameters, moved, spatial_inertia
from rnea_cli.dynamics.spatial import mass_properties, mcI, rpy
from rnea_cli.outputs.identified_urdf import identified_urdf
from rnea_cli.run.answers import identify
from test_identify import fourier_motion, pin_efforts
from test_identify_cli import write_run

MASS, COM, RPY = 1.7, np.array([0.03, -0.02, 0.05]), (0.3, -0.2, 0.5)  # the payload's truth, in its frame
INERTIA = [[0.012, 0.001, -0.002], [0.001, 0.009, 0.0015], [-0.002, 0.0015, 0.006]]  # about its COM
MOUNT = '<origin xyz="0.01 0.02 0.03" rpy="0.4 -0.3 0.2"/>'  # the payload's frame on tool0: turned
GUESSES = {  # what the user wrote for the payload in the URDF given to rnea
    "light": '<inertial><mass value="0.1"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial>',
    "none": "",
}


def payload_urdf(inertial):
    """The corpus's UR5 with a link 'payload' fixed on tool0 (the text before </robot> as it was)."""
    text = corpus_robot("ur5").read_text()
    link = (f'  <link name="payload">{inertial}</link>\n  <joint name="payload_mount" type="fixed">{MOUNT}'
            '<parent link="tool0"/><child link="payload"/></joint>\n')
    at = text.rindex("</robot>")
    return text[:at] + link + text[at:]


def true_inertial():
    """The true payload's <inertial> (its inertia given in turned axes) and its inertia about the COM
    in the payload's own axes."""
    text = lambda xs: " ".join(repr(float(x)) for x in xs)  # noqa: E731
    I = np.array(INERTIA)
    entries = " ".join(f'{key}="{float(I["xyz".index(key[1]), "xyz".index(key[2])])!r}"'
                       for key in identify.INERTIA_ENTRIES)
    return (f'<inertial><origin xyz="{text(COM)}" rpy="{text(RPY)}"/><mass value="{MASS!r}"/>'
            f'<inertia {entries}/></inertial>'), rpy(*RPY) @ I @ rpy(*RPY).T


def true_parameters():
    """(10,) the true payload's [m, m c, I about its origin] in its own frame."""
    return dynamic_parameters(mcI(MASS, COM, true_inertial()[1]))


class Payload:
    """The truth (Pinocchio's model of the UR5 with the true payload, friction per joint) and runs of it."""

    def __init__(self, seed=3):
        from oracle import pin_model

        self.truth_xml = payload_urdf(true_inertial()[0])
        self.pm = pin_model(xml=self.truth_xml)
        self.model = load_urdf(self.truth_xml)
        self.rng = np.random.default_rng(seed)
        n = self.model.n
        self.viscous, self.coulomb = self.rng.uniform(0.5, 3, n), self.rng.uniform(0.5, 3, n)

    def run(self, seconds, amplitude=1.0, noise=0.0, friction=True):
        motion = fourier_motion(self.rng, self.model.n, seconds, amplitude)
        scale = 1.0 if friction else 0.0
        effort = pin_efforts(self.pm, self.model.joint_names, *motion, scale * self.viscous, scale * self.coulomb)
        effort += self.rng.normal(size=effort.shape) * noise * np.sqrt(np.mean(effort ** 2, axis=0))
        return motion, effort


@pytest.fixture(scope="module")
def truth():
    return Payload()


def normal_equations(base, motion, effort, chunk=101):
    normal = identify.NormalEquations(base)
    for s in range(0, len(effort), chunk):
        normal.add(*(x[s:s + chunk] for x in motion), effort[s:s + chunk])
    return normal.finish()


def close(found, expected, rtol):
    """|found - expected| <= rtol |expected| (norms: a vector or matrix as a whole)."""
    found, expected = np.asarray(found, dtype=float), np.asarray(expected, dtype=float)
    assert np.linalg.norm(found - expected) <= rtol * np.linalg.norm(expected), (found, expected)


def assert_is_the_true_payload(m, c, Ic, rtol):
    """The mass, centre of mass and inertia about it (payload frame) are the truth's."""
    close(m, MASS, rtol)
    close(c, COM, rtol)
    close(Ic, true_inertial()[1], rtol)


def inertia_matrix(entries):
    """The 3x3 matrix of a report's {ixx, ixy, ixz, iyy, iyz, izz}."""
    e = entries
    return [[e["ixx"], e["ixy"], e["ixz"]], [e["ixy"], e["iyy"], e["iyz"]], [e["ixz"], e["iyz"], e["izz"]]]


@pytest.fixture(scope="module")
def runs(truth, tmp_path_factory):
    """The guessed URDFs and CSV runs of the truth: noiseless with friction, 1 % noise, frictionless."""
    folder = tmp_path_factory.mktemp("links")
    for name, inertial in GUESSES.items():
        (folder / f"{name}.urdf").write_text(payload_urdf(inertial))
    write_run(folder / "clean.csv", truth, *truth.run(8.0))
    write_run(folder / "noisy.csv", truth, *truth.run(8.0, noise=0.01))
    write_run(folder / "still.csv", truth, *truth.run(6.0, friction=False))
    return folder


# -- the library ---------------------------------------------------------------------------------

@pytest.mark.parametrize("guess", sorted(GUESSES))
def test_a_payload_is_recovered_from_noiseless_efforts(truth, guess):
    """A 0.1 kg guess without inertia, or no <inertial> at all: the true payload, to 1e-6."""
    model = load_urdf(payload_urdf(GUESSES[guess]))
    base = base_parameters(model, links=["payload"])
    assert base.rank == 10 + 2 * model.n  # a payload on a 6-DoF arm: all 10, and friction
    normal = normal_equations(base, *truth.run(8.0))
    fit = identify.estimate(normal, base)
    assert identify.consistent(fit.theta[:10])
    assert_is_the_true_payload(*mass_properties(spatial_inertia(fit.theta[:10])), 1e-6)
    np.testing.assert_allclose(fit.theta[10:].reshape(-1, 2), np.column_stack([truth.viscous, truth.coulomb]),
                               rtol=1e-6)
    found = identify.links_found(normal, base, fit)[0]
    assert (found.link, found.body, found.identified) == ("payload", "wrist_3_joint", 10)
    assert_is_the_true_payload(found.mass, found.com, inertia_matrix(dict(zip(identify.INERTIA_ENTRIES,
                                                                              found.inertia))), 1e-6)


def test_a_moving_link_named_takes_what_the_rest_of_its_body_lacks(truth):
    """--links wrist_3_link on the URDF with the light guess: the payload held at its guess, the
    wrist found carries the difference, truth minus guess moved into the wrist's frame."""
    model = load_urdf(payload_urdf(GUESSES["light"]))
    base = base_parameters(model, links=["wrist_3_link"], friction=False)
    assert base.rank == 10 and base.layout.blocks[0].moved is None
    normal = normal_equations(base, *truth.run(6.0, friction=False))
    fit = identify.estimate(normal, base)
    rows = {row.name: row for row in model.links}
    guess = dynamic_parameters(rows["payload"].inertia)
    wrist = dynamic_parameters(rows["wrist_3_link"].inertia)
    expected = wrist + moved(rows["payload"].body_H_link) @ (true_parameters() - guess)
    close(fit.theta[:10], expected, 1e-6)


def test_offset_and_armature_stay_identified_with_links(truth):
    model = load_urdf(payload_urdf(GUESSES["light"]))
    base = base_parameters(model, links=["payload"], offset=True, armature=True)
    assert base.rank == 10 + 4 * model.n
    motion, effort = truth.run(8.0)
    offset, armature = np.linspace(-0.3, 0.4, model.n), np.linspace(0.05, 0.2, model.n)
    fit = identify.estimate(normal_equations(base, motion, effort + offset + armature * motion[2]), base)
    assert_is_the_true_payload(*mass_properties(spatial_inertia(fit.theta[:10])), 1e-6)
    terms = fit.theta[10:].reshape(-1, 4)
    np.testing.assert_allclose(terms, np.column_stack([truth.viscous, truth.coulomb, offset, armature]), rtol=1e-6)


def test_the_prior_pulls_the_links_named_only_when_asked(truth):
    """Default: no prior on a payload's guess. The whole-robot default of 10 around a 0.1 kg guess
    without inertia crushes the payload's inertia to nothing and its centre of mass toward the
    origin on 1 % noise; a weight of 1e6 holds it near the guess."""
    model = load_urdf(payload_urdf(GUESSES["light"]))
    base = base_parameters(model, links=["payload"])
    normal = normal_equations(base, *truth.run(8.0, noise=0.01))
    free, ten, held = (identify.estimate(normal, base, prior_weight=w).theta[:10] for w in (None, 10.0, 1e6))
    np.testing.assert_array_equal(free, identify.estimate(normal, base, prior_weight=0.0).theta[:10])
    assert abs(free[0] - MASS) < 0.01
    inertia = lambda pi: np.trace(mass_properties(spatial_inertia(pi))[2])  # noqa: E731
    assert inertia(ten) < 0.01 * np.trace(true_inertial()[1]) and abs(ten[0] - MASS) > 0.1
    assert abs(held[0] - 0.1) < 0.05


def test_the_normal_equations_of_links_are_the_same_bits_in_any_chunks(truth):
    """The held effort and a link's columns (its body's times T) are element-wise sums: a sample's
    bits are its own, in a chunk of 1 or of all."""
    model = load_urdf(payload_urdf(GUESSES["light"]))
    base = base_parameters(model, links=["payload"])
    motion, effort = truth.run(1.0, noise=0.01)
    sums = [normal_equations(base, motion, effort, chunk) for chunk in (len(effort), 1, 7, 64)]
    for other in sums[1:]:
        for name in ("G", "b", "c"):
            np.testing.assert_array_equal(getattr(other, name), getattr(sums[0], name))


def test_the_jacobian_of_mass_com_and_inertia_is_the_derivative():
    pi = dynamic_parameters(mcI(MASS, COM, true_inertial()[1]))
    J = identify.links._jacobian(pi)

    def f(p):
        m, c, I = identify.mass_properties(p)
        return np.array([m, *c, *I])

    h = 1e-7
    numeric = np.column_stack([(f(pi + h * e) - f(pi - h * e)) / (2 * h) for e in np.eye(10)])
    np.testing.assert_allclose(J, numeric, rtol=1e-6, atol=1e-8)


# -- the command ---------------------------------------------------------------------------------

def outside(text, link="payload"):
    """The URDF text with the link's <inertial> and every <dynamics> cut out: what must stay the same bytes."""
    text = re.sub(rf'(<link name="{link}">\s*)(<inertial>.*?</inertial>|<inertial/>)', r"\1", text, count=1,
                  flags=re.S)
    text = re.sub(rf'(<link name="{link}">)(.*?)(<inertial>.*?</inertial>)', r"\1\2", text, count=1, flags=re.S)
    return re.sub(r"\s*<dynamics [^>]*/>", "", text)


@pytest.mark.parametrize("guess", sorted(GUESSES))
def test_the_payload_written_back_is_the_true_one_and_nothing_else_changes(runs, guess):
    urdf, out = runs / f"{guess}.urdf", runs / f"{guess}-identified.urdf"
    result = run("identify", urdf, runs / "clean.csv", "--links", "payload", "-o", out, "--format", "json")
    assert result.exit_code == 0, result.stderr
    written = {row.name: row for row in load_urdf(out).links}["payload"].inertia
    m, c, Ic = mass_properties(written)
    assert_is_the_true_payload(m, c, Ic, 1e-6)
    before, after = urdf.read_text(), out.read_text()
    assert after != before and outside(after) == outside(before)
    # the link written is what the report says
    link = json.loads(result.stdout)["links"][0]
    assert link["mass"]["identified"] == m and link["com"]["identified"] == list(c)
    assert (link["link"], link["moves_with"], link["fixed_to"]) == ("payload", "wrist_3_joint", "wrist_3_link")
    assert link["mass"]["urdf"] == (0.1 if guess == "light" else 0.0)


def test_the_report_gives_the_urdfs_own_numbers_for_the_link(runs, tmp_path):
    """The "urdf" values of a link named are the numbers its <inertial> gives, not the same values
    taken through the body's parameters and back (which would give 0.00037916670000000003 here)."""
    cad = ('<inertial><origin xyz="0.0300001 -0.02 0.05"/><mass value="1.3"/><inertia ixx="0.0003791667" '
           'ixy="0" ixz="0" iyy="0.0011" iyz="0" izz="0.0007"/></inertial>')
    (tmp_path / "cad.urdf").write_text(payload_urdf(cad))
    result = run("identify", tmp_path / "cad.urdf", runs / "clean.csv", "--links", "payload", "--format", "json")
    assert result.exit_code == 0, result.stderr
    link = json.loads(result.stdout)["links"][0]
    assert link["mass"]["urdf"] == 1.3 and link["com"]["urdf"] == [0.0300001, -0.02, 0.05]
    assert link["inertia"]["urdf"] == {"ixx": 0.0003791667, "ixy": 0.0, "ixz": 0.0, "iyy": 0.0011, "iyz": 0.0,
                                       "izz": 0.0007}


def test_with_1_percent_noise_the_truth_is_within_3_standard_errors(runs):
    result = run("identify", runs / "light.urdf", runs / "noisy.csv", "--links", "payload", "--format", "json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["rank"] == 22 and report["consistent"]
    link = report["links"][0]
    assert link["identified_parameters"] == 10
    found = [link["mass"]["identified"], *link["com"]["identified"], *link["inertia"]["identified"].values()]
    se = np.array([link["mass"]["standard_error"], *link["com"]["standard_error"],
                   *link["inertia"]["standard_error"].values()])
    I = true_inertial()[1]
    truth = [MASS, *COM, *(I[a, b] for a, b in ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)))]
    assert (se > 0).all() and se[0] < 0.01 * MASS and (se[1:4] < 0.01 * np.abs(COM)).all()
    assert (np.abs(np.array(found) - truth) <= 3 * se).all(), (np.array(found) - truth) / se
    text = run("identify", runs / "light.urdf", runs / "noisy.csv", "--links", "payload")
    assert text.exit_code == 0, text.stderr
    assert "payload (fixed to wrist_3_link, moved by wrist_3_joint; 10 of its 10 parameters identified)" in text.stdout
    assert re.search(r"mass: 0\.1 -> 1\.\d+ ± [\d.e-]+ kg", text.stdout), text.stdout


def test_a_payload_without_friction_has_10_base_parameters(runs):
    out = runs / "still-identified.urdf"
    result = run("identify", runs / "none.urdf", runs / "still.csv", "--links", "payload", "--no-friction",
                 "--format", "json", "-o", out)
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["rank"] == 10 and [j["friction"] for j in report["joints"]] == [{}] * 6
    assert outside(out.read_text()) == outside((runs / "none.urdf").read_text())
    assert "<dynamics" not in out.read_text().replace('<dynamics damping="0.0" friction="0.0"/>', "")


def test_validate_and_ols_with_links(runs):
    """--validate: the held-out run's residual with the URDF (the payload's guess) and with the
    payload found; --ols: least squares' payload, within its standard errors of the truth."""
    result = run("identify", runs / "light.urdf", runs / "noisy.csv", "--links", "payload", "--validate",
                 runs / "clean.csv", "--format", "json")
    assert result.exit_code == 0, result.stderr
    check = json.loads(result.stdout)["validation"][0]
    before, after = np.array(check["rms_before"]), np.array(check["rms_after"])
    assert (after < 0.05 * before).all()
    ols = run("identify", runs / "light.urdf", runs / "noisy.csv", "--links", "payload", "--ols", "--format", "json")
    assert ols.exit_code == 0, ols.stderr
    mass = json.loads(ols.stdout)["links"][0]["mass"]
    assert abs(mass["identified"] - MASS) <= 3 * mass["standard_error"]


def test_bad_links_are_one_line_and_exit_2(runs, tmp_path):
    cases = [("gripper", "no link 'gripper'"), ("base_link", "'base_link' is the fixed base"),
             ("world", "'world' is the fixed base"), ("base", "'base' is the fixed base (fixed to world)"),
             ("wrist_3_link,payload", "one rigid body (fixed to wrist_3_link)"), ("payload,", "empty link name"),
             ("tool0, payload", "one rigid body")]
    for links, needle in cases:
        result = run("identify", runs / "light.urdf", runs / "clean.csv", "--links", links, "-o", tmp_path / "x.urdf")
        assert result.exit_code == 2, (links, result.stderr)
        assert needle in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert not (tmp_path / "x.urdf").exists()


# -- the URDF written back: every byte outside what changed ------------------------------------------

def test_a_whole_robot_written_back_keeps_every_other_byte():
    """The UR5's root element declares a namespace before its name: lxml wrote them the other way round."""
    path = corpus_robot("ur5")
    model = load_urdf(path)
    layout = identify.layout(model)
    theta = layout.parameters() * 1.25
    out = identified_urdf(path, model, layout, theta).decode()
    cut = lambda text: re.sub(r"\s*<dynamics [^>]*/>", "", re.sub(r"<inertial>.*?</inertial>", "", text,  # noqa
                                                                         flags=re.S))
    assert cut(out) == cut(path.read_text())
    np.testing.assert_allclose(identify.layout(load_urdf(out)).parameters(), theta, rtol=1e-13, atol=1e-15)


def test_an_inertial_or_dynamics_a_file_lacks_goes_in_indented_after_the_last_child():
    xml = ('<robot name="r">\n  <link name="a"/>\n  <link name="b">\n    <visual><geometry><box size="1 1 1"/>'
           '</geometry></visual>\n  </link>\n  <joint name="j" type="revolute">\n    <parent link="a"/>\n'
           '    <child link="b"/>\n    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/>\n'
           '  </joint>\n</robot>\n')
    model = load_urdf(xml)
    layout = identify.layout(model, links=["b"])
    theta = np.r_[dynamic_parameters(mcI(2.0, [0.1, 0, 0], np.diag([0.1, 0.2, 0.3]))), 0.5, 0.25]
    out = identified_urdf(xml, model, layout, theta).decode()
    head, tail = xml.split("</geometry></visual>")
    assert out.startswith(head + "</geometry></visual>\n    <inertial><origin xyz=\"0.1 0.0 0.0\" rpy=\"0 0 0\"/>")
    assert '<limit lower="-1" upper="1" effort="1" velocity="1"/>\n    <dynamics damping="0.5" friction="0.25"/>\n'\
           '  </joint>\n</robot>\n' in out
    np.testing.assert_allclose(identify.layout(load_urdf(out), links=["b"]).parameters(), theta, rtol=1e-15)


# -- the docs' example data -------------------------------------------------------------------------

def test_the_docs_payload_example_is_arm7_holding_the_stated_payload():
    """robots/arm7_tool_measured.csv is Pinocchio's efforts of arm7 with the true tool of
    make_payload_example.py, the URDF's friction and that script's noise; identify finds the tool."""
    import importlib.util

    from oracle import pin_model
    from test_identify import pin_efforts

    spec = importlib.util.spec_from_file_location("make_payload_example", ROBOTS / "make_payload_example.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    model = load_urdf(ROBOTS / "arm7.urdf")
    names = model.joint_names
    data = pl.read_csv(ROBOTS / "arm7_tool_measured.csv")
    q, qd, qdd, effort = (data.select(f"{p}_{j}" for j in names).to_numpy() for p in ("q", "qd", "qdd", "effort"))
    damping, friction = (np.array([getattr(j, a) for j in model.joints]) for a in ("damping", "friction"))
    expected = pin_efforts(pin_model(xml=example.true_urdf()), names, q, qd, qdd, damping, friction)
    noise = np.random.default_rng(example.SEED).normal(0, example.NOISE, effort.shape)
    np.testing.assert_allclose(effort - noise, expected, rtol=0, atol=1e-9 * np.abs(expected).max())
    result = run("identify", ROBOTS / "arm7.urdf", ROBOTS / "arm7_tool_measured.csv", "--links", "arm7_tool",
                 "--format", "json")
    assert result.exit_code == 0, result.stderr
    mass = json.loads(result.stdout)["links"][0]["mass"]
    assert abs(mass["identified"] - 2.5) <= 3 * mass["standard_error"]


def test_a_link_the_run_cannot_fully_determine_has_no_standard_error_where_it_is_not_determined():
    """A tool on a planar 2R arm (both axes along y): its parameters show only in combinations (no
    torque about x or z ever); those not determined alone have no standard error, the rest do."""
    from oracle import pin_model
    from test_identify import chain_urdf

    xml = chain_urdf(["0 0 0", "0 0 0.5"], tool=True)
    model = load_urdf(xml)
    base = base_parameters(model, links=["tool"], friction=False)
    assert 0 < base.rank < 10
    motion = fourier_motion(np.random.default_rng(4), model.n, 4.0, 1.0)
    effort = pin_efforts(pin_model(xml=xml), model.joint_names, *motion, 0.0, 0.0)
    normal = normal_equations(base, motion, effort)
    found = identify.links_found(normal, base, identify.estimate(normal, base))[0]
    assert found.identified < 10 and None in found.inertia_se
    shown = [found.mass_se, *found.com_se, *found.inertia_se]
    assert all(se is None or (np.isfinite(se) and se >= 0) for se in shown)


def test_a_crlf_file_written_back_keeps_its_line_ends():
    """lxml reads CRLF as LF: what is put in (an element changed, one added) ends its lines with CRLF too."""
    xml = ('<robot name="r">\n  <link name="a"/>\n  <link name="b">\n    <inertial><mass value="1"/>'
           '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>\n    </inertial>\n  </link>\n'
           '  <joint name="j" type="revolute">\n    <parent link="a"/>\n    <child link="b"/>\n'
           '    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/>\n  </joint>\n</robot>\n')
    crlf = xml.replace("\n", "\r\n").encode()
    model = load_urdf(xml)
    layout = identify.layout(model, links=["b"])
    theta = np.r_[dynamic_parameters(mcI(2.0, [0.1, 0, 0], np.diag([0.1, 0.2, 0.3]))), 0.5, 0.25]
    out = identified_urdf(crlf, model, layout, theta)
    assert out.count(b"\n") == out.count(b"\r\n") > crlf.count(b"\r\n") - 2
    np.testing.assert_allclose(identify.layout(load_urdf(out.decode()), links=["b"]).parameters(), theta, rtol=1e-15)
