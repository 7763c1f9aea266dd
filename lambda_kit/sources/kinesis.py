"""Kinesis: base64 + JSON ``data``, trace id in the payload's ``trace_id`` field (a tracer's
context in its ``traceparent`` / ``_datadog`` fields).

By default a failure stops the batch at that record and reports its sequence number (Lambda
resumes from there, in order). With ``on_failure="requeue"`` the failed record is put back on
its stream (partition key = trace id) wrapped with an attempt count, the batch goes on, and after
``max_attempts`` the record goes to the dead-letter destination instead of looping forever.

EventBridge Pipes sends a top-level list of flattened records (the ``kinesis`` fields beside the
others) and names failed ones by ``eventID``. A KPL aggregate becomes its user records, each with
``id`` ``<sequenceNumber>:<subSequenceNumber>``; a failure among them is reported by the
aggregate's sequence number (Lambda checkpoints on it), so the whole aggregate comes back.

A record holding a CloudWatch Logs subscription message (a subscription filter to the stream) is
one record per log event, each reporting the Kinesis sequence number; a requeued log event goes
back alone. With a tumbling window the window's state goes in and out (``lambda_kit.sources.window``).
"""

from __future__ import annotations

import binascii
from collections.abc import Callable, Mapping
from typing import Any

from .. import codec
from .._data import dig, is_text, mapping, text_or
from ..record import Record
from ..trace import is_valid_id, stable_id
from . import awslogs, kpl
from .base import Source, base64_bytes, loaded, malformed, pick_trace, reason, unstamped
from .requeue import REQUEUE_KEY, Requeues, producers_data
from .window import Window, Windowed

KPL_BASE64 = "84maw"
"""How the base64 text of every KPL aggregate begins (its magic bytes): the test that sends a
record to ``lambda_kit.sources.kpl``, which decides on the decoded bytes."""

GZIP_BASE64 = "H4sI"
"""How base64 text of gzip data begins (gzip's magic bytes 1f 8b 08): the test for a record that
may hold a CloudWatch Logs subscription message (``lambda_kit.sources.awslogs``)."""


class KinesisSource(Windowed, Source):
    name = "kinesis"
    label = "a Kinesis event"
    decorator = "stream_handler"
    event_source = "aws:kinesis"
    record_marker = "kinesis"
    serverless_events = ("stream",)
    arn_service = "kinesis"
    resource_types = ("AWS::Kinesis::Stream",)
    delivery = "stream"
    reports_batch_failures = True
    ordered = True
    pipes = "Kinesis records"
    pipes_report_key = "eventID"

    def __init__(
        self,
        json: bool = True,
        on_failure: str = "stop",
        max_attempts: int = 3,
        dead_letter: str | Callable[[], str | None] | None = None,
        on_window_end: Callable[[Window], Any] | None = None,
    ) -> None:
        self.json = json
        self.on_window_end = on_window_end
        self.requeueing = on_failure == "requeue"
        self.stop_at_first_failure = not self.requeueing
        self.max_attempts = max_attempts
        self.requeues = Requeues(max_attempts, dead_letter, kinesis_fields)

    def read(self, raw: object) -> list[Record]:
        """A KPL aggregate is its user records; a CloudWatch Logs subscription message its log
        events; any other record is one record."""
        kinesis = kinesis_fields(raw) or {}
        data = kinesis.get("data")
        if type(data) is not str:
            return [self.record(raw)]
        if data.startswith(KPL_BASE64):
            return self.deaggregated(raw, kinesis)
        if data.startswith(GZIP_BASE64) and self.json:
            return self.log_events(raw, kinesis)
        return [self.record(raw)]

    def deaggregated(self, raw: dict[str, Any], kinesis: dict[str, Any]) -> list[Record]:
        """The user records of a KPL aggregate (the record itself when it is none); an aggregate
        that cannot be split fails whole, with the reason."""
        try:
            users = kpl.split(binascii.a2b_base64(kinesis["data"], strict_mode=True))
        except binascii.Error:
            users = None  # not base64: the record fails as any would
        except kpl.AggregateError as exc:
            return [self.failed_whole(raw, kinesis, reason(exc))]
        if users is None:
            return [self.record(raw)]
        return [self.record(user_raw(raw, kinesis, number, user)) for number, user in enumerate(users)]

    def failed_whole(self, raw: dict[str, Any], kinesis: dict[str, Any], why: str) -> Record:
        record = self.record(raw)
        if record.id:
            record.error, record.payload = why, kinesis["data"]
        return record

    def log_events(self, raw: dict[str, Any], kinesis: dict[str, Any]) -> list[Record]:
        """The log events of a record holding a CloudWatch Logs subscription message, each
        reported by the record's sequence number."""
        sequence_number, data = kinesis.get("sequenceNumber"), kinesis["data"]
        if not is_text(sequence_number):
            return [self.record(raw)]  # it fails for that
        try:
            message = awslogs.unpack(data)
        except ValueError as exc:
            trace_id = stable_id(text_or(raw.get("eventID"), sequence_number))
            return [
                Record(
                    source="kinesis",
                    id=sequence_number,
                    trace_id=trace_id,
                    payload=data,
                    raw=raw,
                    error=f"kinesis.data {exc}",
                )
            ]
        attempt = requeued_attempt(message.pop(REQUEUE_KEY, None))  # a log event requeued on its own
        return awslogs.log_event_records(message, "kinesis", raw, sequence_number, attempt)

    def record(self, raw: object) -> Record:
        kinesis = kinesis_fields(raw)
        if kinesis is None:
            return malformed("kinesis", raw, "record has no kinesis object")
        if not is_text(kinesis.get("sequenceNumber")):
            return malformed("kinesis", raw, "record has no kinesis.sequenceNumber")
        record_id, fallback, report_id = record_ids(raw, kinesis)
        payload, doc, error, envelope = self.decoded(kinesis.get("data"))
        first_try = dig(envelope, "trace_id")  # a requeued record keeps the trace id of its first try
        fallback = first_try if is_valid_id(first_try) else fallback
        found, carrier = trace_places(doc)
        trace_id, rejected, context = pick_trace("kinesis", found, fallback, carrier)
        return Record(
            source="kinesis",
            id=record_id,
            trace_id=trace_id,
            payload=payload,
            raw=raw,
            error=error,
            attempt=requeued_attempt(dig(envelope, REQUEUE_KEY)),
            rejected_trace_id=rejected,
            report_id=report_id,
            context=context,
        )

    def decoded(self, text: object) -> tuple[Any, Any, str | None, dict[str, Any] | None]:
        """(payload, JSON document, error, the requeue envelope it came in) of ``kinesis.data``:
        a requeued record's data is the producer's, out of lambda_kit's envelope. The payload is the
        document, or with ``json=False`` the bytes (data that is a JSON object is read all the
        same, for lambda_kit's trace id), without what ``propagate()`` stamped; a record that
        fails keeps the base64 text."""
        data, error = base64_bytes(text, "kinesis.data")
        doc, error = self.document(data, error, self.json or (data or b"").startswith(b"{"))
        envelope = doc if type(dig(doc, REQUEUE_KEY)) is dict else None
        if envelope is not None:
            data, error = base64_bytes(envelope.get("data"), "requeued record's data")
            doc, error = self.document(data, error, self.json)
        own, stamp = unstamped(doc)  # what propagate() added, out of the producer's data
        if stamp is not None and not self.json:
            data = codec.dumps(own).encode()  # the producer's JSON value (its bytes as this codec writes it)
        payload = text if error else own if self.json else data
        return payload, doc, error, envelope

    def document(self, data: bytes | None, error: str | None, read: bool) -> tuple[Any, str | None]:
        """(the JSON document in ``data`` when ``read``, error); data that is no JSON is an error
        with ``json`` only."""
        if error is not None or not read:
            return None, error
        doc, error = loaded(data, "kinesis.data")
        return doc, error if self.json else None

    def ordering_key(self, record: Record) -> Any:
        """The partition key: Kinesis keeps order per partition key within a shard. A record with
        none (or one that is no text) keeps no order with others."""
        key = dig(kinesis_fields(record.raw), "partitionKey")
        return key if type(key) is str else None

    # --- failure routing ---------------------------------------------------------------------

    def requeue(self, record: Record, error: BaseException) -> str:
        """Put ``record`` back on its stream, or dead-letter it after ``max_attempts``
        (``lambda_kit.sources.requeue``): ``"requeued"`` or ``"dead_lettered"``; raises when AWS
        refused, in which case the record is reported as a batch failure like any other."""
        if isinstance(record, awslogs.LogEventRecord):
            return self.requeues.log_event(record, error)
        return self.requeues.record(record, error, producers_data(kinesis_fields(record.raw)["data"]))


