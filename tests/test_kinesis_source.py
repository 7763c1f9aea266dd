"""The Kinesis adapter's exact behaviour, as a user of ``stream_handler`` sees it: the error line of
each record it cannot read (reason, payload, trace id, source), strict base64 everywhere, requeued
records and log events (attempts, envelopes), KPL user records, ``json=False``, and what lands on the
stream and in the dead letter (SQS by URL or ARN, SNS) on moto's server.

Written against mutation testing (``make mutate MODULE=lambda_kit/sources/kinesis.py``): each test
names the exact value a broken adapter would change."""

from __future__ import annotations

import base64
import gzip
import json

import pytest
from _hostile import captured, of_level, parse_lines
from _streams import new_stream

from lambda_kit import aws, codec, current_record, stream_handler
from lambda_kit.testing import (
    awslogs_data,
    kinesis_event,
    kinesis_log_record,
    kinesis_record,
    lambda_context,
    log_line,
    log_subscription_message,
    pipes_batch,
)


class Recorder:
    """A stream function keeping (payload, record id, trace id, raw record) of each call; it raises
    for a payload holding ``"fail"`` (a dict's key, or the bytes)."""

    def __init__(self, message: str = "cannot process"):
        self.message = message
        self.seen = []

    def __call__(self, payload, context):
        record = current_record()
        self.seen.append((payload, record.id, record.trace_id, record.raw))
        text = payload.get("message", "") if isinstance(payload, dict) else payload
        if (isinstance(payload, dict) and "fail" in payload) or (
            isinstance(text, str | bytes) and "fail" in str(text)
        ):
            raise ValueError(self.message)


def run(handler, event):
    with captured() as out:
        response = handler(event, lambda_context())
    return response, parse_lines(out, traced=False)


def error_line(lines, *keys):
    [error] = of_level(lines, "ERROR")
    return {key: error.get(key) for key in keys}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


UNDECODABLE = (
    "message",
    "source",
    "record_id",
    "trace_id",
    "outcome",
    "attempt",
    "error_type",
    "error",
    "payload",
)


# --- records that cannot be read --------------------------------------------------------------------


@pytest.mark.parametrize("kinesis", [None, "junk", ["a", "list"]])
def test_a_record_without_a_kinesis_object_fails_the_batch_with_the_record_as_payload(kinesis):
    raw = {"eventSource": "aws:kinesis", "eventID": "shardId-000000000000:1", "awsRegion": "us-east-1"}
    if kinesis is not None:
        raw["kinesis"] = kinesis
    fn = Recorder()
    response, lines = run(stream_handler(fn), {"Records": [raw]})
    assert response == {"batchItemFailures": [{"itemIdentifier": ""}]}  # Lambda retries the whole batch
    assert fn.seen == []
    error = error_line(lines, *UNDECODABLE)
    assert error.pop("trace_id").startswith("h-")
    assert error == {
        "message": "record could not be decoded",
        "source": "kinesis",
        "record_id": "",
        "outcome": "failed",
        "attempt": 1,
        "error_type": "UndecodableRecord",
        "error": "record has no kinesis object",
        "payload": raw,
    }


@pytest.mark.parametrize("sequence_number", [None, "", 42])
def test_a_record_without_a_sequence_number_fails_the_batch_with_the_record_as_payload(sequence_number):
    raw = kinesis_record({"n": 1})
    raw["kinesis"]["sequenceNumber"] = sequence_number
    fn = Recorder()
    response, lines = run(stream_handler(fn), {"Records": [raw]})
    assert response == {"batchItemFailures": [{"itemIdentifier": ""}]}
    assert fn.seen == []
    error = error_line(lines, *UNDECODABLE)
    assert error.pop("trace_id").startswith("h-")
    assert error == {
        "message": "record could not be decoded",
        "source": "kinesis",
        "record_id": "",
        "outcome": "failed",
        "attempt": 1,
        "error_type": "UndecodableRecord",
        "error": "record has no kinesis.sequenceNumber",
        "payload": raw,
    }


