"""lambda_kit.counters through the public API, against AWS's DynamoDB Local and against moto's server
(the fallback where DynamoDB Local cannot run), both on loopback: every test runs on each."""

from __future__ import annotations

import itertools
import json
import math
import random
import subprocess
import sys
import threading
import time
import zlib
from collections import Counter as Tally
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from types import SimpleNamespace

import pytest
from _lossy_proxy import lossy_proxy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lambda_kit.counters import (
    COUNTER_SK,
    MARKER_PREFIX,
    Backoff,
    Counter,
    CounterError,
    Increment,
    IncrementResult,
    InvalidKeyError,
    bucket_keys,
    day_key,
    hour_key,
    key_of,
    month_key,
)
from lambda_kit.extras import MissingExtra
from lambda_kit.local.endpoint import fast_transactions
from lambda_kit.trace import reset_current_record, set_current_record

_hook_ids = itertools.count()


@pytest.fixture(params=["dynamodb-local", "moto"])
def backend(request, aws_endpoint, dynamodb_local) -> SimpleNamespace:
    """Where these tests' DynamoDB is: AWS's DynamoDB Local, or moto (isolated by its lock)."""
    if request.param == "moto":
        fast_transactions()
        return SimpleNamespace(name="moto", url=aws_endpoint.url)
    if dynamodb_local is None:
        pytest.skip("DynamoDB Local cannot run here (see the report header)")
    return SimpleNamespace(name="dynamodb-local", url=dynamodb_local.url)


@pytest.fixture
def dynamodb(backend):
    import boto3

    return boto3.client("dynamodb", endpoint_url=backend.url)


def no_wait(sleeps: list[float] | None = None) -> Backoff:
    """A backoff that records its waits instead of sleeping."""
    return Backoff(attempts=4, sleep=(sleeps.append if sleeps is not None else lambda _s: None))


@contextmanager
def hook(client, event: str, handler) -> Iterator[None]:
    unique_id = f"test-counters-{next(_hook_ids)}"
    client.meta.events.register(event, handler, unique_id=unique_id)
    try:
        yield
    finally:
        client.meta.events.unregister(event, unique_id=unique_id)


@contextmanager
def requests_sent(client, operation: str) -> Iterator[list[dict]]:
    """The HTTP requests ``client`` sends for ``operation`` (botocore retries included), as JSON bodies."""
    sent: list[dict] = []

    def on_send(request, **_kwargs):
        sent.append(json.loads(request.body))

    with hook(client, f"before-send.dynamodb.{operation}", on_send):
        yield sent


def fake_error(code: str, status: int = 400, **extra):
    """What a ``before-call`` hook returns to make botocore raise ``code`` without sending a request."""
    from botocore.awsrequest import AWSResponse

    return AWSResponse("http://fake", status, {}, None), {
        "Error": {"Code": code, "Message": f"injected {code}"},
        "ResponseMetadata": {"HTTPStatusCode": status},
        **extra,
    }


def fail_first(n: int, make_error):
    """A ``before-call`` handler that answers the first ``n`` calls with ``make_error(params)``."""
    calls = itertools.count()

    def handler(params, **_kwargs):
        if next(calls) < n:
            return make_error(params)
        return None

    return handler


def item(dynamodb, table: str, pk: str, sk: str) -> dict | None:
    return dynamodb.get_item(
        TableName=table, Key={"PK": {"S": pk}, "SK": {"S": sk}}, ConsistentRead=True
    ).get("Item")


def sort_keys(dynamodb, table: str, pk: str) -> list[str]:
    pages = dynamodb.get_paginator("query").paginate(
        TableName=table,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": pk}},
    )
    return [i["SK"]["S"] for page in pages for i in page["Items"]]


@pytest.fixture
def counter(counter_table, dynamodb) -> Counter:
    return Counter(counter_table, client=dynamodb, backoff=no_wait())


# -- exactly once ----------------------------------------------------------------------------------


def test_an_event_counts_once_and_unknown_keys_read_zero(counter):
    assert counter.get("URL#never") == 0
    assert counter.increment("URL#myblog.com/a1", "e1") is True
    assert counter.increment("URL#myblog.com/a1", "e1") is False
    assert counter.increment("URL#myblog.com/a1", "e2", amount=5) is True
    assert counter.increment("URL#myblog.com/a1", "e2", amount=5) is False
    assert counter.get("URL#myblog.com/a1") == 6
    # the same event id counts once per key
    assert counter.increment("URL#myblog.com/a2", "e1") is True
    assert counter.get_many(["URL#myblog.com/a1", "URL#myblog.com/a2", "URL#never"]) == {
        "URL#myblog.com/a1": 6,
        "URL#myblog.com/a2": 1,
        "URL#never": 0,
    }


def test_duplicates_inside_one_batch_and_across_batches(counter):
    first = counter.increment_many([("k1", "a"), ("k1", "b", 2), ("k1", "a"), ("k2", "a"), ("k1", "a")])
    assert first == IncrementResult(
        counted=[("k1", "a"), ("k1", "b"), ("k2", "a")],
        duplicates=[("k1", "a"), ("k1", "a")],
    )
    second = counter.increment_many([("k1", "c"), ("k1", "b", 2), ("k2", "a"), ("k2", "b"), ("k2", "b")])
    assert second.counted == [("k1", "c"), ("k2", "b")]
    assert second.duplicates == [("k1", "b"), ("k2", "a"), ("k2", "b")]
    assert counter.get_many(["k1", "k2"]) == {"k1": 4, "k2": 2}


