"""The S3 adapter (``lambda_kit.sources.s3``) through ``s3_handler``: the exact lines and outcomes of
what cannot be read in each envelope (direct, SQS, SNS, EventBridge), S3's test message, the names
it gives events for other decorators' refusals, and the object as it prints."""

from __future__ import annotations

import json

import pytest
from _logs import of_level, read_lines, with_message

from lambda_kit import S3Object, UnsupportedEvent, current_record, s3_handler
from lambda_kit import sources as registry
from lambda_kit.errors import UndecodableRecord
from lambda_kit.sources.s3 import S3Source
from lambda_kit.testing import (
    lambda_context,
    s3_eventbridge_event,
    s3_notification,
    s3_record,
    s3_test_message,
    sns_event,
    sqs_event,
)

NO_KEY = {"eventSource": "aws:s3", "s3": {"bucket": {"name": "uploads"}}}


def keys_seen() -> tuple[list[str], object]:
    seen: list[str] = []
    return seen, s3_handler(lambda obj, context: seen.append(obj.key))


def test_the_object_prints_every_field_by_name():
    obj = S3Object("uploads", "a b.txt", 5, "e-1", None, "ObjectCreated:Put", "2026-11-23T00:00:00.000Z")
    assert repr(obj) == (
        "S3Object(bucket='uploads', key='a b.txt', size=5, etag='e-1', version_id=None, "
        "event_name='ObjectCreated:Put', event_time='2026-11-23T00:00:00.000Z')"
    )


def test_each_envelope_is_named_for_refusals_and_anything_else_by_the_adapters_label():
    assert S3Source.label_of(sqs_event(s3_notification("a"))) == "an SQS event carrying S3 notifications"
    assert S3Source.label_of(sns_event(s3_notification("a"))) == "an SNS event carrying S3 notifications"
    assert (
        S3Source.label_of(s3_eventbridge_event("a", detail_type="Object Deleted"))
        == "an EventBridge event from S3 (Object Deleted)"
    )
    assert S3Source.label_of(s3_notification("a")) == "an S3 event notification"
    assert S3Source.label_of({}) == "an S3 event notification"


@pytest.mark.parametrize("event_id", ["", 17, None])
def test_an_eventbridge_event_without_an_id_fails_as_s3_with_the_whole_event(event_id, capfd):
    seen, handler = keys_seen()
    event = s3_eventbridge_event("a.txt")
    event["id"] = event_id
    with pytest.raises(UndecodableRecord, match="^event has no id$"):
        handler(event, lambda_context())
    assert seen == []
    [error] = of_level(read_lines(capfd), "ERROR")
    assert (error["message"], error["source"], error["record_id"], error["error"]) == (
        "record could not be decoded",
        "s3",
        "",
        "event has no id",
    )
    assert error["payload"] == event and error["trace_id"].startswith("h-")


def test_a_direct_record_that_cannot_be_read_fails_as_s3_with_its_own_form_after_the_others_ran(capfd):
    seen, handler = keys_seen()
    event = {"Records": [s3_record("first.txt"), NO_KEY, s3_record("last.txt")]}
    with pytest.raises(UndecodableRecord, match="^S3 record has no s3.object.key$"):
        handler(event, lambda_context())
    assert seen == ["first.txt", "last.txt"]
    [error] = of_level(read_lines(capfd), "ERROR")
    assert (error["source"], error["record_id"], error["payload"]) == ("s3", "", NO_KEY)
    assert error["trace_id"].startswith("h-")