def test_a_log_record_without_a_sequence_number_is_not_read_as_log_events():
    """A subscription message in a record Lambda cannot checkpoint fails the batch, unread."""
    raw = kinesis_log_record("a log event")
    raw["kinesis"]["sequenceNumber"] = ""
    fn = Recorder()
    response, lines = run(stream_handler(fn), {"Records": [raw]})
    assert response == {"batchItemFailures": [{"itemIdentifier": ""}]}
    assert fn.seen == []
    assert error_line(lines, "source", "error", "payload") == {
        "source": "kinesis",
        "error": "record has no kinesis.sequenceNumber",
        "payload": raw,
    }


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ("e3!0=", "Only base64 data is allowed"),  # '{}' with a character outside the alphabet
        ("e30=e30=", "Excess data after padding"),  # '{}' twice: non-strict base64 reads the first only
        ("e3 0=", "Only base64 data is allowed"),
        ("e30", "Incorrect padding"),
    ],
)
@pytest.mark.parametrize("json_flag", [True, False])
def test_data_that_only_lenient_base64_accepts_fails_with_the_reason_and_the_data_as_payload(
    data, why, json_flag
):
    bad = kinesis_record(None, raw_data=data)
    fn = Recorder()
    response, lines = run(stream_handler(json=json_flag)(fn), {"Records": [bad, kinesis_record({"n": 2})]})
    assert response == {"batchItemFailures": [{"itemIdentifier": bad["kinesis"]["sequenceNumber"]}]}
    assert fn.seen == []
    assert error_line(lines, *UNDECODABLE) == {
        "message": "record could not be decoded",
        "source": "kinesis",
        "record_id": bad["kinesis"]["sequenceNumber"],
        "trace_id": bad["eventID"],
        "outcome": "failed",
        "attempt": 1,
        "error_type": "UndecodableRecord",
        "error": f"kinesis.data is not valid base64 ({why})",
        "payload": data,
    }


def codec_reason(data: bytes) -> str:
    """What the codec in use says of ``data`` (each codec words it its own way)."""
    with pytest.raises(Exception) as refused:
        codec.loads(data)
    return str(refused.value)


def test_data_that_is_not_json_fails_with_the_codecs_reason_and_the_base64_as_payload():
    text = b'{"n": 1'
    data = b64(text)
    bad = kinesis_record(None, raw_data=data)
    response, lines = run(stream_handler(Recorder()), {"Records": [bad]})
    assert response == {"batchItemFailures": [{"itemIdentifier": bad["kinesis"]["sequenceNumber"]}]}
    assert error_line(lines, "error", "payload", "trace_id") == {
        "error": f"kinesis.data is not valid JSON ({codec_reason(text)})",
        "payload": data,
        "trace_id": bad["eventID"],
    }


# --- what the function receives -------------------------------------------------------------------


def test_json_false_hands_over_bytes_whatever_they_look_like():
    """Only a JSON object is read (for its trace id); the function gets the bytes in every case."""
    datas = [b"123", b'"text"', b"[1, 2]", b"null", b"{not json", b'{"trace_id": "t-raw"}', b"\xff\x00"]
    fn = Recorder()
    event = kinesis_event(*datas)
    response, lines = run(stream_handler(json=False)(fn), event)
    assert response == {"batchItemFailures": []} and of_level(lines, "WARN") == []
    assert [(payload, trace_id) for payload, _, trace_id, _ in fn.seen] == [
        (data, "t-raw" if b"t-raw" in data else record["eventID"])
        for data, record in zip(datas, event["Records"], strict=True)
    ]


def test_json_false_reads_a_tracers_context_in_a_json_object_as_it_reads_the_trace_id():
    traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    fn = Recorder()
    event = kinesis_event({"traceparent": traceparent, "n": 1})
    response, lines = run(stream_handler(json=False)(fn), event)
    assert response == {"batchItemFailures": []}
    [(payload, _, trace_id, _)] = fn.seen
    assert payload == base64.b64decode(
        event["Records"][0]["kinesis"]["data"]
    )  # the bytes, as json=False says
    assert trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"  # the producer's tracer's id
    assert {line["otelTraceID"] for line in lines} == {trace_id}


def test_a_json_payload_that_is_not_an_object_has_no_trace_id_to_reject():
    fn = Recorder()
    event = kinesis_event([1, 2], '"text"', 7, None)
    response, lines = run(stream_handler(fn), event)
    assert response == {"batchItemFailures": []}
    assert of_level(lines, "WARN") == []
    assert [(payload, trace_id) for payload, _, trace_id, _ in fn.seen] == [
        ([1, 2], event["Records"][0]["eventID"]),
        ("text", event["Records"][1]["eventID"]),
        (7, event["Records"][2]["eventID"]),
        (None, event["Records"][3]["eventID"]),
    ]


