"""AWS's own published sample events for tumbling windows and CloudWatch Logs subscriptions
(``tests/events/<source>/``, origins in each folder's README) through the decorators."""

from __future__ import annotations

import base64
import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lambda_kit import (
    UnsupportedEvent,
    cloudwatch_logs_handler,
    current_record,
    current_window,
    sqs_handler,
    stream_handler,
)
from lambda_kit.testing import kinesis_record

EVENTS = Path(__file__).parent / "events"
KINESIS_WINDOWS = sorted((EVENTS / "kinesis").glob("time-window.*.json"))
DYNAMODB_WINDOWS = sorted((EVENTS / "dynamodb").glob("time-window.*.json"))


def sample(path: Path) -> dict:
    return json.loads(path.read_text())


def test_the_samples_are_all_here():
    assert len(KINESIS_WINDOWS) == 3 and len(DYNAMODB_WINDOWS) == 3
    assert len(list((EVENTS / "cloudwatch_logs").glob("*.json"))) == 4


def window_seen(window) -> tuple:
    return (
        window.start,
        window.end,
        window.shard_id,
        window.event_source_arn,
        window.is_final,
        window.terminated_early,
    )


# --- tumbling windows ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", KINESIS_WINDOWS, ids=lambda p: p.name)
def test_kinesis_window_samples(path):
    event = sample(path)
    seen = []

    @stream_handler(json=False, log_event=False, log_result=False)
    def handler(data, context):
        seen.append((data, window_seen(current_window())))

    response = handler(event, None)
    assert (
        response == {"state": sample(path)["state"], "batchItemFailures": []}
        and response["state"] is event["state"]
    )
    utc = UTC
    assert seen == [
        (
            b"Hello, this is a test.",
            (
                datetime(2020, 12, 9, 7, 4, tzinfo=utc),
                datetime(2020, 12, 9, 7, 6, tzinfo=utc),
                "shardId-000000000006",
                "arn:aws:kinesis:us-east-1:123456789012:stream/lambda-stream",
                False,
                False,
            ),
        )
    ]


@pytest.mark.parametrize("path", KINESIS_WINDOWS, ids=lambda p: p.name)
def test_kinesis_window_samples_whose_data_is_not_json_report_it_with_the_state(path):
    event = sample(path)
    handler = stream_handler(log_event=False, log_result=False)(lambda payload, context: None)
    assert handler(event, None) == {
        "state": sample(path)["state"],
        "batchItemFailures": [{"itemIdentifier": "49590338271490256608559692538361571095921575989136588898"}],
    }


@pytest.mark.parametrize("path", DYNAMODB_WINDOWS, ids=lambda p: p.name)
def test_dynamodb_window_samples(path):
    event = sample(path)
    seen = []

    @stream_handler(log_event=False, log_result=False)
    def handler(change, context):
        state = current_window().state
        state[change["event_name"]] = state.get(change["event_name"], 0) + 1
        seen.append((change["event_name"], change["keys"], current_record().id))

    response = handler(event, None)
    names = [r["eventName"] for r in event["Records"]]
    expected = {"1": "state1", **{name: names.count(name) for name in names}}
    assert response == {"state": expected, "batchItemFailures": []}
    assert seen == [
        (name, {"Id": 101}, r["dynamodb"]["SequenceNumber"])
        for name, r in zip(names, event["Records"], strict=True)
    ]
    assert window_seen(current_window_of(event)) == (
        datetime(2020, 7, 30, 17, 0, tzinfo=UTC),
        datetime(2020, 7, 30, 17, 5, tzinfo=UTC),
        "shard123456789",
        event["eventSourceARN"],
        False,
        False,
    )


def current_window_of(event):
    seen = []
    stream_handler(log_event=False, log_result=False)(lambda change, context: seen.append(current_window()))(
        event, None
    )
    return seen[0]


