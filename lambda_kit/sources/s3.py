"""S3 event notifications: one call per object record, whichever way the notification arrives.

- **Directly** (the bucket notifies the function): ``{"Records": [<S3 record>]}``. S3 invokes
  the function asynchronously: a failure is raised, Lambda retries, then the function's
  on-failure destination or DLQ keeps the event. ``record.id`` is S3's request id.
- **In SQS messages** (the bucket notifies a queue; an SNS envelope in the body, from
  S3 → SNS → SQS, is unwrapped): failures are reported per message in ``batchItemFailures``
  (``record.id`` is the ``messageId``); S3's ``s3:TestEvent`` message is skipped with an INFO line.
- **In SNS messages** (the bucket notifies a topic): asynchronous, raised; ``record.id`` is the
  SNS ``MessageId``. A test event is skipped the same way.
- **As EventBridge events** ``Object Created`` / ``Object Deleted`` (source ``aws.s3``):
  asynchronous, raised; ``record.id`` is the event ``id``.

The payload is an ``S3Object``. Keys in notifications are URL-encoded (``+`` for a space) and are
decoded; keys in EventBridge events are not encoded and are passed as they are. EventBridge's
``detail-type`` and ``reason`` are named as the notification's ``eventName`` would be
(``ObjectCreated:Put``, ``ObjectRemoved:DeleteMarkerCreated`` ...), so one function serves both.
The trace id is S3's request id for the operation (``responseElements.x-amz-request-id``,
EventBridge ``detail.request-id``): the same whichever way the notification travelled; its
fallback is a digest of the record (stable across retries).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .. import codec, log
from ..record import Outcome, Record
from ..trace import stable_id
from .base import Source, malformed, pick_trace_id, raise_first_failure, reason, records_claimed

if TYPE_CHECKING:
    from ..validation import Validator

    ObjectFields = Mapping[str, Any]
else:
    ObjectFields = Mapping  # its subscript needs typing's Any: for the type checker only

FIELDS = ("bucket", "key", "size", "etag", "version_id", "event_name", "event_time")
TEST_EVENT = "s3:TestEvent"
EVENTBRIDGE_TYPES = ("Object Created", "Object Deleted")
CREATED_BY = {  # EventBridge ``reason`` -> the notification's eventName
    "PutObject": "ObjectCreated:Put",
    "POST Object": "ObjectCreated:Post",
    "CopyObject": "ObjectCreated:Copy",
    "CompleteMultipartUpload": "ObjectCreated:CompleteMultipartUpload",
}


class S3Object(ObjectFields):
    """The object of one S3 event record.

    ``bucket``, ``key`` (decoded: the key to pass to ``get_object``), ``size`` (bytes; None for a
    deletion), ``etag``, ``version_id`` (None unless the bucket is versioned), ``event_name``
    (``ObjectCreated:Put``, ``ObjectRemoved:Delete`` ...), ``event_time`` (ISO 8601). It also
    reads as a mapping: ``obj["key"]``, ``dict(obj)``.
    """

    __slots__ = FIELDS

    def __init__(
        self,
        bucket: str,
        key: str,
        size: int | None = None,
        etag: str | None = None,
        version_id: str | None = None,
        event_name: str | None = None,
        event_time: str | None = None,
    ) -> None:
        self.bucket = bucket
        self.key = key
        self.size = size
        self.etag = etag
        self.version_id = version_id
        self.event_name = event_name
        self.event_time = event_time

    def __getitem__(self, name: str) -> Any:
        if name in FIELDS:
            return getattr(self, name)
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(FIELDS)

    def __len__(self) -> int:
        return len(FIELDS)

    def __repr__(self) -> str:
        return "S3Object(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in FIELDS) + ")"


# --- recognizing the envelopes ----------------------------------------------------------------

def carrier(event: Any) -> str | None:
    """The envelope of a ``Records`` event: ``"sqs"``, ``"sns"``, ``"s3"`` (direct), or None."""
    if type(event) is not dict or type(event.get("Records")) is not list:
        return None
    for kind, event_source, marker in (("s3", "aws:s3", "s3"), ("sqs", "aws:sqs", "messageId"), ("sns", "aws:sns", "Sns")):
        if records_claimed(event, event_source, marker):
            return kind
    return None


def is_notification(doc: Any) -> bool:
    """An S3 notification (``Records`` of ``aws:s3``) or S3's test message."""
    if type(doc) is not dict:
        return False
    if doc.get("Event") == TEST_EVENT:
        return True
    records = doc.get("Records")
    return type(records) is list and any(type(r) is dict and r.get("eventSource") == "aws:s3" for r in records)


