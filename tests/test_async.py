"""``async def`` functions: up to ``max_concurrency`` records at once, each source's order kept, the
failure report as sound as the plain loop's, the trace scope per record, one loop per thread.

Overlap is shown with timestamps (each call's start and end on ``time.monotonic``) and a count of
calls in flight; no test asserts how fast anything is (``make bench`` shows that).
"""

from __future__ import annotations

import asyncio
import io
import json
import socketserver
import subprocess
import sys
import threading
import time

import pytest
from _hostile import HOSTILE, captured
from _logs import of_level, read_lines, with_message
from hypothesis import given
from hypothesis import strategies as st

from lambda_kit import (
    cloudwatch_logs_handler,
    current_record,
    current_trace_id,
    current_window,
    get_logger,
    kafka_handler,
    s3_handler,
    sqs_handler,
    stream_handler,
)
from lambda_kit.testing import (
    cloudwatch_logs_event,
    dynamodb_record,
    dynamodb_stream_event,
    event,
    kafka_record,
    kinesis_record,
    lambda_context,
    s3_event,
    sqs_event,
    sqs_record,
    tumbling_window,
)

PAUSE = 0.05  # seconds a call awaits: long enough that calls which can overlap do


class Timeline:
    """What the calls did: ``(key, n, start, end)`` each, and the most that were ever in flight."""

    def __init__(self) -> None:
        self.calls: list[tuple[object, int, float, float]] = []
        self.running = 0
        self.peak = 0
        self.running_keys: set[object] = set()
        self.key_overlaps = 0

    async def call(self, key: object, n: int, pause: float = PAUSE) -> None:
        start = time.monotonic()
        self.running += 1
        self.peak = max(self.peak, self.running)
        if key in self.running_keys:
            self.key_overlaps += 1
        self.running_keys.add(key)
        try:
            await asyncio.sleep(pause)
        finally:
            self.running -= 1
            self.running_keys.discard(key)
            self.calls.append((key, n, start, time.monotonic()))

    def of(self, key: object) -> list[tuple[int, float, float]]:
        return sorted(
            ((n, start, end) for k, n, start, end in self.calls if k == key), key=lambda call: call[1]
        )

    def overlapping(self) -> int:
        """The most calls whose [start, end) intervals share a moment: read from the timestamps."""
        edges = sorted([(start, 1) for *_, start, _ in self.calls] + [(end, -1) for *_, end in self.calls])
        most = now = 0
        for _, step in edges:
            now += step
            most = max(most, now)
        return most


def fifo_event(*groups_and_bodies: tuple[str, dict]) -> dict:
    records = []
    for group, body in groups_and_bodies:
        record = sqs_record(body, queue="orders.fifo")
        record["attributes"]["MessageGroupId"] = group
        records.append(record)
    return {"Records": records}


# --- SQS -------------------------------------------------------------------------------------------


def test_an_async_function_gets_the_context_and_an_undecodable_body_fails_alone_saying_why(capfd):
    calls = []
    context = lambda_context("async-views")

    @sqs_handler
    async def handler(message, given):
        calls.append((message, given))

    event = sqs_event({"ok": 1}, "{not json", trace_id=[None, "bad-body"])
    bad_id = event["Records"][1]["messageId"]
    assert handler(event, context) == {"batchItemFailures": [{"itemIdentifier": bad_id}]}
    assert calls == [({"ok": 1}, context)]
    [error] = of_level(read_lines(capfd), "ERROR")
    assert (error["message"], error["error_type"], error["trace_id"]) == (
        "record could not be decoded",
        "UndecodableRecord",
        "bad-body",
    )
    assert "not valid JSON" in error["error"] and error["payload"] == "{not json"


def test_each_record_of_an_async_function_is_logged_as_received_then_processed(capfd):
    @sqs_handler
    async def handler(message, context):
        return message["n"] * 10

    event = sqs_event({"n": 1}, {"n": 2}, trace_id=["t-1", "t-2"])
    assert handler(event, lambda_context()) == {"batchItemFailures": []}
    lines = read_lines(capfd)
    expected = list(zip(event["Records"], ["t-1", "t-2"], [1, 2], strict=True))
    received = with_message(lines, "record received")
    assert [
        (line["level"], line["source"], line["record_id"], line["trace_id"], line["payload"])
        for line in received
    ] == [("INFO", "sqs", raw["messageId"], trace_id, {"n": n}) for raw, trace_id, n in expected]
    processed = with_message(lines, "record processed")
    assert [
        (line["level"], line["source"], line["record_id"], line["trace_id"], line["outcome"], line["result"])
        for line in processed
    ] == [("INFO", "sqs", raw["messageId"], trace_id, "ok", n * 10) for raw, trace_id, n in expected]


