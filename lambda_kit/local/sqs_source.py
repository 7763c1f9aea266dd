"""SQS event source with Lambda's semantics.

- Receives up to ``batchSize`` messages, waiting up to ``maximumBatchingWindow`` seconds from the
  first message for the batch to fill (0: invoke with what one receive returned).
- Messages stay invisible for the queue's VisibilityTimeout while the function runs.
- Success: every message is deleted. A raised exception (or a timeout) fails the whole batch:
  nothing is deleted. With ``functionResponseType: ReportBatchItemFailures`` the messages named
  in ``batchItemFailures`` are kept and the rest deleted; a malformed response (an id that is not
  in the batch, a missing ``itemIdentifier``) fails the whole batch, as on AWS. Without it, any
  return value is success.
- Kept messages come back after the visibility timeout (shortened locally by
  ``Timing.sqs_retry_delay``); after ``maxReceiveCount`` receives the queue's redrive policy moves
  them to the DLQ — moto's SQS (and AWS) does that on receive.
- ``filterPatterns`` drop non-matching messages before the function sees them (they are deleted).
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from typing import Any

from .._data import mapping
from .clients import Clients
from .config import EventSource
from .filters import compile_patterns
from .poller import BatchFailure, Journal, Poller, Timing, reported_failures
from .runtime import FunctionRuntime, Result

SYSTEM_ATTRIBUTES = (
    "ApproximateReceiveCount",
    "SentTimestamp",
    "SenderId",
    "ApproximateFirstReceiveTimestamp",
    "AWSTraceHeader",
    "SequenceNumber",
    "MessageGroupId",
    "MessageDeduplicationId",
)


def lambda_record(message: dict[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    """An SQS API message in the shape of a Lambda SQS event record."""
    attributes = {k: v for k, v in mapping(message.get("Attributes")).items() if k in SYSTEM_ATTRIBUTES}
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message.get("Body", ""),
        "attributes": attributes,
        "messageAttributes": {
            name: _attribute(value) for name, value in mapping(message.get("MessageAttributes")).items()
        },
        "md5OfBody": message.get("MD5OfBody"),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


def _attribute(value: dict[str, Any]) -> dict[str, Any]:
    """A message attribute as Lambda's SQS event spells it (binary values in base64)."""
    converted: dict[str, Any] = {
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": value.get("DataType"),
    }
    if "StringValue" in value:
        converted["stringValue"] = value["StringValue"]
    if "BinaryValue" in value:
        raw = value["BinaryValue"]
        converted["binaryValue"] = base64.b64encode(raw).decode() if isinstance(raw, bytes) else raw
    return converted


def _outcome(result: Result, batch_ids: set[str], report_failures: bool) -> tuple[set[str], str | None]:
    """(the ids to keep, why) for one invocation, per Lambda's rules."""
    if result.error is not None:
        return set(batch_ids), result.error_text
    try:
        keep = set(reported_failures(result.response, batch_ids, report_failures))
    except BatchFailure as exc:
        return set(batch_ids), str(exc)
    return keep, "batchItemFailures" if keep else None


def _partition(
    records: list[dict[str, Any]], keep: Callable[[dict[str, Any]], bool]
) -> tuple[list[Any], list[Any]]:
    """(the records ``keep`` says yes to, the others), in order."""
    kept: list[dict[str, Any]] = []
    dropped: list[dict[str, Any]] = []
    for record in records:
        (kept if keep(record) else dropped).append(record)
    return kept, dropped


def _entries(records: list[dict[str, Any]], **fields: Any) -> list[list[dict[str, Any]]]:
    """Batch request entries for ``records``, ten to a request (SQS's limit)."""
    entries = [
        {"Id": str(i % 10), "ReceiptHandle": r["receiptHandle"], **fields} for i, r in enumerate(records)
    ]
    return [entries[start : start + 10] for start in range(0, len(entries), 10)]


