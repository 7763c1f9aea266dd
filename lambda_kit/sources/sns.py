"""SNS: JSON ``Message``, trace id in the ``trace_id`` message attribute, then a tracer's context
(``traceparent`` / ``_datadog`` attributes), then a valid ``Subject``;
a failure is re-raised so Lambda's asynchronous retries and the DLQ take over."""

from __future__ import annotations

from typing import Any

from .._data import dig, is_text, mapping
from ..record import Record
from ..trace import is_valid_id
from ._envelopes import attribute_text
from .base import Source, loaded, malformed, pick_trace


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

    def read(self, raw: object) -> list[Record]:
        sns = dig(raw, "Sns")
        if type(sns) is not dict:
            return [malformed("sns", raw, "record has no Sns object")]
        message_id = sns.get("MessageId")
        if not is_text(message_id):
            return [malformed("sns", raw, "record has no Sns.MessageId")]
        attributes = mapping(sns.get("MessageAttributes"))
        subject = sns.get("Subject")
        fallback = subject if is_valid_id(subject) else message_id  # a rejected attribute is still logged
        trace_id, rejected, context = pick_trace(
            "sns", dig(attributes.get("trace_id"), "Value"), fallback, attributes, attribute_text
        )
        payload, error = self.message(sns.get("Message"))
        return [
            Record(
                source="sns",
                id=message_id,
                trace_id=trace_id,
                payload=payload,
                raw=raw,
                error=error,
                rejected_trace_id=rejected,
                context=context,
            )
        ]

    def message(self, message: object) -> tuple[Any, str | None]:
        """(payload, error) of ``Sns.Message``: its JSON, or with ``json=False`` the text; a message
        that fails keeps its text as the payload, for its ERROR line."""
        if not isinstance(message, str):
            return message, "Sns.Message is missing or not a string"
        if not self.json:
            return message, None
        payload, error = loaded(message, "Sns.Message")
        return (message if error else payload), error


SOURCE = SnsSource
