"""The identified parameters written back into the URDF they came from.

Only the <inertial> of each body identified (or link, with --links) and each movable joint's
<dynamics damping friction> change; every other byte stays as the file has it: lxml edits the
elements changed and writes them, each in place of its own bytes in the file (expat's offsets),
so comments, attribute order, namespaces and white space elsewhere are the file's. Numbers are
written as repr() writes them: the shortest text that reads back as the same double.
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
    Other children and attributes of <inertial> are kept. Returns the <inertial>."""
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
    return el


def set_dynamics(joint, damping, friction):
    """joint's <dynamics damping= friction=> (made if it has none); its other attributes are kept."""
    el = joint.find("dynamics")
    if el is None:
        el = etree.SubElement(joint, "dynamics")
    el.set("damping", _number(damping))
    el.set("friction", _number(friction))
    return el


def identified_urdf(source, model, layout, theta, bodies=None):
    """The URDF text (bytes) of `source` (the path or XML the model was loaded from) with theta
    (`identify.Layout` order) written in: each block's parameters on its link (a whole body's on
    the link that moves with joint i, its child link, and a link fixed to it, whose mass the body
    holds now, massless; a link named with `--links` alone, in its own frame, nothing else of its
    body changed); each movable joint's viscous and Coulomb terms as <dynamics damping friction>
    (offset and armature have no place in a URDF). bodies: the blocks to write (default: all).

    Every byte outside the elements changed stays as the file has it: each <inertial> or
    <dynamics> changed replaces its own bytes (expat gives where each element starts and ends);
    one a link or joint lacks goes in after its last child element."""
    data, label = urdf._read(source)
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False,
                             huge_tree=False, remove_comments=False, remove_pis=False)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise URDFError(label, exc.lineno or None, f"malformed XML: {exc.msg}") from None
    order = {el: k for k, el in enumerate(root.iter(tag=etree.Element))}
    links = {el.get("name"): el for el in root.iterfind("link")}
    joints = {el.get("name"): el for el in root.iterfind("joint")}
    changed = []  # (the element changed or made, the link or joint it is in)
    blocks = layout.blocks
    for k in range(len(blocks)) if bodies is None else bodies:
        block = blocks[k]
        joint = model.joints[block.body]
        if joint.urdf_joint is not None and block.whole:
            raise URDFError(label, joint.line, f"joint {joint.urdf_joint}: a planar joint's bodies cannot be written "
                                               "back")
        changed.append((set_inertial(links[block.link], theta[10 * k:10 * k + 10]), links[block.link]))
        for row in model.links if block.whole else ():
            if row.body == block.body and row.name != block.link:
                changed.append((set_inertial(links[row.name], np.zeros(10)), links[row.name]))
    terms = list(layout.terms)
    for r, i in enumerate(layout.joints):
        if "viscous" in terms:
            at = layout.inertial + r * len(terms)
            joint = model.joints[i]
            if joint.urdf_joint is not None:  # (the planar joint's coordinates each have their friction)
                raise URDFError(label, joint.line, f"joint {joint.urdf_joint}: a planar joint's friction, one per "
                                                   "coordinate, cannot be written into its one <dynamics> "
                                                   "(--no-friction to write the inertias)")
            el = joints[joint.name]
            changed.append((set_dynamics(el, theta[at + terms.index("viscous")], theta[at + terms.index("coulomb")]),
                            el))
    return _spliced(data, label, order, changed, root.getroottree().docinfo.encoding or "UTF-8")


def _spliced(data, label, order, changed, encoding):
    """data with each changed element's bytes replaced by lxml's text of it; an element its parent
    did not have goes in after the parent's last child element, indented as its first (a parent
    with no child element, <link name="x"/>, is replaced whole). order: the index of each of the
    file's elements in document order, taken before any was added."""
    spans = _spans(data, label)
    edits = {}
    for el, parent in changed:
        if el in order:  # the file's own element: its bytes
            edits[spans[order[el]]] = _text(el, encoding)
        elif not [child for child in parent if child in order]:  # a parent of no element: all of it
            edits[spans[order[parent]]] = _text(parent, encoding)
        else:
            last = max(spans[order[child]][1] for child in parent if child in order)
            indent = parent.text if parent.text and not parent.text.strip() else ""
            edits[(last, last)] = edits.get((last, last), b"") + indent.encode(encoding) + _text(el, encoding)
    crlf = "\r\n".encode(encoding)
    if crlf in data:  # lxml read the file's CRLF line ends as LF: the text put in ends its lines as the file does
        lf = "\n".encode(encoding)
        edits = {span: text.replace(crlf, lf).replace(lf, crlf) for span, text in edits.items()}
    out, at = [], 0
    for (start, end), text in sorted(edits.items()):
        out += [data[at:start], text]
        at = end
    return b"".join(out + [data[at:]])


def _text(el, encoding):
    """lxml's text of one element, without its tail or namespace declarations it does not use."""
    import copy

    alone = copy.deepcopy(el)
    alone.tail = None
    etree.cleanup_namespaces(alone)
    return etree.tostring(alone, encoding=encoding, xml_declaration=False, with_tail=False)


def _spans(data, label):
    """(start, end) byte offsets of each element of the document, in document order: expat's offset
    of its start tag, and that of the first event after its end tag (every event is seen)."""
    import xml.parsers.expat

    parser = xml.parsers.expat.ParserCreate()
    positions, elements, open_ = [], [], []

    def event(*_):
        positions.append(parser.CurrentByteIndex)

    def start(*_):
        open_.append(len(elements))
        elements.append([len(positions), None])
        event()

    def end(*_):
        elements[open_.pop()][1] = len(positions)
        event()

    parser.StartElementHandler, parser.EndElementHandler = start, end
    parser.DefaultHandler = parser.CharacterDataHandler = parser.CommentHandler = event
    parser.ProcessingInstructionHandler = event
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as exc:
        raise URDFError(label, exc.lineno, f"cannot be written back: {xml.parsers.expat.errors.messages[exc.code]}"
                        ) from None
    positions.append(len(data))
    return [(positions[first], positions[last + 1]) for first, last in elements]
