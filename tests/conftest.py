"""Shared fixtures: moto's server on loopback (a real HTTP endpoint), boto3 pointed at it."""

from __future__ import annotations

import itertools
import os

# The tests read the INFO lines (record received/processed, masking): pinned before lambda_kit.log
# reads its level, so a LOG_LEVEL=ERROR in the caller's environment cannot make them pass vacuously.
for _variable in ("LAMBDA_KIT_LOG_LEVEL", "LOG_LEVEL", "AWS_LAMBDA_LOG_LEVEL"):
    os.environ[_variable] = "INFO"

import pytest  # noqa: E402

from lambda_kit.local.endpoint import Endpoint, aws_environment  # noqa: E402

_ids = itertools.count()


@pytest.fixture(scope="session")
def aws_endpoint():
    """moto's server on 127.0.0.1 (free port), with AWS_* variables set for the whole session."""
    endpoint = Endpoint().start()
    saved = {k: os.environ.get(k) for k in aws_environment(endpoint.url)}
    os.environ.update(aws_environment(endpoint.url))
    yield endpoint
    endpoint.stop()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture
def unique_name():
    """A fresh resource name per call (moto keeps state for the whole session)."""
    return lambda prefix="t": f"{prefix}-{os.getpid()}-{next(_ids)}"


@pytest.fixture
def dynamodb(aws_endpoint):
    import boto3

    return boto3.client("dynamodb", endpoint_url=aws_endpoint.url)


@pytest.fixture
def counter_table(dynamodb, unique_name):
    """A fresh single-table-design table (PK/SK, stream, TTL on ``ttl``) per test: moto copies a
    table on every transaction action, so small tables keep the tests fast."""
    name = unique_name("ViewStats")
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    dynamodb.update_time_to_live(
        TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"}
    )
    return name
