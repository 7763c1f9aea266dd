"""A trace id nested 5,000 levels deep, in every place a producer can put one, for every decorator.

``repr`` and ``ascii`` of such a value raise ``RecursionError``; they once did, out of the whole
invocation, with no ERROR line naming the record (a Kinesis shard held back on every retry). Now
the value is read type first and shown boundedly: the record it came in runs with its fallback
trace id and one WARNING line (or, where the value cannot be read at all, fails alone with its
ERROR line), and the other records of the batch run as if nothing happened.

Two kinds of place: the event's own structure (a message attribute, an event id: a value of any
shape when the event is built by hand), and JSON text a producer wrote (a Kinesis payload, an SQS
body holding an SNS envelope, a CloudWatch Logs line, an S3 notification in a message). In text,
5,000 levels are refused by every JSON codec: the record fails alone; 990 levels (what the attack
sent) are read by orjson and ujson, and the trace id is then rejected like any other, while the
standard library's decoder (the codec's for some texts) may refuse them for its recursion limit: the
record then fails alone.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from typing import Any

import pytest
from _hostile import CODECS, captured, of_level, parse_lines, using_codec
from hypothesis import given, settings
from hypothesis import strategies as st

from lambda_kit import (
    cloudwatch_logs_handler,
    current_record,
    current_trace_id,
    eventbridge_handler,
    kafka_handler,
    s3_handler,
    sns_handler,
    sqs_handler,
    stream_handler,
)
from lambda_kit.errors import UndecodableRecord
from lambda_kit.testing import (
    awslogs_data,
    dynamodb_record,
    eventbridge_event,
    kafka_event,
    kinesis_record,
    lambda_context,
    log_line,
    log_subscription_message,
    s3_eventbridge_event,
    s3_notification,
    sns_envelope,
    sns_event,
    sqs_record,
)
from lambda_kit.trace import is_valid_id, stable_id

DEPTH = 5_000
NEAR_LIMIT = (
    990  # JSON text orjson and ujson read (they stop at 1024); the standard library, as its stack allows
)
MAX_SHOWN = 300  # a rejected value is shown in at most 256 characters (quotes and escapes aside)


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def nested_text(depth: int) -> str:
    """JSON text of ``nested(depth)`` (``json.dumps`` itself cannot write it)."""
    return "[" * depth + '"x"' + "]" * depth


def json_with(**fields: str) -> str:
    """A JSON object whose values are JSON texts given as they are."""
    return "{" + ", ".join(f"{json.dumps(name)}: {text}" for name, text in fields.items()) + "}"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def attribute(value: Any) -> dict[str, Any]:
    return {"stringValue": value, "dataType": "String"}


class Recorder:
    """Stands for the user's function: notes the id and trace id of each record it is called for."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, str | None]] = []

    def __call__(self, payload: Any, context: Any) -> None:
        self.calls.append((current_record().id, current_trace_id()))


class AsyncRecorder(Recorder):
    async def __call__(self, payload: Any, context: Any) -> None:  # type: ignore[override]
        super().__call__(payload, context)


# --- the events: (decorator, event, the id of an ordinary record beside the hostile one) ------------
# In a batch the hostile record comes first; on an ordered source (Kinesis, DynamoDB Streams, Kafka)
# last, since a failure there holds the later records back by design (Lambda retries them in order).

Built = tuple[Callable[..., Any], Any, Any]
Change = Callable[[dict[str, Any]], None]


def set_in(path: tuple[str, ...], value: Any) -> Change:
    def change(target: dict[str, Any]) -> None:
        for key in path[:-1]:
            target = target.setdefault(key, {})
        target[path[-1]] = value

    return change


def without(path: tuple[str, ...]) -> Change:
    def change(target: dict[str, Any]) -> None:
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return change


def sqs_with(change: Change) -> dict[str, Any]:
    hostile = sqs_record({"n": 1})
    change(hostile)
    return {"Records": [hostile, sqs_record({"n": 2}, message_id="good")]}


def sns_with(change: Change) -> dict[str, Any]:
    event = sns_event({"n": 1}, {"n": 2})
    change(event["Records"][0]["Sns"])
    event["Records"][1]["Sns"]["MessageId"] = "good"
    return event


def kinesis_with(change: Change) -> dict[str, Any]:
    hostile = kinesis_record({"n": 1})
    change(hostile)
    return {"Records": [kinesis_record({"n": 2}, sequence_number="good"), hostile]}


