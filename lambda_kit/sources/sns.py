"""SNS: JSON ``Message``, trace id in the ``trace_id`` message attribute (or a valid ``Subject``);
a failure is re-raised so Lambda's asynchronous retries and the DLQ take over."""

from __future__ import annotations

from typing import Any

from .. import codec
from ..record import Record
from ..trace import is_valid_id
from .base import Source, malformed, pick_trace_id, reason


class SnsSource(Source):
    name = "sns"
    label = "an SNS event"
    decorator = "sns_handler"
    event_source = "aws:sns"
    record_marker = "Sns"
    serverless_events = ("sns",)
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
        if type(attributes) is dict and type(attributes.get("trace_id")) is dict:
            found = attributes["trace_id"].get("Value")
        trace_id, rejected = pick_trace_id(found, message_id)
        if (found is None or rejected is not None) and is_valid_id(sns.get("Subject")):
            trace_id = sns["Subject"]  # the next place in order; a rejected attribute is still logged
        message = sns.get("Message")
        payload, error = message, None
        if not isinstance(message, str):
            error = "Sns.Message is missing or not a string"
        elif self.json:
            try:
                payload = codec.loads(message)
            except Exception as exc:
                error = f"Sns.Message is not valid JSON ({reason(exc)})"
        return Record("sns", message_id, trace_id, payload, raw, error, 0, rejected)


SOURCE = SnsSource
