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

    __slots__ = ("json", "log_event", "log_result", "logger", "metrics")

    def __init__(
        self,
        json: bool = True,
        log_event: bool = True,
        log_result: bool = True,
        logger: Any = None,
        metrics: bool | None = None,
    ) -> None:
        self.json = json
        self.log_event = log_event
        self.log_result = log_result
        self.logger = logger
        self.metrics = metrics


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
    requeue = getattr(adapter, "requeue", None) if getattr(adapter, "requeueing", False) else None
    emit, clean = log.emit, log.clean
    set_record, reset_record = _record.set, _record.reset

    for index, record in enumerate(records):
        token = set_record(record)
        try:
            trace_id = record.trace_id
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
            if requeue is not None and record.id:
                try:
                    result_of_failure = requeue(record, error)
                except Exception as routing_error:
                    emit(
                        "ERROR",
                        "could not requeue the failed record; reporting it as a batch failure",
                        trace_id,
                        {"source": record.source, "record_id": record.id, **log.error_fields(routing_error)},
                    )
            fields = {
                "source": record.source,
                "record_id": record.id,
                "outcome": result_of_failure,
                "attempt": record.attempt + 1,
                "duration_ms": round((perf_counter() - started) * 1000, 3),
                **log.error_fields(error),
            }
            if record.error is not None:
                fields["payload"] = clean(_raw_payload(record.raw))
                fields.pop("traceback")
            emit("ERROR", "record failed" if record.error is None else "record could not be decoded", trace_id, fields)
            if result_of_failure == "failed":
                failures.append((record, error))
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
    return outcome


def _raw_payload(raw: Any) -> Any:
    """The undecodable part of a raw record, for its ERROR line (cleaned and cut by the caller)."""
    if isinstance(raw, dict):
        for key in ("body", "Sns", "kinesis", "dynamodb"):
            if key in raw:
                return raw[key]
    return raw
