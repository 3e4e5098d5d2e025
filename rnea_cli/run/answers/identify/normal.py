"""The normal equations of the efforts, summed chunk by chunk, exactly and in the same bits on every
CPU however the run is cut (fixed_linalg.block_grams)."""

import numpy as np

from ....dynamics import engine, inertial
from .. import fixed_linalg as fl
from ..fixed_linalg import BLOCK, block_grams

STEP = 8 * BLOCK  # samples whose regressor is made at once (memory: 7 joints, 84 columns, 38 MB)


class NormalEquations:
    """Per joint j the normal equations of W theta = effort, summed chunk by chunk:
    G[j] = sum W_j^T W_j, b[j] = sum W_j^T effort_j, c[j] = sum effort_j², with W_j joint j's row.

    Samples are summed in blocks of `fixed_linalg.BLOCK` by their index in the whole run, each
    block's sums within about an ulp of exact and the same bits on every CPU (`block_grams`), the
    blocks added in order: the same bits however the run is cut into chunks, on whatever CPU. A row
    of W is zero outside the columns of the bodies the joint carries and its own friction: only
    those are multiplied."""

    def __init__(self, layout, gravity=engine.GRAVITY):
        self.layout, self.gravity = layout, np.asarray(gravity, dtype=float)
        model, p = layout.model, layout.size
        chains = inertial.plan(model, False).chain
        friction = {i: layout.inertial + r * len(layout.terms) for r, i in enumerate(layout.joints)}
        self.columns = [np.array([10 * b + k for b, block in enumerate(layout.blocks) if i in chains[block.body]
                                  for k in range(10)]
                                 + [friction[i] + t for t in range(len(layout.terms))], dtype=int)
                        for i in layout.joints]
        n = len(layout.joints)
        self.G, self.b, self.c = np.zeros((n, p, p)), np.zeros((n, p)), np.zeros(n)
        # per joint [[G, b], [b^T, c]] over its own columns: what the blocks are added to
        self._totals = [np.zeros((len(cols) + 1, len(cols) + 1)) for cols in self.columns]
        self.count = 0
        self.moved = np.zeros(n, dtype=bool)  # each joint's qd was not 0 somewhere
        self._pending = None  # (W, effort) of samples not yet a whole block

    def add(self, q, qd, qdd, effort):
        """One chunk of samples: (N, n) q, qd, qdd of every model joint, (N, movable) effort. The
        effort of what the layout holds at the URDF's values is taken off it: the equations are
        those of the parameters identified."""
        q, qd, qdd, effort = (np.asarray(x, dtype=float) for x in (q, qd, qdd, effort))
        for start in range(0, max(len(q), 1), STEP):  # W a STEP at a time: bounded memory
            rows = slice(start, start + STEP)
            self._add(q[rows], qd[rows], qdd[rows], effort[rows])

    def _add(self, q, qd, qdd, effort):
        W, held = self.layout.regressor_and_held(q, qd, qdd, gravity=self.gravity)
        if effort.shape != W.shape[:2]:
            raise ValueError(f"effort has shape {effort.shape}; expected {W.shape[:2]}")
        if held is not None:
            effort = effort - held
        self.moved |= np.any(qd[:, self.layout.joints] != 0.0, axis=0)
        if self._pending is not None:  # complete the block begun in the chunk before
            need = BLOCK - len(self._pending[0])
            head = np.concatenate([self._pending[0], W[:need]]), np.concatenate([self._pending[1], effort[:need]])
            self._pending = None
            if len(head[0]) < BLOCK:
                self._pending = head
                return
            self._sum(*head)
            W, effort = W[need:], effort[need:]
        whole = len(W) // BLOCK * BLOCK
        if whole:
            self._sum(W[:whole], effort[:whole])
        self._pending = (W[whole:].copy(), effort[whole:].copy()) if whole < len(W) else None

    def finish(self):
        """Adds the last, partial block; returns self."""
        if self._pending is not None:
            self._sum(*self._pending)
            self._pending = None
        return self

    def _sum(self, W, effort):
        """Adds the samples of W (N, movable, size) and effort (N, movable): whole blocks, or the
        run's last partial one, each block's sums added in order to the totals."""
        N = len(W)
        self.count += N
        K = min(N, BLOCK)
        Wt = W.transpose(2, 1, 0)  # (size, movable, N): the regressor's own memory order
        for r, cols in enumerate(self.columns):
            Z = np.empty((len(cols) + 1, N))
            Z[:-1], Z[-1] = Wt[cols, r], effort[:, r]
            total = self._totals[r]
            for gram in block_grams(Z.reshape(len(cols) + 1, N // K, K)):
                total += gram
            self.G[r][np.ix_(cols, cols)] = total[:-1, :-1]
            self.b[r, cols] = total[:-1, -1]
            self.c[r] = total[-1, -1]

    def rss(self, theta):
        """(movable,) each joint's sum of squared residuals of effort - W theta."""
        return np.array([fl.dot(theta, fl.matvec(G, theta)) - 2 * fl.dot(theta, b) + c
                         for G, b, c in zip(self.G, self.b, self.c)])


