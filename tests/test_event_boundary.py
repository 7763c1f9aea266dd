"""Nothing is ever acknowledged unprocessed: what a decorator cannot process is refused.

Every decorator recognizes its own sources' events and refuses every other (``UnsupportedEvent``,
raised, so Lambda retries and the source's DLQ or on-failure destination keeps the event), with
one ERROR line saying what the event looks like and which decorator fits. A coroutine function is
run, never dropped; a generator function is refused. The cases come from the source registry, so a
source added later is checked against every decorator without touching this file.
"""

from __future__ import annotations

import asyncio
import functools
import json
import warnings

import pytest
from _hostile import DECORATORS
from _logs import of_level, read_lines, with_message

from lambda_kit import (
    UnsupportedEvent,
    api_handler,
    cloudwatch_logs_handler,
    current_trace_id,
    kafka_handler,
    log,
    sns_handler,
    sqs_handler,
    stream_handler,
)
from lambda_kit import sources as registry
from lambda_kit.errors import UndecodableRecord
from lambda_kit.testing import EXAMPLES, api_event, event, lambda_context, sqs_event

PAYLOADS = {"s3": "n/1.txt"}  # an S3 event's payload names an object; the others carry {"n": 1}

# Shapes of AWS events (from AWS's documented examples, trimmed) that no source may take for its own
# unless it is registered for them.
FOREIGN = {
    "an EventBridge event": {
        "version": "0",
        "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
        "detail-type": "EC2 Instance State-change Notification",
        "source": "aws.ec2",
        "account": "111122223333",
        "time": "2017-12-22T18:43:48Z",
        "region": "us-west-1",
        "resources": ["arn:aws:ec2:us-west-1:123456789012:instance/i-1234567890abcdef0"],
        "detail": {"instance-id": "i-1234567890abcdef0", "state": "terminated"},
    },
    "an EventBridge Pipes batch of SQS messages": [
        {
            "messageId": "059f36b4-87a3-44ab-83d2-661975830a7d",
            "receiptHandle": "AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a",
            "body": '{"url": "/a"}',
            "attributes": {"ApproximateReceiveCount": "1"},
            "messageAttributes": {},
            "md5OfBody": "e4e68fb7bd0e697a0ae8f1bb342846b3",
            "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:us-east-2:123456789012:my-queue",
            "awsRegion": "us-east-2",
        },
    ],
    "a Kafka event": {
        "eventSource": "aws:kafka",
        "eventSourceArn": "arn:aws:kafka:us-east-1:123456789012:cluster/vpc-2priv-2pub/751d2973",
        "bootstrapServers": "b-2.demo-cluster-1.a1bcde.c1.kafka.us-east-1.amazonaws.com:9092",
        "records": {
            "mytopic-0": [
                {
                    "topic": "mytopic",
                    "partition": 0,
                    "offset": 15,
                    "timestamp": 1545084650987,
                    "timestampType": "CREATE_TIME",
                    "key": "abcDEFghiJKLmnoPQRstuVWXyz1234==",
                    "value": "SGVsbG8sIHRoaXMgaXMgYSB0ZXN0Lg==",
                    "headers": [],
                }
            ]
        },
    },
    "an S3 notification": {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "awsRegion": "us-east-1",
                "eventTime": "2019-09-03T19:37:27.192Z",
                "eventName": "ObjectCreated:Put",
                "s3": {
                    "s3SchemaVersion": "1.0",
                    "bucket": {"name": "DOC-EXAMPLE-BUCKET"},
                    "object": {"key": "b21b84d653bb07b05b1e6b33684dc11b", "size": 1305107},
                },
            }
        ]
    },
    "a CloudWatch Logs subscription": {
        "awslogs": {"data": "H4sIAAAAAAAAAHWPwQqCMBiGX0V2ckhlVN5GwdQMT+rW3gDBQMlcBoaBDsmTNbHa"}
    },
    "a scheduled event": {
        "version": "0",
        "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "time": "2015-10-08T16:53:06Z",
        "detail": {},
    },
    "a direct invocation with a plain payload": {"url": "/a", "time": "2024-05-21T10:00:00Z"},
}


def sources_of(decorator: str) -> set[str]:
    return {source.name for source in registry.all_sources() if source.decorator == decorator}


def refusal(handler, event_, capfd) -> tuple[UnsupportedEvent, dict]:
    with pytest.raises(UnsupportedEvent) as refused:
        handler(event_, lambda_context())
    lines = read_lines(capfd)
    assert len(lines) == 1, lines
    return refused.value, lines[0]


