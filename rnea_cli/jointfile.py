"""Per-joint YAML files (`--limits`, `--actuators`): `joint: {key: number, ...}`, read and checked once."""

import math

from .errors import RneaError


def yaml_error(label, exc, error=RneaError):
    """A YAMLError as our one-line error, with its line and column."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
    return error(label, where, f"invalid YAML: {getattr(exc, 'problem', None) or exc}")


def number(x):
    """x as a float if it is a finite number, else None. YAML 1.1 reads 1e3 (no dot) as a string,
    so numeric strings count; booleans do not."""
    if isinstance(x, bool) or not isinstance(x, (int, float, str)):
        return None
    try:
        value = float(x)
    except (ValueError, OverflowError):
        return None
    return value if math.isfinite(value) else None


def why_not_a_number(x):
    """Why number(x) is None, for a message: 'missing', 'not finite: inf', "not a number: 'abc'"."""
    if x is None:
        return "missing"
    if not isinstance(x, bool) and isinstance(x, (int, float, str)):
        try:
            return f"not finite: {float(x)!r}"
        except OverflowError:
            return f"not finite: {x!r}"
        except ValueError:
            pass
    return f"not a number: {x!r}"


def read_joint_file(path, joint_names, keys, *, nullable=False, why_not=None):
    """{joint: {key: float (or None when nullable)}}; errors name the file and the entry.
    why_not(name): more to say about a name that is not among joint_names, or None."""
    import yaml

    try:
        with open(path, "rb") as f:
            doc = yaml.safe_load(f)
    except OSError as exc:
        raise RneaError(path, None, f"cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise yaml_error(path, exc) from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise RneaError(path, None, f"expected a mapping from joint name to {{{', '.join(keys)}}}")
    out = {}
    for joint, entry in doc.items():
        if joint not in joint_names:
            more = why_not(joint) if why_not else None
            raise RneaError(path, joint, f"no joint '{joint}' among the trajectory's joints" + (f": {more}" if more else ""))
        if not isinstance(entry, dict):
            raise RneaError(path, joint, f"expected a mapping with {', '.join(keys)}")
        for key, value in entry.items():
            if key not in keys:
                raise RneaError(path, f"{joint}.{key}", f"unknown key (expected one of {', '.join(keys)})")
            if value is None and nullable:
                continue
            if number(value) is None:
                raise RneaError(path, f"{joint}.{key}", f"not a finite number: {value!r}")
        out[joint] = {k: None if v is None else number(v) for k, v in entry.items()}
    return out
