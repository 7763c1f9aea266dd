"""lambda_kit.counters when DynamoDB answers badly, stated exactly: which errors are retried, after
how long and with which ``ClientRequestToken``; what a cancelled transaction's reasons turn into;
the one-line errors a user fixes; ``get_many`` with throttled, unprocessed and sparse answers.

Faults are injected with botocore's event hooks (a ``before-call`` hook answers instead of the
server, an ``after-call`` hook edits the server's answer), on the backends of ``test_counters.py``.
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
import test_counters
from botocore.exceptions import ClientError
from test_counters import fake_error, hook, item, requests_sent

from lambda_kit.counters import (
    COUNTER_SK,
    MARKER_PREFIX,
    Backoff,
    Counter,
    CounterError,
    IncrementResult,
    InvalidKeyError,
    shard_pk,
)
from lambda_kit.trace import reset_current_record, set_current_record

backend = test_counters.backend  # each test on DynamoDB Local and on moto, as test_counters.py's
dynamodb = test_counters.dynamodb

Outcome = Callable[[dict], tuple] | None
"""What a scripted call gets: a fake answer made from the request's JSON body, or None (sent as is)."""


def exact_backoff(sleeps: list[float], attempts: int = 4) -> Backoff:
    """Waits recorded, jitter off: the n-th consecutive failure waits 0.05 * 2 ** (n - 1) seconds."""
    return Backoff(attempts=attempts, base=0.05, cap=2.0, sleep=sleeps.append, jitter=lambda: 1.0)


@contextmanager
def scripted(client, operation: str, *outcomes: Outcome) -> Iterator[list[dict]]:
    """Every call of ``operation`` (its request body, as JSON), the first ones answered by ``outcomes``."""
    calls: list[dict] = []

    def answer(params, **_kwargs):
        calls.append(json.loads(params["body"]))
        at = len(calls) - 1
        outcome = outcomes[at] if at < len(outcomes) else None
        return outcome(calls[-1]) if outcome is not None else None

    with hook(client, f"before-call.dynamodb.{operation}", answer):
        yield calls


def error(code: str | None, status: int = 400, message: str | None = None, **extra) -> Outcome:
    def make(_body: dict) -> tuple:
        answer = fake_error(code or "Unused", status, **extra)
        if code is None:
            del answer[1]["Error"]
        elif message == "":  # no Message member at all
            del answer[1]["Error"]["Message"]
        elif message is not None:
            answer[1]["Error"]["Message"] = message
        return answer

    return make


def cancelled(*reasons: dict) -> Outcome:
    return error("TransactionCanceledException", CancellationReasons=list(reasons))


def tokens(calls: list[dict]) -> list[str]:
    return [call["ClientRequestToken"] for call in calls]


@pytest.fixture
def table(counter_table) -> str:
    return counter_table


def counter_on(table: str, client, sleeps: list[float] | None = None, **kwargs) -> Counter:
    return Counter(
        table, client=client, backoff=exact_backoff(sleeps if sleeps is not None else []), **kwargs
    )


# -- which errors are retried, and with which token --------------------------------------------------


def test_a_5xx_with_a_code_nobody_listed_is_retried_with_the_same_token(table, dynamodb):
    sleeps: list[float] = []
    counter = counter_on(table, dynamodb, sleeps)
    with scripted(
        dynamodb, "TransactWriteItems", error("NewKindOfOutage", 503), error("NewKindOfOutage", 500)
    ) as calls:
        assert counter.increment_many([("k", "e1"), ("k", "e2")]).counted == [("k", "e1"), ("k", "e2")]
    assert len(calls) == 3 and sleeps == [0.05, 0.1]
    # the outcome of a 5xx is unknown: the resend is the same request, so DynamoDB can answer it as done
    assert len(set(tokens(calls))) == 1 and calls[0] == calls[1] == calls[2]
    assert counter.get("k") == 2