@pytest.mark.parametrize(
    "path", KINESIS_WINDOWS + DYNAMODB_WINDOWS, ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_window_samples_are_refused_by_the_other_decorators(path):
    with pytest.raises(UnsupportedEvent, match="use stream_handler"):
        sqs_handler(lambda m, c: None)(sample(path), None)
    with pytest.raises(UnsupportedEvent, match="use stream_handler"):
        cloudwatch_logs_handler(lambda m, c: None)(sample(path), None)


# --- CloudWatch Logs subscriptions --------------------------------------------------------------------------

TEST_MESSAGES = [
    ("eventId1", 1440442987000, "[ERROR] First test message"),
    ("eventId2", 1440442987001, "[ERROR] Second test message"),
]


def logs_of(event, decorator=cloudwatch_logs_handler):
    seen = []

    @decorator(log_event=False, log_result=False)
    def handler(log_event, context):
        seen.append((log_event, current_record().id, current_record().trace_id))

    handler(event, None)
    return seen


@pytest.mark.parametrize("name", ["sam-cli.json", "account-level-policy.powertools.json"])
def test_subscription_samples(name):
    seen = logs_of(sample(EVENTS / "cloudwatch_logs" / name))
    assert [
        (e["id"], e["timestamp"], e["message"], record_id, trace_id) for e, record_id, trace_id in seen
    ] == [
        (event_id, timestamp, message, event_id, event_id) for event_id, timestamp, message in TEST_MESSAGES
    ]
    assert {
        (e["log_group"], e["log_stream"], e["owner"], tuple(e["subscription_filters"]), e["json"])
        for e, _, _ in seen
    } == {("testLogGroup", "testLogStream", "123456789123", ("testFilter",), None)}


def packed(document: dict) -> str:
    return base64.b64encode(gzip.compress(json.dumps(document).encode())).decode()


@pytest.mark.parametrize("name", ["lambda-guide.decoded.json", "logs-guide.decoded.json"])
def test_documented_subscription_messages_directly_and_through_kinesis(name):
    document = sample(EVENTS / "cloudwatch_logs" / name)
    expected = [(e["id"], e["timestamp"], e["message"], None) for e in document["logEvents"]]
    direct = logs_of({"awslogs": {"data": packed(document)}})
    assert [(e["id"], e["timestamp"], e["message"], e["json"]) for e, _, _ in direct] == expected
    assert [(record_id, trace_id) for e, record_id, trace_id in direct] == [
        (e["id"], e["id"]) for e, _, _ in direct
    ]
    record = kinesis_record(None, raw_data=packed(document))
    through = logs_of({"Records": [record]}, stream_handler)
    assert [e for e, _, _ in through] == [e for e, _, _ in direct]
    assert {record_id for _, record_id, _ in through} == {record["kinesis"]["sequenceNumber"]}


def test_the_kinesis_sample_of_a_subscription_filter_to_a_stream():
    event = sample(EVENTS / "kinesis" / "cloudwatch-logs.powertools.json")
    seen = logs_of(event, stream_handler)
    first, second = (r["kinesis"]["sequenceNumber"] for r in event["Records"])
    assert [(e["message"].split(" ")[0], record_id) for e, record_id, _ in seen] == [
        ("START", first),
        ("END", first),
        ("REPORT", first),
        ("START", second),
        ("END", second),
        ("REPORT", second),
    ]
    assert {e["log_group"] for e, _, _ in seen} == {"/aws/lambda/pt-1488-DummyLogDataFunction-gnWXPvL6jJyG"}
    assert all(trace_id == e["id"] for e, _, trace_id in seen)


@pytest.mark.parametrize("name", ["sam-cli.json", "account-level-policy.powertools.json"])
def test_subscription_samples_are_refused_by_the_other_decorators(name):
    with pytest.raises(UnsupportedEvent, match="use cloudwatch_logs_handler"):
        stream_handler(lambda m, c: None)(sample(EVENTS / "cloudwatch_logs" / name), None)


# --- the factories build what AWS sends ---------------------------------------------------------------------


def shape(value):
    """Keys and value types, recursively (lists by their first item): what a sample and a factory share."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return (
        "number" if isinstance(value, int | float) and not isinstance(value, bool) else type(value).__name__
    )


def test_tumbling_window_builds_the_samples_shape():
    from lambda_kit.testing import dynamodb_record, dynamodb_stream_event, kinesis_event, tumbling_window

    built = tumbling_window(kinesis_event({"n": 1}), {"1": 282, "2": 715})
    assert shape(built) == shape(sample(EVENTS / "kinesis" / "time-window.powertools.json"))
    built = tumbling_window(
        dynamodb_stream_event(dynamodb_record("INSERT", keys={"Id": 101}, new_image={"Id": 101})),
        {"1": "state1"},
    )
    expected = shape(sample(EVENTS / "dynamodb" / "time-window.aws-lambda-go.json"))
    assert set(shape(built)) == set(expected) and {
        k: v for k, v in shape(built).items() if k != "Records"
    } == {k: v for k, v in expected.items() if k != "Records"}


def test_the_subscription_factories_build_the_documented_message():
    from lambda_kit.testing import cloudwatch_logs_event, kinesis_log_record

    documented = sample(EVENTS / "cloudwatch_logs" / "logs-guide.decoded.json")
    event = cloudwatch_logs_event("a line")
    assert set(event) == set(sample(EVENTS / "cloudwatch_logs" / "sam-cli.json")) == {"awslogs"}
    assert shape(json.loads(gzip.decompress(base64.b64decode(event["awslogs"]["data"])))) == shape(documented)
    record = kinesis_log_record("a line")
    assert shape(json.loads(gzip.decompress(base64.b64decode(record["kinesis"]["data"])))) == shape(
        documented
    )
