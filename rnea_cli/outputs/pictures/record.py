"""What the pictures of a run are drawn from, collected block by block in bounded memory."""

import numpy as np

from .series import Grid, MinMax

WIDTH = 600  # stretches kept per curve: about one per pixel column of a plot


class Recorder:
    """Per joint: effort, velocity and position curves; with drives motor operating points and
    power; with measured effort, the measurement and the residual."""

    def __init__(self, run, width=WIDTH):
        self.run = run
        coords, model = run.coords, run.model
        self.time_known = run.traj.has_time
        self.effort = [MinMax(width) for _ in coords.joints]
        self.velocity = [MinMax(width) for _ in model.joints]
        self.position = [MinMax(width) for _ in model.joints]
        drives = run.pipeline.drives
        self.motor = {k: Grid(50) for k, j in enumerate(coords.joints) if j.name in drives}
        self.power = [MinMax(width) for _ in coords.joints] if drives else None
        self.measured = self.residual = None
        self.samples = 0

    def update(self, block):
        chunk = block.chunk
        t = chunk.time if chunk.time is not None else np.arange(chunk.start, chunk.start + len(chunk), dtype=float)
        q, qd, _ = block.motion
        for k, series in enumerate(self.effort):
            series.update(t, block.effort[:, k])
        for i in range(len(self.velocity)):
            self.velocity[i].update(t, qd[:, i])
            self.position[i].update(t, q[:, i])
        drives = self.run.pipeline.drives
        for k, grid in self.motor.items():
            grid.update(drives[self.run.coords.joints[k].name].gear_ratio * chunk.qd[:, k], block.motor[:, k])
        if self.power is not None:
            for k, series in enumerate(self.power):
                series.update(t, block.power[:, k])
        measured = chunk.data.get("effort")
        if measured is not None:
            if self.measured is None:
                self.measured = [MinMax(self.effort[0].width) for _ in self.effort]
                self.residual = [MinMax(self.effort[0].width) for _ in self.effort]
            for k in range(len(self.effort)):
                self.measured[k].update(t, measured[:, k])
                self.residual[k].update(t, measured[:, k] - block.effort[:, k])
        self.samples += len(chunk)