def test_an_error_that_cannot_have_happened_gets_a_new_token_an_unknown_outcome_keeps_it(table, dynamodb):
    sleeps: list[float] = []
    counter = counter_on(table, dynamodb, sleeps)
    with scripted(
        dynamodb,
        "TransactWriteItems",
        error("ThrottlingException"),
        error("ThrottlingException"),
        error("TransactionInProgressException"),
    ) as calls:
        assert counter.increment("k", "e1") is True
    first, second, third, fourth = tokens(calls)
    assert first != second != third and third == fourth  # throttled: not carried out; in progress: maybe
    assert all(str(uuid.UUID(token)) == token for token in (first, second, third))
    assert sleeps == [0.05, 0.1, 0.2]


def test_a_4xx_with_a_code_nobody_listed_is_not_retried(table, dynamodb):
    sleeps: list[float] = []
    counter = counter_on(table, dynamodb, sleeps)
    with scripted(dynamodb, "TransactWriteItems", error("SomethingNew", 400)) as calls:
        with pytest.raises(dynamodb.exceptions.ClientError, match="SomethingNew"):
            counter.increment("k", "e1")
    assert len(calls) == 1 and sleeps == []


def test_an_answer_without_error_or_status_members_is_still_classified(table, dynamodb):
    sleeps: list[float] = []
    counter = counter_on(table, dynamodb, sleeps)
    # a 503 whose body names no error: transient, retried
    with scripted(dynamodb, "TransactWriteItems", error(None, 503)) as calls:
        assert counter.increment("k", "e1") is True
    assert len(calls) == 2 and sleeps == [0.05]

    def no_metadata(_body: dict) -> tuple:
        http, parsed = fake_error("ResourceNotFoundException")
        del parsed["ResponseMetadata"]
        return http, parsed

    with scripted(dynamodb, "TransactWriteItems", no_metadata):
        with pytest.raises(CounterError) as raised:
            counter.increment("k", "e2")
    assert str(raised.value) == f"DynamoDB table {table!r} not found: create it or fix the table name"


def test_a_refused_token_is_replaced_by_a_new_one(table, dynamodb):
    sleeps: list[float] = []
    counter = counter_on(table, dynamodb, sleeps)
    with scripted(dynamodb, "TransactWriteItems", error("IdempotentParameterMismatchException")) as calls:
        assert counter.increment_many([("k", "e1"), ("j", "e1")]).counted == [("k", "e1"), ("j", "e1")]
    first, second = tokens(calls)
    assert first != second and str(uuid.UUID(second)) == second
    assert sleeps == [0.05] and counter.get_many(["k", "j"]) == {"k": 1, "j": 1}


def test_every_transaction_has_its_own_token(table, dynamodb):
    counter = counter_on(table, dynamodb)
    with requests_sent(dynamodb, "TransactWriteItems") as sent:
        counter.increment_many([("k", f"e{i}") for i in range(150)])
        counter.increment("k", "e150")
    assert len(sent) == 3 and len(set(tokens(sent))) == 3
    assert all(str(uuid.UUID(token)) == token for token in tokens(sent))


def test_the_failure_count_restarts_after_each_transaction_that_succeeds(table, dynamodb):
    sleeps: list[float] = []
    counter = counter_on(table, dynamodb, sleeps, read_first=False)
    throttled = error("ThrottlingException")
    with scripted(dynamodb, "TransactWriteItems", throttled, None, throttled) as calls:
        assert len(counter.increment_many([("k", f"e{i}") for i in range(150)]).counted) == 150
    assert len(calls) == 4 and sleeps == [0.05, 0.05]


def test_a_cancellation_that_names_duplicates_is_progress_and_resent_at_once(table, dynamodb):
    sleeps: list[float] = []
    counter = counter_on(table, dynamodb, sleeps, read_first=False)
    # fewer reasons than actions: the ones given are read, the rest are taken as no objection
    duplicate_e1 = cancelled({"Code": "ConditionalCheckFailed"})
    with scripted(dynamodb, "TransactWriteItems", duplicate_e1, error("ThrottlingException")) as calls:
        result = counter.increment_many([("k", "e1"), ("k", "e2"), ("k", "e3")])
    assert result == IncrementResult(counted=[("k", "e2"), ("k", "e3")], duplicates=[("k", "e1")])
    # resent at once without e1; then throttled once, a first failure again: 0.05 s
    assert len(calls) == 3 and sleeps == [0.05]
    assert len(calls[1]["TransactItems"]) == len(calls[2]["TransactItems"]) == 3
    assert counter.get("k") == 2