def test_every_registered_source_names_its_decorator_and_has_an_example_event():
    for source in registry.all_sources():
        assert source.decorator in DECORATORS, source
        assert source.recognizes(event(source.name, PAYLOADS.get(source.name, {"n": 1}), trace_id="T"))
    assert set(EXAMPLES) == set(registry.NAMES)


@pytest.mark.parametrize("decorator", sorted(DECORATORS))
@pytest.mark.parametrize("source", registry.NAMES)
def test_each_decorator_takes_its_own_sources_and_refuses_every_other(decorator, source, capfd):
    calls = []
    handler = DECORATORS[decorator](lambda payload, context: calls.append(payload))
    example = event(source, PAYLOADS.get(source, {"n": 1}), trace_id="T-1")
    fits = registry.get(source).decorator
    if source in sources_of(decorator):
        handler(example, lambda_context())
        assert len(calls) == 1
        return
    error, line = refusal(handler, example, capfd)
    assert calls == []
    assert str(error) == f"{decorator} cannot process {registry.get(source).label}: use {fits}"
    assert (error.decorator, error.fits) == (decorator, fits)
    assert line["level"] == "ERROR" and line["message"] == "event not processed: unsupported event"
    assert (
        line["error_type"] == "UnsupportedEvent"
        and line["error"] == str(error)
        and line["decorator"] == decorator
    )
    # the event's shape, never its values (the DLQ holds the event itself)
    assert line["event_shape"] == log.clean(log.outline(example)) and "event" not in line
    assert "T-1" not in json.dumps(line)


@pytest.mark.parametrize("decorator", sorted(DECORATORS))
@pytest.mark.parametrize("shape", sorted(FOREIGN))
def test_shapes_no_decorator_is_registered_for_are_refused(decorator, shape, capfd):
    found, fits = registry.describe(FOREIGN[shape])
    calls = []
    handler = DECORATORS[decorator](lambda payload, context: calls.append(payload))
    if fits == decorator:  # its own shape now: taken, never refused (processed, or failed with its reason)
        try:
            handler(FOREIGN[shape], lambda_context())
        except UnsupportedEvent as error:
            raise AssertionError(f"{decorator} refused {found}, which it processes") from error
        except Exception:
            assert of_level(read_lines(capfd), "ERROR")
        return
    error, line = refusal(handler, FOREIGN[shape], capfd)
    assert calls == [] and line["error"] == str(error)
    assert str(error).startswith(f"{decorator} cannot process {found}: ")
    if fits is not None:
        assert str(error).endswith(f": use {fits}")


def test_a_cloudwatch_logs_subscription_is_taken_by_its_decorator_alone(capfd):
    """The sample above is cut short: cloudwatch_logs_handler fails it with its reason, raised for
    Lambda's retries (never acknowledged); every other decorator names the one that fits."""
    subscription = FOREIGN["a CloudWatch Logs subscription"]
    assert registry.describe(subscription) == (
        "a CloudWatch Logs subscription event",
        "cloudwatch_logs_handler",
    )
    with pytest.raises(UndecodableRecord, match="awslogs.data is not gzip data"):
        cloudwatch_logs_handler(lambda e, c: None)(subscription, lambda_context())
    [line] = read_lines(capfd)
    assert line["message"] == "record could not be decoded"


def test_a_pipes_batch_is_taken_by_its_decorator_and_named_in_the_others_refusal(capfd):
    batch = FOREIGN["an EventBridge Pipes batch of SQS messages"]
    calls = []
    assert sqs_handler(lambda m, c: calls.append(m))(batch, lambda_context()) == {"batchItemFailures": []}
    assert calls == [{"url": "/a"}]
    read_lines(capfd)
    error, _ = refusal(stream_handler(lambda p, c: None), batch, capfd)
    assert (
        str(error)
        == "stream_handler cannot process an EventBridge Pipes batch of SQS messages: use sqs_handler"
    )
    error, _ = refusal(sqs_handler(lambda m, c: None), [{"a": 1}], capfd)
    assert str(error) == (
        "sqs_handler cannot process a top-level list, as EventBridge Pipes sends: "
        "sqs_handler processes an SQS event"
    )