@pytest.mark.parametrize(
    ("item", "why"),
    [
        (7, "S3 record is not a JSON object"),
        (NO_KEY, "S3 record has no s3.object.key"),
        ({"eventSource": "aws:s3", "s3": {"object": {"key": "k"}}}, "S3 record has no s3.bucket.name"),
        ({"eventSource": "aws:sqs"}, "record is not an S3 record (eventSource 'aws:sqs')"),
    ],
)
def test_an_object_record_in_sqs_that_cannot_be_read_fails_its_message_once(item, why, capfd):
    seen, handler = keys_seen()
    bad = sqs_event({"Records": [s3_record("in-bad.txt"), item]})["Records"][0]
    good = sqs_event(s3_notification("fine.txt"))["Records"][0]
    response = handler({"Records": [bad, good]}, lambda_context())
    assert response == {"batchItemFailures": [{"itemIdentifier": bad["messageId"]}]}
    assert seen == ["in-bad.txt", "fine.txt"]
    [error] = of_level(read_lines(capfd), "ERROR")
    assert (error["source"], error["record_id"], error["trace_id"]) == (
        "s3",
        bad["messageId"],
        bad["messageId"],
    )
    assert (error["error"], error["payload"]) == (why, item)


def test_s3s_test_message_is_skipped_with_one_info_line_traced_by_its_message_id(capfd):
    seen, handler = keys_seen()
    event = sqs_event(s3_test_message("photos"))
    message_id = event["Records"][0]["messageId"]
    assert handler(event, lambda_context()) == {"batchItemFailures": []}
    assert seen == []
    [line] = with_message(read_lines(capfd), "skipped an S3 test event")
    assert {key: line[key] for key in ("level", "source", "record_id", "trace_id", "bucket")} == {
        "level": "INFO",
        "source": "s3",
        "record_id": message_id,
        "trace_id": message_id,
        "bucket": "photos",
    }


def test_the_current_record_of_an_object_in_sqs_is_its_s3_record():
    record = s3_record("raw.txt")
    raws = []
    s3_handler(lambda obj, context: raws.append(current_record().raw))(
        sqs_event({"Records": [record]}), lambda_context()
    )
    assert raws == [record]


# --- EventBridge: Object Created / Object Deleted -------------------------------------------------


@pytest.mark.parametrize(
    ("spoil", "why"),
    [
        (lambda detail: detail.pop("bucket"), "S3 event has no detail.bucket.name"),
        (lambda detail: detail["bucket"].update(name=""), "S3 event has no detail.bucket.name"),
        (lambda detail: detail.pop("object"), "S3 event has no detail.object.key"),
        (lambda detail: detail["object"].update(key=5), "S3 event has no detail.object.key"),
    ],
)
def test_an_eventbridge_event_without_its_object_fails_under_its_id_showing_the_detail(spoil, why, capfd):
    seen, handler = keys_seen()
    event = s3_eventbridge_event("a.txt", event_id="evt-1")
    spoil(event["detail"])
    with pytest.raises(UndecodableRecord) as raised:
        handler(event, lambda_context())
    assert str(raised.value) == why and seen == []
    [error] = of_level(read_lines(capfd), "ERROR")
    assert {
        key: error[key]
        for key in ("message", "source", "record_id", "trace_id", "attempt", "error", "payload")
    } == {
        "message": "record could not be decoded",
        "source": "s3",
        "record_id": "evt-1",
        "trace_id": "evt-1",
        "attempt": 1,
        "error": why,
        "payload": event["detail"],
    }


def test_an_eventbridge_record_carries_the_event_and_fails_on_its_first_attempt(capfd):
    event = s3_eventbridge_event("a.txt", request_id="REQ-EB")
    raws = []

    def fn(obj, context):
        raws.append(current_record().raw)
        raise RuntimeError("cannot read a.txt")

    with pytest.raises(RuntimeError):
        s3_handler(fn)(event, lambda_context())
    assert raws == [event]
    [error] = of_level(read_lines(capfd), "ERROR")
    assert (error["record_id"], error["trace_id"], error["attempt"]) == (event["id"], "REQ-EB", 1)


def test_an_eventbridge_request_id_that_is_no_trace_id_is_warned_about_and_a_digest_used(capfd):
    event = s3_eventbridge_event("a.txt", request_id="REQ-EB")
    event["detail"]["request-id"] = "not an id"
    traced = []
    s3_handler(lambda obj, context: traced.append(current_record().trace_id))(event, lambda_context())
    [warning] = of_level(read_lines(capfd), "WARN")
    assert warning["rejected_trace_id"] == "'not an id'" and warning["trace_id"] == traced[0]
    assert traced[0].startswith("h-")


