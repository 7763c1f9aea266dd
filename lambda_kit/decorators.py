"""One decorator per event source: source adapters from the registry, bound to the record path.

Each works bare (``@sqs_handler``) and with options (``@sqs_handler(json=False)``), keeps the
function's metadata, and returns a plain Lambda handler ``(event, context)``. The decorated
function carries ``__lambda_kit__`` (its decorator, sources and options) for ``lambda-kit check``.
An event none of the decorator's sources recognizes is refused with ``UnsupportedEvent``.
Everything is checked here, when the function is decorated (a bad option, a generator function, a
``model=`` pydantic cannot build), so a mistake stops the deploy instead of failing every record.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from types import CodeType, FunctionType, MethodType
from typing import TYPE_CHECKING, Any, TypeVar, Unpack, cast

from .loop.batch import run_batch
from .loop.options import BatchOptions, Commit, HandlerOptions, Options
from .loop.path import Function, RecordPath
from .sources import get
from .sources.base import Source

if TYPE_CHECKING:
    from .context import LambdaContext
    from .sources.api import ApiSource
    from .sources.dynamodb import DynamoDBSource
    from .sources.kafka import KafkaSource
    from .sources.kinesis import KinesisSource
    from .sources.sns import SnsSource
    from .sources.sqs import SqsSource
    from .sources.window import Window

F = TypeVar("F", bound=Callable[..., Any])
Wrap = Callable[[Function, bool], Function]
Handler = Callable[[object, "LambdaContext | None"], object]
"""A Lambda handler, ``(event, context)``: what every decorator returns."""
Run = Callable[[Function, object, "LambdaContext | None"], object]
"""One request's invocation, ``run(function, event, context)``."""


CO_GENERATOR, CO_COROUTINE, CO_ASYNC_GENERATOR = 0x20, 0x80, 0x200
"""The code flags ``inspect.isgeneratorfunction``, ``iscoroutinefunction`` and ``isasyncgenfunction``
read (``inspect.CO_*``, documented): read here directly, as importing ``inspect`` (with ``ast`` and
``dis``) would cost every function's cold start about 6 ms."""


def code_flags(function: object) -> int:
    """The code flags of what runs when ``function`` is called: itself (through ``functools.partial``
    and bound methods, as ``inspect`` unwraps them), or a callable object's ``__call__``."""
    while isinstance(function, functools.partial):
        function = function.func
    if not isinstance(function, FunctionType | MethodType) and callable(function):
        function = type(function).__call__
    function = getattr(function, "__func__", function)
    code = getattr(function, "__code__", None)
    return code.co_flags if isinstance(code, CodeType) else 0


def is_async(decorator: str, function: object) -> bool:
    """Whether ``function`` is an ``async def`` (its records run on the event loop). A generator
    function (plain or async) is refused: calling one does not run its body, so its records would
    be acknowledged unprocessed."""
    flags = code_flags(function)
    if flags & (CO_GENERATOR | CO_ASYNC_GENERATOR):
        kind = "async generator" if flags & CO_ASYNC_GENERATOR else "generator"
        raise TypeError(
            f"@{decorator} cannot wrap {kind} function {getattr(function, '__qualname__', function)!r}: "
            "calling it does not run its body; return a value instead of yielding"
        )
    return bool(flags & CO_COROUTINE)


def path_for(options: Options, function: object) -> type[RecordPath]:
    """The record path that runs ``function``: one record at a time for a plain def, on the event
    loop for an ``async def``. ``max_concurrency`` above 1 needs an ``async def`` (a plain function
    runs one record at a time: no threads behind the user's back)."""
    name = getattr(function, "__qualname__", function)
    if not is_async(options.decorator, function):
        if options.max_concurrency > 1:
            raise TypeError(
                f"@{options.decorator}(max_concurrency={options.max_concurrency}) needs an async def "
                f"function; {name!r} is a plain function, which runs one record at a time: make it "
                "async def (blocking calls can run in threads with await asyncio.to_thread(...)), "
                "or drop max_concurrency"
            )
        return RecordPath
    if (
        options.max_concurrency > 1
        and options.logger is not None
        and not hasattr(options.logger, "thread_safe_append_keys")
    ):
        raise TypeError(
            f"@{options.decorator}(max_concurrency={options.max_concurrency}): logger= needs Powertools 3 "
            "(Logger.thread_safe_append_keys), so each record running at once logs its own correlation id"
        )
    from .loop.concurrent import AsyncRecordPath  # asyncio costs 30+ ms to import: only for async def

    return AsyncRecordPath