def test_the_kafka_event_is_taken_by_kafka_handler_alone(capfd):
    calls = []
    kafka_handler(json=False)(lambda m, c: calls.append(m["value"]))(
        FOREIGN["a Kafka event"], lambda_context()
    )
    assert calls == [b"Hello, this is a test."]
    read_lines(capfd)
    error, _ = refusal(sqs_handler(lambda m, c: None), FOREIGN["a Kafka event"], capfd)
    assert str(error) == "sqs_handler cannot process a Kafka event: use kafka_handler"


@pytest.mark.parametrize("shape", sorted(FOREIGN))
def test_api_handler_never_answers_an_event_that_is_not_an_http_request(shape, capfd):
    """It once made up a ``GET /`` for any event and answered 200."""
    handler = api_handler(lambda request, context: {"ok": True})
    error, line = refusal(handler, FOREIGN[shape], capfd)
    assert str(error).startswith("api_handler cannot process ")


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_api_handler_refuses_an_http_event_stripped_of_its_request_context(version, capfd):
    request = api_event("GET", "/a", version=version)
    del request["requestContext"]
    error, _ = refusal(api_handler(lambda request, context: {"ok": True}), request, capfd)
    assert "api_handler processes an HTTP request event" in str(error)


def test_refused_events_are_counted_as_failures_not_as_processed(capfd, monkeypatch):
    """With metrics on, a refusal is one failed record of source ``unsupported``."""
    sent = []
    from lambda_kit import metrics

    monkeypatch.setattr(metrics, "count", lambda *args: sent.append(args))
    handler = sqs_handler(metrics=True)(lambda m, c: None)
    with pytest.raises(UnsupportedEvent):
        handler({"detail-type": "x"}, lambda_context("fn-x"))
    assert sent == [("fn-x", "unsupported", metrics.Counts(failed=1, refused=1), {"datadog"})]


# --- async and generator functions ----------------------------------------------------------------


async def echo_async(payload, context):
    await asyncio.sleep(0)
    return {
        "trace_id": current_trace_id(),
        "payload": payload if not hasattr(payload, "method") else payload.method,
    }


async def stream_async(payload, context):
    yield payload


def stream_sync(payload, context):
    yield payload


@pytest.mark.parametrize("decorator", sorted(DECORATORS))
@pytest.mark.parametrize("source", registry.NAMES)
def test_an_async_function_runs_under_each_decorator_and_is_refused_the_others_events(
    decorator, source, capfd
):
    """An ``async def`` is awaited: it runs, in the record's trace scope, and its result is logged
    (it was once logged as a coroutine and its record acknowledged unprocessed)."""
    calls = []

    async def function(payload, context):
        await asyncio.sleep(0)
        calls.append(current_trace_id())
        return True if source == "authorizer" else {"done": True}  # an authorizer returns a decision

    handler = DECORATORS[decorator](function)
    example = event(source, PAYLOADS.get(source, {"n": 1}), trace_id="T-async")
    if source not in sources_of(decorator):
        refusal(handler, example, capfd)
        assert calls == []
        return
    handler(example, lambda_context())
    assert len(calls) == 1 and (calls[0] == "T-async" or source in ("api", "s3"))
    done = [
        line for line in read_lines(capfd) if line["message"] in ("record processed", "request processed")
    ]
    if source == "authorizer":
        assert [line["decision"] for line in done] == ["allow"]
        return
    assert [line["result"] for line in done] == [ASYNC_RESULTS.get(source, {"done": True})]


ASYNC_RESULTS = {
    "firehose": {"data": '{"done":true}', "partition_keys": None},  # the record's data, encoded
    "s3_batch": '{"done":true}',  # the task's result string
}


@pytest.mark.parametrize("decorator", sorted(DECORATORS))
@pytest.mark.parametrize("function", [stream_async, stream_sync], ids=["async generator", "generator"])
@pytest.mark.parametrize("form", ["bare", "called"])
def test_decorating_a_generator_function_fails_at_import_time(decorator, function, form):
    """Calling a generator function does not run its body: its records would pass unprocessed."""
    kind = "async generator" if function is stream_async else "generator"
    with pytest.raises(
        TypeError,
        match=rf"@{decorator} cannot wrap {kind} function '{function.__name__}'.*instead of yielding",
    ):
        if form == "bare":
            DECORATORS[decorator](function)
        else:
            DECORATORS[decorator]()(function)


