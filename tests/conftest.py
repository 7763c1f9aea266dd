"""Shared fixtures: real endpoints on loopback, boto3 pointed at them for the whole session.

DynamoDB and DynamoDB Streams are AWS's DynamoDB Local (started once per test process); SQS, SNS,
Kinesis and the rest are moto's server. Where DynamoDB Local cannot run (no Java, no
``npm ci``, or ``LAMBDA_KIT_DYNAMODB_LOCAL=off``), moto serves DynamoDB too, the tests that need
DynamoDB Local's own behaviour are skipped, and the report header says why.
"""

from __future__ import annotations

import itertools
import os
import time

# The tests read the INFO lines (record received/processed, masking): pinned before lambda_kit.log
# reads its level, so a LOG_LEVEL=ERROR in the caller's environment cannot make them pass vacuously.
for _variable in ("LAMBDA_KIT_LOG_LEVEL", "LOG_LEVEL", "AWS_LAMBDA_LOG_LEVEL"):
    os.environ[_variable] = "INFO"

import pytest  # noqa: E402

from lambda_kit.local.dynamodb_local import DynamoDBLocal, DynamoDBLocalUnavailable, find_installation  # noqa: E402
from lambda_kit.local.endpoint import Endpoint, aws_environment  # noqa: E402
from lambda_kit.testing import create_counter_table  # noqa: E402

_ids = itertools.count()

# The suites that drive whole processes: the local stack, the wheel in a fresh venv, serverless
# package, the docs' examples, the soak. `make test` runs them; `pytest -m "not slow"` leaves them out.
SLOW_MODULES = {
    "test_deploy",
    "test_docs",
    "test_docs_eventbridge_s3",
    "test_docs_tracing",
    "test_dynamodb_local",
    "test_handlers",
    "test_iam",
    "test_local_clients",
    "test_local_e2e",
    "test_local_eventbridge",
    "test_local_gateway",
    "test_local_lambda",
    "test_local_load",
    "test_local_s3",
    "test_local_sns",
    "test_local_sqs",
    "test_local_streams",
    "test_moto_patches",
    "test_moto_process",
    "test_scaffold",
    "test_service_load",
    "test_soak",
    "test_tracing_e2e",
    "test_wheel",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.module is not None and item.module.__name__.rpartition(".")[2] in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


def pytest_report_header(config: pytest.Config) -> str:
    try:
        found = find_installation()
    except DynamoDBLocalUnavailable as reason:
        return f"DynamoDB: moto's (DynamoDB Local cannot run: {reason})"
    return f"DynamoDB: DynamoDB Local ({found.jar.parent.name}, {found.java})"


@pytest.fixture(scope="session")
def dynamodb_local():
    """AWS's DynamoDB Local on a free loopback port for the session, or None where it cannot run."""
    try:
        server = DynamoDBLocal().start()
    except DynamoDBLocalUnavailable:
        yield None
        return
    yield server
    server.stop()


@pytest.fixture
def require_dynamodb_local(dynamodb_local) -> DynamoDBLocal:
    """DynamoDB Local, or the test is skipped where it cannot run (moto cannot stand in for it)."""
    if dynamodb_local is None:
        pytest.skip("DynamoDB Local cannot run here (see the report header)")
    return dynamodb_local


@pytest.fixture(scope="session")
def aws_endpoint(dynamodb_local):
    """moto's server on 127.0.0.1 (free port), with AWS_* variables set for the whole session:
    ``AWS_ENDPOINT_URL`` is moto, ``AWS_ENDPOINT_URL_DYNAMODB(_STREAMS)`` DynamoDB Local."""
    endpoint = Endpoint(dynamodb=dynamodb_local is None).start()
    environment = aws_environment(endpoint.url, dynamodb_url=dynamodb_local.url if dynamodb_local else None)
    saved = {k: os.environ.get(k) for k in environment}
    os.environ.update(environment)
    yield endpoint
    endpoint.stop()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture
def dynamodb_url(aws_endpoint) -> str:
    """Where the session's DynamoDB is (DynamoDB Local, or moto where it cannot run)."""
    return os.environ["AWS_ENDPOINT_URL_DYNAMODB"]


@pytest.fixture
def unique_name():
    """A fresh resource name per call (the endpoints keep state for the whole session)."""
    return lambda prefix="t": f"{prefix}-{os.getpid()}-{next(_ids)}"


def make_counter_table(dynamodb, name: str) -> str:
    """A single-table-design table (PK/SK, stream, TTL on ``ttl``) named ``name``."""
    return create_counter_table(dynamodb, name)


@pytest.fixture
def dynamodb(dynamodb_url):
    import boto3

    return boto3.client("dynamodb", endpoint_url=dynamodb_url)


@pytest.fixture
def counter_table(dynamodb, unique_name):
    """A fresh single-table-design table per test (small tables keep moto fast where it serves)."""
    return make_counter_table(dynamodb, unique_name("ViewStats"))


@pytest.fixture(scope="session")
def packaged(tmp_path_factory):
    """`serverless package` of the example service, once per test run (tests/_packaging.py)."""
    from _packaging import packaged as package_once

    return package_once(tmp_path_factory.mktemp("packaged"))


@pytest.fixture
def new_york_local_time():
    """The process's local time zone set to America/New_York (UTC-4/-5) for one test: what the
    counters store in UTC must not depend on it."""
    saved = os.environ.get("TZ")
    os.environ["TZ"] = "America/New_York"
    time.tzset()
    yield
    if saved is None:
        os.environ.pop("TZ")
    else:
        os.environ["TZ"] = saved
    time.tzset()
