"""The engine's constants of a model and its working arrays (engine.py runs the recursion over them).

`Plan`: per joint its parent, kind, alignment and the fixed part of Xup, per body its inertia, all
in aligned frames (docs/engine.md, section 1), the matrices as `Linear` maps: y = A x as
element-wise operations in a fixed order, the same bits on every CPU (docs/engine.md, section 4).
`Buffers`: one chunk's working arrays; `Workspace`: a model's Plan and its Buffers, reused call
after call.
"""

import math

import numpy as np

from . import spatial


class Linear:
    """y = A x for a constant matrix A, as element-wise operations: each row of y is the sum of
    A[r, k] x[k] over the nonzero entries of its row, left to right (an entry of ±1 adds or
    subtracts x[k] itself, which rounds alike). BLAS would pick a kernel, and its rounding, by
    CPU and by the length of x."""

    def __init__(self, A):
        self.rows = [[(k, float(a)) for k, a in enumerate(row) if a != 0.0] for row in np.asarray(A, dtype=float)]

    def into(self, x, y, t):
        """y = A x; x (C, L), y (R, L) not overlapping x, t (L,) scratch."""
        for r, terms in enumerate(self.rows):
            if not terms:
                y[r] = 0.0
                continue
            k, a = terms[0]
            if a == 1.0:
                np.copyto(y[r], x[k])
            elif a == -1.0:
                np.negative(x[k], out=y[r])
            else:
                np.multiply(x[k], a, out=y[r])
            _add_terms(y[r], x, terms[1:], t)

    def add_to(self, x, y, t):
        """y += A x, term by term."""
        for r, terms in enumerate(self.rows):
            _add_terms(y[r], x, terms, t)


def _add_terms(y, x, terms, t):
    for k, a in terms:
        if a == 1.0:
            y += x[k]
        elif a == -1.0:
            y -= x[k]
        else:
            np.multiply(x[k], a, out=t)
            y += t


class Plan:
    """The constants of a Model in aligned frames: per joint its parent, kind, alignment A
    (A e_z = axis), the fixed part of Xup, and per body (the root last) its mass m, first moment
    h = m c and rotational inertia about its origin, all in its aligned frame."""

    def __init__(self, model):
        self.n = model.n
        self.parent = [int(p) for p in model.parent]  # -1, the root, is also the last slot of the arrays
        self.prismatic = [not j.is_angular for j in model.joints]  # a fixed joint too: at q = 0, exact
        self.fixed = [i for i, j in enumerate(model.joints) if j.type == "fixed"]
        self.A = np.array([spatial.align_z(j.axis) for j in model.joints]).reshape(-1, 3, 3)
        self.Xtree, self.Xtree_T = [], []  # stator'_X_parent' (the fixed part of Xup), as Linear maps
        for i, j in enumerate(model.joints):
            A_parent = np.eye(3) if j.parent < 0 else self.A[j.parent]
            # parent'_H_stator' = inv(parent_H_parent') parent_H_stator stator_H_stator'
            X = spatial.xup(spatial.dot(spatial.dot(spatial.pose(A_parent.T), j.parent_H_stator),
                                        spatial.pose(self.A[i])))
            self.Xtree.append(Linear(X))
            self.Xtree_T.append(Linear(X.T))
        self.to_rotor = [Linear(spatial.rot(A)) for A in self.A]  # aligned -> rotor frame: rot(A)
        self.to_aligned = [Linear(spatial.rot(A.T)) for A in self.A]
        # per body, then the root: (n + 1, ...) shaped to broadcast over (bodies, 2, N)
        inertias = list(model.inertia) + [np.asarray(model.root_inertia)]
        rotations = list(self.A) + [np.eye(3)]
        Ibar = [spatial.dot(spatial.dot(R.T, np.asarray(I)[:3, :3]), R) for I, R in zip(inertias, rotations)]
        h = [spatial.dot(R.T, np.asarray(I)[[2, 0, 1], [4, 5, 3]]) for I, R in zip(inertias, rotations)]
        # I' = [[Ibar, H], [H^T, m 1]], H = skew(h): a Linear map whose zero entries cost nothing
        self.inertia = [Linear(np.block([[Ib, spatial.skew(hb)], [spatial.skew(hb).T, float(np.asarray(I)[5, 5]) * np.eye(3)]]))
                        for Ib, hb, I in zip(Ibar, h, inertias)]
        self.world_R_root = np.asarray(model.world_H_root)[:3, :3]


class Buffers:
    """Working arrays for chunks of up to N samples, one flat allocation, each array on a
    64-byte boundary (numpy's start 16 bytes past one; see benchmarks/README.md). Body arrays
    have n + 1 slots: the last, reached by parent index -1, is the root body."""

    def __init__(self, n, N, wrenches):
        self.N, self.wrenches = N, wrenches
        self.shapes = {
            "va": (n + 1, 2, 3, 2),  # [v_i, a_i] per body
            "P": (n + 1, 2, 3, 2),  # [I_i v_i, I_i a_i]
            "f": (n + 1, 2, 3),  # f_i
            "t": (n + 1, 2), "t1": (2, 2), "t2": (2, 2), "t3": (2,),  # scratch
            "q": (n,), "qd": (n,), "qdd": (n,),  # the chunk's input, rows of unit stride
            "c": (n,), "s": (n,), "d": (5, n),  # cos q, sin q, scratch
            "tau": (n,),
        } | ({"W": (n, 2, 3)} if wrenches else {})
        self.rows = {k: math.prod(shape) for k, shape in self.shapes.items()}
        sizes = {k: -(-rows * N // 8) * 8 for k, rows in self.rows.items()}
        raw = np.empty(sum(sizes.values()) + 8)
        start = (-raw.ctypes.data % 64) // 8
        self.memory = {}
        for k, size in sizes.items():
            self.memory[k] = raw[start:start + size]
            start += size

    def view(self, N):
        """The arrays for a chunk of N samples, samples last."""
        return {k: a[:self.rows[k] * N].reshape(self.shapes[k] + (N,)) for k, a in self.memory.items()}


class Workspace:
    """A model's Plan and working arrays, made once and passed to `engine.inverse_dynamics` call after
    call (the CLI passes one for a whole trajectory). One call at a time uses it; threads each
    take a set of arrays of their own."""

    def __init__(self, model, wrenches=False):
        plan = model.derived.get("engine.Plan")
        if plan is None:  # the same for every workspace of the model
            plan = model.derived["engine.Plan"] = Plan(model)
        self.model, self.plan, self.wrenches = model, plan, wrenches
        self._free = []  # Buffers not in use

    def take(self, N, wrenches):
        try:
            buffers = self._free.pop()  # atomic: threads never share a set
        except IndexError:
            buffers = None
        if buffers is None or buffers.N < N or (wrenches and not buffers.wrenches):
            buffers = Buffers(self.plan.n, N, wrenches or self.wrenches)
        return buffers

    def give_back(self, buffers):
        self._free.append(buffers)
