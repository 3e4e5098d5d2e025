"""Inverse dynamics by the recursive Newton-Euler algorithm, vectorised over samples.

The same algorithm as `reference.rnea_reference` (Featherstone, RBDA Table 5.1), worked for
thousands of samples at once: every working array has the samples as its last axis, and the
Python loop runs over joints only. Two changes of coordinates make each step cheap; both are
derived in docs/engine.md:

- each body is worked in its *aligned* frame, its rotor frame turned so that the joint axis is z:
  S is then a unit vector and `stator_X_rotor(q)` a rotation about z or a translation along z;
- f = I a + v x* I v is formed for every body at once, after the first pass.

Every operation on samples is an element-wise numpy operation in a fixed order (no BLAS, no
reduction over samples, no libm): each is correctly rounded element by element, so a sample's
result is the same bits in any chunk, on any thread, on every CPU (docs/engine.md, section 4).

The model's constants in those frames (`Plan`) and the working arrays (`Workspace`) are made in
workspace.py; here is the recursion over them, each step a small function under its equation.
Spatial vectors are [angular; linear]. A motion array is laid out (angular|linear, x|y|z, v|a, N).
"""

from typing import NamedTuple

import numpy as np

from . import spatial
from .workspace import Workspace

GRAVITY = (0.0, 0.0, -9.81)
CHUNK = 6144  # samples per pass, so that each body's working arrays stay in cache (benchmarks/README.md)
THREADED_CHUNK = 2 * CHUNK  # per task on a thread pool (the same results; benchmarks/README.md)


class Dynamics(NamedTuple):
    """What `inverse_dynamics` returns; arrays have the samples first."""

    tau: np.ndarray  # (N, n) joint torques (N·m) / forces (N)
    base_wrench: np.ndarray | None  # (N, 6) [n; f] on the floating base, in the base frame
    joint_wrenches: np.ndarray | None  # (N, n, 6) [n; f] from parent to child, in each joint's (child) frame


def rnea(model, q, qd, qdd, *, gravity=GRAVITY, f_ext=None, workspace=None):
    """Joint torques/forces tau = ID(q, qd, qdd) for a fixed-base tree.

    q, qd, qdd: (N, n) for a trajectory or (n,) for one sample, columns in `model.joint_names`
    order (rad, m; rad/s, m/s; rad/s², m/s²). gravity: (3,) in the root frame, m/s².
    f_ext: optional {body: (N, 6) [n; f]} external wrenches on bodies (0..n-1; -1 the root), each
    in its body's frame at the frame origin. Returns tau with the shape of q (N·m or N).
    """
    return inverse_dynamics(model, q, qd, qdd, gravity=gravity, f_ext=f_ext, workspace=workspace).tau


