"""What a picture of a long run keeps: per curve, the smallest and largest value of each stretch
of samples (so every peak survives decimation), and operating points on a coarse grid. Memory
is bounded whatever the run's length: when the stretches outnumber 2 * width, neighbours merge."""

import numpy as np


class MinMax:
    """Min and max (with their times) of consecutive stretches of one curve."""

    def __init__(self, width=600):
        self.width, self.stretch = width, 1
        self.tmin, self.vmin, self.tmax, self.vmax = (np.empty(0) for _ in range(4))
        self.partial = None  # the samples of the last, unfinished stretch: (t, v)

    def update(self, t, v):
        t, v = np.asarray(t, dtype=float), np.asarray(v, dtype=float)
        if self.partial is not None:
            t, v = np.concatenate([self.partial[0], t]), np.concatenate([self.partial[1], v])
        whole = len(v) // self.stretch * self.stretch
        if whole:
            self._append(t[:whole], v[:whole])
        self.partial = (t[whole:], v[whole:]) if whole < len(v) else None
        while len(self.vmin) > 2 * self.width:
            self._merge()

    def _append(self, t, v):
        n = self.stretch
        vv, tt = v.reshape(-1, n), t.reshape(-1, n)
        lo, hi = vv.argmin(axis=1), vv.argmax(axis=1)
        rows = np.arange(len(vv))
        self.tmin = np.concatenate([self.tmin, tt[rows, lo]])
        self.vmin = np.concatenate([self.vmin, vv[rows, lo]])
        self.tmax = np.concatenate([self.tmax, tt[rows, hi]])
        self.vmax = np.concatenate([self.vmax, vv[rows, hi]])

    def _merge(self):
        """Stretches twice as long: each pair of neighbours becomes one."""
        if len(self.vmin) % 2:  # the odd last one waits as samples of the new stretch length
            last = (np.array([self.tmin[-1], self.tmax[-1]]), np.array([self.vmin[-1], self.vmax[-1]]))
            for name in ("tmin", "vmin", "tmax", "vmax"):
                setattr(self, name, getattr(self, name)[:-1])
        else:
            last = None
        pick_lo = self.vmin[0::2] <= self.vmin[1::2]
        pick_hi = self.vmax[0::2] >= self.vmax[1::2]
        self.tmin = np.where(pick_lo, self.tmin[0::2], self.tmin[1::2])
        self.vmin = np.where(pick_lo, self.vmin[0::2], self.vmin[1::2])
        self.tmax = np.where(pick_hi, self.tmax[0::2], self.tmax[1::2])
        self.vmax = np.where(pick_hi, self.vmax[0::2], self.vmax[1::2])
        self.stretch *= 2
        if last is not None:
            order = np.argsort(last[0], kind="stable")
            t, v = last[0][order], last[1][order]
            self.partial = (t, v) if self.partial is None else (np.concatenate([t, self.partial[0]]),
                                                                 np.concatenate([v, self.partial[1]]))

    def points(self):
        """(t, v) of a polyline through every stretch's min and max, in time order."""
        t = np.concatenate([self.tmin, self.tmax])
        v = np.concatenate([self.vmin, self.vmax])
        if self.partial is not None:
            t, v = np.concatenate([t, self.partial[0]]), np.concatenate([v, self.partial[1]])
        order = np.argsort(t, kind="stable")
        return t[order], v[order]


class Grid:
    """Operating points (x, y): one per occupied bin of a grid, and the extremes exactly."""

    def __init__(self, bins=160):
        self.bins, self.cells, self.extremes = bins, {}, {}
        self.scale = None  # (x, y) sizes the bins divide; grown by doubling, so bins only merge

    def update(self, x, y):
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        if not len(x):
            return
        for name, k in (("xmin", np.argmin(x)), ("xmax", np.argmax(x)), ("ymin", np.argmin(y)),
                        ("ymax", np.argmax(y))):
            if name not in self.extremes or _better(name, (x[k], y[k]), self.extremes[name]):
                self.extremes[name] = (float(x[k]), float(y[k]))
        needed = (max(np.abs(x).max(), 1e-12), max(np.abs(y).max(), 1e-12))
        if self.scale is None:
            self.scale = needed
        while self.scale[0] < needed[0] or self.scale[1] < needed[1]:
            self.scale = (2 * self.scale[0] if self.scale[0] < needed[0] else self.scale[0],
                          2 * self.scale[1] if self.scale[1] < needed[1] else self.scale[1])
            self._rebin()
        self._add(x, y)

    def _keys(self, x, y):
        ix = np.floor(x / self.scale[0] * self.bins).astype(np.int64)
        iy = np.floor(y / self.scale[1] * self.bins).astype(np.int64)
        return ix * (4 * self.bins + 3) + iy

    def _add(self, x, y):
        keys, first = np.unique(self._keys(x, y), return_index=True)
        for key, k in zip(keys.tolist(), first.tolist()):
            self.cells.setdefault(key, (float(x[k]), float(y[k])))

    def _rebin(self):
        old = list(self.cells.values())
        self.cells = {}
        if old:
            self._add(np.array([p[0] for p in old]), np.array([p[1] for p in old]))

    def points(self):
        pts = list(self.cells.values()) + list(self.extremes.values())
        return (np.array([p[0] for p in pts]), np.array([p[1] for p in pts])) if pts else (np.empty(0), np.empty(0))


def _better(name, new, old):
    axis = 0 if name.startswith("x") else 1
    return new[axis] < old[axis] if name.endswith("min") else new[axis] > old[axis]
