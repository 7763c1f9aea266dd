"""What every source adapter shares (``lambda_kit.sources.base``), seen through the decorators:
which ``Records`` batches a source claims, message attributes as tracers' contexts (text and
binary), the WARNING line of a context that is present and malformed, and the length of a decoding
error's reason."""

from __future__ import annotations

import base64

import pytest
from _logs import of_level, read_lines, with_message

from lambda_kit import (
    UnsupportedEvent,
    current_record,
    current_trace_id,
    eventbridge_handler,
    s3_handler,
    sns_handler,
    sqs_handler,
    stream_handler,
)
from lambda_kit.errors import UndecodableRecord
from lambda_kit.testing import (
    dynamodb_record,
    dynamodb_stream_event,
    eventbridge_event,
    kinesis_record,
    lambda_context,
    s3_event,
    sns_event,
    sns_record,
    sqs_record,
)

# W3C Trace Context's own example
TRACEPARENT = "00-0af7651916cd43dd8445a8d9e6ec0c77-b7ad6b7169203331-01"
TRACE_ID = "0af7651916cd43dd8445a8d9e6ec0c77"
SKIPPED = "ignored an invalid traceparent; reading the next place"


def sqs_with_traceparent(attribute: dict) -> dict:
    record = sqs_record({"n": 1})
    record["messageAttributes"] = {"traceparent": attribute}
    return record


def run_sqs(*records: dict) -> list[str]:
    seen = []

    @sqs_handler
    def handler(payload, context):
        seen.append(current_trace_id())

    assert handler({"Records": list(records)}, lambda_context()) == {"batchItemFailures": []}
    return seen


# --- which batches a source claims ----------------------------------------------------------------


def test_a_record_that_is_not_an_object_fails_alone_and_does_not_hide_the_others(capfd):
    seen = []
    handler = sqs_handler(lambda payload, context: seen.append(payload))
    # the junk record comes first: the batch is still the SQS queue's, and its message runs
    response = handler({"Records": ["junk", sqs_record({"n": 1})]}, lambda_context())
    assert response == {
        "batchItemFailures": [{"itemIdentifier": ""}]
    }  # an empty id: Lambda retries the batch
    assert seen == [{"n": 1}]
    [error] = of_level(read_lines(capfd), "ERROR")
    assert error["message"] == "record could not be decoded" and error["source"] == "sqs"


def test_a_record_that_cannot_be_read_is_traced_by_its_own_content(capfd):
    # no id to trace it by: its trace id is a digest of what it holds, the same on every retry
    handler = sqs_handler(lambda payload, context: None)
    event = {"Records": [{"eventSource": "aws:sqs", "body": "a"}, {"eventSource": "aws:sqs", "body": "b"}]}
    traces = []
    for _ in range(2):
        assert handler(event, lambda_context()) == {
            "batchItemFailures": [{"itemIdentifier": ""}, {"itemIdentifier": ""}]
        }
        errors = of_level(read_lines(capfd), "ERROR")
        assert [error["error"] for error in errors] == ["record has no messageId"] * 2
        traces.append([error["trace_id"] for error in errors])
    first, second = traces[0]
    assert first != second and first.startswith("h-") and second.startswith("h-")
    assert traces[1] == traces[0]


def test_records_without_an_event_source_are_claimed_by_their_marker_key():
    seen = []
    handler = sqs_handler(lambda payload, context: seen.append(payload))
    hand_made = {"messageId": "m-1", "body": '{"n": 1}'}  # no eventSource: the messageId says SQS
    assert handler({"Records": [hand_made]}, lambda_context()) == {"batchItemFailures": []}
    assert seen == [{"n": 1}]
    assert handler({"Records": []}, lambda_context()) == {
        "batchItemFailures": []
    }  # nothing to do is anyone's
    assert handler([hand_made], lambda_context()) == {"batchItemFailures": []}  # a Pipes batch alike
    assert seen == [{"n": 1}, {"n": 1}]
    seen.pop()
    with pytest.raises(
        UnsupportedEvent, match="^sqs_handler cannot process an event whose Records no source recognizes: "
    ):
        handler({"Records": [{"n": 2}]}, lambda_context())  # no record says whose it is
    assert seen == [{"n": 1}]


