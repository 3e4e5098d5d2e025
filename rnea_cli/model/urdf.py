"""URDF -> Model: reads only what dynamics needs (joints, origins, axes, limits, inertials).

The XML parser is hardened (no entities, no DTD, no network) and no mesh is ever opened.
Fixed joints are folded: a link fixed to a body adds its inertia to that body.
"""

import math
import os
import warnings
from dataclasses import replace

import numpy as np
from lxml import etree

from ..dynamics import spatial
from ..errors import URDFError, URDFWarning, shown
from .tree import MOVABLE, Joint, Limits, Link, Mimic, Model, TreeJoint

PLANAR_PARTS = ("x", "y", "theta")  # a planar joint J is the coordinates J_x, J_y, J_theta
INERTIA_TOLERANCE = 1e-9  # relative to the largest principal moment
INERTIA_NOISE = 1e-12  # kg m²: moments this small are round-off, not physics
MAX_BYTES = 1 << 26  # of a URDF file
LARGEST = 1e100  # of a mass, inertia, origin, damping or friction: beyond it torques would overflow


def load_urdf(source, *, fixed_joints=False, label=None):
    """Load a URDF from a path, or from XML text (str or bytes starting with '<').

    fixed_joints: keep each fixed joint as a joint of type 'fixed' (no motion: q = 0 always; the
    engine gives the wrench across it) instead of folding its child link into the parent body.
    label: the name messages give the source (default: the path, or <string>)."""
    data, label_read = _read(source)
    label = label or label_read
    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False,
        huge_tree=False, remove_comments=True, remove_pis=True,
    )
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        line = exc.lineno if exc.lineno else None
        raise URDFError(label, line, f"malformed XML: {exc.msg}") from None
    if root is None:
        raise URDFError(label, None, "empty file")
    return _Reader(label, root, fixed_joints).model()


def _read(source):
    if isinstance(source, bytes):
        return source, "<string>"
    if isinstance(source, str) and source.lstrip().startswith("<"):
        return source.encode(), "<string>"
    path = os.fspath(source)
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise URDFError(path, None, f"cannot read: {exc.strerror}") from None
    if len(data) > MAX_BYTES:
        raise URDFError(path, None, f"larger than {MAX_BYTES >> 20} MiB (is this a URDF?)")
    if not data.strip():
        raise URDFError(path, None, "empty file")
    return data, path


def _describe(el):
    name = el.get("name")
    tag = shown(el.tag)[1:-1]
    return f"<{tag} name={shown(name).replace(chr(39), chr(34))}>" if name is not None else f"<{tag}>"


