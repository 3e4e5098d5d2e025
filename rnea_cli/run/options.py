"""The options the commands and the library share, checked once: the CLI's callbacks and the
Python API (dataframes.py) call the same functions, so that the library refuses what the CLI refuses.
Each returns the value in its plain form, or raises RneaError naming the option."""

import math
import os
from numbers import Real

from ..errors import RneaError, printable, shown


def _what(value):
    """A value for a message: its type and its text ('int 3', "str 'no'")."""
    return f"{type(value).__name__} {shown(value) if isinstance(value, (str, bytes)) else printable(repr(value), 60)}"


def _number(value, name):
    if isinstance(value, bool) or not isinstance(value, Real):
        raise RneaError(name, None, f"expected a number, got {_what(value)}")
    return float(value)


def positive(value, name):
    """A finite number above 0 (a margin, a sample period)."""
    number = _number(value, name)
    if not 0 < number < math.inf:
        raise RneaError(name, None, f"{value!r} is not a finite number above 0")
    return number


def optional_positive(value, name):
    return None if value is None else positive(value, name)


def vector3(value, name):
    """Three finite numbers (gravity, X,Y,Z)."""
    try:
        parts = [_number(x, name) for x in value] if not isinstance(value, (str, bytes)) else []
    except TypeError:
        parts = []
    if len(parts) != 3 or not all(math.isfinite(x) for x in parts):
        raise RneaError(name, None, f"{shown(value) if isinstance(value, str) else printable(repr(value), 60)} is not "
                                    "three finite numbers X,Y,Z")
    return tuple(parts)


def flag(value, name):
    """True or False (not a truthy string, whose 'no' would be True)."""
    if not isinstance(value, bool):
        raise RneaError(name, None, f"expected True or False, got {_what(value)}")
    return value


def choice(value, name, choices):
    if not isinstance(value, str) or value not in choices:
        raise RneaError(name, None, f"{shown(value)} is not one of {', '.join(choices)}")
    return value


def path(value, name):
    """A file's path: a str or os.PathLike (an int would be opened as a file descriptor)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, (str, os.PathLike))
                              or not os.fspath(value)):
        raise RneaError(name, None, f"expected a file's path, got {_what(value)}")
    return value if value is None else os.fspath(value)