def test_without_a_request_id_an_eventbridge_trace_id_is_a_digest_of_bucket_key_sequencer_and_time():
    def trace_of(event):
        traced = []
        s3_handler(lambda obj, context: traced.append(current_record().trace_id))(event, lambda_context())
        return traced[0]

    event = s3_eventbridge_event("a.txt")
    del event["detail"]["request-id"]
    first = trace_of(event)
    assert first.startswith("h-") and trace_of(event) == first  # a retry: the same id
    for spoil in (
        lambda e: e["detail"]["object"].update(sequencer="00000000000000FF"),
        lambda e: e.update(time="2000-01-01T00:00:00Z"),
        lambda e: e["detail"]["object"].update(key="b.txt"),
        lambda e: e["detail"]["bucket"].update(name="other"),
    ):
        other = {
            **event,
            "detail": {
                **event["detail"],
                "object": dict(event["detail"]["object"]),
                "bucket": dict(event["detail"]["bucket"]),
            },
        }
        spoil(other)
        assert trace_of(other) not in (first, None)


@pytest.mark.parametrize(
    ("detail_type", "reason", "deletion_type", "event_name"),
    [
        ("Object Created", "PutObject", None, "ObjectCreated:Put"),
        ("Object Created", "POST Object", None, "ObjectCreated:Post"),
        ("Object Created", "CopyObject", None, "ObjectCreated:Copy"),
        ("Object Created", "CompleteMultipartUpload", None, "ObjectCreated:CompleteMultipartUpload"),
        (
            "Object Created",
            "RestoreObject",
            None,
            "ObjectCreated:RestoreObject",
        ),  # a reason S3 may add: named as it came
        ("Object Created", None, None, "ObjectCreated"),
        ("Object Created", "", None, "ObjectCreated"),
        ("Object Created", ["PutObject"], None, "ObjectCreated"),  # not a name: not used
        ("Object Deleted", "DeleteObject", "Permanently Deleted", "ObjectRemoved:Delete"),
        ("Object Deleted", "DeleteObject", "Delete Marker Created", "ObjectRemoved:DeleteMarkerCreated"),
        ("Object Deleted", "Lifecycle Expiration", "Permanently Deleted", "LifecycleExpiration:Delete"),
        (
            "Object Deleted",
            "Lifecycle Expiration",
            "Delete Marker Created",
            "LifecycleExpiration:DeleteMarkerCreated",
        ),
        ("Object Deleted", None, None, "ObjectRemoved:Delete"),
    ],
)
def test_an_eventbridge_event_is_named_as_its_notification_would_be(
    detail_type, reason, deletion_type, event_name
):
    event = s3_eventbridge_event("a.txt", detail_type=detail_type)
    for field, value in (("reason", reason), ("deletion-type", deletion_type)):
        if value is None:
            event["detail"].pop(field, None)
        else:
            event["detail"][field] = value
    names = []
    s3_handler(lambda obj, context: names.append(obj.event_name))(event, lambda_context())
    assert names == [event_name]


@pytest.mark.parametrize(("receive_count", "attempt"), [(1, 1), (4, 4), ("0", 1), ("2x", 1), (None, 1)])
def test_an_object_in_an_sqs_message_is_on_the_attempt_its_receive_count_says(receive_count, attempt, capfd):
    event = sqs_event(s3_notification("a.txt"))
    if receive_count is None:
        del event["Records"][0]["attributes"]["ApproximateReceiveCount"]
    else:  # SQS counts from 1; anything else is read as a first attempt
        event["Records"][0]["attributes"]["ApproximateReceiveCount"] = str(receive_count)

    def fn(obj, context):
        raise RuntimeError("cannot read a.txt")

    assert s3_handler(fn)(event, lambda_context()) == {
        "batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]
    }
    [error] = of_level(read_lines(capfd), "ERROR")
    assert error["attempt"] == attempt


# --- SQS and SNS messages that do not carry a readable notification -------------------------------


