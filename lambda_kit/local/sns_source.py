"""SNS subscriptions, invoked asynchronously with Lambda's retries and failure destinations.

moto's SNS cannot call an in-process function, so each SNS event source gets an internal SQS
queue subscribed to its topic (envelope delivery, with the subscription's ``filterPolicy``).
Each notification is turned into an SNS Lambda event (one record) and handed to the async
invoker, as SNS hands it to Lambda's async queue; the internal message is then deleted.

The async invoker runs the function; when it raises it retries ``maximumRetryAttempts`` times
(function setting, default 2; pauses from ``Timing.async_retry_delays``), and events older than
``maximumEventAge`` are not retried. Then the event goes to the function's
``destinations.onFailure`` (an invocation record) or, failing that, its DLQ (``onError``: the
event itself with ``RequestID`` / ``ErrorCode`` / ``ErrorMessage`` attributes).
``destinations.onSuccess`` receives success records.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .clients import Clients
from .config import EventSource
from .destinations import Destinations, async_invocation_record, target_arn
from .poller import Journal, Poller, Timing
from .runtime import FunctionRuntime, Result


def lambda_sns_event(envelope: dict[str, Any], subscription_arn: str) -> dict[str, Any]:
    """An SNS→SQS notification envelope as the SNS event Lambda delivers."""
    attributes = {}
    for name, value in (envelope.get("MessageAttributes") or {}).items():
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


class AsyncInvoker:
    """Lambda's asynchronous invocation: a queue of events, retries, then destinations."""

    def __init__(self, destinations: Destinations, timing: Timing, journal: Journal) -> None:
        self.destinations = destinations
        self.timing = timing
        self.journal = journal
        self._pool = ThreadPoolExecutor(max_workers=timing.async_concurrency, thread_name_prefix="lambda-kit async")
        self._pending = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.last_activity = time.monotonic()

    @property
    def pending(self) -> int:
        return self._pending

    def idle(self, quiet: float) -> bool:
        return self._pending == 0 and time.monotonic() - self.last_activity >= quiet

    def submit(self, runtime: FunctionRuntime, event: Any, source: str = "sns") -> None:
        with self._lock:
            self._pending += 1
            self.last_activity = time.monotonic()
        self._pool.submit(self._run, runtime, event, source, time.time())

    def _run(self, runtime: FunctionRuntime, event: Any, source: str, accepted: float) -> None:
        try:
            self._invoke_with_retries(runtime, event, source, accepted)
        except Exception as exc:  # a destination that cannot be reached
            self.journal.record("async.error", function=runtime.function.key, error=f"{type(exc).__name__}: {exc}")
        finally:
            with self._lock:
                self._pending -= 1
                self.last_activity = time.monotonic()

    def _invoke_with_retries(self, runtime: FunctionRuntime, event: Any, source: str, accepted: float) -> None:
        function = runtime.function
        retries = int(function.setting("maximumRetryAttempts", 2))
        max_age = float(function.setting("maximumEventAge", 21600))
        attempt = 0
        result: Result
        while True:
            attempt += 1
            result = runtime.invoke(event, source=source, attempt=attempt)
            self.journal.record(
                "async.invoke",
                function=function.key,
                attempt=attempt,
                ok=result.ok,
                error=None if result.ok else f"{type(result.error).__name__}: {result.error}",
                request_id=result.request_id,
            )
            if result.ok or attempt > retries or self._stop.is_set():
                break
            if time.time() - accepted > max_age:
                break
            delays = self.timing.async_retry_delays or (0.0,)
            if self._stop.wait(delays[min(attempt - 1, len(delays) - 1)]):
                break
        destinations = function.setting("destinations") or {}
        if result.ok:
            on_success = target_arn(destinations.get("onSuccess"))
            if on_success:
                self._send(on_success, async_invocation_record(
                    function_arn=runtime.arn, condition="Success", invoke_count=attempt,
                    request_id=result.request_id, event=event, response=result.response, error=None))
            return
        condition = "RetriesExhausted" if attempt > retries else "EventAgeExceeded"
        on_failure = target_arn(destinations.get("onFailure"))
        dead_letter = target_arn(function.setting("onError"))
        if on_failure:
            self._send(on_failure, async_invocation_record(
                function_arn=runtime.arn, condition=condition, invoke_count=attempt,
                request_id=result.request_id, event=event, response=None, error=result.error))
        elif dead_letter:
            self._send(dead_letter, event, {
                "RequestID": result.request_id,
                "ErrorCode": "200",
                "ErrorMessage": str(result.error)[:1000],
            })
        self.journal.record("async.failed", function=function.key, attempts=attempt, condition=condition, destination=on_failure or dead_letter)

    def _send(self, arn: str, body: Any, attributes: dict[str, str] | None = None) -> None:
        self.destinations.send(arn, body, attributes)
        self.journal.record("destination.sent", destination=arn)

    def stop(self) -> None:
        self._stop.set()
        self._pool.shutdown(wait=False, cancel_futures=True)


class SnsEventSource(Poller):
    """The internal queue of one SNS subscription, dispatched to the async invoker."""

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
        super().__init__(timing, journal)
        self.runtime = runtime
        self.function = runtime.function.key
        self.name = f"sns:{self.function}"
        self.topic_arn = topic_arn
        self.clients = clients
        self.invoker = invoker
        self.spec = spec
        self.queue_url = ""
        self.subscription_arn = ""

    def setup(self) -> None:
        sqs, sns = self.clients("sqs"), self.clients("sns")
        digest = hashlib.sha1(f"{self.runtime.function.name}|{self.topic_arn}".encode()).hexdigest()[:10]
        name = f"lambda-kit-sns-{self.function}"[:60] + f"-{digest}"
        self.queue_url = sqs.create_queue(QueueName=name)["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        attributes: dict[str, str] = {}
        if self.spec.get("filterPolicy"):
            attributes["FilterPolicy"] = json.dumps(self.spec["filterPolicy"])
            if self.spec.get("filterPolicyScope"):
                attributes["FilterPolicyScope"] = str(self.spec["filterPolicyScope"])
        self.subscription_arn = sns.subscribe(
            TopicArn=self.topic_arn, Protocol="sqs", Endpoint=queue_arn, Attributes=attributes, ReturnSubscriptionArn=True
        )["SubscriptionArn"]

    def poll_once(self) -> bool:
        sqs = self.clients("sqs")
        messages = sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get("Messages", [])
        if not messages:
            return False
        self.mark_busy()
        try:
            for message in messages:
                try:
                    envelope = json.loads(message["Body"])
                except ValueError:
                    envelope = {"Message": message["Body"], "TopicArn": self.topic_arn, "MessageId": message["MessageId"]}
                self.invoker.submit(self.runtime, lambda_sns_event(envelope, self.subscription_arn))
                self.journal.record("sns.accepted", function=self.function, message_id=envelope.get("MessageId"))
            sqs.delete_message_batch(
                QueueUrl=self.queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
            )
        finally:
            self.mark_done()
        return True