def test_a_batch_is_coalesced_into_few_transactions(counter, dynamodb):
    events = [(f"URL#a{i % 5}", f"e{i}") for i in range(150)]
    with requests_sent(dynamodb, "TransactWriteItems") as sent:
        result = counter.increment_many(events)
    assert len(result.counted) == 150 and not result.duplicates
    # 150 markers + one update per key per transaction (one key split in two): 2 requests, not 150
    assert len(sent) == math.ceil((150 + 5 + 1) / 100) == 2
    for body in sent:
        actions = body["TransactItems"]
        assert len(actions) <= 100
        touched = [
            (i["PK"]["S"], i["SK"]["S"])
            for i in (a["Put"]["Item"] if "Put" in a else a["Update"]["Key"] for a in actions)
        ]
        assert len(set(touched)) == len(touched), "two actions on one item"
    assert counter.get_many([f"URL#a{i}" for i in range(5)]) == {f"URL#a{i}": 30 for i in range(5)}


def test_one_counter_update_per_key_carries_the_summed_amount(counter, dynamodb):
    with requests_sent(dynamodb, "TransactWriteItems") as sent:
        counter.increment_many([("hot", f"e{i}", 3) for i in range(99)])
    (body,) = sent
    updates = [a["Update"] for a in body["TransactItems"] if "Update" in a]
    assert len(updates) == 1 and updates[0]["ExpressionAttributeValues"][":amount"] == {"N": "297"}
    assert counter.get("hot") == 297


def test_without_a_read_duplicates_cost_one_resend_not_one_request_each(counter_table, dynamodb):
    counter = Counter(counter_table, client=dynamodb, backoff=no_wait(), read_first=False)
    counter.increment_many([("k", f"e{i}") for i in range(0, 100, 5)])  # 20 counted before
    with (
        requests_sent(dynamodb, "TransactWriteItems") as sent,
        requests_sent(dynamodb, "BatchGetItem") as read,
    ):
        result = counter.increment_many([("k", f"e{i}") for i in range(90)])
    assert len(result.duplicates) == 18 and len(result.counted) == 72
    assert len(sent) == 2 and read == []  # cancelled once (all 18 duplicates reported at once), then the rest
    assert counter.get("k") == 20 + 72


def test_read_first_a_known_duplicate_costs_a_read_not_a_cancelled_transaction(counter_table, dynamodb):
    counter = Counter(counter_table, client=dynamodb, backoff=no_wait(), read_first=True)
    counter.increment_many([("k", f"e{i}") for i in range(0, 100, 5)])  # 20 counted before
    batch = [("k", f"e{i}") for i in range(90)] + [("j", "e0"), ("k", "e1")]
    with (
        requests_sent(dynamodb, "TransactWriteItems") as sent,
        requests_sent(dynamodb, "BatchGetItem") as read,
    ):
        result = counter.increment_many(batch)
    assert result.duplicates == [("k", f"e{i}") for i in range(0, 90, 5)] + [("k", "e1")]
    assert len(result.counted) == 73 and ("j", "e0") in result.counted
    # one strongly consistent read of the 91 distinct markers (keys only), then one transaction of the
    # 73 unseen markers and two counter updates: nothing cancelled
    ((table, request),) = read[0]["RequestItems"].items()
    assert len(read) == 1 and request["ConsistentRead"] is True and len(request["Keys"]) == 91
    assert {k["SK"]["S"] for k in request["Keys"]} >= {f"EVENT#e{i}" for i in range(90)}
    assert len(sent) == 1 and len(sent[0]["TransactItems"]) == 73 + 2
    assert counter.get_many(["k", "j"]) == {"k": 20 + 72, "j": 1}


def test_a_batch_of_known_duplicates_writes_nothing(counter_table, dynamodb):
    counter = Counter(counter_table, client=dynamodb, read_first=True)
    batch = [(f"k{i % 3}", f"e{i}") for i in range(150)]
    counter.increment_many(batch)
    with (
        requests_sent(dynamodb, "TransactWriteItems") as sent,
        requests_sent(dynamodb, "BatchGetItem") as read,
    ):
        assert counter.increment_many(batch) == IncrementResult(counted=[], duplicates=batch)
    assert sent == [] and [len(body["RequestItems"][counter_table]["Keys"]) for body in read] == [100, 50]


def test_the_counter_reads_first_only_while_it_meets_duplicates(counter_table, dynamodb):
    """Adaptive (the default): no read while nothing is a duplicate; reads once duplicates show up
    (found by a cancelled transaction), and stops again after they are gone."""
    counter = Counter(counter_table, client=dynamodb, backoff=no_wait())
    reads_per_call: list[int] = []
    fresh = (f"e{i}" for i in itertools.count())

    def call(duplicates: int) -> None:
        batch = [("k", next(fresh)) for _ in range(50 - duplicates)] + [
            ("k", f"e{i}") for i in range(duplicates)
        ]
        with requests_sent(dynamodb, "BatchGetItem") as read:
            result = counter.increment_many(batch)
        assert len(result.duplicates) == duplicates
        reads_per_call.append(len(read))

    for duplicates in (0, 0, 10, 10, 10):
        call(duplicates)
    # the first duplicates are found by a cancelled transaction, the next ones by the read
    assert reads_per_call == [0, 0, 0, 1, 1]
    assert (
        counter.increment("k", next(fresh)) is True
    )  # one event weighs one event: the estimate barely moves
    for _ in range(16):
        call(0)
    # once they are gone, the estimate of the duplicate share decays (over ~200 events) and the reads stop
    after = reads_per_call[5:]
    assert after == sorted(after, reverse=True) and after[0] == 1 and after[-3:] == [0, 0, 0], reads_per_call
    assert counter.get("k", consistent=True) == 2 * 50 + 3 * 40 + 1 + 16 * 50


