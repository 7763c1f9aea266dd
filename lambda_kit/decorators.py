"""One decorator per event source: source adapters from the registry, bound to the record loop.

Each works bare (``@sqs_handler``) and with options (``@sqs_handler(json=False)``), keeps the
function's metadata, and returns a plain Lambda handler ``(event, context)``. The decorated
function carries ``__lambda_kit__`` (its decorator, sources and options) for ``lambda-kit check``.
An event none of the decorator's sources recognizes is refused with ``UnsupportedEvent``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from .loop import Options, run_batch
from .record import Record
from .sources import get
from .sources.base import Source
from .window import Window, guarded

F = TypeVar("F", bound=Callable[..., Any])
Commit = Callable[[list[tuple[Record, Any]]], Any]


ASYNC_CODE_FLAGS = 0x80 | 0x200  # CO_COROUTINE | CO_ASYNC_GENERATOR (``inspect`` costs ~13 ms to import)


def is_async(function: Any) -> bool:
    """Whether calling ``function`` gives a coroutine or an async generator instead of running it."""
    while isinstance(function, functools.partial):
        function = function.func
    function = getattr(function, "__func__", function)  # a bound method
    code = getattr(function, "__code__", None)
    if code is None and callable(function):  # a callable object: its __call__
        code = getattr(type(function).__call__, "__code__", None)
    return code is not None and bool(code.co_flags & ASYNC_CODE_FLAGS)


def refuse_coroutine_function(decorator: str, function: Any) -> None:
    """lambda_kit calls functions synchronously: an ``async def`` would never run (its records
    acknowledged unprocessed), so decorating one is an error at import time."""
    if is_async(function):
        raise TypeError(
            f"@{decorator} cannot wrap async function {getattr(function, '__qualname__', function)!r}: "
            "lambda_kit calls functions synchronously; make it a plain def"
        )


def marked(decorator: str, adapters: Sequence[Source], marks: dict[str, Any], function: Any, handler: Any) -> Any:
    functools.update_wrapper(handler, function)
    handler.__lambda_kit__ = {"decorator": decorator, "sources": [a.name for a in adapters], **marks}
    return handler


def batch_decorator(
    decorator: str,
    fn: Any,
    adapters: Sequence[Source],
    options: Options,
    marks: dict[str, Any],
    wrap: Callable[[Any], Callable[[Any, Any], Any]] | None = None,
) -> Any:
    """``wrap``, when given, wraps the function for the record loop (``lambda_kit.window.guarded``)."""

    def decorate(function: F) -> F:
        refuse_coroutine_function(decorator, function)
        call = function if wrap is None else wrap(function)

        def handler(event: Any, context: Any = None) -> Any:
            return run_batch(decorator, adapters, call, options, event, context)

        return marked(decorator, adapters, marks, function, handler)  # type: ignore[no-any-return]

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
    commit: Commit | None = None,
) -> Any:
    """Call ``fn(message, context)`` once per SQS record; report failures as ``batchItemFailures``.

    ``commit``, when given, is called once after every record ran, with ``(record, returned
    value)`` for each record the function accepted: the place to write a whole batch at once
    (e.g. ``Counter.increment_many``). If it raises, those records fail; if it returns records
    (or record ids), just those fail.
    """
    options = Options(json, log_event, log_result, logger, metrics, commit)
    adapters = [get("sqs")(json=json)]
    return batch_decorator("sqs_handler", fn, adapters, options, {"json": json, "commit": commit is not None})


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
    return batch_decorator("sns_handler", fn, [get("sns")(json=json)], options, {"json": json})


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
    commit: Commit | None = None,
    on_window_end: Callable[[Window], Any] | None = None,
) -> Any:
    """Call ``fn(payload, context)`` once per Kinesis or DynamoDB Streams record, in order.

    ``on_failure="stop"`` (default) stops at the first failing record and reports it;
    ``"requeue"`` (Kinesis) puts it back on its stream and dead-letters it after ``max_attempts``.
    ``commit`` works as for ``sqs_handler``. A record holding a CloudWatch Logs subscription
    message is one call per log event (as ``cloudwatch_logs_handler`` gives them).

    With a tumbling window on the stream, ``current_window()`` is the window while the batch runs
    (its ``state`` goes back to Lambda with the response), and ``on_window_end(window)`` runs once
    the window's last invocation has processed its records.
    """
    if on_failure not in ON_FAILURE:
        raise ValueError(f"stream_handler: on_failure must be one of {ON_FAILURE}, not {on_failure!r}")
    if max_attempts < 1:
        raise ValueError("stream_handler: max_attempts must be at least 1")
    if on_window_end is not None:
        if not callable(on_window_end):
            raise TypeError(f"stream_handler: on_window_end must be a function of the window, not {type(on_window_end).__name__}")
        refuse_coroutine_function("stream_handler", on_window_end)
    options = Options(json, log_event, log_result, logger, metrics, commit)
    kinesis = get("kinesis")(
        json=json, on_failure=on_failure, max_attempts=max_attempts, dead_letter=dead_letter, on_window_end=on_window_end
    )
    adapters = [kinesis, get("dynamodb")(on_window_end=on_window_end)]
    marks = {
        "json": json, "on_failure": on_failure, "max_attempts": max_attempts, "commit": commit is not None,
        "on_window_end": on_window_end is not None,
    }
    return batch_decorator("stream_handler", fn, adapters, options, marks, wrap=guarded)


# --- CloudWatch Logs subscriptions ---------------------------------------------------------------

def cloudwatch_logs_handler(
    fn: F | None = None,
    /,
    *,
    log_event: bool = True,
    log_result: bool = True,
    logger: Any = None,
    metrics: bool | None = None,
) -> Any:
    """Call ``fn(log_event, context)`` once per log event of a CloudWatch Logs subscription
    (``awslogs.data`` unpacked; control messages skipped). A failure is logged and, once every log
    event ran, the first is re-raised: Lambda retries the event, then its on-failure destination
    (or DLQ) keeps it.
    """
    options = Options(True, log_event, log_result, logger, metrics)
    return batch_decorator("cloudwatch_logs_handler", fn, [get("cloudwatch_logs")()], options, {})


KAFKA_ON_FAILURE = ("raise", "report")


def kafka_handler(
    fn: F | None = None,
    /,
    *,
    json: bool = True,
    log_event: bool = True,
    log_result: bool = True,
    logger: Any = None,
    metrics: bool | None = None,
    on_failure: str = "raise",
    commit: Commit | None = None,
) -> Any:
    """Call ``fn(message, context)`` once per Kafka record (Amazon MSK or self-managed), in order
    within each topic-partition. ``message`` is a dict: ``topic``, ``partition``, ``offset``,
    ``timestamp``, ``timestamp_type``, ``key`` (bytes), ``value`` (JSON-decoded; bytes with
    ``json=False``), ``headers`` (name -> bytes).

    ``on_failure="raise"`` (default) stops at the first failure and raises it: Lambda retries the
    whole batch. ``"report"`` stops only the failed record's partition and returns the records not
    done as ``batchItemFailures`` ({"partition", "offset"}), which Lambda reads only with
    ``ReportBatchItemFailures`` on the event source mapping (provisioned mode).
    ``commit`` works as for ``sqs_handler``.
    """
    if on_failure not in KAFKA_ON_FAILURE:
        raise ValueError(f"kafka_handler: on_failure must be one of {KAFKA_ON_FAILURE}, not {on_failure!r}")
    options = Options(json, log_event, log_result, logger, metrics, commit)
    adapters = [get("kafka")(json=json, on_failure=on_failure)]
    marks = {"json": json, "on_failure": on_failure, "commit": commit is not None}
    return batch_decorator("kafka_handler", fn, adapters, options, marks)


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
    """Call ``fn(request, context)`` once per HTTP request (API Gateway REST or HTTP API, Function
    URL, ALB).

    ``HTTPError(status, message)`` answers that status; any other exception answers 500 without
    its text. Every response carries the trace id in ``trace_header``; bodies larger than
    ``max_body`` bytes answer 413. Any event that is not an HTTP request is refused.
    """
    from .request_scope import run_request

    options = Options(True, log_event, log_result, logger, metrics)
    adapters = [get("api")()]

    def decorate(function: F) -> F:
        refuse_coroutine_function("api_handler", function)

        def handler(event: Any, context: Any = None) -> Any:
            return run_request(adapters, function, options, trace_header, max_body, event, context)

        return marked("api_handler", adapters, {"trace_header": trace_header}, function, handler)  # type: ignore[no-any-return]

    return decorate if fn is None else decorate(fn)


# --- EventBridge and S3 ---------------------------------------------------------------------------

def eventbridge_handler(
    fn: F | None = None,
    /,
    *,
    log_event: bool = True,
    log_result: bool = True,
    logger: Any = None,
    metrics: bool | None = None,
) -> Any:
    """Call ``fn(detail, context)`` for an EventBridge event; a failure is logged and re-raised
    (EventBridge invokes asynchronously: Lambda retries, then the on-failure destination or DLQ)."""
    options = Options(True, log_event, log_result, logger, metrics)
    return batch_decorator("eventbridge_handler", fn, [get("eventbridge")()], options, {})


def s3_handler(
    fn: F | None = None,
    /,
    *,
    log_event: bool = True,
    log_result: bool = True,
    logger: Any = None,
    metrics: bool | None = None,
) -> Any:
    """Call ``fn(obj, context)`` once per object of an S3 event notification (an ``S3Object``),
    delivered directly, in SQS or SNS messages, or as an EventBridge ``Object Created`` /
    ``Object Deleted`` event. In SQS messages failures are reported per message
    (``batchItemFailures``); otherwise the invocation is asynchronous and a failure is raised."""
    options = Options(True, log_event, log_result, logger, metrics)
    return batch_decorator("s3_handler", fn, [get("s3")()], options, {})
