"""lambda_kit.idempotency through the public API, against AWS's DynamoDB Local and moto's server (the
fallback where DynamoDB Local cannot run), both on loopback: every test here runs on each."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
import test_counters
from _logs import read_lines, with_message
from pydantic import BaseModel

from lambda_kit import api_handler, sqs_handler
from lambda_kit.counters import Backoff
from lambda_kit.idempotency import (
    ENTRY_SK,
    AlreadyInProgress,
    ClaimLost,
    IdempotencyError,
    MissingKey,
    PayloadMismatch,
    complete_batch,
    current_writes,
    header,
    idempotent,
)
from lambda_kit.idempotency.keys import digest
from lambda_kit.idempotency.table import entry_pk
from lambda_kit.testing import api_event, create_idempotency_table, lambda_context, sqs_event, sqs_record

backend = test_counters.backend  # each test on DynamoDB Local and on moto, as test_counters.py's
dynamodb = test_counters.dynamodb
hook = test_counters.hook
fake_error = test_counters.fake_error


@pytest.fixture
def table(dynamodb, unique_name) -> str:
    return create_idempotency_table(dynamodb, unique_name("Idem"))


@pytest.fixture
def orders(dynamodb, unique_name) -> str:
    """A table of the side effects' own items (PK/SK), where the calls' writes go."""
    return create_idempotency_table(dynamodb, unique_name("Orders"))


def leave_claim(dynamodb, table: str, function, key_value, for_ms: int) -> None:
    """An entry in progress for ``for_ms`` more, as a call running elsewhere (or killed) holds it."""
    name = function.__lambda_kit_idempotency__["name"]
    until = int(time.time() * 1000) + for_ms
    entry = {
        "PK": {"S": entry_pk(name, digest(key_value))},
        "SK": {"S": ENTRY_SK},
        "status": {"S": "IN_PROGRESS"},
        "until": {"N": str(until)},
        "ttl": {"N": str(until // 1000 + 3600)},
        "owner": {"S": "another-invocation"},
    }
    dynamodb.put_item(TableName=table, Item=entry)


def no_wait() -> Backoff:
    return Backoff(attempts=4, sleep=lambda _seconds: None)


def entries(dynamodb, table: str) -> list[dict]:
    return dynamodb.scan(TableName=table, ConsistentRead=True)["Items"]


def item(dynamodb, table: str, pk: str, sk: str = "ORDER") -> dict | None:
    key = {"PK": {"S": pk}, "SK": {"S": sk}}
    return dynamodb.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")


@dataclasses.dataclass
class Receipt:
    order_id: str
    amount: int
    at: datetime | None = None


@dataclasses.dataclass
class Bundle:
    receipts: list[Receipt]
    note: str


class Charge(BaseModel):
    order_id: str
    total: Decimal
    at: datetime


# -- once per key ------------------------------------------------------------------------------


def test_a_key_runs_once_and_a_duplicate_gets_the_stored_result(table, dynamodb):
    runs = itertools.count(1)

    @idempotent(key="order_id", table=table, client=dynamodb)
    def charge(order, context):
        return {"charged": order["amount"], "run": next(runs)}

    before = time.time()
    assert charge({"order_id": "o-1", "amount": 5}, lambda_context()) == {"charged": 5, "run": 1}
    assert charge({"order_id": "o-1", "amount": 5}, lambda_context()) == {"charged": 5, "run": 1}
    assert charge({"order_id": "o-2", "amount": 7}, lambda_context()) == {"charged": 7, "run": 2}
    found = entries(dynamodb, table)
    assert len(found) == 2 and {e["status"]["S"] for e in found} == {"COMPLETED"}
    ttl = int(found[0]["ttl"]["N"])
    assert before + 3600 - 2 <= ttl <= time.time() + 3600 + 1  # expires_after's default: one hour
    assert all(e["PK"]["S"].startswith("IDEMPOTENCY#test_idempotency.") for e in found)
    assert "o-1" not in json.dumps(found)  # the table holds the key's digest, never its value


@pytest.mark.parametrize(
    "result",
    [
        {"a": [1, 2.5, None, True]},
        ["x", {"y": 1}],
        "text",
        0,
        None,
        ({"status": "created"}, 201),
        Receipt("o-1", 5),
        Bundle([Receipt("o-1", 5, datetime(2024, 5, 1, 12, tzinfo=UTC))], "two"),
        Charge(order_id="o-1", total=Decimal("12.50"), at=datetime(2024, 5, 1, tzinfo=UTC)),
    ],
    ids=["dict", "list", "str", "int", "none", "tuple", "dataclass", "nested_dataclass", "pydantic"],
)
def test_a_stored_result_is_restored_as_it_was_returned(table, dynamodb, result):
    runs = []

    @idempotent(key="id", table=table, client=dynamodb)
    def call(payload, context):
        runs.append(payload)
        return result

    first = call({"id": 1}, None)
    second = call({"id": 1}, None)
    assert len(runs) == 1 and first is result
    assert second == result and type(second) is type(result)


def test_a_result_that_cannot_be_stored_fails_the_call_and_frees_its_key(table, dynamodb):
    runs = []

    @idempotent(key="id", table=table, client=dynamodb)
    def call(payload, context):
        runs.append(1)
        return {"at": object()}

    for _ in range(2):
        with pytest.raises(IdempotencyError, match="returned a value that cannot be stored"):
            call({"id": 1}, None)
    assert len(runs) == 2 and entries(dynamodb, table) == []


def test_key_from_fields_a_dotted_path_several_fields_or_a_function(table, dynamodb):
    runs = []

    def record(name):
        def call(payload, context):
            runs.append(name)
            return name

        return call

    composite = idempotent(key=["customer.id", "order"], table=table, client=dynamodb)(record("composite"))
    by_function = idempotent(key=lambda p: p["order"].lower(), table=table, client=dynamodb, name="fn")(
        record("fn")
    )
    assert composite({"customer": {"id": 1}, "order": "A"}, None) == "composite"
    assert composite({"customer": {"id": 1}, "order": "A", "extra": 2}, None) == "composite"
    assert composite({"customer": {"id": 2}, "order": "A"}, None) == "composite"
    assert by_function({"order": "A"}, None) == by_function({"order": "a"}, None) == "fn"
    assert runs == ["composite", "composite", "fn"]


def test_a_payload_without_its_key_is_refused_and_never_run(table, dynamodb):
    runs = []

    @idempotent(key="order_id", table=table, client=dynamodb)
    def call(payload, context):
        runs.append(1)

    for payload in ({}, {"order_id": None}):
        with pytest.raises(MissingKey, match="the payload has no key field 'order_id'"):
            call(payload, None)
    with pytest.raises(MissingKey, match="gave None"):
        idempotent(key=lambda p: None, table=table, client=dynamodb)(lambda p, c: 1)({}, None)
    assert runs == [] and entries(dynamodb, table) == []


def test_the_key_of_a_model_instance_is_read_by_attribute(table, dynamodb):
    runs = []

    @idempotent(key="order_id", table=table, client=dynamodb)
    def call(charge, context):
        runs.append(charge)
        return str(charge.total)

    at = datetime(2024, 5, 1, tzinfo=UTC)
    assert call(Charge(order_id="o-1", total=Decimal("1.5"), at=at), None) == "1.5"
    assert call(Charge(order_id="o-1", total=Decimal("1.5"), at=at), None) == "1.5"
    assert len(runs) == 1


# -- in progress, the deadline, failures -----------------------------------------------------------


def test_a_call_made_while_another_runs_is_refused_then_gets_the_result(table, dynamodb):
    started, release = threading.Event(), threading.Event()

    @idempotent(key="id", table=table, client=dynamodb)
    def slow(payload, context):
        started.set()
        release.wait(10)
        return "done"

    first = threading.Thread(target=slow, args=({"id": 1}, lambda_context()))
    first.start()
    assert started.wait(10)
    with pytest.raises(AlreadyInProgress, match="in progress") as raised:
        slow({"id": 1}, lambda_context())
    assert raised.value.status == 409
    release.set()
    first.join()
    assert slow({"id": 1}, lambda_context()) == "done"


def test_the_claim_lasts_until_the_invocations_deadline_and_no_longer(table, dynamodb):
    """The #801 window: a run killed mid-call (its claim left in progress) blocks the key only until
    its own invocation's deadline, read from the context."""
    observed = {}

    @idempotent(key="id", table=table, client=dynamodb)
    def call(payload, context):
        observed["entry"] = entries(dynamodb, table)[0]
        return "ran"

    before = int(time.time() * 1000)
    assert call({"id": 1}, lambda_context(timeout=1.5)) == "ran"
    until = int(observed["entry"]["until"]["N"])
    assert observed["entry"]["status"]["S"] == "IN_PROGRESS"
    assert before + 1400 <= until <= int(time.time() * 1000) + 1500

    dynamodb.delete_item(TableName=table, Key={"PK": observed["entry"]["PK"], "SK": observed["entry"]["SK"]})
    leave_claim(dynamodb, table, call, 1, for_ms=1000)  # as a run killed mid-call leaves it
    with pytest.raises(AlreadyInProgress):
        call({"id": 1}, lambda_context())
    time.sleep(1.1)  # past the killed run's deadline
    assert call({"id": 1}, lambda_context()) == "ran"