def test_a_malformed_tracer_context_in_the_payload_is_warned_about_as_kinesis():
    fn = Recorder()
    event = kinesis_event({"traceparent": "not-w3c", "n": 1})
    response, lines = run(stream_handler(fn), event)
    assert response == {"batchItemFailures": []}
    [warning] = of_level(lines, "WARN")
    assert {key: warning[key] for key in ("message", "source", "trace_id", "rejected_trace_context")} == {
        "message": "ignored an invalid traceparent; reading the next place",
        "source": "kinesis",
        "trace_id": event["Records"][0]["eventID"],
        "rejected_trace_context": "'not-w3c'",
    }


def test_a_record_without_an_event_id_is_traced_by_its_sequence_number():
    fn = Recorder()
    event = kinesis_event({"n": 1})
    del event["Records"][0]["eventID"]
    response, _ = run(stream_handler(fn), event)
    assert response == {"batchItemFailures": []}
    [(_, record_id, trace_id, _)] = fn.seen
    assert trace_id == record_id == event["Records"][0]["kinesis"]["sequenceNumber"]


def test_a_subsequence_number_alone_does_not_make_a_record_a_kpl_user_record():
    """Only the adapter's own ``aggregated`` mark does: a producer's field of that name changes nothing."""
    record = kinesis_record({"n": 1})
    record["kinesis"]["subSequenceNumber"] = 2
    fn = Recorder()
    response, _ = run(stream_handler(fn), {"Records": [record]})
    assert response == {"batchItemFailures": []}
    [(_, record_id, trace_id, _)] = fn.seen
    assert (record_id, trace_id) == (record["kinesis"]["sequenceNumber"], record["eventID"])


# --- KPL aggregates -------------------------------------------------------------------------------


def aggregate(*users: tuple[str, bytes, str | None], **options) -> dict:
    """A Kinesis record holding ``users`` (partition key, data, explicit hash key) aggregated by
    aws-kinesis-agg's own aggregator."""
    from aws_kinesis_agg.aggregator import RecordAggregator

    aggregator = RecordAggregator()
    for partition_key, data, hash_key in users:
        assert aggregator.add_user_record(partition_key, data, hash_key) is None
    partition_key, _, data = aggregator.clear_and_get().get_contents()
    return kinesis_record(None, partition_key=partition_key, raw_data=b64(data), **options)


HASH_KEY = "170141183460469231731687303715884105728"


@pytest.mark.parametrize("piped", [False, True], ids=["event source mapping", "EventBridge Pipes"])
def test_each_user_record_is_a_kinesis_record_of_its_own_fields(piped):
    """The function's ``current_record().raw`` is the aggregate's record with the user record's
    fields, in the shape it came in (flattened when EventBridge Pipes sent it)."""
    raw = aggregate(("a", b'{"n": 1}', HASH_KEY), ("b", b'{"n": 2}', None))
    fn = Recorder()
    response, _ = run(stream_handler(fn), pipes_batch({"Records": [raw]}) if piped else {"Records": [raw]})
    assert response == {"batchItemFailures": []}
    users = [("a", b'{"n": 1}', HASH_KEY), ("b", b'{"n": 2}', None)]
    expected = []
    for number, (key, data, hash_key) in enumerate(users):
        fields = {
            **raw["kinesis"],
            "partitionKey": key,
            "explicitHashKey": hash_key,
            "data": b64(data),
            "subSequenceNumber": number,
            "aggregated": True,
        }
        if piped:
            flat = {k: v for k, v in raw.items() if k != "kinesis"}
            expected.append({**raw["kinesis"], **flat, **fields})
        else:
            expected.append({**raw, "kinesis": fields})
    assert [seen_raw for *_, seen_raw in fn.seen] == expected
    assert [payload for payload, *_ in fn.seen] == [{"n": 1}, {"n": 2}]