def marked(
    handler: Handler, function: Callable[..., object], options: Options, adapters: Sequence[Source],
    **marks: object,
) -> Any:
    """``handler`` with ``function``'s metadata and the ``__lambda_kit__`` marks ``check`` reads."""
    functools.update_wrapper(handler, function)
    handler.__lambda_kit__ = {**options.marks(), "sources": [adapter.name for adapter in adapters], **marks}
    return handler


def batch_decorator(
    fn: F | None, options: Options, adapters: Sequence[Source], wrap: Wrap | None = None, **marks: Any
) -> Any:
    """``wrap``, when given, wraps the function for the record path (a tumbling window's state);
    it is told whether the function is ``async def``. ``marks``: the source's own options, for
    ``check``."""

    def decorate(function: F) -> F:
        path = path_for(options, function)
        call: Function = function if wrap is None else wrap(function, path is not RecordPath)

        def handler(event: object, context: LambdaContext | None = None) -> Any:
            return run_batch(path, adapters, call, options, event, context)

        return marked(handler, function, options, adapters, **marks)  # type: ignore[no-any-return]

    return decorate if fn is None else decorate(fn)


def sqs_handler(
    fn: F | None = None,
    /,
    *,
    json: bool = True,
    commit: Commit | None = None,
    **options: Unpack[BatchOptions],
) -> Any:
    """Call ``fn(message, context)`` once per SQS record; report failures as ``batchItemFailures``.

    ``commit``, when given, is called once after every record ran, with ``(record, returned
    value)`` for each record the function accepted: the place to write a whole batch at once
    (e.g. ``Counter.increment_many``). If it raises, those records fail; if it returns records
    (or record ids), just those fail. It may be ``async def``.

    ``model`` (a pydantic model, a dataclass or a TypedDict): ``fn`` receives the message
    validated into it; a message that does not fit fails alone (``InvalidPayload``) without
    reaching ``fn``. ``max_concurrency`` (an ``async def`` only): up to that many messages at once;
    on a FIFO queue each message group stays in order. The other options: ``HandlerOptions``.
    """
    checked = Options("sqs_handler", json=json, commit=commit, **options)
    return batch_decorator(fn, checked, [cast("type[SqsSource]", get("sqs"))(json=json)])


def sns_handler(fn: F | None = None, /, *, json: bool = True, **options: Unpack[HandlerOptions]) -> Any:
    """Call ``fn(message, context)`` once per SNS record; a failure is logged and re-raised.
    ``model`` works as for ``sqs_handler``."""
    return batch_decorator(
        fn, Options("sns_handler", json=json, **options), [cast("type[SnsSource]", get("sns"))(json=json)]
    )


ON_FAILURE = ("stop", "requeue")


def _check_stream_options(on_failure: str, max_attempts: int, on_window_end: object) -> None:
    if on_failure not in ON_FAILURE:
        raise ValueError(f"stream_handler: on_failure must be one of {ON_FAILURE}, not {on_failure!r}")
    if type(max_attempts) is not int or max_attempts < 1:
        raise ValueError(
            f"stream_handler: max_attempts must be a whole number of at least 1, not {max_attempts!r}"
        )
    if on_window_end is not None:
        if not callable(on_window_end):
            raise TypeError(
                "stream_handler: on_window_end must be a function of the window, not "
                f"{type(on_window_end).__name__}"
            )
        # a generator function is refused; an async def is awaited
        is_async("stream_handler", on_window_end)