def inverse_dynamics(model, q, qd, qdd, *, gravity=GRAVITY, base=None, f_ext=None, wrenches=False,
                     workspace=None, threads=1):
    """RNEA with the options `rnea` leaves out; returns a `Dynamics`.

    base: None for a fixed base, or (pose, twist, dtwist) for a floating one: pose (N, 7) is the
    root body's position and unit quaternion (x, y, z, qx, qy, qz, qw) in the world (through
    `model.world_H_root`), twist (N, 6) its [w; v] in its own frame and dtwist (N, 6) the time
    derivative of that twist. gravity is then in the world frame. wrenches: also return the wrench
    each joint transmits. workspace: a `Workspace(model)` to reuse (default: a new one).
    threads: chunks computed in parallel (numpy releases the GIL); the results are the same bits.
    A single sample ((n,) arrays) gives arrays without the sample axis. tau is row-major, unless
    q is column-major ((N, n) with each joint's column contiguous).
    """
    q, qd, qdd, single, base, f_ext, gravity = _checked(model, q, qd, qdd, base, f_ext, gravity)
    workspace = workspace if workspace is not None and workspace.model is model else Workspace(model)
    plan, N = workspace.plan, q.shape[0]
    if plan.fixed and any(np.any(x[:, plan.fixed] != 0) for x in (q, qd, qdd)):
        raise ValueError(f"a fixed joint ({', '.join(model.joints[i].name for i in plan.fixed)}) has a q, qd or "
                         "qdd other than 0")
    out = Dynamics(np.empty((N, model.n), order="F" if q.flags.f_contiguous and not q.flags.c_contiguous else "C"),
                   np.empty((N, 6)) if base is not None else None,
                   np.empty((N, model.n, 6)) if wrenches else None)

    if N > 0:
        threaded = threads > 1 and N > CHUNK
        tasks = min(max(-(-N // (THREADED_CHUNK if threaded else CHUNK)), threads if threaded else 1), N)
        bounds = [N * k // tasks for k in range(tasks + 1)]  # near-equal lengths

        def chunk(k):
            rows = slice(bounds[k], bounds[k + 1])
            buffers = workspace.take(-(-N // tasks), wrenches)
            try:
                _chunk(plan, buffers.view(rows.stop - rows.start), rows, q, qd, qdd, gravity, base, f_ext, out)
            finally:
                workspace.give_back(buffers)

        if tasks > 1 and threaded:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(min(threads, tasks), thread_name_prefix="rnea-engine") as pool:
                list(pool.map(chunk, range(tasks)))
        else:
            for k in range(tasks):
                chunk(k)
    if single:
        return Dynamics(*(None if x is None else x[0] for x in out))
    return out


def _checked(model, q, qd, qdd, base, f_ext, gravity):
    """The arguments as float arrays with a sample axis, or ValueError naming the one that is wrong."""
    q, qd, qdd = (np.asarray(x, dtype=float) for x in (q, qd, qdd))
    single = q.ndim == 1
    for label, x in (("q", q), ("qd", qd), ("qdd", qdd)):
        if x.ndim not in (1, 2) or x.shape[-1] != model.n:
            raise ValueError(f"{label} has shape {x.shape}; expected (N, {model.n}) or ({model.n},)")
        if x.shape != q.shape:
            raise ValueError(f"{label} has shape {x.shape}, but q has shape {q.shape}")
    gravity = np.asarray(gravity, dtype=float)
    if gravity.shape != (3,):
        raise ValueError(f"gravity has shape {gravity.shape}; expected (3,)")
    if single:
        q, qd, qdd = q[None], qd[None], qdd[None]
    N = q.shape[0]
    if base is not None:
        base = [np.asarray(x, dtype=float) for x in base]
        for k, (label, width) in enumerate(zip(("base pose", "base twist", "base dtwist"), (7, 6, 6))):
            if base[k].shape != (N, width) and not (single and base[k].shape == (width,)):
                raise ValueError(f"{label} has shape {base[k].shape}; expected {(width,) if single else (N, width)}")
            base[k] = base[k].reshape(N, width)
    far = spatial.beyond_max_angle(q, [i for i, j in enumerate(model.joints) if j.is_angular])
    if far is not None:
        k, i = far
        raise ValueError(f"q of {model.joints[i].name} at sample {k} is {q[k, i]!r} rad: more than "
                         f"{spatial.MAX_ANGLE:g} rad (21 million turns) from 0, or not a number")
    f_ext = {int(b): np.asarray(w, dtype=float).reshape(N, 6) for b, w in (f_ext or {}).items()}
    for b in f_ext:
        if not -1 <= b < model.n:
            raise ValueError(f"f_ext names body {b}; bodies are -1 (root) .. {model.n - 1}")
    return q, qd, qdd, single, base, f_ext, gravity


def _chunk(plan, w, rows, q, qd, qdd, gravity, base, f_ext, out):
    """One chunk of samples `rows` into `out`, with the arrays w of `Buffers.view`."""
    # (n, N) rows of unit stride, which numpy's vector kernels need: copied from row-major
    # (N, n) input, taken as they are from column-major input (what the CLI passes)
    qT, qdT, qddT = (_unit_stride(x[rows].T, w[k]) for x, k in ((q, "q"), (qd, "qd"), (qdd, "qdd")))
    root = None if base is None else _root_motion(plan.world_R_root, *(x[rows] for x in base), gravity)
    fext = {b: _aligned_wrench(plan, b, x[rows]) for b, x in f_ext.items() if b >= 0 or base is not None}
    out.tau[rows] = _passes(plan, w, qT, qdT, qddT, gravity, root, fext, out.joint_wrenches is not None).T
    if out.base_wrench is not None:
        out.base_wrench[rows] = w["f"][-1].reshape(6, -1).T
    if out.joint_wrenches is not None:
        # back from aligned to rotor (joint) frames: [n; f]_rotor = rot(A) [n; f]_aligned
        N = rows.stop - rows.start
        W, g = w["W"].reshape(plan.n, 6, N), w["P"].reshape(-1, N)[:6]  # g: scratch
        for i, to_rotor in enumerate(plan.to_rotor):
            to_rotor.into(W[i], g, w["t3"][0])
            out.joint_wrenches[rows, i] = g.T


def _unit_stride(x, out):
    if x.strides[-1] == x.itemsize:
        return x
    out[...] = x
    return out


def _root_motion(world_R_root, pose, twist, dtwist, gravity):
    """[v_root, a_root] as a (2, 3, 2, N) motion array: a_root = dtwist - [0; R^T g] (a_0 = -a_grav)."""
    R = spatial.quaternion_matrix(pose[:, 3:])  # (3, 3, N): world'_R_root, world' the frame of the poses
    g = spatial.dot(world_R_root.T, gravity)  # gravity in world'
    m = np.empty((2, 3, 2, len(pose)))
    m[:, :, 0] = twist.T.reshape(2, 3, -1)
    m[:, :, 1] = dtwist.T.reshape(2, 3, -1)
    for a in range(3):  # R^T g, summed in order
        m[1, :, 1] -= R[a] * g[a]
    return m


def _aligned_wrench(plan, body, wrench):
    """(2, 3, N) wrench [n; f] in body's aligned frame from (N, 6) in its rotor frame: rot(A)^T w."""
    w = np.ascontiguousarray(wrench.T)
    if body < 0:
        return w.reshape(2, 3, -1)
    out = np.empty_like(w)
    plan.to_aligned[body].into(w, out, np.empty(len(wrench)))
    return out.reshape(2, 3, -1)


def _passes(plan, w, q, qd, qdd, gravity, root, fext, wrenches):
    """tau (n, N) for q, qd, qdd of shape (n, N). Every step writes into the arrays of w."""
    n, N = q.shape
    c, s = spatial.cos_sin(q, w["c"], w["s"], w["d"])
    va, f, t = w["va"], w["f"], w["t"]
    if root is None:
        # a_0 = -a_grav: gravity as a fictitious acceleration of the fixed root
        va[-1, :, :, 0] = 0.0
        va[-1, :, :, 1] = np.concatenate([np.zeros(3), -gravity]).reshape(2, 3, 1)
    else:
        va[-1] = root

    # Pass 1, root to leaves: v_i and a_i
    for i in range(n):
        m = va[i]
        # Xup_i = stator_X_rotor(q_i) Xtree_i: the fixed part, then the joint's motion
        plan.Xtree[i].into(va[plan.parent[i]].reshape(6, 2 * N), m.reshape(6, 2 * N), t[0].reshape(2 * N))
        if plan.prismatic[i]:
            _translate_motion(m, q[i], w["t3"])
            _prismatic_motion(m, qd[i], qdd[i], w["t3"])
        else:
            _rotate_motion(m, c[i], s[i], w["t1"], w["t2"])
            _revolute_motion(m, qd[i], qdd[i], w["t3"])

    # f_i = I_i a_i + v_i x* I_i v_i - f_ext_i, every body at once (the root too, if it floats)
    bodies = n if root is None else n + 1
    _body_forces(plan, va, w["P"], f, t, bodies)
    for b, wrench in fext.items():
        f[b] -= wrench

    # Pass 2, leaves to root
    tau = w["tau"]
    for i in range(n - 1, -1, -1):
        fi = f[i]
        # tau_i = S_i^T f_i
        tau[i] = fi[1 if plan.prismatic[i] else 0, 2]
        if wrenches:
            w["W"][i] = fi
        p = plan.parent[i]
        if p < 0 and root is None:
            continue
        # f_p += Xup_i^T f_i = Xtree_i^T stator_X_rotor(q_i)^T f_i
        if plan.prismatic[i]:
            _translate_force_back(fi, q[i], w["t3"])
        else:
            _rotate_force_back(fi, c[i], s[i], w["t1"], w["t3"])
        plan.Xtree_T[i].add_to(fi.reshape(6, N), f[p].reshape(6, N), t[0, 0])
    return tau


def _body_forces(plan, va, P, f, t, B):
    """f_i = I_i a_i + v_i x* I_i v_i for the bodies 0..B-1 (docs/engine.md, section 2).

    P_i = I_i [v_i, a_i] body by body (a Linear map of I's nonzero entries), then with
    (n, l) = I v and I a: f = [n_a + w x n_v + u x l_v; l_a + w x l_v] for every body at once."""
    N = va.shape[-1]
    for i in range(B):
        plan.inertia[i].into(va[i].reshape(6, 2 * N), P[i].reshape(6, 2 * N), t[0].reshape(2 * N))
    w, u, t = va[:B, 0, :, 0], va[:B, 1, :, 0], t[:B, 0]
    Pn, Pl, fn, fl = P[:B, 0], P[:B, 1], f[:B, 0], f[:B, 1]
    np.copyto(fn, Pn[:, :, 1])
    _cross_add(w, Pn[:, :, 0], fn, t)
    _cross_add(u, Pl[:, :, 0], fn, t)
    np.copyto(fl, Pl[:, :, 1])
    _cross_add(w, Pl[:, :, 0], fl, t)


def _cross_add(a, b, out, t):
    """out += a x b, row by row (a, b, out: (B, 3, N)); t: scratch (B, N)."""
    for r, (i, j) in enumerate(((1, 2), (2, 0), (0, 1))):
        np.multiply(a[:, i], b[:, j], out=t)
        out[:, r] += t
        np.multiply(a[:, j], b[:, i], out=t)
        out[:, r] -= t


def _rotate_motion(m, c, s, t1, t2):
    """m <- rot(Rz(q)^T) m, both halves, v and a: x' = c x + s y, y' = c y - s x."""
    x, y = m[:, 0], m[:, 1]  # (angular|linear, v|a, N)
    np.multiply(x, s, out=t1)
    np.multiply(y, s, out=t2)
    x *= c
    x += t2
    y *= c
    y -= t1


def _translate_motion(m, q, t):
    """m <- xlt(q e_z) m: linear part -= (q e_z) x angular part, i.e. (lx, ly) += q (wy, -wx)."""
    np.multiply(m[0, 1], q, out=t)
    m[1, 0] += t
    np.multiply(m[0, 0], q, out=t)
    m[1, 1] -= t


def _revolute_motion(m, qd, qdd, t):
    """v += S qd; a += S qdd + v x S qd, with S = e_z in the angular half.

    v x (e_z qd) = qd (v_y, -v_x, 0) in both halves."""
    m[0, 2, 0] += qd
    np.multiply(m[:, 1, 0], qd, out=t)
    m[:, 0, 1] += t
    np.multiply(m[:, 0, 0], qd, out=t)
    m[:, 1, 1] -= t
    m[0, 2, 1] += qdd


def _prismatic_motion(m, qd, qdd, t):
    """v += S qd; a += S qdd + v x S qd, with S = e_z in the linear half.

    v x ([0; e_z] qd) = [0; w x e_z qd] = qd [0; (w_y, -w_x, 0)]."""
    m[1, 2, 0] += qd
    t = t[:1]
    np.multiply(m[0:1, 1, 0], qd, out=t)
    m[1:2, 0, 1] += t
    np.multiply(m[0:1, 0, 0], qd, out=t)
    m[1:2, 1, 1] -= t
    m[1, 2, 1] += qdd


def _rotate_force_back(f, c, s, t1, t2):
    """f <- rot(Rz(q)) f = rot(Rz(q)^T)^T f, both halves: x' = c x - s y, y' = s x + c y."""
    x, y = f[:, 0], f[:, 1]
    np.multiply(x, s, out=t2)
    np.multiply(y, s, out=t1[0])
    x *= c
    x -= t1[0]
    y *= c
    y += t2


def _translate_force_back(f, q, t):
    """f <- xlt(q e_z)^T f: angular part += (q e_z) x linear part, i.e. (nx, ny) += q (-fy, fx)."""
    t = t[0]
    np.multiply(f[1, 1], q, out=t)
    f[0, 0] -= t
    np.multiply(f[1, 0], q, out=t)
    f[0, 1] += t