def record_ids(raw: dict[str, Any], kinesis: dict[str, Any]) -> tuple[str, Any, str | None]:
    """(record id, trace id fallback, report id) of a Kinesis record: its sequence number and
    ``eventID``; a KPL user record's add its subsequence number, and it is reported by its
    aggregate's sequence number (Lambda checkpoints on it)."""
    sequence_number = kinesis["sequenceNumber"]
    fallback = text_or(raw.get("eventID"), sequence_number)
    sub = kinesis.get("subSequenceNumber")
    if type(sub) is not int or kinesis.get("aggregated") is not True:
        return sequence_number, fallback, None
    return f"{sequence_number}:{sub}", f"{fallback}:{sub}", sequence_number


def user_raw(
    raw: dict[str, Any], kinesis: dict[str, Any], number: int, user: kpl.UserRecord
) -> dict[str, Any]:
    """The raw record of a KPL user record: its aggregate's, with the user record's fields."""
    fields = {
        **kinesis,
        "partitionKey": user.partition_key,
        "explicitHashKey": user.explicit_hash_key,
        "data": binascii.b2a_base64(user.data, newline=False).decode("ascii"),
        "subSequenceNumber": number,
        "aggregated": True,
    }
    return {**raw, "kinesis": fields} if "kinesis" in raw else {**raw, **fields}


def trace_places(doc: object) -> tuple[Any, Mapping[str, Any]]:
    """(lambda_kit's trace id as found, the carrier of a tracer's context): the producer's own
    ``trace_id`` and fields, else what ``propagate()`` stamped."""
    own, stamp = unstamped(doc)
    found = dig(own, "trace_id")
    if stamp is None:
        return found, mapping(own)
    return (found if found is not None else stamp.get("trace_id")), stamp


def requeued_attempt(meta: object) -> int:
    """The attempt a requeue envelope's metadata counts (1 when it says none); 0: not requeued."""
    if type(meta) is not dict:
        return 0
    return meta["attempt"] if type(meta.get("attempt")) is int else 1


def kinesis_fields(raw: object) -> dict[str, Any] | None:
    """A record's Kinesis fields: its ``kinesis`` object (event source mapping), or the record
    itself when EventBridge Pipes flattened them into it."""
    if type(raw) is not dict:
        return None
    kinesis = raw.get("kinesis", raw if "sequenceNumber" in raw else None)
    return kinesis if type(kinesis) is dict else None


SOURCE = KinesisSource
