"""The ``counter_table`` and ``idempotency_table`` pytest fixtures: ``from lambda_kit.testing import
counter_table`` (or ``idempotency_table``) in a ``conftest.py``. This module is imported only
then, so pytest stays the tests' dependency, not lambda_kit's.

The first test that asks for a counter table starts the session's DynamoDB (DynamoDB Local where
Java can run it, moto otherwise: :class:`DynamoDBForTests`), stopped when the session ends; each
test gets a fresh, empty table on it, deleted after the test. The table is ``counters`` unless a
fixture ``counter_table_name`` says otherwise (``idempotency``, and ``idempotency_table_name``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._counter_table import CounterTable, DynamoDBForTests
from ._idempotency_table import IdempotencyTable

DEFAULT_NAME = "counters"
DEFAULT_IDEMPOTENCY_NAME = "idempotency"
_SESSION_DYNAMODB = pytest.StashKey[DynamoDBForTests]()


def _session_dynamodb(config: pytest.Config) -> DynamoDBForTests:
    dynamodb = config.stash.get(_SESSION_DYNAMODB, None)
    if dynamodb is None:
        dynamodb = config.stash[_SESSION_DYNAMODB] = DynamoDBForTests(search_from=[config.rootpath]).start()
        config.add_cleanup(dynamodb.stop)
    return dynamodb


def _table_name(
    request: pytest.FixtureRequest, fixture: str = "counter_table_name", default: str = DEFAULT_NAME
) -> str:
    try:
        return str(request.getfixturevalue(fixture))
    except pytest.FixtureLookupError:
        return default


@pytest.fixture
def counter_table(request: pytest.FixtureRequest) -> Iterator[CounterTable]:
    """A fresh, empty counter table for this test, on the session's DynamoDB, with
    ``AWS_ENDPOINT_URL_DYNAMODB`` pointing at it: ``Counter(counter_table.name)`` counts there."""
    with CounterTable(_table_name(request), dynamodb=_session_dynamodb(request.config)) as table:
        yield table


@pytest.fixture
def idempotency_table(request: pytest.FixtureRequest) -> Iterator[IdempotencyTable]:
    """A fresh, empty idempotency table for this test, on the session's DynamoDB, with
    ``AWS_ENDPOINT_URL_DYNAMODB`` pointing at it: ``@idempotent(table=idempotency_table.name)`` uses it."""
    name = _table_name(request, "idempotency_table_name", DEFAULT_IDEMPOTENCY_NAME)
    with IdempotencyTable(name, dynamodb=_session_dynamodb(request.config)) as table:
        yield table
