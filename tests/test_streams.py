"""stream_handler through the public API: Kinesis and DynamoDB Streams, in-order failure routing,
and Kinesis ``on_failure="requeue"`` against moto's server."""

from __future__ import annotations

import base64
import json
from decimal import Decimal

import pytest
from _logs import of_level, read_lines, with_message

from lambda_kit import current_record, current_trace_id, stream_handler
from lambda_kit.testing import (
    dynamodb_record,
    dynamodb_stream_event,
    kinesis_event,
    kinesis_record,
    lambda_context,
)

# --- Kinesis --------------------------------------------------------------------------------


def test_kinesis_success_decodes_base64_json(capfd):
    seen = []

    @stream_handler
    def handler(payload, context):
        record = current_record()
        seen.append((payload, record.source, record.id, record.trace_id))

    event = kinesis_event({"url": "/a", "trace_id": "k-1"}, {"url": "/b"})
    first, second = event["Records"]
    assert handler(event, lambda_context()) == {"batchItemFailures": []}
    assert seen == [
        ({"url": "/a", "trace_id": "k-1"}, "kinesis", first["kinesis"]["sequenceNumber"], "k-1"),
        ({"url": "/b"}, "kinesis", second["kinesis"]["sequenceNumber"], second["eventID"]),
    ]
    assert not of_level(read_lines(capfd), "ERROR")


def test_kinesis_stops_at_the_first_failure_and_does_not_call_later_records(capfd):
    calls = []

    @stream_handler
    def handler(payload, context):
        calls.append(payload["n"])
        if payload["n"] == 2:
            raise ValueError("bad 2")

    event = kinesis_event({"n": 1}, {"n": 2, "trace_id": "k-2"}, {"n": 3}, {"n": 4})
    failed = event["Records"][1]["kinesis"]["sequenceNumber"]
    assert handler(event, None) == {"batchItemFailures": [{"itemIdentifier": failed}]}
    assert calls == [1, 2]
    lines = read_lines(capfd)
    errors = of_level(lines, "ERROR")
    assert len(errors) == 1 and errors[0]["trace_id"] == "k-2" and errors[0]["error_type"] == "ValueError"
    [stopped] = of_level(lines, "WARN")
    assert stopped["message"] == "stopped the batch at the failed record; Lambda retries from it, in order"
    assert (stopped["source"], stopped["record_id"], stopped["trace_id"], stopped["not_processed"]) == (
        "kinesis",
        failed,
        "k-2",
        2,
    )


def test_kinesis_all_failing_reports_the_first_record_only():
    calls = []

    @stream_handler
    def handler(payload, context):
        calls.append(payload)
        raise RuntimeError("down")

    event = kinesis_event({"n": 1}, {"n": 2})
    first = event["Records"][0]["kinesis"]["sequenceNumber"]
    assert handler(event, None) == {"batchItemFailures": [{"itemIdentifier": first}]}
    assert calls == [{"n": 1}]


@pytest.mark.parametrize(
    "raw_data, why",
    [("!!not base64!!", "not valid base64"), (base64.b64encode(b"{nope").decode(), "not valid JSON")],
)
def test_kinesis_undecodable_record_fails_with_one_error_line_and_stops(capfd, raw_data, why):
    calls = []

    @stream_handler
    def handler(payload, context):
        calls.append(payload)

    good = kinesis_record({"n": 1})
    bad = kinesis_record(None, raw_data=raw_data)
    later = kinesis_record({"n": 3})
    response = handler({"Records": [good, bad, later]}, None)
    assert response == {"batchItemFailures": [{"itemIdentifier": bad["kinesis"]["sequenceNumber"]}]}
    assert calls == [{"n": 1}]
    errors = of_level(read_lines(capfd), "ERROR")
    assert len(errors) == 1
    assert errors[0]["trace_id"] == bad["eventID"]
    assert why in errors[0]["error"]


