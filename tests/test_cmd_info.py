"""`rnea info`: the robot's joints, limits and masses, as text and JSON, on every shared robot."""

import json

import pytest

from conftest import ARM, corpus_params, need_corpus, planar_urdf, run
from rnea_cli import load_urdf


MODEL = load_urdf(ARM)


def test_info_text_and_json():
    result = run("info", ARM)
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0].startswith("arm7_link0")
    assert "arm7: 7 degrees of freedom, total mass 30.4 kg, root link arm7_link0" in result.stdout
    facts = json.loads(run("info", ARM, "--format", "json").stdout)
    assert facts["dof"] == 7 and facts["joint_names"] == MODEL.joint_names
    link7 = next(l for l in facts["links"] if l["name"] == "arm7_link7")
    assert link7["body_mass"] == pytest.approx(0.8)  # 0.3 kg link + 0.5 kg tool on a fixed joint
    assert facts["warnings"] == []


@pytest.mark.parametrize("path", corpus_params())
def test_info_on_every_corpus_robot(path):
    path = need_corpus(path)
    result = run("info", str(path), "--format", "json")
    assert result.exit_code == 0
    facts = json.loads(result.stdout)
    assert facts["total_mass"] == pytest.approx(sum(l["mass"] for l in facts["links"]), rel=1e-12)
    assert len(facts["joints"]) == len(facts["links"]) - 1
    assert run("info", str(path)).exit_code == 0
    if path.stem == "romeo":
        massless = [w for w in facts["warnings"] if "moves only massless links" in w]
        assert len(massless) == 24
    if path.stem == "cassie":
        assert sum("no effort, velocity, position limit" in w for w in facts["warnings"]) == 16
    if path.stem == "romeo_laas_small":
        assert sum("not positive semi-definite" in w for w in facts["warnings"]) == 3


def test_info_shows_planar_and_floating_joints(tmp_path):
    (tmp_path / "p.urdf").write_text(planar_urdf())
    result = run("info", str(tmp_path / "p.urdf"))
    assert result.exit_code == 0
    assert "pl planar, coordinates pl_x, pl_y, pl_theta, axis 0 0 1" in result.stdout
    (tmp_path / "f.urdf").write_text(planar_urdf().replace('type="planar"', 'type="floating"'))
    result = run("info", str(tmp_path / "f.urdf"))
    assert result.stdout.splitlines()[:3] == ["w (the world)", "  └─ pl (floating)", "    b  2 kg"]
    assert "1 degree of freedom + 6 of the floating base" in result.stdout
    facts = json.loads(run("info", str(tmp_path / "f.urdf"), "--format", "json").stdout)
    assert facts["floating"] is True and facts["root_link"] == "b"


def test_an_internal_error_is_one_line(monkeypatch):
    import rnea_cli.run.info

    monkeypatch.setattr(rnea_cli.run.info, "robot_facts", lambda model: {}["boom"])
    result = run("info", ARM)
    assert result.exit_code == 70
    assert result.stderr == "rnea: internal error: KeyError: 'boom' (RNEA_DEBUG=1 shows where; please report it)\n"


def test_info_on_a_deep_chain_shows_every_joint(tmp_path):
    links = "".join(f'<link name="l{k}"/>' for k in range(1001))
    joints = "".join(f'<joint name="j{k}" type="revolute"><parent link="l{k}"/><child link="l{k + 1}"/>'
                     f'<axis xyz="0 0 1"/></joint>' for k in range(1000))
    (tmp_path / "chain.urdf").write_text(f'<robot name="c">{links}{joints}</robot>')
    out = run("info", tmp_path / "chain.urdf").stdout
    assert all(f"j{k} revolute" in out for k in range(1000))
    assert "[depth 2000] l1000" in out
