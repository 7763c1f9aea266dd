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
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_plus

from .. import log
from .._data import dig, is_text, mapping
from ..record import Outcome, Record
from ..trace import stable_id
from ._envelopes import is_sns_envelope, receive_attempt
from .base import (
    Source,
    as_text,
    loaded,
    malformed,
    pick_trace,
    raise_first_failure,
    read_alone,
    records_claimed,
)

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
ENVELOPES = (("s3", "aws:s3", "s3"), ("sqs", "aws:sqs", "messageId"), ("sns", "aws:sns", "Sns"))
"""(envelope, its records' eventSource, their marker key), the most specific first."""
MESSAGE_ID = {"sqs": ("messageId",), "sns": ("Sns", "MessageId")}
MESSAGE_TEXT = {"sqs": ("body",), "sns": ("Sns", "Message")}
MESSAGE_PART = {"sqs": "message body", "sns": "Sns.Message"}


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


def carrier(event: object) -> str | None:
    """The envelope of a ``Records`` event: ``"sqs"``, ``"sns"``, ``"s3"`` (direct), or None."""
    if type(dig(event, "Records")) is not list:
        return None
    return next((kind for kind, source, marker in ENVELOPES if records_claimed(event, source, marker)), None)


def is_notification(doc: object) -> bool:
    """An S3 notification (``Records`` of ``aws:s3``) or S3's test message."""
    if dig(doc, "Event") == TEST_EVENT:
        return True
    records = dig(doc, "Records")
    return type(records) is list and any(dig(record, "eventSource") == "aws:s3" for record in records)


def unwrap(text: object, kind: str) -> tuple[Any, str | None]:
    """(the document in an SQS body or SNS message, an SNS envelope in an SQS body unwrapped; or
    None and the error saying which part is not JSON)."""
    if not isinstance(text, str):
        return None, f"{MESSAGE_PART[kind]} is missing or not a string"
    doc, error = loaded(text, MESSAGE_PART[kind])
    if kind == "sqs" and is_sns_envelope(doc):
        return loaded(doc["Message"], "SNS message in the body")
    return doc, error


def holds_notification(raw: object, kind: str) -> bool:
    """The SQS or SNS message ``raw`` holds an S3 notification (or S3's test message)."""
    return is_notification(unwrap(dig(raw, *MESSAGE_TEXT[kind]), kind)[0])


def from_eventbridge(event: object) -> bool:
    return (
        type(event) is dict
        and event.get("source") == "aws.s3"
        and event.get("detail-type") in EVENTBRIDGE_TYPES
    )


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
    def recognizes(cls, event: object) -> bool:
        kind = carrier(event)
        if kind is None:
            return from_eventbridge(event)
        return kind == "s3" or any(holds_notification(raw, kind) for raw in event["Records"])

    @classmethod
    def label_of(cls, event: object) -> str:
        kind = carrier(event)
        if kind in ("sqs", "sns"):
            return f"an {kind.upper()} event carrying S3 notifications"  # type: ignore[union-attr]
        if kind is None and from_eventbridge(event):
            return f"an EventBridge event from S3 ({event['detail-type']})"
        return cls.label

    # --- records ------------------------------------------------------------------------------

    def records(self, event: Mapping[str, Any]) -> list[Record]:
        """Each raw record read alone (``read_alone``): an S3 record, an SQS or SNS message and
        the notification it holds, or the EventBridge event."""
        kind = carrier(event)
        if kind is None:
            return read_alone("s3", event, self.read_eventbridge)
        read = self.read if kind == "s3" else partial(self.from_message, kind=kind)
        return [record for raw in event["Records"] for record in read_alone("s3", raw, read)]

    def read(self, raw: object) -> list[Record]:
        return [self.object_record(raw, None, raw, 0)]

    def read_eventbridge(self, event: object) -> list[Record]:
        return [self.eventbridge_record(event)]

    def from_message(self, raw: object, kind: str) -> list[Record]:
        """The object records of one SQS or SNS message, each reported under the message's id."""
        message_id, why = message_id_of(raw, kind)
        if why is not None:
            return [malformed("s3", raw, why)]
        text = dig(raw, *MESSAGE_TEXT[kind])
        doc, error = unwrap(text, kind)
        if error is not None:
            return [fail(message_id, text, raw, error)]
        if dig(doc, "Event") == TEST_EVENT:
            skip_test_event(doc, message_id)
            return []
        items = dig(doc, "Records")
        if type(items) is not list or not items:
            return [fail(message_id, doc, raw, "the message is not an S3 event notification (no Records)")]
        attempt = receive_attempt(dig(raw, "attributes", "ApproximateReceiveCount")) if kind == "sqs" else 0
        return [self.object_record(item, message_id, item, attempt) for item in items]

    def object_record(self, item: object, message_id: str | None, raw: object, attempt: int) -> Record:
        """One S3 record; ``message_id`` is its carrier's id (None when delivered directly)."""
        why = record_problem(item)
        if why is not None:
            return fail(message_id, item, raw, why)
        name, obj = item["s3"]["bucket"]["name"], item["s3"]["object"]
        request_id = dig(item, "responseElements", "x-amz-request-id")
        trace_id, rejected, _ = pick_trace(
            "s3", request_id, (name, obj["key"], obj.get("sequencer"), item.get("eventTime"))
        )
        payload = S3Object(
            name,
            unquote_plus(obj["key"]),
            obj.get("size"),
            obj.get("eTag"),
            obj.get("versionId"),
            item.get("eventName"),
            item.get("eventTime"),
        )  # keys are URL-encoded, "+" for a space
        return Record(
            source="s3",
            id=message_id or (request_id if is_text(request_id) else trace_id),
            trace_id=trace_id,
            payload=payload,
            raw=raw,
            attempt=attempt,
            rejected_trace_id=rejected,
        )

    def eventbridge_record(self, event: dict[str, Any]) -> Record:
        event_id = event.get("id")
        if not is_text(event_id):
            return malformed("s3", event, "event has no id")
        detail = mapping(event.get("detail"))
        why = object_missing(detail, "event", "detail")
        if why is not None:
            return Record(
                source="s3",
                id=event_id,
                trace_id=stable_id(event_id),
                payload=event.get("detail"),
                raw=event,
                error=why,
            )
        name, obj = detail["bucket"]["name"], detail["object"]
        trace_id, rejected, _ = pick_trace(
            "s3", detail.get("request-id"), (name, obj["key"], obj.get("sequencer"), event.get("time"))
        )
        payload = S3Object(
            name,
            obj["key"],
            obj.get("size"),
            obj.get("etag"),
            obj.get("version-id"),
            eventbridge_event_name(event["detail-type"], detail),
            event.get("time"),
        )
        return Record(
            source="s3",
            id=event_id,
            trace_id=trace_id,
            payload=payload,
            raw=event,
            rejected_trace_id=rejected,
        )

    def typed(self, payload: Any, validate: Validator) -> Any:
        """With ``model=`` the object's fields (``bucket``, ``key``, ``size`` ...) are validated."""
        return validate(dict(payload))

    # --- the response -------------------------------------------------------------------------

    def response(self, event: Mapping[str, Any], outcome: Outcome) -> Any:
        """In SQS messages: each failed message once in ``batchItemFailures``; otherwise the
        invocation was asynchronous: the first failure is raised."""
        if carrier(event) == "sqs":
            failed = dict.fromkeys(record.id for record, _ in outcome.failures)
            return {"batchItemFailures": [{"itemIdentifier": item} for item in failed]}
        raise_first_failure(outcome)
        return None