def test_a_cancellation_with_a_duplicate_and_a_conflict_backs_off_before_the_resend(table, dynamodb):
    sleeps: list[float] = []
    counter = counter_on(table, dynamodb, sleeps, read_first=False)
    mixed = cancelled({"Code": "ConditionalCheckFailed"}, {"Code": "TransactionConflict"}, {"Code": "None"})
    with scripted(dynamodb, "TransactWriteItems", mixed) as calls:
        result = counter.increment_many([("k", "e1"), ("k", "e2")])
    assert result == IncrementResult(counted=[("k", "e2")], duplicates=[("k", "e1")])
    assert len(calls) == 2 and sleeps == [0.05]


def test_a_redelivered_batch_costs_one_cancelled_transaction_and_a_read(table, dynamodb):
    """A batch counted before comes back to a counter that has met no duplicates yet (a new
    environment after a crash past the commit): it does not read first, its first transaction is
    cancelled by its markers, and the rest is read, not sent to be cancelled in turn."""
    batch = [("k", f"e{i}") for i in range(250)]
    counter_on(table, dynamodb).increment_many(batch)
    with (
        requests_sent(dynamodb, "BatchGetItem") as read,
        requests_sent(dynamodb, "TransactWriteItems") as written,
    ):
        assert counter_on(table, dynamodb).increment_many(batch) == IncrementResult(
            counted=[], duplicates=batch
        )
    assert [len(body["TransactItems"]) for body in written] == [100]
    assert [len(body["RequestItems"][table]["Keys"]) for body in read] == [100, 51]


def test_a_cancellation_by_a_conflict_alone_reads_nothing(table, dynamodb):
    """A conflict says another transaction touched an item (most often the same counter item), not
    that an event was counted: the resend goes without a read of the markers still to be sent."""
    sleeps: list[float] = []
    counter = counter_on(table, dynamodb, sleeps)
    with (
        scripted(dynamodb, "TransactWriteItems", cancelled({"Code": "TransactionConflict"})),
        requests_sent(dynamodb, "BatchGetItem") as read,
    ):
        assert len(counter.increment_many([("k", f"e{i}") for i in range(150)]).counted) == 150
    assert read == [] and sleeps == [0.05]


def test_conflicts_on_every_try_propagate_the_cancellation_after_the_last(table, dynamodb):
    sleeps: list[float] = []
    counter = counter_on(table, dynamodb, sleeps)
    conflict = cancelled({"Code": "TransactionConflict"})
    with scripted(dynamodb, "TransactWriteItems", *[conflict] * 4) as calls:
        with pytest.raises(ClientError) as raised:
            counter.increment_many([("k", "e1"), ("k", "e2")])
    assert raised.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert len(calls) == 4 and sleeps == [0.05, 0.1, 0.2]
    assert counter.get("k") == 0


# -- what a cancelled transaction's reasons turn into ------------------------------------------------


