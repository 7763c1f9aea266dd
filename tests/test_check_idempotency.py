"""`lambda-kit check` on the tables of `@idempotent` functions: key schema, TTL, the role's grants."""

from __future__ import annotations

import copy
import textwrap

import pytest
import yaml

from lambda_kit.cli import check
from tests._local_toys import vendor_lambda_kit

HANDLER = textwrap.dedent(
    """
    import os

    from lambda_kit import sqs_handler
    from lambda_kit.idempotency import idempotent


    @sqs_handler
    @idempotent(key="order_id", table=os.environ["IDEMPOTENCY_TABLE"])
    def handler(order, context):
        return order
    """
)
HELPER = textwrap.dedent(
    """
    from lambda_kit.idempotency import idempotent


    @idempotent(key="to", table="${self:service}-emails")
    def send_email(message):
        return "sent"
    """
)
TABLE = {
    "Type": "AWS::DynamoDB::Table",
    "Properties": {
        "TableName": "${self:service}-idempotency",
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
        "KeySchema": [
            {"AttributeName": "PK", "KeyType": "HASH"},
            {"AttributeName": "SK", "KeyType": "RANGE"},
        ],
        "TimeToLiveSpecification": {"AttributeName": "ttl", "Enabled": True},
    },
}
ROLE = {
    "Type": "AWS::IAM::Role",
    "Properties": {
        "AssumeRolePolicyDocument": {"Version": "2012-10-17", "Statement": []},
        "Policies": [
            {
                "PolicyName": "orders",
                "PolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Action": ["dynamodb:PutItem", "dynamodb:DeleteItem"],
                            "Resource": {"Fn::GetAtt": ["IdempotencyTable", "Arn"]},
                        }
                    ],
                },
            }
        ],
    },
}
SERVICE = {
    "service": "shop",
    "provider": {"name": "aws", "runtime": "python3.12"},
    "functions": {
        "orders": {
            "handler": "handlers/orders.handler",
            "role": "OrdersRole",
            "environment": {"IDEMPOTENCY_TABLE": {"Ref": "IdempotencyTable"}},
            "events": [
                {
                    "sqs": {
                        "arn": {"Fn::GetAtt": ["Orders", "Arn"]},
                        "functionResponseType": "ReportBatchItemFailures",
                    }
                }
            ],
        }
    },
    "resources": {
        "Resources": {
            "IdempotencyTable": TABLE,
            "OrdersRole": ROLE,
            "Orders": {
                "Type": "AWS::SQS::Queue",
                "Properties": {
                    "VisibilityTimeout": 60,
                    "RedrivePolicy": {
                        "deadLetterTargetArn": {"Fn::GetAtt": ["OrdersDLQ", "Arn"]},
                        "maxReceiveCount": 3,
                    },
                },
            },
            "OrdersDLQ": {"Type": "AWS::SQS::Queue", "Properties": {}},
        }
    },
}


WHY = (
    "lambda_kit.idempotency claims and completes with PutItem and releases a failed call's claim "
    "with DeleteItem"
)


def findings(tmp_path, service: dict, handler: str = HANDLER) -> list[str]:
    (tmp_path / "handlers").mkdir(exist_ok=True)
    (tmp_path / "handlers" / "__init__.py").write_text("")
    (tmp_path / "handlers" / "orders.py").write_text(handler)
    (tmp_path / "serverless.yml").write_text(yaml.safe_dump(service))
    vendor_lambda_kit(tmp_path)  # the zip holds lambda_kit, as a service's does
    return [str(finding) for finding in check.check(tmp_path / "serverless.yml")]


def changed(edit) -> dict:
    service = copy.deepcopy(SERVICE)
    edit(service)
    return service


def resources(service: dict) -> dict:
    return service["resources"]["Resources"]


def statement(service: dict) -> dict:
    return resources(service)["OrdersRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"][0]


def test_a_table_with_its_key_schema_ttl_and_grants_is_clean(tmp_path):
    assert findings(tmp_path, SERVICE) == []


def test_a_key_schema_other_than_pk_and_sk_is_an_error(tmp_path):
    def edit(service):
        properties = resources(service)["IdempotencyTable"]["Properties"]
        properties["AttributeDefinitions"] = [{"AttributeName": "id", "AttributeType": "S"}]
        properties["KeySchema"] = [{"AttributeName": "id", "KeyType": "HASH"}]

    assert findings(tmp_path, changed(edit)) == [
        "error: orders: idempotency table IdempotencyTable has key schema id (HASH, S): "
        "lambda_kit.idempotency needs PK (S, HASH) and SK (S, RANGE)"
    ]


