"""lambda_kit.testing's counter table, as a user's tests use it: ``CounterTable`` (a context manager)
on DynamoDB Local and on moto's server, and the ``counter_table`` pytest fixture in a project of its
own, run by pytest in a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import EndpointConnectionError

from lambda_kit.counters import Counter
from lambda_kit.local.dynamodb_local import DynamoDBLocalUnavailable, find_installation
from lambda_kit.testing import CounterTable, DynamoDBForTests, create_counter_table


def dynamodb_local_or_skip() -> None:
    try:
        find_installation()
    except DynamoDBLocalUnavailable as reason:
        pytest.skip(f"DynamoDB Local cannot run here: {reason}")


def answers(url: str) -> bool:
    client = boto3.client(
        "dynamodb",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"total_max_attempts": 1}, connect_timeout=2),
    )
    try:
        client.list_tables()
    except EndpointConnectionError:
        return False
    return True


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_a_counter_table_on_dynamodb_local_is_where_counter_counts_and_leaves_nothing_behind(monkeypatch):
    dynamodb_local_or_skip()
    for name in [name for name in os.environ if name.startswith("AWS_")]:
        monkeypatch.delenv(name)  # a fresh terminal: nothing points boto3 anywhere
    before = dict(os.environ)
    name = unique("ViewStats")
    with CounterTable(name) as table:
        assert table.backend == "DynamoDB Local"
        described = table.client.describe_table(TableName=name)["Table"]
        assert described["KeySchema"] == [
            {"AttributeName": "PK", "KeyType": "HASH"},
            {"AttributeName": "SK", "KeyType": "RANGE"},
        ]
        types = {a["AttributeName"]: a["AttributeType"] for a in described["AttributeDefinitions"]}
        assert types == {"PK": "S", "SK": "S"}
        ttl = table.client.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        assert ttl["AttributeName"] == "ttl" and ttl["TimeToLiveStatus"] == "ENABLED"
        assert os.environ["AWS_ENDPOINT_URL_DYNAMODB"] == table.url
        views = Counter(name)  # the default client, made as in production: the environment points it here
        assert views.increment("URL#a", "view-1") is True
        assert views.increment("URL#a", "view-1") is False
        assert table.counter().get("URL#a", consistent=True) == 1
        url = table.url
    assert dict(os.environ) == before
    assert not answers(url)  # the DynamoDB Local it started is stopped


def test_without_dynamodb_local_a_counter_table_runs_on_moto(monkeypatch):
    monkeypatch.setenv("LAMBDA_KIT_DYNAMODB_LOCAL", "off")
    name = unique("ViewStats")
    with CounterTable(name) as table:
        assert table.backend == "moto"
        counter = table.counter(shards=2)
        result = counter.increment_many([("URL#a", "v1"), ("URL#a", "v2"), ("URL#a", "v1")])
        assert result.duplicates == [("URL#a", "v1")]
        assert Counter(name, shards=2).get("URL#a", consistent=True) == 2  # found through the environment
        url = table.url
    assert not answers(url)


def test_tables_on_one_dynamodb_start_empty_and_replace_a_leftover(monkeypatch):
    monkeypatch.setenv("LAMBDA_KIT_DYNAMODB_LOCAL", "off")
    with DynamoDBForTests() as dynamodb:
        assert dynamodb.backend == "moto" and dynamodb.reason == "LAMBDA_KIT_DYNAMODB_LOCAL=off chooses moto"
        name = unique("Views")
        with CounterTable(name, dynamodb=dynamodb) as first:
            first.counter().increment("k", "e1")
        with CounterTable(name, dynamodb=dynamodb) as second:
            assert second.url == first.url == dynamodb.url
            assert second.counter().get("k", consistent=True) == 0
            leftover = create_counter_table(second.client, unique("Left"))  # as if a run had stopped midway
            counted = {"PK": {"S": "k"}, "SK": {"S": "COUNT"}, "count": {"N": "7"}}
            second.client.put_item(TableName=leftover, Item=counted)
        assert name not in second.client.list_tables()["TableNames"]  # deleted on exit, the DynamoDB still up
        with CounterTable(leftover, dynamodb=dynamodb) as replaced:
            assert replaced.counter().get("k", consistent=True) == 0


def test_a_counter_table_without_dynamodb_local_or_moto_names_the_extra_in_one_line(tmp_path):
    code = (
        "import sys\n"
        "sys.modules['moto'] = None  # as if moto were not installed\n"
        "from lambda_kit.testing import CounterTable\n"
        "CounterTable().__enter__()\n"
    )
    env = {**os.environ, "LAMBDA_KIT_DYNAMODB_LOCAL": "off"}
    command = [sys.executable, "-c", code]
    result = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "lambda_kit.extras.MissingExtra: a counter table without DynamoDB Local"
        " (LAMBDA_KIT_DYNAMODB_LOCAL=off chooses moto) needs moto: pip install 'lambda-event-kit[local]'"
    ), result.stderr
    assert result.stderr.count("Traceback") == 1, result.stderr


def test_importing_lambda_kit_testing_imports_neither_pytest_nor_an_extra():
    code = (
        "import sys, lambda_kit.testing\n"
        "loaded = [m for m in ('pytest', 'moto', 'boto3', 'botocore', 'waitress') if m in sys.modules]\n"
        "assert not loaded, loaded"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- the fixture, in a user's project ---------------------------------------------------------------

TESTS = ["test_counts.py", "test_named.py"]
CONFTEST = "from lambda_kit.testing import counter_table  # noqa: F401  (a pytest fixture)\n"

TEST_COUNTS = """
from pathlib import Path

from lambda_kit.counters import Counter

urls = []


def test_a_view_counts_once(counter_table):
    views = Counter(counter_table.name)
    assert views.increment("URL#a", "view-1") is True
    assert views.increment("URL#a", "view-1") is False
    assert counter_table.name == "counters" and counter_table.backend == "DynamoDB Local"
    urls.append(counter_table.url)
    Path("url.txt").write_text(counter_table.url)


def test_each_test_has_a_fresh_table_on_the_same_dynamodb(counter_table):
    assert Counter("counters").get("URL#a", consistent=True) == 0
    assert urls == [counter_table.url]
"""

TEST_NAMED = """
import pytest

from lambda_kit.counters import Counter


@pytest.fixture
def counter_table_name():
    return "ViewStats"


def test_the_table_takes_the_name_the_code_uses(counter_table):
    assert counter_table.name == "ViewStats"
    assert Counter("ViewStats").increment("URL#b", "view-1") is True
"""


def test_the_fixture_in_a_users_conftest_gives_each_test_a_fresh_table_for_one_session(tmp_path):
    dynamodb_local_or_skip()
    (tmp_path / "conftest.py").write_text(CONFTEST)
    for name, text in zip(TESTS, (TEST_COUNTS, TEST_NAMED), strict=True):
        (tmp_path / name).write_text(textwrap.dedent(text))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "LAMBDA_KIT_", "PYTEST_"))}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TESTS]
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "3 passed" in result.stdout, result.stdout
    assert not answers((tmp_path / "url.txt").read_text())  # the session's DynamoDB Local stopped with it
