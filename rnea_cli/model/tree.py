"""The frozen kinematic tree that the engine reads: joints in topological order, bodies, inertias."""

from dataclasses import dataclass, field

import numpy as np

from ..dynamics import spatial

MOVABLE = ("revolute", "continuous", "prismatic")
ANGULAR = ("revolute", "continuous")


@dataclass(frozen=True)
class Limits:
    """URDF `<limit>`; a value is None when the file does not give it (never a made-up default)."""

    lower: float | None = None
    upper: float | None = None
    effort: float | None = None
    velocity: float | None = None


@dataclass(frozen=True)
class Mimic:
    """URDF `<mimic>`: q = multiplier * q_leader + offset."""

    joint: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass(frozen=True, eq=False)
class Joint:
    """A movable joint and the body it carries.

    The joint is three placements, composed in `Model.placement`:
    `parent_H_stator` (fixed, from `<origin>`, 4x4, in the parent body's frame),
    `stator_H_rotor(q)` (the motion about/along `axis`) and `rotor_H_child` (identity in URDF).
    "Rotor" is the moving side of the joint, not a motor's rotor.
    """

    name: str
    type: str  # one of MOVABLE; or "fixed" (no motion) in a model loaded with fixed_joints=True
    parent: int  # index of the parent body, -1 for the root body
    axis: np.ndarray  # (3,) unit vector, in the stator frame
    parent_H_stator: np.ndarray  # (4, 4)
    limits: Limits = field(default_factory=Limits)
    damping: float = 0.0
    friction: float = 0.0
    mimic: Mimic | None = None
    parent_link: str = ""
    child_link: str = ""
    line: int | None = None
    urdf_joint: str | None = None  # the URDF joint, where it is not `name` (the parts of a planar joint)

    @property
    def is_angular(self):
        return self.type in ANGULAR

    def stator_H_rotor(self, q):
        """Placement of the rotor in the stator for joint values q: shape (..., 4, 4)."""
        q = np.asarray(q, dtype=float)
        H = np.broadcast_to(np.eye(4), q.shape + (4, 4)).copy()
        if self.is_angular:
            H[..., :3, :3] = spatial.axis_angle(self.axis, q)
        else:
            H[..., :3, 3] = q[..., None] * self.axis
        return H

    rotor_H_child = np.eye(4)


@dataclass(frozen=True)
class Link:
    """A URDF link: its own mass and the body (movable-joint index, -1 = root) it is folded into."""

    name: str
    mass: float
    body: int
    parent_joint: str | None
    line: int | None = None
    body_H_link: np.ndarray = field(default_factory=lambda: np.eye(4))  # placement in its body's frame
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((6, 6)))  # its own, in its own frame
    # (mass, centre of mass, inertia about it in the link's axes) as the URDF gives them, or None
    as_written: tuple | None = None


@dataclass(frozen=True)
class TreeJoint:
    """Any URDF joint (fixed ones too), for reports: name, type, parent and child links."""

    name: str
    type: str
    parent_link: str
    child_link: str
    line: int | None = None


@dataclass(frozen=True, eq=False)
class Model:
    """A rigid-body tree in topological order (`parent[i] < i`, -1 for the root body).

    Body i is the child link of movable joint i with every link fixed to it folded in;
    `inertia[i]` is its 6x6 spatial inertia in its rotor frame, `root_inertia` that of the
    root body (the root link and what is fixed to it). Columns of q, qd, qdd and tau follow
    `joint_names`: depth-first from the root link, children in the file's declaration order.
    """

    name: str
    source: str
    root_link: str
    joints: tuple[Joint, ...]
    parent: np.ndarray  # (n,) int
    inertia: np.ndarray  # (n, 6, 6)
    root_inertia: np.ndarray  # (6, 6)
    links: tuple[Link, ...] = ()
    tree: tuple[TreeJoint, ...] = ()
    warnings: tuple[str, ...] = ()
    floating: bool = False  # the URDF joins the root body to the world by a `floating` joint
    world_H_root: np.ndarray = field(default_factory=lambda: np.eye(4))  # that joint's <origin>
    # constants other modules derive from the model, made on first use (the engine's Plan)
    derived: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def joint_names(self):
        return [j.name for j in self.joints]

    @property
    def n(self):
        """Number of movable joints (columns of q)."""
        return len(self.joints)

    def index(self, joint_name):
        return self.joint_names.index(joint_name)

    def placement(self, i, q):
        """parent_H_child of joint i at joint values q: (..., 4, 4)."""
        j = self.joints[i]
        return j.parent_H_stator @ j.stator_H_rotor(q) @ j.rotor_H_child

    def subtree_mass(self):
        """(n,) mass carried by each movable joint: its body and every body below it."""
        mass = np.array([self.body_mass(i) for i in range(self.n)])
        for i in range(self.n - 1, -1, -1):
            if self.parent[i] >= 0:
                mass[self.parent[i]] += mass[i]
        return mass

    def body_mass(self, i):
        """Mass of body i after fixed-joint folding (i = -1: the root body)."""
        return float((self.root_inertia if i < 0 else self.inertia[i])[5, 5])


class Coordinates:
    """The columns of a trajectory and of its torques for a model: every movable joint, or with
    `mimic` all but the mimic followers, which then follow their leaders:
    q_f = m q_l + o, qd_f = m qd_l, qdd_f = m qdd_l, and tau_l += m tau_f (virtual work).

    Reads like a Model where columns are concerned (`joints`, `joint_names`, `n`, `index`)."""

    def __init__(self, model, mimic=True):
        self.model, self.name, self.source = model, model.name, model.source
        by_name = {j.name: i for i, j in enumerate(model.joints)}
        leader, multiplier, offset = list(range(model.n)), np.ones(model.n), np.zeros(model.n)
        if mimic:
            for i, j in enumerate(model.joints):
                while model.joints[leader[i]].mimic is not None:  # chains resolve to an independent joint
                    m = model.joints[leader[i]].mimic
                    offset[i] += multiplier[i] * m.offset
                    multiplier[i] *= m.multiplier
                    leader[i] = by_name[m.joint]
        self.columns = [i for i in range(model.n) if leader[i] == i]  # model joint of each column
        self.joints = [model.joints[i] for i in self.columns]
        self.joint_names = [j.name for j in self.joints]
        self.n = len(self.columns)
        self.followers = [model.joints[i].name for i in range(model.n) if leader[i] != i]
        column = {i: k for k, i in enumerate(self.columns)}
        self._column = np.array([column[leader[i]] for i in range(model.n)], dtype=int)
        self._multiplier, self._offset = multiplier, offset

    @property
    def leaders(self):
        """Per model joint (leader, multiplier): the model joint it follows (itself, 1.0 if none)."""
        return [(self.columns[k], float(m)) for k, m in zip(self._column, self._multiplier)]

    def index(self, joint_name):
        return self.joint_names.index(joint_name)

    def expand(self, q, qd, qdd):
        """(N, n) columns -> (N, model.n) for every joint of the model."""
        if not self.followers:
            return q, qd, qdd
        c, m = self._column, self._multiplier
        return q[:, c] * m + self._offset, qd[:, c] * m, qdd[:, c] * m

    def reflect(self, tau):
        """(N, model.n) joint torques -> (N, n): followers' torques added to their leaders'."""
        if not self.followers:
            return tau
        out = np.zeros((len(tau), self.n), order="F" if tau.flags.f_contiguous and not tau.flags.c_contiguous else "C")
        for i, (k, m) in enumerate(zip(self._column, self._multiplier)):  # in joint order, not by BLAS
            out[:, k] += tau[:, i] * m
        return out