def unwrap(text: Any, from_sqs: bool) -> Any:
    """The document in an SQS body or SNS message (an SNS envelope in an SQS body unwrapped);
    raises ValueError saying which part is not JSON."""
    try:
        doc = codec.loads(text)
    except Exception as exc:
        raise ValueError(f"{'message body' if from_sqs else 'Sns.Message'} is not valid JSON ({reason(exc)})") from None
    if from_sqs and type(doc) is dict and doc.get("Type") == "Notification" and "TopicArn" in doc and "Message" in doc:
        try:
            return codec.loads(doc["Message"])
        except Exception as exc:
            raise ValueError(f"SNS message in the body is not valid JSON ({reason(exc)})") from None
    return doc


def carried_text(raw: Any, kind: str) -> Any:
    """The SQS body or SNS message of a carrier record (None when there is none)."""
    if type(raw) is not dict:
        return None
    if kind == "sqs":
        return raw.get("body")
    sns = raw.get("Sns")
    return sns.get("Message") if type(sns) is dict else None


def carries_notifications(event: Any, kind: str) -> bool:
    """Some message of this SQS or SNS event holds an S3 notification (or S3's test message)."""
    for raw in event["Records"]:
        text = carried_text(raw, kind)
        if isinstance(text, str) and ("aws:s3" in text or TEST_EVENT in text):  # cheap first
            try:
                if is_notification(unwrap(text, kind == "sqs")):
                    return True
            except ValueError:
                continue
    return False


def from_eventbridge(event: Any) -> bool:
    return type(event) is dict and event.get("source") == "aws.s3" and event.get("detail-type") in EVENTBRIDGE_TYPES


class S3Source(Source):
    name = "s3"
    label = "an S3 event notification"
    decorator = "s3_handler"
    event_source = "aws:s3"
    record_marker = "s3"
    serverless_events = ("s3",)
    arn_service = "s3"
    resource_types = ("AWS::S3::Bucket",)
    delivery = "notification"
    carried_by = ("sqs", "sns", "eventBridge")
    asynchronous = True

    @classmethod
    def recognizes(cls, event: Any) -> bool:
        kind = carrier(event)
        if kind == "s3":
            return True
        if kind is not None:
            return carries_notifications(event, kind)
        return from_eventbridge(event)

    @classmethod
    def label_of(cls, event: Any) -> str:
        kind = carrier(event)
        if kind in ("sqs", "sns"):
            return f"an {kind.upper()} event carrying S3 notifications"
        if kind is None and from_eventbridge(event):
            return f"an EventBridge event from S3 ({event['detail-type']})"
        return cls.label

    # --- records ------------------------------------------------------------------------------

    def records(self, event: Any) -> list[Record]:
        kind = carrier(event)
        if kind is None:
            return [self.eventbridge_record(event)]
        if kind == "s3":
            return [self.object_record(raw, None, raw, 0) for raw in event["Records"]]
        found: list[Record] = []
        for raw in event["Records"]:
            found.extend(self.from_message(raw, kind))
        return found

    def from_message(self, raw: Any, kind: str) -> list[Record]:
        """The object records of one SQS or SNS message, each reported under the message's id."""
        if type(raw) is not dict:
            return [malformed("s3", raw, "record is not a JSON object")]
        if kind == "sqs":
            message_id = raw.get("messageId")
            where = "messageId"
        else:
            sns = raw.get("Sns")
            message_id = sns.get("MessageId") if type(sns) is dict else None
            where = "Sns.MessageId"
        if not isinstance(message_id, str) or not message_id:
            return [malformed("s3", raw, f"record has no {where}")]
        text = carried_text(raw, kind)
        if not isinstance(text, str):
            part = "message body" if kind == "sqs" else "Sns.Message"
            return [Record(source="s3", id=message_id, trace_id=stable_id(message_id), payload=text, raw=raw, error=f"{part} is missing or not a string")]
        try:
            doc = unwrap(text, kind == "sqs")
        except ValueError as exc:
            return [Record(source="s3", id=message_id, trace_id=stable_id(message_id), payload=text, raw=raw, error=str(exc))]
        if type(doc) is dict and doc.get("Event") == TEST_EVENT:
            skip_test_event(doc, message_id)
            return []
        items = doc.get("Records") if type(doc) is dict else None
        if type(items) is not list or not items:
            return [Record(source="s3", id=message_id, trace_id=stable_id(message_id), payload=doc, raw=raw, error="the message is not an S3 event notification (no Records)")]
        attempt = self.attempt_of(raw, kind)
        return [self.object_record(item, message_id, item, attempt) for item in items]

    @staticmethod
    def attempt_of(raw: dict[str, Any], kind: str) -> int:
        system = raw.get("attributes") if kind == "sqs" else None
        count = system.get("ApproximateReceiveCount") if type(system) is dict else None
        return int(count) - 1 if isinstance(count, str) and count.isdigit() and count != "0" else 0

    def object_record(self, item: Any, message_id: str | None, raw: Any, attempt: int) -> Record:
        """One S3 record; ``message_id`` is its carrier's id (None when delivered directly)."""
        if type(item) is not dict:
            return fail(message_id, item, raw, "S3 record is not a JSON object")
        if item.get("eventSource") != "aws:s3":
            return fail(message_id, item, raw, f"record is not an S3 record (eventSource {str(item.get('eventSource'))[:40]!r})")
        s3 = item.get("s3") if type(item.get("s3")) is dict else {}
        name = bucket_name(s3.get("bucket"))
        obj = s3.get("object")
        if name is None:
            return fail(message_id, item, raw, "S3 record has no s3.bucket.name")
        if type(obj) is not dict or not isinstance(obj.get("key"), str):
            return fail(message_id, item, raw, "S3 record has no s3.object.key")
        key = obj["key"]
        response = item.get("responseElements")
        request_id = response.get("x-amz-request-id") if type(response) is dict else None
        trace_id, rejected = pick_trace_id(request_id, (name, key, obj.get("sequencer"), item.get("eventTime")))
        record_id = message_id or (request_id if isinstance(request_id, str) and request_id else trace_id)
        if "%" in key or "+" in key:  # URL-encoded, "+" for a space
            from urllib.parse import unquote_plus  # only for such a key (cold start: ~5 ms)

            key = unquote_plus(key)
        payload = S3Object(name, key, obj.get("size"), obj.get("eTag"), obj.get("versionId"), item.get("eventName"), item.get("eventTime"))
        return Record(source="s3", id=record_id, trace_id=trace_id, payload=payload, raw=raw, error=None, attempt=attempt, rejected_trace_id=rejected)

    def eventbridge_record(self, event: dict[str, Any]) -> Record:
        event_id = event.get("id")
        if not isinstance(event_id, str) or not event_id:
            return malformed("s3", event, "event has no id")
        detail = event.get("detail") if type(event.get("detail")) is dict else {}
        name = bucket_name(detail.get("bucket"))
        obj = detail.get("object")
        if name is None:
            return Record(source="s3", id=event_id, trace_id=stable_id(event_id), payload=event.get("detail"), raw=event, error="S3 event has no detail.bucket.name")
        if type(obj) is not dict or not isinstance(obj.get("key"), str):
            return Record(source="s3", id=event_id, trace_id=stable_id(event_id), payload=event.get("detail"), raw=event, error="S3 event has no detail.object.key")
        key = obj["key"]
        trace_id, rejected = pick_trace_id(detail.get("request-id"), (name, key, obj.get("sequencer"), event.get("time")))
        payload = S3Object(
            name, key, obj.get("size"), obj.get("etag"), obj.get("version-id"), eventbridge_event_name(event["detail-type"], detail), event.get("time")
        )
        return Record(source="s3", id=event_id, trace_id=trace_id, payload=payload, raw=event, error=None, attempt=0, rejected_trace_id=rejected)

    def typed(self, payload: Any, validate: Validator) -> Any:
        """With ``model=`` the object's fields (``bucket``, ``key``, ``size`` ...) are validated."""
        return validate(dict(payload))

    # --- the response -------------------------------------------------------------------------

    def response(self, event: Any, outcome: Outcome) -> Any:
        """In SQS messages: each failed message once in ``batchItemFailures``; otherwise the
        invocation was asynchronous: the first failure is raised."""
        if carrier(event) == "sqs":
            failed = dict.fromkeys(record.id for record, _ in outcome.failures)
            return {"batchItemFailures": [{"itemIdentifier": item} for item in failed]}
        raise_first_failure(outcome)
        return None


