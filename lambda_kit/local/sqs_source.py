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
from typing import Any

from .clients import Clients
from .config import EventSource
from .filters import compile_patterns
from .poller import Journal, Poller, Timing
from .runtime import FunctionRuntime

SYSTEM_ATTRIBUTES = ("ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp", "AWSTraceHeader", "SequenceNumber", "MessageGroupId", "MessageDeduplicationId")


def lambda_record(message: dict[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    """An SQS API message in the shape of a Lambda SQS event record."""
    attributes = {k: v for k, v in (message.get("Attributes") or {}).items() if k in SYSTEM_ATTRIBUTES}
    message_attributes = {}
    for name, value in (message.get("MessageAttributes") or {}).items():
        converted: dict[str, Any] = {"stringListValues": [], "binaryListValues": [], "dataType": value.get("DataType")}
        if "StringValue" in value:
            converted["stringValue"] = value["StringValue"]
        if "BinaryValue" in value:
            raw = value["BinaryValue"]
            converted["binaryValue"] = base64.b64encode(raw).decode() if isinstance(raw, bytes) else raw
        message_attributes[name] = converted
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message.get("Body", ""),
        "attributes": attributes,
        "messageAttributes": message_attributes,
        "md5OfBody": message.get("MD5OfBody"),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


class BatchFailure(Exception):
    pass


def failed_ids(response: Any, batch_ids: set[str], report_failures: bool) -> set[str]:
    """The ids to keep, per Lambda's rules; ``BatchFailure`` when the whole batch failed."""
    if not report_failures or response is None:
        return set()
    if not isinstance(response, dict):
        return set()
    failures = response.get("batchItemFailures")
    if failures is None or failures == []:
        return set()
    if not isinstance(failures, list):
        raise BatchFailure("batchItemFailures is not a list")
    ids = set()
    for item in failures:
        identifier = item.get("itemIdentifier") if isinstance(item, dict) else None
        if not isinstance(identifier, str) or not identifier or identifier not in batch_ids:
            raise BatchFailure(f"batchItemFailures names {identifier!r}, which is not in the batch")
        ids.add(identifier)
    return ids


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
        concurrency = spec.get("maximumConcurrency")
        self.workers = max(1, min(timing.sqs_concurrency, int(concurrency) if concurrency else timing.sqs_concurrency))

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
        long_poll = self.timing.sqs_wait_seconds
        messages = self._receive(self.batch_size, long_poll)
        if not messages:
            return False
        self.mark_busy()
        try:
            deadline = time.monotonic() + self.window
            while len(messages) < self.batch_size and self.window > 0 and not self.stopping:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                wait = min(long_poll, int(remaining))  # the batching window: wait for more, within it
                more = self._receive(self.batch_size - len(messages), wait)
                if more:
                    messages.extend(more)
                elif not wait:
                    self.sleep(min(self.timing.poll_interval, remaining))
            self._process(messages)
        finally:
            self.mark_done()
        return True

    def _process(self, messages: list[dict[str, Any]]) -> None:
        records = [lambda_record(m, self.queue_arn, self.region) for m in messages]
        if self.filter is not None:
            dropped = [r for r in records if not self.filter(r)]
            if dropped:
                self._delete(dropped)
                self.journal.record("sqs.filtered", function=self.function, ids=[r["messageId"] for r in dropped])
            records = [r for r in records if self.filter(r)]
            if not records:
                return
        by_id = {r["messageId"]: r for r in records}
        result = self.runtime.invoke({"Records": records}, source="sqs")
        if result.error is not None:
            keep = set(by_id)
            reason = f"{type(result.error).__name__}: {result.error}"
        else:
            try:
                keep = failed_ids(result.response, set(by_id), self.report_failures)
                reason = "batchItemFailures" if keep else None
            except BatchFailure as exc:
                keep, reason = set(by_id), str(exc)
        done = [r for r in records if r["messageId"] not in keep]
        if done:
            self._delete(done)
        if keep:
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

    def _delete(self, records: list[dict[str, Any]]) -> None:
        sqs = self.clients("sqs")
        for start in range(0, len(records), 10):
            chunk = records[start : start + 10]
            sqs.delete_message_batch(
                QueueUrl=self.queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": r["receiptHandle"]} for i, r in enumerate(chunk)],
            )

    def _retry_later(self, records: list[dict[str, Any]]) -> None:
        delay = self.timing.sqs_retry_delay
        if delay is None:
            return  # as on AWS: the queue's visibility timeout runs out
        sqs = self.clients("sqs")
        for start in range(0, len(records), 10):
            chunk = records[start : start + 10]
            sqs.change_message_visibility_batch(
                QueueUrl=self.queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": r["receiptHandle"], "VisibilityTimeout": int(round(delay))} for i, r in enumerate(chunk)],
            )