def test_an_aggregate_whose_base64_only_lenient_decoding_accepts_fails_whole():
    raw = aggregate(("a", b'{"n": 1}', None))
    data = raw["kinesis"]["data"]
    raw["kinesis"]["data"] = data[:12] + "!" + data[12:]  # base64.b64decode (not strict) skips the "!"
    fn = Recorder()
    response, lines = run(stream_handler(fn), {"Records": [raw, kinesis_record({"n": 2})]})
    assert response == {"batchItemFailures": [{"itemIdentifier": raw["kinesis"]["sequenceNumber"]}]}
    assert fn.seen == []
    assert error_line(lines, "error", "payload") == {
        "error": "kinesis.data is not valid base64 (Only base64 data is allowed)",
        "payload": raw["kinesis"]["data"],
    }


# --- requeued records, as they come back from the stream -------------------------------------------------


def requeued(data: str, meta) -> dict:
    return kinesis_event({"trace_id": "first-try", "lambda_kit_requeue": meta, "data": data})


@pytest.mark.parametrize(
    ("meta", "attempt"),
    [
        ({"attempt": 2, "error_type": "ValueError"}, 3),
        ({"attempt": "2"}, 2),  # not a count: read as the first requeue
        ({}, 2),
    ],
)
def test_a_requeued_record_counts_its_attempts(meta, attempt):
    fn = Recorder()
    response, lines = run(stream_handler(fn), requeued(b64(b'{"fail": 1}'), meta))
    assert len(response["batchItemFailures"]) == 1
    assert fn.seen[0][0] == {"fail": 1} and fn.seen[0][2] == "first-try"
    assert error_line(lines, "attempt", "error", "trace_id") == {
        "attempt": attempt,
        "error": "cannot process",
        "trace_id": "first-try",
    }


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ("e3!0=", "requeued record's data is not valid base64 (Only base64 data is allowed)"),
        ("e30=e30=", "requeued record's data is not valid base64 (Excess data after padding)"),
        (b64(b"{nope"), "kinesis.data is not valid JSON ({})"),  # {}: what the codec in use says of it
    ],
)
def test_a_requeued_record_whose_data_cannot_be_read_fails_with_the_reason(data, why):
    if why.endswith("({})"):
        why = why.format(codec_reason(b"{nope"))
    event = requeued(data, {"attempt": 1})
    fn = Recorder()
    response, lines = run(stream_handler(fn), event)
    assert response == {
        "batchItemFailures": [{"itemIdentifier": event["Records"][0]["kinesis"]["sequenceNumber"]}]
    }
    assert fn.seen == []
    assert error_line(lines, "error", "attempt", "trace_id", "payload") == {
        "error": why,
        "attempt": 2,
        "trace_id": "first-try",
        "payload": event["Records"][0]["kinesis"]["data"],
    }


# --- CloudWatch Logs subscription messages ------------------------------------------------------


def log_record(message: dict, **options) -> dict:
    return kinesis_record(None, stream="log-events", raw_data=awslogs_data(message), **options)


@pytest.mark.parametrize(
    ("meta", "attempt"),
    [
        ({"attempt": 2, "error_type": "ValueError"}, 3),
        ({"attempt": "2"}, 2),
        ({}, 2),
        ("not an object", 1),
    ],
)
def test_a_requeued_log_event_counts_its_attempts(meta, attempt):
    message = {**log_subscription_message("fail here"), "lambda_kit_requeue": meta}
    record = log_record(message)
    fn = Recorder()
    response, lines = run(stream_handler(fn), {"Records": [record]})
    assert response == {"batchItemFailures": [{"itemIdentifier": record["kinesis"]["sequenceNumber"]}]}
    [(payload, record_id, _, _)] = fn.seen
    assert payload["message"] == "fail here" and record_id == record["kinesis"]["sequenceNumber"]
    assert error_line(lines, "message", "source", "record_id", "attempt", "error") == {
        "message": "record failed",
        "source": "kinesis",
        "record_id": record_id,
        "attempt": attempt,
        "error": "cannot process",
    }


def test_a_control_message_is_skipped_as_kinesis():
    record = kinesis_log_record(control=True)
    response, lines = run(stream_handler(Recorder()), {"Records": [record]})
    assert response == {"batchItemFailures": []}
    [skipped] = lines
    assert (skipped["message"], skipped["source"], skipped["record_id"]) == (
        "skipped a CloudWatch Logs control message",
        "kinesis",
        record["kinesis"]["sequenceNumber"],
    )


BROKEN_GZIP = b64(gzip.compress(b'{"messageType": "DATA_MESSAGE"}', mtime=0)[:-12])


