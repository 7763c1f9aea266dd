"""The CloudFormation resources of serverless.yml, created on the local endpoint.

Created from the file itself, in dependency order: ``AWS::DynamoDB::Table`` (keys, indexes,
stream, TTL), ``AWS::SQS::Queue`` (attributes, ``RedrivePolicy``), ``AWS::SNS::Topic`` (and its
inline ``Subscription`` list), ``AWS::SNS::Subscription``, ``AWS::Kinesis::Stream``,
``AWS::S3::Bucket`` (with its notification configuration), ``AWS::Events::EventBus``. Other types
(IAM roles, policies, log groups ...) have no local effect: they are recorded, and ``Ref`` /
``GetAtt`` on them give placeholder names and ARNs. ``Resources`` is also the lookup that
resolves ``Ref`` / ``Fn::GetAtt`` / ``Fn::Sub`` to the local names, ARNs and URLs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._data import dig, mapping
from ..serverless_config import ConfigError
from . import intrinsics
from .clients import Clients
from .config import ServiceConfig
from .variables import ACCOUNT_ID

PSEUDO = {
    "AWS::AccountId": ACCOUNT_ID,
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::NoValue": None,
}
FUNCTION_SUFFIX = "LambdaFunction"
"""The framework's logical id of a function: ``<Name>LambdaFunction``."""
QUEUE_ATTRIBUTES = (
    "VisibilityTimeout",
    "MessageRetentionPeriod",
    "DelaySeconds",
    "MaximumMessageSize",
    "ReceiveMessageWaitTimeSeconds",
    "ContentBasedDeduplication",
    "FifoQueue",
)
QUEUE_POLICIES = ("RedrivePolicy", "RedriveAllowPolicy")
SUBSCRIPTION_ATTRIBUTES = ("RawMessageDelivery", "FilterPolicy", "FilterPolicyScope", "RedrivePolicy")


@dataclass
class Resource:
    logical_id: str
    type: str
    properties: dict[str, Any]
    attributes: dict[str, Any] = field(default_factory=dict)  # "Ref", "Arn", "QueueUrl", ...
    created: bool = False

    @property
    def ref(self) -> Any:
        return self.attributes.get("Ref")


