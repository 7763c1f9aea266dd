"""CloudWatch Logs subscriptions: ``cloudwatch_logs_handler`` (a subscription filter invoking the
function) and ``stream_handler`` (a subscription filter to a Kinesis stream), one call per log event;
end to end against moto's CloudWatch Logs and Kinesis on loopback."""

from __future__ import annotations

import base64
import gzip
import json
import re
import time
import zlib

import pytest
from _hostile import captured, parse_lines
from _logs import of_level, read_lines, with_message
from _streams import new_stream

from lambda_kit import cloudwatch_logs_handler, current_record, current_trace_id, sqs_handler, stream_handler
from lambda_kit.errors import UndecodableRecord
from lambda_kit.testing import (
    awslogs_data,
    cloudwatch_logs_event,
    kinesis_event,
    kinesis_log_record,
    kinesis_record,
    lambda_context,
    log_line,
    log_subscription_message,
    sqs_event,
)


def recording(decorator=cloudwatch_logs_handler, fail_on=None, **options):
    calls = []

    @decorator(log_event=False, log_result=False, **options)
    def handler(log_event, context):
        record = current_record()
        calls.append((log_event, record.id, record.trace_id))
        if fail_on is not None and fail_on in str(log_event["message"]):
            raise ValueError(f"cannot handle {log_event['message'][:20]}")

    return handler, calls


# --- a subscription filter invoking the function --------------------------------------------------


def test_one_call_per_log_event_with_its_group_stream_and_filters():
    handler, calls = recording()
    event = cloudwatch_logs_event(
        "START RequestId: 1",
        '{"url": "/a"}',
        log_group="/aws/lambda/blog",
        log_stream="s-1",
        subscription_filters=["views"],
    )
    assert handler(event, lambda_context()) is None
    message = json.loads(gzip.decompress(base64.b64decode(event["awslogs"]["data"])))
    first, second = message["logEvents"]
    assert [c[0] for c in calls] == [
        {
            "id": first["id"],
            "timestamp": first["timestamp"],
            "message": "START RequestId: 1",
            "json": None,
            "log_group": "/aws/lambda/blog",
            "log_stream": "s-1",
            "owner": "123456789012",
            "subscription_filters": ["views"],
        },
        {
            "id": second["id"],
            "timestamp": second["timestamp"],
            "message": '{"url": "/a"}',
            "json": {"url": "/a"},
            "log_group": "/aws/lambda/blog",
            "log_stream": "s-1",
            "owner": "123456789012",
            "subscription_filters": ["views"],
        },
    ]
    assert [(c[1], c[2]) for c in calls] == [(first["id"], first["id"]), (second["id"], second["id"])]


def test_a_lambda_kit_line_keeps_the_producers_trace_id(capfd):
    """The consumer of a lambda_kit function's logs logs under the trace id the producer logged."""
    handler, calls = recording()
    event = cloudwatch_logs_event(
        log_line("record failed", trace_id="req-42", level="ERROR", url="/a"),
        '{"trace_id": "not-a-lambda-kit-line", "msg": 1}',
    )
    handler(event, None)
    assert [c[2] for c in calls] == ["req-42", calls[1][1]]  # a JSON line of another shape: the event id
    assert calls[0][0]["json"]["url"] == "/a" and calls[0][0]["json"]["level"] == "ERROR"


def test_a_lambda_kit_line_with_an_invalid_trace_id_falls_back_with_a_warning(capfd):
    handler, calls = recording()
    handler(cloudwatch_logs_event(log_line(trace_id="bad id\nwith newline")), None)
    [(_, record_id, trace_id)] = calls
    assert trace_id == record_id
    [warning] = of_level(read_lines(capfd), "WARN")
    assert warning["message"] == "ignored an invalid trace id; using the fallback id"