def test_sqs_runs_up_to_max_concurrency_messages_at_once(capfd):
    timeline = Timeline()

    @sqs_handler(max_concurrency=4)
    async def handler(message, context):
        await timeline.call(message["n"], message["n"])
        return message["n"]

    assert handler(sqs_event(*[{"n": n} for n in range(12)]), lambda_context()) == {"batchItemFailures": []}
    assert len(timeline.calls) == 12
    assert 2 <= timeline.overlapping() <= 4  # overlap shown by the timestamps, never above the bound
    assert timeline.peak <= 4
    assert len(with_message(read_lines(capfd), "record processed")) == 12


def test_an_async_function_without_max_concurrency_runs_one_message_at_a_time(capfd):
    timeline = Timeline()

    @sqs_handler
    async def handler(message, context):
        await timeline.call(message["n"], message["n"], 0.01)

    handler(sqs_event(*[{"n": n} for n in range(5)]), lambda_context())
    assert timeline.overlapping() == 1
    assert [n for _, n, _, _ in sorted(timeline.calls, key=lambda call: call[2])] == [0, 1, 2, 3, 4]


def test_a_failed_message_fails_alone_while_the_others_run_at_once(capfd):
    @sqs_handler(max_concurrency=5)
    async def handler(message, context):
        await asyncio.sleep(0.01 * (message["n"] % 3))
        if message["n"] in (2, 7):
            raise ValueError(f"bad {message['n']}")
        return message["n"]

    event = sqs_event(*[{"n": n} for n in range(10)])
    response = handler(event, lambda_context())
    ids = [record["messageId"] for record in event["Records"]]
    assert response == {"batchItemFailures": [{"itemIdentifier": ids[2]}, {"itemIdentifier": ids[7]}]}
    lines = read_lines(capfd)
    assert sorted(line["record_id"] for line in of_level(lines, "ERROR")) == sorted([ids[2], ids[7]])
    assert len(with_message(lines, "record processed")) == 8


def test_fifo_groups_stay_in_order_while_groups_run_at_once(capfd):
    timeline = Timeline()

    @sqs_handler(max_concurrency=3)
    async def handler(message, context):
        await timeline.call(message["group"], message["n"])

    bodies = [
        (group, {"group": group, "n": n}) for n in range(4) for group in "abc"
    ]  # interleaved, as SQS delivers
    assert handler(fifo_event(*bodies), lambda_context()) == {"batchItemFailures": []}
    for group in "abc":
        calls = timeline.of(group)
        assert [n for n, _, _ in calls] == [0, 1, 2, 3]  # in order
        assert all(
            calls[i][2] <= calls[i + 1][1] for i in range(3)
        )  # one at a time: each ends before the next starts
    assert timeline.key_overlaps == 0
    assert timeline.overlapping() >= 2  # groups overlap


def test_a_fifo_failure_holds_back_the_rest_of_its_group_only(capfd):
    calls = []

    @sqs_handler(max_concurrency=3)
    async def handler(message, context):
        await asyncio.sleep(0.005)
        calls.append((message["group"], message["n"]))
        if message == {"group": "a", "n": 1}:
            raise ValueError("a1")

    event = fifo_event(*[(group, {"group": group, "n": n}) for n in range(4) for group in "ab"])
    ids = {
        (r["attributes"]["MessageGroupId"], json.loads(r["body"])["n"]): r["messageId"]
        for r in event["Records"]
    }
    response = handler(event, lambda_context())
    assert [item["itemIdentifier"] for item in response["batchItemFailures"]] == [
        ids["a", 1],
        ids["a", 2],
        ids["a", 3],
    ]
    assert sorted(calls) == [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("b", 2), ("b", 3)]
    held = of_level(read_lines(capfd), "WARN")
    assert sorted(line["record_id"] for line in held) == sorted([ids["a", 2], ids["a", 3]])


