"""The normal equations of the efforts, summed chunk by chunk, exactly and in the same bits on every
CPU however the run is cut (fixed_linalg.block_grams)."""

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ....dynamics import engine
from .. import fixed_linalg as fl
from ..fixed_linalg import BLOCK, Scratch, block_grams

MIN_SPEED = 0.01  # rad/s, m/s: a joint's samples slower than this are left out of its equation (min_speed)
SHARE = 0.01  # of a joint's velocity limit: its slowest sample fitted, where that is below min_speed
IN_FLIGHT = 2  # steps summed in the summing thread, or waiting to be, while the caller makes the next
STEP = 8 * BLOCK  # samples whose regressor is made at once (arm7: its arrays 3 x 19 MB, friction rows 3 x 1.3 MB, pieces 12 MB)


class NormalEquations:
    """Per joint j the normal equations of the base regressor, W_b beta = effort, summed chunk by
    chunk: G[j] = sum W_bj^T W_bj, b[j] = sum W_bj^T effort_j, c[j] = sum effort_j², with W_bj
    joint j's row of W_b = W[..., base.independent] (W theta = W_b beta(theta) for every theta);
    G, b and c hold the sums once `finish` has returned.

    Samples are summed in blocks of `fixed_linalg.BLOCK` by their index in the whole run, each
    block's sums within about an ulp of exact and the same bits on every CPU (`block_grams`), the
    blocks added in order: the same bits however the run is cut into chunks, on whatever CPU. A row
    of W_b is zero outside the columns of the bodies the joint carries and its own friction: only
    those are made and multiplied.

    min_speed: with Coulomb terms in the layout, a joint's rows where |qd| is below its `slowest`
    (min_speed; by default MIN_SPEED, or SHARE of the joint's velocity limit where that is lower: a
    gripper's finger) are left out of its sums (zeroed in place: the blocks stay those of the sample index): there
    sign(qd) is no model of the friction (sticking, a sign read wrong near a reversal). `rows`
    counts each joint's rows summed, `count` the samples."""

    def __init__(self, base, gravity=engine.GRAVITY, *, min_speed=None, threads=1):
        self.base, self.layout, self.gravity = base, base.layout, np.asarray(gravity, dtype=float)
        if min_speed is not None and not (0.0 <= min_speed < math.inf):
            raise ValueError(f"min_speed {min_speed!r} is not a speed >= 0")
        limits = [self.layout.model.joints[i].limits.velocity for i in self.layout.leaders]
        slowest = [min(MIN_SPEED, SHARE * v) if v else MIN_SPEED for v in limits] if min_speed is None else (
            [float(min_speed)] * len(limits))
        self.slowest = np.array(slowest) if "coulomb" in self.layout.terms else np.zeros(len(limits))
        # threads > 1: the sums of a step run in one thread beside the caller's, which makes the next
        # step's regressor meanwhile (one thread: the blocks are added in order, the same bits)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="rnea-sums") if threads > 1 else None
        self._summing = []  # the steps being summed there, oldest first (at most IN_FLIGHT)
        independent = base.independent
        # per joint the columns of W its row has in W_b, and where they are in beta
        self.columns = [np.intersect1d(cols, independent) for cols in self.layout.row_columns]
        self._at = [np.searchsorted(independent, cols) for cols in self.columns]
        n, rank = len(self.layout.leaders), base.rank
        self.G, self.b, self.c = np.zeros((n, rank, rank)), np.zeros((n, rank)), np.zeros(n)
        # per joint [[G, b], [b^T, c]] over its own columns: what the blocks are added to
        self._totals = [np.zeros((len(cols) + 1, len(cols) + 1)) for cols in self.columns]
        self.count = 0
        self.rows = np.zeros(n, dtype=np.int64)  # each joint's rows summed
        self.moved = np.zeros(n, dtype=bool)  # each joint's qd was not 0 (and at least its slowest) somewhere
        self._pending = None  # (q, qd, qdd, effort) of samples not yet a whole block
        # the regressor and each joint's rows of the steps summed and the one made, taken in turns,
        # and the pieces of one joint's step (`block_grams`, in the summing thread)
        made = self.layout.compressed(self.columns)  # the regressor's columns (None: all)
        self._width = 10 * self.layout.model.n if made is None else len(made)
        self._Y = self._Z = [None] * (IN_FLIGHT + 1)
        self._scratch = None

    def add(self, q, qd, qdd, effort):
        """One chunk of samples: (N, n) q, qd, qdd of every model joint, (N, rows) effort (a row
        per `Layout.equations`: each movable joint, or a mimic leader with its followers). The
        effort of what the layout holds at the URDF's values is taken off it: the equations are
        those of the parameters identified. Whole blocks are summed; the samples of a block not
        yet whole wait for the next chunk (their regressor is made then: each sample's bits are
        its own)."""
        chunk = [np.asarray(x, dtype=float) for x in (q, qd, qdd, effort)]
        if chunk[3].shape != (len(chunk[0]), len(self.layout.leaders)):
            raise ValueError(f"effort has shape {chunk[3].shape}; expected {(len(chunk[0]), len(self.layout.leaders))}")
        if self._pending is not None:
            chunk = [np.concatenate([p, x]) for p, x in zip(self._pending, chunk)]
            self._pending = None
        whole = len(chunk[0]) // BLOCK * BLOCK
        for start in range(0, whole, STEP):  # the regressor a STEP at a time: bounded memory
            self._sum(*(x[start:min(start + STEP, whole)] for x in chunk))
        if whole < len(chunk[0]):
            self._pending = [x[whole:].copy() for x in chunk]

    def finish(self):
        """Adds the last, partial block, waits for the sums; returns self."""
        if self._pending is not None:
            self._sum(*self._pending)
            self._pending = None
        if self._pool is not None:
            self._wait()
            self._pool.shutdown()
            self._pool = None
        self._Y = self._Z = [None] * (IN_FLIGHT + 1)
        self._scratch = None
        self._publish()
        return self

    def close(self):
        """Stops the summing thread without waiting for what it has left (a run given up on an
        error); the sums are then incomplete."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def _wait(self, left=0):
        """Waits until at most `left` steps are being summed."""
        while len(self._summing) > left:
            self._summing.pop(0).result()

    def _sum(self, q, qd, qdd, effort):
        """Adds the samples (whole blocks, or the run's last partial one), each block's sums added
        in order to the totals."""
        N, n = len(q), self.layout.model.n
        if self._Y[0] is None:  # the regressor's arrays, made again step after step (their zero blocks stay 0)
            self._Y = [np.zeros((n, self._width, STEP)) for _ in self._Y]
            inertial = self.layout.inertial  # each joint's friction rows and its effort's
            self._Z = [[np.empty((int(np.sum(cols >= inertial)) + 1, STEP)) for cols in self.columns] for _ in self._Z]
        for arrays in (self._Y, self._Z):  # the arrays of the step summed longest ago: done with (see _wait)
            arrays.append(arrays.pop(0))
        # each joint's inertial rows (a view of the regressor where they can be), its friction's, the effort's
        rows, held = self.layout.parts(q, qd, qdd, self.columns, gravity=self.gravity, extra=1, buffer=self._Y[-1],
                                       out=self._Z[-1])
        if held is not None:
            effort = effort - held
        for r, parts in enumerate(rows):
            parts[-1][-1] = effort[:, r]  # the row left for it (`parts`' extra)
        speed = np.abs(qd[:, self.layout.leaders])  # a mimic follower's is its leader's times its multiplier
        kept = speed >= self.slowest
        self.moved |= np.any(kept & (speed != 0.0), axis=0)
        self.count += N
        self.rows += np.sum(kept, axis=0)
        if self._pool is None:
            self._grams(rows, kept)
            return
        self._wait(IN_FLIGHT - 1)  # at most IN_FLIGHT steps summed while the next one's regressor is made
        self._summing.append(self._pool.submit(self._grams, rows, kept))

    def _grams(self, rows, kept):
        """Each joint's block sums of its rows of W_b and effort (rows: per joint a list of
        (rows, N) arrays, their rows in turn, the effort last; the samples kept), added in order
        to its totals."""
        N = len(kept)
        K = min(N, BLOCK)
        if self._scratch is None:
            self._scratch = Scratch(max(sum(len(Z) for Z in parts) for parts in rows), STEP // BLOCK)
        for r, parts in enumerate(rows):
            dropped = np.flatnonzero(~kept[:, r])  # (few, as a rule: the columns themselves, not a mask)
            for Z in parts:
                if len(dropped):
                    Z[:, dropped] = 0.0  # (a view of the regressor's array: joint r's own row of it)
            grams = block_grams([Z.reshape(len(Z), N // K, K) for Z in parts], self._scratch)
            # the total, then each block's sums added to it in order: accumulate's running sum, in one call
            running = np.concatenate([self._totals[r][None], grams])
            self._totals[r] = np.add.accumulate(running, axis=0, out=running)[-1]

    def _publish(self):
        """G, b and c from the totals (when the sums are done)."""
        for r, (total, at) in enumerate(zip(self._totals, self._at)):
            self.G[r][np.ix_(at, at)] = total[:-1, :-1]
            self.b[r, at] = total[:-1, -1]
            self.c[r] = total[-1, -1]

    def rss(self, theta):
        """(rows,) each row's sum of squared residuals of effort - W theta (= W_b beta(theta))."""
        beta = self.base.beta(theta)
        return np.array([fl.dot(beta, fl.matvec(G, beta)) - 2 * fl.dot(beta, b) + c
                         for G, b, c in zip(self.G, self.b, self.c)])
