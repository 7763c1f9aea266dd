"""SNS: JSON ``Message``, trace id in the ``trace_id`` message attribute, then a tracer's context
(``traceparent`` / ``_datadog`` attributes), then a valid ``Subject``;
a failure is re-raised so Lambda's asynchronous retries and the DLQ take over."""

from __future__ import annotations

from typing import Any

from .. import codec
from ..record import Record
from ..trace import is_valid_id
from .base import Source, attribute_text, malformed, pick_trace, reason


class SnsSource(Source):
    name = "sns"
    label = "an SNS event"
    decorator = "sns_handler"
    event_source = "aws:sns"
    record_marker = "Sns"
    serverless_events = ("sns",)
    arn_service = "sns"
    resource_types = ("AWS::SNS::Topic",)
    delivery = "topic"
    asynchronous = True

    def __init__(self, json: bool = True) -> None:
        self.json = json

    def record(self, raw: Any) -> Record:
        sns = raw.get("Sns") if type(raw) is dict else None
        if type(sns) is not dict:
            return malformed("sns", raw, "record has no Sns object")
        message_id = sns.get("MessageId")
        if not isinstance(message_id, str) or not message_id:
            return malformed("sns", raw, "record has no Sns.MessageId")
        found = None
        attributes = sns.get("MessageAttributes")
        if type(attributes) is not dict:
            attributes = None
        elif type(attributes.get("trace_id")) is dict:
            found = attributes["trace_id"].get("Value")
        fallback = sns["Subject"] if is_valid_id(sns.get("Subject")) else message_id  # a rejected attribute is still logged
        trace_id, rejected, context = pick_trace("sns", found, fallback, attributes, attribute_text)
        message = sns.get("Message")
        payload, error = message, None
        if not isinstance(message, str):
            error = "Sns.Message is missing or not a string"
        elif self.json:
            try:
                payload = codec.loads(message)
            except Exception as exc:
                error = f"Sns.Message is not valid JSON ({reason(exc)})"
        return Record(source="sns", id=message_id, trace_id=trace_id, payload=payload, raw=raw, error=error, attempt=0, rejected_trace_id=rejected, context=context)


SOURCE = SnsSource
