"""One family of domain errors; the CLI turns any of them into one line on stderr and exit status 2.

Messages are one line of printable text whatever the input held: control characters (a form
feed, a terminal escape sequence from a CSV cell) are escaped, and quoted values are cut short.
"""

import re

SHOWN = 60  # characters of an input value quoted in a message
LINE = 1000  # characters of a whole message
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text, limit=LINE):
    """text on one line: control and bidi characters as escapes (\\x1b, \\n), cut to `limit` characters."""
    text = _CONTROL.sub(lambda m: repr(m.group())[1:-1], str(text))
    return text if len(text) <= limit else text[:limit - 15] + f"... ({len(text):,} characters)"


def shown(value, limit=SHOWN):
    """An input value for a message: printable, quoted, and at most about `limit` characters."""
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    text = printable(text, 10 * limit)
    return f"'{text}'" if len(text) <= limit else f"'{text[:limit]}...' ({len(text):,} characters)"


class RneaError(Exception):
    """Bad input: a message that names the file, the place in it and what is wrong."""

    def __init__(self, source, where, message):
        self.source = source
        self.where = where
        self.message = message
        super().__init__(self.__str__())

    def __str__(self):
        source = printable(self.source, 300)
        if self.where is None:
            text = f"{source}: {self.message}"
        elif isinstance(self.where, int):
            text = f"{source}:{self.where}: {self.message}"
        else:
            text = f"{source}: {printable(self.where, 200)}: {self.message}"
        return printable(text)


class URDFError(RneaError):
    """A URDF that cannot be loaded; `where` is the line number ("file:12: ...")."""


class TrajectoryError(RneaError):
    """A trajectory that cannot be read; `where` names the line and column, or the entry."""


class URDFWarning(UserWarning):
    """A URDF that loads but is physically doubtful (e.g. an impossible inertia)."""
