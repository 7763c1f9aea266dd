"""SQS: JSON bodies (SNS envelopes unwrapped), trace id in the ``trace_id`` message attribute (a
tracer's context in the ``traceparent`` / ``_datadog`` attributes, the SNS envelope's, or the
``AWSTraceHeader`` system attribute),
failures reported as ``batchItemFailures`` so only failed messages come back. On a FIFO queue a
failure also holds back the later messages of its message group (reported as failures, unprocessed),
so the group is retried in order; other groups go on. EventBridge Pipes batches (a top-level list of
the same records) are taken too, and reported by the same ``messageId``."""

from __future__ import annotations

from typing import Any

from .. import codec
from ..record import Record
from ..trace import is_valid_id
from ..trace.context import has_context
from .base import Source, attribute_text, malformed, pick_trace, reason


def _is_sns_envelope(doc: Any) -> bool:
    return (
        type(doc) is dict
        and doc.get("Type") == "Notification"
        and "TopicArn" in doc
        and "Message" in doc
    )


def _envelope_trace_id(doc: dict[str, Any]) -> Any:
    attributes = doc.get("MessageAttributes")
    if isinstance(attributes, dict):
        attribute = attributes.get("trace_id")
        if isinstance(attribute, dict):
            return attribute.get("Value")
    return None


class SqsSource(Source):
    name = "sqs"
    label = "an SQS event"
    decorator = "sqs_handler"
    event_source = "aws:sqs"
    record_marker = "messageId"
    serverless_events = ("sqs",)
    arn_service = "sqs"
    resource_types = ("AWS::SQS::Queue",)
    delivery = "queue"
    reports_batch_failures = True
    pipes = "SQS messages"

    def __init__(self, json: bool = True) -> None:
        self.json = json

    def record(self, raw: Any) -> Record:
        if type(raw) is not dict:
            return malformed("sqs", raw, "record is not a JSON object")
        message_id = raw.get("messageId")
        if not isinstance(message_id, str) or not message_id:
            return malformed("sqs", raw, "record has no messageId")
        found = None
        attributes = raw.get("messageAttributes")
        if type(attributes) is dict:
            attribute = attributes.get("trace_id")
            if type(attribute) is dict:
                found = attribute.get("stringValue")
        attempt = 0
        group = xray = None
        system = raw.get("attributes")
        if type(system) is dict:
            count = system.get("ApproximateReceiveCount")
            if count != "1" and isinstance(count, str) and count.isdigit():  # "1": first try, 0
                attempt = max(int(count) - 1, 0)
            if "MessageGroupId" in system:  # FIFO queue: keep each group in order
                group = str(system["MessageGroupId"])
            xray = system.get("AWSTraceHeader")
        body = raw.get("body")
        payload: Any = body
        error = None
        if not isinstance(body, str):
            error = "message body is missing or not a string"
        elif self.json or '"TopicArn"' in body:
            try:
                doc = codec.loads(body)
            except Exception as exc:
                doc, error = None, f"message body is not valid JSON ({reason(exc)})" if self.json else None
            if type(doc) is dict and "Type" in doc and _is_sns_envelope(doc):  # no call for plain bodies
                if found is None:
                    found = _envelope_trace_id(doc)
                if not has_context(attributes) and type(doc.get("MessageAttributes")) is dict:
                    attributes = doc["MessageAttributes"]  # the publisher's context, in the envelope
                payload = doc["Message"]
                if self.json:
                    try:
                        payload = codec.loads(payload)
                    except Exception as exc:
                        payload, error = None, f"SNS message in the body is not valid JSON ({reason(exc)})"
            elif self.json and error is None:
                payload = doc
        carrier = attributes if type(attributes) is dict else None
        if xray is None and type(found) is str and is_valid_id(found) and not has_context(carrier):  # the common case
            return Record(source="sqs", id=message_id, trace_id=found, payload=body if error else payload, raw=raw, error=error, attempt=attempt, rejected_trace_id=None, group=group)
        trace_id, rejected, context = pick_trace("sqs", found, message_id, carrier, attribute_text, xray)
        return Record(source="sqs", id=message_id, trace_id=trace_id, payload=body if error else payload, raw=raw, error=error, attempt=attempt, rejected_trace_id=rejected, group=group, report_id=None, context=context)


SOURCE = SqsSource

