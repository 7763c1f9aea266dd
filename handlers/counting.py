"""Counting a batch of views: one ``increment_many`` for every view a batch's records accepted.

The counter and clickstream functions validate each record on its own (a bad one fails alone) and
return the view's increments; this commit then counts the whole batch in as few transactions as
the counter can pack (about two per 100 views), each marker stamped with its own record's trace id.
If the write fails after the counter's retries, every record of the batch fails and comes back:
their markers make the retry count only what was not counted yet. A record whose keys the counter
would refuse fails alone (returned to the record loop), never the whole batch with it.
"""

from __future__ import annotations

from typing import Any

from handlers import clients
from handlers.views import View, increments
from lambda_kit.counters import Increment, InvalidKeyError, check_key


def accepted(view: View) -> dict[str, Any]:
    """What a record's function returns for the commit (and its result log line)."""
    return {"event_id": view.event_id, "keys": [key for key, _ in increments(view)]}


def count_views(results: list[tuple[Any, dict[str, Any]]]) -> list[Any]:
    """Count the batch's views; returns the records that fail alone (keys the counter refuses)."""
    countable, refused = [], []
    for record, view in results:
        try:
            for key in view["keys"]:
                check_key(key)
        except InvalidKeyError:
            refused.append(record)
        else:
            countable.append((record, view))
    clients.counter().increment_many(
        Increment(key, view["event_id"], 1, record.trace_id)
        for record, view in countable
        for key in view["keys"]
    )
    return refused
