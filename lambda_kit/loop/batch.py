"""One invocation of a batch decorator.

The adapter that recognizes the event reads its records (an event no adapter recognizes is
refused: raised, never acknowledged), the record path runs them (``RecordPath``: one record at a
time here for a plain function; ``lambda_kit.loop.concurrent`` for an ``async def``), and the
adapter shapes the response its source's retry machinery expects. The loop never names a source:
what a failure means comes from the adapter (``stop_at_first_failure``, ``requeueing``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from .. import log, metrics
from ..errors import UnsupportedEvent
from ..record import Outcome, Record
from ..sources import describe
from ..sources.base import Source
from .options import Options
from .path import RecordPath, run_now

Drive = Callable[[list[Record], Callable[[Any, Any], Any], Any, Options, Any], Outcome]


def run_plain(
    records: list[Record], function: Callable[[Any, Any], Any], context: Any, options: Options, adapter: Any
) -> Outcome:
    """A plain function's records, one at a time, in batch order."""
    path = RecordPath(function, context, options, adapter, len(records))
    for index, record in enumerate(records):
        if index > path.stop_at:
            path.skipped.append(index)
            continue
        run_now(path.run_record(record, index))
    return run_now(path.finish(records))


def run_batch(
    adapters: Sequence[Source],
    function: Callable[[Any, Any], Any],
    options: Options,
    drive: Drive,
    event: Any,
    context: Any,
) -> Any:
    """One invocation: recognize, read, run (``drive``), respond; count it in the metrics."""
    token, function_name = log.enter_invocation(context)
    adapter: Source | None = None
    outcome = Outcome()
    try:
        adapter = recognize(options, adapters, event)
        with adapter.scope(event):
            outcome = drive(adapter.records(event), function, context, options, adapter)
            return adapter.response(event, outcome)
    finally:
        backends = metrics.enabled(options.metrics)
        if adapter is not None and backends:
            metrics.count(function_name, adapter.name, metrics.batch_counts(outcome), backends)
        metrics.flush()
        log.flush()
        log.leave_invocation(token)


def recognize(options: Options, adapters: Sequence[Any], event: Any) -> Any:
    """The adapter of ``adapters`` that recognizes ``event``; any other event is refused."""
    for adapter in adapters:
        if adapter.recognizes(event):
            return adapter
    refuse(options, adapters, event)


def refuse(options: Options, adapters: Sequence[Any], event: Any) -> NoReturn:
    """Log one ERROR line saying what the event looks like (its shape, never its values) and which
    decorator fits, then raise ``UnsupportedEvent``: Lambda retries the event and its DLQ or
    on-failure destination keeps it."""
    decorator = options.decorator
    found, fits = describe(event)
    expected = " or ".join(dict.fromkeys(adapter.label for adapter in adapters))
    error = UnsupportedEvent(decorator, expected, found, fits)  # fits is another decorator, or None
    log.emit(
        "ERROR",
        "event not processed: unsupported event",
        fields={
            "decorator": decorator,
            "error_type": "UnsupportedEvent",
            "error": log.clean(str(error)),
            "event_shape": log.clean(log.outline(event)),
        },
    )
    backends = metrics.enabled(options.metrics)
    if backends:
        metrics.count(
            log.current_function_name(), "unsupported", metrics.Counts(failed=1, refused=1), backends
        )
    raise error