def test_a_read_that_fails_transiently_leaves_the_decision_to_the_transaction(counter_table, dynamodb):
    counter = Counter(counter_table, client=dynamodb, backoff=no_wait(), read_first=True)
    counter.increment("k", "e1")
    throttled = fail_first(1, lambda params: fake_error("ProvisionedThroughputExceededException"))
    with hook(dynamodb, "before-call.dynamodb.BatchGetItem", throttled):
        with requests_sent(dynamodb, "TransactWriteItems") as sent:
            result = counter.increment_many([("k", "e1"), ("k", "e2")])
    assert result == IncrementResult(counted=[("k", "e2")], duplicates=[("k", "e1")])
    assert len(sent) == 2  # the marker's condition caught the duplicate the read could not
    assert counter.get("k") == 2


def test_a_read_the_role_may_not_make_is_one_clear_error(counter_table, dynamodb):
    counter = Counter(counter_table, client=dynamodb, read_first=True)
    denied = fail_first(1, lambda params: fake_error("AccessDeniedException"))
    with hook(dynamodb, "before-call.dynamodb.BatchGetItem", denied):
        with pytest.raises(CounterError, match=r"role needs dynamodb:BatchGetItem") as raised:
            counter.increment("k", "e1")
    assert "\n" not in str(raised.value) and counter_table in str(raised.value)
    assert counter.get("k") == 0


