"""s3_handler through the public API, against AWS's published sample events (``tests/events/s3/``):
one call per object in each of the four envelopes, keys decoded where S3 encodes them, record ids
that each envelope's retry machinery uses, ``s3:TestEvent`` skipped, failures routed per envelope."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _logs import of_level, read_lines, with_message

from lambda_kit import (
    S3Object,
    UnsupportedEvent,
    current_record,
    eventbridge_handler,
    s3_handler,
    sqs_handler,
)
from lambda_kit import sources as registry
from lambda_kit.errors import UndecodableRecord
from lambda_kit.testing import (
    lambda_context,
    s3_event,
    s3_eventbridge_event,
    s3_notification,
    s3_record,
    s3_test_message,
    sns_event,
    sqs_event,
    sqs_record,
)

SAMPLES = Path(__file__).parent / "events" / "s3"


def sample(name: str) -> dict:
    return json.loads((SAMPLES / name).read_text())


class Recorder:
    def __init__(self, fail_keys: tuple[str, ...] = ()) -> None:
        self.fail_keys = fail_keys
        self.seen: list[tuple[dict, str, str, str]] = []

    def __call__(self, obj: S3Object, context: object) -> str:
        record = current_record()
        self.seen.append((dict(obj), record.source, record.id, record.trace_id))
        if obj.key in self.fail_keys:
            raise RuntimeError(f"cannot read {obj.key}")
        return obj.key


# --- AWS's samples, one per envelope ------------------------------------------------------------


def test_the_s3_guide_put_notification_delivered_directly(capfd):
    fn = Recorder()
    assert s3_handler(fn)(sample("notification-put.json"), lambda_context()) is None
    assert fn.seen == [
        (
            {
                "bucket": "mybucket",
                "key": "HappyFace.jpg",
                "size": 1024,
                "etag": "d41d8cd98f00b204e9800998ecf8427e",
                "version_id": "096fKKXTRTtl3on89fVO.nfljtsv6qko",
                "event_name": "ObjectCreated:Put",
                "event_time": "1970-01-01T00:00:00.000Z",
            },
            "s3",
            "C3D13FE58DE4C810",
            "C3D13FE58DE4C810",
        )
    ]  # S3's request id: record id and trace id
    lines = read_lines(capfd)
    assert lines[0]["payload"]["key"] == "HappyFace.jpg"  # the object is logged as a JSON object


def test_the_lambda_guide_notification_has_no_version_id():
    fn = Recorder()
    s3_handler(fn)(sample("lambda-notification.json"), None)
    [(obj, _, record_id, trace_id)] = fn.seen
    assert (obj["bucket"], obj["key"], obj["size"], obj["version_id"]) == (
        "lambda-artifacts-deafc19498e3f2df",
        "b21b84d653bb07b05b1e6b33684dc11b",
        1305107,
        None,
    )
    assert record_id == trace_id == "D82B88E5F771F645"


def test_an_encoded_key_is_decoded():
    fn = Recorder()
    s3_handler(fn)(sample("notification-encoded-key.json"), None)
    assert fn.seen[0][0]["key"] == "Happy Face.jpg"


def test_the_sqs_sample_reports_under_the_message_id():
    event = sample("sqs-notification.json")
    fn = Recorder(fail_keys=("test.pdf",))
    response = s3_handler(fn)(event, None)
    assert response == {"batchItemFailures": [{"itemIdentifier": "ca3e7a89-c358-40e5-8aa0-5da01403c267"}]}
    [(obj, source, record_id, trace_id)] = fn.seen
    assert (obj["bucket"], obj["key"], obj["version_id"]) == (
        "xxx",
        "test.pdf",
        "yd3d4HaWOT2zguDLvIQLU6ptDTwKBnQV",
    )
    assert (source, record_id, trace_id) == ("s3", "ca3e7a89-c358-40e5-8aa0-5da01403c267", "YMSSR8BZJ2Y99K6P")


def test_the_test_message_in_sqs_is_skipped_with_one_info_line(capfd):
    event = sample("composed-sqs-test-message-and-put.json")
    fn = Recorder()
    assert s3_handler(fn)(event, None) == {"batchItemFailures": []}
    assert [seen[0]["key"] for seen in fn.seen] == ["HappyFace.jpg"]
    [skipped] = with_message(read_lines(capfd), "skipped an S3 test event")
    assert skipped["level"] == "INFO" and skipped["bucket"] == "bucketname"
    assert skipped["record_id"] == event["Records"][0]["messageId"]


def test_the_sns_envelope_reports_under_the_sns_message_id_and_raises():
    event = sample("composed-sns-put.json")
    fn = Recorder(fail_keys=("HappyFace.jpg",))
    with pytest.raises(RuntimeError, match="cannot read HappyFace.jpg"):
        s3_handler(fn)(event, None)
    assert fn.seen[0][2:] == ("95df01b4-ee98-5cb9-9903-4c221d41eb5e", "C3D13FE58DE4C810")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "eventbridge-object-created.json",
            (
                "DOC-EXAMPLE-BUCKET1",
                "example-key",
                5,
                "b1946ac92492d2347c6235b4d2611184",
                "IYV3p45BT0ac8hjHg1houSdS1a.Mro8e",
                "ObjectCreated:Put",
                "2021-11-12T00:00:00Z",
            ),
        ),
        (
            "eventbridge-object-deleted.json",
            (
                "DOC-EXAMPLE-BUCKET1",
                "example-key",
                None,
                "d41d8cd98f00b204e9800998ecf8427e",
                "1QW9g1Z99LUNbvaaYVpW9xDlOLU.qxgF",
                "ObjectRemoved:DeleteMarkerCreated",
                "2021-11-12T00:00:00Z",
            ),
        ),
        (
            "eventbridge-object-deleted-lifecycle.json",
            (
                "DOC-EXAMPLE-BUCKET1",
                "example-key",
                None,
                "d41d8cd98f00b204e9800998ecf8427e",
                "mtB0cV.jejK63XkRNceanNMC.qXPWLeK",
                "LifecycleExpiration:DeleteMarkerCreated",
                "2021-11-12T00:00:00Z",
            ),
        ),
        (
            "eventbridge-object-created-powertools.json",
            (
                "example-bucket",
                "IMG_m7fzo3.jpg",
                184662,
                "4e68adba0abe2dc8653dc3354e14c01d",
                None,
                "ObjectCreated:Put",
                "2023-03-08T17:50:14Z",
            ),
        ),
    ],
)
def test_eventbridge_object_events_give_the_same_object_as_a_notification(name, expected):
    event = sample(name)
    fn = Recorder()
    assert s3_handler(fn)(event, None) is None
    [(obj, source, record_id, trace_id)] = fn.seen
    assert tuple(obj.values()) == expected
    assert (source, record_id, trace_id) == ("s3", event["id"], event["detail"]["request-id"])


def test_an_eventbridge_restore_event_is_refused_naming_eventbridge_handler(capfd):
    event = sample("eventbridge-object-restore-completed.json")
    fn = Recorder()
    with pytest.raises(UnsupportedEvent) as refused:
        s3_handler(fn)(event, None)
    assert str(refused.value) == "s3_handler cannot process an EventBridge event: use eventbridge_handler"
    assert fn.seen == []
    seen = []
    eventbridge_handler(lambda detail, context: seen.append(detail))(event, None)  # it takes it
    assert seen == [event["detail"]]


def test_every_s3_sample_is_also_an_eventbridge_or_sqs_or_sns_event_for_their_decorators():
    """The carriers' own decorators still take them: the payload is then the raw message."""
    bodies = []
    sqs_handler(lambda body, context: bodies.append(body))(sample("sqs-notification.json"), None)
    assert bodies[0]["Records"][0]["s3"]["object"]["key"] == "test.pdf"
    details = []
    eventbridge_handler(lambda detail, context: details.append(detail))(
        sample("eventbridge-object-created.json"), None
    )
    assert details[0]["object"]["key"] == "example-key"


