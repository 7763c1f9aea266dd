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

import binascii  # base64's functions, without importing base64 and struct (cold start)
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import codec
from ..record import Record
from ..trace import is_valid_id
from .base import Source, malformed, pick_trace, pick_trace_id, reason
from .window import Window, Windowed

if TYPE_CHECKING:
    from . import awslogs

REQUEUE_KEY = "lambda_kit_requeue"

KPL_BASE64 = "84maw"
"""How the base64 text of every KPL aggregate begins (its magic bytes): a test that costs nothing
on ordinary records; ``lambda_kit.sources.kpl`` is loaded, and decides on the decoded bytes, only for a
record that passes it (cold start)."""

GZIP_BASE64 = "H4sI"
"""How base64 text of gzip data begins (gzip's magic bytes 1f 8b 08): the cheap test for a record
that may hold a CloudWatch Logs subscription message (``lambda_kit.sources.awslogs`` is loaded only then)."""


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

    def records(self, event: Any) -> list[Record]:
        piped = type(event) is list
        records = []
        for raw in event if piped else event["Records"]:
            kinesis = kinesis_fields(raw)
            if kinesis is not None and type(data := kinesis.get("data")) is str and data.startswith(KPL_BASE64):
                batch = self.deaggregated(raw, kinesis)
            else:
                log_events = self.log_events(raw, kinesis)
                batch = [self.record(raw)] if log_events is None else log_events
            records += [self.piped(record, record.raw) for record in batch] if piped else batch
        return records

    def deaggregated(self, raw: dict[str, Any], kinesis: dict[str, Any]) -> list[Record]:
        """The user records of a KPL aggregate (the record itself when it is none); an aggregate
        that cannot be split fails whole, with the reason."""
        from . import kpl

        try:
            users = kpl.split(binascii.a2b_base64(kinesis["data"], strict_mode=True))
        except binascii.Error:
            users = None  # not base64: the record fails as any would
        except kpl.AggregateError as exc:
            record = self.record(raw)
            if record.id:
                record.error, record.payload = reason(exc), kinesis["data"]
            return [record]
        if users is None:
            return [self.record(raw)]
        flattened = "kinesis" not in raw
        records = []
        for number, user in enumerate(users):
            fields = {
                **kinesis,
                "partitionKey": user.partition_key,
                "explicitHashKey": user.explicit_hash_key,
                "data": binascii.b2a_base64(user.data, newline=False).decode("ascii"),
                "subSequenceNumber": number,
                "aggregated": True,
            }
            records.append(self.record({**raw, **fields} if flattened else {**raw, "kinesis": fields}))
        return records

    def log_events(self, raw: Any, kinesis: dict[str, Any] | None) -> list[Record] | None:
        """The log events of a record holding a CloudWatch Logs subscription message, else None."""
        if not self.json or kinesis is None:
            return None
        data, sequence_number = kinesis.get("data"), kinesis.get("sequenceNumber")
        if type(data) is not str or not data.startswith(GZIP_BASE64) or not isinstance(sequence_number, str) or not sequence_number:
            return None
        from . import awslogs

        try:
            message = awslogs.unpack(data)
        except ValueError as exc:
            trace_id, _ = pick_trace_id(None, raw.get("eventID") or sequence_number)
            return [Record(source="kinesis", id=sequence_number, trace_id=trace_id, payload=data, raw=raw, error=f"kinesis.data {exc}")]
        meta = message.pop(REQUEUE_KEY, None)  # a log event requeued on its own
        attempt = (meta.get("attempt") if type(meta.get("attempt")) is int else 1) if type(meta) is dict else 0
        return awslogs.log_event_records(message, "kinesis", raw, sequence_number, attempt)

    def record(self, raw: Any) -> Record:
        kinesis = kinesis_fields(raw)
        if kinesis is None:
            return malformed("kinesis", raw, "record has no kinesis object")
        sequence_number = kinesis.get("sequenceNumber")
        if not isinstance(sequence_number, str) or not sequence_number:
            return malformed("kinesis", raw, "record has no kinesis.sequenceNumber")
        fallback = raw.get("eventID") or sequence_number
        report_id = None
        sub = kinesis.get("subSequenceNumber")
        if type(sub) is int and kinesis.get("aggregated") is True:  # a KPL user record
            fallback, report_id = f"{fallback}:{sub}", sequence_number
            sequence_number = f"{sequence_number}:{sub}"
        payload: Any = None
        error = None
        attempt = 0
        found = None
        try:
            data = binascii.a2b_base64(kinesis.get("data"), strict_mode=True)
        except (binascii.Error, TypeError, ValueError) as exc:
            data, error = None, f"kinesis.data is not valid base64 ({reason(exc)})"
        if data is not None:
            try:
                payload = codec.loads(data) if self.json or data[:1] == b"{" else data
            except Exception as exc:
                if self.json:
                    error = f"kinesis.data is not valid JSON ({reason(exc)})"
                else:
                    payload = data
            if type(payload) is dict and type(payload.get(REQUEUE_KEY)) is dict:
                # A requeued record keeps the trace id of its first try (its eventID is new).
                if is_valid_id(payload.get("trace_id")):
                    fallback = payload["trace_id"]
                payload, attempt, error = self._unwrap(payload)
            if type(payload) is dict:
                found = payload.get("trace_id")
            if not self.json and isinstance(payload, dict | list) and error is None:
                payload = data
        carrier = payload if type(payload) is dict else None
        trace_id, rejected, context = pick_trace("kinesis", found, fallback, carrier)
        if error is not None:
            payload = kinesis.get("data")
        return Record(source="kinesis", id=sequence_number, trace_id=trace_id, payload=payload, raw=raw, error=error, attempt=attempt, rejected_trace_id=rejected, group=None, report_id=report_id, context=context)

    def _unwrap(self, envelope: dict[str, Any]) -> tuple[Any, int, str | None]:
        meta = envelope[REQUEUE_KEY]
        attempt = meta.get("attempt") if type(meta.get("attempt")) is int else 1
        try:
            original = binascii.a2b_base64(envelope.get("data"), strict_mode=True)
        except (binascii.Error, TypeError, ValueError) as exc:
            return None, attempt, f"requeued record's data is not valid base64 ({reason(exc)})"
        if not self.json:
            return original, attempt, None
        try:
            payload = codec.loads(original)
        except Exception as exc:
            return None, attempt, f"kinesis.data is not valid JSON ({reason(exc)})"
        return payload, attempt, None

    def ordering_key(self, record: Record) -> Any:
        """The partition key: Kinesis keeps order per partition key within a shard."""
        kinesis = kinesis_fields(record.raw)
        return kinesis.get("partitionKey") if kinesis is not None else None

    # --- failure routing ---------------------------------------------------------------------

    def requeue(self, record: Record, error: BaseException) -> str:
        """Put ``record`` back on its stream, or dead-letter it after ``max_attempts``.

        Returns the outcome (``"requeued"`` or ``"dead_lettered"``); raises when AWS refused,
        in which case the record is reported as a batch failure like any other.
        """
        from .. import aws  # only for a failed record (cold start)
        from . import awslogs

        if isinstance(record, awslogs.LogEventRecord):
            return self.requeue_log_event(record, error)
        raw = record.raw
        original_data = kinesis_fields(raw)["data"]
        try:  # a record requeued before: put back what the producer sent, not our wrapper
            outer = codec.loads(binascii.a2b_base64(original_data))
            if type(outer) is dict and type(outer.get(REQUEUE_KEY)) is dict:
                original_data = outer.get("data")
        except Exception:
            pass
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
            StreamName=_stream_name(raw.get("eventSourceARN")),
            Data=codec.dumps(envelope).encode(),
            PartitionKey=record.trace_id,
        )
        return "requeued"

    def requeue_log_event(self, record: awslogs.LogEventRecord, error: BaseException) -> str:
        """A failed log event goes back alone (a subscription message of that event and an attempt
        count), so the log events that succeeded with it are not repeated."""
        from .. import aws
        from . import awslogs

        alone = {**record.document, "logEvents": [record.log_event]}
        attempt = record.attempt + 1
        if attempt >= self.max_attempts:
            self._dead_letter_send(record, error, binascii.b2a_base64(awslogs.pack(alone), newline=False).decode("ascii"), attempt)
            return "dead_lettered"
        retry = {**alone, REQUEUE_KEY: {"attempt": attempt, "error_type": type(error).__name__}}
        aws.client("kinesis").put_record(
            StreamName=_stream_name(record.raw.get("eventSourceARN")), Data=awslogs.pack(retry), PartitionKey=record.trace_id
        )
        return "requeued"

    def dead_letter(self) -> str | None:
        target = self._dead_letter() if callable(self._dead_letter) else self._dead_letter
        return target or os.environ.get("LAMBDA_KIT_DEAD_LETTER") or None

    def _dead_letter_send(self, record: Record, error: BaseException, data: Any, attempts: int) -> None:
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
                "partition_key": kinesis.get("partitionKey"),
                "attempts": attempts,
                "error_type": type(error).__name__,
                "error": str(error)[:1000],
                "data": data,
            }
        )
        from .. import aws

        trace = {"trace_id": {"DataType": "String", "StringValue": record.trace_id}}
        order = fifo_fields(record, kinesis) if target.endswith(".fifo") else {}
        if target.startswith("arn:aws:sns:"):
            aws.client("sns").publish(TopicArn=target, Message=body, MessageAttributes=trace, **order)
            return
        sqs = aws.client("sqs")
        queue_url = target
        if target.startswith("arn:aws:sqs:"):
            parts = target.split(":")
            queue_url = sqs.get_queue_url(QueueName=parts[5], QueueOwnerAWSAccountId=parts[4])["QueueUrl"]
        sqs.send_message(QueueUrl=queue_url, MessageBody=body, MessageAttributes=trace, **order)