def test_sixteen_threads_racing_overlapping_batches_count_exactly(counter_table, backend):
    """16 threads count overlapping subsets of the same events (event ids shared across keys, keys
    shared across threads, repeats inside a batch), each with its own Counter and read policy, with
    no lock on DynamoDB Local's path: every event is counted by exactly one call."""
    import boto3
    from botocore.config import Config

    client = boto3.client("dynamodb", endpoint_url=backend.url, config=Config(max_pool_connections=16))
    universe = [(f"URL#race{i % 4}", f"e{i % 30}", 1 + i % 3) for i in range(60)]  # e0..e29 each on two keys
    reasons: Tally[str] = Tally()
    results: list[tuple[list, IncrementResult]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(16)

    def tally(parsed, **_kwargs):
        reasons.update(r.get("Code", "None") for r in parsed.get("CancellationReasons") or [])

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        mine = rng.sample(universe, 40) + rng.sample(universe, 5)  # some events twice in this thread
        rng.shuffle(mine)
        counter = Counter(
            counter_table,
            client=client,
            read_first=(None, True, False)[seed % 3],
            backoff=Backoff(attempts=10, base=0.01, cap=0.2),
        )
        try:
            start.wait()
            while mine:
                size = rng.randint(1, 25)
                batch, mine = mine[:size], mine[size:]
                results.append((batch, counter.increment_many(batch)))
        except BaseException as error:  # reported below
            errors.append(error)

    with hook(client, "after-call.dynamodb.TransactWriteItems", tally):
        threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not errors, errors
    touched = {
        (key, event_id): amount for key, event_id, amount in (e for batch, _ in results for e in batch)
    }
    counted = Tally(ref for _, result in results for ref in result.counted)
    assert counted == Tally(touched.keys()), "every event counted by exactly one call"
    for batch, result in results:
        assert Tally(result.counted) + Tally(result.duplicates) == Tally((k, e) for k, e, _ in batch)
    expected = Tally()
    for (key, _event_id), amount in touched.items():
        expected[key] += amount
    keys = sorted(expected)
    assert Counter(counter_table, client=client).get_many(keys, consistent=True) == dict(expected)
    for key in keys:
        markers = [sk for sk in sort_keys(client, counter_table, key) if sk.startswith(MARKER_PREFIX)]
        assert len(markers) == sum(1 for k, _ in touched if k == key)
    print(f"{backend.name}: cancellation reasons seen in the race: {dict(reasons)}")


def test_a_failure_after_commit_then_the_record_retried_is_exact(counter, dynamodb):
    """The transaction commits, the caller fails before returning, the event source retries."""
    crashes = itertools.count()

    def crash_once(**_kwargs):
        if next(crashes) == 0:
            raise RuntimeError("Lambda killed after the write")

    batch = [("URL#a", "e1"), ("URL#a", "e2"), ("URL#b", "e1")]
    with hook(dynamodb, "after-call.dynamodb.TransactWriteItems", crash_once):
        with pytest.raises(RuntimeError):
            counter.increment_many(batch)
        retried = counter.increment_many(batch)
    assert retried.counted == [] and retried.duplicates == batch
    assert counter.get_many(["URL#a", "URL#b"]) == {"URL#a": 2, "URL#b": 1}


def through_proxy(url: str):
    """A client whose requests go through ``url`` (a lossy proxy), with botocore's retries off so
    the resend is the Counter's."""
    import boto3
    from botocore.config import Config

    return boto3.client("dynamodb", endpoint_url=url, config=Config(retries={"total_max_attempts": 1}))


def transactions(exchanges: list[dict]) -> list[dict]:
    return [x for x in exchanges if x["operation"] == "TransactWriteItems"]


def test_a_lost_response_is_resent_with_the_same_token_and_counts_once(counter_table, dynamodb, backend):
    """The first transaction is carried out, then its response is lost on the way back."""
    first = itertools.count()

    def lose_the_first_response(operation, body):
        return body, operation == "TransactWriteItems" and next(first) == 0

    sleeps: list[float] = []
    batch = [("k", "e1"), ("k", "e2")]
    with lossy_proxy(backend.url, lose_the_first_response) as (url, exchanges):
        counter = Counter(counter_table, client=through_proxy(url), backoff=no_wait(sleeps))
        result = counter.increment_many(batch)
    sent = transactions(exchanges)
    assert [(x["status"], x["lost"]) for x in sent][0] == (200, True)  # carried out, answer lost
    assert len(sleeps) == 1 and len(sent) == 2
    assert json.loads(sent[1]["sent"]) == json.loads(sent[0]["sent"])  # same actions, same ClientRequestToken
    if backend.name == "dynamodb-local":
        # DynamoDB honours the token: the resend is answered as the success it was
        assert sent[1]["status"] == 200
        assert result == IncrementResult(counted=batch, duplicates=[])
    else:
        # moto ignores the token: the resend is cancelled by the markers, so the events come back as
        # duplicates
        assert sent[1]["status"] == 400 and b"ConditionalCheckFailed" in sent[1]["response"]
        assert result == IncrementResult(counted=[], duplicates=batch)
    assert Counter(counter_table, client=dynamodb).get("k", consistent=True) == 2
    assert sorted(sort_keys(dynamodb, counter_table, "k")) == ["COUNT", "EVENT#e1", "EVENT#e2"]


def test_a_token_dynamodb_refuses_is_replaced_and_the_markers_decide(counter_table, dynamodb, backend):
    """The first send is carried out with other parameters than the resend carries under the same
    token (its response lost): DynamoDB refuses the token, and a new one lets the markers decide."""
    first = itertools.count()

    def alter_and_lose_the_first(operation, body):
        if operation != "TransactWriteItems" or next(first) > 0:
            return body, False
        request = json.loads(body)
        request["TransactItems"][0]["Put"]["Item"]["counted_at"] = {"S": "2000-01-01T00:00:00Z"}
        return json.dumps(request).encode(), True

    batch = [("k", "e1"), ("k", "e2")]
    with lossy_proxy(backend.url, alter_and_lose_the_first) as (url, exchanges):
        result = Counter(counter_table, client=through_proxy(url), backoff=no_wait()).increment_many(batch)
    sent = transactions(exchanges)
    tokens = [json.loads(x["sent"])["ClientRequestToken"] for x in sent]
    if backend.name == "dynamodb-local":
        assert [x["status"] for x in sent] == [200, 400, 400]
        assert b"IdempotentParameterMismatchException" in sent[1]["response"]
        assert tokens[0] == tokens[1] != tokens[2]
    else:  # moto ignores the token: the resend itself meets the markers
        assert [x["status"] for x in sent] == [200, 400] and tokens[0] == tokens[1]
    assert b"ConditionalCheckFailed" in sent[-1]["response"]
    assert result == IncrementResult(counted=[], duplicates=batch)
    assert Counter(counter_table, client=dynamodb).get("k", consistent=True) == 2


@pytest.mark.parametrize(
    "make_error",
    [
        lambda params: fake_error("ThrottlingException"),
        lambda params: fake_error("ProvisionedThroughputExceededException"),
        lambda params: fake_error("InternalServerError", status=500),
        lambda params: fake_error(
            "TransactionCanceledException",
            CancellationReasons=[{"Code": "TransactionConflict"}]
            * len(json.loads(params["body"])["TransactItems"]),
        ),
    ],
    ids=["throttling", "throughput", "5xx", "transaction-conflict"],
)
def test_transient_errors_are_retried_with_backoff(counter_table, dynamodb, make_error):
    sleeps: list[float] = []
    counter = Counter(counter_table, client=dynamodb, backoff=Backoff(attempts=5, sleep=sleeps.append))
    with hook(dynamodb, "before-call.dynamodb.TransactWriteItems", fail_first(3, make_error)):
        result = counter.increment_many([("k", "e1"), ("k", "e2", 2), ("j", "e1")])
    assert len(result.counted) == 3
    assert len(sleeps) == 3 and all(0 <= s <= min(2.0, 0.05 * 2**n) for n, s in enumerate(sleeps))
    assert counter.get_many(["k", "j"]) == {"k": 3, "j": 1}


def test_http_5xx_on_the_default_client_is_retried(counter_table, backend, monkeypatch):
    """The lazily created client (found through AWS_ENDPOINT_URL_DYNAMODB) leaves retrying to the Backoff."""
    from botocore.awsrequest import AWSResponse

    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", backend.url)

    class Body:
        def stream(self, **_kwargs):
            yield b'{"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError", "message": "boom"}'

    counter = Counter(counter_table, backoff=no_wait())
    sends = itertools.count()

    def fail_twice(**_kwargs):
        if next(sends) < 2:
            return AWSResponse("http://fake", 500, {}, Body())
        return None

    with hook(counter.client, "before-send.dynamodb.TransactWriteItems", fail_twice):
        assert counter.increment("k", "e1") is True
    assert next(sends) == 3
    assert counter.get("k") == 1


def test_the_default_client_leaves_validation_to_the_counter_and_dynamodb(
    counter_table, backend, monkeypatch
):
    """botocore's parameter validation walks every action of a 100-action transaction (about a
    third of the call's CPU, paid on every batch); the counter builds its requests from checked
    keys and DynamoDB validates them again, so its own client skips it and still counts."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", backend.url)
    counter = Counter(counter_table, backoff=no_wait())
    from botocore.exceptions import ClientError, ParamValidationError

    try:  # botocore would refuse this before sending it; DynamoDB may or may not
        counter.client.get_item(
            TableName=counter_table, Key={"PK": {"S": "k"}, "SK": {"S": "COUNT"}}, ConsistentRead="yes"
        )
    except ParamValidationError:
        pytest.fail("the counter's client validates its requests in botocore")
    except ClientError:
        pass
    assert counter.increment_many([("k", f"e{n}") for n in range(60)]).counted == [
        ("k", f"e{n}") for n in range(60)
    ]
    assert counter.get("k") == 60


def test_transient_errors_propagate_after_the_last_try(counter_table, dynamodb):
    sleeps: list[float] = []
    counter = Counter(counter_table, client=dynamodb, backoff=Backoff(attempts=3, sleep=sleeps.append))
    with hook(
        dynamodb,
        "before-call.dynamodb.TransactWriteItems",
        fail_first(99, lambda p: fake_error("ThrottlingException")),
    ):
        with pytest.raises(dynamodb.exceptions.ClientError, match="ThrottlingException"):
            counter.increment_many([("k", "e1"), ("k", "e2")])
    assert len(sleeps) == 2
    assert counter.get("k") == 0
    assert counter.increment_many([("k", "e1"), ("k", "e2")]).counted == [("k", "e1"), ("k", "e2")]


# -- markers ---------------------------------------------------------------------------------------


def test_markers_carry_ttl_trace_id_and_the_counter_key(counter_table, dynamodb):
    counter = Counter(counter_table, client=dynamodb, marker_ttl=timedelta(hours=2))
    token = set_current_record(SimpleNamespace(trace_id="trace-123", id="m1"))
    try:
        counter.increment("URL#myblog.com/article1", "evt-1", amount=3)
    finally:
        reset_current_record(token)
    counter.increment("URL#myblog.com/article1", "evt-2")

    marker = item(dynamodb, counter_table, "URL#myblog.com/article1", f"{MARKER_PREFIX}evt-1")
    assert marker is not None
    assert abs(int(marker["ttl"]["N"]) - (time.time() + 2 * 3600)) < 60
    assert marker["trace_id"] == {"S": "trace-123"}
    assert marker["amount"] == {"N": "3"}
    assert marker["SK"]["S"].startswith(MARKER_PREFIX) and marker["PK"]["S"] == "URL#myblog.com/article1"
    untraced = item(dynamodb, counter_table, "URL#myblog.com/article1", f"{MARKER_PREFIX}evt-2")
    assert "trace_id" not in untraced
    counted = item(dynamodb, counter_table, "URL#myblog.com/article1", COUNTER_SK)
    assert counted["count"] == {"N": "4"}
    assert sorted(sort_keys(dynamodb, counter_table, "URL#myblog.com/article1")) == [
        "COUNT",
        "EVENT#evt-1",
        "EVENT#evt-2",
    ]


def test_markers_carry_the_trace_id_of_the_sqs_record_being_processed(counter_table, dynamodb):
    from lambda_kit import current_record, sqs_handler
    from lambda_kit.testing import lambda_context, sqs_event

    counter = Counter(counter_table, client=dynamodb)

    @sqs_handler(log_event=False, log_result=False)
    def count_view(view, context):
        counter.increment(view["key"], current_record().id)

    event = sqs_event({"key": "URL#a"}, {"key": "URL#a"}, trace_id=["trace-1", "trace-2"])
    assert count_view(event, lambda_context()) == {"batchItemFailures": []}
    markers = [
        item(dynamodb, counter_table, "URL#a", MARKER_PREFIX + r["messageId"]) for r in event["Records"]
    ]
    assert [m["trace_id"]["S"] for m in markers] == ["trace-1", "trace-2"]


def test_a_batch_counted_at_commit_carries_each_records_trace_id(counter_table, dynamodb):
    from lambda_kit import sqs_handler
    from lambda_kit.testing import lambda_context, sqs_event

    counter = Counter(counter_table, client=dynamodb)
    with requests_sent(dynamodb, "TransactWriteItems") as sent:

        def count_batch(done) -> None:
            counter.increment_many(
                Increment(view["key"], record.id, trace_id=record.trace_id) for record, view in done
            )

        @sqs_handler(log_event=False, log_result=False, commit=count_batch)
        def accept_view(view, context):
            return view

        event = sqs_event(*[{"key": f"URL#a{i % 2}"} for i in range(6)], trace_id=[f"t{i}" for i in range(6)])
        assert accept_view(event, lambda_context()) == {"batchItemFailures": []}
    assert len(sent) == 1
    for i, record in enumerate(event["Records"]):
        marker = item(dynamodb, counter_table, f"URL#a{i % 2}", MARKER_PREFIX + record["messageId"])
        assert marker["trace_id"] == {"S": f"t{i}"}
    assert counter.get_many(["URL#a0", "URL#a1"]) == {"URL#a0": 3, "URL#a1": 3}


def test_the_default_marker_ttl_is_seven_days(counter):
    counter.increment("k", "e1")
    marker = item(counter.client, counter.table, "k", f"{MARKER_PREFIX}e1")
    assert abs(int(marker["ttl"]["N"]) - (time.time() + 7 * 86400)) < 60


# -- shards ----------------------------------------------------------------------------------------


def test_shards_spread_a_counter_and_sum_on_read(counter_table, dynamodb):
    counter = Counter(counter_table, client=dynamodb, shards=4, backoff=no_wait())
    events = [("URL#hot", f"e{i}") for i in range(40)] + [("URL#cold", "e1")]
    assert len(counter.increment_many(events).counted) == 41
    # a retried event hits the same shard's marker and counts nothing
    assert counter.increment_many(events[:10]).duplicates == events[:10]
    # each shard is its own partition key (so a hot key's writes spread over partitions),
    # and its markers live under it
    items = dynamodb.scan(TableName=counter_table)["Items"]
    counter_pks = {
        i["PK"]["S"] for i in items if i["SK"]["S"] == "COUNT" and i["PK"]["S"].startswith("URL#hot")
    }
    assert len(counter_pks) > 1 and counter_pks <= {
        "URL#hot",
        "URL#hot#SHARD#1",
        "URL#hot#SHARD#2",
        "URL#hot#SHARD#3",
    }
    marker_pks = {
        i["PK"]["S"] for i in items if i["SK"]["S"].startswith(MARKER_PREFIX) and "hot" in i["PK"]["S"]
    }
    assert marker_pks == counter_pks
    assert {key_of(pk) for pk in marker_pks} == {"URL#hot"}
    with requests_sent(dynamodb, "BatchGetItem") as sent:
        assert counter.get_many(["URL#hot", "URL#cold", "URL#none"]) == {
            "URL#hot": 40,
            "URL#cold": 1,
            "URL#none": 0,
        }
    assert len(sent) == 1 and len(sent[0]["RequestItems"][counter_table]["Keys"]) == 12


def test_counter_item_carries_the_trace_id_of_its_last_change(counter_table, dynamodb):
    counter = Counter(counter_table, client=dynamodb)
    counter.increment_many([Increment("URL#a", "e1", 1, "T-1"), Increment("URL#a", "e2", 1, "T-2")])
    item = dynamodb.get_item(TableName=counter_table, Key={"PK": {"S": "URL#a"}, "SK": {"S": "COUNT"}})[
        "Item"
    ]
    assert item["count"]["N"] == "2" and item["trace_id"]["S"] == "T-2"


def test_a_key_cannot_add_to_another_counters_shard(counter_table, dynamodb):
    # The report: `K#SHARD#1` counted on a plain counter was added to the sharded counter `K` (40 -> 45).
    sharded = Counter(counter_table, client=dynamodb, shards=4, backoff=no_wait())
    sharded.increment_many([("K", f"e{i}") for i in range(40)])
    plain = Counter(counter_table, client=dynamodb, backoff=no_wait())
    for shard in range(1, 4):
        refused = rf"^counter key 'K#SHARD#{shard}' must not end in '#SHARD#' and a"
        with pytest.raises(InvalidKeyError, match=refused):
            plain.increment(f"K#SHARD#{shard}", "intruder", amount=5)
        with pytest.raises(InvalidKeyError, match="where a shard of counter 'K' is stored"):
            plain.get(f"K#SHARD#{shard}")
    assert sharded.get("K", consistent=True) == 40
    # a `#SHARD#` that is not a numbered suffix is part of an ordinary key, with items of its own
    ordinary = [("K#SHARD#", "x", 2), ("K#SHARD#b", "x", 3), ("K#SHARD#1#DAY", "x", 4)]
    assert plain.increment_many(ordinary).duplicates == []
    assert plain.get_many(["K#SHARD#", "K#SHARD#b", "K#SHARD#1#DAY"], consistent=True) == {
        "K#SHARD#": 2,
        "K#SHARD#b": 3,
        "K#SHARD#1#DAY": 4,
    }
    assert sharded.get("K", consistent=True) == 40


def test_a_key_cannot_reach_another_counters_markers(counter_table, dynamodb):
    """Before keys ending in a shard suffix were refused, `K#SHARD#n` shared its markers with shard n
    of `K`: an event counted on one was a duplicate on the other, and one of them lost it."""
    sharded = Counter(counter_table, client=dynamodb, shards=2, backoff=no_wait())
    plain = Counter(counter_table, client=dynamodb, backoff=no_wait())
    event_id = next(f"e{i}" for i in itertools.count() if zlib.crc32(f"e{i}".encode()) % 2 == 1)  # on shard 1
    with pytest.raises(InvalidKeyError):
        plain.increment("K#SHARD#1", event_id)
    assert sharded.increment("K", event_id) is True  # its marker was not taken
    with pytest.raises(InvalidKeyError):
        plain.increment_many([("other", "e"), ("K#SHARD#1", event_id)])  # refused whole, before any request
    assert plain.get("other", consistent=True) == 0
    # names that look like markers or counter items are keys and event ids like any other
    odd = [("EVENT#e1", "COUNT"), ("COUNT", "EVENT#e1"), ("K", "COUNT"), ("K#EVENT#e1", "e1")]
    assert plain.increment_many(odd).counted == odd
    assert plain.get_many(["EVENT#e1", "COUNT", "K", "K#EVENT#e1"], consistent=True) == {
        "EVENT#e1": 1,
        "COUNT": 1,
        "K": 1,
        "K#EVENT#e1": 1,
    }
    assert sharded.get("K", consistent=True) == 2  # the marker-named event added to K's shard 0 only
    scanned = dynamodb.scan(TableName=counter_table, ConsistentRead=True)["Items"]
    items = {(i["PK"]["S"], i["SK"]["S"]) for i in scanned}
    assert items == {
        ("K", "COUNT"),
        ("K", "EVENT#COUNT"),
        ("K#SHARD#1", "COUNT"),
        ("K#SHARD#1", f"EVENT#{event_id}"),
        ("EVENT#e1", "COUNT"),
        ("EVENT#e1", "EVENT#COUNT"),
        ("COUNT", "COUNT"),
        ("COUNT", "EVENT#EVENT#e1"),
        ("K#EVENT#e1", "COUNT"),
        ("K#EVENT#e1", "EVENT#e1"),
    }


def test_a_key_cannot_reach_a_shard_of_a_day_bucket(counter_table, dynamodb):
    viewed_at = datetime(2022, 3, 28, 13, 17, tzinfo=UTC)
    day = bucket_keys("URL#a", viewed_at)[0]
    assert day == "URL#a#DAY#2022-03-28"
    sharded = Counter(counter_table, client=dynamodb, shards=3, backoff=no_wait())
    sharded.increment_many([(key, f"v{i}") for i in range(30) for key in ("URL#a", day)])
    plain = Counter(counter_table, client=dynamodb, backoff=no_wait())
    for shard in (1, 2):
        with pytest.raises(InvalidKeyError):
            plain.increment(f"{day}#SHARD#{shard}", "intruder")
    # a bucket of a key that looks like a shard is a counter of its own: neither `URL#a` nor its day
    buckets = bucket_keys("URL#a#SHARD#1", viewed_at, ("DAY", "HOUR"))
    assert plain.increment_many([(key, "x") for key in buckets]).counted
    assert sharded.get_many(["URL#a", day], consistent=True) == {"URL#a": 30, day: 30}
    # a bucket is named by its key: counting that key counts the bucket (the docs read buckets this way)
    assert sharded.increment(day, "v-direct") is True and sharded.get(day, consistent=True) == 31


def test_raising_shards_later_keeps_the_count(counter_table, dynamodb):
    Counter(counter_table, client=dynamodb).increment_many([("k", f"e{i}") for i in range(5)])
    sharded = Counter(counter_table, client=dynamodb, shards=8)
    sharded.increment_many([("k", f"f{i}") for i in range(5)])
    assert sharded.get("k") == 10


# -- reads -----------------------------------------------------------------------------------------


def test_get_many_reads_more_keys_than_one_batch_get_takes(counter, dynamodb):
    keys = [f"URL#myblog.com/article{i}" for i in range(150)]
    counted = {key: i for i, key in enumerate(keys) if i % 10 == 3}  # 101st and last keys among them
    counter.increment_many([(key, "e1", amount) for key, amount in counted.items()])
    with requests_sent(dynamodb, "BatchGetItem") as sent:
        counts = counter.get_many(keys)
    assert counts == {key: counted.get(key, 0) for key in keys}
    assert list(counts) == keys
    assert [len(body["RequestItems"][counter.table]["Keys"]) for body in sent] == [100, 50]


def test_get_many_asks_again_for_unprocessed_keys(counter, dynamodb):
    keys = [f"k{i}" for i in range(10)]
    counter.increment_many([(key, "e1", 2) for key in keys])
    throttled = itertools.count()

    def leave_half_unprocessed(parsed, **_kwargs):
        if next(throttled) == 0:
            items = parsed["Responses"][counter.table]
            kept, left = items[:5], items[5:]
            parsed["Responses"][counter.table] = kept
            parsed["UnprocessedKeys"] = {
                counter.table: {"Keys": [{"PK": i["PK"], "SK": {"S": COUNTER_SK}} for i in left]}
            }

    sleeps: list[float] = []
    counter.backoff = no_wait(sleeps)
    with hook(dynamodb, "after-call.dynamodb.BatchGetItem", leave_half_unprocessed):
        with requests_sent(dynamodb, "BatchGetItem") as sent:
            assert counter.get_many(keys) == dict.fromkeys(keys, 2)
    assert len(sent) == 2 and len(sleeps) == 1


# -- buckets ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ts",
    [
        datetime(2022, 3, 28, 13, 5, tzinfo=UTC),
        datetime(2022, 3, 28, 13, 5),  # naive means UTC
        datetime(2022, 3, 28, 15, 5, tzinfo=timezone(timedelta(hours=2))),
        "2022-03-28T13:05:00Z",
        "2022-03-28T08:05:00-05:00",
        "2022-03-28T13:05:00.123456",
        1648472700,
        1648472700.5,
    ],
)
def test_buckets_are_utc_strings(ts):
    assert day_key(ts) == "DAY#2022-03-28"
    assert hour_key(ts) == "HOUR#2022-03-28T13"
    assert month_key(ts) == "MONTH#2022-03"
    assert bucket_keys("URL#myblog.com/article1", ts, ("DAY", "HOUR", "MONTH")) == [
        "URL#myblog.com/article1#DAY#2022-03-28",
        "URL#myblog.com/article1#HOUR#2022-03-28T13",
        "URL#myblog.com/article1#MONTH#2022-03",
    ]


def test_bucket_timestamps_that_are_not_times_are_refused():
    with pytest.raises(ValueError, match="'yesterday'"):
        day_key("yesterday")
    with pytest.raises(ValueError, match="milliseconds"):
        day_key(1648472700000000)
    with pytest.raises(TypeError, match="None"):
        day_key(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="WEEK"):
        bucket_keys("k", 0, ("WEEK",))  # type: ignore[arg-type]


def test_one_event_increments_its_buckets_in_one_transaction(counter, dynamodb):
    article = "URL#myblog.com/article1"
    views = [("v1", "2022-03-28T23:59:00Z"), ("v2", "2022-03-29T00:01:00Z"), ("v3", "2022-03-29T10:00:00Z")]
    with requests_sent(dynamodb, "TransactWriteItems") as sent:
        counter.increment_many(
            (key, view)
            for view, at in views
            for key in [article, *bucket_keys(article, at, ("DAY", "MONTH"))]
        )
    assert len(sent) == 1
    assert counter.get_many(
        [article, f"{article}#DAY#2022-03-28", f"{article}#DAY#2022-03-29", f"{article}#MONTH#2022-03"]
    ) == {
        article: 3,
        f"{article}#DAY#2022-03-28": 1,
        f"{article}#DAY#2022-03-29": 2,
        f"{article}#MONTH#2022-03": 3,
    }


# -- validation and configuration ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "named"),
    [
        ((42, "e1"), "42"),
        (("", "e1"), "''"),
        (("URL#x", 7), "'URL#x'"),
        (("URL#x", ""), "'URL#x'"),
        (("URL#x", "e1", "1"), "'URL#x'"),
        (("URL#x", "e1", True), "'URL#x'"),
        (("URL#x", "e" * 1100), "'URL#x'"),
        (("x" * 3000, "e1"), "'xxxx"),
        (("URL#x",), "('URL#x',)"),
        (("URL#x", "e1", 1, 5), "'URL#x'"),
    ],
)
def test_invalid_increments_name_the_offending_key_before_any_request(counter, dynamodb, event, named):
    with requests_sent(dynamodb, "TransactWriteItems") as sent:
        with pytest.raises(InvalidKeyError) as raised:
            counter.increment_many([("URL#ok", "e1"), event])
    assert named in str(raised.value) and "\n" not in str(raised.value)
    assert sent == [] and counter.get("URL#ok") == 0


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda counter: counter.increment("URL#\ud800x", "e1"), "counter key 'URL#\\ud800x'"),
        (lambda counter: counter.increment("URL#x", "e\udfff"), "event id 'e\\udfff'"),
        (lambda counter: counter.increment_many([("URL#ok", "e1"), ("k", "\ud83d")]), "event id '\\ud83d'"),
        (lambda counter: counter.increment_many([Increment("URL#ok", "e1", 1, "t\udc80")]), "trace id"),
        (lambda counter: counter.get("\udfffk"), "counter key '\\udfffk'"),
        (lambda counter: counter.get_many(["URL#ok", "\ud800"]), "counter key '\\ud800'"),
    ],
    ids=["increment-key", "increment-event-id", "increment-many", "trace-id", "get", "get-many"],
)
def test_a_lone_surrogate_is_an_invalid_key_before_any_request(counter, dynamodb, call, named):
    """Text no UTF-8 holds is no key DynamoDB can store: InvalidKeyError, never UnicodeEncodeError."""
    with (
        requests_sent(dynamodb, "TransactWriteItems") as written,
        requests_sent(dynamodb, "BatchGetItem") as read,
    ):
        with pytest.raises(InvalidKeyError) as raised:
            call(counter)
    assert named in str(raised.value) and "lone surrogate" in str(raised.value)
    assert "\n" not in str(raised.value) and written == read == []


def test_a_redelivered_event_is_a_duplicate_whatever_its_amount(counter, dynamodb, backend):
    """An event whose amount took a count to 38 digits, delivered again: DynamoDB refuses the
    update (the sum would pass 38 digits) before it looks at the marker, and the answer is still
    "duplicate", alone or in a batch with events that do count."""
    most = 10**38 - 1  # the largest amount Counter takes
    assert counter.increment("URL#big", "e1", most) is True
    assert counter.increment("URL#big", "e1", most) is False
    result = counter.increment_many(
        [("URL#big", "e1", most), ("URL#other", "e2", 3), ("URL#big", "e1", most)]
    )
    assert result == IncrementResult(counted=[("URL#other", "e2")], duplicates=[("URL#big", "e1")] * 2)
    assert counter.get_many(["URL#big", "URL#other"]) == {"URL#big": most, "URL#other": 3}
    if backend.name == "dynamodb-local":  # moto takes a count of 39 digits (AWS and DynamoDB Local do not)
        with pytest.raises(InvalidKeyError, match="DynamoDB only supports precision up to 38 digits"):
            counter.increment("URL#big", "e3", 2)  # a new event: 10**38 + 1 has 39 digits, refused
        assert counter.get("URL#big") == most and counter.increment("URL#big", "e1", most) is False


def test_a_missing_table_is_one_clear_error(dynamodb, aws_endpoint):
    counter = Counter("NoSuchTable", client=dynamodb)
    with pytest.raises(CounterError, match="'NoSuchTable' not found"):
        counter.increment("k", "e1")
    with pytest.raises(CounterError, match="'NoSuchTable' not found"):
        counter.get("k")


@pytest.mark.parametrize(
    "kwargs", [{"shards": 0}, {"shards": 1.5}, {"marker_ttl": timedelta(0)}, {"marker_ttl": 3600}]
)
def test_bad_configuration_is_refused(kwargs):
    with pytest.raises(CounterError):
        Counter("ViewStats", **kwargs)


def test_importing_counters_does_not_import_boto3():
    code = (
        "import sys, lambda_kit.counters\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('boto3', 'botocore'))\n"
        "assert not loaded, loaded"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_counter_without_boto3_says_which_extra_installs_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "boto3", None)  # as if boto3 were not installed
    with pytest.raises(MissingExtra) as raised:
        Counter("ViewStats").increment("URL#a", "view-1")
    assert (
        str(raised.value) == "lambda_kit.counters.Counter needs boto3: pip install 'lambda-event-kit[local]'"
    )


def test_a_counter_without_boto3_names_the_extra_in_one_line():
    code = (
        "import sys\n"
        "sys.modules['boto3'] = None  # as if boto3 were not installed\n"
        "from lambda_kit.counters import Counter\n"
        "Counter('ViewStats').increment('URL#a', 'view-1')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "lambda_kit.extras.MissingExtra: lambda_kit.counters.Counter needs boto3:"
        " pip install 'lambda-event-kit[local]'"
    ), result.stderr
    assert result.stderr.count("Traceback") == 1, result.stderr  # no chained traceback before it


# -- property: any sequence of batches counts like a set -------------------------------------------

_runs = itertools.count()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batches=st.lists(
        st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from("uvwxyz"), st.integers(1, 3)), max_size=8),
        min_size=1,
        max_size=4,
    ),
    read_first=st.sampled_from([None, True, False]),
)
def test_any_batches_count_each_event_once(counter, batches, read_first):
    prefix = f"run{next(_runs)}#"
    counter.read_first = read_first
    seen: dict[tuple[str, str], int] = {}
    for batch in batches:
        result = counter.increment_many([(prefix + key, event, amount) for key, event, amount in batch])
        expected = IncrementResult()
        for key, event, amount in batch:
            if (key, event) in seen:
                expected.duplicates.append((prefix + key, event))
            else:
                seen[(key, event)] = amount
                expected.counted.append((prefix + key, event))
        assert result == expected
    totals = Tally()
    for (key, _event), amount in seen.items():
        totals[prefix + key] += amount
    assert counter.get_many([prefix + k for k in "abc"]) == {prefix + k: totals[prefix + k] for k in "abc"}