# --- Kinesis and DynamoDB Streams -------------------------------------------------------------------


def test_kinesis_runs_each_partition_key_in_order_and_keys_at_once(capfd):
    timeline = Timeline()

    @stream_handler(max_concurrency=3)
    async def handler(payload, context):
        await timeline.call(payload["key"], payload["n"])

    event = {
        "Records": [
            kinesis_record({"key": key, "n": n}, partition_key=key) for n in range(3) for key in "xyz"
        ]
    }
    assert handler(event, lambda_context()) == {"batchItemFailures": []}
    for key in "xyz":
        calls = timeline.of(key)
        assert [n for n, _, _ in calls] == [0, 1, 2]
        assert all(calls[i][2] <= calls[i + 1][1] for i in range(2))
    assert timeline.key_overlaps == 0 and 2 <= timeline.overlapping() <= 3


def test_kinesis_checkpoint_is_the_first_failed_record_and_every_record_before_it_ran(capfd):
    """Key "slow" holds records before the failure: they still run, though the failure came first."""
    done = []

    @stream_handler(max_concurrency=2)
    async def handler(payload, context):
        await asyncio.sleep(payload.get("pause", 0))
        if payload.get("fail"):
            raise ValueError(f"bad {payload['n']}")
        done.append(payload["n"])

    payloads = [
        ("slow", {"n": 0, "pause": 0.05}),
        ("fast", {"n": 1}),
        ("slow", {"n": 2, "pause": 0.05}),
        ("fast", {"n": 3, "fail": True}),
        ("fast", {"n": 4}),
        ("slow", {"n": 5, "pause": 0.05}),
        ("other", {"n": 6}),
    ]
    event = {"Records": [kinesis_record(payload, partition_key=key) for key, payload in payloads]}
    sequence = [record["kinesis"]["sequenceNumber"] for record in event["Records"]]
    response = handler(event, lambda_context())
    assert response == {"batchItemFailures": [{"itemIdentifier": sequence[3]}]}
    assert sorted(done) == [0, 1, 2]  # all before the checkpoint; nothing after it started
    lines = read_lines(capfd)
    [stopped] = with_message(
        lines, "stopped the batch at the failed record; Lambda retries from it, in order"
    )
    assert stopped["record_id"] == sequence[3] and stopped["not_processed"] == 3


def test_a_later_failure_found_first_gives_way_to_an_earlier_one(capfd):
    """Record 3 fails at once; record 0 (another key) fails later: the checkpoint is record 0's."""

    @stream_handler(max_concurrency=2)
    async def handler(payload, context):
        await asyncio.sleep(payload["pause"])
        raise ValueError(str(payload["n"]))

    event = {
        "Records": [
            kinesis_record({"n": 0, "pause": 0.05}, partition_key="a"),
            kinesis_record({"n": 1, "pause": 0.0}, partition_key="a"),
            kinesis_record({"n": 3, "pause": 0.0}, partition_key="b"),
        ]
    }
    sequence = [record["kinesis"]["sequenceNumber"] for record in event["Records"]]
    response = handler(event, lambda_context())
    reported = [item["itemIdentifier"] for item in response["batchItemFailures"]]
    assert (
        reported[0] == sequence[0] and min(reported, key=int) == sequence[0]
    )  # Lambda checkpoints at the lowest
    assert sequence[1] not in reported  # a's next record never ran: it comes after the checkpoint


def test_a_later_failure_never_moves_the_stop_past_an_earlier_one(capfd):
    """Record 0 fails, then record 3 (already running): record 2, waiting behind record 1 of its
    key, comes after the first failure and must not start."""
    called = []

    @stream_handler(max_concurrency=3)
    async def handler(payload, context):
        called.append(payload["n"])
        await asyncio.sleep(payload["pause"])
        if payload.get("fail"):
            raise ValueError(str(payload["n"]))

    event = {
        "Records": [
            kinesis_record({"n": 0, "pause": 0.01, "fail": True}, partition_key="a"),
            kinesis_record({"n": 1, "pause": 0.1}, partition_key="b"),
            kinesis_record({"n": 2, "pause": 0.0}, partition_key="b"),
            kinesis_record({"n": 3, "pause": 0.03, "fail": True}, partition_key="c"),
        ]
    }
    sequence = [record["kinesis"]["sequenceNumber"] for record in event["Records"]]
    response = handler(event, lambda_context())
    assert sorted(called) == [0, 1, 3]
    assert [item["itemIdentifier"] for item in response["batchItemFailures"]] == [sequence[0], sequence[3]]