def spoiled_sqs(spoil) -> dict:
    record = sqs_event(s3_notification("in-bad.txt"))["Records"][0]
    spoil(record)
    return record


def spoiled_sns(spoil) -> dict:
    record = sns_event(s3_notification("in-bad.txt"))["Records"][0]
    spoil(record)
    return record


def sqs_body(body):
    return lambda record: record.update(body=body)


def sns_message(message):
    return lambda record: record["Sns"].update(Message=message)


NOTIFIED = {
    "Type": "Notification",
    "TopicArn": "arn:aws:sns:us-east-1:123456789012:uploads",
    "Message": "{bad",
}


@pytest.mark.parametrize(
    ("spoil", "why", "payload"),
    [
        (sqs_body(None), "message body is missing or not a string", None),
        (sqs_body(7), "message body is missing or not a string", 7),
        (sqs_body("{bad"), "message body is not valid JSON (", "{bad"),
        (
            sqs_body('{"Records": []}'),
            "the message is not an S3 event notification (no Records)",
            {"Records": []},
        ),
        (
            sqs_body('{"Records": {"a": 1}}'),
            "the message is not an S3 event notification (no Records)",
            {"Records": {"a": 1}},
        ),
        (sqs_body('["Records"]'), "the message is not an S3 event notification (no Records)", ["Records"]),
        (sqs_body(json.dumps(NOTIFIED)), "SNS message in the body is not valid JSON (", json.dumps(NOTIFIED)),
    ],
    ids=[
        "no_body",
        "number_body",
        "not_json",
        "no_records",
        "records_not_a_list",
        "a_list",
        "sns_envelope_not_json",
    ],
)
def test_an_sqs_message_without_a_readable_notification_fails_alone_under_its_id(spoil, why, payload, capfd):
    seen, handler = keys_seen()
    bad = spoiled_sqs(spoil)
    good = sqs_event(s3_notification("fine.txt"))["Records"][0]
    assert handler({"Records": [bad, good]}, lambda_context()) == {
        "batchItemFailures": [{"itemIdentifier": bad["messageId"]}]
    }
    assert seen == ["fine.txt"]
    [error] = of_level(read_lines(capfd), "ERROR")
    assert (error["source"], error["record_id"], error["trace_id"], error["payload"]) == (
        "s3",
        bad["messageId"],
        bad["messageId"],
        payload,
    )
    assert (
        error["error"].startswith(why)
        and (why.endswith(")") or error["error"] != why + ")")
        and "(None)" not in error["error"]
    )


@pytest.mark.parametrize(
    ("spoil", "why"),
    [
        (sns_message(None), "Sns.Message is missing or not a string"),
        (sns_message("{bad"), "Sns.Message is not valid JSON ("),
    ],
    ids=["no_message", "not_json"],
)
def test_an_sns_message_without_a_readable_notification_is_raised_under_its_id(spoil, why, capfd):
    seen, handler = keys_seen()
    bad = spoiled_sns(spoil)
    with pytest.raises(UndecodableRecord) as raised:
        handler({"Records": [sns_event(s3_notification("fine.txt"))["Records"][0], bad]}, lambda_context())
    assert str(raised.value).startswith(why) and seen == ["fine.txt"]
    [error] = of_level(read_lines(capfd), "ERROR")
    message_id = bad["Sns"]["MessageId"]
    assert (error["source"], error["record_id"], error["trace_id"], error["payload"]) == (
        "s3",
        message_id,
        message_id,
        bad["Sns"]["Message"],
    )


