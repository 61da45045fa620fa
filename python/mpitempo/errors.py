"""The one exception type the CLI turns into a one-line error and exit code 2."""


class MtError(Exception):
    """A user-facing error: the message names the bad value and what is allowed."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


class ExitStatus(Exception):
    """Not an error: the command finished, printed its result, and its exit status says something
    (history: 1 when a regression was found). main() returns code without printing anything."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code