@pytest.mark.parametrize(
    ("reasons", "kind", "message"),
    [
        (
            [{"Code": "ValidationError", "Message": "Item size has exceeded the maximum allowed size"}],
            InvalidKeyError,
            "DynamoDB rejected the increment of counter key 'k': "
            "Item size has exceeded the maximum allowed size",
        ),
        (
            [{"Code": "None"}, {"Code": "ValidationError"}],
            InvalidKeyError,
            "DynamoDB rejected the increment of counter key 'k': ",
        ),
        (
            [{"Code": "ItemCollectionSizeLimitExceeded", "Message": "Collection too large"}],
            CounterError,
            "DynamoDB cancelled the increment of counter key 'k': "
            "ItemCollectionSizeLimitExceeded Collection too large",
        ),
        (
            [{}, {"Code": "ItemCollectionSizeLimitExceeded"}],
            CounterError,
            "DynamoDB cancelled the increment of counter key 'k': ItemCollectionSizeLimitExceeded ",
        ),
        # a failed condition on the counter update (not a marker) is no duplicate
        (
            [{"Code": "None"}, {"Code": "ConditionalCheckFailed", "Message": "odd"}],
            CounterError,
            "DynamoDB cancelled the increment of counter key 'k': ConditionalCheckFailed odd",
        ),
    ],
    ids=[
        "validation-on-marker",
        "validation-on-update",
        "other-code",
        "other-code-bare",
        "condition-on-update",
    ],
)
def test_a_cancellation_reason_becomes_one_line_naming_the_key(table, dynamodb, reasons, kind, message):
    sleeps: list[float] = []
    counter = counter_on(table, dynamodb, sleeps, read_first=False)
    with scripted(dynamodb, "TransactWriteItems", cancelled(*reasons)) as calls:
        with pytest.raises(CounterError) as raised:
            counter.increment("k", "e1")
    assert type(raised.value) is kind and str(raised.value) == message
    assert len(calls) == 1 and sleeps == [] and counter.get("k") == 0


OVERFLOW = {
    "Code": "ValidationError",
    "Message": "Number overflow. Attempting to store a number with magnitude",
}


@pytest.mark.parametrize(
    "marker", [{"Code": "ConditionalCheckFailed"}, {"Code": "None"}], ids=["duplicate-named", "not-named"]
)
def test_a_refused_update_of_an_event_counted_before_is_a_duplicate(table, dynamodb, marker):
    """A transaction cancelled because its update would pass 38 digits, in the form the
    TransactWriteItems reference documents (a ``ValidationError`` reason on the update, "Number
    overflow"; the marker's failed condition named or not): the marker decides, so a redelivered
    event is a duplicate, not a batch that fails forever. DynamoDB Local refuses the whole request
    instead (tests/test_counters.py)."""
    counter = counter_on(table, dynamodb, read_first=False)
    assert counter.increment("k", "e1", 10**38 - 1) is True
    with scripted(dynamodb, "TransactWriteItems", cancelled(marker, OVERFLOW)) as calls:
        assert counter.increment("k", "e1", 10**38 - 1) is False
    assert len(calls) == 1 and counter.get("k") == 10**38 - 1
    with scripted(dynamodb, "TransactWriteItems", cancelled({"Code": "None"}, OVERFLOW)):
        with pytest.raises(
            InvalidKeyError, match="DynamoDB rejected the increment of counter key 'k': Number"
        ):
            counter.increment("k", "e2", 1)  # not counted before: the refusal stands
    assert counter.get("k") == 10**38 - 1


@pytest.mark.parametrize(
    "reasons", [None, [], [{"Code": "None"}, {"Message": "no code"}]], ids=["absent", "empty", "none"]
)
def test_a_cancellation_without_a_usable_reason_is_an_error_not_a_retry(table, dynamodb, reasons):
    counter = counter_on(table, dynamodb, read_first=False)
    extra = {} if reasons is None else {"CancellationReasons": reasons}
    with scripted(dynamodb, "TransactWriteItems", error("TransactionCanceledException", **extra)):
        with pytest.raises(CounterError) as raised:
            counter.increment("k", "e1")
    assert type(raised.value) is CounterError
    assert str(raised.value) == (
        f"DynamoDB cancelled a transaction on table {table!r} without a usable reason: An error occurred "
        "(TransactionCanceledException) when calling the TransactWriteItems operation: "
        "injected TransactionCanceledException"
    )


# -- one-line errors a user fixes --------------------------------------------------------------------