def test_without_a_context_the_claim_lasts_the_fallback(table, dynamodb):
    seen = {}

    @idempotent(key="id", table=table, client=dynamodb, in_progress_expires_after=timedelta(seconds=42))
    def call(payload):
        seen["until"] = int(entries(dynamodb, table)[0]["until"]["N"])

    before = int(time.time() * 1000)
    call({"id": 1})
    assert before + 42_000 <= seen["until"] <= int(time.time() * 1000) + 42_000


def test_a_call_that_raises_frees_its_key_at_once(table, dynamodb):
    attempts = itertools.count(1)

    @idempotent(key="id", table=table, client=dynamodb)
    def flaky(payload, context):
        if next(attempts) == 1:
            raise RuntimeError("card declined")
        return "charged"

    with pytest.raises(RuntimeError, match="card declined"):
        flaky({"id": 1}, lambda_context())
    assert entries(dynamodb, table) == []
    assert flaky({"id": 1}, lambda_context()) == "charged"


def test_an_expired_result_runs_again(dynamodb, unique_name):
    """On a table whose TTL is off (DynamoDB's TTL deletes expired items within days, DynamoDB Local
    within seconds, moto never): the claim's condition decides that the entry expired."""
    table = unique_name("NoTTL")
    dynamodb.create_table(
        TableName=table,
        AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("PK", "SK")],
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        BillingMode="PAY_PER_REQUEST",
    )
    runs = itertools.count(1)

    @idempotent(key="id", table=table, client=dynamodb, expires_after=timedelta(seconds=1))
    def call(payload, context):
        return next(runs)

    assert call({"id": 1}, None) == 1
    assert call({"id": 1}, None) == 1
    time.sleep(2.1)
    assert len(entries(dynamodb, table)) == 1  # expired, still there
    assert call({"id": 1}, None) == 2