def message_id_of(raw: object, kind: str) -> tuple[str, None] | tuple[None, str]:
    """(the id of an SQS or SNS message, None), or (None, why it has none)."""
    if type(raw) is not dict:
        return None, "record is not a JSON object"
    message_id = dig(raw, *MESSAGE_ID[kind])
    if not is_text(message_id):
        return None, f"record has no {'.'.join(MESSAGE_ID[kind])}"
    return message_id, None


def record_problem(item: object) -> str | None:
    """Why ``item`` is no S3 record naming an object, else None."""
    if type(item) is not dict:
        return "S3 record is not a JSON object"
    if item.get("eventSource") != "aws:s3":
        return f"record is not an S3 record (eventSource {as_text(item.get('eventSource'))[:40]!r})"
    return object_missing(mapping(item.get("s3")), "record", "s3")


def object_missing(fields: Mapping[str, Any], noun: str, where: str) -> str | None:
    """What the ``s3`` fields of a record (``detail`` of an event) lack to name an object, else None."""
    if not is_text(dig(fields, "bucket", "name")):
        return f"S3 {noun} has no {where}.bucket.name"
    if not isinstance(dig(fields, "object", "key"), str):
        return f"S3 {noun} has no {where}.object.key"
    return None


def fail(message_id: str | None, item: object, raw: object, why: str) -> Record:
    """An object record that cannot be read: it fails under its message's id (or, delivered
    directly, as a malformed record)."""
    if message_id is None:
        return malformed("s3", item, why)
    return Record(
        source="s3", id=message_id, trace_id=stable_id(message_id), payload=item, raw=raw, error=why
    )


def eventbridge_event_name(detail_type: str, detail: Mapping[str, Any]) -> str:
    """``Object Created`` / ``Object Deleted`` as the notification's ``eventName``."""
    why = detail.get("reason")
    why = why if isinstance(why, str) else None  # any JSON may stand there: only a name is used
    if detail_type == "Object Created":
        return CREATED_BY.get(why) or (f"ObjectCreated:{why}" if why else "ObjectCreated")
    prefix = "LifecycleExpiration" if why == "Lifecycle Expiration" else "ObjectRemoved"
    return prefix + (
        ":DeleteMarkerCreated" if detail.get("deletion-type") == "Delete Marker Created" else ":Delete"
    )


def skip_test_event(doc: dict[str, Any], message_id: str) -> None:
    """S3 sends ``s3:TestEvent`` when a notification to a queue or topic is configured: nothing to
    process, and not a failure (it would only fill the DLQ)."""
    if log.enabled(20):
        log.emit(
            "INFO",
            "skipped an S3 test event",
            stable_id(message_id),
            {
                "source": "s3",
                "record_id": message_id,
                "bucket": log.clean(doc.get("Bucket")),
            },
        )


SOURCE = S3Source