@pytest.mark.parametrize("event_id", [True, False], ids=["event id", "no event id"])
def test_a_subscription_message_that_cannot_be_unpacked_fails_its_record(event_id):
    record = kinesis_record(None, raw_data=BROKEN_GZIP)
    if not event_id:
        del record["eventID"]
    sequence_number = record["kinesis"]["sequenceNumber"]
    fn = Recorder()
    response, lines = run(stream_handler(fn), {"Records": [record]})
    assert response == {"batchItemFailures": [{"itemIdentifier": sequence_number}]}
    assert fn.seen == []
    assert error_line(lines, *UNDECODABLE) == {
        "message": "record could not be decoded",
        "source": "kinesis",
        "record_id": sequence_number,
        "trace_id": record["eventID"] if event_id else sequence_number,
        "outcome": "failed",
        "attempt": 1,
        "error_type": "UndecodableRecord",
        "error": "kinesis.data is truncated gzip data",
        "payload": BROKEN_GZIP,
    }


def test_through_pipes_a_subscription_message_that_cannot_be_unpacked_is_named_by_its_event_id():
    batch = pipes_batch({"Records": [kinesis_record(None, raw_data=BROKEN_GZIP), kinesis_record({"n": 2})]})
    fn = Recorder()
    response, _ = run(stream_handler(fn), batch)
    assert response == {
        "batchItemFailures": [
            {"itemIdentifier": batch[0]["eventID"]},
            {"itemIdentifier": batch[1]["eventID"]},
        ]
    }
    assert fn.seen == []


# --- async functions: records run by partition key --------------------------------------------------


def test_an_async_function_fails_a_record_without_kinesis_fields_alone():
    calls = []

    @stream_handler(max_concurrency=2)
    async def handler(payload, context):
        calls.append(payload)

    good = kinesis_record({"n": 1})
    response, lines = run(handler, {"Records": [{"eventSource": "aws:kinesis", "eventID": "x"}, good]})
    assert response == {"batchItemFailures": [{"itemIdentifier": ""}]}
    assert error_line(lines, "error") == {"error": "record has no kinesis object"}


# --- requeue and dead letters, against moto's server ---------------------------------------------


@pytest.fixture
def kinesis_stream(aws_endpoint):
    """A factory: ``(name) -> read_new`` creates the stream on moto's server (``_streams.new_stream``)."""
    import boto3

    kinesis = boto3.client("kinesis")
    return lambda name: new_stream(kinesis, name)


