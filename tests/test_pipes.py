"""EventBridge Pipes batches: a top-level list of SQS, Kinesis or DynamoDB Streams records, taken
by the decorator of that source and refused by the others; failures named as Pipes documents
(``messageId`` for SQS, ``eventID`` for Kinesis and DynamoDB)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from _hostile import captured, of_level, parse_lines

from lambda_kit import (
    UnsupportedEvent,
    current_record,
    kafka_handler,
    sns_handler,
    sqs_handler,
    stream_handler,
)
from lambda_kit.testing import (
    dynamodb_record,
    dynamodb_stream_event,
    kinesis_event,
    lambda_context,
    pipes_batch,
    sqs_event,
)

SAMPLES = Path(__file__).resolve().parent / "events" / "pipes"
DECORATOR_OF = {
    "sqs-standard.json": sqs_handler,
    "sqs-fifo.json": sqs_handler,
    "kinesis.json": stream_handler,
    "dynamodb.json": stream_handler,
}
LABEL_OF = {
    "sqs-standard.json": "SQS messages",
    "sqs-fifo.json": "SQS messages",
    "kinesis.json": "Kinesis records",
    "dynamodb.json": "DynamoDB Streams records",
}


def sample(name: str) -> list:
    return json.loads((SAMPLES / name).read_text())


class Recorder:
    def __init__(self, fail_on=()):
        self.fail_on = set(fail_on)
        self.seen = []

    def __call__(self, payload, context):
        record = current_record()
        self.seen.append((record.id, record.trace_id, payload))
        if record.id in self.fail_on:
            raise RuntimeError("no")


def run(handler, event):
    with captured() as out:
        response = handler(event, lambda_context())
    return response, parse_lines(out)


@pytest.mark.parametrize("name", sorted(DECORATOR_OF))
def test_every_aws_sample_batch_is_taken_by_its_decorator(name):
    batch = sample(name)
    fn = Recorder()
    response, lines = run(DECORATOR_OF[name](json=False)(fn), batch)
    assert response == {"batchItemFailures": []} and of_level(lines, "ERROR") == []
    assert len(fn.seen) == len(batch)
    if name == "kinesis.json":
        assert [p for _, _, p in fn.seen] == [b"Hello, this is a test.", b"This is only a test."]
        assert [i for i, _, _ in fn.seen] == [r["sequenceNumber"] for r in batch]
        assert [t for _, t, _ in fn.seen] == [r["eventID"] for r in batch]
    elif name == "dynamodb.json":
        assert [p["event_name"] for _, _, p in fn.seen] == ["INSERT", "MODIFY"]
        assert fn.seen[1][2]["new_image"] == {"Message": "This item has changed", "Id": 101}
    else:
        assert [p for _, _, p in fn.seen] == ["Test message."] * len(batch)


@pytest.mark.parametrize("name", sorted(DECORATOR_OF))
@pytest.mark.parametrize("other", [sqs_handler, sns_handler, stream_handler, kafka_handler])
def test_the_other_decorators_refuse_a_pipes_batch_naming_the_one_that_fits(name, other):
    fits = DECORATOR_OF[name]
    if other is fits:
        return
    with captured(), pytest.raises(UnsupportedEvent) as refused:
        other(Recorder())(sample(name), lambda_context())
    assert str(refused.value) == (
        f"{other.__name__} cannot process an EventBridge Pipes batch of {LABEL_OF[name]}: use {fits.__name__}"
    )


def test_a_failed_sqs_message_is_named_by_its_message_id():
    batch = sample("sqs-standard.json")
    response, _ = run(sqs_handler(json=False)(Recorder(fail_on={batch[0]["messageId"]})), batch)
    assert response == {"batchItemFailures": [{"itemIdentifier": batch[0]["messageId"]}]}


def test_a_fifo_group_is_held_back_after_a_failure_as_with_lambda():
    batch = pipes_batch(sqs_event({"n": 1}, {"n": 2}, {"n": 3}))
    for record, group in zip(batch, ["g1", "g1", "g2"], strict=True):
        record["attributes"]["MessageGroupId"] = group
    fn = Recorder(fail_on={batch[0]["messageId"]})
    response, _ = run(sqs_handler(fn), batch)
    assert [i for i, _, _ in fn.seen] == [batch[0]["messageId"], batch[2]["messageId"]]
    assert response == {
        "batchItemFailures": [
            {"itemIdentifier": batch[0]["messageId"]},
            {"itemIdentifier": batch[1]["messageId"]},
        ]
    }


def test_a_failed_kinesis_record_and_those_after_it_are_named_by_event_id():
    """Pipes retries the records it is given back, so the ones the batch stopped before are named too."""
    batch = pipes_batch(kinesis_event({"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}))
    assert "kinesis" not in batch[0] and batch[0]["data"] == base64.b64encode(b'{"n": 1}').decode()
    fn = Recorder(fail_on={batch[1]["sequenceNumber"]})
    response, lines = run(stream_handler(fn), batch)
    assert [p for _, _, p in fn.seen] == [{"n": 1}, {"n": 2}]
    assert response == {"batchItemFailures": [{"itemIdentifier": r["eventID"]} for r in batch[1:]]}
    [stopped] = of_level(lines, "WARN")
    assert stopped["not_processed"] == 2


def test_a_failed_dynamodb_record_and_those_after_it_are_named_by_event_id():
    batch = pipes_batch(
        dynamodb_stream_event(*(dynamodb_record("INSERT", new_image={"PK": str(n)}) for n in range(3)))
    )
    fn = Recorder(fail_on={batch[0]["dynamodb"]["SequenceNumber"]})
    response, _ = run(stream_handler(fn), batch)
    assert len(fn.seen) == 1
    assert response == {"batchItemFailures": [{"itemIdentifier": r["eventID"]} for r in batch]}


def test_a_stream_record_without_event_id_fails_the_whole_pipes_batch():
    """An empty itemIdentifier is, by Pipes' documented conditions, a failure of the whole batch."""
    batch = pipes_batch(kinesis_event({"n": 1}))
    del batch[0]["eventID"]
    fn = Recorder(fail_on={batch[0]["sequenceNumber"]})
    response, _ = run(stream_handler(fn), batch)
    assert response == {"batchItemFailures": [{"itemIdentifier": ""}]}


def test_the_same_records_in_a_lambda_event_are_still_named_by_sequence_number():
    event = kinesis_event({"n": 1}, {"n": 2})
    seq = event["Records"][0]["kinesis"]["sequenceNumber"]
    response, _ = run(stream_handler(Recorder(fail_on={seq})), event)
    assert response == {"batchItemFailures": [{"itemIdentifier": seq}]}


def test_an_empty_top_level_list_is_refused():
    with captured(), pytest.raises(UnsupportedEvent, match="an empty top-level list"):
        sqs_handler(Recorder())([], lambda_context())
