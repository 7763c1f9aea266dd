"""Relays: an AWS service delivers to an internal SQS queue, and each message becomes an
asynchronous invocation of the function.

moto cannot call an in-process function, so SNS subscriptions, EventBridge rules and S3 bucket
notifications each deliver to a queue of their own on the endpoint (the service's own filtering:
SNS filter policies, EventBridge patterns, S3 event types and key filters). The relay polls that
queue, turns each message into the event the service would hand to Lambda, gives it to the
async invoker (Lambda's retries, then the on-failure destination or DLQ) and deletes the message.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .async_invoker import AsyncInvoker
from .clients import Clients
from .config import EventSource
from .poller import Journal, Poller, Timing
from .runtime import FunctionRuntime


class QueueRelay(Poller):
    """One event source of one function, fed through an internal queue. Subclasses say what the
    queue listens to (``target``), connect it (``connect``) and read its messages (``events_of``)."""

    kind = "relay"

    def __init__(
        self,
        runtime: FunctionRuntime,
        event: EventSource,
        spec: dict[str, Any],
        clients: Clients,
        invoker: AsyncInvoker,
        timing: Timing,
        journal: Journal,
    ) -> None:
        super().__init__(timing, journal)
        self.runtime = runtime
        self.event = event
        self.spec = spec
        self.function = runtime.function.key
        self.name = f"{self.kind}:{self.function}"
        self.clients = clients
        self.invoker = invoker
        self.queue_url = ""

    def target(self) -> str:
        """What the queue listens to (a topic ARN, a rule, a bucket): part of the queue's name."""
        raise NotImplementedError

    def connect(self, queue_arn: str) -> None:
        """Make the service deliver to the queue."""
        raise NotImplementedError

    def events_of(self, body: str, message_id: str) -> list[tuple[Any, str | None]]:
        """The Lambda events in one message, each with the id the journal notes."""
        raise NotImplementedError

    def setup(self) -> None:
        sqs = self.clients("sqs")
        digest = hashlib.sha1(f"{self.runtime.function.name}|{self.target()}".encode()).hexdigest()[:10]
        name = f"lambda-kit-{self.kind}-{self.function}"[:60] + f"-{digest}"
        self.queue_url = sqs.create_queue(QueueName=name)["QueueUrl"]
        self.connect(
            sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])["Attributes"][
                "QueueArn"
            ]
        )

    def poll_once(self) -> bool:
        sqs = self.clients("sqs")
        # Long polling, as the SQS sources do: an idle relay asked moto 10 times a second.
        messages = sqs.receive_message(
            QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=self.timing.sqs_wait_seconds
        ).get("Messages", [])
        if not messages:
            return False
        self.mark_busy()
        try:
            for message in messages:
                for event, event_id in self.events_of(message["Body"], message["MessageId"]):
                    self.invoker.submit(self.runtime, event, source=self.kind)
                    self.journal.record(f"{self.kind}.accepted", function=self.function, message_id=event_id)
            sqs.delete_message_batch(
                QueueUrl=self.queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
            )
        finally:
            self.mark_done()
        return True