def dynamodb_with(change: Change) -> dict[str, Any]:
    hostile = dynamodb_record("INSERT", new_image={"PK": "a", "SK": "1"})
    change(hostile)
    return {
        "Records": [
            dynamodb_record("INSERT", new_image={"PK": "b", "SK": "2"}, sequence_number="good"),
            hostile,
        ]
    }


def kafka_with(headers: Any) -> dict[str, Any]:
    event = kafka_event({"n": 1}, {"n": 2})
    good, hostile = event["records"]["orders-0"]
    good["offset"], hostile["offset"], hostile["headers"] = 1, 2, headers
    return event


def s3_with(change: Change) -> dict[str, Any]:
    event = s3_notification("hostile.txt", "good.txt")
    change(event["Records"][0])
    event["Records"][1]["responseElements"]["x-amz-request-id"] = "good"
    return event


def eventbridge_with(change: Change) -> dict[str, Any]:
    event = eventbridge_event({"n": 1})
    change(event)
    return event


def s3_eventbridge_with(change: Change) -> dict[str, Any]:
    event = s3_eventbridge_event("hostile.txt")
    change(event)
    return event


def dynamodb_list(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"S": "x"}
    for _ in range(depth):
        value = {"L": [value]}
    return value


def both(*changes: Change) -> Change:
    def change(target: dict[str, Any]) -> None:
        for each in changes:
            each(target)

    return change


# Places in the event's own structure: (id, build(deep value), the hostile record runs or fails,
# it gets a WARNING line)
STRUCTURE: list[tuple[str, Callable[[Any], Built], str, bool]] = [
    (
        "sqs trace_id attribute",
        lambda d: (sqs_handler, sqs_with(set_in(("messageAttributes", "trace_id"), attribute(d))), "good"),
        "runs",
        True,
    ),
    (
        "sqs traceparent attribute",
        lambda d: (sqs_handler, sqs_with(set_in(("messageAttributes", "traceparent"), attribute(d))), "good"),
        "runs",
        True,
    ),
    (
        "sqs _datadog attribute",
        lambda d: (sqs_handler, sqs_with(set_in(("messageAttributes", "_datadog"), attribute(d))), "good"),
        "runs",
        True,
    ),
    (
        "sqs x-datadog attributes",
        lambda d: (
            sqs_handler,
            sqs_with(set_in(("messageAttributes", "x-datadog-trace-id"), attribute(d))),
            "good",
        ),
        "runs",
        True,
    ),
    (
        "sqs AWSTraceHeader",
        lambda d: (sqs_handler, sqs_with(set_in(("attributes", "AWSTraceHeader"), d)), "good"),
        "runs",
        True,
    ),
    (
        "sqs MessageGroupId",
        lambda d: (sqs_handler, sqs_with(set_in(("attributes", "MessageGroupId"), d)), "good"),
        "runs",
        False,
    ),
    ("sqs messageId", lambda d: (sqs_handler, sqs_with(set_in(("messageId",), d)), "good"), "fails", False),
    (
        "sqs a Pipes batch",
        lambda d: (
            sqs_handler,
            sqs_with(set_in(("messageAttributes", "trace_id"), attribute(d)))["Records"],
            "good",
        ),
        "runs",
        True,
    ),
    (
        "sns trace_id attribute",
        lambda d: (
            sns_handler,
            sns_with(set_in(("MessageAttributes", "trace_id"), {"Type": "String", "Value": d})),
            "good",
        ),
        "runs",
        True,
    ),
    (
        "sns traceparent attribute",
        lambda d: (
            sns_handler,
            sns_with(set_in(("MessageAttributes", "traceparent"), {"Type": "String", "Value": d})),
            "good",
        ),
        "runs",
        True,
    ),
    ("sns Subject", lambda d: (sns_handler, sns_with(set_in(("Subject",), d)), "good"), "runs", False),
    ("sns MessageId", lambda d: (sns_handler, sns_with(set_in(("MessageId",), d)), "good"), "fails", False),
    (
        "kinesis eventID",
        lambda d: (stream_handler, kinesis_with(set_in(("eventID",), d)), "good"),
        "runs",
        False,
    ),
    (
        "kinesis partitionKey",
        lambda d: (stream_handler, kinesis_with(set_in(("kinesis", "partitionKey"), d)), "good"),
        "runs",
        False,
    ),
    (
        "kinesis data",
        lambda d: (stream_handler, kinesis_with(set_in(("kinesis", "data"), d)), "good"),
        "fails",
        False,
    ),
    (
        "dynamodb trace_id attribute",
        lambda d: (
            stream_handler,
            dynamodb_with(set_in(("dynamodb", "NewImage", "trace_id"), dynamodb_list(DEPTH))),
            "good",
        ),
        "fails",
        False,
    ),
    (
        "dynamodb Keys",
        lambda d: (stream_handler, dynamodb_with(set_in(("dynamodb", "Keys", "PK"), {"S": d})), "good"),
        "runs",
        False,
    ),
    (
        "dynamodb eventID",
        lambda d: (stream_handler, dynamodb_with(set_in(("eventID",), d)), "good"),
        "runs",
        False,
    ),
    (
        "kafka trace_id header",
        lambda d: (kafka_handler(on_failure="report"), kafka_with([{"trace_id": d}]), "orders-0:1"),
        "fails",
        False,
    ),
    (
        "kafka headers",
        lambda d: (kafka_handler(on_failure="report"), kafka_with(d), "orders-0:1"),
        "fails",
        False,
    ),
    (
        "eventbridge detail.trace_id",
        lambda d: (eventbridge_handler, eventbridge_with(set_in(("detail", "trace_id"), d)), None),
        "runs",
        True,
    ),
    (
        "eventbridge detail.traceparent",
        lambda d: (eventbridge_handler, eventbridge_with(set_in(("detail", "traceparent"), d)), None),
        "runs",
        True,
    ),
    (
        "eventbridge detail._datadog",
        lambda d: (eventbridge_handler, eventbridge_with(set_in(("detail", "_datadog"), d)), None),
        "runs",
        True,
    ),
    (
        "eventbridge id",
        lambda d: (eventbridge_handler, eventbridge_with(set_in(("id",), d)), None),
        "fails",
        False,
    ),
    (
        "s3 request id",
        lambda d: (s3_handler, s3_with(set_in(("responseElements", "x-amz-request-id"), d)), "good"),
        "runs",
        True,
    ),
    (
        "s3 sequencer, no request id",
        lambda d: (
            s3_handler,
            s3_with(
                both(
                    without(("responseElements", "x-amz-request-id")),
                    set_in(("s3", "object", "sequencer"), d),
                )
            ),
            "good",
        ),
        "runs",
        False,
    ),
    (
        "s3 eventbridge request-id",
        lambda d: (s3_handler, s3_eventbridge_with(set_in(("detail", "request-id"), d)), None),
        "runs",
        True,
    ),
]


