"""SQS: JSON bodies (SNS envelopes unwrapped), trace id in the ``trace_id`` message attribute (a
tracer's context in the ``traceparent`` / ``_datadog`` attributes, the SNS envelope's, or the
``AWSTraceHeader`` system attribute),
failures reported as ``batchItemFailures`` so only failed messages come back. On a FIFO queue a
failure also holds back the later messages of its message group (reported as failures, unprocessed),
so the group is retried in order; other groups go on. EventBridge Pipes batches (a top-level list of
the same records) are taken too, and reported by the same ``messageId``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._data import dig, is_text, mapping
from ..record import Record
from ..trace.context import has_context
from ._envelopes import attribute_text, is_sns_envelope, receive_attempt
from .base import Source, as_text, loaded, malformed, pick_trace


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

    def read(self, raw: object) -> list[Record]:
        if type(raw) is not dict:
            return [malformed("sqs", raw, "record is not a JSON object")]
        message_id = raw.get("messageId")
        if not is_text(message_id):
            return [malformed("sqs", raw, "record has no messageId")]
        system = mapping(raw.get("attributes"))
        payload, error, envelope = self.message(raw.get("body"))
        found, carrier = trace_places(mapping(raw.get("messageAttributes")), envelope)
        trace_id, rejected, context = pick_trace(
            "sqs", found, message_id, carrier, attribute_text, system.get("AWSTraceHeader")
        )
        group = system.get("MessageGroupId")
        return [
            Record(
                source="sqs",
                id=message_id,
                trace_id=trace_id,
                payload=payload,
                raw=raw,
                error=error,
                attempt=receive_attempt(system.get("ApproximateReceiveCount")),
                rejected_trace_id=rejected,
                group=None if group is None else as_text(group),  # a FIFO queue's: its messages run in order
                context=context,
            )
        ]

    def message(self, body: object) -> tuple[Any, str | None, dict[str, Any] | None]:
        """(payload, error, the SNS envelope when the body is one) of a message body: its JSON,
        or with ``json=False`` the text itself (an SNS envelope's ``Message`` when it is one). A
        message that fails keeps its body as the payload, for its ERROR line."""
        if not isinstance(body, str):
            return body, "message body is missing or not a string", None
        if not self.json and '"TopicArn"' not in body:  # plain text: no envelope to look for
            return body, None, None
        doc, error = loaded(body, "message body")
        if is_sns_envelope(doc):
            return (*self.sns_message(doc["Message"], body), doc)
        return (doc if self.json and error is None else body), error if self.json else None, None

    def sns_message(self, message: object, body: str) -> tuple[Any, str | None]:
        """(payload, error) of the ``Message`` of an SNS envelope in the body."""
        if not self.json:
            return message, None
        payload, error = loaded(message, "SNS message in the body")
        return (body if error else payload), error


def trace_places(
    attributes: Mapping[str, Any], envelope: dict[str, Any] | None
) -> tuple[Any, Mapping[str, Any]]:
    """(lambda_kit's trace id as found, the carrier of a tracer's context): the message's own
    attributes, then (for a trace id or a context they lack) those the SNS publisher set, in the
    envelope the body carries."""
    found = dig(attributes.get("trace_id"), "stringValue")
    if envelope is None:
        return found, attributes
    published = mapping(envelope.get("MessageAttributes"))
    if found is None:
        found = dig(published.get("trace_id"), "Value")
    return found, attributes if has_context(attributes) else published


SOURCE = SqsSource