@pytest.mark.parametrize(
    ("envelope", "spoil", "why"),
    [
        ("sqs", lambda record: record.pop("messageId"), "record has no messageId"),
        ("sqs", lambda record: record.update(messageId=""), "record has no messageId"),
        ("sns", lambda record: record["Sns"].pop("MessageId"), "record has no Sns.MessageId"),
        ("sns", lambda record: record.update(Sns=[record["Sns"]]), "record has no Sns.MessageId"),
    ],
    ids=["sqs_without_id", "sqs_empty_id", "sns_without_id", "sns_not_an_object"],
)
def test_a_message_without_its_id_fails_as_s3_with_its_raw_form(envelope, spoil, why, capfd):
    seen, handler = keys_seen()
    good = (sqs_event if envelope == "sqs" else sns_event)(s3_notification("fine.txt"))["Records"][0]
    bad = spoiled_sqs(spoil) if envelope == "sqs" else spoiled_sns(spoil)
    if envelope == "sqs":  # a message without an id cannot be named: the whole batch comes back
        assert handler({"Records": [good, bad]}, lambda_context()) == {
            "batchItemFailures": [{"itemIdentifier": ""}]
        }
    else:
        with pytest.raises(UndecodableRecord, match=f"^{why}$"):
            handler({"Records": [good, bad]}, lambda_context())
    assert seen == ["fine.txt"]
    [error] = of_level(read_lines(capfd), "ERROR")
    assert (error["source"], error["record_id"], error["error"], error["payload"]) == ("s3", "", why, bad)


def test_a_record_that_is_no_object_among_sqs_messages_fails_as_s3(capfd):
    seen, handler = keys_seen()
    good = sqs_event(s3_notification("fine.txt"))["Records"][0]
    assert handler({"Records": [good, 7]}, lambda_context()) == {
        "batchItemFailures": [{"itemIdentifier": ""}]
    }
    assert seen == ["fine.txt"]
    [error] = of_level(read_lines(capfd), "ERROR")
    assert (error["source"], error["record_id"], error["error"], error["payload"]) == (
        "s3",
        "",
        "record is not a JSON object",
        7,
    )


# --- an object record ------------------------------------------------------------------------------


def direct(record: dict) -> list:
    """(object as a dict, record id, trace id, attempt) of each call for a notification delivered directly."""
    calls = []
    s3_handler(
        lambda obj, context: calls.append(
            (dict(obj), current_record().id, current_record().trace_id, current_record().attempt)
        )
    )({"Records": [record]}, lambda_context())
    return calls


def test_an_object_record_gives_every_field_of_the_notification():
    record = s3_record(
        "photos/a b+c.jpg",
        bucket="media",
        size=7,
        etag="e-7",
        version_id="v-7",
        event_name="ObjectCreated:Copy",
        request_id="REQ-7",
    )
    [(obj, record_id, trace_id, attempt)] = direct(record)
    assert record["s3"]["object"]["key"] == "photos%2Fa+b%2Bc.jpg"  # as S3 encodes it
    assert obj == {
        "bucket": "media",
        "key": "photos/a b+c.jpg",
        "size": 7,
        "etag": "e-7",
        "version_id": "v-7",
        "event_name": "ObjectCreated:Copy",
        "event_time": record["eventTime"],
    }
    assert (record_id, trace_id, attempt) == ("REQ-7", "REQ-7", 0)


@pytest.mark.parametrize(
    ("key", "given"),
    [
        ("a%20b", "a b"),
        ("a+b", "a b"),
        ("100%25", "100%"),
        ("plain/key.txt", "plain/key.txt"),
        ("a%2", "a%2"),
    ],
)
def test_a_key_is_decoded_only_where_s3_encoded_it(key, given):
    record = s3_record("x")
    record["s3"]["object"]["key"] = key
    [(obj, _, _, _)] = direct(record)
    assert obj["key"] == given


