"""One decorator per event source: a source adapter bound to the record loop with options.

Each works bare (``@sqs_handler``) and with options (``@sqs_handler(json=False)``), keeps the
function's metadata, and returns a plain Lambda handler ``(event, context)``. The decorated
function carries ``__lambda_kit__`` (its source and options) for ``lambda-kit check``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

from . import log, metrics
from .loop import Options, Outcome, record_loop
from .record import Record
from .sources import event_records

F = TypeVar("F", bound=Callable[..., Any])

EXPECTED_EVENT = {"sqs": "an SQS", "sns": "an SNS", "stream": "a Kinesis or DynamoDB Streams"}


def invocation_of(context: Any) -> tuple[str | None, str | None]:
    name = getattr(context, "function_name", None) or os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
    return name, getattr(context, "aws_request_id", None)


def _run_batch(
    kind: str,
    adapter_for: Callable[[list[Any]], Any],
    fn: Callable[[Any, Any], Any],
    options: Options,
    event: Any,
    context: Any,
) -> Any:
    invocation = invocation_of(context)
    token = log._invocation.set(invocation)
    outcome = Outcome()
    adapter: Any = None
    try:
        raw_records = event_records(event)
        if raw_records is None:
            log.emit(
                "ERROR",
                f"event has no Records list; this function expects {EXPECTED_EVENT[kind]} event",
                None,
                {"event": log.clean(event)},
            )
            return {"batchItemFailures": []} if kind != "sns" else None
        adapter = adapter_for(raw_records)
        outcome = record_loop(adapter.records(raw_records), fn, context, options, adapter)
        return adapter.response(outcome.failures, outcome.skipped)
    finally:
        if adapter is not None and metrics.enabled(options.metrics):
            metrics.count(invocation[0], adapter.name, outcome.processed, len(outcome.failures), outcome.retried)
        log.flush()
        log._invocation.reset(token)


def _batch_decorator(kind: str, fn: Any, options: Options, adapter_for: Callable[[list[Any]], Any], marks: dict[str, Any]) -> Any:
    def decorate(function: F) -> F:
        @functools.wraps(function)
        def handler(event: Any, context: Any = None) -> Any:
            return _run_batch(kind, adapter_for, function, options, event, context)

        handler.__lambda_kit__ = {"source": kind, **marks}  # type: ignore[attr-defined]
        return handler  # type: ignore[return-value]

    return decorate if fn is None else decorate(fn)


def sqs_handler(
    fn: F | None = None,
    /,
    *,
    json: bool = True,
    log_event: bool = True,
    log_result: bool = True,
    logger: Any = None,
    metrics: bool | None = None,
    commit: Callable[[list[tuple[Record, Any]]], Any] | None = None,
) -> Any:
    """Call ``fn(message, context)`` once per SQS record; report failures as ``batchItemFailures``.

    ``commit``, when given, is called once after every record ran, with ``(record, returned
    value)`` for each record the function accepted: the place to write a whole batch at once
    (e.g. ``Counter.increment_many``). If it raises, those records fail; if it returns records
    (or record ids), just those fail.
    """
    options = Options(json, log_event, log_result, logger, metrics, commit)
    from .sources.sqs import SqsSource  # each decorator loads only its own adapter (cold start)

    source = SqsSource(json=json)
    return _batch_decorator("sqs", fn, options, lambda records: source, {"json": json, "commit": commit is not None})


def sns_handler(
    fn: F | None = None,
    /,
    *,
    json: bool = True,
    log_event: bool = True,
    log_result: bool = True,
    logger: Any = None,
    metrics: bool | None = None,
) -> Any:
    """Call ``fn(message, context)`` once per SNS record; a failure is logged and re-raised."""
    options = Options(json, log_event, log_result, logger, metrics)
    from .sources.sns import SnsSource

    source = SnsSource(json=json)
    return _batch_decorator("sns", fn, options, lambda records: source, {"json": json})


ON_FAILURE = ("stop", "requeue")


def stream_handler(
    fn: F | None = None,
    /,
    *,
    json: bool = True,
    log_event: bool = True,
    log_result: bool = True,
    logger: Any = None,
    metrics: bool | None = None,
    on_failure: str = "stop",
    max_attempts: int = 3,
    dead_letter: str | Callable[[], str | None] | None = None,
    commit: Callable[[list[tuple[Record, Any]]], Any] | None = None,
) -> Any:
    """Call ``fn(payload, context)`` once per Kinesis or DynamoDB Streams record, in order.

    ``on_failure="stop"`` (default) stops at the first failing record and reports it;
    ``"requeue"`` (Kinesis) puts it back on its stream and dead-letters it after ``max_attempts``.
    ``commit`` works as for ``sqs_handler``.
    """
    if on_failure not in ON_FAILURE:
        raise ValueError(f"stream_handler: on_failure must be one of {ON_FAILURE}, not {on_failure!r}")
    if max_attempts < 1:
        raise ValueError("stream_handler: max_attempts must be at least 1")
    options = Options(json, log_event, log_result, logger, metrics, commit)
    from .sources.dynamodb import DynamoDBSource
    from .sources.kinesis import KinesisSource

    kinesis = KinesisSource(json=json, on_failure=on_failure, max_attempts=max_attempts, dead_letter=dead_letter)
    dynamodb = DynamoDBSource()

    def adapter_for(records: list[Any]) -> Any:
        first = records[0] if records and isinstance(records[0], dict) else {}
        return dynamodb if first.get("eventSource") == "aws:dynamodb" or "dynamodb" in first else kinesis

    marks = {"json": json, "on_failure": on_failure, "max_attempts": max_attempts}
    return _batch_decorator("stream", fn, options, adapter_for, marks)


DEFAULT_MAX_BODY = 1024 * 1024


def api_handler(
    fn: F | None = None,
    /,
    *,
    trace_header: str = "X-Trace-Id",
    log_event: bool = True,
    log_result: bool = True,
    logger: Any = None,
    metrics: bool | None = None,
    max_body: int | None = DEFAULT_MAX_BODY,
) -> Any:
    """Call ``fn(request, context)`` once per API Gateway (v1 or v2) request.

    ``HTTPError(status, message)`` answers that status; any other exception answers 500 without
    its text. Every response carries the trace id in ``trace_header``; bodies larger than
    ``max_body`` bytes answer 413.
    """
    from .request_scope import run_request

    options = Options(True, log_event, log_result, logger, metrics)

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def handler(event: Any, context: Any = None) -> Any:
            return run_request(function, options, trace_header, max_body, event, context)

        handler.__lambda_kit__ = {"source": "api", "trace_header": trace_header}  # type: ignore[attr-defined]
        return handler  # type: ignore[return-value]

    return decorate if fn is None else decorate(fn)
