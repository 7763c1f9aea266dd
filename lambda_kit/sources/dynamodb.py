"""DynamoDB Streams: images deserialized to plain Python, trace id in the image's ``trace_id``
attribute (a tracer's context in its ``traceparent`` / ``_datadog`` attributes); a failure stops the
batch at that record (Lambda resumes from its sequence number). EventBridge Pipes batches (a
top-level list of the same records) are reported by ``eventID``. With a tumbling window the
window's state goes in and out (``lambda_kit.sources.window``)."""

from __future__ import annotations

import binascii
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from .._data import dig, is_text, text_or
from ..record import Record
from ..trace import stable_id
from ..trace.foreign import bounded_repr
from .base import Source, malformed, pick_trace, reason
from .window import Window, Windowed

if TYPE_CHECKING:
    from ..validation import Validator

MAX_NESTING = 64
"""Maps and lists nested deeper are no DynamoDB item (it nests 32 levels at most): refused."""


def number(text: str) -> int | float | Decimal:
    """A DynamoDB number (``{"N": text}``, 38 significant digits at most) as Python holds it
    exactly: an integer (digits only) is an ``int``; any other number is a ``float`` when the
    float gives the same number back (``0.5``, ``1E+130``), else a ``Decimal`` with all its digits
    (``Decimal("1234567890123456789012345.123456789")``)."""
    try:
        return int(text)
    except ValueError:
        exact = _decimal(text)
    close = float(exact)
    return close if Decimal(repr(close)) == exact else exact


def _decimal(text: object) -> Decimal:
    try:
        exact = Decimal(text)
    except (InvalidOperation, TypeError, ValueError):
        raise ValueError(f"{bounded_repr(text, 60)} is not a number") from None
    if not exact.is_finite():
        raise ValueError(f"{text!r} is not a number DynamoDB holds")
    return exact


def _binary(inner: object) -> bytes:
    """A binary attribute: base64 text (or bytes). Never ``bytes(n)``: {"B": 10**9} is 1 GB."""
    if isinstance(inner, str):
        return binascii.a2b_base64(inner)
    if isinstance(inner, bytes | bytearray | memoryview):
        return bytes(inner)
    raise ValueError(f"binary attribute holds {type(inner).__name__}, not base64 text")


def deserialize(value: object, depth: int = 0) -> Any:
    """One DynamoDB attribute value (``{"S": "x"}``, ``{"N": "1"}``, ...) as plain Python."""
    ((kind, inner),) = value.items()
    read = _READERS.get(kind)
    if read is None:
        raise ValueError(f"unknown DynamoDB attribute type {bounded_repr(kind, 1024)}")
    if depth > MAX_NESTING:
        raise ValueError(f"attributes are nested deeper than {MAX_NESTING} levels")
    return read(inner, depth + 1)


_READERS: dict[str, Callable[[Any, int], Any]] = {
    "S": lambda inner, depth: inner,
    "N": lambda inner, depth: number(inner),
    "BOOL": lambda inner, depth: bool(inner),
    "NULL": lambda inner, depth: None,
    "M": lambda inner, depth: {key: deserialize(item, depth) for key, item in inner.items()},
    "L": lambda inner, depth: [deserialize(item, depth) for item in inner],
    "SS": lambda inner, depth: set(inner),
    "NS": lambda inner, depth: {number(item) for item in inner},
    "B": lambda inner, depth: _binary(inner),
    "BS": lambda inner, depth: {_binary(item) for item in inner},
}


def deserialize_image(image: Any) -> dict[str, Any] | None:
    """An item image (``NewImage``, ``OldImage``, ``Keys``) as a dict of plain Python."""
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

    def read(self, raw: object) -> list[Record]:
        change = dig(raw, "dynamodb")
        if type(change) is not dict:
            return [malformed("dynamodb", raw, "record has no dynamodb object")]
        sequence_number = change.get("SequenceNumber")
        if not is_text(sequence_number):
            return [malformed("dynamodb", raw, "record has no dynamodb.SequenceNumber")]
        fallback = text_or(raw.get("eventID"), sequence_number)
        try:
            payload = change_of(raw.get("eventName"), change)
        except Exception as exc:
            return [
                Record(
                    source="dynamodb",
                    id=sequence_number,
                    trace_id=stable_id(fallback),
                    payload=change,
                    raw=raw,
                    error=f"stream image is malformed ({reason(exc)})",
                )
            ]
        image = image_of(payload)
        trace_id, rejected, context = pick_trace("dynamodb", dig(image, "trace_id"), fallback, image)
        return [
            Record(
                source="dynamodb",
                id=sequence_number,
                trace_id=trace_id,
                payload=payload,
                raw=raw,
                rejected_trace_id=rejected,
                context=context,
            )
        ]

    def ordering_key(self, record: Record) -> Any:
        """The item's key: DynamoDB Streams keeps each item's changes in order."""
        keys = dig(record.raw, "dynamodb", "Keys")
        return bounded_repr(sorted(keys.items()), 4096) if type(keys) is dict else None

    def typed(self, payload: Any, validate: Validator) -> Any:
        """With ``model=`` the function receives the item: its new image (the old one for REMOVE)."""
        image = image_of(payload)
        if image is None:
            which = "OldImage" if payload["event_name"] == "REMOVE" else "NewImage"
            raise validate.missing(
                which,
                f"the record has no {which}: the stream's view type must include it (NEW_AND_OLD_IMAGES)",
            )
        return validate(image)


def change_of(event_name: Any, change: dict[str, Any]) -> dict[str, Any]:
    """What the function receives: the change's name, the item's keys and its images."""
    return {
        "event_name": event_name,
        "keys": deserialize_image(change.get("Keys")) or {},
        "new_image": deserialize_image(change.get("NewImage")),
        "old_image": deserialize_image(change.get("OldImage")),
    }


def image_of(payload: dict[str, Any]) -> dict[str, Any] | None:
    """The item a change is about: its new image, or for a REMOVE its old one."""
    return payload["old_image"] if payload["event_name"] == "REMOVE" else payload["new_image"]


SOURCE = DynamoDBSource