def sqs_body(text: str) -> dict[str, Any]:
    """An SQS message with body ``text``, then an ordinary one."""
    return {"Records": [{**sqs_record({}), "body": text}, sqs_record({"n": 2}, message_id="good")]}


def envelope_with(attributes: str) -> str:
    """An SNS envelope (as SNS writes it into an SQS body) whose ``MessageAttributes`` are ``attributes``."""
    return sns_envelope({"n": 1})[:-1] + f', "MessageAttributes": {attributes}}}'


def s3_with_request_id(text: str) -> str:
    """An S3 notification whose request id is the JSON text ``text``."""
    notification = json.dumps(s3_notification("hostile.txt"))
    start = notification.index('"x-amz-request-id": ') + len('"x-amz-request-id": ')
    return notification[:start] + text + notification[notification.index(",", start) :]


def log_lines_with(text: str) -> list[str]:
    """A lambda_kit log line whose trace id is the JSON text ``text``, then an ordinary one."""
    return [log_line("hostile")[:-1] + f', "trace_id": {text}}}', log_line("ordinary", trace_id="good-trace")]


def cloudwatch_logs_with(text: str) -> dict[str, Any]:
    message = log_subscription_message(*log_lines_with(text))
    message["logEvents"][1]["id"] = "good"
    return {"awslogs": {"data": awslogs_data(message)}}


def kinesis_data(text: str) -> dict[str, Any]:
    return kinesis_with(set_in(("kinesis", "data"), text))


REQUEUED = json.dumps(b64('{"trace_id": "first-try"}'))