def test_a_write_the_role_may_not_make_names_the_operation(table, dynamodb):
    counter = counter_on(table, dynamodb, read_first=False)
    with scripted(dynamodb, "TransactWriteItems", error("AccessDeniedException")):
        with pytest.raises(CounterError) as raised:
            counter.increment("k", "e1")
    assert str(raised.value) == (
        f"DynamoDB denied TransactWriteItems on table {table!r}: "
        "the role needs dynamodb:PutItem and dynamodb:UpdateItem,"
        " which IAM checks for a transaction's items"
        " (Counter reads with BatchGetItem and writes with PutItem and UpdateItem)"
    )


@pytest.mark.parametrize(
    ("keys", "shown"),
    [
        (5, "'k0', 'k1', 'k2', 'k3', 'k4'"),
        (6, "'k0', 'k1', 'k2', 'k3', 'k4' ..."),
        (7, "'k0', 'k1', 'k2', 'k3', 'k4' ..."),
    ],
)
def test_a_rejected_write_names_its_first_five_keys(table, dynamodb, keys, shown):
    counter = counter_on(table, dynamodb, read_first=False)
    with scripted(dynamodb, "TransactWriteItems", error("ValidationException", message="bad request")):
        with pytest.raises(InvalidKeyError) as raised:
            counter.increment_many([(f"k{i}", "e1") for i in range(keys)])
    assert str(raised.value) == f"DynamoDB rejected the request for counter keys {shown}: bad request"


def test_a_rejected_read_names_the_items_it_asked_for(table, dynamodb):
    counter = counter_on(table, dynamodb, shards=2)
    with scripted(dynamodb, "BatchGetItem", error("ValidationException", message="")):
        with pytest.raises(InvalidKeyError) as raised:
            counter.get_many(["a", "b", "c"])
    assert str(raised.value) == (
        "DynamoDB rejected the request for counter keys 'a', 'a#SHARD#1', 'b', 'b#SHARD#1', 'c' ...: "
    )
    reader = counter_on(table, dynamodb, read_first=True)
    with scripted(dynamodb, "BatchGetItem", error("ValidationException", message="no")):
        with pytest.raises(InvalidKeyError) as raised:
            reader.increment("k", "e1")
    assert str(raised.value) == "DynamoDB rejected the request for counter keys 'k': no"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"table": ""}, "table name '' must be a non-empty str"),
        ({"table": 5}, "table name 5 must be a non-empty str"),
        ({"shards": 0}, "shards=0 must be an int of at least 1"),
        ({"marker_ttl": 3600}, "marker_ttl=3600 must be a positive timedelta"),
    ],
)
def test_bad_configuration_is_one_line_naming_the_setting(kwargs, message):
    with pytest.raises(CounterError) as raised:
        Counter(**{"table": "ViewStats", **kwargs})
    assert str(raised.value) == message


def test_an_increment_of_five_fields_is_refused(table, dynamodb):
    counter = counter_on(table, dynamodb)
    with pytest.raises(InvalidKeyError) as raised:
        counter.increment_many([("k", "e1", 1, None, "extra")])
    assert str(raised.value) == (
        "increment ('k', 'e1', 1, None, 'extra') must be (key, event_id), (key, event_id, amount) "
        "or an Increment"
    )


def test_invalid_events_are_named_exactly(table, dynamodb):
    counter = counter_on(table, dynamodb)
    cases = [
        (("k", 7), "event id 7 for counter key 'k' must be a str, not int"),
        (("k", ""), "event id for counter key 'k' must not be empty"),
        (("k", "é" * 510), f"event id {'é' * 60!r}... for counter key 'k' is longer than 1018 bytes"),
        (("k", "e1", 10**38), f"amount {10**38} for counter key 'k' has more than 38 digits"),
        (("k", "e1", -(10**38)), f"amount {-(10**38)} for counter key 'k' has more than 38 digits"),
        (("k", "e1", 1.0), "amount 1.0 for counter key 'k' must be an int"),
    ]
    for event, message in cases:
        with pytest.raises(InvalidKeyError) as raised:
            counter.increment_many([event])
        assert str(raised.value) == message
    # the limits themselves are accepted (and DynamoDB takes them)
    longest_id = "é" * 509
    assert len(longest_id.encode()) == 1018
    assert (
        counter.increment_many([("k", longest_id, 10**38 - 1), ("k", "e2", -(10**38 - 1))]).duplicates == []
    )
    assert counter.get("k") == 0


