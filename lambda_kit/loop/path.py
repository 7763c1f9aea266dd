"""The one per-record path: the steps every record takes, whatever its source and its function.

``RecordPath.run_record`` is the path, written once: enter the record's scope (it becomes
``current_record()``), its span, the trace warnings and the logger's correlation id, the
``received`` line, the call, then ``processed`` (or held for the batch's commit) or ``failed``
(routed as the source retries: reported, requeued, or stopping an ordered batch). Every error of
those steps is the record's own failure, with its one ERROR line; it never ends the invocation
or touches another record.

The path is a coroutine, so one text serves both kinds of function. ``RecordPath.run`` drives a
plain function's records to their end right here, one at a time in batch order (``run_now``:
nothing in their path suspends, and an awaitable the function hands back is run on this thread's
loop); ``AsyncRecordPath`` (``lambda_kit.loop.concurrent``) runs an ``async def``'s on the event
loop, several at once. The API's request is one record on the same path
(``lambda_kit.sources.api.path``).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Coroutine
from time import perf_counter
from typing import TYPE_CHECKING, Any, TypeVar

from .. import log
from ..errors import (
    BatchResponseReturned,
    CommitFailed,
    DeadlineNear,
    GroupHeldBack,
    InvalidPayload,
    UndecodableRecord,
)
from ..record import Outcome, Record
from ..trace import otel, reset_current_record, set_current_record
from .options import Options

if TYPE_CHECKING:
    from ..context import LambdaContext
    from ..sources.base import Source

T = TypeVar("T")
INFO = log.LEVELS["INFO"]
Function = Callable[[Any, Any], Any]
"""The decorated function: ``(payload, context)``, plain or ``async def``."""


def run_now(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends (a plain function's record path) to its end, here."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coroutine.close()
    raise RuntimeError("a plain function's record path waited on the event loop")


def record_spans() -> otel.RecordSpans | None:
    """The invocation's span maker (``lambda_kit.trace.otel``), or None without OpenTelemetry
    configured; looked for only in a process that loaded OpenTelemetry's API."""
    if "opentelemetry.trace" not in sys.modules:
        return None
    return otel.record_spans()


def correlation(logger: Any) -> Callable[[str], None] | None:
    """How a Powertools ``logger=`` is told each record's trace id (None without one): its
    task-local keys when it has them (Powertools 3), else its shared ones."""
    if logger is None:
        return None
    task_local = getattr(logger, "thread_safe_append_keys", None)

    def correlate(trace_id: str) -> None:
        if task_local is not None:
            task_local(correlation_id=trace_id, trace_id=trace_id)
        else:
            logger.set_correlation_id(trace_id)
            logger.append_keys(trace_id=trace_id)

    return correlate


