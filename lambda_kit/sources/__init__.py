"""Source adapters: one small module per event source.

Each knows how to read records out of its event (payload decoding, where the trace id lives,
the record's identity) and how to turn per-record outcomes into what that source's retry
machinery expects. Adapters never import each other.
"""

from __future__ import annotations

from typing import Any

from ..record import Record
from ..trace import is_valid_id, stable_id


def event_records(event: Any) -> list[Any] | None:
    """The event's ``Records`` list, or None when the event has none (the caller logs why)."""
    if isinstance(event, dict):
        records = event.get("Records")
        if isinstance(records, list):
            return records
    return None


def pick_trace_id(found: Any, fallback: Any) -> tuple[str, Any]:
    """(trace id, rejected value): ``found`` when it is a valid id, else the stable fallback."""
    if type(found) is str and is_valid_id(found):  # the common case first
        return found, None
    if found is None:
        return stable_id(fallback), None
    return stable_id(fallback), found


def malformed(source: str, raw: Any, why: str) -> Record:
    """A record that cannot be read at all (its payload is the raw record, for the ERROR line):
    it fails with ``why`` and reports an empty id,
    which Lambda treats as a failure of the whole batch (nothing is lost)."""
    return Record(source, "", stable_id(repr(raw)[:512]), raw, raw, why)


def reason(exc: BaseException) -> str:
    """A decoding error's message, short enough for one log field."""
    text = str(exc)
    return text if len(text) <= 200 else text[:200] + "..."


def batch_item_failures(failures: list[tuple[Record, BaseException]]) -> dict[str, Any]:
    """The partial batch response SQS, Kinesis and DynamoDB Streams event source mappings read."""
    return {"batchItemFailures": [{"itemIdentifier": record.id} for record, _ in failures]}


class BatchSource:
    """What every batch adapter shares: records read one by one, failures not stopping the batch.

    Subclasses set ``name`` and implement ``record(raw)`` and ``response(failures, skipped)``.
    """

    name = ""
    stop_at_first_failure = False
    requeueing = False

    def records(self, raw_records: list[Any]) -> list[Record]:
        return [self.record(raw) for raw in raw_records]

    def record(self, raw: Any) -> Record:
        raise NotImplementedError