class _Reader:
    def __init__(self, label, root, fixed_joints=False):
        self.label = label
        self.root = root
        self.fixed_joints = fixed_joints
        self.warnings = []

    def error(self, el, message, owner=None):
        where = _describe(owner) + " " + _describe(el) if owner is not None and owner is not el else _describe(el)
        return URDFError(self.label, el.sourceline, f"{where}: {message}")

    def warn(self, el, message):
        text = f"{self.label}:{el.sourceline}: {_describe(el)}: {message}"
        self.warnings.append(text)
        warnings.warn(text, URDFWarning, stacklevel=4)

    # -- attributes -------------------------------------------------------------------------------

    def attr(self, el, name, owner=None):
        value = el.get(name)
        if value is None:
            raise self.error(el, f"missing required attribute '{name}'", owner)
        return value

    def floats(self, el, name, count, default=None, owner=None, largest=None):
        """count numbers of attribute `name`, finite (and at most `largest` in size, if given)."""
        text = el.get(name)
        if text is None:
            if default is None:
                raise self.error(el, f"missing required attribute '{name}'", owner)
            return np.array(default, dtype=float)
        try:
            values = [float(t) for t in text.split()]
        except ValueError:
            raise self.error(el, f"attribute {_attr(name, text)} is not {_numbers(count)}", owner) from None
        if len(values) != count:
            raise self.error(el, f"attribute {_attr(name, text)} is not {_numbers(count)}", owner)
        if not all(math.isfinite(v) for v in values):
            raise self.error(el, f"attribute {_attr(name, text)} is not finite", owner)
        if largest is not None and not all(abs(v) <= largest for v in values):
            raise self.error(el, f"attribute {_attr(name, text)} is too large (at most {largest:g} in size: "
                                 "torques would overflow)", owner)
        return np.array(values)

    def number(self, el, name, owner=None, default=None, required=False, largest=None):
        if el.get(name) is None and not required:
            return default
        return float(self.floats(el, name, 1, owner=owner, largest=largest)[0])

    def origin(self, el):
        """Placement given by the <origin> child of el (identity when absent)."""
        o = el.find("origin")
        if o is None:
            return np.eye(4)
        xyz = self.floats(o, "xyz", 3, (0.0, 0.0, 0.0), owner=el, largest=LARGEST)
        r, p, y = self.floats(o, "rpy", 3, (0.0, 0.0, 0.0), owner=el)
        return spatial.pose(spatial.rpy(r, p, y), xyz)

    # -- links ------------------------------------------------------------------------------------

    def link_inertia(self, link):
        """Spatial inertia of a link in its own frame, from <inertial> (zero when absent)."""
        values = self.inertial_values(link)
        return np.zeros((6, 6)) if values is None else spatial.mcI(*values)

    def inertial_values(self, link):
        """(mass, centre of mass (3,), inertia about it in the link's axes (3, 3)) as <inertial>
        gives them (the inertia turned by its origin's rpy, when not 0), or None when absent."""
        inertial = link.find("inertial")
        if inertial is None:
            return None
        mass_el = inertial.find("mass")
        if mass_el is None:
            raise self.error(inertial, "missing <mass>", link)
        m = self.number(mass_el, "value", owner=link, required=True, largest=LARGEST)
        if m < 0:
            raise self.error(mass_el, f"negative mass {m:g}", link)
        inertia_el = inertial.find("inertia")
        if inertia_el is None:
            raise self.error(inertial, "missing <inertia>", link)
        ixx, ixy, ixz, iyy, iyz, izz = (
            self.number(inertia_el, k, owner=link, required=True, largest=LARGEST)
            for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
        )
        Ic = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        self.check_inertia(link, Ic)
        H = self.origin(inertial)
        R, c = H[:3, :3], H[:3, 3].copy()
        I_link = spatial.dot(spatial.dot(R, Ic), R.T)
        c.setflags(write=False)
        I_link.setflags(write=False)
        return m, c, I_link

    def check_inertia(self, link, Ic):
        moments = np.linalg.eigvalsh(Ic)
        tolerance = max(INERTIA_TOLERANCE * abs(moments).max(), INERTIA_NOISE)
        if moments[0] < -tolerance:
            self.warn(link, f"inertia is not positive semi-definite (principal moments "
                            f"{', '.join(f'{m:.3g}' for m in moments)})")
        elif moments[0] + moments[1] < moments[2] - tolerance:
            self.warn(link, f"inertia breaks the triangle inequality (principal moments "
                            f"{', '.join(f'{m:.3g}' for m in moments)})")

    # -- joints -----------------------------------------------------------------------------------

    def joint_limits(self, joint, kind):
        el = joint.find("limit")
        if el is None:
            return Limits()
        value = {k: self.number(el, k, owner=joint) for k in ("lower", "upper", "effort", "velocity")}
        if kind == "continuous":
            value["lower"] = value["upper"] = None
        elif (value["lower"] is None) != (value["upper"] is None):  # one given: the other is URDF's default, 0
            value["lower" if value["lower"] is None else "upper"] = 0.0
        return Limits(**value)

    def joint_axis(self, joint):
        el = joint.find("axis")
        axis = np.array([1.0, 0.0, 0.0]) if el is None else self.floats(el, "xyz", 3, (1.0, 0.0, 0.0), joint)
        size = np.abs(axis).max()
        if size == 0:
            raise self.error(el, "axis is the zero vector", joint)
        axis = axis / size  # 1e200 or 1e-200 in a component: no overflow or underflow in the norm
        return axis / spatial.norm(axis)

    # -- the tree ---------------------------------------------------------------------------------

    def model(self):
        robot = self.root
        if robot.tag != "robot":
            raise URDFError(self.label, robot.sourceline, f"root element is <{robot.tag}>, expected <robot>")

        links = {}
        for el in robot.iterfind("link"):
            name = self.attr(el, "name")
            if name in links:
                raise self.error(el, f"duplicate link name (first at line {links[name].sourceline})")
            links[name] = el

        joints = {}
        parent_joint = {}  # child link -> joint element
        children = {name: [] for name in links}  # link -> joint elements, declaration order
        for el in robot.iterfind("joint"):
            name = self.attr(el, "name")
            if name in joints:
                raise self.error(el, f"duplicate joint name (first at line {joints[name].sourceline})")
            joints[name] = el
            kind = self.attr(el, "type")
            if kind not in MOVABLE + ("fixed", "planar", "floating"):
                raise self.error(el, f"unknown joint type '{kind}'")
            ends = []
            for tag in ("parent", "child"):
                end = el.find(tag)
                if end is None:
                    raise self.error(el, f"missing <{tag}>")
                link = self.attr(end, "link", owner=el)
                if link not in links:
                    raise self.error(end, f"{tag} link '{link}' does not exist", el)
                ends.append(link)
            parent, child = ends
            if child in parent_joint:
                other = parent_joint[child]
                raise self.error(el, f"link '{child}' has two parents (also joint \"{other.get('name')}\""
                                     f" at line {other.sourceline})")
            parent_joint[child] = el
            children[parent].append(el)

        if not links:
            raise URDFError(self.label, robot.sourceline, "<robot> has no <link>")
        roots = [name for name in links if name not in parent_joint]
        if not roots:
            raise URDFError(self.label, robot.sourceline, "no root link: the joints form a cycle")
        if len(roots) > 1:
            raise URDFError(self.label, robot.sourceline,
                            f"several root links ({', '.join(roots)}): links must form one tree")

        root, world_H_root, tree = roots[0], np.eye(4), []
        floating = [el for el in joints.values() if el.get("type") == "floating"]
        for el in floating:
            parent = el.find("parent").get("link")
            if parent != root or len(floating) > 1 or len(children[root]) > 1:
                raise self.error(el, "a floating joint must be the only joint of the root link")
            tree.append(TreeJoint(el.get("name"), "floating", parent, el.find("child").get("link"), el.sourceline))
            if self.link_inertia(links[root])[5, 5] > 0:
                self.warn(links[root], "mass of the world link is ignored (it is fixed in the world)")
            world_H_root = self.origin(el)
            del links[root]
            root = tree[0].child_link
        model = self.build(root, links, joints, parent_joint, children, tree)
        if floating:
            world_H_root.setflags(write=False)
            model = replace(model, floating=True, world_H_root=world_H_root)
        return model

    def build(self, root, links, joints, parent_joint, children, tree):
        model_joints, parents, inertias, link_rows = [], [], [], []
        root_inertia = np.zeros((6, 6))
        # depth-first from the root, children in declaration order; a movable joint is numbered
        # when its child link is reached: (link, joint into it, parent body, parent_body_H_link)
        stack = [(root, None, -1, np.eye(4))]
        while stack:
            link, jel, body, body_H_link = stack.pop()
            if jel is not None:
                kind = jel.get("type")
                tree.append(TreeJoint(jel.get("name"), kind, jel.find("parent").get("link"), link, jel.sourceline))
                if kind != "fixed" or self.fixed_joints:
                    for joint in self.movables(jel, kind, body_H_link, tree[-1].parent_link, link):
                        model_joints.append(replace(joint, parent=body))
                        parents.append(body)
                        inertias.append(np.zeros((6, 6)))
                        body, body_H_link = len(model_joints) - 1, np.eye(4)
            el = links[link]
            values = self.inertial_values(el)
            I_link = np.zeros((6, 6)) if values is None else spatial.mcI(*values)
            # I_body += (link_X_body)^T I_link link_X_body
            I_body = spatial.inertia_to(I_link, spatial.xup(body_H_link))
            if body < 0:
                root_inertia += I_body
            else:
                inertias[body] += I_body
            body_H_link.setflags(write=False)
            I_link.setflags(write=False)
            link_rows.append(Link(link, float(I_link[5, 5]), body, jel.get("name") if jel is not None else None,
                                  el.sourceline, body_H_link, I_link, values))
            stack.extend((child.find("child").get("link"), child, body, spatial.dot(body_H_link, self.origin(child)))
                         for child in reversed(children[link]))

        reached = {row.name for row in link_rows}
        unreachable = [name for name in links if name not in reached]
        if unreachable:
            el = parent_joint[unreachable[0]]
            raise self.error(el, f"joints form a cycle through links {', '.join(unreachable)}")

        for j in model_joints:  # a planar joint's coordinates are named <joint>_x, _y, _theta
            if j.urdf_joint is not None and j.name in joints:
                raise self.error(joints[j.urdf_joint], f"its coordinate '{j.name}' has the name of joint "
                                                       f"'{j.name}' (line {joints[j.name].sourceline})")
        names = {j.name: j for j in model_joints if j.type != "fixed"}
        for k, j in enumerate(model_joints):  # a leader that is not there: the follower moves on its own
            if j.mimic is not None and j.mimic.joint not in names:
                self.warn(joints[j.name].find("mimic"), f"mimics joint '{j.mimic.joint}', which is not a movable "
                                                        f"joint: '{j.name}' is treated as an independent joint")
                model_joints[k] = names[j.name] = replace(j, mimic=None)
        for j in model_joints:
            if j.mimic is None:
                continue
            el = joints[j.name]
            seen, leader = {j.name}, names[j.mimic.joint]
            while leader.mimic is not None:
                if leader.name in seen:
                    raise self.error(el.find("mimic"), f"mimic joints form a cycle through '{leader.name}'", el)
                seen.add(leader.name)
                leader = names[leader.mimic.joint]

        def frozen(a):
            a = np.array(a, dtype=float)
            a.setflags(write=False)
            return a

        parent = np.array(parents, dtype=int)
        parent.setflags(write=False)
        return Model(
            name=self.root.get("name", ""),
            source=self.label,
            root_link=root,
            joints=tuple(model_joints),
            parent=parent,
            inertia=frozen(np.reshape(inertias, (-1, 6, 6))),
            root_inertia=frozen(root_inertia),
            links=tuple(link_rows),
            tree=tuple(tree),
            warnings=tuple(self.warnings),
        )

    def movables(self, el, kind, parent_H_stator, parent_link, child_link):
        """The Joints of a movable URDF joint: one, or for a planar joint the chain
        prismatic x, prismatic y, revolute theta in the plane normal to <axis> (massless between)."""
        if kind == "fixed":  # kept (fixed_joints): no motion, along z of its own frame
            parent_H_stator.setflags(write=False)
            return [Joint(name=el.get("name"), type="fixed", parent=-1, axis=_Z, parent_H_stator=parent_H_stator,
                          parent_link=parent_link, child_link=child_link, line=el.sourceline)]
        if kind != "planar":
            return [self.movable(el, kind, parent_H_stator, parent_link, child_link)]
        A = spatial.align_z(self.joint_axis(el))
        name = el.get("name")
        parts = []
        for k, (part, kind_k) in enumerate(zip(PLANAR_PARTS, ("prismatic", "prismatic", "revolute"))):
            H = parent_H_stator if k == 0 else np.eye(4)
            H.setflags(write=False)
            axis = A[:, k].copy()
            axis.setflags(write=False)
            parts.append(Joint(name=f"{name}_{part}", type=kind_k, parent=-1, axis=axis,
                               parent_H_stator=H, parent_link=parent_link, child_link=child_link,
                               line=el.sourceline, urdf_joint=name))
        return parts

    def movable(self, el, kind, parent_H_stator, parent_link, child_link):
        dyn = el.find("dynamics")
        mimic_el = el.find("mimic")
        mimic = None
        if mimic_el is not None:
            mimic = Mimic(
                self.attr(mimic_el, "joint", owner=el),
                self.number(mimic_el, "multiplier", owner=el, default=1.0, largest=LARGEST),
                self.number(mimic_el, "offset", owner=el, default=0.0, largest=LARGEST),
            )
        parent_H_stator.setflags(write=False)
        axis = self.joint_axis(el)
        axis.setflags(write=False)
        return Joint(
            name=el.get("name"),
            type=kind,
            parent=-1,  # set by the tree walk
            axis=axis,
            parent_H_stator=parent_H_stator,
            limits=self.joint_limits(el, kind),
            damping=0.0 if dyn is None else self.number(dyn, "damping", owner=el, default=0.0, largest=LARGEST),
            friction=0.0 if dyn is None else self.number(dyn, "friction", owner=el, default=0.0, largest=LARGEST),
            mimic=mimic,
            parent_link=parent_link,
            child_link=child_link,
            line=el.sourceline,
        )


_Z = np.array([0.0, 0.0, 1.0])
_Z.setflags(write=False)


def _attr(name, text):
    """name="value" for a message, the value cut short and escaped."""
    value = shown(text)
    return f'{name}="{value[1:-1]}"' if value.endswith("'") else f"{name}={value}"


def _numbers(count):
    return "a number" if count == 1 else f"{count} numbers"