class Resources:
    """The service's resources on the endpoint, by logical id."""

    def __init__(self, config: ServiceConfig, clients: Clients) -> None:
        self.config = config
        self.clients = clients
        self.region = config.region
        self.by_id: dict[str, Resource] = {
            logical: Resource(logical, spec["Type"], dict(mapping(spec.get("Properties"))))
            for logical, spec in config.resources.items()
        }

    # --- the lookup for intrinsics ------------------------------------------------------------

    def ref(self, logical_id: str) -> Any:
        pseudo = {
            **PSEUDO,
            "AWS::Region": self.region,
            "AWS::StackName": f"{self.config.service}-{self.config.stage}",
        }
        if logical_id in pseudo:
            return pseudo[logical_id]
        resource = self.by_id.get(logical_id)
        if resource is not None:
            return self._known(resource).ref
        if self._is_function(logical_id):
            return self._function_name(logical_id)
        raise ConfigError(f"Ref {logical_id!r}: no resource with that logical id in resources.Resources")

    def get_att(self, logical_id: str, attribute: str) -> Any:
        resource = self.by_id.get(logical_id)
        if resource is None:
            return self._function_arn(logical_id, attribute)
        attributes = self._known(resource).attributes
        if attribute not in attributes:
            known = ", ".join(sorted(k for k in attributes if k != "Ref")) or "none"
            raise ConfigError(
                f"Fn::GetAtt {logical_id}.{attribute}: {resource.type} has no local attribute"
                f" {attribute!r} (has {known})"
            )
        return attributes[attribute]

    def _function_arn(self, logical_id: str, attribute: str) -> str:
        """``Fn::GetAtt`` on what is no resource: a function's ``Arn``, or no such thing."""
        if attribute != "Arn" or not self._is_function(logical_id):
            raise ConfigError(
                f"Fn::GetAtt {logical_id}.{attribute}: no resource with that logical id"
                " in resources.Resources"
            )
        return f"arn:aws:lambda:{self.region}:{ACCOUNT_ID}:function:{self._function_name(logical_id)}"

    def resolve(self, value: Any) -> Any:
        try:
            return intrinsics.resolve(value, self)
        except intrinsics.IntrinsicError as exc:
            raise ConfigError(str(exc)) from None

    def _known(self, resource: Resource) -> Resource:
        """``resource``, with placeholder names if it is not created (yet, or ever)."""
        if not resource.created:
            self._placeholder(resource)
        return resource

    def _is_function(self, logical_id: str) -> bool:
        return logical_id in self.config.functions or logical_id.endswith(FUNCTION_SUFFIX)

    def _function_name(self, logical_id: str) -> str:
        key = logical_id
        if key not in self.config.functions:
            stem = logical_id[: -len(FUNCTION_SUFFIX)].lower()
            key = next((k for k in self.config.functions if _logical_stem(k) == stem), stem)
        function = self.config.functions.get(key)
        return function.name if function else key

    def _placeholder(self, resource: Resource) -> None:
        """Names and ARNs for types that are not created locally (roles, policies, log groups)."""
        name = (
            resource.properties.get("RoleName")
            or resource.properties.get("LogGroupName")
            or resource.logical_id
        )
        service = resource.type.split("::")[1].lower() if resource.type.count("::") >= 2 else "unknown"
        resource.attributes.setdefault("Ref", name)
        resource.attributes.setdefault(
            "Arn", f"arn:aws:{service}:{self.region}:{ACCOUNT_ID}:{resource.logical_id}"
        )

    # --- creation -----------------------------------------------------------------------------

    def create_all(self) -> None:
        for logical_id in self._creation_order():
            resource = self.by_id[logical_id]
            creator = getattr(
                self, "_create_" + resource.type.replace("AWS::", "").replace("::", "_").lower(), None
            )
            if creator is None:
                self._placeholder(resource)
                continue
            properties = self.resolve(resource.properties)
            try:
                creator(resource, properties)
            except ConfigError:
                raise
            except Exception as exc:
                raise ConfigError(
                    f"could not create {resource.type} {logical_id} locally: {_one_line(exc)}"
                ) from exc
            resource.created = True

    def _creation_order(self) -> list[str]:
        """The logical ids, each after the ones it refers to (``Ref``, ``Fn::GetAtt``, ``DependsOn``)."""
        dependencies = {logical: self._dependencies(logical) for logical in self.by_id}
        order: list[str] = []
        state: dict[str, int] = {}

        def visit(node: str, path: list[str]) -> None:
            if state.get(node) == 2:
                return
            if state.get(node) == 1:
                raise ConfigError(f"resources refer to each other in a cycle: {' -> '.join([*path, node])}")
            state[node] = 1
            for dependency in sorted(dependencies[node]):
                visit(dependency, [*path, node])
            state[node] = 2
            order.append(node)

        for logical in self.by_id:
            visit(logical, [])
        return order

    def _dependencies(self, logical: str) -> set[str]:
        depends_on = self.config.resources[logical].get("DependsOn") or []
        needs = intrinsics.references(self.by_id[logical].properties)
        needs |= {depends_on} if isinstance(depends_on, str) else set(depends_on)
        return {n for n in needs if n in self.by_id and n != logical}

    def _default_name(self, resource: Resource) -> str:
        return f"{self.config.service}-{self.config.stage}-{resource.logical_id}"

    def _name(self, resource: Resource, props: dict[str, Any], key: str) -> str:
        """The name the properties give under ``key``, else the framework's default."""
        return props.get(key) or self._default_name(resource)

    def _create_dynamodb_table(self, resource: Resource, props: dict[str, Any]) -> None:
        client = self.clients("dynamodb")
        name = self._name(resource, props, "TableName")
        try:
            description = client.create_table(**_table_request(name, props))["TableDescription"]
        except client.exceptions.ResourceInUseException:
            description = client.describe_table(TableName=name)["Table"]
        ttl = mapping(props.get("TimeToLiveSpecification"))
        ttl_attribute = ttl.get("AttributeName") if ttl.get("Enabled") else None
        if ttl_attribute:
            try:
                client.update_time_to_live(
                    TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl_attribute}
                )
            except Exception:  # already enabled on a reused endpoint
                pass
        resource.attributes.update(
            Ref=name,
            Arn=description["TableArn"],
            StreamArn=description.get("LatestStreamArn"),
            TtlAttribute=ttl_attribute,
        )

    def _create_sqs_queue(self, resource: Resource, props: dict[str, Any]) -> None:
        client = self.clients("sqs")
        name = props.get("QueueName") or self._default_name(resource) + (
            ".fifo" if props.get("FifoQueue") else ""
        )
        attributes = {
            key: _attribute_text(props[key]) for key in QUEUE_ATTRIBUTES if props.get(key) is not None
        }
        attributes |= {key: _json_text(props[key]) for key in QUEUE_POLICIES if props.get(key)}
        url = client.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        arn = client.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        resource.attributes.update(Ref=url, Arn=arn, QueueUrl=url, QueueName=name)

    def _create_sns_topic(self, resource: Resource, props: dict[str, Any]) -> None:
        client = self.clients("sns")
        name = self._name(resource, props, "TopicName")
        attributes = {"FifoTopic": "true"} if props.get("FifoTopic") else {}
        arn = client.create_topic(Name=name, Attributes=attributes)["TopicArn"]
        for subscription in props.get("Subscription") or []:
            client.subscribe(
                TopicArn=arn, Protocol=subscription["Protocol"], Endpoint=subscription["Endpoint"]
            )
        resource.attributes.update(Ref=arn, TopicArn=arn, TopicName=name)

    def _create_sns_subscription(self, resource: Resource, props: dict[str, Any]) -> None:
        if props.get("Protocol") == "lambda":  # the local stack invokes functions itself (see sns_source)
            resource.attributes.update(Ref=f"{props.get('TopicArn')}:{resource.logical_id}")
            return
        attributes = {
            key: _json_text(props[key]) for key in SUBSCRIPTION_ATTRIBUTES if props.get(key) is not None
        }
        arn = self.clients("sns").subscribe(
            TopicArn=props["TopicArn"],
            Protocol=props["Protocol"],
            Endpoint=props["Endpoint"],
            Attributes=attributes,
            ReturnSubscriptionArn=True,
        )["SubscriptionArn"]
        resource.attributes.update(Ref=arn)

    def _create_kinesis_stream(self, resource: Resource, props: dict[str, Any]) -> None:
        client = self.clients("kinesis")
        name = self._name(resource, props, "Name")
        mode = mapping(props.get("StreamModeDetails")).get("StreamMode", "PROVISIONED")
        shards = {"ShardCount": int(props.get("ShardCount") or 1)} if mode == "PROVISIONED" else {}
        try:
            client.create_stream(StreamName=name, StreamModeDetails={"StreamMode": mode}, **shards)
        except client.exceptions.ResourceInUseException:
            pass
        resource.attributes.update(Ref=name, Arn=_active_stream(client, name)["StreamARN"])

    # --- EventBridge and S3 --------------------------------------------------------------------

    def _create_events_eventbus(self, resource: Resource, props: dict[str, Any]) -> None:
        client = self.clients("events")
        name = self._name(resource, props, "Name")
        try:
            arn = client.create_event_bus(Name=name)["EventBusArn"]
        except client.exceptions.ResourceAlreadyExistsException:
            arn = client.describe_event_bus(Name=name)["Arn"]
        resource.attributes.update(Ref=name, Name=name, Arn=arn)

    def _create_s3_bucket(self, resource: Resource, props: dict[str, Any]) -> None:
        """The bucket, and its ``NotificationConfiguration`` (queues, topics, EventBridge) in the
        API's shape; ``LambdaConfigurations`` are the functions' ``s3`` events' business."""
        client = self.clients("s3")
        name = props.get("BucketName") or self._default_name(resource).lower()
        location = (
            {"CreateBucketConfiguration": {"LocationConstraint": self.region}}
            if self.region != "us-east-1"
            else {}
        )
        try:
            client.create_bucket(Bucket=name, **location)
        except (client.exceptions.BucketAlreadyOwnedByYou, client.exceptions.BucketAlreadyExists):
            pass
        configuration = _notification_configuration(mapping(props.get("NotificationConfiguration")))
        if configuration:
            client.put_bucket_notification_configuration(Bucket=name, NotificationConfiguration=configuration)
        resource.attributes.update(
            Ref=name, Arn=f"arn:aws:s3:::{name}", DomainName=f"{name}.s3.amazonaws.com"
        )

    # --- queries ------------------------------------------------------------------------------

    def of_type(self, type_name: str) -> list[Resource]:
        return [r for r in self.by_id.values() if r.type == type_name]

    def by_arn(self, arn: str) -> Resource | None:
        """The resource whose ``Arn``, ``StreamArn`` or ``Ref`` is ``arn``."""
        names = ("Arn", "StreamArn", "Ref")
        return next((r for r in self.by_id.values() if arn in [r.attributes.get(n) for n in names]), None)

    def dead_letter_queue_arns(self) -> set[str]:
        """ARNs of the queues that are some queue's redrive target."""
        policies = [
            self.resolve(queue.properties.get("RedrivePolicy")) for queue in self.of_type("AWS::SQS::Queue")
        ]
        policies = [json.loads(policy) if isinstance(policy, str) else policy for policy in policies]
        return set(filter(None, (dig(policy, "deadLetterTargetArn") for policy in policies)))


