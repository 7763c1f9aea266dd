"""Packing increments into transactions: up to 100 actions, one counter update per item."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

MAX_ACTIONS = 100
"""Actions ``TransactWriteItems`` takes in one request."""


class Countable(Protocol):
    @property
    def key(self) -> str: ...
    @property
    def shard(self) -> int: ...
    @property
    def amount(self) -> int: ...


E = TypeVar("E", bound=Countable)


@dataclass(slots=True)
class CounterGroup(Generic[E]):
    """The events of one transaction that change one counter item: one marker each plus one update."""

    key: str
    shard: int
    events: list[E]

    @property
    def amount(self) -> int:
        return sum(event.amount for event in self.events)


def pack_transaction(
    pending: Sequence[E], max_actions: int = MAX_ACTIONS
) -> tuple[list[CounterGroup[E]], list[E]]:
    """Take the next transaction's worth of events from ``pending``: ``(groups, rest)``.

    Events are grouped by counter item so each item gets one update carrying the summed amount
    (never two actions on one item); a group is split only where the transaction is full.
    """
    by_item: dict[tuple[str, int], list[E]] = {}
    for event in pending:
        by_item.setdefault((event.key, event.shard), []).append(event)
    taken: list[CounterGroup[E]] = []
    rest: list[E] = []
    used = 0
    for (key, shard), events in by_item.items():
        room = max_actions - used - 1  # one action is the counter update
        if room < 1:
            rest.extend(events)
            continue
        taken.append(CounterGroup(key, shard, events[:room]))
        used += min(room, len(events)) + 1
        rest.extend(events[room:])
    return taken, rest
