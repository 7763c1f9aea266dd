"""One decorator per event source: source adapters from the registry, bound to the record loop.

Each works bare (``@sqs_handler``) and with options (``@sqs_handler(json=False)``), keeps the
function's metadata, and returns a plain Lambda handler ``(event, context)``. The decorated
function carries ``__lambda_kit__`` (its decorator, sources and options) for ``lambda-kit check``.
An event none of the decorator's sources recognizes is refused with ``UnsupportedEvent``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .loop import Options, run_batch
from .record import Record
from .sources import get
from .sources.base import Source

if TYPE_CHECKING:
    from .loop import Loop
    from .sources.window import Window

    F = TypeVar("F", bound=Callable[..., Any])
    Commit = Callable[[list[tuple[Record, Any]]], Any]


COROUTINE_FLAG = 0x80  # CO_COROUTINE (``inspect`` costs ~13 ms to import)
GENERATOR_FLAGS = 0x20 | 0x200  # CO_GENERATOR | CO_ASYNC_GENERATOR


def code_flags(function: Any) -> int:
    """The flags of the code that runs when ``function`` is called (0 when there is none to read)."""
    while isinstance(function, functools.partial):
        function = function.func
    function = getattr(function, "__func__", function)  # a bound method
    code = getattr(function, "__code__", None)
    if code is None and callable(function):  # a callable object: its __call__
        code = getattr(type(function).__call__, "__code__", None)
    return code.co_flags if code is not None else 0


def is_async(decorator: str, function: Any) -> bool:
    """Whether ``function`` is an ``async def`` (its records run on the event loop). A generator
    function (plain or async) is refused: calling one does not run its body, so its records would
    be acknowledged unprocessed."""
    flags = code_flags(function)
    if flags & GENERATOR_FLAGS:
        kind = "async generator" if flags & 0x200 else "generator"
        raise TypeError(
            f"@{decorator} cannot wrap {kind} function {getattr(function, '__qualname__', function)!r}: "
            "calling it does not run its body; return a value instead of yielding"
        )
    return bool(flags & COROUTINE_FLAG)


def loop_for(decorator: str, function: Any, options: Options) -> Loop | None:
    """The record loop for ``function``: None (the plain loop) for a plain def, the concurrent one
    for an ``async def``. ``max_concurrency`` above 1 needs an ``async def`` (a plain function runs
    one record at a time: no threads behind the user's back)."""
    if not is_async(decorator, function):
        if options.max_concurrency > 1:
            raise TypeError(
                f"@{decorator}(max_concurrency={options.max_concurrency}) needs an async def function; "
                f"{getattr(function, '__qualname__', function)!r} is a plain function, which runs one record at a time: "
                "make it async def (blocking calls can run in threads with await asyncio.to_thread(...)), or drop max_concurrency"
            )
        return None
    if options.max_concurrency > 1 and options.logger is not None and not hasattr(options.logger, "thread_safe_append_keys"):
        raise TypeError(
            f"@{decorator}(max_concurrency={options.max_concurrency}): logger= needs Powertools 3 (Logger.thread_safe_append_keys), "
            "so each record running at once logs its own correlation id"
        )
    from .loop.concurrent import record_loop

    return record_loop


def checked_concurrency(decorator: str, value: Any) -> int:
    if type(value) is not int or value < 1:
        raise ValueError(f"{decorator}: max_concurrency must be a whole number of at least 1, not {value!r}")
    return value


def model_name(model: Any) -> str | None:
    return None if model is None else getattr(model, "__name__", None) or repr(model)


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
    wrap: Callable[[Any, bool], Callable[[Any, Any], Any]] | None = None,
) -> Any:
    """``wrap``, when given, wraps the function for the record loop (``lambda_kit.sources.window.guarded``);
    it is told whether the function is ``async def``."""

    def decorate(function: F) -> F:
        loop = loop_for(decorator, function, options)
        call = function if wrap is None else wrap(function, loop is not None)

        def handler(event: Any, context: Any = None) -> Any:
            return run_batch(decorator, adapters, call, options, event, context, loop)

        return marked(decorator, adapters, {**marks, "max_concurrency": options.max_concurrency}, function, handler)  # type: ignore[no-any-return]

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
    model: Any = None,
    max_concurrency: int = 1,
) -> Any:
    """Call ``fn(message, context)`` once per SQS record; report failures as ``batchItemFailures``.

    ``commit``, when given, is called once after every record ran, with ``(record, returned
    value)`` for each record the function accepted: the place to write a whole batch at once
    (e.g. ``Counter.increment_many``). If it raises, those records fail; if it returns records
    (or record ids), just those fail. It may be ``async def``.

    ``model`` (a pydantic model, a dataclass or a TypedDict): ``fn`` receives the message
    validated into it; a message that does not fit fails alone (``InvalidPayload``) without
    reaching ``fn``. ``max_concurrency`` (an ``async def`` only): up to that many messages at once;
    on a FIFO queue each message group stays in order.
    """
    options = Options(json, log_event, log_result, logger, metrics, commit, model, checked_concurrency("sqs_handler", max_concurrency))
    adapters = [get("sqs")(json=json)]
    return batch_decorator("sqs_handler", fn, adapters, options, {"json": json, "commit": commit is not None, "model": model_name(model)})


