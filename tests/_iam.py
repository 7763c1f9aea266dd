"""IAM proven by the calls: the AWS calls each function made on the local stack (recorded by
``lambda_kit.local.aws_calls``) against that function's role in the packaged CloudFormation template.

A call is allowed when the role grants its action on its resource. A grant is needed when a
recorded call used it, when Lambda itself uses it with the function's role (the event source
mapping's reads, an on-failure destination, the function's log group: ``lambda_side``), or when a
comment right above its statement in serverless.yml names the action (a code path the run did not
take, said where the grant is).

Resources are compared as the template names them, ``LogicalId.Attribute`` (``ViewsQueue.Arn``,
``ViewStatsTable.StreamArn``; an SNS topic's ``Ref`` is its ARN, so ``MilestonesTopic.Arn``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

# What an event source mapping does with the function's role (the actions of AWS's
# AWSLambdaSQSQueueExecutionRole, AWSLambdaKinesisExecutionRole, AWSLambdaDynamoDBExecutionRole
# that the mapping needs), by the type of the resource the mapping reads.
MAPPING_READS = {
    "AWS::SQS::Queue": ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"),
    "AWS::Kinesis::Stream": (
        "kinesis:DescribeStream",
        "kinesis:DescribeStreamSummary",
        "kinesis:GetRecords",
        "kinesis:GetShardIterator",
        "kinesis:ListShards",
    ),
    "AWS::DynamoDB::Table": (
        "dynamodb:DescribeStream",
        "dynamodb:GetRecords",
        "dynamodb:GetShardIterator",
        "dynamodb:ListStreams",
    ),
}
LOG_ACTIONS = ("logs:CreateLogStream", "logs:PutLogEvents")

Grant = tuple[str, str]  # (IAM action, resource as the template names it)


def function_id(key: str) -> str:
    """The framework's logical id of a function (``counter`` -> ``CounterLambdaFunction``)."""
    return key[0].upper() + key[1:].replace("-", "Dash").replace("_", "Underscore") + "LambdaFunction"


def resource_name(value: Any, resources: dict[str, Any]) -> str:
    """``LogicalId.Attribute`` for a Ref / GetAtt; anything else (a Sub'd ARN) as sorted JSON."""
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        logical, attribute = (
            value["Fn::GetAtt"]
            if isinstance(value["Fn::GetAtt"], list)
            else value["Fn::GetAtt"].split(".", 1)
        )
        return f"{logical}.{attribute}"
    if isinstance(value, dict) and "Ref" in value:
        kind = resources.get(value["Ref"], {}).get("Type")
        return f"{value['Ref']}.Arn" if kind == "AWS::SNS::Topic" else f"{value['Ref']}.Ref"
    return json.dumps(value, sort_keys=True)


def role_id(template: dict[str, Any], key: str) -> str:
    role = template["Resources"][function_id(key)]["Properties"]["Role"]
    return role["Fn::GetAtt"][0] if isinstance(role, dict) else str(role)


def grants(template: dict[str, Any], key: str) -> set[Grant]:
    resources = template["Resources"]
    found: set[Grant] = set()
    for policy in resources[role_id(template, key)]["Properties"].get("Policies", []):
        for statement in policy["PolicyDocument"]["Statement"]:
            assert statement["Effect"] == "Allow", statement
            for action in as_list(statement["Action"]):
                for resource in as_list(statement["Resource"]):
                    found.add((action, resource_name(resource, resources)))
    return found


def lambda_side(template: dict[str, Any], key: str) -> set[Grant]:
    """What Lambda does with the function's role, from the template's wiring."""
    resources = template["Resources"]
    function = function_id(key)
    used: set[Grant] = set()
    for resource in resources.values():
        properties = resource.get("Properties", {})
        if resource["Type"] not in ("AWS::Lambda::EventSourceMapping", "AWS::Lambda::EventInvokeConfig"):
            continue
        if target(properties.get("FunctionName")) != function:
            continue
        source = properties.get("EventSourceArn")
        if source is not None:
            kind = resources[target(source)]["Type"]
            used |= {(action, resource_name(source, resources)) for action in MAPPING_READS[kind]}
        destination = (properties.get("DestinationConfig") or {}).get("OnFailure", {}).get("Destination")
        if destination is not None:
            used.add(("sqs:SendMessage", resource_name(destination, resources)))
    name = resources[function]["Properties"]["FunctionName"]
    for action, resource in grants(template, key):
        if action in LOG_ACTIONS and f":log-group:/aws/lambda/{name}:*" in resource:
            used.add((action, resource))
    return used


def justification(serverless_yml: str, role: str, action: str) -> str | None:
    """The comment right above the statement of ``role`` in serverless.yml that grants ``action``,
    if it names the action's operation (``dynamodb:BatchGetItem`` -> ``BatchGetItem``)."""
    lines = serverless_yml.splitlines()
    start = next(
        (i for i, line in enumerate(lines) if re.fullmatch(rf"\s*{re.escape(role)}:\s*", line)), None
    )
    if start is None:
        return None
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = next(
        (
            i
            for i in range(start + 1, len(lines))
            if lines[i].strip() and len(lines[i]) - len(lines[i].lstrip()) <= indent
        ),
        len(lines),
    )
    statements = [i for i in range(start, end) if re.match(r"\s*- Effect:", lines[i])] + [end]
    for first, after in zip(statements, statements[1:], strict=False):
        if not re.search(rf"(?<![\w:]){re.escape(action)}(?!\w)", "\n".join(lines[first:after])):
            continue
        comment = []
        above = first - 1
        while above > start and lines[above].strip().startswith("#"):
            comment.insert(0, lines[above].strip().lstrip("#").strip())
            above -= 1
        text = " ".join(comment)
        return text if re.search(rf"\b{re.escape(action.split(':', 1)[1])}\b", text) else None
    return None


@dataclass
class Finding:
    function: str
    not_granted: list[tuple[str, str, str]] = field(default_factory=list)  # (action, resource ARN, as named)
    used: set[Grant] = field(default_factory=set)
    by_lambda: set[Grant] = field(default_factory=set)
    justified: dict[Grant, str] = field(default_factory=dict)
    unjustified: set[Grant] = field(default_factory=set)


def check(
    template: dict[str, Any],
    serverless_yml: str,
    calls: dict[str, dict[str, dict[str, int]]],
    resource_ids: dict[str, str],
    functions: list[str],
) -> list[Finding]:
    """Each function's recorded ``calls`` ({action: {resource ARN: count}}) against its role;
    ``resource_ids`` names each ARN as the template does (``aws_calls.resource_ids``)."""
    findings = []
    for key in functions:
        granted = grants(template, key)
        finding = Finding(key)
        for action, arns in (calls.get(key) or {}).items():
            for arn in arns:
                named = resource_ids.get(arn, arn)
                if (action, named) in granted:
                    finding.used.add((action, named))
                else:
                    finding.not_granted.append((action, arn, named))
        finding.by_lambda = lambda_side(template, key) & granted
        role = role_id(template, key)
        for grant in sorted(granted - finding.used - finding.by_lambda):
            why = justification(serverless_yml, role, grant[0])
            if why is None:
                finding.unjustified.add(grant)
            else:
                finding.justified[grant] = why
        findings.append(finding)
    return findings


def target(value: Any) -> str | None:
    """Logical id referenced by a Ref / GetAtt value."""
    if isinstance(value, dict):
        if "Ref" in value:
            return value["Ref"]
        if "Fn::GetAtt" in value:
            return value["Fn::GetAtt"][0]
    return None


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]