# -- get / get_many ----------------------------------------------------------------------------------


def test_get_reads_eventually_consistent_unless_asked(table, dynamodb):
    counter = counter_on(table, dynamodb)
    with requests_sent(dynamodb, "BatchGetItem") as sent:
        counter.get("k")
        counter.get_many(["k"])
        counter.get("k", consistent=True)
        counter.get_many(["k"], consistent=True)
    assert [body["RequestItems"][table]["ConsistentRead"] for body in sent] == [False, False, True, True]


def test_get_many_retries_a_throttled_read(table, dynamodb):
    sleeps: list[float] = []
    counter = counter_on(table, dynamodb, sleeps)
    counter.increment_many([("a", "e1", 3), ("b", "e1", 4)])
    throttled = error("ProvisionedThroughputExceededException")
    with scripted(dynamodb, "BatchGetItem", throttled, throttled) as calls:
        assert counter.get_many(["a", "b", "c"]) == {"a": 3, "b": 4, "c": 0}
    assert len(calls) == 3 and sleeps == [0.05, 0.1]


def test_get_many_gives_up_after_the_last_try(table, dynamodb):
    sleeps: list[float] = []
    counter = counter_on(table, dynamodb, sleeps)
    counter.backoff = exact_backoff(sleeps, attempts=3)
    throttled = error("ThrottlingException")
    with scripted(dynamodb, "BatchGetItem", *[throttled] * 5) as calls:
        with pytest.raises(dynamodb.exceptions.ClientError, match="ThrottlingException"):
            counter.get("a")
    assert len(calls) == 3 and sleeps == [0.05, 0.1]


def test_get_many_restarts_the_failure_count_after_each_read(table, dynamodb):
    sleeps: list[float] = []
    counter = counter_on(table, dynamodb, sleeps)
    keys = [f"k{i}" for i in range(150)]
    throttled = error("ThrottlingException")
    with scripted(dynamodb, "BatchGetItem", throttled, None, throttled) as calls:
        assert counter.get_many(keys) == dict.fromkeys(keys, 0)
    assert len(calls) == 4 and sleeps == [0.05, 0.05]


@contextmanager
def edited_reads(client, edit: Callable[[int, dict, list[dict]], None]) -> Iterator[None]:
    """``edit(n, parsed, keys_asked)`` on the n-th ``BatchGetItem`` answer (from 0)."""
    asked: list[list[dict]] = []
    answers = itertools.count()

    def remember(params, **_kwargs):
        asked.append(next(iter(json.loads(params["body"])["RequestItems"].values()))["Keys"])

    def change(parsed, **_kwargs):
        edit(next(answers), parsed, asked[-1])

    with (
        hook(client, "before-call.dynamodb.BatchGetItem", remember),
        hook(client, "after-call.dynamodb.BatchGetItem", change),
    ):
        yield


def test_get_many_says_how_many_items_stayed_unread(table, dynamodb):
    sleeps: list[float] = []
    counter = counter_on(table, dynamodb, sleeps)
    counter.backoff = exact_backoff(sleeps, attempts=3)

    def nothing_processed(_n, parsed, keys):
        parsed["Responses"] = {}
        parsed["UnprocessedKeys"] = {table: {"Keys": keys}}

    with edited_reads(dynamodb, nothing_processed), requests_sent(dynamodb, "BatchGetItem") as sent:
        with pytest.raises(CounterError) as raised:
            counter.get_many(["a", "b", "c"])
    assert str(raised.value) == (
        f"DynamoDB left 3 counter items of table {table!r} unread after 3 tries (throttled), first key 'a'"
    )
    assert len(sent) == 3 and sleeps == [0.05, 0.1]


