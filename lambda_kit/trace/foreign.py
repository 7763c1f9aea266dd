"""What a producer sent, digested without trusting it: ``repr`` cut to a length, that never walks
deeper than a few levels, never reads past the length asked for, and never raises.

A trace id, an event id or a whole raw record comes from outside: a list nested 5,000 levels deep,
or an integer of 10,000 digits, makes ``repr`` raise (``RecursionError``, ``ValueError``). Shown here,
such a value costs at most ``limit`` characters of work, and ordinary data (strings, numbers,
booleans, None, bytes, and lists, tuples and dicts of them, less than ``MAX_DEPTH`` deep) is shown
exactly as ``repr(value)[:limit]``, so ids derived from it (``stable_id``) do not change. A value
shown on a log line is ``log.brief``'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

MAX_DEPTH = 32
"""Containers nested deeper are shown as ``...``."""

MAX_INT_BITS = 14_000
"""Integers beyond (about 4,200 digits: Python refuses to write more than 4,300) are shown by size."""

_SCALARS = frozenset((str, float, bool, type(None), bytes))


def bounded_repr(value: object, limit: int) -> str:
    """``repr(value)[:limit]``, produced piece by piece up to ``limit`` characters: containers
    deeper than ``MAX_DEPTH`` show as ``...``, other types than data as ``<type name>``."""
    pieces: list[str] = []
    size = 0
    for piece in _pieces(value, 0):
        pieces.append(piece)
        size += len(piece)
        if size >= limit:
            break
    return "".join(pieces)[:limit]


def _pieces(value: object, depth: int) -> Iterator[str]:
    kind = type(value)
    if kind in _SCALARS:
        yield repr(value)
    elif kind is int:
        yield repr(value) if value.bit_length() <= MAX_INT_BITS else f"<int of {value.bit_length()} bits>"
    elif kind not in _CONTAINERS:
        yield f"<{kind.__name__}>"
    elif depth >= MAX_DEPTH:
        yield "..."
    else:
        yield from _CONTAINERS[kind](value, depth + 1)


def _items(items: object, depth: int, opening: str, closing: str) -> Iterator[str]:
    yield opening
    for index, item in enumerate(items):
        if index:
            yield ", "
        yield from _pieces(item, depth)
    yield closing


def _pairs(mapping: dict[Any, Any], depth: int) -> Iterator[str]:
    yield "{"
    for index, (key, item) in enumerate(mapping.items()):
        if index:
            yield ", "
        yield from _pieces(key, depth)
        yield ": "
        yield from _pieces(item, depth)
    yield "}"


_CONTAINERS = {
    list: lambda value, depth: _items(value, depth, "[", "]"),
    tuple: lambda value, depth: _items(value, depth, "(", ",)" if len(value) == 1 else ")"),
    dict: _pairs,
}
