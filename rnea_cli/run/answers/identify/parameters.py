"""The columns identified and what shows of them: a Layout (each body's or named link's 10
parameters, then friction terms per movable joint; the rest held at the URDF's values), and the
base parameters, the identifiable combinations found numerically (pivoted QR on random samples)."""

import math
from dataclasses import dataclass

import numpy as np

from ....dynamics import engine, inertial, spatial
from ....errors import RneaError, shown
from .. import fixed_linalg as fl

FRICTION = ("viscous", "coulomb", "offset", "armature")
RANK_TOLERANCE = 1e-9  # |R_kk| / |R_00| below which a column of W is dependent (round-off: ~1e-15)
ZERO = 1e-10  # entries of K smaller than this (in their own units) are round-off, set to 0
PRIOR_WEIGHT = 30.0  # the prior's weight: the URDF's values known to about 1/sqrt(30) = 18 % of their scale


@dataclass(frozen=True, eq=False)
class Block:
    """Ten columns of W: one link's parameters (`inertial.PARAMETERS`) in its own frame. whole: they
    are its body's, every link fixed to it included; else the link's alone, the rest of its body
    held at the URDF's values. moved: the (10, 10) T with the body's parameters = T the link's
    (None: the link's frame is the body's)."""

    link: str
    body: int
    moved: np.ndarray | None = None
    whole: bool = True