def deadline_of(context: LambdaContext | None) -> float | None:
    """When the invocation ends (on ``perf_counter``'s clock), by the context's remaining time;
    None when the context does not tell (a test's ``None``)."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    try:
        millis = remaining() if remaining is not None else None
    except Exception:
        return None
    return perf_counter() + millis / 1000 if type(millis) is int else None


def duration_ms(started: float) -> float:
    """Milliseconds since ``started``, to the microsecond (``round(x, 3)`` costs twice as much)."""
    return round((perf_counter() - started) * 1_000_000) / 1000


class RecordPath:
    """One invocation's records and what they share, run by ``run_record``; ``run`` runs a plain
    function's batch, one record at a time in batch order."""

    received_message = "record received"
    processed_message = "record processed"

    def __init__(
        self,
        function: Function,
        context: LambdaContext | None,
        options: Options,
        adapter: Source,
        size: int,
    ) -> None:
        self.function = function
        self.context = context
        self.options = options
        self.adapter = adapter
        self.size = size
        self.outcome = Outcome()
        self.pending: list[tuple[Record, Any, float]] = []
        self.failed_groups: set[Any] = set()
        self.stop_at = size  # no record after this batch position is started
        self.skipped: list[int] = []
        self.unstarted: list[int] = []  # not started: too little of the invocation's time was left
        self.deadline = deadline_of(context)
        self.reserve = options.deadline_margin_ms / 1000
        self.slowest = 0.0
        self.started = 0
        self.spans = record_spans()
        self.correlate = correlation(options.logger)
        self.log_event = options.log_event and log.enabled(INFO)
        self.log_result = options.log_result and log.enabled(INFO)

    def run(self, records: list[Record]) -> Outcome:
        """A plain function's records, one at a time, in batch order."""
        for index, record in enumerate(records):
            if index > self.stop_at:
                self.skipped.append(index)
            elif not self.may_start():
                self.unstarted.append(index)
            else:
                run_now(self.run_record(record, index))
        return run_now(self.finish(records))

    def may_start(self) -> bool:
        """Whether the record at ``index`` may start: the invocation has more time left than the
        margin, what the slowest record of this invocation took plus ``deadline_margin_ms``
        (Lambda stops a function at its deadline, and a batch cut short so reports nothing: every
        record would come back). The first record of the invocation always starts."""
        if self.unstarted:
            return False  # once one waits for the retry, every later one does
        if self.deadline is None or not self.started:
            return True
        return self.deadline - perf_counter() > self.slowest + self.reserve

    async def resolve(self, awaitable: Awaitable[T]) -> T:
        """An awaitable the function (or the commit) handed back, run to its end: a plain
        function's on this thread's loop."""
        from .event_loop import awaited  # asyncio costs 30+ ms to import: only for functions that need it

        return awaited(awaitable)

    def owns(self, error: BaseException) -> bool:
        """Whether ``error`` is a record's failure (an ``Exception``); anything else ends the
        invocation."""
        return isinstance(error, Exception)

    # --- the path ----------------------------------------------------------------------------------

    async def run_record(self, record: Record, index: int) -> None:
        """The steps of one record (the module's docstring says what they are)."""
        if record.group is not None and record.group in self.failed_groups:
            self.hold_back(record)
            return
        token = set_current_record(record)
        span = self.spans.start(record, self.size) if self.spans is not None else None
        self.started += 1
        started = perf_counter()
        error = None
        try:
            self.enter(record)
            result = self.call(record)
            if result is not None and isinstance(result, Awaitable):  # a coroutine, a future
                result = await self.resolve(result)
            self.returned(record, result, started)
        except BaseException as exc:
            if not self.owns(exc):
                raise
            error = exc
            self.failed(record, exc, started, index)
        finally:
            self.slowest = max(self.slowest, perf_counter() - started)
            if span is not None:
                self.spans.end(span, error, self.span_outcome(error))
            reset_current_record(token)

    def enter(self, record: Record) -> None:
        """The record's trace warnings, the logger's correlation id, the retry count, ``received``."""
        if record.rejected_trace_id is not None:
            log.emit(
                "WARN",
                "ignored an invalid trace id; using the fallback id",
                fields={
                    "source": record.source,
                    "rejected_trace_id": log.brief(record.rejected_trace_id),
                },
            )
        if self.correlate is not None:
            self.correlate(record.trace_id)
        if record.attempt:
            self.outcome.retried += 1
        if self.options.log_buffer:
            record.buffered = []
        if self.log_event and record.error is None:
            log.emit("INFO", self.received_message, fields=self.received_fields(record))

    def received_fields(self, record: Record) -> dict[str, Any]:
        return {"source": record.source, "payload": log.clean(record.payload)}

    def call(self, record: Record) -> Any:
        """The function called with the record's payload (validated, with ``model=``); what it
        hands back, awaitable or not."""
        if record.error is not None:
            raise UndecodableRecord(record.error)
        payload = record.payload
        validate = self.options.validate
        if validate is not None:
            payload = self.adapter.typed(payload, validate)
        return self.function(payload, self.context)

    def returned(self, record: Record, result: Any, started: float) -> None:
        """The function returned: the record waits for the batch's commit, or is processed."""
        if isinstance(result, dict) and "batchItemFailures" in result:
            raise BatchResponseReturned()
        duration = duration_ms(started)
        if self.options.commit is not None:
            self.pending.append((record, result, duration))
            return
        self.processed(record, result, duration)

    def processed(self, record: Record, result: Any, duration: float) -> None:
        """The record is done once its line is written (a line that cannot be written fails it);
        its line goes out with the next one written (one write per record), and the lines it
        buffered are dropped."""
        if self.log_result:
            fields = {
                "source": record.source,
                "outcome": record.outcome,
                "duration_ms": duration,
                "result": log.clean(result),
            }
            if record.buffered_dropped:
                fields["log_lines_dropped"] = record.buffered_dropped
            log.emit("INFO", self.processed_message, fields=fields, hold=True)
        record.buffered = None
        self.outcome.processed += 1
        if self.adapter.keeps_results:
            self.outcome.results.append((record, result))

    def span_outcome(self, error: BaseException | None) -> str | None:
        return None  # the span says ok or failed by its error

    # --- a failed record -------------------------------------------------------------------------

    def failed(self, record: Record, error: BaseException, started: float, index: int) -> None:
        """Route a failed record (requeue it, or count it as the batch's failure), then write its
        one ERROR line."""
        routed, routing_error = self.route(record, error)
        if routed == "failed":
            self.outcome.failures.append((record, error))
            if record.group is not None:
                self.failed_groups.add(record.group)
            if self.adapter.stop_at_first_failure:
                self.stop_at = min(self.stop_at, index)
        fields = {
            "source": record.source,
            "outcome": routed,
            "attempt": record.attempt + 1,
            "duration_ms": duration_ms(started),
            **failure_fields(record, error),
        }
        if routing_error is not None:
            fields["requeue_error"] = log.clean(routing_error)
        log.release(record)
        log.emit("ERROR", failure_message(record, error), fields=fields)

    def route(self, record: Record, error: BaseException) -> tuple[str, str | None]:
        """("failed" or where the adapter put the record instead, why requeueing failed)."""
        if not (self.adapter.requeueing and record.id):
            return "failed", None
        try:
            return self.adapter.requeue(record, error), None
        except Exception as exc:  # reported as a failure of the batch, on the same line
            return "failed", f"{type(exc).__name__}: {log.safe_str(exc)}"

    def hold_back(self, record: Record) -> None:
        """An earlier record of this record's ordering group failed: it fails unprocessed."""
        held = GroupHeldBack(f"an earlier message of group {record.group!r} failed in this batch")
        self.outcome.failures.append((record, held))
        token = set_current_record(record)
        try:
            log.emit(
                "WARN",
                "not processed: an earlier record of its group failed; it is retried in order",
                fields={"source": record.source, "group": log.clean(record.group)},
            )
        finally:
            reset_current_record(token)

    # --- the end of the batch ------------------------------------------------------------------------

    async def finish(self, records: list[Record]) -> Outcome:
        """After every record ran: the commit, the records not started go back, then failures and
        skipped records in batch order."""
        if self.pending:
            await self.commit(records)
        if self.unstarted:
            self.out_of_time([records[index] for index in sorted(self.unstarted)])
        if self.skipped:
            self.stopped(records[self.stop_at], [records[index] for index in sorted(self.skipped)])
        if len(self.outcome.failures) > 1:
            position = {id(record): index for index, record in enumerate(records)}
            self.outcome.failures.sort(key=lambda failure: position[id(failure[0])])
        return self.outcome

    def out_of_time(self, unstarted: list[Record]) -> None:
        """The records not started for lack of time fail unprocessed, so their source retries
        them; one WARN line says how many and why."""
        left = None if self.deadline is None else max(0.0, self.deadline - perf_counter())
        for record in unstarted:
            self.outcome.failures.append(
                (record, DeadlineNear("not started: the invocation's deadline was near"))
            )
        self.outcome.unstarted = len(unstarted)
        log.emit(
            "WARN",
            "records not started: too little of the invocation's time was left; their source retries them",
            fields={
                "not_started": len(unstarted),
                "remaining_ms": None if left is None else round(left * 1000),
                "margin_ms": round((self.slowest + self.reserve) * 1000),
                "trace_ids": list(dict.fromkeys(record.trace_id for record in unstarted)),
            },
        )

    def stopped(self, record: Record, skipped: list[Record]) -> None:
        """The adapter keeps order: after ``record`` failed, ``skipped`` are not processed this time."""
        self.outcome.skipped = skipped
        log.emit(
            "WARN",
            "stopped the batch at the failed record; Lambda retries from it, in order",
            record.trace_id,
            {"source": record.source, "record_id": log.clean(record.id), "not_processed": len(skipped)},
        )

    async def commit(self, records: list[Record]) -> None:
        """Run the batch's commit over every record the function accepted, in batch order; write
        its own line; then each record's outcome (``settle``)."""
        position = {id(record): index for index, record in enumerate(records)}
        self.pending.sort(key=lambda item: position[id(item[0])])
        started = perf_counter()
        failed_ids, error = await self.run_commit()
        self.committed(started, failed_ids, error)
        self.settle(failed_ids, error)

    async def run_commit(self) -> tuple[set[Any], Exception | None]:
        """(the ids the commit reported failed, None), or (nothing, the error it raised)."""
        try:
            results = [(record, result) for record, result, _ in self.pending]
            reported = self.options.commit(results)  # type: ignore[misc]
            if reported is not None and isinstance(reported, Awaitable):
                reported = await self.resolve(reported)
            return reported_ids(reported), None
        except Exception as exc:
            return set(), exc

    def committed(self, started: float, failed_ids: set[Any], error: Exception | None) -> None:
        """The commit's own line: how many records, how many failed, its duration and trace ids."""
        pending = self.pending
        failed = len(pending) if error else sum(record.id in failed_ids for record, _, _ in pending)
        fields = {
            "records": len(pending),
            "failed": failed,
            "duration_ms": duration_ms(started),
            "trace_ids": list(dict.fromkeys(record.trace_id for record, _, _ in pending)),
        }
        if error is not None:
            fields.update(error_type=type(error).__name__, error=log.clean(log.safe_str(error)))
        log.emit("WARN" if failed else "INFO", "batch committed", fields=fields)

    def settle(self, failed_ids: set[Any], error: Exception | None) -> None:
        """Each accepted record's outcome after the commit: a commit that raised fails all of them
        (their source retries them); one that returned records (or record ids) fails just those."""
        for record, result, duration in self.pending:
            token = set_current_record(record)
            try:
                if error is None and record.id not in failed_ids:
                    self.processed(record, result, duration)
                    continue
                record_error = error or CommitFailed("the batch commit reported this record as failed")
                log.release(record)
                log.emit(
                    "ERROR",
                    "record failed at commit",
                    fields={
                        "source": record.source,
                        "outcome": "failed",
                        "duration_ms": duration,
                        "attempt": record.attempt + 1,
                        **log.error_fields(record_error),
                    },
                )
                self.outcome.failures.append((record, record_error))
            finally:
                reset_current_record(token)


def reported_ids(reported: object) -> set[Any]:
    """The ids of the records a commit reported as failed: records or record ids, or nothing."""
    if reported is None:
        return set()
    if isinstance(reported, str | bytes | dict) or not hasattr(reported, "__iter__"):
        raise TypeError(
            f"the commit returned a value of type {type(reported).__name__}: return the records "
            "(or record ids) that failed, or None, or raise to fail them all"
        )
    return {getattr(item, "id", item) for item in reported}


def failure_message(record: Record, error: BaseException) -> str:
    if record.error is not None:
        return "record could not be decoded"
    if type(error) is InvalidPayload:
        return "record failed validation"
    return "record failed"


def failure_fields(record: Record, error: BaseException) -> dict[str, Any]:
    """What the ERROR line says of the failure: the raw part an unreadable record could not be
    decoded from, the fields a payload that does not fit the model got wrong (never a value), or
    the exception and its traceback."""
    fields = log.error_fields(error)
    if record.error is not None:
        fields["payload"] = log.clean(record.payload)
        del fields["traceback"]
    elif type(error) is InvalidPayload:
        fields["invalid"] = log.clean(error.problems)
        del fields["traceback"]
    return fields