# --- keys -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key", ["red flower.jpg", "a+b.txt", "dir/sub dir/x%y.txt", "ünï cödé.txt", "100% sure", "a&b=c;d:e"]
)
@pytest.mark.parametrize("envelope", ["direct", "sqs", "sns", "eventbridge"])
def test_the_function_gets_the_real_key_in_every_envelope(key, envelope):
    fn = Recorder()
    s3_handler(fn)(s3_event(key, envelope=envelope), None)
    assert [seen[0]["key"] for seen in fn.seen] == [key]


def test_a_notification_key_with_plus_is_a_space_as_s3_documents():
    record = s3_record("x")
    record["s3"]["object"]["key"] = "red+flower.jpg"  # as S3 writes "red flower.jpg"
    fn = Recorder()
    s3_handler(fn)({"Records": [record]}, None)
    assert fn.seen[0][0]["key"] == "red flower.jpg"


def test_an_eventbridge_key_is_not_decoded():
    fn = Recorder()
    s3_handler(fn)(s3_eventbridge_event("red+flower%20.jpg"), None)
    assert fn.seen[0][0]["key"] == "red+flower%20.jpg"


# --- ids, trace ids and failure routing per envelope --------------------------------------------------


def test_sqs_failures_are_reported_once_per_message_and_other_messages_are_acknowledged():
    event = sqs_event(
        s3_notification("ok.txt"),
        s3_notification("bad-1.txt", "bad-2.txt", "ok-2.txt"),
        s3_notification("ok-3.txt"),
    )
    fn = Recorder(fail_keys=("bad-1.txt", "bad-2.txt"))
    response = s3_handler(fn)(event, None)
    failed = event["Records"][1]["messageId"]
    assert response == {"batchItemFailures": [{"itemIdentifier": failed}]}
    assert [seen[0]["key"] for seen in fn.seen] == [
        "ok.txt",
        "bad-1.txt",
        "bad-2.txt",
        "ok-2.txt",
        "ok-3.txt",
    ]
    assert {seen[2] for seen in fn.seen if seen[0]["key"].startswith(("bad", "ok-2"))} == {failed}


