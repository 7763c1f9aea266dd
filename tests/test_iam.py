"""IAM as the calls need it: each AWS call a function makes on the local stack, recorded as the IAM
action and resource it is authorised as (``lambda_kit.local.aws_calls``), and the check of those
calls against a role in a CloudFormation template (``tests/_iam.py``; the soak's run against the
packaged example service is in tests/test_soak.py)."""

from __future__ import annotations

import textwrap

import boto3
import pytest
from _iam import check, justification
from _local_toys import toy_stack

from lambda_kit.local.aws_calls import iam_calls, recorded_calls, resource_ids

R = "us-east-1"
A = "123456789012"

MAPPED = [
    (
        "dynamodb",
        "TransactWriteItems",
        {
            "TransactItems": [
                {"Put": {"TableName": "t"}},
                {"Update": {"TableName": "t"}},
                {"ConditionCheck": {"TableName": "u"}},
            ]
        },
        [
            ("dynamodb:ConditionCheckItem", f"arn:aws:dynamodb:{R}:{A}:table/u"),
            ("dynamodb:PutItem", f"arn:aws:dynamodb:{R}:{A}:table/t"),
            ("dynamodb:UpdateItem", f"arn:aws:dynamodb:{R}:{A}:table/t"),
        ],
    ),
    (
        "dynamodb",
        "BatchGetItem",
        {"RequestItems": {"b": {}, "a": {}}},
        [
            ("dynamodb:BatchGetItem", f"arn:aws:dynamodb:{R}:{A}:table/a"),
            ("dynamodb:BatchGetItem", f"arn:aws:dynamodb:{R}:{A}:table/b"),
        ],
    ),
    (
        "dynamodb",
        "Query",
        {"TableName": "t", "IndexName": "by-day"},
        [("dynamodb:Query", f"arn:aws:dynamodb:{R}:{A}:table/t/index/by-day")],
    ),
    (
        "sqs",
        "SendMessageBatch",
        {"QueueUrl": "http://127.0.0.1:5000/123456789012/jobs"},
        [("sqs:SendMessage", f"arn:aws:sqs:{R}:{A}:jobs")],
    ),
    (
        "sqs",
        "DeleteMessageBatch",
        {"QueueUrl": "https://sqs.us-east-1.amazonaws.com/1/jobs"},
        [("sqs:DeleteMessage", f"arn:aws:sqs:{R}:{A}:jobs")],
    ),
    (
        "sns",
        "PublishBatch",
        {"TopicArn": f"arn:aws:sns:{R}:{A}:news"},
        [("sns:Publish", f"arn:aws:sns:{R}:{A}:news")],
    ),
    (
        "kinesis",
        "PutRecords",
        {"StreamName": "clicks"},
        [("kinesis:PutRecords", f"arn:aws:kinesis:{R}:{A}:stream/clicks")],
    ),
    (
        "kinesis",
        "PutRecord",
        {"StreamARN": f"arn:aws:kinesis:{R}:{A}:stream/c2"},
        [("kinesis:PutRecord", f"arn:aws:kinesis:{R}:{A}:stream/c2")],
    ),
    ("s3", "ListBuckets", {}, [("s3:ListBuckets", "*")]),
]


@pytest.mark.parametrize(
    "prefix, operation, params, expected", MAPPED, ids=[f"{p}:{o}" for p, o, _, _ in MAPPED]
)
def test_a_call_is_the_iam_actions_and_resources_it_is_authorised_as(prefix, operation, params, expected):
    assert iam_calls(prefix, operation, params, R) == expected


SERVICE = """
service: {service}
provider:
  name: aws
functions:
  writer:
    handler: iam_app.writer
    environment:
      JOBS_URL: !Ref Jobs
      TABLE: !Ref Items
resources:
  Resources:
    Jobs:
      Type: AWS::SQS::Queue
      Properties:
        QueueName: {service}-jobs
    Items:
      Type: AWS::DynamoDB::Table
      Properties:
        TableName: {service}-items
        BillingMode: PAY_PER_REQUEST
        AttributeDefinitions: [{{AttributeName: PK, AttributeType: S}}]
        KeySchema: [{{AttributeName: PK, KeyType: HASH}}]
"""