@pytest.fixture
def queue(aws_endpoint, unique_name):
    """A fresh SQS queue: (url, arn, receive) where receive() gives the one message that arrived."""
    import boto3

    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName=unique_name("dlq"))["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]

    def receive():
        received = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"], WaitTimeSeconds=1)
        [message] = received["Messages"]
        return message

    return url, arn, receive


def test_a_requeued_record_goes_back_in_an_envelope_with_its_attempt_and_error_type(
    kinesis_stream, queue, unique_name
):
    name = unique_name("requeue")
    read_new = kinesis_stream(name)
    event = kinesis_event({"fail": 1, "trace_id": "t-env"}, stream=name)
    fn = Recorder()
    response, lines = run(stream_handler(on_failure="requeue", dead_letter=queue[0])(fn), event)
    assert response == {"batchItemFailures": []}
    assert error_line(lines, "outcome", "attempt") == {"outcome": "requeued", "attempt": 1}
    [put] = read_new()
    assert put["PartitionKey"] == "t-env"
    assert json.loads(put["Data"]) == {
        "trace_id": "t-env",
        "lambda_kit_requeue": {"attempt": 1, "error_type": "ValueError"},
        "data": event["Records"][0]["kinesis"]["data"],
    }


def test_a_consumer_arn_requeues_to_its_stream(kinesis_stream, queue, unique_name):
    """An enhanced fan-out consumer's ARN (``stream/<name>/consumer/<consumer>:<time>``) names
    its stream; a stream name ending in "stream" is read whole."""
    name = unique_name("fanout") + "-stream"
    read_new = kinesis_stream(name)
    event = kinesis_event({"fail": 1, "trace_id": "t-efo"}, stream=name)
    event["Records"][0]["eventSourceARN"] += "/consumer/mystream:1716285600"
    response, lines = run(stream_handler(on_failure="requeue", dead_letter=queue[0])(Recorder()), event)
    assert response == {"batchItemFailures": []}
    assert error_line(lines, "outcome", "requeue_error") == {"outcome": "requeued", "requeue_error": None}
    [put] = read_new()
    assert json.loads(put["Data"])["trace_id"] == "t-efo"


@pytest.mark.parametrize("arn", [None, "arn:aws:sqs:us-east-1:123456789012:not-a-stream"])
def test_a_record_whose_source_is_no_stream_cannot_be_requeued_and_is_reported(queue, arn):
    event = kinesis_event({"fail": 1})
    if arn is None:
        del event["Records"][0]["eventSourceARN"]
    else:
        event["Records"][0]["eventSourceARN"] = arn
    response, lines = run(stream_handler(on_failure="requeue", dead_letter=queue[0])(Recorder()), event)
    assert response == {
        "batchItemFailures": [{"itemIdentifier": event["Records"][0]["kinesis"]["sequenceNumber"]}]
    }
    assert error_line(lines, "outcome", "requeue_error") == {
        "outcome": "failed",
        "requeue_error": f"ValueError: cannot requeue: eventSourceARN {arn!r} is not a Kinesis stream ARN",
    }


def test_without_a_dead_letter_the_last_attempt_is_reported_saying_what_to_set(aws_endpoint, monkeypatch):
    monkeypatch.delenv("LAMBDA_KIT_DEAD_LETTER", raising=False)
    event = kinesis_event({"fail": 1})
    response, lines = run(stream_handler(on_failure="requeue", max_attempts=1)(Recorder()), event)
    assert response == {
        "batchItemFailures": [{"itemIdentifier": event["Records"][0]["kinesis"]["sequenceNumber"]}]
    }
    assert error_line(lines, "outcome", "requeue_error") == {
        "outcome": "failed",
        "requeue_error": (
            "RuntimeError: on_failure='requeue' reached max_attempts but no dead_letter is configured "
            "(pass dead_letter= or set LAMBDA_KIT_DEAD_LETTER); the record is reported as failed"
        ),
    }


LONG_ERROR = "a" * 1000 + "b" * 500


def dead_letter_body(record: dict, trace_id: str, attempts: int = 1) -> dict:
    return {
        "source": "kinesis",
        "trace_id": trace_id,
        "stream": record["eventSourceARN"],
        "sequence_number": record["kinesis"]["sequenceNumber"],
        "partition_key": record["kinesis"]["partitionKey"],
        "attempts": attempts,
        "error_type": "ValueError",
        "error": "a" * 1000,
        "data": record["kinesis"]["data"],
    }


@pytest.mark.parametrize("by", ["url", "arn"])
def test_the_dead_letter_message_on_sqs(queue, by):
    url, arn, receive = queue
    event = kinesis_event({"fail": 1, "trace_id": "t-dead"}, partition_key="pk-7")
    requests = []
    sqs = aws.client("sqs")
    sqs.meta.events.register(
        "before-parameter-build.sqs.GetQueueUrl",
        lambda params, **_: requests.append(dict(params)),
        unique_id="kinesis-dead-letter-test",
    )
    try:
        response, lines = run(
            stream_handler(on_failure="requeue", max_attempts=1, dead_letter=url if by == "url" else arn)(
                Recorder(LONG_ERROR)
            ),
            event,
        )
    finally:
        sqs.meta.events.unregister(
            "before-parameter-build.sqs.GetQueueUrl", unique_id="kinesis-dead-letter-test"
        )
    assert response == {"batchItemFailures": []}
    assert error_line(lines, "outcome", "attempt") == {"outcome": "dead_lettered", "attempt": 1}
    message = receive()
    assert json.loads(message["Body"]) == dead_letter_body(event["Records"][0], "t-dead")
    assert message["MessageAttributes"] == {"trace_id": {"StringValue": "t-dead", "DataType": "String"}}
    _, _, _, region, account, name = arn.split(":")
    # the queue's owner is named: a dead letter in another account is found there
    assert requests == ([] if by == "url" else [{"QueueName": name, "QueueOwnerAWSAccountId": account}])


def test_the_dead_letter_message_on_sns(aws_endpoint, queue, unique_name):
    import boto3

    sns = boto3.client("sns")
    topic = sns.create_topic(Name=unique_name("dead-letters"))["TopicArn"]
    url, arn, receive = queue
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
    event = kinesis_event({"fail": 1, "trace_id": "t-sns"})
    response, lines = run(
        stream_handler(on_failure="requeue", max_attempts=1, dead_letter=topic)(Recorder(LONG_ERROR)), event
    )
    assert response == {"batchItemFailures": []}
    assert error_line(lines, "outcome", "requeue_error") == {
        "outcome": "dead_lettered",
        "requeue_error": None,
    }
    notification = json.loads(receive()["Body"])
    assert notification["TopicArn"] == topic
    assert json.loads(notification["Message"]) == dead_letter_body(event["Records"][0], "t-sns")
    assert notification["MessageAttributes"] == {"trace_id": {"Type": "String", "Value": "t-sns"}}


def test_a_dead_lettered_log_event_carries_its_subscription_message_alone(queue):
    url, _, receive = queue
    message = log_subscription_message("ok", log_line("fail here", trace_id="p-dead"))
    record = log_record(message, partition_key="pk-log")
    fn = Recorder(LONG_ERROR)
    response, lines = run(
        stream_handler(on_failure="requeue", max_attempts=1, dead_letter=url)(fn), {"Records": [record]}
    )
    assert response == {"batchItemFailures": []}
    assert error_line(lines, "outcome", "trace_id") == {"outcome": "dead_lettered", "trace_id": "p-dead"}
    body = json.loads(receive()["Body"])
    data = body.pop("data")
    assert body == {key: value for key, value in dead_letter_body(record, "p-dead").items() if key != "data"}
    assert "\n" not in data  # one base64 text, as a Kinesis record's data
    failed = message["logEvents"][1]
    assert json.loads(gzip.decompress(base64.b64decode(data, validate=True))) == {
        **message,
        "logEvents": [failed],
    }


# --- FIFO dead letters: a group and a deduplication id, or AWS refuses the message -----------------


@pytest.fixture
def fifo_queue(aws_endpoint, unique_name):
    """A fresh FIFO queue: (url, arn, receive_all) where receive_all() gives every message that arrived."""
    import boto3

    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName=unique_name("dlq") + ".fifo", Attributes={"FifoQueue": "true"})[
        "QueueUrl"
    ]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]

    def receive_all():
        messages = []
        while True:
            received = sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=10,
                MessageSystemAttributeNames=["All"],
                MessageAttributeNames=["All"],
                WaitTimeSeconds=0,
            )
            if not received.get("Messages"):
                return messages
            messages += received["Messages"]
            sqs.delete_message_batch(
                QueueUrl=url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                    for i, m in enumerate(received["Messages"])
                ],
            )

    return url, arn, receive_all