def test_a_control_message_is_skipped_with_one_info_line(capfd):
    handler, calls = recording()
    assert handler(cloudwatch_logs_event(control=True), None) is None
    assert calls == []
    [line] = read_lines(capfd)
    assert (line["level"], line["message"]) == ("INFO", "skipped a CloudWatch Logs control message")
    assert line["messages"] == ["CWL CONTROL MESSAGE: Checking health of destination Lambda function."]


def test_every_log_event_runs_then_the_first_failure_is_raised(capfd):
    """CloudWatch Logs invokes asynchronously: raising makes Lambda retry the event, then keep it in
    the function's on-failure destination. The other log events still ran (a failure never costs
    another); on a retry they run again, so make the function idempotent (the log event id)."""
    handler, calls = recording(fail_on="bad")
    event = cloudwatch_logs_event("bad 1", "good", "bad 2")
    with pytest.raises(ValueError, match="cannot handle bad 1"):
        handler(event, None)
    assert [c[0]["message"] for c in calls] == ["bad 1", "good", "bad 2"]
    errors = of_level(read_lines(capfd), "ERROR")
    assert [e["error"] for e in errors] == ["cannot handle bad 1", "cannot handle bad 2"]
    assert [e["record_id"] for e in errors] == [calls[0][1], calls[2][1]]


def gz(data: bytes) -> str:
    return base64.b64encode(gzip.compress(data, mtime=0)).decode()


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ("!!!", "awslogs.data is not valid base64"),
        (base64.b64encode(b"plain text").decode(), "awslogs.data is not gzip data"),
        (gz(b'{"messageType": "DATA_MESSAGE"')[:-16], "awslogs.data is truncated gzip data"),
        (gz(b"[1, 2"), "awslogs.data is gzip data that is not JSON"),
        (gz(b'{"logEvents": []}'), "awslogs.data is not a CloudWatch Logs subscription message"),
        ("bomb", "awslogs.data unpacks to more than 16777216 bytes"),
        (None, "awslogs.data is not base64 text"),
    ],
    ids=["not base64", "not gzip", "cut short", "not JSON", "no messageType", "gzip bomb", "not text"],
)
def test_data_that_cannot_be_unpacked_fails_with_its_reason(capfd, data, why):
    if data == "bomb":  # 17 MB of zeros packed in 17 KB
        data = gz(b"0" * (17 * 1024 * 1024))
    handler, calls = recording()
    with pytest.raises(UndecodableRecord, match=re.escape(why)):
        handler({"awslogs": {"data": data}}, None)
    assert calls == []
    [error] = of_level(read_lines(capfd), "ERROR")
    assert error["message"] == "record could not be decoded" and error["error"].startswith(why)
    assert (error["source"], error["record_id"]) == ("cloudwatch_logs", "")
    assert error["payload"] == {"data": data} or why.endswith(
        "16777216 bytes"
    )  # the bomb's data is logged cut


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("a string", "log event is not a JSON object"),
        ({"timestamp": 1, "message": "no id"}, "log event has no id"),
        ({"id": "e-1", "timestamp": 1, "message": {"not": "text"}}, "log event has no message text"),
        ({"id": "e-1", "message": "no timestamp"}, "log event has no timestamp (milliseconds)"),
    ],
)
def test_a_malformed_log_event_fails_alone(capfd, bad, why):
    message = log_subscription_message("good")
    message["logEvents"].insert(0, bad)
    handler, calls = recording()
    with pytest.raises(UndecodableRecord, match=re.escape(why)):
        handler({"awslogs": {"data": awslogs_data(message)}}, None)
    assert [c[0]["message"] for c in calls] == ["good"]
    [error] = of_level(read_lines(capfd), "ERROR")
    # traced by its own id when it has one, else by a digest of what it holds (the same on a retry)
    assert (
        error["trace_id"] == bad["id"]
        if isinstance(bad, dict) and "id" in bad
        else error["trace_id"].startswith("h-")
    )
    assert error["record_id"] == (bad["id"] if isinstance(bad, dict) and "id" in bad else "")