APP = """
import os

import boto3


def writer(event, context):
    boto3.client("sqs").send_message_batch(QueueUrl=os.environ["JOBS_URL"], \
Entries=[{"Id": "1", "MessageBody": "a"}])
    table = os.environ["TABLE"]
    boto3.client("dynamodb").transact_write_items(TransactItems=[
        {"Put": {"TableName": table, "Item": {"PK": {"S": "a"}}}},
        {"Update": {"TableName": table, "Key": {"PK": {"S": "b"}}, "UpdateExpression": "SET n = :one", \
"ExpressionAttributeValues": {":one": {"N": "1"}}}},
    ])
    return "ok"
"""


def test_the_stack_records_each_functions_calls_and_only_theirs(tmp_path, aws_endpoint, unique_name):
    service = unique_name("iam")
    with toy_stack(
        tmp_path, SERVICE.format(service=service), {"iam_app": APP}, aws_endpoint.url, iam=False
    ) as stack:
        assert stack.invoke("writer", {}).response == "ok"
        boto3.client("sqs", region_name=R).get_queue_url(QueueName=f"{service}-jobs")  # not a function's call
        ids = resource_ids(stack.resources, stack.region)
        calls = stack.calls.by_function()
    assert calls == {
        "writer": {
            "sqs:SendMessage": {f"arn:aws:sqs:{R}:{A}:{service}-jobs": 1},
            "dynamodb:PutItem": {f"arn:aws:dynamodb:{R}:{A}:table/{service}-items": 1},
            "dynamodb:UpdateItem": {f"arn:aws:dynamodb:{R}:{A}:table/{service}-items": 1},
        }
    }
    assert ids == {
        f"arn:aws:sqs:{R}:{A}:{service}-jobs": "Jobs.Arn",
        f"arn:aws:dynamodb:{R}:{A}:table/{service}-items": "Items.Arn",
    }
    # written when the stack stopped, for `lambda-kit check`: the framework's role grants none of them
    recorded = recorded_calls(stack.calls_path)
    assert {(c.action, c.calls, c.allowed) for c in recorded} == {
        ("sqs:SendMessage", 1, False),
        ("dynamodb:PutItem", 1, False),
        ("dynamodb:UpdateItem", 1, False),
    }


# --- the check against a template ---------------------------------------------------------------

TEMPLATE = {
    "Resources": {
        "WorkerLambdaFunction": {
            "Type": "AWS::Lambda::Function",
            "Properties": {"FunctionName": "svc-dev-worker", "Role": {"Fn::GetAtt": ["WorkerRole", "Arn"]}},
        },
        "Jobs": {"Type": "AWS::SQS::Queue"},
        "JobsDLQ": {"Type": "AWS::SQS::Queue"},
        "Items": {"Type": "AWS::DynamoDB::Table"},
        "News": {"Type": "AWS::SNS::Topic"},
        "WorkerMapping": {
            "Type": "AWS::Lambda::EventSourceMapping",
            "Properties": {
                "FunctionName": {"Ref": "WorkerLambdaFunction"},
                "EventSourceArn": {"Fn::GetAtt": ["Jobs", "Arn"]},
            },
        },
        "WorkerRole": {
            "Type": "AWS::IAM::Role",
            "Properties": {
                "Policies": [
                    {
                        "PolicyDocument": {
                            "Statement": [
                                {
                                    "Effect": "Allow",
                                    "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                                    "Resource": {
                                        "Fn::Sub": (
                                            "arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}"
                                            ":log-group:/aws/lambda/svc-dev-worker:*"
                                        )
                                    },
                                },
                                {
                                    "Effect": "Allow",
                                    "Action": [
                                        "sqs:ReceiveMessage",
                                        "sqs:DeleteMessage",
                                        "sqs:GetQueueAttributes",
                                    ],
                                    "Resource": {"Fn::GetAtt": ["Jobs", "Arn"]},
                                },
                                {
                                    "Effect": "Allow",
                                    "Action": ["dynamodb:PutItem", "dynamodb:BatchGetItem"],
                                    "Resource": {"Fn::GetAtt": ["Items", "Arn"]},
                                },
                                {"Effect": "Allow", "Action": "sns:Publish", "Resource": {"Ref": "News"}},
                            ]
                        }
                    }
                ]
            },
        },
    }
}