def test_dynamodb_runs_each_item_in_order_and_items_at_once(capfd):
    timeline = Timeline()

    @stream_handler(max_concurrency=4)
    async def handler(change, context):
        item = change["new_image"]
        await timeline.call(item["PK"], item["n"])

    records = [
        dynamodb_record("MODIFY", new_image={"PK": f"item-{i}", "SK": "v", "n": n})
        for n in range(3)
        for i in range(4)
    ]
    assert handler(dynamodb_stream_event(*records), lambda_context()) == {"batchItemFailures": []}
    for i in range(4):
        assert [n for n, _, _ in timeline.of(f"item-{i}")] == [0, 1, 2]
    assert timeline.key_overlaps == 0 and 2 <= timeline.overlapping() <= 4


def stream_batches(source: str):
    """(keys, which positions fail, pauses) for a random stream batch."""
    size = st.integers(1, 10)
    return size.flatmap(
        lambda n: st.tuples(
            st.just(source),
            st.lists(st.sampled_from("abcd"), min_size=n, max_size=n),
            st.lists(st.sampled_from([False, False, False, True]), min_size=n, max_size=n),
            st.lists(st.sampled_from([0, 0, 0.001, 0.003]), min_size=n, max_size=n),
            st.integers(1, 4),
        )
    )


def stream_event(source: str, keys, fails, pauses) -> tuple[dict, list[str]]:
    payloads = [
        {"n": n, "key": key, "fail": fail, "pause": pause}
        for n, (key, fail, pause) in enumerate(zip(keys, fails, pauses, strict=True))
    ]
    if source == "kinesis":
        records = [kinesis_record(payload, partition_key=payload["key"]) for payload in payloads]
        return {"Records": records}, [record["kinesis"]["sequenceNumber"] for record in records]
    records = [
        dynamodb_record("MODIFY", keys={"PK": p["key"]}, new_image={"PK": p["key"], **p}) for p in payloads
    ]
    return dynamodb_stream_event(*records), [record["dynamodb"]["SequenceNumber"] for record in records]


@HOSTILE
@given(st.one_of(stream_batches("kinesis"), stream_batches("dynamodb")))
def test_the_checkpoint_never_passes_a_record_that_did_not_run(batch):
    """For any batch, keys, failures, timings and bound: every record before the reported checkpoint
    ran and succeeded, the checkpoint is the sequential loop's own, each key ran in order, one at a
    time, and no more than ``max_concurrency`` records ran at once."""
    source, keys, fails, pauses, limit = batch
    event, sequence = stream_event(source, keys, fails, pauses)
    timeline = Timeline()
    succeeded = set()

    def payload_of(received):
        return received if source == "kinesis" else received["new_image"]

    @stream_handler(max_concurrency=limit)
    async def concurrent(received, context):
        payload = payload_of(received)
        await timeline.call(payload["key"], payload["n"], payload["pause"])
        if payload["fail"]:
            raise ValueError("planned")
        succeeded.add(payload["n"])

    @stream_handler
    def sequential(received, context):
        if payload_of(received)["fail"]:
            raise ValueError("planned")

    with captured():
        response = concurrent(event, lambda_context())
        expected = sequential(event, lambda_context())
    reported = [item["itemIdentifier"] for item in response["batchItemFailures"]]
    if not any(fails):
        assert reported == [] and succeeded == set(range(len(keys)))
    else:
        first = fails.index(True)
        assert min(reported, key=int) == sequence[first] == expected["batchItemFailures"][0]["itemIdentifier"]
        assert reported == sorted(reported, key=int)  # in batch order, the checkpoint first
        assert set(range(first)) <= succeeded  # nothing before the checkpoint is left undone
    for key in set(keys):
        calls = timeline.of(key)
        assert [n for n, _, _ in calls] == sorted(n for n, _, _ in calls)
    assert timeline.key_overlaps == 0 and timeline.peak <= limit