def _logical_stem(key: str) -> str:
    """A function key as the framework spells it in logical ids, lower-cased."""
    return key.lower().replace("-", "dash").replace("_", "underscore")


def _table_request(name: str, props: dict[str, Any]) -> dict[str, Any]:
    """``CreateTable``'s request for an ``AWS::DynamoDB::Table``'s properties."""
    billing = props.get("BillingMode", "PROVISIONED")
    request: dict[str, Any] = {
        "TableName": name,
        "AttributeDefinitions": props["AttributeDefinitions"],
        "KeySchema": props["KeySchema"],
        "BillingMode": billing,
    }
    if billing == "PROVISIONED":
        request["ProvisionedThroughput"] = props.get("ProvisionedThroughput") or {
            "ReadCapacityUnits": 5,
            "WriteCapacityUnits": 5,
        }
    request |= {
        key: props[key] for key in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes") if props.get(key)
    }
    view = dig(props, "StreamSpecification", "StreamViewType")
    if view:
        request["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": view}
    return request


def _attribute_text(value: Any) -> str:
    """A queue or subscription attribute as the API takes it (booleans in lower case)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _json_text(value: Any) -> str:
    """An attribute that may be given as an object (a policy) as the API takes it: JSON text."""
    return json.dumps(value) if isinstance(value, dict) else _attribute_text(value)


def _active_stream(client: Any, name: str, timeout: float = 30) -> dict[str, Any]:
    """The stream's summary once it is ACTIVE (or after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    summary: dict[str, Any] = client.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]
    while summary["StreamStatus"] != "ACTIVE" and time.monotonic() < deadline:
        time.sleep(0.05)
        summary = client.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]
    return summary


def _notification_configuration(notifications: Mapping[str, Any]) -> dict[str, Any]:
    """CloudFormation's bucket ``NotificationConfiguration`` (queues, topics, EventBridge) in the
    API's shape."""
    configuration: dict[str, Any] = {}
    for kind, target in (("Queue", "QueueArn"), ("Topic", "TopicArn")):
        entries = [
            {target: entry[kind], "Events": [entry["Event"]], **_key_filter(entry.get("Filter"))}
            for entry in notifications.get(f"{kind}Configurations") or []
        ]
        if entries:
            configuration[f"{kind}Configurations"] = entries
    if dig(notifications, "EventBridgeConfiguration", "EventBridgeEnabled"):
        configuration["EventBridgeConfiguration"] = {}
    return configuration


def _key_filter(cfn_filter: Any) -> dict[str, Any]:
    """CloudFormation's ``Filter: {S3Key: {Rules: [...]}}`` in the API's shape."""
    rules = dig(cfn_filter, "S3Key", "Rules") or []
    return {"Filter": {"Key": {"FilterRules": rules}}} if rules else {}


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
