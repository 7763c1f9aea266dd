"""EventBridge: one event per invocation from a rule; the payload is its ``detail``, the trace id
``detail.trace_id`` (then a tracer's context in ``detail.traceparent`` / ``detail._datadog``;
fallback: the event ``id``), ``record.id`` the event ``id``.

EventBridge invokes the function asynchronously, so a failure is logged and re-raised: Lambda
retries the event (twice by default), then hands it to the function's on-failure destination or
dead-letter queue. The rule target's own dead-letter queue only receives events EventBridge could
not hand to Lambda at all (function missing, permission denied)."""

from __future__ import annotations

from typing import Any

from .. import codec
from ..record import Record
from .base import Source, malformed, pick_trace, reason


class EventBridgeSource(Source):
    name = "eventbridge"
    label = "an EventBridge event"
    decorator = "eventbridge_handler"
    serverless_events = ("eventBridge",)
    arn_service = "events"
    resource_types = ("AWS::Events::EventBus",)
    delivery = "rule"
    asynchronous = True

    @classmethod
    def recognizes(cls, event: Any) -> bool:
        return type(event) is dict and "detail-type" in event and "source" in event and "detail" in event

    def records(self, event: Any) -> list[Record]:
        return [self.record(event)]

    def record(self, raw: Any) -> Record:
        event_id = raw.get("id")
        if not isinstance(event_id, str) or not event_id:
            return malformed("eventbridge", raw, "event has no id")
        detail = raw["detail"]
        error = None
        if isinstance(detail, str):  # a hand-made event: EventBridge itself delivers an object
            try:
                detail = codec.loads(detail)
            except Exception as exc:
                error = f"detail is not valid JSON ({reason(exc)})"
        carrier = detail if type(detail) is dict else None
        found = carrier.get("trace_id") if carrier is not None else None
        trace_id, rejected, context = pick_trace("eventbridge", found, event_id, carrier)
        return Record(source="eventbridge", id=event_id, trace_id=trace_id, payload=detail, raw=raw, error=error, attempt=0, rejected_trace_id=rejected, context=context)


SOURCE = EventBridgeSource