def test_a_message_of_another_type_or_without_log_events_fails():
    handler, calls = recording()
    for change, why in (
        ({"messageType": "OTHER"}, "messageType 'OTHER' is not DATA_MESSAGE"),
        ({"logEvents": "none"}, "the subscription message has no logEvents list"),
    ):
        with pytest.raises(UndecodableRecord, match=re.escape(why)):
            handler({"awslogs": {"data": awslogs_data({**log_subscription_message("x"), **change})}}, None)
    assert calls == []


def test_a_zlib_stream_is_read_as_well_as_gzip():
    message = log_subscription_message("from an account-level subscription policy")
    handler, calls = recording()
    handler(
        {"awslogs": {"data": base64.b64encode(zlib.compress(json.dumps(message).encode())).decode()}}, None
    )
    assert [c[0]["message"] for c in calls] == ["from an account-level subscription policy"]


def test_other_decorators_refuse_a_subscription_and_name_the_one_that_fits():
    from lambda_kit import UnsupportedEvent

    with pytest.raises(
        UnsupportedEvent,
        match="sqs_handler cannot process a CloudWatch Logs subscription event: use cloudwatch_logs_handler",
    ):
        sqs_handler(lambda m, c: None)(cloudwatch_logs_event("x"), None)
    with pytest.raises(
        UnsupportedEvent, match="cloudwatch_logs_handler cannot process an SQS event: use sqs_handler"
    ):
        cloudwatch_logs_handler(lambda m, c: None)(sqs_event({"n": 1}), None)


# --- a subscription filter to a Kinesis stream --------------------------------------------------------


def test_stream_handler_calls_once_per_log_event_reporting_the_kinesis_sequence_number():
    handler, calls = recording(stream_handler)
    first = kinesis_log_record(log_line(trace_id="p-1"), "plain text")
    second = kinesis_log_record("third")
    event = {"Records": [first, second]}
    assert handler(event, None) == {"batchItemFailures": []}
    ids = [first["kinesis"]["sequenceNumber"]] * 2 + [second["kinesis"]["sequenceNumber"]]
    assert [c[1] for c in calls] == ids
    assert calls[0][2] == "p-1" and calls[1][2] == calls[1][0]["id"] != calls[2][2] == calls[2][0]["id"]


def test_a_failed_log_event_stops_the_batch_at_its_kinesis_record(capfd):
    """Lambda resumes from the reported record: the log events before the failed one in that
    record run again on the retry (at least once), the later records wait, in order."""
    handler, calls = recording(stream_handler, fail_on="bad")
    event = {
        "Records": [kinesis_log_record("a"), kinesis_log_record("b", "bad", "c"), kinesis_log_record("d")]
    }
    failed = event["Records"][1]["kinesis"]["sequenceNumber"]
    assert handler(event, None) == {"batchItemFailures": [{"itemIdentifier": failed}]}
    assert [c[0]["message"] for c in calls] == ["a", "b", "bad"]
    [warning] = of_level(read_lines(capfd), "WARN")
    assert warning["not_processed"] == 2  # "c" and "d"


def test_a_kinesis_control_message_is_skipped_and_the_record_checkpointed(capfd):
    handler, calls = recording(stream_handler)
    event = {"Records": [kinesis_log_record(control=True), kinesis_log_record("after")]}
    assert handler(event, None) == {"batchItemFailures": []}
    assert [c[0]["message"] for c in calls] == ["after"]
    assert with_message(read_lines(capfd), "skipped a CloudWatch Logs control message")


def test_gzip_data_that_is_not_a_subscription_message_fails_with_its_reason(capfd):
    handler, calls = recording(stream_handler)
    record = kinesis_record(None, raw_data=base64.b64encode(gzip.compress(b'{"n": 1}')).decode())
    assert handler({"Records": [record]}, None) == {
        "batchItemFailures": [{"itemIdentifier": record["kinesis"]["sequenceNumber"]}]
    }
    [error] = of_level(read_lines(capfd), "ERROR")
    assert (
        error["error"] == "kinesis.data is not a CloudWatch Logs subscription message (it has no messageType)"
    )


