"""Which columns mean what: the arrays a trajectory is made of, and the names they go by in a file.

A *key* is (prefix, name), e.g. ("q", "elbow"), ("qd", "base_wx"), ("fext", "tool_fx"),
("effort", "elbow"). A *group* is an array of keys read together: q, qd, qdd (one column per
joint), base_pose, base_twist, base_dtwist, 'fext:<link>', 'fext_at:<link>' and effort (measured
joint effort, for `rnea compare`). Tabular files name a key `prefix_name` (q_elbow), unless
`--columns` or a preset maps the roles to other names.
"""

import re

from ...errors import RneaError, TrajectoryError, shown

QUANTITIES = ("q", "qd", "qdd")
PREFIXES = ("qdd", "qd", "q", "fext", "effort")  # longest first: qdd_x is qdd of x even if a joint is d_x
ROLES = ("time", "q", "qd", "qdd", "effort")  # what --columns maps
# floating base: pose (position, unit quaternion x y z w), twist [w; v] in the base frame, its derivative
BASE_POSE = ("base_x", "base_y", "base_z", "base_qx", "base_qy", "base_qz", "base_qw")
BASE_TWIST = ("base_wx", "base_wy", "base_wz", "base_vx", "base_vy", "base_vz")
# external wrench on a link: [n; f], and optionally the point it acts at
WRENCH = ("tx", "ty", "tz", "fx", "fy", "fz")
POINT = ("px", "py", "pz")

# Controller logs. UR RTDE record.py: measured position and velocity (actual_*), what the robot
# did; there is no measured acceleration, so qdd is derived from actual_qd; the measured effort
# is the motor current (actual_current_*, A: `rnea compare --effort-is current`). libfranka:
# time in ms, measured q and dq; tau_J is the measured joint torque.
PRESETS = {
    "ur-rtde": ("time=timestamp,q=actual_q_{i},qd=actual_qd_{i},effort=actual_current_{i}", "s"),
    "franka": ("time=time,q=state.q[{i}],qd=state.dq[{i}],effort=state.tau_J[{i}]", "ms"),
}


class Layout:
    """The groups a trajectory for these coordinates may hold, and the keys of each."""

    def __init__(self, coords, floating=False, links=(), effort=False):
        self.groups = {qty: [(qty, name) for name in coords.joint_names] for qty in QUANTITIES}
        if floating:
            self.groups["base_pose"] = [("q", name) for name in BASE_POSE]
            self.groups["base_twist"] = [("qd", name) for name in BASE_TWIST]
            self.groups["base_dtwist"] = [("qdd", name) for name in BASE_TWIST]
        for link in links:
            self.groups[f"fext:{link}"] = [("fext", f"{link}_{c}") for c in WRENCH]
            self.groups[f"fext_at:{link}"] = [("fext", f"{link}_{c}") for c in POINT]
        if effort:
            self.groups["effort"] = [("effort", name) for name in coords.joint_names]
        owner = {}
        for group, keys in self.groups.items():
            for key in keys:
                if key in owner:  # e.g. a joint named base_x next to a floating base
                    raise TrajectoryError(coords.source, None, f"column {key[0]}_{key[1]} would belong both to "
                                                               f"{_group_name(owner[key])} and to {_group_name(group)}")
                owner[key] = group
        self.wanted = set(owner)
        self.joint_keys = {key for g in (*QUANTITIES, "effort") for key in self.groups.get(g, ())}

    def choose(self, label, present):
        """(groups to read, quantities to derive) given the keys present; errors for groups given
        in part, and for what cannot be done without."""
        chosen = []
        for group, keys in self.groups.items():
            if not keys:  # q, qd, qdd of a robot without joints (a free body)
                chosen.append(group)
                continue
            missing = [name for prefix, name in keys if (prefix, name) not in present]
            if len(missing) == len(keys) and group != "q":
                continue
            if missing:
                many = "s" if len(missing) > 1 else ""
                if group in QUANTITIES or group == "effort":
                    raise TrajectoryError(label, None, f"missing {group} for joint{many} {_names(missing)}")
                raise TrajectoryError(label, None, f"missing column{many} "
                                                   f"{_names(f'{keys[0][0]}_{m}' for m in missing)}")
            chosen.append(group)
        derived = tuple(q for q in ("qd", "qdd") if q not in chosen)
        if derived == ("qd",):
            raise TrajectoryError(label, None, "qdd is given but qd is not: give both, or neither to derive them")
        if "base_pose" in self.groups:
            if "base_pose" not in chosen:
                raise TrajectoryError(label, None, "a floating base needs the columns "
                                                   f"{', '.join(f'{p}_{n}' for p, n in self.groups['base_pose'])}")
            base = tuple(g for g in ("base_twist", "base_dtwist") if g not in chosen)
            if base == ("base_twist",):
                raise TrajectoryError(label, None, "the base twist's derivative (qdd_base_*) is given but the twist "
                                                   "(qd_base_*) is not: give both, or neither to derive them")
            derived += base
        return chosen, derived