@pytest.mark.parametrize(
    ("spoil", "why"),
    [
        (
            lambda r: r.update(eventSource="aws:" + "x" * 60),
            "record is not an S3 record (eventSource 'aws:" + "x" * 36 + "')",
        ),
        (lambda r: r.pop("eventSource"), "record is not an S3 record (eventSource 'None')"),
        (lambda r: r.update(s3=[]), "S3 record has no s3.bucket.name"),
        (lambda r: r["s3"].update(bucket={"name": 5}), "S3 record has no s3.bucket.name"),
        (lambda r: r["s3"].update(bucket={"name": ""}), "S3 record has no s3.bucket.name"),
        (lambda r: r["s3"].update(bucket="media"), "S3 record has no s3.bucket.name"),
        (lambda r: r["s3"].update(object="a.txt"), "S3 record has no s3.object.key"),
        (lambda r: r["s3"]["object"].update(key=None), "S3 record has no s3.object.key"),
    ],
    ids=[
        "other_source_cut",
        "no_source",
        "s3_not_an_object",
        "bucket_name_not_text",
        "bucket_name_empty",
        "bucket_not_an_object",
        "object_not_an_object",
        "key_not_text",
    ],
)
def test_an_object_record_that_cannot_be_read_says_exactly_why_in_an_sqs_message(spoil, why, capfd):
    record = s3_record("a.txt")
    spoil(record)
    event = sqs_event({"Records": [s3_record("fine.txt"), record]})  # the message's other object runs
    message_id = event["Records"][0]["messageId"]
    seen, handler = keys_seen()
    assert handler(event, lambda_context()) == {"batchItemFailures": [{"itemIdentifier": message_id}]}
    assert seen == ["fine.txt"]
    [error] = of_level(read_lines(capfd), "ERROR")
    assert (error["error"], error["record_id"], error["payload"]) == (why, message_id, record)


def test_a_request_id_that_is_no_trace_id_is_warned_about_and_a_digest_of_the_object_used(capfd):
    record = s3_record("a.txt", request_id="REQ-1")
    record["responseElements"]["x-amz-request-id"] = "not an id"
    [(_, record_id, trace_id, _)] = direct(record)
    [warning] = of_level(read_lines(capfd), "WARN")
    assert (warning["source"], warning["rejected_trace_id"], warning["trace_id"]) == (
        "s3",
        "'not an id'",
        trace_id,
    )
    assert trace_id.startswith("h-") and record_id == "not an id"  # still S3's own id for the record


@pytest.mark.parametrize(
    "response",
    [None, {}, {"x-amz-request-id": ""}, "REQ"],
    ids=["none", "empty", "empty_id", "not_an_object"],
)
def test_without_a_request_id_a_direct_record_is_named_by_a_digest_of_bucket_key_sequencer_and_time(response):
    record = s3_record("a.txt")
    record["responseElements"] = response
    [(_, record_id, trace_id, _)] = direct(record)
    assert record_id == trace_id and trace_id.startswith("h-")
    for spoil in (
        lambda r: r["s3"]["object"].update(sequencer="00000000000000FF"),
        lambda r: r.update(eventTime="2000-01-01T00:00:00.000Z"),
        lambda r: r["s3"]["object"].update(key="b.txt"),
        lambda r: r["s3"]["bucket"].update(name="other"),
    ):
        other = json.loads(json.dumps(record))
        spoil(other)
        [(_, _, other_id, _)] = direct(other)
        assert other_id.startswith("h-") and other_id != trace_id
    assert direct(json.loads(json.dumps(record)))[0][2] == trace_id  # a retry: the same id


# --- which events are S3's --------------------------------------------------------------------------


def _sns_in_sqs(message: object) -> dict:
    return sqs_event(
        {
            "Type": "Notification",
            "TopicArn": "arn:aws:sns:us-east-1:123456789012:t",
            "Message": json.dumps(message),
        }
    )


def _unreadable_then_notification() -> dict:
    event = sqs_event({"a": 1}, s3_notification("k"))
    event["Records"][0]["body"] = "{aws:s3"  # names S3 but is no JSON: the next message is read
    return event


