"""The record loop: the per-record scope shared by every batch source.

``run_batch`` is one invocation of a batch decorator: the adapter that recognizes the event reads
its records (an event no adapter recognizes is refused: raised, never acknowledged), the loop runs
them, and the adapter shapes the response. For each record the loop sets the trace scope, logs
arrival, calls the function, logs the result or exactly one ERROR line, and counts the outcome.
It never names a source: what a failure means (stop the batch, requeue, report) comes from the
adapter's ``stop_at_first_failure`` and ``requeueing``.

``record_loop`` runs a plain function's records one at a time; ``lambda_kit.loop.concurrent`` runs an
``async def``'s, several at once, with the same ``RecordSteps``. Each loop has one per-record
scope (``record_loop``'s body, ``ConcurrentBatch.one``): what happens around every record goes in
both.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from time import perf_counter
from typing import TYPE_CHECKING, Any, NoReturn

from .. import log, metrics
from ..record import Outcome, Record
from ..sources.base import Source
from ..trace import reset_current_record, set_current_record

if TYPE_CHECKING:
    from ..validation import Validator


class UndecodableRecord(ValueError):
    """A record whose payload could not be read; it fails without reaching the function."""


class CommitFailed(RuntimeError):
    """The batch's ``commit`` reported this record as failed."""


class GroupHeldBack(RuntimeError):
    """Not processed: an earlier record of its ordering group (FIFO message group) failed."""


class Options:
    """What every decorator takes: payload decoding, what to log, Powertools logger, metrics,
    the batch commit, the payload model (``validate``: its ``Validator``) and how many records an
    ``async def`` may run at once."""

    __slots__ = ("log_event", "log_result", "logger", "metrics", "commit", "validate", "max_concurrency")

    def __init__(
        self,
        json: bool = True,
        log_event: bool = True,
        log_result: bool = True,
        logger: Any = None,
        metrics: bool | None = None,
        commit: Callable[[list[tuple[Record, Any]]], Any] | None = None,
        model: Any = None,
        max_concurrency: int = 1,
    ) -> None:
        self.log_event = log_event
        self.log_result = log_result
        self.logger = logger
        self.metrics = metrics
        self.commit = commit
        self.validate: Validator | None = None
        if model is not None:  # validation (and its extras) is imported only for a model (cold start)
            from ..validation import Validator

            self.validate = Validator(model, from_json=not json)
        self.max_concurrency = max_concurrency


if TYPE_CHECKING:
    Loop = Callable[[list[Record], Callable[[Any, Any], Any], Any, Options, Any], Outcome]


# --- one invocation -------------------------------------------------------------------------------

def run_batch(
    decorator: str,
    adapters: Sequence[Source],
    fn: Callable[[Any, Any], Any],
    options: Options,
    event: Any,
    context: Any,
    loop: Loop | None = None,
) -> Any:
    """``loop`` runs the records: ``record_loop`` (default) or ``async_loop.record_loop``."""
    token, function_name = log.enter_invocation(context)
    adapter: Source | None = None
    outcome = Outcome()
    try:
        adapter = recognize(decorator, adapters, event, options)
        with adapter.scope(event):
            outcome = (loop or record_loop)(adapter.records(event), fn, context, options, adapter)
            return adapter.response(event, outcome)
    finally:
        if adapter is not None and metrics.enabled(options.metrics):
            metrics.count(function_name, adapter.name, outcome.processed, len(outcome.failures), outcome.retried)
        log.flush()
        log.leave_invocation(token)


def recognize(decorator: str, adapters: Sequence[Any], event: Any, options: Options) -> Any:
    """The adapter of ``adapters`` that recognizes ``event``; any other event is refused."""
    for adapter in adapters:
        if adapter.recognizes(event):
            return adapter
    refuse(decorator, adapters, event, options)


def refuse(decorator: str, adapters: Sequence[Any], event: Any, options: Options) -> NoReturn:
    """Log one ERROR line saying what the event looks like and which decorator fits, then raise
    ``UnsupportedEvent``: Lambda retries the event and its DLQ / on-failure destination keeps it."""
    from ..errors import UnsupportedEvent  # errors are loaded when one is raised (cold start)
    from ..sources import describe  # only on this path: it loads every adapter to name the event

    found, fits = describe(event)
    expected = " or ".join(dict.fromkeys(adapter.label for adapter in adapters))
    error = UnsupportedEvent(decorator, expected, found, fits if fits != decorator else None)
    log.emit("ERROR", "event not processed: unsupported event", None, {
        "decorator": decorator, "error_type": "UnsupportedEvent", "error": str(error), "event": log.clean(event),
    })
    if metrics.enabled(options.metrics):
        metrics.count(log.current_function_name(), "unsupported", 0, 1, 0)
    raise error