def bucket_name(bucket: Any) -> str | None:
    name = bucket.get("name") if type(bucket) is dict else None
    return name if isinstance(name, str) and name else None


def fail(message_id: str | None, item: Any, raw: Any, why: str) -> Record:
    """An object record that cannot be read: it fails under its message's id (or, delivered
    directly, as a malformed record)."""
    if message_id is None:
        return malformed("s3", item, why)
    return Record(source="s3", id=message_id, trace_id=stable_id(message_id), payload=item, raw=raw, error=why)


def eventbridge_event_name(detail_type: str, detail: dict[str, Any]) -> str:
    """``Object Created`` / ``Object Deleted`` as the notification's ``eventName``."""
    why = detail.get("reason")
    why = why if isinstance(why, str) else None  # any JSON may stand there: only a name is used
    if detail_type == "Object Created":
        return CREATED_BY.get(why) or ("ObjectCreated:" + why if why else "ObjectCreated")  # type: ignore[arg-type]
    prefix = "LifecycleExpiration" if why == "Lifecycle Expiration" else "ObjectRemoved"
    return prefix + (":DeleteMarkerCreated" if detail.get("deletion-type") == "Delete Marker Created" else ":Delete")


def skip_test_event(doc: dict[str, Any], message_id: str) -> None:
    """S3 sends ``s3:TestEvent`` when a notification to a queue or topic is configured: nothing to
    process, and not a failure (it would only fill the DLQ)."""
    if log.enabled(20):
        log.emit("INFO", "skipped an S3 test event", stable_id(message_id), {
            "source": "s3", "record_id": message_id, "bucket": log.clean(doc.get("Bucket")),
        })


SOURCE = S3Source