@HOSTILE
@given(st.lists(st.tuples(st.sampled_from("abc"), st.booleans()), min_size=1, max_size=12), st.integers(1, 4))
def test_sqs_reports_what_the_sequential_loop_reports(messages, limit):
    """Standard and FIFO queues: the same failures (held-back group members included) either way."""
    for fifo in (False, True):
        event = (
            fifo_event(*[(group, {"fail": fail}) for group, fail in messages])
            if fifo
            else sqs_event(*[{"fail": f} for _, f in messages])
        )

        async def concurrent(message, context):
            await asyncio.sleep(0)
            if message["fail"]:
                raise ValueError("planned")

        def sequential(message, context):
            if message["fail"]:
                raise ValueError("planned")

        with captured():
            got = sqs_handler(max_concurrency=limit)(concurrent)(event, lambda_context())
            expected = sqs_handler(sequential)(event, lambda_context())
        assert sorted(map(str, got["batchItemFailures"])) == sorted(map(str, expected["batchItemFailures"]))


def test_a_windowed_batch_runs_one_record_at_a_time_and_undoes_a_failed_records_changes(capfd):
    """A tumbling window's state is kept or undone record by record: whatever max_concurrency, its
    batch runs one record at a time; the state goes back as it was before the failed record."""
    timeline = Timeline()

    @stream_handler(max_concurrency=4)
    async def handler(payload, context):
        state = current_window().state
        state["sum"] = state.get("sum", 0) + payload["n"]
        await timeline.call(payload["n"], payload["n"], 0.01)
        if payload.get("fail"):
            raise ValueError("after changing the state")

    event = {"Records": [kinesis_record({"n": n, "fail": n == 3}, partition_key=f"k{n}") for n in range(5)]}
    response = handler(tumbling_window(event, {"sum": 100}), lambda_context())
    assert response == {
        "state": {"sum": 103},
        "batchItemFailures": [{"itemIdentifier": event["Records"][3]["kinesis"]["sequenceNumber"]}],
    }
    assert timeline.overlapping() == 1 and [
        n for _, n, _, _ in sorted(timeline.calls, key=lambda c: c[2])
    ] == [0, 1, 2, 3]


def test_without_a_window_the_same_handler_runs_records_at_once(capfd):
    timeline = Timeline()

    @stream_handler(max_concurrency=4)
    async def handler(payload, context):
        await timeline.call(payload["n"], payload["n"])

    handler(
        {"Records": [kinesis_record({"n": n}, partition_key=f"k{n}") for n in range(4)]}, lambda_context()
    )
    assert timeline.overlapping() >= 2


# --- CloudWatch Logs -------------------------------------------------------------------------------


def test_cloudwatch_log_events_run_at_once(capfd):
    timeline = Timeline()

    @cloudwatch_logs_handler(max_concurrency=3)
    async def handler(log_event, context):
        await timeline.call(log_event["id"], 0)

    handler(event("cloudwatch_logs", {"n": 1}), lambda_context())  # one log event: it runs
    handler(cloudwatch_logs_event(*[f"line {n}" for n in range(6)]), lambda_context())
    assert len(timeline.calls) == 7 and timeline.overlapping() >= 2


# --- Kafka --------------------------------------------------------------------------------------


def kafka_batch(layout: dict[int, list[dict]]) -> dict:
    records = {
        f"orders-{p}": [kafka_record(value, partition=p, offset=o) for o, value in enumerate(values)]
        for p, values in layout.items()
    }
    return {
        "eventSource": "aws:kafka",
        "eventSourceArn": "arn:aws:kafka:us-east-1:123456789012:cluster/c/1",
        "records": records,
    }


def test_kafka_runs_each_partition_in_order_and_partitions_at_once(capfd):
    timeline = Timeline()

    @kafka_handler(max_concurrency=3)
    async def handler(message, context):
        await timeline.call(message["partition"], message["offset"])

    handler(kafka_batch({p: [{"v": o} for o in range(3)] for p in range(3)}), lambda_context())
    for p in range(3):
        calls = timeline.of(p)
        assert [n for n, _, _ in calls] == [0, 1, 2] and all(calls[i][2] <= calls[i + 1][1] for i in range(2))
    assert timeline.key_overlaps == 0 and 2 <= timeline.overlapping() <= 3