# --- the record loop --------------------------------------------------------------------------------

def record_spans() -> Any:
    """``otel.record_spans()``, the invocation's span maker: None unless OpenTelemetry is
    configured. ``lambda_kit.trace.otel`` is loaded only in a process that loaded OpenTelemetry's API
    (cold start)."""
    if "opentelemetry.trace" not in sys.modules:
        return None
    from ..trace.otel import record_spans as spans_of_this_invocation

    return spans_of_this_invocation()


def record_loop(records: list[Record], fn: Callable[[Any, Any], Any], context: Any, options: Options, adapter: Any) -> Outcome:
    steps = RecordSteps(fn, context, options, adapter)
    outcome = steps.outcome
    powertools = options.logger
    stop = adapter.stop_at_first_failure
    spans = record_spans()  # None unless OpenTelemetry is configured
    for index, record in enumerate(records):
        token = set_current_record(record)
        span = error = None
        try:
            if steps.failed_groups and record.group in steps.failed_groups:
                steps.hold_back(record)
                continue
            if record.rejected_trace_id is not None:
                warn_rejected_trace_id(record)
            if powertools is not None:
                set_powertools_correlation(powertools, record.trace_id)
            if record.attempt:
                outcome.retried += 1
            started = perf_counter()
            if spans is not None:
                span = spans.start(record, len(records))
            error = steps.run(record, started)
            if error is not None and steps.fail(record, error, started) and stop:
                steps.stopped(record, records[index + 1:])
                break
        finally:
            if span is not None:
                spans.end(span, error)
            reset_current_record(token)
    if steps.pending:
        steps.commit()
    return outcome


