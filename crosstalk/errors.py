"""One error type for bad user input: printed as a single line by the CLI."""


class CrosstalkError(Exception):
    """Bad input or an unmet precondition; ``str()`` is the whole message."""


class InputError(CrosstalkError):
    """Bad content in a user file: names the file and the offending field."""

    def __init__(self, path, field, problem):
        self.path, self.field, self.problem = str(path), field, problem
        where = f"{self.path}: {field}" if field else self.path
        super().__init__(f"{where}: {problem}")