def test_get_many_reads_answers_that_leave_out_empty_members(table, dynamodb):
    """DynamoDB leaves members out of an answer when they are empty: no ``Responses`` (or no entry for
    the table) when nothing was read, no ``UnprocessedKeys`` when everything was."""
    sleeps: list[float] = []
    counter = counter_on(table, dynamodb, sleeps)
    counter.increment_many([("a", "e1", 2), ("b", "e1", 5)])

    def sparse(n, parsed, keys):
        if n == 0:
            del parsed["Responses"]
            parsed["UnprocessedKeys"] = {table: {"Keys": keys}}
        elif n == 1:
            parsed["Responses"] = {}
            parsed["UnprocessedKeys"] = {table: {"Keys": keys}}
        else:
            parsed.pop("UnprocessedKeys", None)

    with edited_reads(dynamodb, sparse):
        assert counter.get_many(["a", "b"]) == {"a": 2, "b": 5}
    assert sleeps == [0.05, 0.1]


def test_a_counter_item_without_a_count_reads_zero(table, dynamodb):
    dynamodb.put_item(
        TableName=table, Item={"PK": {"S": "k"}, "SK": {"S": COUNTER_SK}, "trace_id": {"S": "t"}}
    )
    assert counter_on(table, dynamodb).get_many(["k", "j"]) == {"k": 0, "j": 0}


# -- reading markers first ---------------------------------------------------------------------------


def test_a_throttled_marker_read_skips_only_its_own_chunk(table, dynamodb):
    counter = counter_on(table, dynamodb, read_first=True)
    batch = [("k", f"e{i}") for i in range(150)]
    counter.increment_many(batch)
    with (
        scripted(dynamodb, "BatchGetItem", error("ThrottlingException")),
        requests_sent(dynamodb, "BatchGetItem") as read,
        requests_sent(dynamodb, "TransactWriteItems") as written,
    ):
        assert counter.increment_many(batch) == IncrementResult(counted=[], duplicates=batch)
    # the second 50 markers are still read (and found): only the first 100 are written, 99 markers and
    # their update, cancelled by its markers; that cancellation has the last unread marker read (and
    # found) rather than sent in a second transaction to be cancelled too
    assert [len(body["RequestItems"][table]["Keys"]) for body in read] == [50, 1]
    assert [len(body["TransactItems"]) for body in written] == [100]


def test_a_marker_read_that_answers_nothing_leaves_the_decision_to_the_transaction(table, dynamodb):
    counter = counter_on(table, dynamodb, read_first=True)
    batch = [("k", f"e{i}") for i in range(150)]
    counter.increment_many(batch)

    def unread(n, parsed, keys):
        if n == 0:
            del parsed["Responses"]
        else:
            parsed["Responses"] = {}

    with edited_reads(dynamodb, unread), requests_sent(dynamodb, "TransactWriteItems") as written:
        assert counter.increment_many([*batch, ("k", "new")]) == IncrementResult(
            counted=[("k", "new")], duplicates=batch
        )
    assert len(written) >= 2 and counter.get("k") == 151


@pytest.mark.parametrize(
    ("read_first", "reads", "transactions"),
    [(None, [51], [100, 100, 50]), (True, [100, 50, 51], [100, 100, 50]), (False, [], [100, 100, 51, 50])],
)
def test_a_cancellation_by_another_writer_has_the_rest_read_not_cancelled_again(
    table, dynamodb, read_first, reads, transactions
):
    """Another writer counts two of the call's events just before its first transaction (a
    concurrent invocation given the same messages): e0 cancels that transaction, which proves the
    other writer is at work, so the markers still to be sent (e99 on) are read, and e120 costs a
    read, not a second cancelled transaction. A new counter (``read_first=None``) read nothing
    before; ``read_first=False`` never reads, and e120 cancels its transaction too."""
    import boto3

    counter = counter_on(table, dynamodb, read_first=read_first)
    other = counter_on(table, boto3.client("dynamodb", endpoint_url=dynamodb.meta.endpoint_url))
    batch = [("k", f"e{i}") for i in range(150)]

    def concurrent_writer(_body):
        other.increment_many([("k", "e0"), ("k", "e120")])

    with (
        scripted(dynamodb, "TransactWriteItems", concurrent_writer),
        requests_sent(dynamodb, "BatchGetItem") as read,
        requests_sent(dynamodb, "TransactWriteItems") as written,
    ):
        result = counter.increment_many(batch)
    assert result == IncrementResult(
        counted=[event for event in batch if event[1] not in ("e0", "e120")],
        duplicates=[("k", "e0"), ("k", "e120")],
    )
    assert [len(body["RequestItems"][table]["Keys"]) for body in read] == reads
    assert [len(body["TransactItems"]) for body in written] == transactions
    assert counter.get("k") == 150