def test_kinesis_json_false_passes_the_raw_bytes_but_still_reads_the_trace_id():
    seen = []

    @stream_handler(json=False)
    def handler(payload, context):
        seen.append((payload, current_trace_id()))

    event = kinesis_event(b"\x00\x01binary", "plain text", {"trace_id": "k-raw", "a": 1})
    assert handler(event, None) == {"batchItemFailures": []}
    assert seen == [
        (b"\x00\x01binary", event["Records"][0]["eventID"]),
        (b"plain text", event["Records"][1]["eventID"]),
        (json.dumps({"trace_id": "k-raw", "a": 1}).encode(), "k-raw"),
    ]


def test_kinesis_missing_trace_id_falls_back_to_the_event_id_stable_across_retries():
    seen = []

    @stream_handler
    def handler(payload, context):
        seen.append(current_trace_id())

    record = kinesis_record({"n": 1})
    handler({"Records": [record]}, None)
    handler({"Records": [record]}, None)
    assert seen == [record["eventID"]] * 2


@pytest.mark.parametrize("bad", ["a\nb", '"}', "x" * 200, "ñ", 12345, {"nested": 1}])
def test_kinesis_malicious_trace_id_is_not_used_and_logged_escaped(capfd, bad):
    seen = []

    @stream_handler
    def handler(payload, context):
        seen.append(current_trace_id())

    event = kinesis_event({"trace_id": bad})
    handler(event, None)
    assert seen == [event["Records"][0]["eventID"]]
    warnings = of_level(read_lines(capfd), "WARN")
    assert len(warnings) == 1
    assert warnings[0]["rejected_trace_id"] == ascii(bad)


# --- DynamoDB Streams -----------------------------------------------------------------------


def test_dynamodb_images_are_deserialized_to_plain_python():
    seen = []

    @stream_handler
    def handler(change, context):
        seen.append(change)

    new_image = {
        "PK": "page#/a",
        "SK": "total",
        "count": 42,
        "ratio": Decimal("0.25"),
        "big": 10**20,
        "negative": -3,
        "tags": {"a", "b"},
        "scores": {1, 2.5},
        "blob": b"\x00\xffbytes",
        "blobs": {b"x", b"y"},
        "flag": True,
        "nothing": None,
        "nested": {"inner": {"n": 1, "list": [1, "two", {"three": 3}]}},
        "trace_id": "ddb-1",
    }
    event = dynamodb_stream_event(dynamodb_record("INSERT", new_image=new_image))
    assert handler(event, None) == {"batchItemFailures": []}
    (change,) = seen
    assert change["event_name"] == "INSERT"
    assert change["keys"] == {"PK": "page#/a", "SK": "total"}
    assert change["old_image"] is None
    image = change["new_image"]
    assert image == {**new_image, "ratio": 0.25}
    assert image["count"] == 42 and image["big"] == 10**20 and image["ratio"] == 0.25
    assert image["tags"] == {"a", "b"} and isinstance(image["tags"], set)
    assert image["scores"] == {1, 2.5}
    assert image["blob"] == b"\x00\xffbytes" and isinstance(image["blob"], bytes)
    assert image["blobs"] == {b"x", b"y"}
    assert image["flag"] is True and image["nothing"] is None
    assert image["nested"]["inner"]["list"] == [1, "two", {"three": 3}]


def test_dynamodb_trace_id_from_new_image_and_old_image_for_remove(capfd):
    seen = []

    @stream_handler
    def handler(change, context):
        record = current_record()
        seen.append((change["event_name"], record.source, record.id, current_trace_id()))

    insert = dynamodb_record("INSERT", new_image={"PK": "a", "SK": "b", "trace_id": "t-new"})
    modify = dynamodb_record(
        "MODIFY",
        new_image={"PK": "a", "SK": "b", "trace_id": "t-modify"},
        old_image={"PK": "a", "SK": "b", "trace_id": "t-old"},
    )
    remove = dynamodb_record(
        "REMOVE", keys={"PK": "a", "SK": "b"}, old_image={"PK": "a", "SK": "b", "trace_id": "t-removed"}
    )
    missing = dynamodb_record("INSERT", new_image={"PK": "a", "SK": "c"})
    handler(dynamodb_stream_event(insert, modify, remove, missing), None)
    assert seen == [
        ("INSERT", "dynamodb", insert["dynamodb"]["SequenceNumber"], "t-new"),
        ("MODIFY", "dynamodb", modify["dynamodb"]["SequenceNumber"], "t-modify"),
        ("REMOVE", "dynamodb", remove["dynamodb"]["SequenceNumber"], "t-removed"),
        ("INSERT", "dynamodb", missing["dynamodb"]["SequenceNumber"], missing["eventID"]),
    ]
    lines = read_lines(capfd)
    assert [line["trace_id"] for line in with_message(lines, "record received")] == [
        "t-new",
        "t-modify",
        "t-removed",
        missing["eventID"],
    ]