def sns_handler(
    fn: F | None = None,
    /,
    *,
    json: bool = True,
    log_event: bool = True,
    log_result: bool = True,
    logger: Any = None,
    metrics: bool | None = None,
    model: Any = None,
) -> Any:
    """Call ``fn(message, context)`` once per SNS record; a failure is logged and re-raised.
    ``model`` works as for ``sqs_handler``."""
    options = Options(json, log_event, log_result, logger, metrics, model=model)
    return batch_decorator("sns_handler", fn, [get("sns")(json=json)], options, {"json": json, "model": model_name(model)})


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
    model: Any = None,
    max_concurrency: int = 1,
) -> Any:
    """Call ``fn(payload, context)`` once per Kinesis or DynamoDB Streams record, in order.

    ``on_failure="stop"`` (default) stops at the first failing record and reports it;
    ``"requeue"`` (Kinesis) puts it back on its stream and dead-letters it after ``max_attempts``.
    ``commit`` works as for ``sqs_handler``. A record holding a CloudWatch Logs subscription
    message is one call per log event (as ``cloudwatch_logs_handler`` gives them).

    With a tumbling window on the stream, ``current_window()`` is the window while the batch runs
    (its ``state`` goes back to Lambda with the response), and ``on_window_end(window)`` runs once
    the window's last invocation has processed its records (it may be ``async def``).

    With ``model``, ``fn`` receives the Kinesis payload validated, or the DynamoDB item (its new
    image; the old one for REMOVE). ``max_concurrency`` (an ``async def`` only): records of up to
    that many partition keys (Kinesis) or item keys (DynamoDB) at once, each key in order; a
    failure still reports a sound checkpoint. A batch with a tumbling window runs one record at a
    time (its state is kept or undone record by record).
    """
    if on_failure not in ON_FAILURE:
        raise ValueError(f"stream_handler: on_failure must be one of {ON_FAILURE}, not {on_failure!r}")
    if max_attempts < 1:
        raise ValueError("stream_handler: max_attempts must be at least 1")
    if on_window_end is not None:
        if not callable(on_window_end):
            raise TypeError(f"stream_handler: on_window_end must be a function of the window, not {type(on_window_end).__name__}")
        is_async("stream_handler", on_window_end)  # a generator function is refused; an async def is awaited
    options = Options(json, log_event, log_result, logger, metrics, commit, model, checked_concurrency("stream_handler", max_concurrency))
    kinesis = get("kinesis")(
        json=json, on_failure=on_failure, max_attempts=max_attempts, dead_letter=dead_letter, on_window_end=on_window_end
    )
    adapters = [kinesis, get("dynamodb")(on_window_end=on_window_end)]
    marks = {
        "json": json, "on_failure": on_failure, "max_attempts": max_attempts, "commit": commit is not None,
        "on_window_end": on_window_end is not None, "model": model_name(model),
    }
    from .sources.window import guarded  # tumbling windows: loaded by stream_handler only (cold start)

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
    model: Any = None,
    max_concurrency: int = 1,
) -> Any:
    """Call ``fn(log_event, context)`` once per log event of a CloudWatch Logs subscription
    (``awslogs.data`` unpacked; control messages skipped). A failure is logged and, once every log
    event ran, the first is re-raised: Lambda retries the event, then its on-failure destination
    (or DLQ) keeps it. With ``model``, ``fn`` receives the log event (``id``, ``timestamp``,
    ``message``, ``json`` ...) validated into it. ``max_concurrency`` (an ``async def`` only): up
    to that many log events at once.
    """
    options = Options(True, log_event, log_result, logger, metrics, model=model,
                      max_concurrency=checked_concurrency("cloudwatch_logs_handler", max_concurrency))
    return batch_decorator("cloudwatch_logs_handler", fn, [get("cloudwatch_logs")()], options, {"model": model_name(model)})


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
    model: Any = None,
    max_concurrency: int = 1,
) -> Any:
    """Call ``fn(message, context)`` once per Kafka record (Amazon MSK or self-managed), in order
    within each topic-partition. ``message`` is a dict: ``topic``, ``partition``, ``offset``,
    ``timestamp``, ``timestamp_type``, ``key`` (bytes), ``value`` (JSON-decoded; bytes with
    ``json=False``), ``headers`` (name -> bytes).

    ``on_failure="raise"`` (default) stops at the first failure and raises it: Lambda retries the
    whole batch. ``"report"`` stops only the failed record's partition and returns the records not
    done as ``batchItemFailures`` ({"partition", "offset"}), which Lambda reads only with
    ``ReportBatchItemFailures`` on the event source mapping (provisioned mode).
    ``commit`` works as for ``sqs_handler``. With ``model``, the message's ``value`` is validated
    into it (the rest of the message stays). ``max_concurrency`` (an ``async def`` only): up to that
    many topic-partitions at once, each in order.
    """
    if on_failure not in KAFKA_ON_FAILURE:
        raise ValueError(f"kafka_handler: on_failure must be one of {KAFKA_ON_FAILURE}, not {on_failure!r}")
    options = Options(json, log_event, log_result, logger, metrics, commit, model, checked_concurrency("kafka_handler", max_concurrency))
    adapters = [get("kafka")(json=json, on_failure=on_failure)]
    marks = {"json": json, "on_failure": on_failure, "commit": commit is not None, "model": model_name(model)}
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
    model: Any = None,
) -> Any:
    """Call ``fn(request, context)`` once per HTTP request (API Gateway REST or HTTP API, Function
    URL, ALB). ``fn`` may be ``async def``.

    ``HTTPError(status, message)`` answers that status; any other exception answers 500 without
    its text. Every response carries the trace id in ``trace_header``; bodies larger than
    ``max_body`` bytes answer 413. Any event that is not an HTTP request is refused. With
    ``model``, ``request.model`` is the JSON body validated into it; a body that does not fit
    answers 422 naming the fields, without calling ``fn``.
    """
    from .loop.request import run_request

    options = Options(True, log_event, log_result, logger, metrics, model=model)
    adapters = [get("api")()]

    def decorate(function: F) -> F:
        is_async("api_handler", function)  # refuses generator functions; a coroutine is run by run_request

        def handler(event: Any, context: Any = None) -> Any:
            return run_request(adapters, function, options, trace_header, max_body, event, context)

        return marked("api_handler", adapters, {"trace_header": trace_header, "model": model_name(model)}, function, handler)  # type: ignore[no-any-return]

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
    model: Any = None,
) -> Any:
    """Call ``fn(detail, context)`` for an EventBridge event; a failure is logged and re-raised
    (EventBridge invokes asynchronously: Lambda retries, then the on-failure destination or DLQ).
    With ``model``, ``fn`` receives ``detail`` validated into it."""
    options = Options(True, log_event, log_result, logger, metrics, model=model)
    return batch_decorator("eventbridge_handler", fn, [get("eventbridge")()], options, {"model": model_name(model)})


def s3_handler(
    fn: F | None = None,
    /,
    *,
    log_event: bool = True,
    log_result: bool = True,
    logger: Any = None,
    metrics: bool | None = None,
    model: Any = None,
    max_concurrency: int = 1,
) -> Any:
    """Call ``fn(obj, context)`` once per object of an S3 event notification (an ``S3Object``),
    delivered directly, in SQS or SNS messages, or as an EventBridge ``Object Created`` /
    ``Object Deleted`` event. In SQS messages failures are reported per message
    (``batchItemFailures``); otherwise the invocation is asynchronous and a failure is raised.
    With ``model``, ``fn`` receives the object's fields (``bucket``, ``key``, ``size`` ...)
    validated into it. ``max_concurrency`` (an ``async def`` only): up to that many objects at once."""
    options = Options(True, log_event, log_result, logger, metrics, model=model, max_concurrency=checked_concurrency("s3_handler", max_concurrency))
    return batch_decorator("s3_handler", fn, [get("s3")()], options, {"model": model_name(model)})