@pytest.mark.parametrize(("share", "reads"), [(0.0018, 0), (0.0024, 2)])
def test_a_batch_larger_than_a_transaction_is_judged_per_transaction(table, dynamodb, share, reads):
    """150 events on one key make 151 actions: two transactions, each judged as 99.3 events and 100
    actions. Reading costs less than a likely cancellation from a duplicate share of about 0.22%."""
    counter = counter_on(table, dynamodb)
    counter.duplicate_share.value = share
    with requests_sent(dynamodb, "BatchGetItem") as read:
        assert len(counter.increment_many([("k", f"e{i}") for i in range(150)]).counted) == 150
    assert len(read) == reads


# -- what markers carry --------------------------------------------------------------------------------


def test_a_marker_carries_when_it_was_counted_in_utc(table, dynamodb, new_york_local_time):
    counter = counter_on(table, dynamodb)
    before = datetime.now(UTC).replace(microsecond=0)
    counter.increment("k", "e1")
    after = datetime.now(UTC)
    marker = item(dynamodb, table, "k", f"{MARKER_PREFIX}e1")
    counted_at = datetime.strptime(marker["counted_at"]["S"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert before <= counted_at <= after
    assert abs(int(marker["ttl"]["N"]) - (time.time() + timedelta(days=7).total_seconds())) < 60


def test_an_empty_trace_id_is_no_trace_id(table, dynamodb):
    counter = counter_on(table, dynamodb)
    token = set_current_record(SimpleNamespace(trace_id="", id="m1"))
    try:
        counter.increment("k", "e1")
    finally:
        reset_current_record(token)
    assert "trace_id" not in item(dynamodb, table, "k", f"{MARKER_PREFIX}e1")
    assert "trace_id" not in item(dynamodb, table, "k", COUNTER_SK)


def test_the_default_client_leaves_every_retry_to_the_backoff(table, backend, monkeypatch):
    from botocore.awsrequest import AWSResponse

    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", backend.url)

    class Body:
        def stream(self, **_kwargs):
            yield b'{"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError", "message": "boom"}'

    sleeps: list[float] = []
    counter = Counter(table, backoff=exact_backoff(sleeps))
    sends = itertools.count()

    def fail_twice(**_kwargs):
        return AWSResponse("http://fake", 500, {}, Body()) if next(sends) < 2 else None

    with hook(counter.client, "before-send.dynamodb.TransactWriteItems", fail_twice):
        assert counter.increment("k", "e1") is True
    assert next(sends) == 3 and sleeps == [0.05, 0.1]  # botocore sent each once: both waits are the Backoff's


def test_two_shards_split_events_by_a_stable_hash_of_their_id(table, dynamodb):
    """The shard of an event is crc32(event id) % shards: fixed, so a retry meets its marker, also
    after a deploy."""
    counter = counter_on(table, dynamodb, shards=2)
    ids = [f"e{i}" for i in range(12)]
    counter.increment_many([("k", event_id) for event_id in ids])
    expected = {event_id: shard_pk("k", zlib.crc32(event_id.encode()) % 2) for event_id in ids}
    assert set(expected.values()) == {"k", "k#SHARD#1"}
    for event_id, pk in expected.items():
        assert item(dynamodb, table, pk, MARKER_PREFIX + event_id) is not None
    assert counter.get("k") == 12