def test_dynamodb_missing_trace_id_is_stable_across_retries():
    seen = []

    @stream_handler
    def handler(change, context):
        seen.append(current_trace_id())

    record = dynamodb_record("INSERT", new_image={"PK": "a", "SK": "b"})
    handler({"Records": [record]}, None)
    handler({"Records": [record]}, None)
    assert seen == [record["eventID"]] * 2


def test_dynamodb_malicious_trace_id_is_not_used(capfd):
    seen = []

    @stream_handler
    def handler(change, context):
        seen.append(current_trace_id())

    record = dynamodb_record("INSERT", new_image={"PK": "a", "SK": "b", "trace_id": "x\r\ny"})
    handler(dynamodb_stream_event(record), None)
    assert seen == [record["eventID"]]
    warnings = of_level(read_lines(capfd), "WARN")
    assert [w["rejected_trace_id"] for w in warnings] == [ascii("x\r\ny")]


def test_dynamodb_stops_at_the_first_failure(capfd):
    calls = []

    @stream_handler
    def handler(change, context):
        calls.append(change["new_image"]["n"])
        if change["new_image"]["n"] == 1:
            raise ValueError("cannot")

    records = [dynamodb_record("INSERT", new_image={"PK": "p", "SK": str(n), "n": n}) for n in range(3)]
    response = handler(dynamodb_stream_event(*records), None)
    assert response == {"batchItemFailures": [{"itemIdentifier": records[1]["dynamodb"]["SequenceNumber"]}]}
    assert calls == [0, 1]
    assert len(of_level(read_lines(capfd), "ERROR")) == 1


def test_dynamodb_all_failing_and_malformed_image(capfd):
    @stream_handler
    def handler(change, context):
        raise AssertionError("not called")

    broken = dynamodb_record("INSERT", new_image={"PK": "a", "SK": "b"})
    broken["dynamodb"]["NewImage"]["odd"] = {"XX": "1"}
    later = dynamodb_record("INSERT", new_image={"PK": "a", "SK": "c"})
    response = handler(dynamodb_stream_event(broken, later), None)
    assert response == {"batchItemFailures": [{"itemIdentifier": broken["dynamodb"]["SequenceNumber"]}]}
    errors = of_level(read_lines(capfd), "ERROR")
    assert len(errors) == 1 and errors[0]["message"] == "record could not be decoded"
    assert errors[0]["trace_id"] == broken["eventID"]


def test_stream_handler_success_reports_no_failures_for_both_sources():
    @stream_handler()
    def handler(payload, context):
        return "ok"

    assert handler(kinesis_event({"a": 1}), None) == {"batchItemFailures": []}
    assert handler(dynamodb_stream_event({"event_name": "INSERT", "new_image": {"PK": "a"}}), None) == {
        "batchItemFailures": []
    }


def test_stream_handler_rejects_unknown_options():
    with pytest.raises(ValueError, match="on_failure"):
        stream_handler(on_failure="retry")
    with pytest.raises(ValueError, match="max_attempts"):
        stream_handler(on_failure="requeue", max_attempts=0)


# --- Kinesis on_failure="requeue", against moto's server ------------------------------------