@pytest.mark.parametrize(
    ("other", "found"),
    [
        (kinesis_record({"n": 2}), "an event mixing records of aws:kinesis, aws:sqs"),  # eventSource
        (sns_record({"n": 2}), "an event mixing records of aws:sns, aws:sqs"),  # SNS spells it EventSource
    ],
)
def test_a_batch_holding_a_record_of_another_source_is_refused_whole(other, found, capfd):
    seen = []
    handler = sqs_handler(lambda payload, context: seen.append(payload))
    with pytest.raises(UnsupportedEvent) as refused:
        handler({"Records": [sqs_record({"n": 1}), other]}, lambda_context())
    assert str(refused.value) == f"sqs_handler cannot process {found}: sqs_handler processes an SQS event"
    assert seen == []
    [line] = read_lines(capfd)
    assert line["message"] == "event not processed: unsupported event" and line["error"] == str(refused.value)


# --- tracers' contexts in message attributes ----------------------------------------------------


def test_a_binary_sqs_attribute_carries_the_tracers_context(capfd):
    # what a producer that sends the traceparent as a Binary attribute gets: Lambda delivers base64
    text = sqs_with_traceparent({"stringValue": TRACEPARENT, "dataType": "String"})
    binary = sqs_with_traceparent(
        {"binaryValue": base64.b64encode(TRACEPARENT.encode()).decode(), "dataType": "Binary"}
    )
    assert run_sqs(text, binary) == [TRACE_ID, TRACE_ID]
    assert not of_level(read_lines(capfd), "WARN")


def test_a_binary_sqs_attribute_that_is_not_strict_base64_is_not_read_and_is_reported(capfd):
    # base64 of a valid traceparent with a stray character: a lenient decoder would read it
    spoiled = base64.b64encode(TRACEPARENT.encode()).decode()
    spoiled = spoiled[:8] + "!" + spoiled[8:]
    record = sqs_with_traceparent({"binaryValue": spoiled, "dataType": "Binary"})
    assert run_sqs(record) == [record["messageId"]]
    [warning] = of_level(read_lines(capfd), "WARN")
    assert warning["message"] == SKIPPED
    assert warning["source"] == "sqs" and warning["trace_id"] == record["messageId"]
    # what could not be read is shown as it came, not as the None it read as
    assert warning["rejected_trace_context"] == ascii({"binaryValue": spoiled, "dataType": "Binary"})


def test_a_malformed_context_is_logged_cut_to_256_characters(capfd):
    bad = "00-" + "z" * 600
    record = sqs_with_traceparent({"stringValue": bad, "dataType": "String"})
    assert run_sqs(record) == [record["messageId"]]
    [warning] = with_message(read_lines(capfd), SKIPPED)
    assert warning["level"] == "WARN" and warning["source"] == "sqs"
    assert warning["rejected_trace_context"] == ascii(bad)[:256]


# --- decoding errors ------------------------------------------------------------------------------


def test_a_decoding_error_is_given_whole_up_to_200_characters_then_cut(capfd):
    # DynamoDB names an unknown attribute type in its error: its length sets the reason's
    prefix = "unknown DynamoDB attribute type "

    def error_of(kind: str) -> str:
        record = dynamodb_record("INSERT", new_image={"PK": "a", "SK": "b"})
        record["dynamodb"]["NewImage"]["odd"] = {kind: "1"}

        @stream_handler
        def handler(change, context):
            raise AssertionError("not called")

        sequence_number = record["dynamodb"]["SequenceNumber"]
        assert handler(dynamodb_stream_event(record), None) == {
            "batchItemFailures": [{"itemIdentifier": sequence_number}]
        }
        [error] = of_level(read_lines(capfd), "ERROR")
        assert error["message"] == "record could not be decoded" and error["trace_id"] == record["eventID"]
        return error["error"]

    exactly = "K" * (200 - len(prefix) - 2)  # repr adds two quotes: a 200-character message
    assert error_of(exactly) == f"stream image is malformed ({prefix}{exactly!r})"
    longer = exactly + "L"
    assert error_of(longer) == f"stream image is malformed ({(prefix + repr(longer))[:200]}...)"