# -- validate= -------------------------------------------------------------------------------------


def test_validate_refuses_a_key_reused_with_another_payload(table, dynamodb):
    @idempotent(key="id", table=table, client=dynamodb, validate=True)
    def whole(payload, context):
        return payload["amount"]

    @idempotent(key="id", table=table, client=dynamodb, validate=["amount"], name="fields")
    def fields(payload, context):
        return payload["amount"]

    assert whole({"id": 1, "amount": 5}, None) == 5
    assert whole({"id": 1, "amount": 5}, None) == 5
    with pytest.raises(PayloadMismatch, match="used before with another payload") as raised:
        whole({"id": 1, "amount": 6}, None)
    assert raised.value.status == 422
    assert fields({"id": 1, "amount": 5, "note": "a"}, None) == 5
    assert fields({"id": 1, "amount": 5, "note": "b"}, None) == 5  # only the amount is compared
    with pytest.raises(PayloadMismatch):
        fields({"id": 1}, None)


# -- under the decorators -----------------------------------------------------------------------


def test_in_a_batch_a_duplicate_says_so_and_one_in_progress_fails_alone(table, dynamodb, capfd):
    runs = []

    @sqs_handler
    @idempotent(key="order_id", table=table, client=dynamodb)
    def place(order, context):
        runs.append(order["order_id"])
        return {"placed": order["order_id"]}

    place(sqs_event({"order_id": "a"}), lambda_context())
    leave_claim(dynamodb, table, place, "held", for_ms=60_000)  # another invocation runs "held" now
    read_lines(capfd)
    event = {"Records": [sqs_record({"order_id": k}) for k in ("a", "held", "b")]}
    response = place(event, lambda_context())
    assert response == {"batchItemFailures": [{"itemIdentifier": event["Records"][1]["messageId"]}]}
    assert runs == ["a", "b"]
    lines = read_lines(capfd)
    processed = with_message(lines, "record processed")
    assert [(line["outcome"], line["result"]) for line in processed] == [
        ("duplicate", {"placed": "a"}),
        ("ok", {"placed": "b"}),
    ]
    [failed] = with_message(lines, "record failed")
    assert failed["error_type"] == "AlreadyInProgress" and failed["outcome"] == "failed"


