"""The CloudWatch Logs subscription format, read by two sources: a subscription filter invoking a
function (``{"awslogs": {"data": ...}}``, the ``cloudwatch_logs`` source) and one putting records on
a Kinesis stream (each record's ``data``, the ``kinesis`` source).

Either way the data is base64 text of a gzip-compressed JSON message: ``messageType``
(``DATA_MESSAGE``, or ``CONTROL_MESSAGE`` when CloudWatch Logs checks that the destination is
reachable), ``owner``, ``logGroup``, ``logStream``, ``subscriptionFilters`` and ``logEvents``
(``id``, ``timestamp`` in milliseconds, ``message``). Each log event becomes one record; control
messages are skipped with an INFO line.
"""

from __future__ import annotations

import binascii
import zlib
from typing import Any

from .. import codec, log
from .._data import dig, is_text, text_or
from ..record import Record
from ..trace import stable_id
from ..trace.foreign import bounded_repr
from .base import pick_trace, read_alone, reason

MAX_UNPACKED_BYTES = 16 * 1024 * 1024
"""A subscription message unpacks to a few MB at most (CloudWatch Logs batches up to 1 MB of log
events); more is refused, so that a small "gzip bomb" cannot take the function's memory."""

LINE_KEYS = ("trace_id", "level", "message", "timestamp")
"""The keys of every line lambda_kit writes (with a record's trace id)."""

DATA = "DATA_MESSAGE"
CONTROL = "CONTROL_MESSAGE"


class LogEventRecord(Record):
    """A record made of one log event: ``document`` is its subscription message without the log
    events (log group, stream, owner, filters), ``log_event`` the event as CloudWatch Logs sent it
    (what a requeue puts back)."""

    __slots__ = ("document", "log_event")


def unpack(data: object) -> dict[str, Any]:
    """The subscription message in ``data`` (base64 of gzip; a zlib stream is read too). Raises
    ``ValueError`` saying what ``data`` is instead, to follow the name of the field."""
    if not isinstance(data, str | bytes):
        raise ValueError("is not base64 text")
    try:
        packed = binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"is not valid base64 ({reason(exc)})") from None
    text = _inflated(packed)
    try:
        message = codec.loads(text)
    except Exception as exc:
        raise ValueError(f"is gzip data that is not JSON ({reason(exc)})") from None
    if not isinstance(dig(message, "messageType"), str):
        raise ValueError("is not a CloudWatch Logs subscription message (it has no messageType)")
    return message


def _inflated(packed: bytes) -> bytes:
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 32)  # a gzip or a zlib header
    try:
        text = inflater.decompress(packed, MAX_UNPACKED_BYTES)
    except zlib.error as exc:
        raise ValueError(f"is not gzip data ({reason(exc)})") from None
    if inflater.unconsumed_tail:
        raise ValueError(f"unpacks to more than {MAX_UNPACKED_BYTES} bytes")
    if not inflater.eof:
        raise ValueError("is truncated gzip data")
    return text


