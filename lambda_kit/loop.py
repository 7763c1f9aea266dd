"""The record loop: the per-record scope shared by every batch source.

For each record it sets the trace scope, logs arrival, calls the function, logs the result or
exactly one ERROR line, and counts the outcome. It never names a source: what a failure means
(stop the batch, requeue, report) comes from the adapter's ``stop_at_first_failure`` and
``requeue``.
"""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter
from typing import Any

from . import log
from .record import Record
from .trace import _record


class UndecodableRecord(ValueError):
    """A record whose payload could not be read; it fails without reaching the function."""


class Options:
    """What every decorator takes: payload decoding, what to log, Powertools logger, metrics."""

    __slots__ = ("json", "log_event", "log_result", "logger", "metrics", "commit")

    def __init__(
        self,
        json: bool = True,
        log_event: bool = True,
        log_result: bool = True,
        logger: Any = None,
        metrics: bool | None = None,
        commit: Callable[[list[tuple[Record, Any]]], Any] | None = None,
    ) -> None:
        self.json = json
        self.log_event = log_event
        self.log_result = log_result
        self.logger = logger
        self.metrics = metrics
        self.commit = commit


class CommitFailed(RuntimeError):
    """The batch's ``commit`` reported this record as failed."""


class GroupHeldBack(RuntimeError):
    """Not processed: an earlier record of its ordering group (FIFO message group) failed."""


class Outcome:
    """What became of a batch: failures (with their exceptions), records not reached, counts."""

    __slots__ = ("failures", "skipped", "processed", "retried")

    def __init__(self) -> None:
        self.failures: list[tuple[Record, BaseException]] = []
        self.skipped: list[Record] = []
        self.processed = 0
        self.retried = 0


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


def record_loop(
    records: list[Record],
    fn: Callable[[Any, Any], Any],
    context: Any,
    options: Options,
    adapter: Any,
) -> Outcome:
    outcome = Outcome()
    failures = outcome.failures
    info = log.enabled(20)
    log_event = options.log_event and info
    log_result = options.log_result and info
    powertools = options.logger
    stop = adapter.stop_at_first_failure
    requeue = adapter.requeue if adapter.requeueing else None
    emit, clean = log.emit, log.clean
    set_record, reset_record = _record.set, _record.reset
    commit = options.commit
    pending: list[tuple[Record, Any, float]] = []
    failed_groups: set[str] = set()

    for index, record in enumerate(records):
        token = set_record(record)
        try:
            trace_id = record.trace_id
            if failed_groups and record.group in failed_groups:
                held = GroupHeldBack(f"an earlier message of group {record.group!r} failed in this batch")
                failures.append((record, held))
                emit(
                    "WARNING",
                    "not processed: an earlier record of its group failed; it is retried in order",
                    trace_id,
                    {"source": record.source, "record_id": record.id, "group": clean(record.group)},
                )
                continue
            if record.rejected_trace_id is not None:
                warn_rejected_trace_id(record)
            if powertools is not None:
                set_powertools_correlation(powertools, trace_id)
            if record.attempt:
                outcome.retried += 1
            started = perf_counter()
            if record.error is None:
                if log_event:
                    emit(
                        "INFO",
                        "record received",
                        trace_id,
                        {"source": record.source, "record_id": record.id, "payload": clean(record.payload)},
                    )
                try:
                    result = fn(record.payload, context)
                except Exception as exc:
                    error: BaseException = exc
                else:
                    if commit is not None:
                        pending.append((record, result, started))
                        continue
                    outcome.processed += 1
                    if log_result:
                        emit(
                            "INFO",
                            "record processed",
                            trace_id,
                            {
                                "source": record.source,
                                "record_id": record.id,
                                "outcome": "ok",
                                "duration_ms": round((perf_counter() - started) * 1000, 3),
                                "result": clean(result),
                            },
                        )
                    continue
            else:
                error = UndecodableRecord(record.error)
            result_of_failure = "failed"
            routing_failure = None
            if requeue is not None and record.id:
                try:
                    result_of_failure = requeue(record, error)
                except Exception as routing_error:  # reported as a batch failure, on the same line
                    routing_failure = f"{type(routing_error).__name__}: {log._safe_str(routing_error)}"
            fields = {
                "source": record.source,
                "record_id": record.id,
                "outcome": result_of_failure,
                "attempt": record.attempt + 1,
                "duration_ms": round((perf_counter() - started) * 1000, 3),
                **log.error_fields(error),
            }
            if routing_failure is not None:
                fields["requeue_error"] = clean(routing_failure)
            if record.error is not None:
                fields["payload"] = clean(record.payload)  # the raw part the adapter could not decode
                fields.pop("traceback")
            emit("ERROR", "record failed" if record.error is None else "record could not be decoded", trace_id, fields)
            if result_of_failure == "failed":
                failures.append((record, error))
                if record.group is not None:
                    failed_groups.add(record.group)
                if stop:
                    outcome.skipped = records[index + 1 :]
                    if outcome.skipped:
                        emit(
                            "WARNING",
                            "stopped the batch at the failed record; Lambda retries from it, in order",
                            trace_id,
                            {"source": record.source, "record_id": record.id, "not_processed": len(outcome.skipped)},
                        )
                    break
        finally:
            reset_record(token)
    if pending:
        _commit(pending, commit, outcome, log_result)
    return outcome


def _commit(
    pending: list[tuple[Record, Any, float]],
    commit: Callable[[list[tuple[Record, Any]]], Any],
    outcome: Outcome,
    log_result: bool,
) -> None:
    """Run the batch's commit over every record the function accepted, then log each outcome.

    A commit that raises fails all of them (their source retries them); one that returns records
    (or record ids) fails just those.
    """
    failed_ids: set[Any] | None = None
    error: BaseException | None = None
    try:
        reported = commit([(record, result) for record, result, _ in pending])
        if reported:
            failed_ids = {getattr(item, "id", item) for item in reported}
    except Exception as exc:
        error = exc
    for record, result, started in pending:
        token = _record.set(record)
        try:
            fields: dict[str, Any] = {
                "source": record.source,
                "record_id": record.id,
                "duration_ms": round((perf_counter() - started) * 1000, 3),
            }
            if error is None and (failed_ids is None or record.id not in failed_ids):
                outcome.processed += 1
                if log_result:
                    fields.update(outcome="ok", result=log.clean(result))
                    log.emit("INFO", "record processed", record.trace_id, fields)
                continue
            record_error = error or CommitFailed("the batch commit reported this record as failed")
            fields.update(outcome="failed", attempt=record.attempt + 1, **log.error_fields(record_error))
            log.emit("ERROR", "record failed at commit", record.trace_id, fields)
            outcome.failures.append((record, record_error))
        finally:
            _record.reset(token)