# -- the side effect and the entry in one transaction ---------------------------------------------


def test_writes_commit_with_the_entry_exactly_once(table, orders, dynamodb):
    runs = []

    @sqs_handler
    @idempotent(key="order_id", table=table, client=dynamodb)
    def place(order, context):
        runs.append(order["order_id"])
        writes = current_writes()
        writes.put(orders, {"PK": order["order_id"], "SK": "ORDER", "total": Decimal("12.5")})
        writes.update(
            orders,
            {"PK": "CUSTOMER#c1", "SK": "ORDER"},
            "ADD #orders :one",
            names={"#orders": "orders"},
            values={":one": 1},
        )
        assert item(dynamodb, orders, order["order_id"]) is None  # nothing is written before it returns
        return "placed"

    event = sqs_event({"order_id": "o-1"}, {"order_id": "o-2"})
    assert place(event, lambda_context()) == {"batchItemFailures": []}
    assert place(event, lambda_context()) == {"batchItemFailures": []}  # redelivered: duplicates
    assert runs == ["o-1", "o-2"]
    assert item(dynamodb, orders, "o-1")["total"] == {"N": "12.5"}
    assert item(dynamodb, orders, "CUSTOMER#c1")["orders"] == {"N": "2"}
    assert {e["status"]["S"] for e in entries(dynamodb, table)} == {"COMPLETED"}


def test_a_call_that_raises_after_adding_writes_writes_nothing(table, orders, dynamodb):
    @idempotent(key="id", table=table, client=dynamodb)
    def call(payload, context):
        current_writes().put(orders, {"PK": "o-1", "SK": "ORDER"})
        raise RuntimeError("the card was declined after all")

    with pytest.raises(RuntimeError):
        call({"id": 1}, None)
    assert item(dynamodb, orders, "o-1") is None and entries(dynamodb, table) == []


def test_a_claim_lost_before_completion_commits_none_of_the_writes(table, orders, dynamodb):
    """The call outlived its deadline and another took the key over: its transaction is cancelled by
    the entry's condition, so the writes are made once, by the call that holds the key."""

    @idempotent(key="id", table=table, client=dynamodb)
    def call(payload, context):
        current_writes().put(orders, {"PK": "o-1", "SK": "ORDER"})
        leave_claim(dynamodb, table, call, 1, for_ms=60_000)  # taken over while this one ran
        return "late"

    with pytest.raises(ClaimLost, match="its writes were not made"):
        call({"id": 1}, lambda_context())
    assert item(dynamodb, orders, "o-1") is None
    assert [e["owner"]["S"] for e in entries(dynamodb, table)] == ["another-invocation"]