def pack(message: dict[str, Any]) -> bytes:
    """``message`` as CloudWatch Logs sends it, before base64: gzip-compressed JSON."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS | 16)  # | 16: a gzip header
    return compressor.compress(codec.dumps(message).encode()) + compressor.flush()


def log_event_records(
    message: dict[str, Any], source: str, raw: object = None, record_id: str | None = None, attempt: int = 0
) -> list[Record]:
    """One record per log event of ``message``; none for a control message (an INFO line says so).

    ``record_id`` is the id every record reports (the Kinesis sequence number of the record that
    carried the message), else each log event's own id; ``raw`` is every record's raw (the Kinesis
    record), else the log event itself.
    """
    if message["messageType"] == CONTROL:
        skip_control_message(message, source, record_id)
        return []
    return Subscription(message, source, raw, record_id, attempt).records()


def skip_control_message(message: dict[str, Any], source: str, record_id: str | None) -> None:
    events = message.get("logEvents")
    log.emit(
        "INFO",
        "skipped a CloudWatch Logs control message",
        None,
        {
            "source": source,
            "record_id": record_id,
            "log_group": log.clean(message.get("logGroup")),
            "messages": log.clean(
                [dig(event, "message") for event in events if type(event) is dict]
                if type(events) is list
                else []
            ),
        },
    )


class Subscription:
    """The log events of one data message, read into records."""

    __slots__ = ("message", "source", "raw", "record_id", "attempt", "document", "common")

    def __init__(
        self, message: dict[str, Any], source: str, raw: object, record_id: str | None, attempt: int
    ) -> None:
        self.message, self.source, self.raw, self.record_id, self.attempt = (
            message,
            source,
            raw,
            record_id,
            attempt,
        )
        self.document = {key: value for key, value in message.items() if key != "logEvents"}
        self.common = {
            "log_group": message.get("logGroup"),
            "log_stream": message.get("logStream"),
            "owner": message.get("owner"),
            "subscription_filters": message.get("subscriptionFilters"),
        }

    def records(self) -> list[Record]:
        """Each log event read alone (``read_alone``); a message of another type, or without a list
        of log events, is one failed record."""
        kind, events = self.message["messageType"], self.message.get("logEvents")
        if kind != DATA or type(events) is not list:
            why = (
                f"messageType {ascii(kind)[:60]} is not {DATA}"
                if kind != DATA
                else "the subscription message has no logEvents list"
            )
            trace_id = stable_id(bounded_repr(self.document, 512))
            return [self.failed(self.document, why, trace_id, "", self.message)]
        return [record for event in events for record in read_alone(self.source, event, self.read)]

    def read(self, event: object) -> list[Record]:
        return [self.record(event)]

    def record(self, event: Any) -> Record:
        if type(dig(event, "id")) is int:  # AWS sends the id as text; moto, as a number
            event = {**event, "id": str(event["id"])}
        why = _malformed(event)
        if why is not None:
            event_id = text_or(dig(event, "id"), "")
            return self.failed(event, why, stable_id(event_id or bounded_repr(event, 512)), event_id, event)
        fields = json_object(event["message"])
        found = fields.get("trace_id") if fields is not None and is_lambda_kit_line(fields) else None
        trace_id, rejected, _ = pick_trace(self.source, found, event["id"])
        payload = {
            "id": event["id"],
            "timestamp": event["timestamp"],
            "message": event["message"],
            "json": fields,
            **self.common,
        }
        record = LogEventRecord(
            source=self.source,
            id=self.id_of(event["id"]),
            trace_id=trace_id,
            payload=payload,
            raw=event if self.raw is None else self.raw,
            attempt=self.attempt,
            rejected_trace_id=rejected,
        )
        record.document, record.log_event = self.document, event
        return record

    def failed(self, payload: Any, why: str, trace_id: str, event_id: str, raw: object) -> Record:
        return Record(
            source=self.source,
            id=self.id_of(event_id),
            trace_id=trace_id,
            payload=payload,
            raw=raw if self.raw is None else self.raw,
            error=why,
            attempt=self.attempt,
        )

    def id_of(self, event_id: str) -> str:
        """The id a record reports: the Kinesis record's, else the log event's."""
        return event_id if self.record_id is None else self.record_id


def _malformed(event: object) -> str | None:
    if type(event) is not dict:
        return "log event is not a JSON object"
    if not is_text(event.get("id")):
        return "log event has no id"
    if not isinstance(event.get("message"), str):
        return "log event has no message text"
    if type(event.get("timestamp")) is not int:
        return "log event has no timestamp (milliseconds)"
    return None


def json_object(text: str) -> dict[str, Any] | None:
    """``text`` decoded when it is a JSON object (a structured log line), else None."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    try:
        value = codec.loads(stripped)
    except Exception:
        return None
    return value if type(value) is dict else None


def is_lambda_kit_line(fields: dict[str, Any]) -> bool:
    """Whether a decoded log line is one lambda_kit wrote (its keys ``timestamp``, ``level``,
    ``message``, and a ``trace_id``): its trace id is the producer's."""
    return all(key in fields for key in LINE_KEYS)