def test_an_s3_notification_through_sns_then_sqs_is_unwrapped():
    from lambda_kit.testing import sns_envelope

    event = sqs_event(sns_envelope(s3_notification("via sns.txt")))
    fn = Recorder()
    assert s3_handler(fn)(event, None) == {"batchItemFailures": []}
    assert fn.seen[0][0]["key"] == "via sns.txt" and fn.seen[0][2] == event["Records"][0]["messageId"]


@pytest.mark.parametrize("envelope", ["direct", "sns", "eventbridge"])
def test_asynchronous_envelopes_raise_the_first_failure_after_every_object_ran(envelope, capfd):
    keys = ("bad.txt",) if envelope == "eventbridge" else ("bad.txt", "ok.txt")
    fn = Recorder(fail_keys=("bad.txt",))
    with pytest.raises(RuntimeError, match="cannot read bad.txt"):
        s3_handler(fn)(s3_event(*keys, envelope=envelope), None)
    assert [seen[0]["key"] for seen in fn.seen] == list(keys)
    [error] = of_level(read_lines(capfd), "ERROR")
    assert error["record_id"] == fn.seen[0][2] and error["trace_id"] == fn.seen[0][3]


def test_the_trace_id_is_s3s_request_id_in_every_envelope():
    for envelope in ("direct", "sqs", "sns", "eventbridge"):
        fn = Recorder()
        s3_handler(fn)(s3_event("a.txt", envelope=envelope, request_id="REQ-1"), None)
        assert fn.seen[0][3] == "REQ-1", envelope


def test_without_a_request_id_the_trace_id_is_a_stable_digest_of_the_record():
    record = s3_record("a.txt")
    del record["responseElements"]
    fn = Recorder()
    handler = s3_handler(fn)
    handler({"Records": [record]}, None)
    handler({"Records": [record]}, None)  # a retry
    handler(sqs_event(s3_notification("b.txt")), None)
    first, retry, other = (seen[3] for seen in fn.seen)
    assert first == retry and first.startswith("h-") and other != first


def test_the_direct_record_id_falls_back_to_the_trace_id_without_a_request_id():
    record = s3_record("a.txt")
    record["responseElements"] = {}
    fn = Recorder()
    s3_handler(fn)({"Records": [record]}, None)
    assert fn.seen[0][2] == fn.seen[0][3]