@dataclass(frozen=True, eq=False)
class Layout:
    """The columns of W: 10 per block (by default each body of the model; with `links`, each link
    named, `Block`), then for each movable joint its friction terms (`terms`, a subset of FRICTION
    in that order). held: (10 n,) the parameters of each body that are not identified (the URDF's),
    whose effort is subtracted from the measured one (None: every body is identified)."""

    model: object
    terms: tuple
    links: tuple = ()  # Blocks of the links named; () for every body whole
    held: np.ndarray | None = None
    coupling: tuple = ()  # per row of W, ((model joint, multiplier), ...): mimic followers in their leader's

    @property
    def equations(self):
        """Per row of W (an effort measured) the joints whose torques it sums, ((model joint,
        multiplier), ...), the leader first: a movable joint alone, or with `coupling` a mimic
        leader and its followers, tau_l + sum m_f tau_f (as `rnea torques` reports a leader)."""
        return self.coupling or tuple(((i, 1.0),) for i in self.joints)

    @property
    def leaders(self):
        """The model joint of each row of W (whose name its effort has)."""
        return [equation[0][0] for equation in self.equations]

    def row_friction(self, theta):
        """Per row of W its friction terms {term: value} as its effort shows them: a joint's own,
        or a mimic leader's plus its followers' (viscous and armature times m², Coulomb times |m|,
        offset times m: all the efforts show of a pair is that sum)."""
        place, terms = {i: r for r, i in enumerate(self.joints)}, len(self.terms)
        factor = {"viscous": lambda m: m * m, "coulomb": abs, "offset": lambda m: m, "armature": lambda m: m * m}
        return [{t: sum(float(theta[self.inertial + place[i] * terms + k]) * factor[t](m) for i, m in equation)
                 for k, t in enumerate(self.terms)} for equation in self.equations]

    @property
    def blocks(self):
        """The Blocks of W's inertial columns, in their order."""
        return self.links or tuple(Block(j.child_link, i) for i, j in enumerate(self.model.joints))

    @property
    def joints(self):
        """The joints with friction columns: the movable ones (a kept fixed joint has none)."""
        return [i for i, j in enumerate(self.model.joints) if j.type != "fixed"]

    @property
    def names(self):
        bodies = [f"{b.link}.{p}" for b in self.blocks for p in inertial.PARAMETERS]
        return bodies + [f"{self.model.joints[i].name}.{t}" for i in self.joints for t in self.terms]

    @property
    def prior_weight(self):
        """The prior's default weight: PRIOR_WEIGHT on a CAD model's bodies; 0 on links named, whose
        URDF values are a guess (a payload's 0.1 kg, no inertia: a prior there outweighs the data)."""
        return 0.0 if self.links else PRIOR_WEIGHT

    @property
    def inertial(self):
        """The number of inertial columns: 10 a block; friction's follow."""
        return 10 * len(self.blocks)

    @property
    def size(self):
        return self.inertial + len(self.terms) * len(self.joints)

    def parameters(self):
        """The model's own theta: its inertias (a link's own for a link named), the URDF's damping
        (viscous) and friction (Coulomb), no offset, no armature."""
        own = {"viscous": lambda j: j.damping, "coulomb": lambda j: j.friction, "offset": lambda j: 0.0,
               "armature": lambda j: 0.0}
        friction = [own[t](self.model.joints[i]) for i in self.joints for t in self.terms]
        if not self.links:
            return np.concatenate([inertial.parameters(self.model, floating=False), friction])
        rows = {row.name: row for row in self.model.links}
        return np.concatenate([inertial.dynamic_parameters(rows[b.link].inertia) for b in self.links] + [friction])

    @property
    def row_columns(self):
        """Per row of W (`equations`) the columns it can have other than 0, ascending: those of the
        blocks on bodies its joints carry, then their own friction terms."""
        chains = inertial.plan(self.model, False).chain
        terms, place = len(self.terms), {i: r for r, i in enumerate(self.joints)}
        out = []
        for equation in self.equations:
            members = [i for i, _ in equation]
            out.append(np.array([10 * b + k for b, block in enumerate(self.blocks)
                                 if any(i in chains[block.body] for i in members) for k in range(10)]
                                + sorted(self.inertial + place[i] * terms + t for i in members for t in range(terms)),
                                dtype=int))
        return out

    def regressor(self, q, qd, qdd, *, gravity=engine.GRAVITY):
        """W (N, rows, size) for (N, n) q, qd, qdd: effort = W theta (+ the held part,
        `regressor_and_held`), a row per `equations` (each movable joint, or a mimic leader with
        its followers). A kept fixed joint has no row: what it carries is no measured effort.
        The samples are W's fastest axis in memory."""
        return self.regressor_and_held(q, qd, qdd, gravity=gravity)[0]

    def regressor_and_held(self, q, qd, qdd, *, gravity=engine.GRAVITY):
        """W, and the effort (N, movable joints) of the parameters held at the URDF's (None when
        every body is identified): effort = W theta + held (`rows`)."""
        columns = self.row_columns
        rows, held = self.rows(q, qd, qdd, columns, gravity=gravity)
        W = np.zeros((self.size, len(rows), len(q))).transpose(2, 1, 0)
        for r, (cols, Z) in enumerate(zip(columns, rows)):
            W[:, r, cols] = Z.T
        return W, held

    def compressed(self, columns):
        """The regressor's columns that `parts` makes for `columns`, ascending, or None where links
        or held parameters combine a body's columns (then every column is made)."""
        if self.links or self.held is not None:
            return None
        made = np.unique(np.concatenate([np.asarray(c, dtype=int) for c in columns] + [np.zeros(0, dtype=int)]))
        return made[made < self.inertial]

    def rows(self, q, qd, qdd, columns, *, gravity=engine.GRAVITY):
        """Of W, for each movable joint r, the columns `columns[r]` (ascending, a subset of
        `row_columns[r]`) of its row: a list of (len(columns[r]), N) arrays, the samples fastest;
        and the held effort (N, movable joints) or None (`regressor_and_held`): `parts`, joined."""
        found, held = self.parts(q, qd, qdd, columns, gravity=gravity)
        return [np.concatenate(joint) for joint in found], held

    def parts(self, q, qd, qdd, columns, *, gravity=engine.GRAVITY, extra=0, buffer=None, out=None):
        """`rows` in two parts a joint, [its inertial rows, the rest], and the held effort. The rest
        is the joint's friction rows, then `extra` rows for the caller (in out[r], >= N columns,
        when given). A link's columns are its body's times its T, and the held effort the body
        columns times `held`, summed term by term in a fixed order (element-wise: a sample's bits
        do not depend on its chunk). Where every body is whole and nothing held, the regressor is
        made of the columns `compressed` alone, and a joint's inertial rows are a view of it where
        they lie side by side there (every joint of a depth-first tree), else a copy. buffer:
        zeros (n, len(compressed) or 10 n, >= N) to make the regressor in, the same array call
        after call (`inertial.regressor`'s out)."""
        made, N = self.compressed(columns), len(q)
        Y = inertial.regressor(self.model, q, qd, qdd, gravity=gravity, columns=made, compressed=made is not None,
                               out=None if buffer is None else buffer[:, :, :N])
        Yt = Y.transpose(1, 2, 0)  # (n, made or 10 bodies, N): the regressor's own memory order
        found = []
        for r, (equation, cols) in enumerate(zip(self.equations, columns)):
            cols = np.asarray(cols, dtype=int)
            inert, friction = cols[cols < self.inertial], cols[cols >= self.inertial]
            rows = _summed([(self._inertial_rows(Yt[i], inert, made), m) for i, m in equation])
            found.append([rows, np.empty((len(friction) + extra, N)) if out is None else out[r][:, :N]])
            self._friction(r, friction, qd, qdd, found[-1][1])
        if self.held is None:
            return found, None
        held = _combination(Y, self.held)  # (N, n): each joint's effort of what is held
        return found, np.column_stack([_summed([(held[:, i], m) for i, m in equation]) for equation in self.equations])

    def _inertial_rows(self, Y, inert, made):
        """A joint's rows of W for the inertial columns `inert`, from its row Y (columns, N) of the
        regressor (made of the columns `made` alone, or of all of them where made is None)."""
        if made is not None:
            at = np.searchsorted(made, inert)
            if len(at) and at[-1] - at[0] + 1 == len(at):
                return Y[at[0]:at[-1] + 1]
            return Y[at]  # apart (a tree's branches): a copy
        Z = np.empty((len(inert), Y.shape[1]))
        for k, c in enumerate(inert):
            block = self.links[c // 10] if self.links else None
            if block is None:
                Z[k] = Y[c]
            else:
                body = Y[10 * block.body:10 * block.body + 10]
                Z[k] = body[c % 10] if block.moved is None else _combination(body.T, block.moved[:, c % 10])
        return Z

    def _friction(self, r, friction, qd, qdd, into):
        """Row r's friction columns `friction` of W into the rows of `into`: each a term of one of
        its joints (`equations`), times the joint's multiplier."""
        terms, multiplier = len(self.terms), dict(self.equations[r])
        for k, c in enumerate(friction):
            i = self.joints[(c - self.inertial) // terms]
            if i not in multiplier:
                raise ValueError(f"column {c} is another joint's friction term: not in row {r}")
            term = self.terms[(c - self.inertial) % terms]
            if term == "viscous":
                into[k] = qd[:, i]
            elif term == "coulomb":
                np.sign(qd[:, i], out=into[k])
            elif term == "offset":
                into[k] = 1.0
            else:  # armature
                into[k] = qdd[:, i]
            if multiplier[i] != 1.0:
                into[k] *= multiplier[i]


def _summed(terms):
    """sum x m over a row's (x, m) terms (`Layout.equations`: a mimic leader's own, then each
    follower's times its multiplier), in order, element-wise; a lone joint's x itself."""
    if len(terms) == 1 and terms[0][1] == 1.0:
        return terms[0][0]
    out = np.zeros_like(terms[0][0])
    for x, m in terms:
        out += x * m
    return out


def _combination(Y, w):
    """sum_k Y[..., k] w[k] over the nonzero w[k], in order: element-wise, so each sample's bits
    are its own (a BLAS product may group terms by CPU and size)."""
    out = np.zeros(Y.shape[:-1])
    for k in np.flatnonzero(w):
        out += Y[..., k] * w[k]
    return out


def layout(model, *, friction=True, offset=False, armature=False, links=None, mimic=None):
    """The Layout of W for a model: friction adds viscous and Coulomb columns, offset and armature
    theirs. links: names of the links whose parameters (10 each, in the link's own frame) are
    identified, everything else held at the URDF's values (default: every body's). A link fixed
    to a moving one (a payload on the tool) is identified alone, the rest of its body held; a
    link of the fixed base, a name that is no link, or two links of one body (only their sum
    shows in the efforts) are refused. mimic: the run's Coordinates (`model.tree`), whose mimic
    followers move with their leaders and whose efforts are the leaders' alone, each a leader's
    torque plus its followers' times their multipliers (`Layout.equations`)."""
    terms = tuple(t for t, on in zip(FRICTION, (friction, friction, offset, armature)) if on)
    coupling = _coupling(model, mimic)
    if links is None:
        return Layout(model, terms, coupling=coupling)
    links = [links] if isinstance(links, str) else list(links)
    blocks = tuple(_block(model, name, links) for name in dict.fromkeys(links))
    if not blocks:
        raise IdentificationError(model.source, None, "--links names no link")
    held = inertial.parameters(model, floating=False)
    chosen = {b.link for b in blocks}
    for body in {b.body for b in blocks}:  # the rest of a body with a link named: its other links
        rest = [inertial.dynamic_parameters(spatial.inertia_to(row.inertia, spatial.xup(row.body_H_link)))
                for row in model.links if row.body == body and row.name not in chosen]
        held[10 * body:10 * body + 10] = np.sum(rest, axis=0) if rest else 0.0
    return Layout(model, terms, blocks, held, coupling)


def _coupling(model, coords):
    """`Layout.coupling` of a run's Coordinates: per column of the run that is a movable joint,
    that joint and the followers of it with their multipliers; () without followers."""
    from ....model.tree import Coordinates

    if coords is None:
        return ()
    if not isinstance(coords, Coordinates):
        raise RneaError("mimic", None, f"expected a Coordinates (rnea_cli.model.tree), not {type(coords).__name__}")
    if not coords.followers:
        return ()
    movable = {i for i, j in enumerate(model.joints) if j.type != "fixed"}
    members = {i: [(i, 1.0)] for i in coords.columns if i in movable}
    for i, (leader, multiplier) in enumerate(coords.leaders):
        if leader != i and i in movable:
            members[leader].append((i, multiplier))
    return tuple(tuple(members[i]) for i in coords.columns if i in movable)


def _block(model, name, names):
    """The Block of link `name`, or an IdentificationError saying why it cannot be identified."""
    rows = {row.name: row for row in model.links}
    row = rows.get(name)
    if row is None:
        known = ", ".join(r.name for r in model.links[:8]) + (", ..." if len(model.links) > 8 else "")
        raise IdentificationError(model.source, None, f"--links: no link {shown(name)} in the robot (its links: "
                                                      f"{known})")
    if row.body < 0:
        raise IdentificationError(model.source, None, f"--links: link {shown(name)} is the fixed base"
                                  + ("" if name == model.root_link else f" (fixed to {model.root_link})")
                                  + ": no joint moves it, no effort shows its mass")
    moving = model.joints[row.body].child_link
    for other in names:
        if other != name and rows.get(other) is not None and rows[other].body == row.body:
            raise IdentificationError(model.source, None, f"--links: links {shown(name)} and {shown(other)} are "
                                                          f"one rigid body (fixed to {moving}): only their sum "
                                                          "shows in the efforts; name one")
    same = np.array_equal(row.body_H_link, np.eye(4))
    return Block(name, row.body, None if same else inertial.moved(row.body_H_link), whole=False)


@dataclass(frozen=True)
class BaseParameters:
    """The identifiable combinations of theta: beta = theta[independent] + K theta[dependent].

    W[..., dependent] = W[..., independent] K for every motion, so effort = W[..., independent] beta.
    A dependent parameter with a zero column of K does not show in the efforts at all."""

    layout: Layout
    rank: int
    independent: np.ndarray  # (rank,) columns of W, ascending
    dependent: np.ndarray  # (size - rank,) the others, ascending
    K: np.ndarray  # (rank, size - rank)
    tolerance: float

    def beta(self, theta):
        """(rank,) base parameters of a full theta."""
        theta = np.asarray(theta, dtype=float)
        return theta[self.independent] + fl.matvec(self.K, theta[self.dependent])

    def names(self):
        """Each base parameter written out, e.g. 'link2.mx + 0.425 link3.m'."""
        names = self.layout.names
        out = []
        for r, i in enumerate(self.independent):
            terms = [names[i]] + [f"{self.K[r, k]:+.6g} {names[j]}" for k, j in enumerate(self.dependent)
                                  if self.K[r, k] != 0.0]
            out.append(" ".join(terms))
        return out


def base_parameters(model, *, gravity=engine.GRAVITY, friction=True, offset=False, armature=False, samples=None,
                    seed=0, tolerance=RANK_TOLERANCE, links=None, mimic=None):
    """The identifiable combinations of a fixed-base model's parameters (and friction terms), found
    numerically: W stacked over random samples (q uniform in each joint's limits, [-pi, pi] for a
    continuous joint, [-1, 1] m for a prismatic one without limits; qd, qdd uniform of unit variance). The
    rank is that of QR with column pivoting (|R_kk| > tolerance |R_00|; W's columns are not scaled:
    scaling would blow round-off in a column that is zero but for it up to unit size); the
    independent columns are the first ones in W's order that are not combinations of those before
    them (unpivoted QR, the same test), and K the least-squares fit of the others on them, with
    entries below ZERO set to 0. samples: default enough for 4 rows a column. links: of those links
    only, the rest held (`layout`). mimic: Coordinates whose mimic followers move with their
    leaders, their torques in their leaders' efforts (`layout`). Returns a BaseParameters."""
    from scipy.linalg import qr

    if not hasattr(model, "joints") or not hasattr(model, "inertia"):
        raise RneaError("base_parameters", None, f"expected a Model (rnea_cli.load_urdf), not {type(model).__name__}")
    if model.n == 0:
        raise IdentificationError(model.source, None, "the robot has no movable joint: no parameter shows in efforts")
    cols = layout(model, friction=friction, offset=offset, armature=armature, links=links, mimic=mimic)
    N = samples or max(100, math.ceil(4 * cols.size / max(len(cols.coupling) or model.n, 1)))
    if mimic is not None and mimic.followers:  # mimic followers move with their leaders: what shows then
        q, qd, qdd = mimic.expand(*random_motion(mimic, N, np.random.default_rng(seed)))
    else:
        q, qd, qdd = random_motion(model, N, np.random.default_rng(seed))
    W = cols.regressor(q, qd, qdd, gravity=gravity).reshape(-1, cols.size)
    R = qr(W, mode="r", pivoting=True)[0]
    diagonal = np.abs(np.diag(R))
    rank = int(np.sum(diagonal > tolerance * diagonal[0])) if diagonal.size and diagonal[0] > 0 else 0
    # which columns: the first ones in W's order (root to tip) that are not combinations of those
    # before them, as textbooks regroup (a body's m, mz into its parent's parameters)
    R = qr(W, mode="r")[0]
    independent = np.flatnonzero(np.abs(np.diag(R)) > tolerance * diagonal[0]) if rank else np.zeros(0, int)
    if len(independent) != rank:  # round-off at the edge of the tolerance: the pivoted choice instead
        independent = np.sort(qr(W, mode="r", pivoting=True)[1][:rank])
    dependent = np.setdiff1d(np.arange(cols.size), independent)
    # W[:, dependent] = W[:, independent] K, the least-squares fit in a fixed order (the same bits on
    # every CPU: K enters the estimate; the QRs above only decide the rank and which columns)
    K = fl.lstsq(W[:, independent], W[:, dependent], rcond=0.0) if rank else np.zeros((0, len(dependent)))
    K[np.abs(K) < ZERO] = 0.0
    return BaseParameters(cols, rank, independent, dependent, K, tolerance)


def random_motion(model, N, rng):
    """(q, qd, qdd), each (N, n): q uniform in each joint's range (a range of over 100 turns or
    200 m: a turn or 2 m of it about 0, as ±1e31 m of travel would make the regressor's columns
    round-off), qd and qdd uniform with unit
    variance (in [-sqrt 3, sqrt 3]); a kept fixed joint's are 0. Drawn by `fixed_linalg.uniform`:
    the base parameters' K depends on them, so they are the same bits on every machine."""
    q = np.empty((N, model.n))
    for i, j in enumerate(model.joints):
        lower, upper = j.limits.lower, j.limits.upper
        if lower is None or upper is None or lower >= upper:
            lower, upper = (-math.pi, math.pi) if j.is_angular else (-1.0, 1.0)
        half = math.pi if j.is_angular else 1.0  # a range of over 100 turns or 200 m: a turn or 2 m of it
        if upper - lower > 200 * half:
            centre = min(max(0.0, lower + half), upper - half)
            lower, upper = centre - half, centre + half
        q[:, i] = fl.uniform(rng, lower, upper, N)
    qd, qdd = (fl.uniform(rng, -math.sqrt(3.0), math.sqrt(3.0), (N, model.n)) for _ in range(2))
    fixed = [i for i, j in enumerate(model.joints) if j.type == "fixed"]
    q[:, fixed] = qd[:, fixed] = qdd[:, fixed] = 0.0
    return q, qd, qdd


class IdentificationError(RneaError):
    """Data that cannot identify the parameters asked for (too few samples, a joint that never
    moves, no convergence); `source` names the robot."""


