"""Each function's role, read from serverless.yml as osls builds it, and its policy evaluated.

Which role a function has, as the framework decides it:

- ``role:`` on the function: a logical id of an ``AWS::IAM::Role`` in ``resources`` (or a
  ``Fn::GetAtt`` of one): that role's ``Policies``, its ``ManagedPolicyArns`` and the
  ``AWS::IAM::Policy`` / ``AWS::IAM::ManagedPolicy`` resources attached to it;
- ``iamRoleStatements`` on the function (the serverless-iam-roles-per-function plugin): those, with
  the provider's when ``iamRoleStatementsInherit`` (or the plugin's ``defaultInherit``) says so;
- else ``provider.iam.role`` naming a role the same way, or the framework's own role
  (``<service>-<stage>-<region>-lambdaRole``): its log statements (Lambda's basic execution),
  ``provider.iam.role.statements`` (or ``provider.iamRoleStatements``), ``managedPolicies``, and
  the statements osls adds for the function's SQS and stream events.

A role given as an ARN of a role the file does not declare, or holding a managed policy that is
neither declared nor one of AWS's listed in ``MANAGED``, cannot be read: its function's calls are
recorded, not authorised (``Role.known`` is False).

The evaluation is moto's (``moto.iam.access_control.IAMPolicyStatement``), with IAM's rules around
it: an explicit Deny wins, else an Allow allows, else the call is denied. Actions match without
regard to case, resources with it, ``*`` as a wildcard in both. ``NotAction`` and ``NotResource``
are honoured. Conditions are not evaluated (the local stack has no request context to evaluate
them with): a statement applies whatever its ``Condition`` says. A call whose resource the local
stack cannot tell (``*``) is allowed when a statement allows its action on some resource.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from moto.iam.access_control import IAMPolicyStatement, PermissionResult

from .._data import mapping
from .config import FunctionConfig, ServiceConfig
from .intrinsics import target
from .variables import ACCOUNT_ID

_LOGS = ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"]
_STREAM_READS = {
    "kinesis": ["kinesis:GetRecords", "kinesis:GetShardIterator", "kinesis:DescribeStream",
                "kinesis:DescribeStreamSummary", "kinesis:ListShards", "kinesis:ListStreams"],
    "dynamodb": ["dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:DescribeStream",
                 "dynamodb:ListStreams"],
}  # fmt: skip
_SQS_READS = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"]


def _allow(actions: list[str], resource: str = "*") -> list[dict[str, Any]]:
    return [{"Effect": "Allow", "Action": actions, "Resource": resource}]


MANAGED: dict[str, list[dict[str, Any]]] = {
    "AWSLambdaBasicExecutionRole": _allow(_LOGS),
    "AWSLambdaVPCAccessExecutionRole": _allow(
        [
            *_LOGS,
            "ec2:CreateNetworkInterface",
            "ec2:DescribeNetworkInterfaces",
            "ec2:DeleteNetworkInterface",
            "ec2:AssignPrivateIpAddresses",
            "ec2:UnassignPrivateIpAddresses",
        ]  # fmt: skip
    ),
    "AWSXRayDaemonWriteAccess": _allow(
        [
            "xray:PutTraceSegments",
            "xray:PutTelemetryRecords",
            "xray:GetSamplingRules",
            "xray:GetSamplingTargets",
            "xray:GetSamplingStatisticSummaries",
        ]  # fmt: skip
    ),
    "AWSLambdaSQSQueueExecutionRole": _allow([*_SQS_READS, *_LOGS]),
    "AWSLambdaKinesisExecutionRole": _allow([*_STREAM_READS["kinesis"], *_LOGS]),
    "AWSLambdaDynamoDBExecutionRole": _allow([*_STREAM_READS["dynamodb"], *_LOGS]),
    "AmazonDynamoDBFullAccess": _allow(["dynamodb:*"]),
    "AmazonDynamoDBReadOnlyAccess": _allow(
        [
            "dynamodb:BatchGetItem",
            "dynamodb:Describe*",
            "dynamodb:List*",
            "dynamodb:GetItem",
            "dynamodb:Query",
            "dynamodb:Scan",
            "dynamodb:PartiQLSelect",
        ]  # fmt: skip
    ),
    "AmazonSQSFullAccess": _allow(["sqs:*"]),
    "AmazonSNSFullAccess": _allow(["sns:*"]),
    "AmazonKinesisFullAccess": _allow(["kinesis:*"]),
    "AmazonS3FullAccess": _allow(["s3:*", "s3-object-lambda:*"]),
    "AmazonS3ReadOnlyAccess": _allow(["s3:Get*", "s3:List*", "s3:Describe*"]),
    "AmazonEventBridgeFullAccess": _allow(["events:*"]),
    "AdministratorAccess": _allow(["*"]),
    "PowerUserAccess": [
        {"Effect": "Allow", "NotAction": ["iam:*", "organizations:*", "account:*"], "Resource": "*"}
    ],  # fmt: skip
}
"""AWS managed policies a role may name by ARN, as AWS defines them (the actions Lambda's own and the
common full-access ones allow)."""


@dataclass
class Decision:
    allowed: bool
    explicit: bool = False  # denied by a Deny statement (not only for want of an Allow)


@dataclass
class Role:
    """A function's role: its name (as its ARN names it) and its statements."""

    name: str
    statements: list[dict[str, Any]] = field(default_factory=list)
    known: bool = True
    why_unknown: str = ""
    _decisions: dict[tuple[str, str], Decision] = field(default_factory=dict, repr=False)

    def principal(self, function_name: str) -> str:
        """The ARN AWS names the function's calls by (its role assumed, the function as session)."""
        return f"arn:aws:sts::{ACCOUNT_ID}:assumed-role/{self.name}/{function_name}"

    def decide(self, action: str, resource: str) -> Decision:
        """IAM's answer for one call (remembered: the statements do not change while a stack runs)."""
        found = self._decisions.get((action, resource))
        if found is None:
            found = self._decisions[(action, resource)] = self._decide(action, resource)
        return found

    def _decide(self, action: str, resource: str) -> Decision:
        allowed = False
        for statement in self.statements:
            result = _evaluate(statement, action, resource)
            if result == PermissionResult.DENIED:
                return Decision(False, explicit=True)
            allowed = allowed or result == PermissionResult.PERMITTED
        return Decision(allowed)


