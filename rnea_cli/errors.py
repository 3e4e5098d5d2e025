"""One family of domain errors; the CLI turns any of them into one line on stderr and exit status 2."""


class RneaError(Exception):
    """Bad input: a message that names the file, the place in it and what is wrong."""

    def __init__(self, source, where, message):
        self.source = source
        self.where = where
        self.message = message
        super().__init__(self.__str__())

    def __str__(self):
        place = f"{self.source}:{self.where}" if self.where is not None else f"{self.source}"
        return f"{place}: {self.message}"


class URDFError(RneaError):
    """A URDF that cannot be loaded; `where` is the line number."""


class TrajectoryError(RneaError):
    """A trajectory that cannot be read; `where` names the row/column (or line)."""


class URDFWarning(UserWarning):
    """A URDF that loads but is physically doubtful (e.g. an impossible inertia)."""
