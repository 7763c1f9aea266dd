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
import hashlib
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from .. import aws, codec
from .._data import dig, is_text, mapping, text_or
from ..record import Record
from ..trace import is_valid_id, stable_id
from ..trace.foreign import bounded_repr
from . import awslogs, kpl
from .base import Source, as_text, base64_bytes, loaded, malformed, pick_trace, reason, unstamped
from .window import Window, Windowed

REQUEUE_KEY = "lambda_kit_requeue"

KPL_BASE64 = "84maw"
"""How the base64 text of every KPL aggregate begins (its magic bytes): the test that sends a
record to ``lambda_kit.sources.kpl``, which decides on the decoded bytes."""

GROUP_ID = re.compile(r"[!-~]{1,128}")
"""A FIFO message group id: 1 to 128 printable ASCII characters."""

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
        self._dead_letter = dead_letter

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
        """Put ``record`` back on its stream, or dead-letter it after ``max_attempts``.

        Returns the outcome (``"requeued"`` or ``"dead_lettered"``); raises when AWS refused,
        in which case the record is reported as a batch failure like any other.
        """
        if isinstance(record, awslogs.LogEventRecord):
            return self.requeue_log_event(record, error)
        original_data = producers_data(kinesis_fields(record.raw)["data"])
        attempt = record.attempt + 1
        if attempt >= self.max_attempts:
            self._dead_letter_send(record, error, original_data, attempt)
            return "dead_lettered"
        envelope = {
            "trace_id": record.trace_id,
            REQUEUE_KEY: {"attempt": attempt, "error_type": type(error).__name__},
            "data": original_data,
        }
        aws.client("kinesis").put_record(
            StreamName=_stream_name(record.raw.get("eventSourceARN")),
            Data=codec.dumps(envelope).encode(),
            PartitionKey=record.trace_id,
        )
        return "requeued"

    def requeue_log_event(self, record: awslogs.LogEventRecord, error: BaseException) -> str:
        """A failed log event goes back alone (a subscription message of that event and an attempt
        count), so the log events that succeeded with it are not repeated."""
        alone = {**record.document, "logEvents": [record.log_event]}
        attempt = record.attempt + 1
        if attempt >= self.max_attempts:
            self._dead_letter_send(
                record,
                error,
                binascii.b2a_base64(awslogs.pack(alone), newline=False).decode("ascii"),
                attempt,
            )
            return "dead_lettered"
        retry = {**alone, REQUEUE_KEY: {"attempt": attempt, "error_type": type(error).__name__}}
        aws.client("kinesis").put_record(
            StreamName=_stream_name(record.raw.get("eventSourceARN")),
            Data=awslogs.pack(retry),
            PartitionKey=record.trace_id,
        )
        return "requeued"

    def dead_letter(self) -> str | None:
        target = self._dead_letter() if callable(self._dead_letter) else self._dead_letter
        return target or os.environ.get("LAMBDA_KIT_DEAD_LETTER") or None

    def _dead_letter_send(self, record: Record, error: BaseException, data: object, attempts: int) -> None:
        target = self.dead_letter()
        if not target:
            raise RuntimeError(
                "on_failure='requeue' reached max_attempts but no dead_letter is configured "
                "(pass dead_letter= or set LAMBDA_KIT_DEAD_LETTER); the record is reported as failed"
            )
        kinesis = kinesis_fields(record.raw)
        body = codec.dumps(
            {
                "source": "kinesis",
                "trace_id": record.trace_id,
                "stream": record.raw.get("eventSourceARN"),
                "sequence_number": record.id,
                "partition_key": dig(kinesis, "partitionKey"),
                "attempts": attempts,
                "error_type": type(error).__name__,
                "error": str(error)[:1000],
                "data": data,
            }
        )
        order = fifo_fields(record, kinesis) if target.endswith(".fifo") else {}
        send_dead_letter(
            target, body, {"trace_id": {"DataType": "String", "StringValue": record.trace_id}}, order
        )


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


def producers_data(data: object) -> Any:
    """``kinesis.data`` as the producer sent it: out of lambda_kit's envelope when it was requeued."""
    try:
        outer = codec.loads(binascii.a2b_base64(data))
    except Exception:
        return data
    return outer.get("data") if type(dig(outer, REQUEUE_KEY)) is dict else data


def send_dead_letter(target: str, body: str, attributes: dict[str, Any], order: dict[str, str]) -> None:
    """Send ``body`` to the dead-letter topic or queue ``target`` (an ARN or a queue URL)."""
    if target.startswith("arn:aws:sns:"):
        aws.client("sns").publish(TopicArn=target, Message=body, MessageAttributes=attributes, **order)
        return
    sqs = aws.client("sqs")
    queue_url = target
    if target.startswith("arn:aws:sqs:"):
        parts = target.split(":")
        queue_url = sqs.get_queue_url(QueueName=parts[5], QueueOwnerAWSAccountId=parts[4])["QueueUrl"]
    sqs.send_message(QueueUrl=queue_url, MessageBody=body, MessageAttributes=attributes, **order)


def fifo_fields(record: Record, kinesis: dict[str, Any] | None) -> dict[str, str]:
    """What a FIFO queue or topic requires of a dead letter: its group is the record's partition
    key (the records of one key stay in order, as on the shard), its deduplication id the stream,
    the record's id and, for a log event, the log event's id (a dead letter sent again, by a
    retried batch, is dropped as a duplicate within SQS's five minutes; two records never share
    one). A key that is no valid group id (empty, over 128 characters, other than printable ASCII,
    or not text) is replaced by its digest; a record without one is grouped by its trace id."""
    key = dig(kinesis, "partitionKey")
    if type(key) is not str or not GROUP_ID.fullmatch(key):
        key = _digest(record.trace_id if key is None else as_text(key))
    log_event = record.log_event if isinstance(record, awslogs.LogEventRecord) else {}
    deduplication = f"{as_text(record.raw.get('eventSourceARN'))}|{record.id}|{as_text(log_event.get('id'))}"
    return {"MessageGroupId": key, "MessageDeduplicationId": _digest(deduplication)}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def kinesis_fields(raw: object) -> dict[str, Any] | None:
    """A record's Kinesis fields: its ``kinesis`` object (event source mapping), or the record
    itself when EventBridge Pipes flattened them into it."""
    if type(raw) is not dict:
        return None
    kinesis = raw.get("kinesis", raw if "sequenceNumber" in raw else None)
    return kinesis if type(kinesis) is dict else None


def _stream_name(arn: object) -> str:
    if not isinstance(arn, str) or "stream/" not in arn:
        raise ValueError(
            f"cannot requeue: eventSourceARN {bounded_repr(arn, 200)} is not a Kinesis stream ARN"
        )
    return arn.split("stream/", 1)[1].split("/", 1)[0]


SOURCE = KinesisSource