def _evaluate(statement: dict[str, Any], action: str, resource: str) -> PermissionResult:
    """One statement on one call, by moto's evaluator, with what moto does not do done around it."""
    prepared = {"Effect": statement.get("Effect", "Allow")}
    for key in ("Action", "NotAction"):
        if key in statement:
            prepared[key] = [str(a).lower() for a in _listed(statement[key])]
    if "NotResource" in statement:
        if _matches_any(_listed(statement["NotResource"]), resource):
            return PermissionResult.NEUTRAL
        prepared["Resource"] = "*"
    else:
        prepared["Resource"] = [str(r) for r in _listed(statement.get("Resource", "*"))]
    if resource == "*" and prepared["Effect"] == "Allow":
        prepared["Resource"] = "*"  # a resource the stack cannot tell: allowed on any
    return IAMPolicyStatement(prepared).is_action_permitted(action.lower(), resource)


def _matches_any(patterns: list[Any], resource: str) -> bool:
    """Whether ``resource`` matches one of the patterns (moto's matching, through a statement)."""
    probe = IAMPolicyStatement({"Effect": "Allow", "Action": "*", "Resource": [str(p) for p in patterns]})
    return probe.is_action_permitted("any:action", resource) == PermissionResult.PERMITTED


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


class Roles:
    """The roles of a service's functions (see the module's docstring); ``resolve`` turns the
    statements' intrinsics (``!GetAtt Table.Arn``, ``!Sub``) into the local resources' ARNs."""

    def __init__(self, config: ServiceConfig, resolve: Callable[[Any], Any]) -> None:
        self.config = config
        self.resolve = resolve
        self.iam = mapping(mapping(config.provider.get("iam")).get("role"))

    def of(self, function: FunctionConfig) -> Role:
        role = function.setting("role")
        if role is not None:
            return self._named(role)
        if function.setting("iamRoleStatements") is not None:
            return self._per_function(function)
        provider_role = mapping(self.config.provider.get("iam")).get("role", self.config.provider.get("role"))
        if provider_role is not None and not isinstance(provider_role, dict):
            return self._named(provider_role)
        return self._framework_role(function)

    # --- a role resource ---------------------------------------------------------------------------

    def _named(self, role: Any) -> Role:
        logical = role if isinstance(role, str) and role in self.config.resources else target(role)
        resource = self.config.resources.get(str(logical)) if logical else None
        if resource is None or resource.get("Type") != "AWS::IAM::Role":
            return Role(str(role), known=False, why_unknown=f"role {role!r} is not declared in the file")
        properties = mapping(resource.get("Properties"))
        found = Role(str(properties.get("RoleName") or logical))
        for policy in properties.get("Policies") or []:
            found.statements += self._statements(mapping(policy).get("PolicyDocument"))
        self._managed(found, properties.get("ManagedPolicyArns") or [])
        found.statements += self._attached(str(logical))
        return found

    def _attached(self, role: str) -> list[dict[str, Any]]:
        """The statements of the ``AWS::IAM::Policy`` / ``ManagedPolicy`` resources naming ``role``."""
        found = []
        for resource in self.config.resources.values():
            properties = mapping(resource.get("Properties"))
            roles = [target(r) or r for r in properties.get("Roles") or []]
            if resource.get("Type") in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy") and role in roles:
                found += self._statements(properties.get("PolicyDocument"))
        return found

    def _managed(self, role: Role, arns: list[Any]) -> None:
        for arn in arns:
            declared = self.config.resources.get(str(target(arn)))
            if declared is not None and declared.get("Type") == "AWS::IAM::ManagedPolicy":
                role.statements += self._statements(mapping(declared.get("Properties")).get("PolicyDocument"))
                continue
            name = str(self.resolve(arn)).rsplit("/", 1)[-1]
            if name in MANAGED:
                role.statements += MANAGED[name]
            else:
                role.known = False
                role.why_unknown = (
                    f"managed policy {arn!r} is neither declared in the file nor one the stack knows"
                )

    def _statements(self, document: Any) -> list[dict[str, Any]]:
        statements = mapping(document).get("Statement") or []
        return [dict(mapping(self.resolve(s))) for s in _listed(statements)]

    # --- the framework's role and the per-function plugin's -------------------------------------------

    def _provider_statements(self) -> list[Any]:
        statements = self.iam.get("statements")
        return list(
            statements if statements is not None else self.config.provider.get("iamRoleStatements") or []
        )

    def _framework_role(self, function: FunctionConfig) -> Role:
        config = self.config
        role = Role(f"{config.service}-{config.stage}-{config.region}-lambdaRole")
        role.statements = self._base(function) + [
            dict(mapping(self.resolve(s))) for s in self._provider_statements()
        ]
        self._managed(role, list(self.iam.get("managedPolicies") or []))
        return role

    def _per_function(self, function: FunctionConfig) -> Role:
        config = self.config
        plugin = mapping(config.custom.get("serverless-iam-roles-per-function"))
        inherit = function.setting("iamRoleStatementsInherit", plugin.get("defaultInherit", False))
        role = Role(
            str(
                function.setting("iamRoleStatementsName")
                or f"{config.service}-{config.stage}-{function.key}-{config.region}-lambdaRole"
            )
        )
        statements = [
            *(self._provider_statements() if inherit else []),
            *function.setting("iamRoleStatements"),
        ]
        role.statements = self._base(function) + [dict(mapping(self.resolve(s))) for s in statements]
        if inherit:
            self._managed(role, list(self.iam.get("managedPolicies") or []))
        return role

    def _base(self, function: FunctionConfig) -> list[dict[str, Any]]:
        """The log statements and those for the function's SQS and stream events."""
        group = f"arn:aws:logs:{self.config.region}:{ACCOUNT_ID}:log-group:/aws/lambda/{function.name}"
        statements = [
            {"Effect": "Allow", "Action": ["logs:CreateLogStream", "logs:CreateLogGroup", "logs:TagResource"],
             "Resource": [f"{group}:*"]},
            {"Effect": "Allow", "Action": ["logs:PutLogEvents"], "Resource": [f"{group}:*:*"]},
        ]  # fmt: skip
        for event in function.events:
            arn = self.resolve(event.spec.get("arn"))
            if event.kind == "sqs" and isinstance(arn, str):
                statements += _allow(_SQS_READS, arn)
            elif event.kind == "stream" and isinstance(arn, str):
                kind = "kinesis" if ":kinesis:" in arn else "dynamodb"
                statements += _allow(_STREAM_READS[kind], arn)
        return statements