def test_a_claim_lost_without_writes_returns_the_result_and_says_both_ran(table, dynamodb, capfd):
    @idempotent(key="id", table=table, client=dynamodb)
    def call(payload, context):
        leave_claim(dynamodb, table, call, 1, for_ms=60_000)
        return "ran"

    assert call({"id": 1}, None) == "ran"
    [warning] = with_message(
        read_lines(capfd),
        "an idempotent call outlived its deadline and another call claimed its key: both ran",
    )
    assert warning["level"] == "WARN" and warning["table"] == table


def test_a_write_whose_condition_fails_names_it_and_frees_the_key(table, orders, dynamodb):
    dynamodb.put_item(TableName=orders, Item={"PK": {"S": "o-1"}, "SK": {"S": "ORDER"}})

    @idempotent(key="id", table=table, client=dynamodb)
    def call(payload, context):
        current_writes().put(
            orders, {"PK": "o-1", "SK": "ORDER", "v": 2}, condition="attribute_not_exists(PK)"
        )
        return "placed"

    with pytest.raises(IdempotencyError) as raised:
        call({"id": 1}, None)
    refused = f"write 1 of the idempotent call (Put on table {orders!r}) was refused: ConditionalCheckFailed"
    assert str(raised.value).startswith(refused)
    assert entries(dynamodb, table) == [] and "v" not in item(dynamodb, orders, "o-1")


def test_writes_are_checked_as_they_are_added(table, orders, dynamodb):
    @idempotent(key="id", table=table, client=dynamodb)
    def call(payload, context):
        writes = current_writes()
        with pytest.raises(IdempotencyError, match="cannot be written: Float types are not supported"):
            writes.put(orders, {"PK": "a", "SK": "b", "x": 1.5})
        with pytest.raises(IdempotencyError, match="must be one of Put, Update, Delete, ConditionCheck"):
            writes.add({"Upsert": {}})
        for index in range(99):
            writes.check(orders, {"PK": f"k{index}", "SK": "ORDER"}, "attribute_not_exists(PK)")
        with pytest.raises(IdempotencyError, match="at most 99 actions"):
            writes.delete(orders, {"PK": "k", "SK": "ORDER"})
        return len(writes.actions)

    assert call({"id": 1}, None) == 99
    with pytest.raises(IdempotencyError, match="outside an @idempotent function"):
        current_writes()


# -- async def, the API, plain functions -----------------------------------------------------------


def test_async_records_run_at_once_and_a_key_twice_in_flight_fails_alone(table, orders, dynamodb):
    running, at_once = [], []

    @sqs_handler(max_concurrency=4)
    @idempotent(key="order_id", table=table, client=dynamodb)
    async def place(order, context):
        running.append(order["order_id"])
        await asyncio.sleep(0.3)
        at_once.append(len(running))  # how many had started by the time this one woke
        current_writes().update(
            orders,
            {"PK": order["order_id"], "SK": "ORDER"},
            "ADD #n :one",
            names={"#n": "n"},
            values={":one": 1},
        )
        return order["order_id"]

    event = sqs_event(*({"order_id": k} for k in ("a", "b", "a", "c")))
    response = place(event, lambda_context())
    ids = [record["messageId"] for record in event["Records"]]
    # one of the two "a" claimed the key; the other met it in progress and failed alone
    assert response["batchItemFailures"] in ([{"itemIdentifier": ids[0]}], [{"itemIdentifier": ids[2]}])
    assert sorted(running) == ["a", "b", "c"]
    assert max(at_once) == 3  # the three ran at once
    assert place(event, lambda_context()) == {"batchItemFailures": []}  # the retry: duplicates
    assert [item(dynamodb, orders, k)["n"] for k in "abc"] == [{"N": "1"}] * 3