# Places in JSON a producer wrote: (id, build(JSON text of the value), a WARNING line when read)
TEXT: list[tuple[str, Callable[[str], Built], bool]] = [
    (
        "kinesis payload trace_id",
        lambda t: (stream_handler, kinesis_data(b64(json_with(trace_id=t, n="1"))), "good"),
        True,
    ),
    (
        "kinesis payload traceparent",
        lambda t: (stream_handler, kinesis_data(b64(json_with(traceparent=t))), "good"),
        True,
    ),
    (
        "kinesis payload _datadog",
        lambda t: (stream_handler, kinesis_data(b64(json_with(_datadog=t))), "good"),
        True,
    ),
    (
        "kinesis json=False payload",
        lambda t: (stream_handler(json=False), kinesis_data(b64(json_with(trace_id=t))), "good"),
        True,
    ),
    # lambda_kit's own envelope: an invalid first-try trace id there is passed over without a word
    (
        "kinesis requeued record",
        lambda t: (
            stream_handler,
            kinesis_data(b64(json_with(trace_id=t, lambda_kit_requeue='{"attempt": 1}', data=REQUEUED))),
            "good",
        ),
        False,
    ),
    (
        "kinesis CloudWatch Logs line",
        lambda t: (
            stream_handler,
            {
                "Records": [
                    kinesis_record({"n": 2}, sequence_number="good"),
                    kinesis_record(None, raw_data=awslogs_data(log_subscription_message(*log_lines_with(t)))),
                ]
            },
            "good",
        ),
        True,
    ),
    (
        "sqs SNS envelope trace_id",
        lambda t: (
            sqs_handler,
            sqs_body(envelope_with(json_with(trace_id=json_with(Type='"String"', Value=t)))),
            "good",
        ),
        True,
    ),
    (
        "sqs SNS envelope traceparent",
        lambda t: (
            sqs_handler,
            sqs_body(envelope_with(json_with(traceparent=json_with(Type='"String"', Value=t)))),
            "good",
        ),
        True,
    ),
    (
        "s3 in sqs request id",
        lambda t: (
            s3_handler,
            {
                "Records": [
                    {**sqs_record({}), "body": s3_with_request_id(t)},
                    sqs_record(s3_notification("good.txt"), message_id="good"),
                ]
            },
            "good",
        ),
        True,
    ),
    (
        "eventbridge detail as text",
        lambda t: (eventbridge_handler, eventbridge_with(set_in(("detail",), json_with(trace_id=t))), None),
        True,
    ),
    ("cloudwatch logs line", lambda t: (cloudwatch_logs_handler, cloudwatch_logs_with(t), "good"), True),
]
# What becomes of the hostile record when the text is too deep for any codec: its JSON is refused
# (it fails), or it was never more than text (a payload with json=False, a log line: it runs)
TOO_DEEP = {
    "kinesis json=False payload": "runs",
    "kinesis CloudWatch Logs line": "runs",
    "cloudwatch logs line": "runs",
}


# --- running one, and what must hold ---------------------------------------------------------------


def run(
    decorator: Callable[..., Any], event: Any, concurrency: int = 1
) -> tuple[Recorder, Any, BaseException | None, list[dict[str, Any]]]:
    fn: Recorder = AsyncRecorder() if concurrency > 1 else Recorder()
    handler = decorator(max_concurrency=concurrency)(fn) if concurrency > 1 else decorator(fn)
    response: Any = None
    raised: BaseException | None = None
    with captured() as out:
        try:
            response = handler(event, lambda_context())
        except UndecodableRecord as error:  # an asynchronous source raises the first failure: its own
            raised = error
    return fn, response, raised, parse_lines(out)  # one JSON object a line, at most 64 KiB, valid trace ids


def check(built: Built, outcome: str, warns: bool, concurrency: int = 1) -> list[dict[str, Any]]:
    decorator, event, good_id = built
    fn, response, raised, lines = run(decorator, event, concurrency)
    received = [line for line in lines if line["message"] == "record received"]
    assert len(fn.calls) == len(received) and all(is_valid_id(trace_id) for _, trace_id in fn.calls)
    if good_id is not None:  # the ordinary record runs, untouched
        assert good_id in [record_id for record_id, _ in fn.calls]
    errors = of_level(lines, "ERROR")
    if outcome == "runs":
        assert not errors and raised is None
        assert response is None or response == {"batchItemFailures": []}
    else:  # the hostile record fails alone, with its ERROR line and reason
        [error] = errors
        assert error["message"] == "record could not be decoded" and error["error"].strip()
        assert raised is not None or response["batchItemFailures"]
    warnings = of_level(lines, "WARN")
    assert len(warnings) == (1 if warns and outcome == "runs" else 0), warnings
    for line in warnings:  # a rejected value is shown, boundedly
        assert len(line.get("rejected_trace_id", line.get("rejected_trace_context", ""))) <= MAX_SHOWN
    return lines


