"""kafka_handler: Amazon MSK and self-managed Kafka events, AWS's own samples first."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from _hostile import captured, of_level, parse_lines

from lambda_kit import UnsupportedEvent, current_record, current_trace_id, kafka_handler
from lambda_kit.errors import UndecodableRecord
from lambda_kit.testing import kafka_event, kafka_record, lambda_context

SAMPLES = Path(__file__).resolve().parent / "events" / "kafka"


def sample(name: str) -> dict:
    return json.loads((SAMPLES / name).read_text())


def run(handler, event):
    with captured() as out:
        try:
            response = handler(event, lambda_context())
        except Exception as error:  # the test looks at what was raised
            response = error
    return response, parse_lines(out)


class Recorder:
    def __init__(self, fail_on=()):
        self.fail_on = set(fail_on)
        self.seen = []

    def __call__(self, message, context):
        record = current_record()
        self.seen.append((record.id, current_trace_id(), message))
        if record.id in self.fail_on:
            raise RuntimeError(f"cannot take {record.id}")
        return None


@pytest.mark.parametrize("name", sorted(p.name for p in SAMPLES.glob("*.json")))
def test_every_aws_sample_event_is_taken_and_decoded(name):
    event = sample(name)
    fn = Recorder()
    response, lines = run(kafka_handler(json=False)(fn), event)
    assert response is None and of_level(lines, "ERROR") == []
    raws = [(key, raw) for key, batch in event["records"].items() for raw in batch]
    assert len(fn.seen) == len(raws)
    for (record_id, trace_id, message), (key, raw) in zip(fn.seen, raws, strict=True):
        assert record_id == trace_id == f"{key}:{raw['offset']}"  # no trace_id header: the stable fallback
        assert message["topic"] == raw["topic"] and message["partition"] == int(raw["partition"])
        assert message["value"] == base64.b64decode(raw["value"])
        assert message["key"] == (base64.b64decode(raw["key"]) if raw.get("key") else None)
        assert message["headers"] == ({"headerKey": b"headerValue"} if "headers" in raw else {})
        assert message["timestamp"] == raw["timestamp"] and message["timestamp_type"] == raw["timestampType"]


def test_json_values_are_decoded_and_other_values_fail_with_their_reason():
    fn = Recorder()
    response, _ = run(kafka_handler(fn), sample("msk-powertools.json"))
    assert response is None and [m["value"] for _, _, m in fn.seen] == [{"key": "value"}] * 3
    fn = Recorder()
    error, lines = run(kafka_handler(fn), sample("self-managed-devguide.json"))  # "Hello, this is a test."
    assert isinstance(error, UndecodableRecord) and fn.seen == []
    [line] = of_level(lines, "ERROR")
    assert line["message"] == "record could not be decoded" and line["error"].startswith(
        "value is not valid JSON"
    )
    assert line["record_id"] == "mytopic-0:15"


def test_trace_id_comes_from_the_trace_id_header():
    fn = Recorder()
    event = kafka_event({"n": 1}, {"n": 2}, {"n": 3}, trace_id=["T-1", None, "bad id\n"], key="order-7")
    response, lines = run(kafka_handler(fn), event)
    assert response is None
    offsets = [r["offset"] for r in event["records"]["orders-0"]]
    assert [t for _, t, _ in fn.seen] == ["T-1", f"orders-0:{offsets[1]}", f"orders-0:{offsets[2]}"]
    assert fn.seen[0][2]["key"] == b"order-7" and fn.seen[0][2]["headers"] == {"trace_id": b"T-1"}
    [warning] = of_level(lines, "WARN")
    assert (
        warning["message"].startswith("ignored an invalid trace id")
        and warning["rejected_trace_id"] == "'bad id\\n'"
    )


def test_headers_in_signed_bytes_as_java_sends_them():
    raw = kafka_record({"n": 1}, topic="t", partition=3, offset=9)
    raw["headers"] = [{"trace_id": list(b"T-9")}, {"blob": [-1, -128, 0, 127]}, {"blob": [1]}]
    fn = Recorder()
    run(kafka_handler(fn), {"eventSource": "aws:kafka", "records": {"t-3": [raw]}})
    [(record_id, trace_id, message)] = fn.seen
    assert (record_id, trace_id) == ("t-3:9", "T-9")
    assert message["headers"] == {"trace_id": b"T-9", "blob": b"\x01"}  # a repeated name: the last value


def test_several_headers_in_one_object_are_each_read():
    raw = kafka_record({"n": 1}, topic="t", partition=3, offset=9)
    raw["headers"] = [{"blob": [1, 2], "trace_id": list(b"T-9")}]
    fn = Recorder()
    run(kafka_handler(fn), {"eventSource": "aws:kafka", "records": {"t-3": [raw]}})
    [(_, trace_id, message)] = fn.seen
    assert trace_id == "T-9" and message["headers"] == {"blob": b"\x01\x02", "trace_id": b"T-9"}


class Unreadable(str):
    """Text that raises when compared: a value no check foresees (an event built by hand)."""

    def __ne__(self, other: object) -> bool:
        raise RuntimeError("cannot compare")

    __hash__ = str.__hash__


def test_an_error_no_check_foresaw_fails_that_record_alone_with_its_reason():
    fn = Recorder()
    event = kafka_event({"n": 1}, {"n": 2})
    spoiled, good = event["records"]["orders-0"]
    spoiled["topic"] = Unreadable(spoiled["topic"])
    response, lines = run(kafka_handler(on_failure="report")(fn), event)
    [error] = of_level(lines, "ERROR")
    assert (error["message"], error["error"]) == (
        "record could not be decoded",
        "record cannot be read (RuntimeError: cannot compare)",
    )
    assert isinstance(
        response, UndecodableRecord
    )  # it cannot be named: raised, so the whole batch comes back
    assert [record_id for record_id, _, _ in fn.seen] == [f"orders-0:{good['offset']}"]


def partitions(*batches: tuple[str, int, list]) -> dict:
    """An MSK event with several topic-partitions: (topic, partition, values)."""
    records = {}
    for topic, partition, values in batches:
        records[f"{topic}-{partition}"] = [
            kafka_record(value, topic=topic, partition=partition, offset=100 + i)
            for i, value in enumerate(values)
        ]
    return {
        "eventSource": "aws:kafka",
        "eventSourceArn": "arn:aws:kafka:us-east-1:123456789012:cluster/c/u",
        "records": records,
    }


def test_raise_stops_the_batch_at_the_first_failure_and_raises_it():
    """Lambda retries the whole batch on a function error: nothing after the failure is run now."""
    event = partitions(("a", 0, [1, 2, 3]), ("b", 0, [4, 5]))
    fn = Recorder(fail_on={"a-0:101"})
    error, lines = run(kafka_handler(fn), event)
    assert isinstance(error, RuntimeError) and str(error) == "cannot take a-0:101"
    assert [record_id for record_id, _, _ in fn.seen] == ["a-0:100", "a-0:101"]
    [stopped] = of_level(lines, "WARN")
    assert stopped["not_processed"] == 3


def test_report_stops_only_the_failed_partition_and_names_what_is_not_done():
    event = partitions(("a", 0, [1, 2, 3]), ("a", 1, [4, 5]), ("b", 0, [6]))
    fn = Recorder(fail_on={"a-0:101", "b-0:100"})
    response, lines = run(kafka_handler(on_failure="report")(fn), event)
    assert [record_id for record_id, _, _ in fn.seen] == [
        "a-0:100",
        "a-0:101",
        "a-1:100",
        "a-1:101",
        "b-0:100",
    ]
    assert response == {
        "batchItemFailures": [
            {"itemIdentifier": {"partition": "a-0", "offset": 101}},
            {
                "itemIdentifier": {"partition": "a-0", "offset": 102}
            },  # held back, so the partition stays in order
            {"itemIdentifier": {"partition": "b-0", "offset": 100}},
        ]
    }
    assert len(of_level(lines, "ERROR")) == 2


def test_report_raises_when_a_failed_record_cannot_be_named():
    event = partitions(("a", 0, [1]))
    event["records"]["a-0"].append({"topic": "a", "value": "e30="})  # no partition, no offset
    error, lines = run(kafka_handler(on_failure="report")(Recorder()), event)
    assert isinstance(error, UndecodableRecord) and "record has no topic, partition or offset" in str(error)


def test_report_with_no_failure_is_an_empty_report_and_raise_returns_nothing():
    event = partitions(("a", 0, [1, 2]))
    assert run(kafka_handler(on_failure="report")(Recorder()), event)[0] == {"batchItemFailures": []}
    assert run(kafka_handler(Recorder()), event)[0] is None


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ({"topic": "a", "partition": 0, "offset": 1, "value": "!!"}, "value is not valid base64"),
        ({"topic": "a", "partition": 0, "offset": 1, "value": 12}, "value is not base64 text"),
        ({"topic": "a", "partition": 0, "offset": 1, "key": "*", "value": "e30="}, "key is not valid base64"),
        (
            {"topic": "a", "partition": 0, "offset": 1, "value": "e30=", "headers": {"a": [1]}},
            "headers is not a list",
        ),
        (
            {"topic": "a", "partition": 0, "offset": 1, "value": "e30=", "headers": [{"a": [256]}]},
            "header 'a' is not a list of byte values",
        ),
        (
            {"topic": "a", "partition": 0, "offset": 1, "value": "e30=", "headers": ["a"]},
            "headers[0] is not an object",
        ),
        (
            {"topic": "a", "partition": -1, "offset": 1, "value": "e30="},
            "record has no topic, partition or offset",
        ),
        (
            {"topic": "a", "partition": 0, "offset": True, "value": "e30="},
            "record has no topic, partition or offset",
        ),
        (
            {"topic": "", "partition": 0, "offset": 1, "value": "e30="},
            "record has no topic, partition or offset",
        ),
        ({"topic": "a", "partition": 0, "offset": 1, "value": "bm90IGpzb24="}, "value is not valid JSON ("),
        ("a record", "record is not a JSON object"),
    ],
)
def test_undecodable_records_fail_with_their_reason(raw, reason):
    fn = Recorder()
    error, lines = run(kafka_handler(fn), {"eventSource": "aws:kafka", "records": {"a-0": [raw]}})
    assert isinstance(error, UndecodableRecord) and str(error).startswith(reason) and fn.seen == []
    [line] = of_level(lines, "ERROR")
    assert line["error"] == str(error) and "(None)" not in line["error"]
    assert (line["message"], line["source"], line["payload"], line["attempt"]) == (
        "record could not be decoded",
        "kafka",
        raw,
        1,
    )
    assert line["record_id"] == ("" if reason.startswith("record ") else "a-0:1")


@pytest.mark.parametrize(
    ("records", "payload", "reason"),
    [
        (["x"], ["x"], "records is not an object of topic-partition lists"),
        (
            {"a-0": "x", "b-0": [{"topic": "b", "partition": 0, "offset": 5, "value": "e30="}]},
            "x",
            "records['a-0'] is not a list",
        ),
    ],
)
def test_records_that_are_not_partition_lists_fail_as_kafka_with_their_raw_form(records, payload, reason):
    fn = Recorder()
    error, lines = run(
        kafka_handler(on_failure="report")(fn), {"eventSource": "aws:kafka", "records": records}
    )
    assert isinstance(error, UndecodableRecord) and str(error) == reason
    [line] = of_level(lines, "ERROR")
    assert (line["source"], line["error"], line["payload"], line["record_id"]) == (
        "kafka",
        reason,
        payload,
        "",
    )
    assert [record_id for record_id, _, _ in fn.seen] == (
        [] if type(records) is list else ["b-0:5"]
    )  # the others still run


def test_a_kafka_record_carries_its_raw_form_and_a_bad_traceparent_header_is_warned_about_as_kafka():
    fn = Recorder()
    seen = []
    raw = {
        "topic": "a",
        "partition": 0,
        "offset": 7,
        "value": "e30=",
        "headers": [{"traceparent": list(b"not-w3c")}],
    }
    run(
        kafka_handler(lambda message, context: seen.append((current_record().raw, current_record().source))),
        {"eventSource": "aws:kafka", "records": {"a-0": [raw]}},
    )
    _, lines = run(kafka_handler(fn), {"eventSource": "aws:kafka", "records": {"a-0": [raw]}})
    assert seen == [(raw, "kafka")]
    [warning] = of_level(lines, "WARN")
    assert (warning["source"], warning["message"]) == (
        "kafka",
        "ignored an invalid traceparent; reading the next place",
    )


def test_a_tombstone_reaches_the_function_with_value_none():
    fn = Recorder()
    run(kafka_handler(fn), kafka_event(None, key="deleted-key"))
    [(_, _, message)] = fn.seen
    assert message["value"] is None and message["key"] == b"deleted-key"


@pytest.mark.parametrize("records", [None, [], "x", {"a-0": "x"}])
def test_records_that_are_not_partition_lists_fail_the_batch(records):
    error, _ = run(kafka_handler(Recorder()), {"eventSource": "SelfManagedKafka", "records": records})
    assert isinstance(error, UndecodableRecord)


@pytest.mark.parametrize(
    "event",
    [
        {"eventSource": "aws:kafka"},
        {"eventSource": "aws:kinesis", "records": {}},
        {"records": {"a-0": []}},
        [],
    ],
)
def test_events_that_are_not_kafka_events_are_refused(event):
    error, _ = run(kafka_handler(Recorder()), event)
    assert isinstance(error, UnsupportedEvent)


def test_on_failure_must_be_raise_or_report():
    with pytest.raises(ValueError, match="on_failure must be one of"):
        kafka_handler(on_failure="requeue")


def test_the_function_gets_the_whole_message_and_any_byte_values_or_undecodable_trace_header():
    seen = []
    raw = {
        "topic": "a",
        "partition": 0,
        "offset": 7,
        "timestamp": 1,
        "timestampType": "CREATE_TIME",
        "key": "az0=",
        "value": "e30=",
        "headers": [{"trace_id": [255, 254]}, {"edge": [-128, 255]}],
    }
    _, lines = run(
        kafka_handler(lambda message, context: seen.append((message, current_trace_id()))),
        {"eventSource": "aws:kafka", "records": {"a-0": [raw]}},
    )
    assert seen == [
        (
            {
                "topic": "a",
                "partition": 0,
                "offset": 7,
                "timestamp": 1,
                "timestamp_type": "CREATE_TIME",
                "key": b"k=",
                "value": {},
                "headers": {"trace_id": bytes([255, 254]), "edge": bytes([128, 255])},
            },
            "a-0:7",
        )
    ]
    assert not of_level(lines, "ERROR")


def test_a_header_byte_below_minus_128_is_refused():
    raw = {"topic": "a", "partition": 0, "offset": 1, "value": "e30=", "headers": [{"a": [-129]}]}
    error, _ = run(kafka_handler(Recorder()), {"eventSource": "aws:kafka", "records": {"a-0": [raw]}})
    assert isinstance(error, UndecodableRecord) and str(error) == "header 'a' is not a list of byte values"