def test_kafka_report_mode_stops_only_the_failed_partition(capfd):
    calls = []

    @kafka_handler(on_failure="report", max_concurrency=2)
    async def handler(message, context):
        await asyncio.sleep(0.001)
        calls.append((message["partition"], message["offset"]))
        if message["value"].get("fail"):
            raise ValueError("bad")

    response = handler(kafka_batch({0: [{}, {"fail": True}, {}, {}], 1: [{}, {}, {}]}), lambda_context())
    assert response == {
        "batchItemFailures": [
            {"itemIdentifier": {"partition": "orders-0", "offset": 1}},
            {"itemIdentifier": {"partition": "orders-0", "offset": 2}},
            {"itemIdentifier": {"partition": "orders-0", "offset": 3}},
        ]
    }
    assert sorted(calls) == [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2)]


def test_kafka_raise_mode_raises_the_first_failure(capfd):
    @kafka_handler(max_concurrency=2)
    async def handler(message, context):
        await asyncio.sleep(0.001 * message["value"]["pause"])
        if message["value"].get("fail"):
            raise ValueError(f"partition {message['partition']}")

    with pytest.raises(ValueError, match="partition 0"):
        handler(
            kafka_batch({0: [{"pause": 5, "fail": True}], 1: [{"pause": 0, "fail": True}]}), lambda_context()
        )


# --- S3 ---------------------------------------------------------------------------------------


def test_s3_objects_of_one_event_run_at_once(capfd):
    timeline = Timeline()

    @s3_handler(max_concurrency=3)
    async def handler(obj, context):
        await timeline.call(obj.key, 0)

    handler(s3_event("a.txt", "b.txt", "c.txt"), lambda_context())
    assert len(timeline.calls) == 3 and timeline.overlapping() >= 2


# --- the trace scope per record -----------------------------------------------------------------


def test_each_record_sees_its_own_trace_id_and_its_log_lines_carry_it(capfd):
    logger = get_logger("async-scope")
    seen = []

    @sqs_handler(max_concurrency=6)
    async def handler(message, context):
        before = current_trace_id()
        await asyncio.sleep(0.001 * (6 - message["n"]))  # finish in the reverse order
        logger.info("inside", extra={"n": message["n"]})
        inner = await asyncio.create_task(
            asyncio.sleep(0, result=current_trace_id())
        )  # a task it starts inherits it
        seen.append((message["n"], before, current_trace_id(), inner, current_record().payload["n"]))
        return message["n"]

    trace_ids = [f"t-{n}" for n in range(6)]
    handler(sqs_event(*[{"n": n} for n in range(6)], trace_id=trace_ids), lambda_context())
    assert sorted(seen) == [(n, f"t-{n}", f"t-{n}", f"t-{n}", n) for n in range(6)]
    lines = read_lines(capfd)
    assert sorted((line["n"], line["trace_id"]) for line in with_message(lines, "inside")) == [
        (n, f"t-{n}") for n in range(6)
    ]
    assert sorted((line["result"], line["trace_id"]) for line in with_message(lines, "record processed")) == [
        (n, f"t-{n}") for n in range(6)
    ]
    assert current_trace_id() is None  # nothing leaks out of the invocation


def test_a_powertools_logger_logs_each_records_own_correlation_id(capfd):
    from aws_lambda_powertools import Logger

    stream = io.StringIO()
    logger = Logger(service="async-test", stream=stream)

    @sqs_handler(max_concurrency=4, logger=logger, log_event=False, log_result=False)
    async def handler(message, context):
        await asyncio.sleep(0.001 * (4 - message["n"]))
        logger.info("working", n=message["n"])

    handler(
        sqs_event(*[{"n": n} for n in range(4)], trace_id=[f"pt-{n}" for n in range(4)]), lambda_context()
    )
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert sorted((line["n"], line["correlation_id"], line["trace_id"]) for line in lines) == [
        (n, f"pt-{n}", f"pt-{n}") for n in range(4)
    ]


def test_a_logger_without_task_local_keys_is_refused_with_concurrency():
    class OldLogger:
        def set_correlation_id(self, value):
            pass

        def append_keys(self, **keys):
            pass

    with pytest.raises(TypeError, match="logger= needs Powertools 3"):
        sqs_handler(max_concurrency=2, logger=OldLogger())(lambda_async)
    sqs_handler(logger=OldLogger())(lambda_async)  # one at a time, its shared keys are right


