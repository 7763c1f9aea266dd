"""EventBridge: one event per invocation from a rule; the payload is its ``detail``, the trace id
``detail.trace_id`` (then a tracer's context in ``detail.traceparent`` / ``detail._datadog``;
fallback: the event ``id``), ``record.id`` the event ``id``.

EventBridge invokes the function asynchronously, so a failure is logged and re-raised: Lambda
retries the event (twice by default), then hands it to the function's on-failure destination or
dead-letter queue. The rule target's own dead-letter queue only receives events EventBridge could
not hand to Lambda at all (function missing, permission denied)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._data import dig, is_text
from ..record import Record
from .base import Source, loaded, malformed, pick_trace, read_alone, unstamped


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
    def recognizes(cls, event: object) -> bool:
        return type(event) is dict and "detail-type" in event and "source" in event and "detail" in event

    def records(self, event: Mapping[str, Any]) -> list[Record]:
        """One event, one record."""
        return read_alone(self.name, event, self.read)

    def read(self, raw: object) -> list[Record]:
        event_id = raw.get("id")
        if not is_text(event_id):
            return [malformed("eventbridge", raw, "event has no id")]
        detail, error = raw["detail"], None
        if isinstance(detail, str):  # a hand-made event: EventBridge itself delivers an object
            detail, error = loaded(detail, "detail")
            detail = raw["detail"] if error else detail
        detail, stamp = unstamped(detail)  # what propagate() added, out of the producer's detail
        carrier = stamp if stamp is not None else detail if type(detail) is dict else None
        found = dig(detail, "trace_id") if dig(detail, "trace_id") is not None else dig(stamp, "trace_id")
        trace_id, rejected, context = pick_trace("eventbridge", found, event_id, carrier)
        return [
            Record(
                source="eventbridge",
                id=event_id,
                trace_id=trace_id,
                payload=detail,
                raw=raw,
                error=error,
                rejected_trace_id=rejected,
                context=context,
            )
        ]


SOURCE = EventBridgeSource