# --- an error no check foresaw ---------------------------------------------------------------------


class Unreadable(str):
    """Text that raises when compared: a value no adapter's check foresees (an event built by hand)."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("cannot compare")

    def __ne__(self, other: object) -> bool:
        raise RuntimeError("cannot compare")

    __hash__ = str.__hash__


def spoiled(event: dict, index: int, *path: str) -> dict:
    target = event["Records"][index]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = Unreadable(target[path[-1]])
    return event


def kinesis_pair() -> dict:
    return {"Records": [kinesis_record({"n": 1}), kinesis_record({"n": 2})]}


def dynamodb_pair() -> dict:
    return dynamodb_stream_event(
        dynamodb_record("INSERT", new_image={"PK": "a"}), dynamodb_record("INSERT", new_image={"PK": "b"})
    )


# (decorator, event with one record spoiled; on an ordered source the last, as a failure holds the
# later records back by design)
UNFORESEEN = [
    pytest.param(
        sqs_handler,
        lambda: spoiled({"Records": [sqs_record({"n": 1}), sqs_record({"n": 2})]}, 0, "messageId"),
        "sqs",
        id="sqs",
    ),
    pytest.param(
        sns_handler, lambda: spoiled(sns_event({"n": 1}, {"n": 2}), 0, "Sns", "MessageId"), "sns", id="sns"
    ),
    pytest.param(
        stream_handler,
        lambda: spoiled(kinesis_pair(), 1, "kinesis", "sequenceNumber"),
        "kinesis",
        id="kinesis",
    ),
    pytest.param(
        stream_handler,
        lambda: spoiled(dynamodb_pair(), 1, "dynamodb", "SequenceNumber"),
        "dynamodb",
        id="dynamodb",
    ),
    pytest.param(
        s3_handler,
        lambda: spoiled(s3_event("a.txt", "b.txt", envelope="sqs"), 0, "messageId"),
        "s3",
        id="s3 in sqs",
    ),
]


@pytest.mark.parametrize(("decorator", "build", "source"), UNFORESEEN)
def test_an_error_no_check_foresaw_fails_that_record_alone_with_its_reason(decorator, build, source, capfd):
    seen = []
    handler = decorator(lambda payload, context: seen.append(current_record().id))
    event = build()
    try:
        response = handler(event, lambda_context())
    except UndecodableRecord as raised:  # an asynchronous source raises its first failure
        response = str(raised)
    [error] = of_level(read_lines(capfd), "ERROR")
    assert (error["message"], error["source"]) == ("record could not be decoded", source)
    assert error["error"] == "record cannot be read (RuntimeError: cannot compare)"
    assert response in (
        {"batchItemFailures": [{"itemIdentifier": ""}]},
        error["error"],
    )  # reported: nothing is lost
    assert len(seen) == 1  # the other record ran


def test_an_error_no_check_foresaw_in_an_eventbridge_event_fails_it_with_its_reason(capfd):
    event = eventbridge_event({"n": 1})
    event["id"] = Unreadable(event["id"])
    with pytest.raises(UndecodableRecord, match=r"^record cannot be read \(RuntimeError: cannot compare\)$"):
        eventbridge_handler(lambda payload, context: None)(event, lambda_context())
    [error] = of_level(read_lines(capfd), "ERROR")
    assert error["message"] == "record could not be decoded" and error["trace_id"].startswith("h-")
