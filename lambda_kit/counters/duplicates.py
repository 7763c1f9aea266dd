"""Whether to read a batch's markers before writing it: a known duplicate then costs one read unit
instead of cancelling the transaction it is in.

A transaction with one duplicate marker is cancelled whole, and DynamoDB bills its prepare phase
(about one write unit per action) for nothing before the rest is resent. Reading the batch's
markers first (a strongly consistent ``BatchGetItem``: one read unit per marker, found or not)
costs a fifth of that per event at on-demand prices ($0.25 per million read units against $1.25
per million write units). So the markers are read first when a transaction is likely enough to
meet a duplicate: when ``P(cancel) * actions * 1.25 > events * 0.25``, with ``P(cancel) = 1 - (1 -
share) ** events`` and ``share`` the share of events found counted before, estimated over the
last few hundred events this counter saw. A counter that never meets duplicates never reads; one
that meets them reads, and stops again once they are gone.
"""

from __future__ import annotations

READ_TO_WRITE_PRICE = 0.25 / 1.25
"""On-demand price of a read request unit over that of a write request unit."""

HORIZON_EVENTS = 200
"""The estimate forgets an event's weight by 1/200 with each later event."""


class DuplicateShare:
    """The share of events found counted before (by the read or by a cancelled transaction)."""

    def __init__(self) -> None:
        self.value = 0.0

    def observe(self, events: int, duplicates: int) -> None:
        """``duplicates`` of ``events`` distinct events of one call were counted before."""
        if events <= 0:
            return
        weight = 1 - (1 - 1 / HORIZON_EVENTS) ** events
        self.value += (duplicates / events - self.value) * weight

    def read_first(self, events: float, actions: float) -> bool:
        """True when reading the markers of one transaction's ``events`` is expected to cost less than
        that transaction's cancellation (``actions``: its markers and counter updates)."""
        cancelled = 1 - (1 - self.value) ** events
        return cancelled * actions > READ_TO_WRITE_PRICE * events