def test_json_false_hands_over_the_compressed_bytes():
    calls = []
    handler = stream_handler(json=False, log_event=False, log_result=False)(
        lambda data, context: calls.append(data)
    )
    record = kinesis_log_record("x")
    handler({"Records": [record]}, None)
    assert calls == [base64.b64decode(record["kinesis"]["data"])] and calls[0][:2] == b"\x1f\x8b"


def test_ordinary_kinesis_records_and_log_records_mix_in_one_batch():
    seen = []
    handler = stream_handler(log_event=False, log_result=False)(lambda payload, context: seen.append(payload))
    handler({"Records": [kinesis_event({"n": 1})["Records"][0], kinesis_log_record("log")]}, None)
    assert seen[0] == {"n": 1} and seen[1]["message"] == "log"


# --- end to end: moto's CloudWatch Logs delivering to moto's Kinesis ---------------------------------------


@pytest.fixture
def subscribed_stream(aws_endpoint, unique_name):
    """A log group with a subscription filter to a Kinesis stream; returns (logs, group, read)
    where read() gives the records the subscription put, as Lambda delivers them."""
    import boto3

    logs, kinesis = boto3.client("logs"), boto3.client("kinesis")
    stream, group = unique_name("log-events"), f"/aws/lambda/{unique_name('producer')}"
    kinesis.create_stream(StreamName=stream, ShardCount=1)
    kinesis.get_waiter("stream_exists").wait(
        StreamName=stream, WaiterConfig={"Delay": 0.1, "MaxAttempts": 50}
    )
    description = kinesis.describe_stream(StreamName=stream)["StreamDescription"]
    iterator = kinesis.get_shard_iterator(
        StreamName=stream, ShardId=description["Shards"][0]["ShardId"], ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    logs.create_log_group(logGroupName=group)
    logs.create_log_stream(logGroupName=group, logStreamName="2024/05/21/[$LATEST]abc")
    logs.put_subscription_filter(
        logGroupName=group,
        filterName="to-kinesis",
        filterPattern="",
        destinationArn=description["StreamARN"],
        roleArn="arn:aws:iam::123456789012:role/cwl-to-kinesis",
    )
    reader = {"iterator": iterator}

    def read():
        page = kinesis.get_records(ShardIterator=reader["iterator"])
        reader["iterator"] = page["NextShardIterator"]
        return [
            kinesis_record(
                None,
                stream=stream,
                raw_data=base64.b64encode(r["Data"]).decode(),
                partition_key=r["PartitionKey"],
                sequence_number=r["SequenceNumber"],
            )
            for r in page["Records"]
        ]

    return logs, group, read


def producer_lines() -> list[str]:
    """What a real lambda_kit function writes for a batch of two SQS messages, one failing."""

    @sqs_handler
    def count(view, context):
        if view.get("poison"):
            raise ValueError("poison view")

    with captured() as out:
        count(
            sqs_event({"url": "/a"}, {"poison": True}, trace_id=["trace-a", "trace-p"]),
            lambda_context("counter"),
        )
    return out


def test_a_consumer_of_lambda_kit_logs_keeps_the_producers_trace_ids(subscribed_stream):
    logs, group, read = subscribed_stream
    lines = producer_lines()
    now = int(time.time() * 1000)
    logs.put_log_events(
        logGroupName=group,
        logStreamName="2024/05/21/[$LATEST]abc",
        logEvents=[{"timestamp": now, "message": line} for line in lines],
    )
    records = read()
    assert records and records[0]["kinesis"]["data"].startswith("H4sI")  # gzip, as CloudWatch Logs puts it

    seen = []

    @stream_handler(log_event=False, log_result=False)
    def errors_to_alerts(log_event, context):
        line = log_event["json"]
        seen.append(
            (line["message"], current_trace_id(), log_event["log_group"], log_event["subscription_filters"])
        )

    assert errors_to_alerts({"Records": records}, None) == {"batchItemFailures": []}
    produced = [(p["message"], p["trace_id"]) for p in parse_lines(lines)]
    assert [(message, trace) for message, trace, _, _ in seen] == produced
    assert {(g, tuple(f)) for _, _, g, f in seen} == {(group, ("to-kinesis",))}
    assert ("record failed", "trace-p") in produced

    # the same message as a subscription filter invoking the function directly delivers it
    direct = []
    cloudwatch_logs_handler(log_event=False, log_result=False)(
        lambda e, c: direct.append(current_trace_id())
    )({"awslogs": {"data": records[0]["kinesis"]["data"]}}, None)
    assert direct == [trace for _, trace in produced]


@pytest.fixture
def requeue_stream(aws_endpoint, unique_name):
    import boto3

    kinesis, sqs = boto3.client("kinesis"), boto3.client("sqs")
    stream = unique_name("log-requeue")
    read = new_stream(kinesis, stream)
    dlq = sqs.create_queue(QueueName=unique_name("log-dlq"))["QueueUrl"]
    return stream, dlq, read, sqs


def test_requeue_puts_a_failed_log_event_back_alone_then_dead_letters_it(capfd, requeue_stream):
    stream, dlq, read, sqs = requeue_stream
    handler, calls = recording(
        stream_handler, fail_on="poison", on_failure="requeue", max_attempts=2, dead_letter=dlq
    )
    record = kinesis_log_record(
        "ok", log_line("poison", trace_id="p-9"), stream=stream, log_group="/aws/lambda/producer"
    )
    assert handler({"Records": [record]}, None) == {"batchItemFailures": []}
    assert [c[0]["message"] for c in calls] == ["ok", calls[1][0]["message"]]
    [error] = of_level(read_lines(capfd), "ERROR")
    assert (error["outcome"], error["attempt"], error["trace_id"]) == ("requeued", 1, "p-9")

    [put] = read()
    assert put["PartitionKey"] == "p-9"
    message = json.loads(gzip.decompress(put["Data"]))
    assert [e["message"] for e in message["logEvents"]] == [
        calls[1][0]["message"]
    ]  # alone: "ok" is not repeated
    assert message["lambda_kit_requeue"] == {"attempt": 1, "error_type": "ValueError"}
    assert (message["logGroup"], message["messageType"]) == ("/aws/lambda/producer", "DATA_MESSAGE")

    calls.clear()
    again = kinesis_record(
        None,
        stream=stream,
        raw_data=base64.b64encode(put["Data"]).decode(),
        sequence_number=put["SequenceNumber"],
    )
    assert handler({"Records": [again]}, None) == {"batchItemFailures": []}
    assert [(c[0]["id"], c[2]) for c in calls] == [
        (message["logEvents"][0]["id"], "p-9")
    ]  # same event, same trace id
    [error] = of_level(read_lines(capfd), "ERROR")
    assert (error["outcome"], error["attempt"]) == ("dead_lettered", 2)
    assert read() == []
    [dead] = sqs.receive_message(QueueUrl=dlq, MessageAttributeNames=["All"], WaitTimeSeconds=1)["Messages"]
    body = json.loads(dead["Body"])
    assert (
        body["trace_id"] == "p-9"
        and body["attempts"] == 2
        and body["sequence_number"] == put["SequenceNumber"]
    )
    kept = json.loads(gzip.decompress(base64.b64decode(body["data"])))
    assert "lambda_kit_requeue" not in kept and kept["logEvents"] == message["logEvents"]


def test_each_log_event_is_a_cloudwatch_logs_record():
    seen = []
    cloudwatch_logs_handler(lambda log_event, context: seen.append(current_record().source))(
        cloudwatch_logs_event("one", "two"), None
    )
    assert seen == ["cloudwatch_logs", "cloudwatch_logs"]
