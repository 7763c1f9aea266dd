"""S3 bucket notifications to a function, invoked asynchronously with Lambda's retries and
failure destinations.

moto's S3 can notify a queue but not run an in-process function, so each ``s3`` event of
``serverless.yml`` (``bucket``, ``event`` — default ``s3:ObjectCreated:*`` — and ``rules`` with
``prefix`` / ``suffix``) adds a queue configuration for an internal queue to the bucket's
notification configuration (kept alongside the others: S3 has one per bucket), creating the
bucket when it does not exist yet (the framework creates it unless ``existing: true``). moto sends
the notification S3 would send (keys URL-encoded); it reaches the async invoker as the Lambda
event, ``{"Records": [...]}``. The test message S3 sends to queues is not one Lambda ever gets:
it is dropped.
"""

from __future__ import annotations

import json
from typing import Any

from ..serverless_config import ConfigError
from .relay import QueueRelay

DEFAULT_EVENT = "s3:ObjectCreated:*"


class S3EventSource(QueueRelay):
    """The internal queue one bucket notification configuration delivers to, relayed to the
    async invoker."""

    kind = "s3"

    def target(self) -> str:
        return f"{self.bucket()}|{self.event.index}"

    def bucket(self) -> str:
        bucket = self.spec.get("bucket")
        if not isinstance(bucket, str) or not bucket:
            raise ConfigError(f"functions.{self.function}.events[{self.event.index}].s3 needs a bucket name")
        return bucket

    def connect(self, queue_arn: str) -> None:
        s3 = self.clients("s3")
        bucket = self.bucket()
        try:
            s3.head_bucket(Bucket=bucket)
        except s3.exceptions.ClientError:
            s3.create_bucket(Bucket=bucket)
        configuration = s3.get_bucket_notification_configuration(Bucket=bucket)
        configuration.pop("ResponseMetadata", None)
        queues = [*configuration.get("QueueConfigurations", []), self._queue_configuration(queue_arn)]
        s3.put_bucket_notification_configuration(
            Bucket=bucket, NotificationConfiguration={**configuration, "QueueConfigurations": queues}
        )

    def _queue_configuration(self, queue_arn: str) -> dict[str, Any]:
        """The bucket's notification to the internal queue: the event's type and key rules."""
        queue: dict[str, Any] = {
            "Id": f"lambda-kit-{self.function}-{self.event.index}",
            "QueueArn": queue_arn,
            "Events": [self.spec.get("event") or DEFAULT_EVENT],
        }
        rules = [
            {"Name": name, "Value": str(value)}
            for rule in self.spec.get("rules") or []
            if isinstance(rule, dict)
            for name, value in rule.items()
        ]
        if rules:
            queue["Filter"] = {"Key": {"FilterRules": rules}}
        return queue

    def events_of(self, body: str, message_id: str) -> list[tuple[Any, str | None]]:
        notification = json.loads(body)
        if isinstance(notification, dict) and notification.get("Event") == "s3:TestEvent":
            self.journal.record(
                "s3.test_event_dropped", function=self.function, bucket=notification.get("Bucket")
            )
            return []
        return [(notification, message_id)]