def test_a_plain_function_that_returns_an_awaitable_has_it_run(capfd):
    """A plain def that returns a coroutine (a lambda over an async def, say): the coroutine is run
    to its end; one that raises fails its record alone."""

    async def work(message):
        await asyncio.sleep(0)
        if message.get("fail"):
            raise ValueError("no")
        return {"seen": message["n"], "trace_id": current_trace_id()}

    handler = sqs_handler(lambda message, context: work(message))
    batch = sqs_event({"n": 1}, {"n": 2, "fail": True}, {"n": 3}, trace_id="T-aw")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine was never awaited"
        response = handler(batch, lambda_context())
    failed = batch["Records"][1]["messageId"]
    assert response == {"batchItemFailures": [{"itemIdentifier": failed}]}
    lines = read_lines(capfd)
    assert [line["result"] for line in lines if line["message"] == "record processed"] == [
        {"seen": 1, "trace_id": "T-aw"},
        {"seen": 3, "trace_id": "T-aw"},
    ]
    [error] = of_level(lines, "ERROR")
    assert error["record_id"] == failed and error["error_type"] == "ValueError"


class AsyncCallable:
    async def __call__(self, payload, context):
        return payload

    async def method(self, payload, context):
        return payload


@pytest.mark.parametrize(
    "function",
    [
        functools.partial(echo_async),
        functools.partial(functools.partial(echo_async)),
        AsyncCallable(),
        AsyncCallable().method,
    ],
    ids=["partial", "partial of partial", "callable object", "bound method"],
)
def test_wrapped_async_functions_are_known_as_async(function, capfd):
    """They take the event loop's path, where max_concurrency is allowed."""
    handler = sqs_handler(max_concurrency=2)(function)
    assert handler(sqs_event({"n": 1}, {"n": 2}), lambda_context()) == {"batchItemFailures": []}
    assert len(with_message(read_lines(capfd), "record processed")) == 2


@pytest.mark.parametrize(
    "function", [functools.partial(stream_async), functools.partial(stream_sync)], ids=["async", "plain"]
)
def test_wrapped_generator_functions_are_refused(function):
    with pytest.raises(TypeError, match="generator function"):
        sns_handler(function)


def test_plain_callables_are_not_mistaken_for_async():
    class Plain:
        def __call__(self, payload, context):
            return payload

    for function in (Plain(), functools.partial(lambda p, c: p), print, len):
        sns_handler(function)
        with pytest.raises(TypeError, match="needs an async def function"):
            sqs_handler(max_concurrency=2)(function)


def test_a_lambda_returning_a_coroutine_that_fails_raises_for_sns(capfd):
    async def fail(message, context):
        raise LookupError("gone")

    handler = sns_handler(lambda message, context: fail(message, context))
    with pytest.raises(LookupError, match="gone"):
        handler(event("sns", {"n": 1}), lambda_context())


def test_an_api_function_returning_an_awaitable_answers_with_its_result(capfd):
    async def answer():
        await asyncio.sleep(0)
        return {"ok": current_trace_id()}

    handler = api_handler(lambda request, context: answer())
    response = handler(api_event("GET", "/a", headers={"X-Trace-Id": "T-api"}), lambda_context())
    assert response["statusCode"] == 200 and json.loads(response["body"]) == {"ok": "T-api"}


# --- where async cannot run, it fails loudly -------------------------------------------------------


def test_an_async_handler_called_inside_a_running_loop_raises_before_any_record_runs(capfd):
    """Nothing is acknowledged: the invocation raises, Lambda retries the whole batch."""
    calls = []

    @sqs_handler
    async def handler(message, context):
        calls.append(message)

    async def caller():
        return handler(sqs_event({"n": 1}), lambda_context())

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeError, match="called from inside a running event loop"):
            asyncio.run(caller())
    assert calls == []


def test_a_returned_coroutine_inside_a_running_loop_fails_its_record(capfd):
    handler = sqs_handler(lambda message, context: echo_async(message, context))

    async def caller():
        return handler(sqs_event({"n": 1}), lambda_context())

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        response = asyncio.run(caller())
    assert len(response["batchItemFailures"]) == 1
    [error] = of_level(read_lines(capfd), "ERROR")
    assert error["error_type"] == "LoopAlreadyRunning"


def test_an_async_api_function_inside_a_running_loop_answers_500(capfd):
    handler = api_handler(echo_async)

    async def caller():
        return handler(api_event("GET", "/a"), lambda_context())

    assert asyncio.run(caller())["statusCode"] == 500