SERVERLESS_YML = """
resources:
  Resources:
    WorkerRole:
      Type: AWS::IAM::Role
      Properties:
        Policies:
          - PolicyDocument:
              Statement:
                - Effect: Allow
                  Action: [logs:CreateLogStream, logs:PutLogEvents]
                  Resource: x
                - Effect: Allow
                  Action: [sqs:ReceiveMessage, sqs:DeleteMessage, sqs:GetQueueAttributes]
                  Resource: x
                # {items_comment}
                - Effect: Allow
                  Action: [dynamodb:PutItem, dynamodb:BatchGetItem]
                  Resource: x
                - Effect: Allow
                  Action: sns:Publish
                  Resource: x
    OtherRole:
      Type: AWS::IAM::Role
"""

ITEMS = "arn:aws:dynamodb:us-east-1:123456789012:table/items"
NEWS = "arn:aws:sns:us-east-1:123456789012:news"
IDS = {ITEMS: "Items.Arn", NEWS: "News.Arn"}


def _check(calls, comment="the item write"):
    [finding] = check(
        TEMPLATE, SERVERLESS_YML.format(items_comment=comment), {"worker": calls}, IDS, ["worker"]
    )
    return finding


def test_calls_within_the_role_and_every_grant_needed_pass():
    finding = _check(
        {"dynamodb:PutItem": {ITEMS: 3}, "sns:Publish": {NEWS: 1}},
        comment="PutItem; BatchGetItem when duplicates are frequent",
    )
    assert finding.not_granted == [] and finding.unjustified == set()
    assert finding.used == {("dynamodb:PutItem", "Items.Arn"), ("sns:Publish", "News.Arn")}
    assert {a for a, _ in finding.by_lambda} == {
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:GetQueueAttributes",
        "logs:CreateLogStream",
        "logs:PutLogEvents",
    }
    assert finding.justified == {
        ("dynamodb:BatchGetItem", "Items.Arn"): "PutItem; BatchGetItem when duplicates are frequent"
    }


def test_a_call_the_role_does_not_grant_is_found():
    finding = _check(
        {"dynamodb:UpdateItem": {ITEMS: 1}, "sns:Publish": {"arn:aws:sns:us-east-1:123456789012:other": 1}}
    )
    assert finding.not_granted == [
        ("dynamodb:UpdateItem", ITEMS, "Items.Arn"),
        (
            "sns:Publish",
            "arn:aws:sns:us-east-1:123456789012:other",
            "arn:aws:sns:us-east-1:123456789012:other",
        ),
    ]


def test_a_grant_no_call_used_needs_a_comment_naming_it():
    finding = _check(
        {"dynamodb:PutItem": {ITEMS: 1}}
    )  # the comment names neither action; sns:Publish has none
    assert finding.unjustified == {("dynamodb:BatchGetItem", "Items.Arn"), ("sns:Publish", "News.Arn")}


def test_a_comment_belongs_to_the_statement_right_below_it():
    text = SERVERLESS_YML.format(items_comment="BatchGetItem: duplicates")
    assert justification(text, "WorkerRole", "dynamodb:BatchGetItem") == "BatchGetItem: duplicates"
    assert justification(text, "WorkerRole", "sns:Publish") is None
    assert justification(text, "OtherRole", "dynamodb:BatchGetItem") is None
    assert justification(textwrap.dedent(text), "NoRole", "sns:Publish") is None


# --- each function's role, as the local stack reads and evaluates it -----------------------------------

