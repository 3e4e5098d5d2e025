"""One family of domain errors; the CLI turns any of them into one line on stderr and exit status 2."""


class RneaError(Exception):
    """Bad input: a message that names the file, the place in it and what is wrong."""

    def __init__(self, source, where, message):
        self.source = source
        self.where = where
        self.message = message
        super().__init__(self.__str__())

    def __str__(self):
        if self.where is None:
            return f"{self.source}: {self.message}"
        if isinstance(self.where, int):
            return f"{self.source}:{self.where}: {self.message}"
        return f"{self.source}: {self.where}: {self.message}"


class URDFError(RneaError):
    """A URDF that cannot be loaded; `where` is the line number ("file:12: ...")."""


class TrajectoryError(RneaError):
    """A trajectory that cannot be read; `where` names the line and column, or the entry."""


class URDFWarning(UserWarning):
    """A URDF that loads but is physically doubtful (e.g. an impossible inertia)."""