def _names(names, most=8):
    names = [shown(n)[1:-1] for n in names]
    return ", ".join(names[:most]) + (f", ... ({len(names)} in all)" if len(names) > most else "")


def _group_name(group):
    return {"q": "a joint", "qd": "a joint", "qdd": "a joint"}.get(group, group.replace("_", " ").replace(":", " of "))


def wrenched_links(groups):
    """The links with external wrench columns among chosen groups."""
    return tuple(g.split(":", 1)[1] for g in groups if g.startswith("fext:"))


class ColumnNames:
    """Column name -> key for tabular files: `prefix_name` by default, or role templates
    (`--columns 'time=timestamp,q=actual_q_{i}'`: {i} the joint's index among the coordinates,
    {joint} its name); the base and wrench columns keep their default names. `time` is the name
    of the time column and `unit` its unit (clock.UNITS)."""

    def __init__(self, coords, layout, templates=None, time_unit=None, source="--columns"):
        self.layout, self.unit, self.time, self.source = layout, time_unit, "time", source
        self.mapped = {}  # column name -> key, from templates
        self.roles = {}
        if templates is not None:
            self.roles = parse_templates(templates, source)
            self.time = self.roles.get("time", "time")
            for role, template in self.roles.items():
                if role == "time":
                    continue
                for i, joint in enumerate(coords.joint_names):
                    self.mapped[template.replace("{i}", str(i)).replace("{joint}", joint)] = (role, joint)

    def key(self, column):
        """'time', a key, or None when the column is not one of ours. A column name is matched
        as written, then without the spaces around it."""
        for name in (column, column.strip()) if column != column.strip() else (column,):
            key = self._key(name)
            if key is not None:
                return key
        return None

    def _key(self, column):
        if column == self.time:
            return "time"
        if column in self.mapped:
            return self.mapped[column]
        for prefix in PREFIXES:
            key = (prefix, column[len(prefix) + 1:])
            if column.startswith(prefix + "_") and key in self.layout.wanted:
                # a joint's column of a templated role goes by the template's name only
                return None if prefix in self.roles and key in self.layout.joint_keys else key
        return None

    def check_found(self, label, found, columns, timed=True):
        """A template that matched no column is an error listing the file's columns; so is a time
        unit given for a file without a time column (timed: it has one)."""
        if self.unit is not None and not timed:
            raise TrajectoryError(label, None, f"--time-unit {self.unit}: the file has no time column "
                                               f"({shown(self.time)[1:-1]})")
        for role, template in self.roles.items():
            names = [self.time] if role == "time" else [n for n, key in self.mapped.items() if key[0] == role]
            if not any(n in found for n in names):
                raise TrajectoryError(label, None, f"{self.source}: {role}={shown(template)} matches no column; the "
                                                   f"file has {_names(columns, 12)}")


def parse_templates(text, source="--columns"):
    """{role: template} from 'time=timestamp,q=actual_q_{i},...'."""
    roles = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        role, sep, template = part.partition("=")
        role, template = role.strip(), template.strip()
        if not sep or role not in ROLES or not template:
            raise RneaError(source, None, f"{shown(part)} is not ROLE=TEMPLATE with ROLE one of {', '.join(ROLES)}")
        if role in roles:
            raise RneaError(source, None, f"role {role} is given twice")
        if role != "time" and "{i}" not in template and "{joint}" not in template:
            raise RneaError(source, None, f"{role}={shown(template)} names no joint: put {{i}} or {{joint}} in it")
        if re.search(r"\{(?!i\}|joint\})", template):
            raise RneaError(source, None, f"{shown(template)}: only {{i}} and {{joint}} may stand in braces")
        same = next((other for other, t in roles.items() if t == template), None)
        if same is not None:
            raise RneaError(source, None, f"{same} and {role} have the same template {shown(template)}: a column "
                                          "has one role")
        roles[role] = template
    if not roles:
        raise RneaError(source, None, "no ROLE=TEMPLATE given")
    return roles
