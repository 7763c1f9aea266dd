"""The AWS calls each function makes on the local stack, as IAM authorises them.

``CallRecorder`` is both a stack invocation hook (so it knows which function is running) and a
botocore ``before-parameter-build`` handler on boto3's default session, which the functions'
clients are made from. The stack's own clients (pollers, destinations: Lambda's side of the
wiring) have a session of their own and are not recorded. Install it before the functions make
their clients (a client copies its session's handlers when it is made).

Each API call becomes one ``Call(function, action, resource)`` per IAM action and resource it
needs: the action is the service's IAM prefix and the operation, except where IAM authorises the
operation as others (a DynamoDB transaction as the item actions inside it, an SQS batch as its
one-message action); the resource is the ARN of the table, index, queue, topic or stream the
request names (``*`` when it names none).
"""

from __future__ import annotations

import contextvars
import threading
from collections import Counter as Tally
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import boto3

from .._data import dig
from .runtime import Invocation
from .variables import ACCOUNT_ID as ACCOUNT

# Operations IAM authorises as another action of the same service.
AUTHORISED_AS = {
    "sqs": {
        "SendMessageBatch": "SendMessage",
        "DeleteMessageBatch": "DeleteMessage",
        "ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
    },
    "sns": {"PublishBatch": "Publish"},
}
# The item actions of a DynamoDB transaction (there is no dynamodb:TransactWriteItems action).
TRANSACTION_ITEMS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
    "Get": "GetItem",
}


@dataclass(frozen=True, order=True)
class Call:
    function: str  # the function's key under `functions:`
    action: str  # "dynamodb:PutItem"
    resource: str  # "arn:aws:dynamodb:us-east-1:123456789012:table/stats", or "*"


def table_arn(name: str, region: str, account: str = ACCOUNT) -> str:
    return f"arn:aws:dynamodb:{region}:{account}:table/{name}"


def queue_arn(name: str, region: str, account: str = ACCOUNT) -> str:
    return f"arn:aws:sqs:{region}:{account}:{name}"


def stream_arn(name: str, region: str, account: str = ACCOUNT) -> str:
    return f"arn:aws:kinesis:{region}:{account}:stream/{name}"


def _queue_resource(params: dict[str, Any], region: str, account: str) -> str | None:
    for field, name in (("QueueUrl", lambda url: url.rstrip("/").rsplit("/", 1)[-1]), ("QueueName", str)):
        if isinstance(params.get(field), str):
            return queue_arn(name(params[field]), region, account)
    return None


def _topic_resource(params: dict[str, Any], region: str, account: str) -> str | None:
    arn = params.get("TopicArn") or params.get("TargetArn")
    return arn if isinstance(arn, str) else None


def _stream_resource(params: dict[str, Any], region: str, account: str) -> str | None:
    if isinstance(params.get("StreamARN"), str):
        return str(params["StreamARN"])
    if isinstance(params.get("StreamName"), str):
        return stream_arn(params["StreamName"], region, account)
    return None


RESOURCE_OF: dict[str, Callable[[dict[str, Any], str, str], str | None]] = {
    "sqs": _queue_resource,
    "sns": _topic_resource,
    "kinesis": _stream_resource,
}
"""The ARN a call of each service names (its queue, topic or stream), or None."""


def iam_calls(
    prefix: str, operation: str, params: dict[str, Any], region: str, account: str = ACCOUNT
) -> list[tuple[str, str]]:
    """(IAM action, resource ARN) pairs one call of ``operation`` with ``params`` needs."""
    if prefix == "dynamodb":
        return _dynamodb(operation, params, region, account)
    action = f"{prefix}:{AUTHORISED_AS.get(prefix, {}).get(operation, operation)}"
    resource = RESOURCE_OF[prefix](params, region, account) if prefix in RESOURCE_OF else None
    return [(action, resource or "*")]