class RecordSteps:
    """The steps the loops take for each record, with what they share over one batch."""

    __slots__ = ("fn", "context", "adapter", "outcome", "log_event", "log_result", "commit_batch", "pending", "failed_groups")

    def __init__(self, fn: Callable[[Any, Any], Any], context: Any, options: Options, adapter: Any) -> None:
        self.fn = fn if options.validate is None else typed(fn, adapter, options.validate)
        self.context = context
        self.adapter = adapter
        self.outcome = Outcome()
        info = log.enabled(20)
        self.log_event = options.log_event and info
        self.log_result = options.log_result and info
        self.commit_batch = options.commit
        self.pending: list[tuple[Record, Any, float]] = []
        self.failed_groups: set[str] = set()

    def run(self, record: Record, started: float) -> BaseException | None:
        """Call the function with the record's payload; the error it failed with, or None. An
        awaitable it returns (a plain def handing back a coroutine) is run to its end.

        The hot path of a plain function: ``accepted`` written out."""
        if record.error is not None:
            return UndecodableRecord(record.error)
        if self.log_event:
            log.record_received(record)
        try:
            result = self.fn(record.payload, self.context)
            if result is not None and hasattr(result, "__await__"):
                from .event_loop import awaited  # asyncio only for functions that need it

                result = awaited(result)
        except Exception as exc:
            return exc
        if self.commit_batch is not None:
            self.pending.append((record, result, started))
            return None
        self.outcome.processed += 1
        if self.log_result:
            log.record_processed(record, result, round((perf_counter() - started) * 1000, 3))
        return None

    async def run_async(self, record: Record, started: float) -> BaseException | None:
        """``run`` for an ``async def``: its coroutine awaited on the running loop (same steps)."""
        if record.error is not None:
            return UndecodableRecord(record.error)
        if self.log_event:
            log.record_received(record)
        try:
            result = self.fn(record.payload, self.context)
            if result is not None and hasattr(result, "__await__"):
                result = await result
        except Exception as exc:
            return exc
        return self.accepted(record, result, started)

    def accepted(self, record: Record, result: Any, started: float) -> None:
        """The function returned: the record waits for the commit, or is processed."""
        if self.commit_batch is not None:
            self.pending.append((record, result, started))
            return None
        self.outcome.processed += 1
        if self.log_result:
            log.record_processed(record, result, round((perf_counter() - started) * 1000, 3))
        return None

    def fail(self, record: Record, error: BaseException, started: float) -> bool:
        """Route a failed record and write its one ERROR line; True when it counts as a failure
        of this batch (False when the adapter requeued or dead-lettered it instead)."""
        routed = "failed"
        routing_error = None
        if self.adapter.requeueing and record.id:
            try:
                routed = self.adapter.requeue(record, error)
            except Exception as exc:  # reported as a batch failure, on the same line
                routing_error = f"{type(exc).__name__}: {log.safe_str(exc)}"
        fields = {
            "source": record.source,
            "record_id": record.id,
            "outcome": routed,
            "attempt": record.attempt + 1,
            "duration_ms": round((perf_counter() - started) * 1000, 3),
            **log.error_fields(error),
        }
        if routing_error is not None:
            fields["requeue_error"] = log.clean(routing_error)
        from ..errors import InvalidPayload  # only for a failed record (cold start)

        message = "record failed"
        if record.error is not None:
            message = "record could not be decoded"
            fields["payload"] = log.clean(record.payload)  # the raw part the adapter could not decode
            del fields["traceback"]
        elif type(error) is InvalidPayload:
            message = "record failed validation"
            fields["invalid"] = error.problems  # fields and problems only: never a value
            del fields["traceback"]
        log.emit("ERROR", message, record.trace_id, fields)
        if routed != "failed":
            return False
        self.outcome.failures.append((record, error))
        if record.group is not None:
            self.failed_groups.add(record.group)
        return True

    def hold_back(self, record: Record) -> None:
        """An earlier record of this record's ordering group failed: fail it unprocessed."""
        held = GroupHeldBack(f"an earlier message of group {record.group!r} failed in this batch")
        self.outcome.failures.append((record, held))
        log.emit("WARNING", "not processed: an earlier record of its group failed; it is retried in order",
                 record.trace_id, {"source": record.source, "record_id": record.id, "group": log.clean(record.group)})

    def stopped(self, record: Record, skipped: list[Record]) -> None:
        """The adapter keeps order: after ``record`` failed, ``skipped`` are not processed this time."""
        self.outcome.skipped = skipped
        if skipped:
            log.emit("WARNING", "stopped the batch at the failed record; Lambda retries from it, in order", record.trace_id,
                     {"source": record.source, "record_id": record.id, "not_processed": len(skipped)})

    def commit(self) -> None:
        """Run the batch's commit over every record the function accepted (an awaitable it returns
        is run to its end), then log each outcome (``settle``)."""
        assert self.commit_batch is not None
        reported: Any = None
        error: BaseException | None = None
        try:
            reported = self.commit_batch(self.committed())
            if reported is not None and hasattr(reported, "__await__"):
                from .event_loop import awaited

                reported = awaited(reported)
        except Exception as exc:
            error = exc
        self.settle(reported, error)

    def committed(self) -> list[tuple[Record, Any]]:
        """What the commit is given: ``(record, returned value)`` of each accepted record."""
        return [(record, result) for record, result, _ in self.pending]

    def settle(self, reported: Any, error: BaseException | None) -> None:
        """Log each accepted record's outcome after the commit: a commit that raised fails all of
        them (their source retries them); one that returned records (or record ids) fails just those."""
        failed_ids: set[Any] | None = None
        if error is None and reported:
            try:
                failed_ids = {getattr(item, "id", item) for item in reported}
            except Exception as exc:  # not a collection of records: nothing can be trusted as done
                error = exc
        for record, result, started in self.pending:
            token = set_current_record(record)
            try:
                duration_ms = round((perf_counter() - started) * 1000, 3)
                if error is None and (failed_ids is None or record.id not in failed_ids):
                    self.outcome.processed += 1
                    if self.log_result:
                        log.record_processed(record, result, duration_ms)
                    continue
                record_error = error or CommitFailed("the batch commit reported this record as failed")
                fields = {"source": record.source, "record_id": record.id, "outcome": "failed", "duration_ms": duration_ms,
                          "attempt": record.attempt + 1, **log.error_fields(record_error)}
                log.emit("ERROR", "record failed at commit", record.trace_id, fields)
                self.outcome.failures.append((record, record_error))
            finally:
                reset_current_record(token)


def typed(fn: Callable[[Any, Any], Any], adapter: Any, validate: Validator) -> Callable[[Any, Any], Any]:
    """``fn`` called with the record's payload validated (``model=``): the adapter says which part
    of the payload the model describes and what the function receives (``Source.typed``)."""
    part = adapter.typed

    def call(payload: Any, context: Any) -> Any:
        return fn(part(payload, validate), context)

    return call


# --- shared with the API's request scope ---------------------------------------------------------------

def set_powertools_correlation(logger: Any, trace_id: str) -> None:
    logger.set_correlation_id(trace_id)
    logger.append_keys(trace_id=trace_id)


def warn_rejected_trace_id(record: Record) -> None:
    log.emit(
        "WARNING",
        "ignored an invalid trace id; using the fallback id",
        record.trace_id,
        {"source": record.source, "rejected_trace_id": ascii(record.rejected_trace_id)[:256]},
    )