class SqsEventSource(Poller):
    def __init__(
        self,
        runtime: FunctionRuntime,
        event: EventSource,
        spec: dict[str, Any],
        queue_url: str,
        queue_arn: str,
        clients: Clients,
        timing: Timing,
        journal: Journal,
        region: str,
    ) -> None:
        super().__init__(timing, journal)
        self.runtime = runtime
        self.function = runtime.function.key
        self.name = f"sqs:{self.function}"
        self.queue_url = queue_url
        self.queue_arn = queue_arn
        self.clients = clients
        self.region = region
        self.batch_size = int(spec.get("batchSize", 10))
        self.window = float(spec.get("maximumBatchingWindow", 0) or 0)
        self.report_failures = spec.get("functionResponseType") == "ReportBatchItemFailures"
        self.enabled = spec.get("enabled", True) is not False
        self.filter = compile_patterns(spec.get("filterPatterns"), "sqs")
        concurrency = int(spec.get("maximumConcurrency") or timing.sqs_concurrency)
        self.workers = max(1, min(timing.sqs_concurrency, concurrency))

    def start(self, workers: int | None = None) -> None:
        if self.enabled:
            super().start(workers or self.workers)

    # --- one batch ----------------------------------------------------------------------------

    def _receive(self, count: int, wait: int) -> list[dict[str, Any]]:
        response = self.clients("sqs").receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=max(1, min(10, count)),
            WaitTimeSeconds=wait,
            AttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        return response.get("Messages", [])

    def poll_once(self) -> bool:
        messages = self._receive(self.batch_size, self.timing.sqs_wait_seconds)
        if not messages:
            return False
        self.mark_busy()
        try:
            self._fill(messages)
            self._process([lambda_record(m, self.queue_arn, self.region) for m in messages])
        finally:
            self.mark_done()
        return True

    def _fill(self, messages: list[dict[str, Any]]) -> None:
        """Receive more until the batch is full or the batching window has passed."""
        deadline = time.monotonic() + self.window
        while len(messages) < self.batch_size and not self.stopping:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            wait = min(self.timing.sqs_wait_seconds, int(remaining))  # long polls end within the window
            more = self._receive(self.batch_size - len(messages), wait)
            messages.extend(more)
            if not (more or wait):
                self.sleep(min(self.timing.poll_interval, remaining))

    def _process(self, records: list[dict[str, Any]]) -> None:
        records = self._filtered(records)
        if not records:
            return
        by_id = {r["messageId"]: r for r in records}
        result = self.runtime.invoke({"Records": records}, source="sqs")
        keep, reason = _outcome(result, set(by_id), self.report_failures)
        done = [r for r in records if r["messageId"] not in keep]
        self._delete(done)
        self._retry_later([by_id[i] for i in keep])
        self.journal.record(
            "sqs.batch",
            function=self.function,
            queue=self.queue_arn,
            size=len(records),
            deleted=[r["messageId"] for r in done],
            failed=sorted(keep),
            reason=reason,
            request_id=result.request_id,
        )

    def _filtered(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The records the filter patterns let through; the others are deleted, as Lambda does."""
        if self.filter is None:
            return records
        kept, dropped = _partition(records, self.filter)
        if dropped:
            self._delete(dropped)
            self.journal.record("sqs.filtered", function=self.function, ids=[r["messageId"] for r in dropped])
        return kept

    def _delete(self, records: list[dict[str, Any]]) -> None:
        for entries in _entries(records):
            self.clients("sqs").delete_message_batch(QueueUrl=self.queue_url, Entries=entries)

    def _retry_later(self, records: list[dict[str, Any]]) -> None:
        delay = self.timing.sqs_retry_delay
        if delay is None:
            return  # as on AWS: the queue's visibility timeout runs out
        for entries in _entries(records, VisibilityTimeout=int(round(delay))):
            self.clients("sqs").change_message_visibility_batch(QueueUrl=self.queue_url, Entries=entries)
