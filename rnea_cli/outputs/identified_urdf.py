"""The identified parameters written back into the URDF they came from.

Only each moving body's <inertial> and each movable joint's <dynamics damping friction> change;
every other element, attribute, comment and their order stay as the file has them (lxml keeps
them through a parse and a write). Numbers are written as repr() writes them: the shortest text
that reads back as the same double.
"""

import numpy as np
from lxml import etree

from ..dynamics import inertial, spatial
from ..model import urdf
from ..errors import URDFError


def _number(x):
    return repr(float(x))


def _numbers(xs):
    return " ".join(_number(x) for x in xs)


def set_inertial(link, pi):
    """link's <inertial> (made if it has none) holding one body's (10,) parameters in the link's
    frame: <origin> at the centre of mass, unrotated, <mass> and <inertia> about the centre of mass.
    Other children and attributes of <inertial> are kept."""
    m, c, Ic = spatial.mass_properties(inertial.spatial_inertia(pi))
    el = link.find("inertial")
    if el is None:
        el = etree.SubElement(link, "inertial")
    for tag, attributes in (("origin", {"xyz": _numbers(c), "rpy": "0 0 0"}), ("mass", {"value": _number(m)}),
                            ("inertia", dict(zip(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"),
                                                 map(_number, (Ic[0, 0], Ic[0, 1], Ic[0, 2], Ic[1, 1], Ic[1, 2],
                                                               Ic[2, 2])))))):
        child = el.find(tag)
        if child is None:
            child = etree.SubElement(el, tag)
        for key, value in attributes.items():
            child.set(key, value)


def set_dynamics(joint, damping, friction):
    """joint's <dynamics damping= friction=> (made if it has none); its other attributes are kept."""
    el = joint.find("dynamics")
    if el is None:
        el = etree.SubElement(joint, "dynamics")
    el.set("damping", _number(damping))
    el.set("friction", _number(friction))


def identified_urdf(source, model, layout, theta, bodies=None):
    """The URDF text (bytes) of `source` (the path or XML the model was loaded from) with theta
    (`identify.Layout` order) written in: body i's parameters on the link that moves with joint i
    (its child link); a link fixed to it, whose mass the body holds now, massless; each movable
    joint's viscous and Coulomb terms as <dynamics damping friction> (offset and armature have no
    place in a URDF). bodies: the bodies to write (default: all)."""
    data, label = urdf._read(source)
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False,
                             huge_tree=False, remove_comments=False, remove_pis=False)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise URDFError(label, exc.lineno or None, f"malformed XML: {exc.msg}") from None
    tree = root.getroottree()
    links = {el.get("name"): el for el in root.iterfind("link")}
    joints = {el.get("name"): el for el in root.iterfind("joint")}
    for i in range(model.n) if bodies is None else bodies:
        joint = model.joints[i]
        if joint.urdf_joint is not None:
            raise URDFError(label, joint.line, f"joint {joint.urdf_joint}: a planar joint's bodies cannot be written "
                                               "back")
        set_inertial(links[joint.child_link], theta[10 * i:10 * i + 10])
        for row in model.links:
            if row.body == i and row.name != joint.child_link:
                set_inertial(links[row.name], np.zeros(10))
    terms = list(layout.terms)
    for r, i in enumerate(layout.joints):
        if "viscous" in terms:
            at = 10 * model.n + r * len(terms)
            set_dynamics(joints[model.joints[i].name], theta[at + terms.index("viscous")],
                         theta[at + terms.index("coulomb")])
    encoding = tree.docinfo.encoding or "UTF-8"
    after = b"".join(b"\n" + etree.tostring(node, encoding=encoding, with_tail=False) for node in root.itersiblings())
    end = b"\n" if data.rstrip(b" \t\r").endswith(b"\n") else b""
    return _prolog(data, root) + etree.tostring(root, encoding=encoding, xml_declaration=False) + after + end


def _prolog(data, root):
    """The bytes of the file before its root element, as they are: lxml would write the declaration
    its own way and drop the white space between the nodes before the root. Each of those nodes
    (comments, processing instructions) is found in the file as lxml writes it, in turn."""
    at = 0
    try:
        for node in reversed(list(root.itersiblings(preceding=True))):
            text = etree.tostring(node, with_tail=False)
            at = data.index(text, at) + len(text)
        return data[:data.index(b"<" + root.tag.encode(), at)]
    except ValueError:  # a node lxml writes otherwise than the file (an entity in a comment...): its own
        return b"".join(etree.tostring(node, with_tail=False) + b"\n"
                        for node in reversed(list(root.itersiblings(preceding=True))))
