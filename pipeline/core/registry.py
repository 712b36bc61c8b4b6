"""A name → object registry whose unknown-name error lists what is available (lm-eval style)."""
from __future__ import annotations

import difflib
from typing import Generic, Iterator, TypeVar

T = TypeVar("T")


class UnknownNameError(KeyError):
    """An unknown registry name; the message suggests close matches and lists every name."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want the plain sentence
        return str(self.args[0])


class Registry(Generic[T]):
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str, item: T) -> T:
        if name in self._items and self._items[name] is not item:
            raise ValueError(f"{self.kind} '{name}' is registered twice")
        self._items[name] = item
        return item

    def __getitem__(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            close = difflib.get_close_matches(name, list(self._items), n=3)
            hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise UnknownNameError(
                f"Unknown {self.kind} '{name}'.{hint} Available: {', '.join(sorted(self._items)) or '(none)'}"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))

    def names(self) -> list[str]:
        return sorted(self._items)