def _dynamodb(operation: str, params: dict[str, Any], region: str, account: str) -> list[tuple[str, str]]:
    action = f"dynamodb:{operation}"
    if isinstance(params.get("StreamArn"), str):  # DynamoDB Streams
        return [(action, params["StreamArn"])]
    if operation in ("TransactWriteItems", "TransactGetItems"):
        return _transaction_items(params, region, account)
    if isinstance(params.get("RequestItems"), dict):  # BatchGetItem, BatchWriteItem
        return [(action, table_arn(table, region, account)) for table in sorted(params["RequestItems"])]
    if isinstance(params.get("TableName"), str):
        index = f"/index/{params['IndexName']}" if isinstance(params.get("IndexName"), str) else ""
        return [(action, table_arn(params["TableName"], region, account) + index)]
    return [(action, "*")]


def _transaction_items(params: dict[str, Any], region: str, account: str) -> list[tuple[str, str]]:
    """A transaction's item actions, on their tables (there is no dynamodb:TransactWriteItems action)."""
    pairs = {
        (
            f"dynamodb:{TRANSACTION_ITEMS.get(kind, kind)}",
            table_arn(str(spec.get("TableName")), region, account),
        )
        for item in params.get("TransactItems") or []
        for kind, spec in item.items()
    }
    return sorted(pairs)


def resource_ids(resources: Any, region: str, account: str = ACCOUNT) -> dict[str, str]:
    """{ARN as ``Call.resource`` names it: ``LogicalId.Arn``} for the tables, queues, topics and
    Kinesis streams among a stack's ``resources`` (``LocalStack.resources``)."""
    ids: dict[str, str] = {}
    for kind, arn in (
        ("AWS::DynamoDB::Table", lambda a: table_arn(a["Ref"], region, account)),
        ("AWS::SQS::Queue", lambda a: queue_arn(a["QueueName"], region, account)),
        ("AWS::SNS::Topic", lambda a: a["TopicArn"]),
        ("AWS::Kinesis::Stream", lambda a: stream_arn(a["Ref"], region, account)),
    ):
        for resource in resources.of_type(kind):
            ids[arn(resource.attributes)] = f"{resource.logical_id}.Arn"
    return ids


class CallRecorder:
    """Records ``Call``s: pass it to ``LocalStack(hooks=[...])`` and ``install()`` it before the
    stack starts; ``calls`` counts each (function, action, resource) seen."""

    def __init__(self, account: str = ACCOUNT) -> None:
        self.account = account
        self.calls: Tally[Call] = Tally()
        self._function: contextvars.ContextVar[str | None] = contextvars.ContextVar(
            f"lambda_kit_recorded_function_{id(self)}", default=None
        )
        self._lock = threading.Lock()
        self._session: Any = None
        self._id = f"lambda-kit-call-recorder-{id(self)}"

    def __call__(self, invocation: Invocation, proceed: Callable[[], Any]) -> Any:
        token = self._function.set(invocation.function.key)
        try:
            return proceed()
        finally:
            self._function.reset(token)

    def install(self) -> CallRecorder:
        if boto3.DEFAULT_SESSION is None:
            boto3.setup_default_session()
        self._session = boto3.DEFAULT_SESSION
        self._session.events.register("before-parameter-build", self._record, unique_id=self._id)
        return self

    def uninstall(self) -> None:
        if self._session is not None:
            self._session.events.unregister("before-parameter-build", unique_id=self._id)
            self._session = None

    def __enter__(self) -> CallRecorder:
        return self.install()

    def __exit__(self, *_: object) -> None:
        self.uninstall()

    def by_function(self) -> dict[str, dict[str, dict[str, int]]]:
        """{function: {action: {resource: calls}}}."""
        found: dict[str, dict[str, dict[str, int]]] = {}
        for call, count in sorted(self.calls.items()):
            found.setdefault(call.function, {}).setdefault(call.action, {})[call.resource] = count
        return found

    def __iter__(self) -> Iterator[Call]:
        return iter(sorted(self.calls))

    def _record(
        self, params: dict[str, Any], model: Any, context: dict[str, Any] | None = None, **_: Any
    ) -> None:
        function = self._function.get()
        if function is None:
            return
        service = model.service_model
        prefix = service.signing_name or service.endpoint_prefix
        region = str(dig(context, "client_region") or "us-east-1")
        pairs = iam_calls(prefix, model.name, params, region, self.account)
        with self._lock:
            for action, resource in pairs:
                self.calls[Call(function, action, resource)] += 1