@pytest.mark.parametrize(
    ("event", "described"),
    [
        (sqs_event(s3_notification("k")), ("an SQS event carrying S3 notifications", "s3_handler")),
        (
            sqs_event(json.dumps({"Records": [{"eventSource": "aws:s3"}]})),
            ("an SQS event carrying S3 notifications", "s3_handler"),
        ),
        (_unreadable_then_notification(), ("an SQS event carrying S3 notifications", "s3_handler")),
        (sqs_event(s3_test_message()), ("an SQS event carrying S3 notifications", "s3_handler")),
        (sns_event(s3_test_message()), ("an SNS event carrying S3 notifications", "s3_handler")),
        (_sns_in_sqs(s3_notification("k")), ("an SQS event carrying S3 notifications", "s3_handler")),
        (sqs_event({"note": "aws:s3"}), ("an SQS event", "sqs_handler")),  # names S3, is no notification
        (sqs_event({"Records": ["aws:s3"]}), ("an SQS event", "sqs_handler")),
        (sqs_event({"Records": "aws:s3"}), ("an SQS event", "sqs_handler")),
        (_sns_in_sqs({"note": "aws:s3"}), ("an SQS event", "sqs_handler")),
        (sns_event({"note": "s3:TestEvent"}), ("an SNS event", "sns_handler")),
        (
            sqs_event({"Records": [{"eventSource": "aws:sqs"}], "note": "aws:s3"}),
            ("an SQS event", "sqs_handler"),
        ),
        (sqs_event({"Records": 5, "note": "aws:s3"}), ("an SQS event", "sqs_handler")),
        (
            sqs_event({"Type": "Notification", "Message": json.dumps(s3_notification("k"))}),
            ("an SQS event", "sqs_handler"),
        ),
        (
            sns_event({"Type": "Notification", "TopicArn": "t", "Message": json.dumps(s3_notification("k"))}),
            ("an SNS event", "sns_handler"),
        ),
    ],
    ids=[
        "sqs",
        "sqs_minimal",
        "sqs_after_unreadable",
        "sqs_test_message",
        "sns_test_message",
        "sns_in_sqs",
        "sqs_naming_s3",
        "sqs_records_of_text",
        "sqs_records_text",
        "sns_in_sqs_naming_s3",
        "sns_naming_the_test_event",
        "sqs_records_of_another_source",
        "sqs_records_a_number",
        "sns_envelope_without_topic",
        "sns_envelope_in_sns",
    ],
)
def test_an_sqs_or_sns_event_is_s3s_when_a_message_holds_a_notification_or_the_test_message(
    event, described, capfd
):
    assert registry.describe(event) == described
    if described[1] != "s3_handler":  # refused by s3_handler with one line, whatever the message holds
        with pytest.raises(
            UnsupportedEvent, match=f"^s3_handler cannot process {described[0]}: use {described[1]}$"
        ):
            s3_handler(lambda obj, context: None)(event, lambda_context())
        assert [line["message"] for line in read_lines(capfd)] == ["event not processed: unsupported event"]


@pytest.mark.parametrize("envelope", ["sqs", "sns"])
def test_messages_without_an_event_source_are_known_by_their_own_fields(envelope):
    """A record without ``eventSource`` is SQS's by its ``messageId``, SNS's by its ``Sns`` object."""
    event = (sqs_event if envelope == "sqs" else sns_event)(s3_notification("a.txt"))
    event["Records"][0].pop("eventSource", None)
    event["Records"][0].pop("EventSource", None)
    seen, handler = keys_seen()
    handler(event, lambda_context())
    assert seen == ["a.txt"]


def test_an_s3_record_without_an_event_source_is_known_by_its_s3_object_and_fails_saying_so(capfd):
    record = s3_record("a.txt")
    del record["eventSource"]
    with pytest.raises(UndecodableRecord, match=r"^record is not an S3 record \(eventSource 'None'\)$"):
        keys_seen()[1]({"Records": [record]}, lambda_context())


def test_a_body_of_json_that_is_no_object_is_no_notification_whatever_it_names():
    assert registry.describe(sqs_event('["aws:s3", "s3:TestEvent"]')) == ("an SQS event", "sqs_handler")


def test_a_directly_delivered_record_is_the_current_records_raw_form():
    record = s3_record("raw.txt")
    raws = []
    s3_handler(lambda obj, context: raws.append(current_record().raw))(
        {"Records": [record]}, lambda_context()
    )
    assert raws == [record]


def test_the_object_refuses_a_field_it_does_not_have_by_its_name():
    with pytest.raises(KeyError) as refused:
        S3Object("b", "k")["owner"]
    assert refused.value.args == ("owner",)
