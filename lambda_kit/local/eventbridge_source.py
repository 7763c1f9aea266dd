"""EventBridge rules, invoked asynchronously with Lambda's retries and failure destinations.

Each ``eventBridge`` event of ``serverless.yml`` becomes a rule on its bus (``eventBus``: a name,
created when missing as the framework does, or an ARN; the default bus otherwise) with the event's
``pattern``, whose target is an internal queue: moto's EventBridge matches ``PutEvents`` entries
against the pattern and applies an ``inputTransformer``, so the matching is EventBridge's own.
Each delivered event is handed to the async invoker (retries, then ``destinations.onFailure`` or
the ``onError`` DLQ), as EventBridge hands it to Lambda. ``input`` (a constant) replaces the event
as on AWS. Not emulated: ``schedule`` rules, ``inputPath``, the rule's own retry policy and
dead-letter queue (locally, delivery to the function never fails).
"""

from __future__ import annotations

import json
from typing import Any

from ..serverless_config import ConfigError
from .relay import QueueRelay

DEFAULT_BUS = "default"


class EventBridgeEventSource(QueueRelay):
    """The internal queue of one rule, relayed to the async invoker."""

    kind = "eventbridge"

    def target(self) -> str:
        return f"{self.bus()}|{self.event.index}"

    def bus(self) -> str:
        bus = self.spec.get("eventBus") or DEFAULT_BUS
        if not isinstance(bus, str):
            raise ConfigError(
                f"functions.{self.function}.events[{self.event.index}].eventBridge.eventBus"
                " must be a bus name or ARN"
            )
        return bus.rsplit("/", 1)[1] if bus.startswith("arn:") else bus

    def connect(self, queue_arn: str) -> None:
        pattern = self.spec.get("pattern")
        if not isinstance(pattern, dict):
            where = f"functions.{self.function}.events[{self.event.index}].eventBridge"
            raise ConfigError(f"{where} needs a pattern (schedule rules are not run locally)")
        events = self.clients("events")
        bus = self.bus()
        if bus != DEFAULT_BUS:
            try:
                events.create_event_bus(Name=bus)
            except events.exceptions.ResourceAlreadyExistsException:
                pass
        rule = f"lambda-kit-{self.function}-{self.event.index}"[:64]
        state = "DISABLED" if self.spec.get("enabled") is False else "ENABLED"
        events.put_rule(Name=rule, EventBusName=bus, EventPattern=json.dumps(pattern), State=state)
        events.put_targets(Rule=rule, EventBusName=bus, Targets=[self._target(queue_arn)])

    def _target(self, queue_arn: str) -> dict[str, Any]:
        """The rule's target: the internal queue, through the event's ``inputTransformer``."""
        target: dict[str, Any] = {"Id": "lambda-kit", "Arn": queue_arn}
        transformer = self.spec.get("inputTransformer")
        if isinstance(transformer, dict):
            target["InputTransformer"] = {
                "InputTemplate": transformer.get("inputTemplate"),
                "InputPathsMap": transformer.get("inputPathsMap") or {},
            }
        return target

    def events_of(self, body: str, message_id: str) -> list[tuple[Any, str | None]]:
        try:
            event = json.loads(body)
        except ValueError:  # an inputTransformer's template that is not JSON: passed as text
            return [(body, message_id)]
        if not isinstance(event, dict):
            return [(self.spec.get("input", event), message_id)]
        event.pop("ingestion-time", None)  # moto's own field; EventBridge does not send it
        return [(self.spec.get("input", event), event.get("id"))]
