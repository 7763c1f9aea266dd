"""The AWS calls each function makes on the local stack, as IAM authorises them.

The stack's proxy (``aws_proxy.py``) sees every call of every function's workers; each becomes one
``Call(function, action, resource)`` per IAM action and resource it needs (``iam_calls``): the
action is the service's IAM prefix and the operation, except where IAM authorises the operation as
others (a DynamoDB transaction as the item actions inside it, an SQS batch as its one-message
action, an S3 request as moto's map of methods and paths says); the resource is the ARN of the
table, index, queue, topic, stream, event bus or bucket the request names (``*`` when it names
none). ``CallLog`` counts them, allowed and denied, and writes them where a later ``lambda-kit
check`` reads them: ``recorded_calls(path)``.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter as Tally
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from moto.s3.responses import ACTION_MAP

from .variables import ACCOUNT_ID as ACCOUNT

DEFAULT_PATH = Path(".lambda-kit") / "aws-calls.json"
"""Where the stack writes the calls of its last run, relative to serverless.yml's folder."""

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


DYNAMODB_LOCAL_ARN = "arn:aws:dynamodb:ddblocal:000000000000:"
"""How DynamoDB Local begins its ARNs (its own region and account, whatever the request's)."""


def canonical(value: Any, region: str, account: str = ACCOUNT) -> Any:
    """``value`` with DynamoDB Local's ARNs (in strings, lists, mappings) as AWS would spell them
    in ``region`` and ``account``: what a role's statements and the calls are compared in."""
    if isinstance(value, str):
        return value.replace(DYNAMODB_LOCAL_ARN, f"arn:aws:dynamodb:{region}:{account}:")
    if isinstance(value, list):
        return [canonical(item, region, account) for item in value]
    if isinstance(value, dict):
        return {key: canonical(item, region, account) for key, item in value.items()}
    return value


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


def _topic_by_name(params: dict[str, Any], region: str, account: str) -> str | None:
    """An SNS call naming its topic by ARN, or (CreateTopic) by name."""
    found = _topic_resource(params, region, account)
    if found is None and isinstance(params.get("Name"), str):
        return f"arn:aws:sns:{region}:{account}:{params['Name']}"
    return found


def _event_bus_resource(params: dict[str, Any], region: str, account: str) -> str | None:
    """The event bus of a PutEvents (its entries'), or one a call names."""
    entries = params.get("Entries")
    names = (
        [e.get("EventBusName") for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
    )
    name = next((n for n in names if isinstance(n, str)), None) or params.get("EventBusName") or "default"
    text = str(name)
    return text if text.startswith("arn:") else f"arn:aws:events:{region}:{account}:event-bus/{text}"


RESOURCE_OF: dict[str, Callable[[dict[str, Any], str, str], str | None]] = {
    "sqs": _queue_resource,
    "sns": _topic_by_name,
    "kinesis": _stream_resource,
    "events": _event_bus_resource,
}
"""The ARN a call of each service names (its queue, topic or stream), or None."""


def iam_calls(
    prefix: str, operation: str, params: dict[str, Any], region: str, account: str = ACCOUNT
) -> list[tuple[str, str]]:
    """(IAM action, resource ARN) pairs one call of ``operation`` with ``params`` needs."""
    if prefix == "dynamodb":
        return [(a, canonical(r, region, account)) for a, r in _dynamodb(operation, params, region, account)]
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


def s3_action(method: str, target: str) -> tuple[str, str]:
    """(IAM action, resource) of an S3 request (path style: ``/bucket/key?query``), by moto's map."""
    parts = urlsplit(target)
    bucket, _, key = unquote(parts.path).lstrip("/").partition("/")
    kind = "KEY" if key else ("BUCKET" if bucket else "")
    if not kind:
        return "s3:ListAllMyBuckets", "*"
    actions = ACTION_MAP[kind].get(method, {})
    query = {name.partition("=")[0] for name in parts.query.split("&") if name}
    action = next((a for q, a in actions.items() if q in query and q != "DEFAULT"), actions.get("DEFAULT"))
    resource = f"arn:aws:s3:::{bucket}/{key}" if key else f"arn:aws:s3:::{bucket}"
    return f"s3:{action or method.title()}", resource


@dataclass(frozen=True)
class RecordedCall:
    """One (function, action, resource) a run saw: how often, and whether the role allowed it."""

    function: str
    action: str
    resource: str
    calls: int
    allowed: bool


class CallLog:
    """The calls the functions made (``record``), counted; thread-safe."""

    def __init__(self) -> None:
        self.calls: Tally[Call] = Tally()
        self.denied: Tally[Call] = Tally()
        self._lock = threading.Lock()
        self.on_denied: Callable[[Call], None] | None = None
        """Told of each call the role denies (or would deny, without IAM enforced), as it comes:
        the stack keeps them for ``lambda-kit check`` (``lambda_kit.local.denied_calls``)."""

    def record(self, call: Call, allowed: bool) -> None:
        with self._lock:
            self.calls[call] += 1
            if not allowed:
                self.denied[call] += 1
        if not allowed and self.on_denied is not None:
            self.on_denied(call)

    def by_function(self) -> dict[str, dict[str, dict[str, int]]]:
        """{function: {action: {resource: calls}}}."""
        found: dict[str, dict[str, dict[str, int]]] = {}
        with self._lock:
            counted = sorted(self.calls.items())
        for call, count in counted:
            found.setdefault(call.function, {}).setdefault(call.action, {})[call.resource] = count
        return found

    def recorded(self) -> list[RecordedCall]:
        with self._lock:
            return [
                RecordedCall(call.function, call.action, call.resource, count, call not in self.denied)
                for call, count in sorted(self.calls.items())
            ]

    def __iter__(self) -> Iterator[Call]:
        with self._lock:
            return iter(sorted(self.calls))

    def write(self, path: str | os.PathLike[str]) -> None:
        """The calls as one JSON document (what ``recorded_calls`` reads), written whole."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.{os.getpid()}")
        partial.write_text(json.dumps([vars(call) for call in self.recorded()], indent=1), encoding="utf-8")
        partial.replace(target)


def recorded_calls(path: str | os.PathLike[str] = DEFAULT_PATH) -> list[RecordedCall]:
    """The AWS calls of the last local run whose file is ``path`` (``LocalStack.calls_path``; by
    default ``.lambda-kit/aws-calls.json`` under the current directory): each function's (action,
    resource), how often it was called and whether its role allowed it (``allowed`` is False for
    the calls the role would deny, whether or not the run enforced IAM). [] when there is no file."""
    try:
        entries = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [RecordedCall(**entry) for entry in entries if isinstance(entry, dict)]
