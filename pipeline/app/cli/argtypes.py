"""Option types of the `cacheeval` commands: a number checked for its range, refused by argparse in
one line (`expected ..., got '...'`) and exit 2, before any work."""
from __future__ import annotations

import argparse
import math
from typing import Callable


def checked(convert: Callable[[str], float], ok: Callable[[float], bool], kind: str, expected: str):
    """An argparse type: `convert` the text (else "expected <kind>"), then `ok` (else "expected <expected>")."""
    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {kind}, got {text!r}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value
    return parse


FRACTION = checked(float, lambda v: 0.0 <= v <= 1.0, "a number from 0 to 1", "a number from 0 to 1")
SECONDS = checked(float, lambda v: 0 < v and math.isfinite(v), "a number of seconds above 0",
                  "a number of seconds above 0")
POSITIVE = checked(int, lambda v: v >= 1, "a whole number", "a whole number >= 1")
NATURAL = checked(int, lambda v: v >= 0, "a whole number", "a whole number >= 0")