@pytest.mark.parametrize("by", ["url", "arn"])
def test_a_dead_letter_on_a_fifo_queue_is_grouped_by_partition_key_and_sent_once(fifo_queue, by):
    url, arn, receive_all = fifo_queue
    event = kinesis_event({"fail": 1, "trace_id": "t-fifo"}, partition_key="pk-fifo")
    handler = stream_handler(on_failure="requeue", max_attempts=1, dead_letter=url if by == "url" else arn)(
        Recorder(LONG_ERROR)
    )
    for _ in range(2):  # the batch retried after the dead letter was sent: the same record again
        response, lines = run(handler, event)
        assert response == {"batchItemFailures": []}
        assert error_line(lines, "outcome", "requeue_error") == {
            "outcome": "dead_lettered",
            "requeue_error": None,
        }
    [message] = receive_all()
    assert json.loads(message["Body"]) == dead_letter_body(event["Records"][0], "t-fifo")
    assert message["Attributes"]["MessageGroupId"] == "pk-fifo"
    assert len(message["Attributes"]["MessageDeduplicationId"]) == 64


@pytest.mark.parametrize("key", ["k" * 129, "a key with spaces", "ключ"])
def test_a_partition_key_that_is_no_group_id_groups_by_its_digest(fifo_queue, key):
    import hashlib

    url, _, receive_all = fifo_queue
    event = kinesis_event({"fail": 1, "trace_id": "t-key"}, partition_key=key)
    response, lines = run(
        stream_handler(on_failure="requeue", max_attempts=1, dead_letter=url)(Recorder()), event
    )
    assert error_line(lines, "outcome", "requeue_error") == {
        "outcome": "dead_lettered",
        "requeue_error": None,
    }
    [message] = receive_all()
    assert message["Attributes"]["MessageGroupId"] == hashlib.sha256(key.encode()).hexdigest()