def test_an_api_keyed_by_its_idempotency_key_header(table, dynamodb):
    runs = []

    @api_handler
    @idempotent(key=header(), table=table, client=dynamodb, validate=True)
    def create(request, context):
        runs.append(request.json)
        return {"order": len(runs)}, 201

    def post(key, body):
        headers = {"content-type": "application/json", **({"idempotency-key": key} if key else {})}
        response = create(
            api_event("POST", "/orders", body=json.dumps(body), headers=headers), lambda_context()
        )
        return response["statusCode"], json.loads(response["body"])

    assert post("k-1", {"item": "tea"}) == (201, {"order": 1})
    assert post("k-1", {"item": "tea"}) == (201, {"order": 1})  # the same answer, not run again
    assert post("k-2", {"item": "tea"}) == (201, {"order": 2})
    status, body = post("k-1", {"item": "coffee"})
    assert status == 422 and "another payload" in body["error"]
    status, body = post(None, {"item": "tea"})
    assert (
        status == 400
        and body["error"] == "the request has no Idempotency-Key header: send one to make it idempotent"
    )
    leave_claim(dynamodb, table, create, "k-3", for_ms=60_000)
    status, body = post("k-3", {"item": "tea"})
    assert status == 409 and "in progress" in body["error"]
    assert len(runs) == 2


def test_an_api_duplicate_says_so_on_its_processed_line(table, dynamodb, capfd):
    @api_handler
    @idempotent(key=header(), table=table, client=dynamodb)
    def create(request, context):
        return {"order": 1}, 201

    headers = {"content-type": "application/json", "idempotency-key": "k-1"}
    read_lines(capfd)
    for _ in range(2):
        create(api_event("POST", "/orders", body="{}", headers=headers), lambda_context())
    processed = with_message(read_lines(capfd), "request processed")
    assert [(line["status"], line["outcome"], line["result"]) for line in processed] == [
        (201, "ok", {"order": 1}),
        (201, "duplicate", {"order": 1}),
    ]


def test_a_plain_function_keyed_by_a_named_argument(table, dynamodb):
    sent = []

    @idempotent(key="to", table=table, client=dynamodb, argument="email")
    def send_welcome(template, email):
        sent.append((template, email["to"]))
        return f"sent {template}"

    assert send_welcome("welcome", {"to": "a@example.com"}) == "sent welcome"
    assert send_welcome("welcome", email={"to": "a@example.com"}) == "sent welcome"
    assert sent == [("welcome", "a@example.com")]
    with pytest.raises(IdempotencyError, match="called without its payload"):
        send_welcome("welcome")


# -- what a user fixes -------------------------------------------------------------------------------


def test_a_missing_table_is_one_clear_error(dynamodb):
    call = idempotent(key="id", table="NoSuchTable", client=dynamodb)(lambda payload, context: 1)
    with pytest.raises(IdempotencyError) as raised:
        call({"id": 1}, None)
    assert str(raised.value) == "DynamoDB table 'NoSuchTable' not found: create it or fix the table name"


def test_a_role_without_the_permission_is_one_clear_error(table, dynamodb):
    call = idempotent(key="id", table=table, client=dynamodb)(lambda payload, context: 1)
    with hook(dynamodb, "before-call.dynamodb.PutItem", lambda **_: fake_error("AccessDeniedException")):
        with pytest.raises(IdempotencyError) as raised:
            call({"id": 1}, None)
    assert str(raised.value) == (
        f"DynamoDB denied PutItem on table {table!r}: the role needs dynamodb:PutItem "
        "(lambda_kit.idempotency writes with PutItem and DeleteItem)"
    )


def test_throttled_claims_are_retried_under_the_backoff(table, dynamodb):
    sleeps: list[float] = []
    backoff = Backoff(attempts=4, base=0.05, sleep=sleeps.append, jitter=lambda: 1.0)
    call = idempotent(key="id", table=table, client=dynamodb, backoff=backoff)(lambda payload, context: 1)
    throttled = itertools.count()

    def throttle(**_kwargs):
        return fake_error("ThrottlingException") if next(throttled) < 2 else None

    with hook(dynamodb, "before-call.dynamodb.PutItem", throttle):
        assert call({"id": 1}, None) == 1
    assert sleeps == [0.05, 0.1]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"key": "id", "table": ""}, "table= must name a DynamoDB table"),
        ({"key": "id", "table": "t", "expires_after": 60}, "expires_after= must be a positive timedelta"),
        ({"key": [], "table": "t"}, "key= takes field names"),
        ({"key": "id", "table": "t", "validate": [1]}, "validate= takes field names"),
        ({"key": "id", "table": "t", "argument": "nope"}, "has no such parameter"),
    ],
)
def test_bad_options_are_refused_when_decorating(options, message):
    with pytest.raises(TypeError, match=message):
        idempotent(**options)(lambda payload, context: None)


