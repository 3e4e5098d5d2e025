"""The columns of the tables the commands write: names (CSV, Parquet), keys (JSON/YAML paths), values."""

import numpy as np

FORCE_MOMENT = ("fx", "fy", "fz", "tx", "ty", "tz")  # wrench columns: force first, as users read them


def force_first(W):
    """[f; n] from the library's [n; f] along the last axis."""
    return np.concatenate([W[..., 3:], W[..., :3]], axis=-1)


class Table:
    """Column names, their keys in a JSON/YAML document (e.g. ("tau", "elbow")), and a function
    Block -> (N, len(names)) column-major array."""

    def __init__(self):
        self.names, self.keys, self._parts = [], [], []

    def add(self, names, keys, get):
        self.names += names
        self.keys += keys
        self._parts.append(get)

    def values(self, block):
        parts = [p(block) for p in self._parts]
        out = np.empty((len(parts[0]), sum(p.shape[1] for p in parts)), order="F")
        k = 0
        for p in parts:
            out[:, k:k + p.shape[1]] = p
            k += p.shape[1]
        return out


def _time(table, has_time):
    if has_time:
        table.add(["time"], [("time",)], lambda b: b.chunk.time[:, None])


def torque_table(coords, traj, pipeline, power=False):
    """`rnea torques`: time, the base wrench, tau_<j>, the split, the actuator terms, power."""
    table = Table()
    _time(table, traj.has_time)
    joints = coords.joint_names
    if pipeline.floating:
        table.add([f"base_{c}" for c in FORCE_MOMENT], [("base", c) for c in FORCE_MOMENT],
                  lambda b: force_first(b.base_wrench))
    groups = [("tau", lambda b: b.tau)]
    if pipeline.split:
        parts = ("gravity", "inertia", "coriolis") + (("external",) if traj.wrenched else ())
        groups += [(f"tau_{part}", lambda b, part=part: b.split[part]) for part in parts]
    if pipeline.effort_terms:
        groups.append(("tau_friction", lambda b: b.friction))
    if pipeline.drives:
        groups += [("tau_armature", lambda b: b.armature), ("tau_motor", lambda b: b.motor)]
    if power:
        groups.append(("power", lambda b: b.power))
    for prefix, get in groups:
        table.add([f"{prefix}_{j}" for j in joints], [(prefix, j) for j in joints], get)
    with_kt = [k for k, j in enumerate(coords.joints)
               if pipeline.drives.get(j.name) is not None and pipeline.drives[j.name].torque_constant]
    if with_kt:  # motor current where the drive gives its torque constant
        table.add([f"current_{joints[k]}" for k in with_kt], [("current", joints[k]) for k in with_kt],
                  lambda b: b.current[:, with_kt])
    return table


def wrench_table(joint_names, has_time):
    """`rnea wrenches`: <joint>_fx .. <joint>_tz in each joint's frame."""
    table = Table()
    _time(table, has_time)
    table.add([f"{j}_{c}" for j in joint_names for c in FORCE_MOMENT], [(j, c) for j in joint_names
                                                                        for c in FORCE_MOMENT],
              lambda b: force_first(b.joint_wrenches).reshape(len(b.joint_wrenches), -1))
    return table