@pytest.fixture
def stream_and_dlq(aws_endpoint, unique_name):
    import boto3

    kinesis = boto3.client("kinesis")
    sqs = boto3.client("sqs")
    stream = unique_name("clicks")
    kinesis.create_stream(StreamName=stream, ShardCount=1)
    kinesis.get_waiter("stream_exists").wait(
        StreamName=stream, WaiterConfig={"Delay": 0.1, "MaxAttempts": 50}
    )
    shard = kinesis.describe_stream(StreamName=stream)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = kinesis.get_shard_iterator(StreamName=stream, ShardId=shard, ShardIteratorType="LATEST")[
        "ShardIterator"
    ]
    dlq_url = sqs.create_queue(QueueName=unique_name("clicks-dlq"))["QueueUrl"]
    reader = {"iterator": iterator}

    def read_new():
        records = []
        for _ in range(5):
            page = kinesis.get_records(ShardIterator=reader["iterator"])
            reader["iterator"] = page["NextShardIterator"]
            records.extend(page["Records"])
            if records:
                break
        return records

    return stream, dlq_url, read_new, sqs


def _as_lambda_record(read, stream):
    """A record read back with get_records, as Lambda would deliver it."""
    return kinesis_record(
        None,
        stream=stream,
        raw_data=base64.b64encode(read["Data"]).decode(),
        partition_key=read["PartitionKey"],
        sequence_number=read["SequenceNumber"],
    )


def test_kinesis_requeue_puts_the_record_back_then_dead_letters_it(capfd, stream_and_dlq):
    stream, dlq_url, read_new, sqs = stream_and_dlq
    calls = []

    @stream_handler(on_failure="requeue", max_attempts=3, dead_letter=dlq_url)
    def handler(payload, context):
        calls.append((payload, current_trace_id()))
        if payload.get("poison"):
            raise ValueError("cannot count this view")

    event = kinesis_event({"n": 1}, {"poison": True, "trace_id": "req-poison"}, {"n": 3}, stream=stream)
    assert handler(event, lambda_context()) == {"batchItemFailures": []}
    assert [payload for payload, _ in calls] == [
        {"n": 1},
        {"poison": True, "trace_id": "req-poison"},
        {"n": 3},
    ]
    (error,) = of_level(read_lines(capfd), "ERROR")
    assert (error["outcome"], error["attempt"], error["trace_id"]) == ("requeued", 1, "req-poison")

    for attempt in (2, 3):
        (read,) = read_new()
        assert read["PartitionKey"] == "req-poison"
        calls.clear()
        response = handler({"Records": [_as_lambda_record(read, stream)]}, lambda_context())
        assert response == {"batchItemFailures": []}
        assert calls == [({"poison": True, "trace_id": "req-poison"}, "req-poison")]
        (error,) = of_level(read_lines(capfd), "ERROR")
        assert error["attempt"] == attempt and error["trace_id"] == "req-poison"
        assert error["outcome"] == ("requeued" if attempt < 3 else "dead_lettered")

    assert read_new() == []  # dead-lettered, not put back on the stream
    received = sqs.receive_message(QueueUrl=dlq_url, MessageAttributeNames=["All"], WaitTimeSeconds=1)
    (message,) = received["Messages"]
    assert message["MessageAttributes"]["trace_id"]["StringValue"] == "req-poison"
    body = json.loads(message["Body"])
    assert body["trace_id"] == "req-poison" and body["attempts"] == 3 and body["error_type"] == "ValueError"
    assert json.loads(base64.b64decode(body["data"])) == {"poison": True, "trace_id": "req-poison"}


def test_kinesis_requeue_from_an_async_function_running_records_at_once(capfd, stream_and_dlq):
    """The failed records go back on the stream (moto's, over HTTP) while the others run at once;
    the batch reports nothing."""
    import asyncio

    stream, dlq_url, read_new, sqs = stream_and_dlq

    @stream_handler(on_failure="requeue", dead_letter=dlq_url, max_concurrency=4)
    async def handler(payload, context):
        await asyncio.sleep(0.01)
        if payload.get("poison"):
            raise ValueError("cannot count this view")

    event = kinesis_event(
        *[{"n": n, "poison": n in (1, 4), "trace_id": f"t-{n}"} for n in range(6)], stream=stream
    )
    assert handler(event, lambda_context()) == {"batchItemFailures": []}
    errors = of_level(read_lines(capfd), "ERROR")
    assert sorted((line["trace_id"], line["outcome"]) for line in errors) == [
        ("t-1", "requeued"),
        ("t-4", "requeued"),
    ]
    requeued = read_new()
    if len(requeued) < 2:
        requeued += read_new()
    assert sorted(read["PartitionKey"] for read in requeued) == ["t-1", "t-4"]


