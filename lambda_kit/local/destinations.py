"""Where failed work goes: on-failure destinations and dead-letter queues, in Lambda's shapes.

- Stream event sources (Kinesis, DynamoDB): an invocation record with ``requestContext``,
  ``responseContext``, ``version``, ``timestamp`` and ``KinesisBatchInfo`` / ``DDBStreamBatchInfo``
  (shard, first and last sequence numbers, arrival times, batch size, stream ARN) — the records
  themselves are not included, as on AWS.
- Asynchronous invocations (SNS): the on-failure destination gets the invocation record with
  ``requestPayload`` (the event) and ``responsePayload`` (the error); a function DLQ (``onError``)
  gets the event itself with ``RequestID`` / ``ErrorCode`` / ``ErrorMessage`` message attributes.
"""

from __future__ import annotations

import json
import time
import traceback
import uuid
from typing import Any

from .._data import mapping
from .clients import Clients


def iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch)) + f".{int(epoch * 1000) % 1000:03d}Z"


def target_arn(value: Any) -> str | None:
    """``arn`` or ``{type, arn}`` (serverless.yml's two forms) -> the ARN."""
    if isinstance(value, dict):
        value = value.get("arn")
    return value if isinstance(value, str) and value else None


class Destinations:
    def __init__(self, clients: Clients) -> None:
        self.clients = clients
        self._queue_urls: dict[str, str] = {}

    def queue_url(self, arn: str) -> str:
        """The URL of the queue ``arn`` names (a URL is its own)."""
        if arn.startswith("http"):
            return arn
        if arn not in self._queue_urls:
            parts = arn.split(":")
            sqs = self.clients("sqs")
            self._queue_urls[arn] = sqs.get_queue_url(QueueName=parts[5], QueueOwnerAWSAccountId=parts[4])[
                "QueueUrl"
            ]
        return self._queue_urls[arn]

    def send(self, arn: str, body: Any, attributes: dict[str, str] | None = None) -> None:
        """``body`` (JSON unless text) with string ``attributes`` to the SNS topic or SQS queue ``arn``."""
        text = body if isinstance(body, str) else json.dumps(body, default=str)
        typed = {
            name: {"DataType": "String", "StringValue": value} for name, value in mapping(attributes).items()
        }
        if arn.startswith("arn:aws:sns:"):
            self.clients("sns").publish(TopicArn=arn, Message=text, MessageAttributes=typed)
        elif arn.startswith(("arn:aws:sqs:", "http")):
            self.clients("sqs").send_message(
                QueueUrl=self.queue_url(arn), MessageBody=text, MessageAttributes=typed
            )
        else:
            raise ValueError(f"destination {arn!r} is neither an SQS queue nor an SNS topic")


def function_error(error: BaseException | None) -> dict[str, Any]:
    """The error as Lambda puts it in a record's ``responsePayload``: as the runtime reported it for
    the function's own (``FunctionError``), else (a hook's exception) from the exception."""
    if error is None:
        return {}
    payload = getattr(error, "payload", None)
    if isinstance(payload, dict):
        return payload
    return {
        "errorMessage": str(error),
        "errorType": type(error).__name__,
        "stackTrace": [line.strip() for line in traceback.format_tb(error.__traceback__)][-10:],
    }


def stream_failure_record(
    *,
    source: str,
    function_arn: str,
    condition: str,
    invoke_count: int,
    shard_id: str,
    stream_arn: str,
    records: list[dict[str, Any]],
    sequence_of: Any,
    arrival_of: Any,
    error: BaseException | None,
) -> dict[str, Any]:
    info_key = "KinesisBatchInfo" if source == "kinesis" else "DDBStreamBatchInfo"
    response: dict[str, Any] = {"statusCode": 200, "executedVersion": "$LATEST"}
    if error is not None:
        response["functionError"] = "Unhandled"
    return {
        "requestContext": {
            "requestId": str(uuid.uuid4()),
            "functionArn": function_arn,
            "condition": condition,
            "approximateInvokeCount": invoke_count,
        },
        "responseContext": response,
        "version": "1.0",
        "timestamp": iso(time.time()),
        info_key: {
            "shardId": shard_id,
            "startSequenceNumber": sequence_of(records[0]),
            "endSequenceNumber": sequence_of(records[-1]),
            "approximateArrivalOfFirstRecord": iso(arrival_of(records[0])),
            "approximateArrivalOfLastRecord": iso(arrival_of(records[-1])),
            "batchSize": len(records),
            "streamArn": stream_arn,
        },
    }


def async_invocation_record(
    *,
    function_arn: str,
    condition: str,
    invoke_count: int,
    request_id: str,
    event: Any,
    response: Any,
    error: BaseException | None,
) -> dict[str, Any]:
    context: dict[str, Any] = {"statusCode": 200, "executedVersion": "$LATEST"}
    if error is not None:
        context["functionError"] = "Unhandled"
    return {
        "version": "1.0",
        "timestamp": iso(time.time()),
        "requestContext": {
            "requestId": request_id,
            "functionArn": f"{function_arn}:$LATEST",
            "condition": condition,
            "approximateInvokeCount": invoke_count,
        },
        "requestPayload": event,
        "responseContext": context,
        "responsePayload": function_error(error) if error is not None else response,
    }
