"""CloudWatch Logs subscriptions: ``awslogs.data`` unpacked, one record per log event (id, timestamp,
message, the message decoded when it is a JSON object, log group and stream); trace id from the
message when it is a lambda_kit line (the producer's), else the log event's id.

CloudWatch Logs invokes the function asynchronously, so a failure is raised once every log event
ran: Lambda retries the whole event, then its on-failure destination (or DLQ) keeps it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..record import Record
from . import awslogs
from .base import Source, malformed, read_alone


class CloudWatchLogsSource(Source):
    name = "cloudwatch_logs"
    label = "a CloudWatch Logs subscription event"
    decorator = "cloudwatch_logs_handler"
    serverless_events = ("cloudwatchLog",)
    arn_service = "logs"
    resource_types = ("AWS::Logs::LogGroup",)
    asynchronous = True

    @classmethod
    def recognizes(cls, event: object) -> bool:
        subscription = event.get("awslogs") if type(event) is dict else None
        return type(subscription) is dict and "data" in subscription

    def records(self, event: Mapping[str, Any]) -> list[Record]:
        return read_alone(self.name, event["awslogs"], self.read)

    def read(self, subscription: object) -> list[Record]:
        """The log events of the subscription message, each read alone (``awslogs``)."""
        try:
            message = awslogs.unpack(subscription["data"])
        except ValueError as exc:
            return [malformed(self.name, subscription, f"awslogs.data {exc}")]
        return awslogs.log_event_records(message, self.name)


SOURCE = CloudWatchLogsSource