def test_kinesis_requeue_keeps_the_fallback_trace_id_of_the_first_try(capfd, stream_and_dlq):
    stream, dlq_url, read_new, sqs = stream_and_dlq
    seen = []

    @stream_handler(json=False, on_failure="requeue", max_attempts=2, dead_letter=dlq_url)
    def handler(payload, context):
        seen.append((payload, current_trace_id()))
        raise ValueError("always")

    event = kinesis_event(b"raw bytes", stream=stream)
    first_trace = event["Records"][0]["eventID"]
    assert handler(event, None) == {"batchItemFailures": []}
    (read,) = read_new()
    assert read["PartitionKey"] == first_trace
    assert handler({"Records": [_as_lambda_record(read, stream)]}, None) == {"batchItemFailures": []}
    assert seen == [(b"raw bytes", first_trace)] * 2
    (message,) = sqs.receive_message(QueueUrl=dlq_url, MessageAttributeNames=["All"], WaitTimeSeconds=1)[
        "Messages"
    ]
    assert message["MessageAttributes"]["trace_id"]["StringValue"] == first_trace


def test_kinesis_requeue_without_dead_letter_reports_the_record_as_failed(capfd, stream_and_dlq, monkeypatch):
    stream, _, _, _ = stream_and_dlq
    monkeypatch.delenv("LAMBDA_KIT_DEAD_LETTER", raising=False)

    @stream_handler(on_failure="requeue", max_attempts=1)
    def handler(payload, context):
        raise ValueError("always")

    event = kinesis_event({"n": 1}, stream=stream)
    sequence_number = event["Records"][0]["kinesis"]["sequenceNumber"]
    assert handler(event, None) == {"batchItemFailures": [{"itemIdentifier": sequence_number}]}
    (error,) = of_level(read_lines(capfd), "ERROR")
    assert error["outcome"] == "failed" and error["error"] == "always"
    assert error["requeue_error"] == (
        "RuntimeError: on_failure='requeue' reached max_attempts but no dead_letter is configured "
        "(pass dead_letter= or set LAMBDA_KIT_DEAD_LETTER); the record is reported as failed"
    )


@pytest.mark.parametrize("how", ["queue url", "queue arn", "callable", "environment"])
def test_kinesis_dead_letter_destination_forms(capfd, aws_endpoint, unique_name, monkeypatch, how):
    import boto3

    sqs = boto3.client("sqs")
    queue_url = sqs.create_queue(QueueName=unique_name("dlq"))["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    monkeypatch.delenv("LAMBDA_KIT_DEAD_LETTER", raising=False)
    target = {
        "queue url": queue_url,
        "queue arn": queue_arn,
        "callable": lambda: queue_arn,
        "environment": None,
    }[how]
    if how == "environment":
        monkeypatch.setenv("LAMBDA_KIT_DEAD_LETTER", queue_url)

    @stream_handler(on_failure="requeue", max_attempts=1, dead_letter=target)
    def handler(payload, context):
        raise ValueError("poison")

    assert handler(kinesis_event({"trace_id": "dl-1"}), None) == {"batchItemFailures": []}
    (error,) = of_level(read_lines(capfd), "ERROR")
    assert error["outcome"] == "dead_lettered"
    (message,) = sqs.receive_message(QueueUrl=queue_url, MessageAttributeNames=["All"], WaitTimeSeconds=1)[
        "Messages"
    ]
    assert message["MessageAttributes"]["trace_id"]["StringValue"] == "dl-1"