def test_a_logger_without_task_local_keys_gets_each_records_trace_id_in_its_shared_keys():
    """A logger of Powertools 2's kind (no ``thread_safe_append_keys``): each record's trace id is
    set as its correlation id and its ``trace_id`` key, before the function runs."""
    told = []

    class OldLogger:
        def set_correlation_id(self, value):
            told.append(("correlation_id", value))

        def append_keys(self, **keys):
            told.append(("keys", keys))

    @sqs_handler(logger=OldLogger(), log_event=False, log_result=False)
    def handler(message, context):
        told.append(("called", message["n"]))

    handler(sqs_event({"n": 1}, {"n": 2}, trace_id=["old-1", "old-2"]), lambda_context())
    assert told == [
        ("correlation_id", "old-1"),
        ("keys", {"trace_id": "old-1"}),
        ("called", 1),
        ("correlation_id", "old-2"),
        ("keys", {"trace_id": "old-2"}),
        ("called", 2),
    ]


async def lambda_async(message, context):
    return message


# --- one event loop, reused -----------------------------------------------------------------------


class Echo(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            self.wfile.write(line)


def test_one_event_loop_serves_every_warm_invocation(capfd):
    """A connection opened in one invocation is still usable in the next: a loop per invocation
    (``asyncio.run``) would have closed it."""
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    connection = {}
    loops = []

    @sqs_handler
    async def handler(message, context):
        loops.append(asyncio.get_running_loop())
        if "streams" not in connection:
            connection["streams"] = await asyncio.open_connection(*server.server_address)
        reader, writer = connection["streams"]
        writer.write(f"{message['n']}\n".encode())
        await writer.drain()
        return int(await reader.readline())

    try:
        for n in range(3):
            assert handler(sqs_event({"n": n}), lambda_context()) == {"batchItemFailures": []}
        assert [line["result"] for line in with_message(read_lines(capfd), "record processed")] == [0, 1, 2]
        assert loops[0] is loops[1] is loops[2] and not loops[0].is_closed()
    finally:
        connection["streams"][1].close()
        server.shutdown()
        server.server_close()


def test_handlers_called_from_several_threads_each_run_their_own_loop(capfd):
    """The local stack serves functions in threads: each thread has its loop, none blocks another."""
    results = {}

    @sqs_handler(max_concurrency=2)
    async def handler(message, context):
        await asyncio.sleep(0.02)
        return id(asyncio.get_running_loop())

    def invoke(name):
        results[name] = handler(sqs_event({"n": 1}, {"n": 2}), lambda_context())

    threads = [threading.Thread(target=invoke, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {n: {"batchItemFailures": []} for n in range(3)}
    loops = {line["result"] for line in with_message(read_lines(capfd), "record processed")}
    assert len(loops) == 3


# --- commit, cancellation, options -------------------------------------------------------------------


def test_an_async_commit_is_awaited_with_the_records_in_batch_order(capfd):
    committed = []

    async def commit(items):
        await asyncio.sleep(0)
        committed.extend(result for _, result in items)
        return [record for record, result in items if result == 3]  # the commit refuses one

    @sqs_handler(max_concurrency=5, commit=commit)
    async def handler(message, context):
        await asyncio.sleep(0.001 * (5 - message["n"]))  # finish in reverse order
        return message["n"]

    event = sqs_event(*[{"n": n} for n in range(5)])
    response = handler(event, lambda_context())
    assert committed == [0, 1, 2, 3, 4]
    assert response == {"batchItemFailures": [{"itemIdentifier": event["Records"][3]["messageId"]}]}


def test_an_async_commit_of_a_plain_function_is_run_too(capfd):
    committed = []

    async def commit(items):
        committed.extend(result for _, result in items)

    handler = sqs_handler(commit=commit)(lambda message, context: message["n"])
    assert handler(sqs_event({"n": 1}, {"n": 2}), lambda_context()) == {"batchItemFailures": []}
    assert committed == [1, 2]


def test_a_cancelled_error_from_the_function_fails_its_record_alone(capfd):
    @sqs_handler(max_concurrency=3)
    async def handler(message, context):
        if message["n"] == 1:
            task = asyncio.create_task(asyncio.sleep(10))
            task.cancel()
            await task  # raises CancelledError into the function
        await asyncio.sleep(0.01)
        return message["n"]

    event = sqs_event(*[{"n": n} for n in range(4)])
    response = handler(event, lambda_context())
    assert response == {"batchItemFailures": [{"itemIdentifier": event["Records"][1]["messageId"]}]}
    lines = read_lines(capfd)
    assert [line["error_type"] for line in of_level(lines, "ERROR")] == ["CancelledError"]
    assert len(with_message(lines, "record processed")) == 3


SYSTEM_EXIT = """
import asyncio
from lambda_kit import sqs_handler
from lambda_kit.testing import lambda_context, sqs_event

@sqs_handler(max_concurrency=2)
async def handler(message, context):
    if message["n"] == 1:
        await asyncio.sleep(0.01)
        raise SystemExit(3)
    await asyncio.sleep(10)  # still running when record 1 ends the invocation

print(handler(sqs_event({"n": 0}, {"n": 1}), lambda_context()))
"""


def test_a_system_exit_ends_the_invocation_and_is_no_records_failure():
    """As under a plain function (in a fresh interpreter: the exit leaves the thread's loop mid-run)."""
    done = subprocess.run([sys.executable, "-c", SYSTEM_EXIT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["message"] for line in lines] == ["record received", "record received"]


@pytest.mark.parametrize("value", [0, -1, True, 1.5, "4", None])
@pytest.mark.parametrize(
    "decorator", [sqs_handler, stream_handler, kafka_handler, s3_handler, cloudwatch_logs_handler]
)
def test_max_concurrency_must_be_a_whole_number_of_at_least_one(decorator, value):
    with pytest.raises(
        ValueError, match=f"{decorator.__name__}: max_concurrency must be a whole number of at least 1"
    ):
        decorator(max_concurrency=value)


@pytest.mark.parametrize(
    "decorator", [sqs_handler, stream_handler, kafka_handler, s3_handler, cloudwatch_logs_handler]
)
def test_max_concurrency_on_a_plain_function_is_refused_at_import_time(decorator):
    def plain(payload, context):
        return payload

    with pytest.raises(
        TypeError,
        match=(
            rf"@{decorator.__name__}\(max_concurrency=4\) needs an async def function; "
            r"'test_max.*plain' is a plain function"
        ),
    ):
        decorator(max_concurrency=4)(plain)
    assert decorator(max_concurrency=1)(plain).__lambda_kit__["max_concurrency"] == 1


def test_metrics_count_an_async_batch_as_the_plain_loop_does(monkeypatch, capfd):
    from lambda_kit import metrics

    sent = []
    monkeypatch.setattr(metrics, "count", lambda *args: sent.append(args))

    @sqs_handler(max_concurrency=3, metrics=True)
    async def handler(message, context):
        if message["fail"]:
            raise ValueError("x")

    handler(
        sqs_event({"fail": False}, {"fail": True}, {"fail": False}, receive_count=2),
        lambda_context("fn-async"),
    )
    assert sent == [("fn-async", "sqs", metrics.Counts(processed=2, failed=1, retried=3), {"datadog"})]


def test_an_async_function_may_call_blocking_code_in_threads(capfd):
    """The documented way to run a blocking client at once: ``asyncio.to_thread`` (the trace scope
    goes with it)."""

    def blocking(n):
        time.sleep(0.2)
        return (n, current_trace_id())

    @sqs_handler(max_concurrency=4)
    async def handler(message, context):
        start = time.monotonic()
        result = await asyncio.to_thread(blocking, message["n"])
        return [*result, start, time.monotonic()]

    handler(
        sqs_event(*[{"n": n} for n in range(4)], trace_id=[f"th-{n}" for n in range(4)]), lambda_context()
    )
    results = [line["result"] for line in with_message(read_lines(capfd), "record processed")]
    assert sorted((n, t) for n, t, _, _ in results) == [(n, f"th-{n}") for n in range(4)]
    starts, ends = [r[2] for r in results], [r[3] for r in results]
    assert max(starts) < min(ends)  # all four were in their threads at the same moment