def fifo_fields(record: Record, kinesis: dict[str, Any] | None) -> dict[str, str]:
    """What a FIFO queue or topic requires of a dead letter: its group is the record's partition
    key (the records of one key stay in order, as on the shard), its deduplication id the stream,
    the record's id and, for a log event, the log event's id (a dead letter sent again, by a
    retried batch, is dropped as a duplicate within SQS's five minutes; two records never share
    one). A key that is no valid group id (empty, over 128 characters, other than printable ASCII,
    or not text) is replaced by its digest; a record without one is grouped by its trace id."""
    from . import awslogs

    key = (kinesis or {}).get("partitionKey")
    if not (isinstance(key, str) and 0 < len(key) <= 128 and all("!" <= c <= "~" for c in key)):
        key = _digest(record.trace_id if key is None else str(key))
    log_event = record.log_event if isinstance(record, awslogs.LogEventRecord) else {}
    return {"MessageGroupId": key, "MessageDeduplicationId": _digest(f"{record.raw.get('eventSourceARN')}|{record.id}|{log_event.get('id')}")}


def _digest(text: str) -> str:
    import hashlib  # rare path: FIFO dead letters only

    return hashlib.sha256(text.encode()).hexdigest()


def kinesis_fields(raw: Any) -> dict[str, Any] | None:
    """A record's Kinesis fields: its ``kinesis`` object (event source mapping), or the record
    itself when EventBridge Pipes flattened them into it."""
    if type(raw) is not dict:
        return None
    kinesis = raw.get("kinesis", raw if "sequenceNumber" in raw else None)
    return kinesis if type(kinesis) is dict else None


def _stream_name(arn: Any) -> str:
    if not isinstance(arn, str) or "stream/" not in arn:
        raise ValueError(f"cannot requeue: eventSourceARN {arn!r} is not a Kinesis stream ARN")
    return arn.split("stream/", 1)[1].split("/", 1)[0]


SOURCE = KinesisSource
