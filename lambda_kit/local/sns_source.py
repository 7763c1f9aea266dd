"""SNS subscriptions, invoked asynchronously with Lambda's retries and failure destinations.

moto's SNS cannot call an in-process function, so each SNS event source gets an internal SQS
queue subscribed to its topic (envelope delivery, with the subscription's ``filterPolicy``).
Each notification is turned into an SNS Lambda event (one record) and handed to the async
invoker (``async_invoker.py``), as SNS hands it to Lambda's async queue; the internal message is
then deleted.
"""

from __future__ import annotations

import json
from typing import Any

from .._data import mapping
from .async_invoker import AsyncInvoker
from .clients import Clients
from .config import EventSource
from .poller import Journal, Timing
from .relay import QueueRelay
from .runtime import FunctionRuntime


def lambda_sns_event(envelope: dict[str, Any], subscription_arn: str) -> dict[str, Any]:
    """An SNS→SQS notification envelope as the SNS event Lambda delivers."""
    attributes = {}
    for name, value in mapping(envelope.get("MessageAttributes")).items():
        attributes[name] = {"Type": value.get("Type", "String"), "Value": value.get("Value")}
    return {
        "Records": [
            {
                "EventVersion": "1.0",
                "EventSubscriptionArn": subscription_arn,
                "EventSource": "aws:sns",
                "Sns": {
                    "SignatureVersion": envelope.get("SignatureVersion", "1"),
                    "Timestamp": envelope.get("Timestamp"),
                    "Signature": envelope.get("Signature", "EXAMPLE"),
                    "SigningCertUrl": envelope.get("SigningCertURL", ""),
                    "MessageId": envelope.get("MessageId"),
                    "Message": envelope.get("Message"),
                    "MessageAttributes": attributes,
                    "Type": envelope.get("Type", "Notification"),
                    "UnsubscribeUrl": envelope.get("UnsubscribeURL", ""),
                    "TopicArn": envelope.get("TopicArn"),
                    "Subject": envelope.get("Subject"),
                },
            }
        ]
    }


class SnsEventSource(QueueRelay):
    """The internal queue of one SNS subscription, relayed to the async invoker."""

    kind = "sns"

    def __init__(
        self,
        runtime: FunctionRuntime,
        event: EventSource,
        spec: dict[str, Any],
        topic_arn: str,
        clients: Clients,
        invoker: AsyncInvoker,
        timing: Timing,
        journal: Journal,
    ) -> None:
        super().__init__(runtime, event, spec, clients, invoker, timing, journal)
        self.topic_arn = topic_arn
        self.subscription_arn = ""

    def target(self) -> str:
        return self.topic_arn

    def connect(self, queue_arn: str) -> None:
        attributes: dict[str, str] = {}
        if self.spec.get("filterPolicy"):
            attributes["FilterPolicy"] = json.dumps(self.spec["filterPolicy"])
            if self.spec.get("filterPolicyScope"):
                attributes["FilterPolicyScope"] = str(self.spec["filterPolicyScope"])
        self.subscription_arn = self.clients("sns").subscribe(
            TopicArn=self.topic_arn,
            Protocol="sqs",
            Endpoint=queue_arn,
            Attributes=attributes,
            ReturnSubscriptionArn=True,
        )["SubscriptionArn"]

    def events_of(self, body: str, message_id: str) -> list[tuple[Any, str | None]]:
        try:
            envelope = json.loads(body)
        except ValueError:
            envelope = {"Message": body, "TopicArn": self.topic_arn, "MessageId": message_id}
        return [(lambda_sns_event(envelope, self.subscription_arn), envelope.get("MessageId"))]
