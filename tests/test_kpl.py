"""KPL-aggregated Kinesis records: built with aws-kinesis-agg's own aggregator, split into their
user records; a failure inside an aggregate is reported by the aggregate's sequence number."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _hostile import captured, of_level, parse_lines
from test_streams import stream_and_dlq  # noqa: F401  (the moto stream and dead-letter queue)

from lambda_kit import current_record, stream_handler
from lambda_kit.sources.kpl import MAGIC, schema
from lambda_kit.testing import kinesis_event, kinesis_kpl_record, kinesis_record, lambda_context, pipes_batch

ROOT = Path(__file__).resolve().parent.parent


class Recorder:
    def __init__(self, fail_on=()):
        self.fail_on = set(fail_on)
        self.seen = []

    def __call__(self, payload, context):
        record = current_record()
        self.seen.append((record.id, record.trace_id, payload, record.raw))
        if record.id in self.fail_on:
            raise RuntimeError("no")


def run(handler, event):
    with captured() as out:
        response = handler(event, lambda_context())
    return response, parse_lines(out)


def test_each_user_record_reaches_the_function_in_order():
    aggregate = kinesis_kpl_record(
        {"n": 1}, {"n": 2, "trace_id": "T-2"}, b'{"n": 3}', partition_keys=["a", "b", "a"]
    )
    plain = kinesis_record({"n": 4})
    fn = Recorder()
    response, lines = run(stream_handler(fn), {"Records": [aggregate, plain]})
    assert response == {"batchItemFailures": []} and of_level(lines, "ERROR") == []
    seq, event_id = aggregate["kinesis"]["sequenceNumber"], aggregate["eventID"]
    assert [(i, t, p) for i, t, p, _ in fn.seen] == [
        (f"{seq}:0", f"{event_id}:0", {"n": 1}),
        (f"{seq}:1", "T-2", {"n": 2, "trace_id": "T-2"}),
        (f"{seq}:2", f"{event_id}:2", {"n": 3}),
        (plain["kinesis"]["sequenceNumber"], plain["eventID"], {"n": 4}),
    ]
    raws = [raw["kinesis"] for _, _, _, raw in fn.seen[:3]]
    assert [(r["partitionKey"], r["subSequenceNumber"], r["aggregated"]) for r in raws] == [
        ("a", 0, True),
        ("b", 1, True),
        ("a", 2, True),
    ]
    assert base64.b64decode(raws[2]["data"]) == b'{"n": 3}' and raws[0]["sequenceNumber"] == seq


def test_a_failure_inside_an_aggregate_is_reported_by_the_aggregate_and_stops_there():
    """Lambda checkpoints on sequence numbers only: the whole aggregate comes back, so the user
    records before the failed one run again (at least once), those after it run then."""
    aggregate = kinesis_kpl_record({"n": 1}, {"n": 2}, {"n": 3})
    after = kinesis_record({"n": 4})
    seq = aggregate["kinesis"]["sequenceNumber"]
    fn = Recorder(fail_on={f"{seq}:1"})
    response, lines = run(stream_handler(fn), {"Records": [aggregate, after]})
    assert [i for i, *_ in fn.seen] == [f"{seq}:0", f"{seq}:1"]
    assert response == {"batchItemFailures": [{"itemIdentifier": seq}]}
    [error] = of_level(lines, "ERROR")
    assert error["record_id"] == f"{seq}:1"
    [stopped] = of_level(lines, "WARN")
    assert stopped["not_processed"] == 2


def test_through_pipes_an_aggregate_is_named_by_its_event_id():
    event = kinesis_event({"n": 0})
    event["Records"] = [kinesis_kpl_record({"n": 1}, {"n": 2}), kinesis_record({"n": 3})]
    batch = pipes_batch(event)
    seq = batch[0]["sequenceNumber"]
    fn = Recorder(fail_on={f"{seq}:0"})
    response, _ = run(stream_handler(fn), batch)
    assert [i for i, *_ in fn.seen] == [f"{seq}:0"]
    assert response == {
        "batchItemFailures": [
            {"itemIdentifier": batch[0]["eventID"]},
            {"itemIdentifier": batch[1]["eventID"]},
        ]
    }


def test_json_false_gives_each_user_records_bytes():
    fn = Recorder()
    run(stream_handler(json=False)(fn), {"Records": [kinesis_kpl_record(b"\x00\x01", b"plain text")]})
    assert [p for _, _, p, _ in fn.seen] == [b"\x00\x01", b"plain text"]


def aggregate_data(body: bytes, digest: bytes | None = None) -> str:
    return base64.b64encode(
        MAGIC + body + (hashlib.md5(body).digest() if digest is None else digest)
    ).decode()


def crafted(partition_keys: list[str], records: list[tuple[int, bytes]]) -> bytes:
    message = schema()()
    message.partition_key_table.extend(partition_keys)
    for index, data in records:
        message.records.add(partition_key_index=index, data=data)
    return message.SerializeToString()


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (
            aggregate_data(crafted(["a"], [(0, b"{}")]), digest=b"\x00" * 16),
            "KPL aggregate's MD5 digest does not match",
        ),
        (aggregate_data(b"\xff\xff\xff"), "KPL aggregate's protobuf cannot be parsed"),
        (
            aggregate_data(crafted(["a"], [(0, b"{}"), (3, b"{}")])),
            "KPL user record 1 names partition key 3 of 1",
        ),
        (aggregate_data(crafted(["a"], [])), "KPL aggregate holds no user records"),
        (base64.b64encode(MAGIC + b"short").decode(), "KPL aggregate's MD5 digest does not match"),
    ],
)
@pytest.mark.parametrize("json_flag", [True, False])
def test_an_aggregate_that_cannot_be_split_fails_whole_with_its_reason(data, reason, json_flag):
    """Never handed over as one opaque record (aws-kinesis-agg's deaggregator would, or drop the rest)."""
    bad = kinesis_record(None, raw_data=data)
    fn = Recorder()
    response, lines = run(stream_handler(json=json_flag)(fn), {"Records": [bad, kinesis_record({"n": 1})]})
    assert fn.seen == []
    assert response == {"batchItemFailures": [{"itemIdentifier": bad["kinesis"]["sequenceNumber"]}]}
    [error] = of_level(lines, "ERROR")
    assert error["message"] == "record could not be decoded" and error["error"].startswith(reason)


def test_data_that_only_starts_like_an_aggregate_is_an_ordinary_record():
    data = b"\xf3\x89\x9a\xc0 not an aggregate"
    record = kinesis_record(data)
    assert record["kinesis"]["data"].startswith("84maw")
    fn = Recorder()
    run(stream_handler(json=False)(fn), {"Records": [record]})
    assert [p for _, _, p, _ in fn.seen] == [data]


def subprocess_run(script: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_aws_kinesis_agg_is_loaded_only_for_an_aggregate_and_leaves_nothing_behind():
    data = aggregate_data(crafted(["a"], [(0, b"[]")]))
    out = subprocess_run(f"""
        import sys
        from lambda_kit import stream_handler
        from lambda_kit.testing import kinesis_record
        from lambda_kit.log import set_sink
        set_sink(lambda line: None)
        aggregate = {{"kinesis": {{"sequenceNumber": "7", "data": {data!r}}}}}
        handler = stream_handler(json=False)(lambda p, c: p)
        handler({{"Records": [kinesis_record({{"n": 1}})]}}, None)
        print("plain", "google.protobuf" in sys.modules, "aws_kinesis_agg" in sys.modules)
        path = list(sys.path)
        handler({{"Records": [aggregate]}}, None)
        print("aggregate", "aws_kinesis_agg.messages_pb2" in sys.modules, sys.path == path, \
"config_pb2" in sys.modules)
    """)
    assert out.splitlines() == ["plain False False", "aggregate True True False"]


def test_without_aws_kinesis_agg_an_aggregate_fails_saying_what_to_install():
    out = subprocess_run(f"""
        import sys
        sys.modules["aws_kinesis_agg"] = None  # as if not installed
        from lambda_kit import stream_handler
        from lambda_kit.log import set_sink
        lines = []
        set_sink(lines.append)
        aggregate = {{"kinesis": {{"sequenceNumber": "7", "data": {aggregate_data(b"x")!r}}}}}
        print(stream_handler(lambda p, c: p)({{"Records": [aggregate]}}, None))
        print(lines[-1])
    """)
    response, line = [text for text in out.splitlines() if text]
    assert response == "{'batchItemFailures': [{'itemIdentifier': '7'}]}"
    assert "a KPL-aggregated record needs aws-kinesis-agg: pip install 'lambda-event-kit[kpl]'" in line


def test_requeue_puts_a_failed_user_record_back_alone(capfd, stream_and_dlq):  # noqa: F811
    """Against moto's Kinesis: with on_failure="requeue" the failed user record (not its
    aggregate) goes back on the stream, and the rest of the aggregate runs."""
    stream, dlq_url, read_new, _ = stream_and_dlq
    fn = Recorder()

    @stream_handler(on_failure="requeue", dead_letter=dlq_url)
    def handler(payload, context):
        fn(payload, context)
        if payload.get("poison"):
            raise ValueError("poison")

    event = kinesis_event({"n": 0}, stream=stream)
    event["Records"] = [
        kinesis_kpl_record({"n": 1}, {"poison": True, "trace_id": "T-p"}, {"n": 3}, stream=stream)
    ]
    assert handler(event, lambda_context()) == {"batchItemFailures": []}
    assert [p for _, _, p, _ in fn.seen] == [{"n": 1}, {"poison": True, "trace_id": "T-p"}, {"n": 3}]
    (read,) = read_new()
    envelope = json.loads(read["Data"])
    assert read["PartitionKey"] == "T-p" and envelope["lambda_kit_requeue"]["attempt"] == 1
    assert json.loads(base64.b64decode(envelope["data"])) == {"poison": True, "trace_id": "T-p"}
