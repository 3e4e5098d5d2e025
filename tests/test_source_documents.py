"""Source: YAML and JSON documents (columns or a list of samples), and their errors in one line."""

import json
import pathlib

import pytest
import yaml

from conftest import ARM, ARM_CSV, ARM_YAML, ROBOTS, one_line_error, read_traj_csv, run
from rnea_cli import load_urdf


PLANAR = ROBOTS / "planar2.urdf"


@pytest.mark.parametrize("name, data, needle", [
    ("deep.json", "[" * 100_000 + "]" * 100_000, "nested too deep"),
    ("digits.json", '{"q": {"shoulder": [' + "9" * 5000 + '], "elbow": [0]}}', "not finite"),
    ("digits.yaml", "q: {shoulder: [" + "9" * 5000 + "], elbow: [0]}\n", "not finite"),
    ("dup.yaml", "q: {shoulder: [0], elbow: [0]}\nq: {shoulder: [1], elbow: [1]}\n", "appears twice"),
    ("dup.json", '{"q": {"shoulder": [0], "shoulder": [1], "elbow": [0]}}', "appears twice"),
    ("cr.csv", "q_shoulder,q_elbow\r0,0\r1,1\r", "carriage return alone"),
])
def test_odd_documents_are_one_line(tmp_path, name, data, needle):
    path = tmp_path / name
    path.write_text(data)
    one_line_error(run("torques", PLANAR, path, "--dt", "0.01"), needle)


def test_csv_and_yaml_inputs_give_identical_torques():
    a, b = run("torques", ARM, ARM_CSV, "-q"), run("torques", ARM, ARM_YAML, "-q")
    assert a.exit_code == b.exit_code == 0
    assert a.stdout == b.stdout


def test_list_of_samples_and_json_inputs(tmp_path):
    model = load_urdf(ARM)
    t, q, qd, qdd = read_traj_csv(ARM_CSV, model)
    samples = [{"time": float(t[k]), **{x: dict(zip(model.joint_names, map(float, arr[k])))
                                        for x, arr in (("q", q), ("qd", qd), ("qdd", qdd))}}
               for k in range(len(t))]
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(samples))
    (tmp_path / "s.json").write_text(json.dumps(samples))
    expected = run("torques", ARM, ARM_CSV, "-q").stdout
    assert run("torques", ARM, str(tmp_path / "s.yaml"), "-q").stdout == expected
    assert run("torques", ARM, str(tmp_path / "s.json"), "-q").stdout == expected


BAD_DOCS = {
    "yaml-syntax": ("q: {shoulder: [1, 2}\n", "yaml", "<stdin>: line 1, column 20: invalid YAML"),
    "json-syntax": ('{"q": {"shoulder": [1, 2}\n', "json", "<stdin>: line 1, column 25: invalid JSON"),
    "not-a-number": ("time: [0, 1, 2]\nq: {shoulder: [0, x, 0], elbow: [0, 0, 0]}\n", "yaml",
                     "<stdin>: q.shoulder[1]: not a number: 'x'"),
    "nan": ('{"time": [0, 1, 2], "q": {"shoulder": [0, NaN, 0], "elbow": [0, 0, 0]}}', "json",
            "<stdin>: q.shoulder[1]: not finite: nan"),
    "lengths": ("time: [0, 1, 2]\nq: {shoulder: [0, 0], elbow: [0, 0, 0]}\n", "yaml",
                "<stdin>: lists of different lengths (2, 3)"),
    "missing-joint": ("time: [0, 1, 2]\nq: {shoulder: [0, 0, 0]}\n", "yaml", "<stdin>: missing q for joint elbow"),
    "wrong-shape": ("- 1\n- 2\n", "yaml", "<stdin>: sample 0: expected a mapping"),
}


@pytest.mark.parametrize("case", BAD_DOCS, ids=list(BAD_DOCS))
def test_bad_yaml_json_one_line_exit_2(case):
    text, fmt, message = BAD_DOCS[case]
    result = run("torques", PLANAR, "-", "--input-format", fmt, input=text)
    assert result.exit_code == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(f"rnea: error: {message}"), result.stderr


def test_yaml_keys_that_are_not_strings_are_named_as_yaml_writes_them(tmp_path):
    """A null, boolean or number key under q is no joint: the notice spells it as YAML does."""
    import yaml

    doc = yaml.safe_load(pathlib.Path(str(ROBOTS / "planar2_traj.yaml")).read_text())
    count = len(doc["time"])
    doc["q"].update({None: [0.0] * count, True: [0.0] * count, 7: [0.0] * count})
    (tmp_path / "x.yaml").write_text(yaml.safe_dump(doc))
    result = run("torques", PLANAR, str(tmp_path / "x.yaml"))
    assert result.exit_code == 0, result.stderr
    assert "ignored 3 entries not read (not of this robot, or not for this command): q.null, q.true, q.7" in \
        result.stderr
    assert result.stdout == run("torques", PLANAR, str(ROBOTS / "planar2_traj.yaml"), "-q").stdout
