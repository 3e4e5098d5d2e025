"""The URDF loader: what it reads from real files, and one error per kind of bad file."""


import numpy as np
import pytest

from conftest import GOOD, LINK, corpus_params, joint, load, need_corpus, robot
from rnea_cli import URDFError, URDFWarning, load_urdf


def test_good_file_loads():
    model = load_urdf(robot(*GOOD))
    assert model.joint_names == ["j"] and model.root_link == "a" and list(model.parent) == [-1]


BAD = {
    "malformed": ('<robot name="r">\n<link name="a">\n</robot>', 3, "malformed XML"),
    "not-robot": ('<?xml version="1.0"?>\n<model/>', 2, "expected <robot>"),
    "unknown-type": (robot(*GOOD[:2], joint("j", "a", "b", kind="spherical")), 5, "unknown joint type 'spherical'"),
    "floating-not-root": (robot(*GOOD, LINK.format("c"), joint("k", "b", "c", kind="floating")), 7,
                          "a floating joint must be the only joint of the root link"),
    "mimic-cycle": (robot(*GOOD[:2], LINK.format("c"), joint("j", "a", "b", extra='<axis xyz="0 0 1"/><mimic joint="k"/>'),
                          joint("k", "b", "c", extra='<mimic joint="j"/>')), 6, "mimic joints form a cycle"),
    "missing-link": (robot(*GOOD[:2], joint("j", "a", "c")), 5, "child link 'c' does not exist"),
    "duplicate-link": (robot(*GOOD, LINK.format("b")), 6, "duplicate link name (first at line 4)"),
    "duplicate-joint": (robot(*GOOD, LINK.format("c"), joint("j", "b", "c")), 7, "duplicate joint name"),
    "two-parents": (robot(*GOOD, LINK.format("c"), joint("k", "c", "b")), 7, "link 'b' has two parents"),
    "cycle": (robot(*GOOD, LINK.format("c"), LINK.format("d"), joint("k", "c", "d"), joint("l", "d", "c")), 9,
              "cycle through links c, d"),
    "no-root": (robot(*GOOD, joint("k", "b", "a")), 2, "no root link"),
    "several-roots": (robot(*GOOD, LINK.format("c")), 2, "several root links (a, c)"),
    "zero-axis": (robot(*GOOD[:2], joint("j", "a", "b", extra='<axis xyz="0 0 0"/>')), 5, "axis is the zero vector"),
    "negative-mass": (robot(LINK.format("a"), '<link name="b"><inertial><mass value="-2"/></inertial></link>',
                            GOOD[2]), 4, "negative mass -2"),
    "non-numeric": (robot(*GOOD[:2], joint("j", "a", "b", extra='<origin xyz="0 0 abc"/>')), 5,
                    'xyz="0 0 abc" is not 3 numbers'),
    "wrong-count": (robot(*GOOD[:2], joint("j", "a", "b", extra='<axis xyz="0 1"/>')), 5,
                    'xyz="0 1" is not 3 numbers'),
    "not-finite": (robot(*GOOD[:2], joint("j", "a", "b", extra='<origin xyz="0 0 nan"/>')), 5, "is not finite"),
    "missing-attribute": (robot(*GOOD[:2], '<joint name="j"><parent link="a"/><child link="b"/></joint>'), 5,
                          "missing required attribute 'type'"),
    "missing-mass-value": (robot(LINK.format("a"), '<link name="b"><inertial><mass/></inertial></link>', GOOD[2]),
                           4, "missing required attribute 'value'"),
    "missing-inertia-attr": (robot(LINK.format("a"), LINK.format("b").replace(' izz="1"', ""), GOOD[2]), 4,
                             "missing required attribute 'izz'"),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_bad_urdf_names_line_and_problem(case):
    xml, line, text = BAD[case]
    with pytest.raises(URDFError) as info:
        load_urdf(xml)
    message = str(info.value)
    assert message.startswith(f"<string>:{line}: "), message
    assert text in message
    assert "\n" not in message


def test_bad_file_names_the_file(tmp_path):
    path = tmp_path / "broken.urdf"
    path.write_text(BAD["zero-axis"][0])
    with pytest.raises(URDFError, match=rf"^{path}:5: <joint name=\"j\"> <axis>: axis is the zero vector$"):
        load_urdf(path)
    with pytest.raises(URDFError, match="missing.urdf: cannot read: No such file"):
        load_urdf(tmp_path / "missing.urdf")
    (tmp_path / "empty.urdf").write_text("  \n")
    with pytest.raises(URDFError, match="empty.urdf: empty file"):
        load_urdf(tmp_path / "empty.urdf")


def test_entities_are_not_expanded_and_nothing_is_fetched(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("0.5")
    xml = (f'<?xml version="1.0"?>\n<!DOCTYPE robot [<!ENTITY x SYSTEM "file://{secret}">]>\n<robot name="r">'
           f'{GOOD[0]}<link name="b"><inertial><mass value="&x;"/></inertial></link>{GOOD[2]}</robot>')
    with pytest.raises(URDFError, match="external entity|missing required attribute 'value'|is not a number"):
        load_urdf(xml)


def test_declaration_order_does_not_matter():
    xml = robot(joint("j2", "b", "c"), LINK.format("c"), joint("j1", "a", "b"), LINK.format("b"), LINK.format("a"))
    model = load_urdf(xml)
    assert model.joint_names == ["j1", "j2"] and list(model.parent) == [-1, 0] and model.root_link == "a"


def test_depth_first_order_children_in_declaration_order():
    links = [LINK.format(x) for x in "abcde"]
    xml = robot(*links, joint("ab", "a", "b"), joint("ac", "a", "c"), joint("bd", "b", "d"), joint("ce", "c", "e"))
    model = load_urdf(xml)
    assert model.joint_names == ["ab", "bd", "ac", "ce"]
    assert list(model.parent) == [-1, 0, -1, 2]


def test_link_without_inertial_is_massless_and_limits_absent_are_none():
    xml = robot('<link name="a"/>', '<link name="b"/>',
                joint("j", "a", "b", extra='<axis xyz="0 0 2"/><limit effort="5"/><dynamics damping="0.5"/>'))
    model = load_urdf(xml)
    assert model.body_mass(0) == 0.0 and not model.inertia.any()
    j = model.joints[0]
    assert (j.limits.effort, j.limits.velocity, j.limits.lower, j.limits.upper) == (5.0, None, None, None)
    assert (j.damping, j.friction) == (0.5, 0.0)
    np.testing.assert_array_equal(j.axis, [0, 0, 1])


def test_limits_and_dynamics_are_read_as_written():
    xml = robot('<link name="a"/>', '<link name="b"/>',
                joint("j", "a", "b", extra='<limit effort="12.5" velocity="3.25" lower="-1.5" upper="2.75"/>'
                                           '<dynamics damping="0.7" friction="1.3"/>'))
    j = load_urdf(xml).joints[0]
    assert (j.limits.effort, j.limits.velocity, j.limits.lower, j.limits.upper) == (12.5, 3.25, -1.5, 2.75)
    assert (j.damping, j.friction) == (0.7, 1.3)


def test_model_is_frozen():
    model = load_urdf(robot(*GOOD))
    with pytest.raises(Exception):
        model.name = "x"
    with pytest.raises(ValueError):
        model.inertia[0, 0, 0] = 1.0


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_loads(path):
    path = need_corpus(path)
    model = load(path)
    assert model.n > 0 and all(p < i for i, p in enumerate(model.parent))
    # mass is conserved by fixed-joint folding
    own = sum(l.mass for l in model.links)
    folded = model.body_mass(-1) + sum(model.body_mass(i) for i in range(model.n))
    assert folded == pytest.approx(own, rel=1e-12)


@pytest.mark.parametrize("path", corpus_params(["romeo_laas_small"]))
def test_impossible_inertias_load_with_a_warning(path):
    path = need_corpus(path)
    with pytest.warns(URDFWarning) as caught:
        model = load_urdf(path)
    texts = [str(w.message) for w in caught]
    for link in ("body", "LHipPitch_link", "RHipPitch_link"):
        assert any(f'<link name="{link}">: inertia is not positive semi-definite' in t for t in texts)
    assert model.warnings == tuple(texts)


@pytest.mark.parametrize("path", corpus_params(["cassie"]))
def test_revolute_without_limit_loads(path):
    model = load(need_corpus(path))
    assert model.n == 16
    assert all(j.limits.effort is None for j in model.joints)


@pytest.mark.parametrize("path", corpus_params(["kinova_j2s6s200"]))
def test_continuous_ignores_position_limits(path):
    model = load(need_corpus(path))
    continuous = [j for j in model.joints if j.type == "continuous"]
    assert len(continuous) == 3 and all(j.limits.lower is None and j.limits.upper is None for j in continuous)


def test_axes_of_any_size_and_round_off_sized_inertias():
    """An axis of 1e200 (its norm overflows) or 1e-200 (underflows) is a direction like any; moments
    of 1e-20 kg m² that break the triangle inequality are round-off, not a warning."""
    import warnings

    for size in ("1e200", "1e-200"):
        model = load_urdf(robot(*GOOD[:2], joint("j", "a", "b", extra=f'<axis xyz="{size} 0 0"/>')))
        assert model.joints[0].axis.tolist() == [1.0, 0.0, 0.0]
    tiny = LINK.format("b").replace('ixx="1"', 'ixx="1e-20"').replace('iyy="1"', 'iyy="-1e-20"').replace(
        'izz="1"', 'izz="3e-20"')
    with warnings.catch_warnings():
        warnings.simplefilter("error", URDFWarning)
        load_urdf(robot(LINK.format("a"), tiny, GOOD[2]))
