"""Per-joint YAML files (`--limits`, `--actuators`): `joint: {key: number, ...}`, read and checked once."""

from . import safeload
from ..errors import RneaError, shown


def read_joint_file(path, joint_names, keys, *, nullable=False, why_not=None, lists=(), among="the trajectory's"):
    """{joint: {key: float (or None when nullable)}}; errors name the file and the entry.
    why_not(name): more to say about a name that is not among joint_names, or None. The keys in
    `lists` take a list as it is (checked by the caller)."""
    try:
        stream = open(path, "rb")
    except OSError as exc:
        raise RneaError(path, None, f"cannot read: {exc.strerror}") from None
    doc = safeload.load(safeload.read_text(stream, path), path, "yaml")
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise RneaError(path, None, f"expected a mapping from joint name to {{{', '.join(keys)}}}")
    out = {}
    for joint, entry in doc.items():
        if joint not in joint_names:
            more = why_not(joint) if why_not else None
            raise RneaError(path, str(joint), f"no joint {shown(joint)} among {among} joints"
                                              + (f": {more}" if more else ""))
        if not isinstance(entry, dict):
            raise RneaError(path, joint, f"expected a mapping with {', '.join(keys)}")
        for key, value in entry.items():
            if key not in keys:
                raise RneaError(path, f"{joint}.{key}", f"unknown key (expected one of {', '.join(keys)})")
            if (value is None and nullable) or key in lists:
                continue
            if safeload.number(value) is None:
                raise RneaError(path, f"{joint}.{key}", safeload.why_not_a_number(value))
        out[joint] = {k: v if k in lists else None if v is None else safeload.number(v) for k, v in entry.items()}
    return out
