"""Kinesis's ``on_failure="requeue"``: a failed record put back on its stream, wrapped with an
attempt count (partition key: its trace id), and after ``max_attempts`` sent to the dead-letter
destination (an SQS queue or SNS topic) instead of looping forever. The Kinesis source's AWS calls,
apart from its reading."""

from __future__ import annotations

import binascii
import hashlib
import os
import re
from collections.abc import Callable
from typing import Any

from .. import aws, codec
from .._data import dig
from ..record import Record
from ..trace.foreign import bounded_repr
from . import awslogs
from .base import as_text

REQUEUE_KEY = "lambda_kit_requeue"
"""The key of the envelope a requeued record's data is wrapped in."""

GROUP_ID = re.compile(r"[!-~]{1,128}")
"""A FIFO message group id: 1 to 128 printable ASCII characters."""


class Requeues:
    """Where failed records go: back on their stream, then to ``dead_letter`` (a target, or a
    function of nothing giving one; ``LAMBDA_KIT_DEAD_LETTER`` otherwise)."""

    def __init__(
        self,
        max_attempts: int,
        dead_letter: str | Callable[[], str | None] | None,
        fields_of: Callable[[object], dict[str, Any] | None],
    ) -> None:
        self.max_attempts = max_attempts
        self._target = dead_letter
        self.fields_of = fields_of  # a raw record's Kinesis fields

    def record(self, record: Record, error: BaseException, original_data: object) -> str:
        """Put ``record`` back on its stream, or dead-letter it after ``max_attempts``.

        Returns the outcome (``"requeued"`` or ``"dead_lettered"``); raises when AWS refused,
        in which case the record is reported as a batch failure like any other.
        """
        attempt = record.attempt + 1
        if attempt >= self.max_attempts:
            self.dead_letter(record, error, original_data, attempt)
            return "dead_lettered"
        envelope = {
            "trace_id": record.trace_id,
            REQUEUE_KEY: {"attempt": attempt, "error_type": type(error).__name__},
            "data": original_data,
        }
        aws.client("kinesis").put_record(
            StreamName=stream_name(record.raw.get("eventSourceARN")),
            Data=codec.dumps(envelope).encode(),
            PartitionKey=record.trace_id,
        )
        return "requeued"

    def log_event(self, record: awslogs.LogEventRecord, error: BaseException) -> str:
        """A failed log event goes back alone (a subscription message of that event and an attempt
        count), so the log events that succeeded with it are not repeated."""
        alone = {**record.document, "logEvents": [record.log_event]}
        attempt = record.attempt + 1
        if attempt >= self.max_attempts:
            self.dead_letter(
                record,
                error,
                binascii.b2a_base64(awslogs.pack(alone), newline=False).decode("ascii"),
                attempt,
            )
            return "dead_lettered"
        retry = {**alone, REQUEUE_KEY: {"attempt": attempt, "error_type": type(error).__name__}}
        aws.client("kinesis").put_record(
            StreamName=stream_name(record.raw.get("eventSourceARN")),
            Data=awslogs.pack(retry),
            PartitionKey=record.trace_id,
        )
        return "requeued"

    def target(self) -> str | None:
        target = self._target() if callable(self._target) else self._target
        return target or os.environ.get("LAMBDA_KIT_DEAD_LETTER") or None

    def dead_letter(self, record: Record, error: BaseException, data: object, attempts: int) -> None:
        target = self.target()
        if not target:
            raise RuntimeError(
                "on_failure='requeue' reached max_attempts but no dead_letter is configured "
                "(pass dead_letter= or set LAMBDA_KIT_DEAD_LETTER); the record is reported as failed"
            )
        kinesis = self.fields_of(record.raw)
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


def stream_name(arn: object) -> str:
    """The name of the stream an ``eventSourceARN`` names."""
    if not isinstance(arn, str) or "stream/" not in arn:
        raise ValueError(
            f"cannot requeue: eventSourceARN {bounded_repr(arn, 200)} is not a Kinesis stream ARN"
        )
    return arn.split("stream/", 1)[1].split("/", 1)[0]