def test_importing_idempotency_does_not_import_boto3():
    code = (
        "import sys, lambda_kit.idempotency\n"
        "print(sorted(m for m in ('boto3', 'botocore', 'asyncio') if m in sys.modules))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout == "[]\n"


# -- a batch's calls completed together at its commit ------------------------------------------------


def placing_at_commit(table, orders, dynamodb, shared_item=False):
    @sqs_handler(commit=complete_batch)
    @idempotent(key="order_id", table=table, client=dynamodb, at_commit=True)
    def place(order, context):
        writes = current_writes()
        condition = "attribute_not_exists(PK)" if order.get("once") else None
        writes.put(orders, {"PK": order.get("put_as", order["order_id"]), "SK": "ORDER"}, condition=condition)
        if order.get("overtaken"):  # another invocation took the key over while this one ran
            leave_claim(dynamodb, table, place, order["order_id"], for_ms=60_000)
        if shared_item:
            writes.update(
                orders,
                {"PK": "CUSTOMER", "SK": "ORDER"},
                "ADD #n :one",
                names={"#n": "n"},
                values={":one": 1},
            )
        return order["order_id"]

    return place


def test_a_batchs_calls_commit_in_as_few_transactions_as_they_pack_into(table, orders, dynamodb):
    place = placing_at_commit(table, orders, dynamodb)
    event = sqs_event(*({"order_id": f"o-{n}"} for n in range(150)))
    with test_counters.requests_sent(dynamodb, "TransactWriteItems") as sent:
        assert place(event, lambda_context()) == {"batchItemFailures": []}
    assert [len(body["TransactItems"]) for body in sent] == [100, 100, 100]  # 150 writes + 150 entries
    found = dynamodb.scan(TableName=orders, ConsistentRead=True)["Items"]
    assert len(found) == 150
    with test_counters.requests_sent(dynamodb, "TransactWriteItems") as sent:
        assert place(event, lambda_context()) == {"batchItemFailures": []}  # redelivered: duplicates
    assert sent == []


def test_at_commit_a_refused_write_or_a_lost_claim_fails_its_record_alone(table, orders, dynamodb, capfd):
    place = placing_at_commit(table, orders, dynamodb)
    dynamodb.put_item(TableName=orders, Item={"PK": {"S": "o-taken"}, "SK": {"S": "ORDER"}})
    orders_ = (
        {"order_id": "o-1"},
        {"order_id": "o-taken", "once": True},
        {"order_id": "o-3", "overtaken": True},
    )
    event = sqs_event(*orders_, {"order_id": "o-4"})
    ids = [record["messageId"] for record in event["Records"]]
    failed = [{"itemIdentifier": ids[1]}, {"itemIdentifier": ids[2]}]
    assert place(event, lambda_context()) == {"batchItemFailures": failed}
    assert item(dynamodb, orders, "o-1") and item(dynamodb, orders, "o-4")
    assert item(dynamodb, orders, "o-3") is None  # its claim was lost: none of its writes made
    warnings = with_message(read_lines(capfd), "idempotent call not completed at commit")
    assert [(w["trace_id"], w["error_type"]) for w in warnings] == [
        (ids[1], "IdempotencyError"),
        (ids[2], "ClaimLost"),
    ]
    assert "write 1 of the idempotent call (Put on table" in warnings[0]["error"]
    owners = sorted(e.get("owner", {}).get("S", "") == "another-invocation" for e in entries(dynamodb, table))
    assert len(owners) == 3 and owners.count(True) == 1  # o-taken's claim released; o-3 the other's


def test_at_commit_calls_writing_one_item_are_sent_apart(table, orders, dynamodb):
    """A transaction takes one action per item: calls updating one item (known by its key) go in
    different transactions; calls putting one item (a put's key is not known) are sent alone after
    DynamoDB refused them together."""
    place = placing_at_commit(table, orders, dynamodb, shared_item=True)
    event = sqs_event({"order_id": "o-1"}, {"order_id": "o-2"}, {"order_id": "o-3"})
    with test_counters.requests_sent(dynamodb, "TransactWriteItems") as sent:
        assert place(event, lambda_context()) == {"batchItemFailures": []}
    assert len(sent) == 3 and item(dynamodb, orders, "CUSTOMER")["n"] == {"N": "3"}
    assert place(event, lambda_context()) == {"batchItemFailures": []}
    assert item(dynamodb, orders, "CUSTOMER")["n"] == {"N": "3"}

    same_put = sqs_event({"order_id": "o-9"}, {"order_id": "o-9 "})
    for record, key in zip(same_put["Records"], ("o-9", "o-9 "), strict=True):
        record["body"] = json.dumps({"order_id": key, "put_as": "o-9"})
    putting = placing_at_commit(table, orders, dynamodb)
    with test_counters.requests_sent(dynamodb, "TransactWriteItems") as sent:
        assert putting(same_put, lambda_context()) == {"batchItemFailures": []}
    assert len(sent) == 3  # refused together, then one each
    assert item(dynamodb, orders, "o-9") is not None


def test_at_commit_needs_a_record(table, orders, dynamodb):
    @idempotent(key="id", table=table, client=dynamodb, at_commit=True)
    def call(payload, context):
        current_writes().put(orders, {"PK": "a", "SK": "ORDER"})

    with pytest.raises(IdempotencyError, match="completes calls in a batch decorator's commit"):
        call({"id": 1}, None)
    assert entries(dynamodb, table) == []


def test_at_commit_a_duplicate_in_the_same_batch_is_answered_by_the_waiting_call(
    table, orders, dynamodb, capfd
):
    place = placing_at_commit(table, orders, dynamodb, shared_item=True)
    read_lines(capfd)
    assert place(sqs_event({"order_id": "o-1"}, {"order_id": "o-1"}), lambda_context()) == {
        "batchItemFailures": []
    }
    assert item(dynamodb, orders, "CUSTOMER")["n"] == {"N": "1"}
    processed = with_message(read_lines(capfd), "record processed")
    assert [(line["outcome"], line["result"]) for line in processed] == [("ok", "o-1"), ("duplicate", "o-1")]


def test_at_commit_calls_no_commit_completed_are_released_and_said_at_the_next_invocation(
    table, orders, dynamodb, capfd
):
    @sqs_handler  # no commit=complete_batch: the mistake lambda-kit check reports
    @idempotent(key="order_id", table=table, client=dynamodb, at_commit=True)
    def place(order, context):
        current_writes().put(orders, {"PK": order["order_id"], "SK": "ORDER"})

    first = sqs_event({"order_id": "o-1"})
    place(first, lambda_context())
    assert [e["status"]["S"] for e in entries(dynamodb, table)] == ["IN_PROGRESS"]
    read_lines(capfd)
    place(sqs_event({"order_id": "o-2"}), lambda_context())
    [error] = with_message(
        read_lines(capfd),
        "idempotent calls of an earlier invocation were never completed: their writes were not made",
    )
    assert error["calls"] == 1 and error["trace_ids"] == [first["Records"][0]["messageId"]]
    assert "commit=complete_batch" in error["fix"]
    assert item(dynamodb, orders, "o-1") is None
    # o-1's claim released (o-2's waits, as o-1's did): a redelivery of o-1 runs at once
    assert [e["status"]["S"] for e in entries(dynamodb, table)] == ["IN_PROGRESS"]
    complete_batch([])  # what waits is released: no other test meets it
