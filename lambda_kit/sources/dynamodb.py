"""DynamoDB Streams: images deserialized to plain Python, trace id in the image's ``trace_id``
attribute (a tracer's context in its ``traceparent`` / ``_datadog`` attributes); a failure stops the
batch at that record (Lambda resumes from its sequence number). EventBridge Pipes batches (a
top-level list of the same records) are reported by ``eventID``. With a tumbling window the
window's state goes in and out (``lambda_kit.sources.window``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..record import Record
from .base import Source, malformed, pick_trace, pick_trace_id, reason
from .window import Window, Windowed

if TYPE_CHECKING:
    from ..validation import Validator


def _number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return float(text)


def _binary(inner: Any) -> bytes:
    """A binary attribute: base64 text (or bytes). Never ``bytes(n)``: {"B": 10**9} is 1 GB."""
    if isinstance(inner, str):
        import binascii  # base64's functions, loaded for a binary attribute only (cold start)

        return binascii.a2b_base64(inner)
    if isinstance(inner, bytes | bytearray | memoryview):
        return bytes(inner)
    raise ValueError(f"binary attribute holds {type(inner).__name__}, not base64 text")


def deserialize(value: Any) -> Any:
    """One DynamoDB attribute value (``{"S": "x"}``, ``{"N": "1"}``, ...) as plain Python."""
    (kind, inner), = value.items()
    if kind == "S":
        return inner
    if kind == "N":
        return _number(inner)
    if kind == "BOOL":
        return bool(inner)
    if kind == "NULL":
        return None
    if kind == "M":
        return {key: deserialize(item) for key, item in inner.items()}
    if kind == "L":
        return [deserialize(item) for item in inner]
    if kind == "SS":
        return set(inner)
    if kind == "NS":
        return {_number(item) for item in inner}
    if kind == "B":
        return _binary(inner)
    if kind == "BS":
        return {_binary(item) for item in inner}
    raise ValueError(f"unknown DynamoDB attribute type {kind!r}")


def deserialize_image(image: Any) -> dict[str, Any] | None:
    if image is None:
        return None
    return {key: deserialize(item) for key, item in image.items()}


class DynamoDBSource(Windowed, Source):
    name = "dynamodb"
    label = "a DynamoDB Streams event"
    decorator = "stream_handler"
    event_source = "aws:dynamodb"
    record_marker = "dynamodb"
    serverless_events = ("stream",)
    arn_service = "dynamodb"
    resource_types = ("AWS::DynamoDB::Table",)
    delivery = "stream"
    reports_batch_failures = True
    ordered = True
    stop_at_first_failure = True
    pipes = "DynamoDB Streams records"
    pipes_report_key = "eventID"

    def __init__(self, on_window_end: Callable[[Window], Any] | None = None) -> None:
        self.on_window_end = on_window_end

    def record(self, raw: Any) -> Record:
        change = raw.get("dynamodb") if type(raw) is dict else None
        if type(change) is not dict:
            return malformed("dynamodb", raw, "record has no dynamodb object")
        sequence_number = change.get("SequenceNumber")
        if not isinstance(sequence_number, str) or not sequence_number:
            return malformed("dynamodb", raw, "record has no dynamodb.SequenceNumber")
        event_name = raw.get("eventName")
        fallback = raw.get("eventID") or sequence_number
        try:
            payload = {
                "event_name": event_name,
                "keys": deserialize_image(change.get("Keys")) or {},
                "new_image": deserialize_image(change.get("NewImage")),
                "old_image": deserialize_image(change.get("OldImage")),
            }
        except Exception as exc:
            trace_id, _ = pick_trace_id(None, fallback)
            return Record(source="dynamodb", id=sequence_number, trace_id=trace_id, payload=change, raw=raw, error=f"stream image is malformed ({reason(exc)})")
        found = image.get("trace_id") if (image := image_of(payload)) else None
        trace_id, rejected, context = pick_trace("dynamodb", found, fallback, image)
        return Record(source="dynamodb", id=sequence_number, trace_id=trace_id, payload=payload, raw=raw, error=None, attempt=0, rejected_trace_id=rejected, context=context)

    def ordering_key(self, record: Record) -> Any:
        """The item's key: DynamoDB Streams keeps each item's changes in order."""
        change = record.raw.get("dynamodb") if type(record.raw) is dict else None
        keys = change.get("Keys") if type(change) is dict else None
        return repr(sorted(keys.items())) if type(keys) is dict else None

    def typed(self, payload: Any, validate: Validator) -> Any:
        """With ``model=`` the function receives the item: its new image (the old one for REMOVE)."""
        image = image_of(payload)
        if image is None:
            which = "OldImage" if payload["event_name"] == "REMOVE" else "NewImage"
            raise validate.missing(which, f"the record has no {which}: the stream's view type must include it (NEW_AND_OLD_IMAGES)")
        return validate(image)


def image_of(payload: dict[str, Any]) -> dict[str, Any] | None:
    """The item a change is about: its new image, or for a REMOVE its old one."""
    return payload["old_image"] if payload["event_name"] == "REMOVE" else payload["new_image"]


SOURCE = DynamoDBSource