def test_the_log_events_of_one_record_are_distinct_dead_letters_on_a_fifo_queue(fifo_queue):
    url, _, receive_all = fifo_queue
    message = log_subscription_message(
        log_line("fail one", trace_id="p-1"), log_line("fail two", trace_id="p-2")
    )
    record = log_record(message, partition_key="pk-logs")
    response, lines = run(
        stream_handler(on_failure="requeue", max_attempts=1, dead_letter=url)(Recorder()),
        {"Records": [record]},
    )
    assert response == {"batchItemFailures": []}
    received = receive_all()
    assert sorted(json.loads(m["Body"])["trace_id"] for m in received) == ["p-1", "p-2"]
    assert {m["Attributes"]["MessageGroupId"] for m in received} == {"pk-logs"}


def test_a_dead_letter_on_a_fifo_topic_reaches_its_fifo_queue(aws_endpoint, fifo_queue, unique_name):
    import boto3

    sns = boto3.client("sns")
    topic = sns.create_topic(Name=unique_name("dead-letters") + ".fifo", Attributes={"FifoTopic": "true"})[
        "TopicArn"
    ]
    url, arn, receive_all = fifo_queue
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
    event = kinesis_event({"fail": 1, "trace_id": "t-fifo-sns"}, partition_key="pk-sns")
    response, lines = run(
        stream_handler(on_failure="requeue", max_attempts=1, dead_letter=topic)(Recorder(LONG_ERROR)), event
    )
    assert error_line(lines, "outcome", "requeue_error") == {
        "outcome": "dead_lettered",
        "requeue_error": None,
    }
    [delivered] = receive_all()
    assert json.loads(json.loads(delivered["Body"])["Message"]) == dead_letter_body(
        event["Records"][0], "t-fifo-sns"
    )
    assert delivered["Attributes"]["MessageGroupId"] == "pk-sns"


def digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize(
    ("key", "group"),
    [
        ("k", "k"),
        ("!" + "~" * 127, "!" + "~" * 127),
        ("", digest("")),
        (17, digest("17")),
        ([1, "a"], digest("[1, 'a']")),
    ],
    ids=["one_character", "128_printable", "empty", "a_number", "a_list"],
)
def test_a_partition_key_is_the_group_exactly_when_it_is_a_valid_group_id(fifo_queue, key, group):
    url, _, receive_all = fifo_queue
    event = kinesis_event({"fail": 1, "trace_id": "t-key"})
    event["Records"][0]["kinesis"]["partitionKey"] = key
    response, lines = run(
        stream_handler(on_failure="requeue", max_attempts=1, dead_letter=url)(Recorder()), event
    )
    assert error_line(lines, "outcome", "requeue_error") == {
        "outcome": "dead_lettered",
        "requeue_error": None,
    }
    [message] = receive_all()
    assert message["Attributes"]["MessageGroupId"] == group


def test_a_record_without_a_partition_key_is_grouped_by_its_trace_id(fifo_queue):
    url, _, receive_all = fifo_queue
    event = kinesis_event({"fail": 1, "trace_id": "t-no-key"})
    del event["Records"][0]["kinesis"]["partitionKey"]
    run(stream_handler(on_failure="requeue", max_attempts=1, dead_letter=url)(Recorder()), event)
    [message] = receive_all()
    assert message["Attributes"]["MessageGroupId"] == digest("t-no-key")


def test_records_of_two_streams_with_one_sequence_number_are_two_dead_letters(fifo_queue):
    url, _, receive_all = fifo_queue
    first = kinesis_event({"fail": 1, "trace_id": "t-one"}, stream="stream-one")
    second = kinesis_event({"fail": 1, "trace_id": "t-two"}, stream="stream-two")
    second["Records"][0]["kinesis"]["sequenceNumber"] = first["Records"][0]["kinesis"]["sequenceNumber"]
    handler = stream_handler(on_failure="requeue", max_attempts=1, dead_letter=url)(Recorder())
    for event in (first, second):
        run(handler, event)
    assert sorted(json.loads(m["Body"])["trace_id"] for m in receive_all()) == ["t-one", "t-two"]
