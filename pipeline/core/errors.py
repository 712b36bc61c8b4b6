"""Typed errors. The CLI prints each as one line `error: <what>. <how to fix>` and exits nonzero.
`warn` is the one way a step reports a problem it recovered from (a cache set aside, say)."""

import sys


class CacheEvalError(Exception):
    """Base for errors the CLI reports as one line with exit code 1."""

    exit_code = 1


class InputError(CacheEvalError):
    """Bad input: a file, line or record is malformed. The message names it and how to fix it."""


class UsageError(CacheEvalError):
    """A command-line option the command cannot take (an output path that is not a regular file, an
    output that is also an input): refused before any work, exit 2 like argparse's own errors."""

    exit_code = 2


class BuildError(CacheEvalError):
    """The build could not produce a valid benchmark (a check failed, a quota cell is short)."""


def warn(message: str) -> None:
    """Print a one-line warning on stderr; the work goes on."""
    print(f"warning: {message}", file=sys.stderr)