def test_a_test_message_through_sns_is_skipped(capfd):
    fn = Recorder()
    assert s3_handler(fn)(sns_event(s3_test_message("b1")), None) is None
    assert fn.seen == []
    assert with_message(read_lines(capfd), "skipped an S3 test event")[0]["bucket"] == "b1"


# --- what cannot be processed fails, and only its own message ----------------------------------------


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("{trunc", "message body is not valid JSON"),
        (json.dumps({"Records": []}), "the message is not an S3 event notification"),
        (json.dumps({"Records": [{"eventSource": "aws:dynamodb"}]}), "record is not an S3 record"),
        (
            json.dumps({"Records": [{"eventSource": "aws:s3", "s3": {"object": {"key": "k"}}}]}),
            "S3 record has no s3.bucket.name",
        ),
        (
            json.dumps({"Records": [{"eventSource": "aws:s3", "s3": {"bucket": {"name": "b"}}}]}),
            "S3 record has no s3.object.key",
        ),
        (json.dumps({"url": "/a"}), "the message is not an S3 event notification"),
    ],
)
def test_an_undecodable_message_fails_alone(body, why, capfd):
    good = sqs_record(s3_notification("good.txt"))
    bad = sqs_record("{}")
    bad["body"] = body
    fn = Recorder()
    response = s3_handler(fn)({"Records": [good, bad]}, None)
    assert response == {"batchItemFailures": [{"itemIdentifier": bad["messageId"]}]}
    assert [seen[0]["key"] for seen in fn.seen] == ["good.txt"]
    [error] = of_level(read_lines(capfd), "ERROR")
    assert error["message"] == "record could not be decoded" and error["error"].startswith(why)


def test_an_undecodable_direct_record_raises_its_reason():
    record = s3_record("a.txt")
    del record["s3"]["bucket"]
    with pytest.raises(UndecodableRecord, match="S3 record has no s3.bucket.name"):
        s3_handler(Recorder())({"Records": [record]}, None)


@pytest.mark.parametrize(
    ("event", "says"),
    [
        (sqs_event({"url": "/a"}), "s3_handler cannot process an SQS event: use sqs_handler"),
        (sns_event({"milestone": 1}), "s3_handler cannot process an SNS event: use sns_handler"),
        (
            {"version": "0", "id": "1", "detail-type": "x", "source": "y", "detail": {}},
            "s3_handler cannot process an EventBridge event: use eventbridge_handler",
        ),
        (
            {"Records": [{"eventSource": "aws:s3", "s3": {}}, sqs_record({})]},
            "s3_handler cannot process an event mixing records of aws:s3, aws:sqs",
        ),
    ],
)
def test_events_without_s3_notifications_are_refused(event, says, capfd):
    fn = Recorder()
    with pytest.raises(UnsupportedEvent) as refused:
        s3_handler(fn)(event, None)
    assert str(refused.value).startswith(says) and fn.seen == []


@pytest.mark.parametrize(
    ("event", "looks_like"),
    [
        (s3_event("a", envelope="direct"), "an S3 event notification"),
        (s3_event("a", envelope="sqs"), "an SQS event carrying S3 notifications"),
        (s3_event("a", envelope="sns"), "an SNS event carrying S3 notifications"),
        (s3_event("a", envelope="eventbridge"), "an EventBridge event from S3 (Object Created)"),
    ],
)
def test_other_decorators_name_s3_handler_for_s3_notifications(event, looks_like):
    assert registry.describe(event) == (looks_like, "s3_handler")
    from lambda_kit import api_handler

    with pytest.raises(
        UnsupportedEvent,
        match=f"cannot process {looks_like.replace('(', '.').replace(')', '.')}: use s3_handler",
    ):
        api_handler(lambda request, context: None)(event, None)


def test_the_object_reads_as_attributes_and_as_a_mapping():
    obj = S3Object("b", "k", 3)
    assert (obj.bucket, obj["key"], obj.size, obj.etag) == ("b", "k", 3, None)
    assert list(obj) == ["bucket", "key", "size", "etag", "version_id", "event_name", "event_time"]
    assert dict(obj)["size"] == 3 and "bucket='b'" in repr(obj)
    with pytest.raises(KeyError):
        obj["nope"]