ROLES = """
service: roles
provider:
  name: aws
  iam:
    role:
      statements:
        - Effect: Allow
          Action: sqs:SendMessage
          Resource: arn:aws:sqs:us-east-1:123456789012:shared
functions:
  framework:
    handler: app.handler
  custom:
    handler: app.handler
    role: CustomRole
  managed:
    handler: app.handler
    role: ManagedRole
  outside:
    handler: app.handler
    role: arn:aws:iam::123456789012:role/made-elsewhere
  own:
    handler: app.handler
    iamRoleStatementsInherit: true
    iamRoleStatements:
      - Effect: Allow
        Action: sns:Publish
        Resource: "*"
resources:
  Resources:
    CustomRole:
      Type: AWS::IAM::Role
      Properties:
        RoleName: the-custom-role
        Policies:
          - PolicyName: p
            PolicyDocument:
              Statement:
                - Effect: Allow
                  Action: dynamodb:*
                  Resource: arn:aws:dynamodb:us-east-1:123456789012:table/*
                  Condition: {StringEquals: {"aws:RequestedRegion": eu-west-1}}
                - Effect: Deny
                  Action: dynamodb:DeleteItem
                  Resource: "*"
                - Effect: Allow
                  NotAction: [iam:*, dynamodb:*]
                  NotResource: arn:aws:sqs:us-east-1:123456789012:secret
    ExtraPolicy:
      Type: AWS::IAM::Policy
      Properties:
        Roles: [!Ref CustomRole]
        PolicyDocument:
          Statement:
            - Effect: Allow
              Action: kinesis:PutRecord
              Resource: arn:aws:kinesis:us-east-1:123456789012:stream/s
    ManagedRole:
      Type: AWS::IAM::Role
      Properties:
        ManagedPolicyArns:
          - arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole
          - arn:aws:iam::123456789012:policy/someone-elses
"""

TABLE = "arn:aws:dynamodb:us-east-1:123456789012:table/t"


@pytest.fixture
def roles(tmp_path):
    from lambda_kit.local.config import load_service
    from lambda_kit.local.iam_policy import Roles

    (tmp_path / "serverless.yml").write_text(ROLES, encoding="utf-8")
    config = load_service(tmp_path / "serverless.yml")
    return {
        key: Roles(config, lambda value: value).of(function) for key, function in config.functions.items()
    }


def test_the_frameworks_role_has_the_providers_statements_and_the_log_ones(roles):
    role = roles["framework"]
    assert role.name == "roles-dev-us-east-1-lambdaRole" and role.known
    assert role.decide("sqs:SendMessage", "arn:aws:sqs:us-east-1:123456789012:shared").allowed
    assert not role.decide("sqs:SendMessage", "arn:aws:sqs:us-east-1:123456789012:other").allowed
    group = "arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/roles-dev-framework"
    assert role.decide("logs:PutLogEvents", f"{group}:stream:x").allowed
    assert not role.decide(
        "logs:PutLogEvents", "arn:aws:logs:us-east-1:123456789012:log-group:/other:s:x"
    ).allowed
    assert role.principal("roles-dev-framework") == (
        "arn:aws:sts::123456789012:assumed-role/roles-dev-us-east-1-lambdaRole/roles-dev-framework"
    )


def test_a_role_resource_its_attached_policies_deny_wildcards_and_not_elements(roles):
    role = roles["custom"]
    assert role.name == "the-custom-role"
    assert role.decide("dynamodb:PutItem", TABLE).allowed  # its Condition is not evaluated
    assert role.decide("DynamoDB:putitem", TABLE).allowed  # actions match regardless of case
    denied = role.decide("dynamodb:DeleteItem", TABLE)
    assert (denied.allowed, denied.explicit) == (False, True)  # an explicit Deny wins
    assert role.decide("kinesis:PutRecord", "arn:aws:kinesis:us-east-1:123456789012:stream/s").allowed
    assert role.decide("sns:Publish", "arn:aws:sns:us-east-1:123456789012:news").allowed  # NotAction
    assert not role.decide("sqs:SendMessage", "arn:aws:sqs:us-east-1:123456789012:secret").allowed
    assert not role.decide("iam:PassRole", "*").allowed
    implicit = role.decide("iam:GetRole", "x")
    assert (implicit.allowed, implicit.explicit) == (False, False)


def test_managed_policies_aws_defines_are_read_and_others_make_the_role_unknown(roles):
    assert roles["managed"].decide("logs:CreateLogStream", "arn:aws:logs:us-east-1:123456789012:x").allowed
    assert not roles["managed"].known and "someone-elses" in roles["managed"].why_unknown
    assert not roles["outside"].known and "not declared" in roles["outside"].why_unknown


def test_per_function_statements_with_the_providers_inherited(roles):
    role = roles["own"]
    assert role.decide("sns:Publish", "arn:aws:sns:us-east-1:123456789012:news").allowed
    assert role.decide("sqs:SendMessage", "arn:aws:sqs:us-east-1:123456789012:shared").allowed
    # a call whose resource the stack cannot tell: allowed when the action is allowed somewhere
    assert role.decide("sqs:SendMessage", "*").allowed and not role.decide("sqs:DeleteQueue", "*").allowed