def test_a_table_without_ttl_on_ttl_is_a_warning(tmp_path):
    def edit(service):
        resources(service)["IdempotencyTable"]["Properties"]["TimeToLiveSpecification"]["AttributeName"] = (
            "expires"
        )

    [finding] = findings(tmp_path, changed(edit))
    assert finding.startswith("warning: orders: idempotency table IdempotencyTable has no TTL on ttl")


@pytest.mark.parametrize(
    ("action", "resource", "missing"),
    [
        (["dynamodb:PutItem"], {"Fn::GetAtt": ["IdempotencyTable", "Arn"]}, "dynamodb:DeleteItem"),
        (
            ["dynamodb:GetItem"],
            {"Fn::GetAtt": ["IdempotencyTable", "Arn"]},
            "dynamodb:PutItem and dynamodb:DeleteItem",
        ),
        (["dynamodb:*"], {"Fn::GetAtt": ["OtherTable", "Arn"]}, "dynamodb:PutItem and dynamodb:DeleteItem"),
        (
            ["dynamodb:*"],
            {"Fn::GetAtt": ["IdempotencyTable", "StreamArn"]},
            "dynamodb:PutItem and dynamodb:DeleteItem",
        ),
    ],
    ids=["no_delete", "other_action", "other_table", "the_stream"],
)
def test_a_role_that_does_not_grant_the_writes_is_an_error(tmp_path, action, resource, missing):
    def edit(service):
        statement(service).update(Action=action, Resource=resource)

    assert findings(tmp_path, changed(edit)) == [
        f"error: orders: its role does not grant {missing} on idempotency table IdempotencyTable: " + WHY
    ]


@pytest.mark.parametrize(
    "resource",
    [
        "*",
        {"Fn::Sub": "${IdempotencyTable.Arn}"},
        "arn:aws:dynamodb:us-east-1:123456789012:table/${self:service}-*",
    ],
    ids=["star", "sub", "pattern"],
)
def test_grants_by_wildcard_sub_or_arn_pattern_count(tmp_path, resource):
    def edit(service):
        statement(service).update(Action="dynamodb:*", Resource=resource)

    assert findings(tmp_path, changed(edit)) == []


def test_the_providers_statements_are_the_role_without_a_role_of_its_own(tmp_path):
    def edit(service):
        del service["functions"]["orders"]["role"]
        service["provider"]["iam"] = {"role": {"statements": [copy.deepcopy(statement(service))]}}

    assert findings(tmp_path, changed(edit)) == []

    def without_grants(service):
        del service["functions"]["orders"]["role"]

    assert findings(tmp_path, changed(without_grants))[0].startswith(
        "error: orders: its role does not grant dynamodb:PutItem and dynamodb:DeleteItem"
    )


def test_an_imported_helper_is_checked_and_a_table_not_declared_is_a_warning(tmp_path):
    (tmp_path / "handlers").mkdir()
    (tmp_path / "handlers" / "emails.py").write_text(HELPER)
    handler = HANDLER.replace(
        "from lambda_kit.idempotency import idempotent",
        "from lambda_kit.idempotency import idempotent\nfrom handlers.emails import send_email  # noqa: F401",
    )
    assert findings(tmp_path, SERVICE, handler) == [
        "warning: orders: idempotency table '${self:service}-emails' is not among serverless.yml's "
        "resources: its key schema, TTL and the role's permissions are not checked"
    ]
    named = changed(
        lambda s: resources(s).__setitem__(
            "Emails",
            {
                **copy.deepcopy(TABLE),
                "Properties": {**TABLE["Properties"], "TableName": "${self:service}-emails"},
            },
        )
    )
    assert findings(tmp_path, named, handler) == [
        "error: orders: its role does not grant dynamodb:PutItem and dynamodb:DeleteItem on idempotency "
        "table Emails: " + WHY
    ]


def test_at_commit_without_a_commit_is_an_error(tmp_path):
    at_commit = HANDLER.replace(
        'table=os.environ["IDEMPOTENCY_TABLE"])', 'table=os.environ["IDEMPOTENCY_TABLE"], at_commit=True)'
    )
    assert findings(tmp_path, SERVICE, at_commit) == [
        "error: orders: @idempotent(at_commit=True) under @sqs_handler without commit=: its calls' writes "
        "wait for the batch's commit, which never runs; give it commit=complete_batch"
    ]
    committed = at_commit.replace("@sqs_handler\n", "@sqs_handler(commit=complete_batch)\n").replace(
        "import idempotent", "import complete_batch, idempotent"
    )
    assert findings(tmp_path, SERVICE, committed) == []