@pytest.mark.parametrize("codec_name", CODECS)
@pytest.mark.parametrize(
    ("name", "build", "outcome", "warns"), STRUCTURE, ids=[case[0] for case in STRUCTURE]
)
def test_a_deep_value_in_the_event_fails_or_runs_its_own_record_only(name, build, outcome, warns, codec_name):
    with using_codec(codec_name):
        check(build(nested(DEPTH)), outcome, warns)


BATCHES = [
    case
    for case in STRUCTURE
    if case[0].split()[0] in ("sqs", "kinesis", "dynamodb", "s3") and "Pipes" not in case[0]
]


@pytest.mark.parametrize(("name", "build", "outcome", "warns"), BATCHES, ids=[case[0] for case in BATCHES])
def test_the_same_under_max_concurrency(name, build, outcome, warns):
    # records are spread over workers by ordering key: message group, partition key, item key
    check(build(nested(DEPTH)), outcome, warns, concurrency=4)


@pytest.mark.parametrize("codec_name", CODECS)
@pytest.mark.parametrize(("name", "build", "warns"), TEXT, ids=[case[0] for case in TEXT])
def test_a_deep_trace_id_in_a_producers_json_is_rejected_and_its_record_runs(name, build, warns, codec_name):
    with using_codec(codec_name):
        built = build(nested_text(NEAR_LIMIT))
        try:
            check(built, "runs", warns)
        except AssertionError:
            # the standard library's decoder (which the codec also reads some texts with) ran out of
            # stack first: the record fails alone, for its JSON, and for nothing else
            lines = check(built, TOO_DEEP.get(name, "fails"), False)
            assert name in TOO_DEEP or "not valid JSON" in of_level(lines, "ERROR")[0]["error"]


@pytest.mark.parametrize("codec_name", CODECS)
@pytest.mark.parametrize(("name", "build", "warns"), TEXT, ids=[case[0] for case in TEXT])
def test_a_producers_json_too_deep_for_any_codec_fails_its_own_record_only(name, build, warns, codec_name):
    with using_codec(codec_name):
        check(build(nested_text(DEPTH)), TOO_DEEP.get(name, "fails"), False)


def test_a_rejected_trace_id_that_is_not_text_is_shown_cut_short():
    event = sqs_with(set_in(("messageAttributes", "trace_id"), attribute(nested(DEPTH))))
    fn, _, _, lines = run(sqs_handler, event)
    [warning] = of_level(lines, "WARN")
    shown = warning["rejected_trace_id"]
    assert shown.startswith("[[[") and len(shown) <= 256 and "..." in shown  # never walked to the bottom
    message_id = event["Records"][0]["messageId"]
    assert fn.calls[0] == (message_id, message_id)  # the record runs, traced by its fallback


@pytest.mark.parametrize("where", ["trace_id", "traceparent"])
def test_an_integer_too_long_to_write_costs_its_record_nothing(where):
    # Python refuses to write an int of more than 4,300 digits (ValueError): it is shown otherwise
    event = sqs_with(set_in(("messageAttributes", where), attribute(10**5000)))
    fn, _, _, lines = run(sqs_handler, event)
    [warning] = of_level(lines, "WARN")
    assert len(warning.get("rejected_trace_id", warning.get("rejected_trace_context"))) <= 256
    assert len(fn.calls) == 2


def test_a_rejected_context_is_shown_escaped_as_ascii_shows_it():
    event = sqs_with(set_in(("messageAttributes", "traceparent"), attribute("é-not-w3c\u2028")))
    _, _, _, lines = run(sqs_handler, event)
    [warning] = of_level(lines, "WARN")
    assert warning["rejected_trace_context"] == ascii("é-not-w3c\u2028") == "'\\xe9-not-w3c\\u2028'"


ordinary = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(), inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(ordinary)
def test_the_stable_id_of_ordinary_data_is_the_digest_of_its_repr_as_before(value):
    # ids derived from a record stay what they were before the bounded rendering
    expected = (
        value
        if is_valid_id(value)
        else "h-" + hashlib.sha1(repr(value).encode("utf-8", "backslashreplace")).hexdigest()
    )
    assert stable_id(value) == expected