def stream_handler(
    fn: F | None = None,
    /,
    *,
    json: bool = True,
    commit: Commit | None = None,
    on_failure: str = "stop",
    max_attempts: int = 3,
    dead_letter: str | Callable[[], str | None] | None = None,
    on_window_end: Callable[[Window], Any] | None = None,
    **options: Unpack[BatchOptions],
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
    _check_stream_options(on_failure, max_attempts, on_window_end)
    checked = Options("stream_handler", json=json, commit=commit, **options)
    kinesis = cast("type[KinesisSource]", get("kinesis"))(
        json=json,
        on_failure=on_failure,
        max_attempts=max_attempts,
        dead_letter=dead_letter,
        on_window_end=on_window_end,
    )
    return batch_decorator(
        fn,
        checked,
        [kinesis, cast("type[DynamoDBSource]", get("dynamodb"))(on_window_end=on_window_end)],
        wrap=kinesis.wrap,  # a tumbling window's state
        on_failure=on_failure,
        max_attempts=max_attempts,
        on_window_end=on_window_end is not None,
    )


def cloudwatch_logs_handler(fn: F | None = None, /, **options: Unpack[BatchOptions]) -> Any:
    """Call ``fn(log_event, context)`` once per log event of a CloudWatch Logs subscription
    (``awslogs.data`` unpacked; control messages skipped). A failure is logged and, once every log
    event ran, the first is re-raised: Lambda retries the event, then its on-failure destination
    (or DLQ) keeps it. With ``model``, ``fn`` receives the log event (``id``, ``timestamp``,
    ``message``, ``json`` ...) validated into it. ``max_concurrency`` (an ``async def`` only): up
    to that many log events at once.
    """
    return batch_decorator(fn, Options("cloudwatch_logs_handler", **options), [get("cloudwatch_logs")()])


KAFKA_ON_FAILURE = ("raise", "report")


def kafka_handler(
    fn: F | None = None,
    /,
    *,
    json: bool = True,
    commit: Commit | None = None,
    on_failure: str = "raise",
    **options: Unpack[BatchOptions],
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
    checked = Options("kafka_handler", json=json, commit=commit, **options)
    adapters = [cast("type[KafkaSource]", get("kafka"))(json=json, on_failure=on_failure)]
    return batch_decorator(fn, checked, adapters, on_failure=on_failure)


def eventbridge_handler(fn: F | None = None, /, **options: Unpack[HandlerOptions]) -> Any:
    """Call ``fn(detail, context)`` for an EventBridge event; a failure is logged and re-raised
    (EventBridge invokes asynchronously: Lambda retries, then the on-failure destination or DLQ).
    With ``model``, ``fn`` receives ``detail`` validated into it."""
    return batch_decorator(fn, Options("eventbridge_handler", **options), [get("eventbridge")()])


def s3_handler(fn: F | None = None, /, **options: Unpack[BatchOptions]) -> Any:
    """Call ``fn(obj, context)`` once per object of an S3 event notification (an ``S3Object``),
    delivered directly, in SQS or SNS messages, or as an EventBridge ``Object Created`` /
    ``Object Deleted`` event. In SQS messages failures are reported per message
    (``batchItemFailures``); otherwise the invocation is asynchronous and a failure is raised.
    With ``model``, ``fn`` receives the object's fields (``bucket``, ``key``, ``size`` ...)
    validated into it. ``max_concurrency`` (an ``async def`` only): up to that many objects at once."""
    return batch_decorator(fn, Options("s3_handler", **options), [get("s3")()])


DEFAULT_MAX_BODY = 1024 * 1024


def api_handler(
    fn: F | None = None,
    /,
    *,
    trace_header: str = "X-Trace-Id",
    max_body: int | None = DEFAULT_MAX_BODY,
    **options: Unpack[HandlerOptions],
) -> Any:
    """Call ``fn(request, context)`` once per HTTP request (API Gateway REST or HTTP API, Function
    URL, ALB). ``fn`` may be ``async def``.

    ``HTTPError(status, message)`` answers that status; any other exception answers 500 without
    its text. Every response carries the trace id in ``trace_header``; bodies larger than
    ``max_body`` bytes answer 413. Any event that is not an HTTP request is refused. With
    ``model``, ``request.model`` is the JSON body validated into it; a body that does not fit
    answers 422 naming the fields, without calling ``fn``.
    """
    from .sources.api.path import request_runner  # the HTTP package: loaded only for an api_handler

    checked = Options("api_handler", **options)
    adapters = [cast("type[ApiSource]", get("api"))()]
    run = request_runner(adapters, checked, trace_header, max_body)
    return request_decorator(fn, checked, adapters, run, trace_header=trace_header)


def request_decorator(
    fn: F | None, options: Options, adapters: Sequence[Source], run: Run, **marks: Any
) -> Any:
    """A decorator of a source with one request per invocation (HTTP, authorizers, WebSocket
    routes): ``run(function, event, context)`` is the invocation; ``marks``, the source's own
    options, for ``check``. A coroutine function's coroutine is awaited on the path."""

    def decorate(function: F) -> F:
        is_async(options.decorator, function)  # refuses generator functions

        def handler(event: object, context: LambdaContext | None = None) -> Any:
            return run(function, event, context)

        return marked(handler, function, options, adapters, **marks)  # type: ignore[no-any-return]

    return decorate if fn is None else decorate(fn)


def authorizer_handler(
    fn: F | None = None,
    /,
    *,
    simple_responses: bool = False,
    trace_header: str = "X-Trace-Id",
    **options: Unpack[HandlerOptions],
) -> Any:
    """Call ``fn(request, context)`` once per authorization request of an API Gateway Lambda
    authorizer (REST ``TOKEN`` or ``REQUEST``, WebSocket ``$connect``, HTTP API payload 1.0 or
    2.0); ``request`` is an ``AuthorizerRequest``.

    ``fn`` returns ``Allow(principal_id, context=..., resources=...)`` or ``True``, ``Deny()`` or
    ``False``, or the answer as a dict (checked), or raises ``Unauthorized`` (401 on a REST or
    WebSocket API). Anything else — an exception, ``None``, a malformed policy, a ``context``
    value that is not a string, number or boolean — is a deny with an ERROR line, never an allow.
    ``simple_responses=True`` answers an HTTP API 2.0 request with ``{"isAuthorized": ...}`` (the
    authorizer's ``enableSimpleResponses``); otherwise every answer is an IAM policy. The trace id
    comes from ``trace_header``, then a tracer's context in the request's headers. With
    ``model``, ``request.model`` is the event validated into it (a mismatch denies).
    """
    from .sources.authorizer.path import run_authorization  # loaded only for an authorizer_handler

    checked = Options("authorizer_handler", **options)
    adapters = [get("authorizer")()]

    def run(function: Function, event: object, context: LambdaContext | None) -> object:
        return run_authorization(adapters, function, checked, trace_header, simple_responses, event, context)

    return request_decorator(
        fn, checked, adapters, run, trace_header=trace_header, simple_responses=simple_responses
    )


def websocket_handler(
    fn: F | None = None, /, *, trace_header: str = "X-Trace-Id", **options: Unpack[HandlerOptions]
) -> Any:
    """Call ``fn(message, context)`` once per event of an API Gateway WebSocket API route
    (``$connect``, ``$disconnect``, ``$default``, custom route keys); ``message`` is a
    ``WebSocketMessage`` (``message.reply(data)``, ``message.send(connection_id, data)``:
    ``post_to_connection`` through a client carrying the trace id). ``fn`` may be a
    ``WebSocketRouter`` (one function per route key) or ``async def``.

    What ``fn`` returns is the route's integration response (``None``: 200; a dict with
    ``statusCode`` as it is; anything else a 200 body). ``HTTPError(status, message)`` answers that
    status (on ``$connect``: the connection is refused); any other exception a 500 without its
    text. With ``model``, ``message.model`` is the JSON body validated into it (422 when it does
    not fit).
    """
    from .sources.websocket.path import run_route  # loaded only for a websocket_handler

    checked = Options("websocket_handler", **options)
    adapters = [get("websocket")()]

    def run(function: Function, event: object, context: LambdaContext | None) -> object:
        return run_route(adapters, function, checked, trace_header, event, context)

    return request_decorator(fn, checked, adapters, run, trace_header=trace_header)


def firehose_handler(fn: F | None = None, /, *, json: bool = True, **options: Unpack[BatchOptions]) -> Any:
    """Call ``fn(data, context)`` once per record of an Amazon Data Firehose transformation (the
    data JSON-decoded, or with ``json=False`` the bytes) and answer Firehose with every record.

    ``fn`` returns the transformed data (bytes, text, or a value sent as JSON),
    ``Transformed(data, partition_keys={...})`` for dynamic partitioning, or ``DROP`` to drop the
    record. A record that raises (or returns ``None``) is ``ProcessingFailed`` and the others go
    through; a response over Lambda's 6 MB sends its last records back ``ProcessingFailed``, each
    with an ERROR line. With ``model``, ``fn`` receives the data validated into it.
    ``max_concurrency`` (an ``async def`` only): up to that many records at once.
    """
    firehose = get("firehose")(json=json)
    checked = Options("firehose_handler", json=json, **options)
    return batch_decorator(fn, checked, [firehose], wrap=firehose.wrap)


def s3_batch_handler(
    fn: F | None = None,
    /,
    *,
    treat_missing_keys_as: str = "PermanentFailure",
    **options: Unpack[HandlerOptions],
) -> Any:
    """Call ``fn(task, context)`` for the task of an S3 Batch Operations ``LambdaInvoke`` job
    (schema 1.0 or 2.0); ``task`` is an ``S3BatchTask`` (``bucket``, ``key`` URL-decoded,
    ``version_id``, ``user_arguments`` ...). What ``fn`` returns is the task's ``resultString``
    (``Succeeded``). Raising ``TemporaryFailure``, or an error AWS documents as retryable
    (throttling, ``RequestTimeout``, 503 ...), answers ``TemporaryFailure`` (S3 redrives the task);
    any other exception ``PermanentFailure``. ``treat_missing_keys_as`` goes back in the response.
    With ``model``, ``fn`` receives the task's fields validated into it.
    """
    s3_batch = get("s3_batch")(treat_missing_keys_as=treat_missing_keys_as)
    checked = Options("s3_batch_handler", **options)
    return batch_decorator(
        fn, checked, [s3_batch], wrap=s3_batch.wrap, treat_missing_keys_as=treat_missing_keys_as
    )
