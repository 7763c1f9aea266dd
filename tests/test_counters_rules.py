"""The counters' rules that need no DynamoDB, stated exactly: backoff delays and its refusals, time
buckets and their errors, key limits and their messages, how a batch is packed into transactions,
and when the duplicate estimate makes a counter read first."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lambda_kit.counters import (
    MAX_KEY_BYTES,
    Backoff,
    InvalidKeyError,
    bucket,
    bucket_keys,
    check_key,
    day_key,
    hour_key,
    key_of,
    marker_sk,
    shard_pk,
    to_utc,
)
from lambda_kit.counters.duplicates import DuplicateShare
from lambda_kit.counters.packing import pack_transaction

# -- Backoff -----------------------------------------------------------------------------------


def test_backoff_delays_double_from_base_up_to_the_cap():
    backoff = Backoff(base=0.05, cap=0.3, jitter=lambda: 1.0)
    assert [backoff.delay(n) for n in range(1, 6)] == [0.05, 0.1, 0.2, 0.3, 0.3]
    half = Backoff(base=1.0, cap=10.0, jitter=lambda: 0.5)
    assert [half.delay(n) for n in (1, 2, 3)] == [0.5, 1.0, 2.0]


def test_backoff_wait_sleeps_the_delay():
    slept: list[float] = []
    Backoff(base=0.25, cap=8.0, sleep=slept.append, jitter=lambda: 1.0).wait(3)
    assert slept == [1.0]


def test_backoff_refuses_what_cannot_be_a_policy_in_one_line():
    with pytest.raises(ValueError) as raised:
        Backoff(attempts=0)
    assert str(raised.value) == "Backoff.attempts must be at least 1, got 0"
    with pytest.raises(ValueError) as raised:
        Backoff(base=-0.5)
    assert str(raised.value) == "Backoff.base and Backoff.cap must not be negative, got -0.5, 2.0"
    with pytest.raises(ValueError) as raised:
        Backoff(base=0.1, cap=-1.0)
    assert str(raised.value) == "Backoff.base and Backoff.cap must not be negative, got 0.1, -1.0"
    # the edges are policies: one try, no wait at all, a cap under a second
    assert Backoff(attempts=1, base=0.0, cap=0.0).delay(3) == 0.0
    assert Backoff(base=0.5, cap=0.5, jitter=lambda: 1.0).delay(4) == 0.5


# -- buckets -----------------------------------------------------------------------------------


def test_buckets_are_utc_whatever_the_local_time_zone(new_york_local_time):
    late = datetime(2022, 3, 28, 23, 30, tzinfo=UTC)
    assert to_utc(late.timestamp()) == late and to_utc(late.timestamp()).tzinfo is UTC
    assert (
        day_key(late.timestamp()) == "DAY#2022-03-28"
        and hour_key(int(late.timestamp())) == "HOUR#2022-03-28T23"
    )
    # an aware time in another zone is converted to UTC, not to the local zone
    assert to_utc("2022-03-29T01:30:00+02:00") == late and to_utc("2022-03-29T01:30:00+02:00").tzinfo is UTC
    assert day_key("2022-03-28T21:30:00-04:00") == "DAY#2022-03-29"


def test_to_utc_makes_naive_times_aware_utc(new_york_local_time):
    for naive in (datetime(2022, 3, 28, 13, 5), "2022-03-28T13:05:00"):  # UTC, not the local time zone
        moment = to_utc(naive)
        assert moment == datetime(2022, 3, 28, 13, 5, tzinfo=UTC) and moment.tzinfo is UTC


def test_bucket_refusals_say_what_to_give():
    with pytest.raises(TypeError) as raised:
        day_key(None)  # type: ignore[arg-type]
    assert str(raised.value) == "timestamp None must be a datetime, an ISO-8601 string or epoch seconds"
    with pytest.raises(TypeError) as raised:
        day_key(True)  # type: ignore[arg-type]  # a bool is not epoch seconds
    assert str(raised.value) == "timestamp True must be a datetime, an ISO-8601 string or epoch seconds"
    with pytest.raises(ValueError) as raised:
        bucket("WEEK", 0)  # type: ignore[arg-type]
    assert str(raised.value) == "granularity 'WEEK' must be one of HOUR, DAY, MONTH"


# -- keys --------------------------------------------------------------------------------------


def test_key_of_strips_only_a_numbered_shard_suffix():
    assert key_of("URL#a#SHARD#3") == "URL#a"
    assert key_of("URL#a#SHARD#b#SHARD#12") == "URL#a#SHARD#b"  # the last suffix only
    assert key_of("URL#a#SHARD#b") == "URL#a#SHARD#b"  # not a shard number: part of the key
    assert key_of("URL#a#SHARD#") == "URL#a#SHARD#"
    assert key_of("URL#a") == "URL#a"


def test_check_key_messages_name_the_key_and_the_fix():
    with pytest.raises(InvalidKeyError) as raised:
        check_key(42)
    assert str(raised.value) == "counter key 42 must be a str, not int"
    with pytest.raises(InvalidKeyError) as raised:
        check_key("")
    assert str(raised.value) == "counter key '' must not be empty"
    longest = "é" * (MAX_KEY_BYTES // 2) + "x" * (MAX_KEY_BYTES % 2)
    assert len(longest.encode()) == MAX_KEY_BYTES and check_key(longest) == longest
    with pytest.raises(InvalidKeyError) as raised:
        check_key(longest + "x")
    assert str(raised.value) == f"counter key {'é' * 60!r}... is longer than {MAX_KEY_BYTES} bytes"


# Keys made of the pieces item keys are built from, so that collisions are likely if they can happen.
PIECES = ["#", "SHARD", "#SHARD#", "1", "01", "0", "12", "\u00b2", "DAY", "#DAY#2022-03-28"]
PIECES += ["EVENT#", "COUNT"]
SUFFIXES = ["", "#SHARD#1", "#SHARD#2", "#SHARD#12", "#SHARD#", "#SHARD#1#SHARD#2", "#DAY#2022-03-28"]
bases = st.lists(st.sampled_from([*PIECES, "a"]), min_size=1, max_size=4).map("".join)
keys = st.builds("".join, st.tuples(bases, st.sampled_from(SUFFIXES)))


def accepted(key: str) -> bool:
    try:
        check_key(key)
    except InvalidKeyError:
        return False
    return True


@settings(max_examples=500)
@given(keys, st.integers(0, 12), keys, st.integers(0, 12))
def test_no_two_counter_items_share_a_partition_key(key, shard, other, other_shard):
    if not (accepted(key) and accepted(other)):
        return
    assert key_of(shard_pk(key, shard)) == key
    if (key, shard) != (other, other_shard):
        assert shard_pk(key, shard) != shard_pk(other, other_shard)


@given(keys, keys, keys)
def test_markers_are_one_to_one_and_never_a_counter_item(event_id, other, key):
    assert marker_sk(event_id) != "COUNT"
    assert (marker_sk(event_id) == marker_sk(other)) == (event_id == other)
    if accepted(key):  # a time bucket of an accepted key is accepted: it never looks like a shard
        assert all(accepted(bucketed) for bucketed in bucket_keys(key, 0, ("HOUR", "DAY", "MONTH")))


def test_a_key_that_ends_like_a_shard_is_refused_naming_the_counter_it_would_reach():
    with pytest.raises(InvalidKeyError) as raised:
        check_key("URL#a#SHARD#3")
    assert str(raised.value) == (
        "counter key 'URL#a#SHARD#3' must not end in '#SHARD#' and a number: that is where a shard of"
        " counter 'URL#a' is stored"
    )
    for key in ("URL#a#SHARD#0", "URL#a#SHARD#01", "#SHARD#1", "URL#a#SHARD#b#SHARD#12"):
        with pytest.raises(InvalidKeyError):
            check_key(key)
    for key in ("URL#a#SHARD#", "URL#a#SHARD#b", "URL#a#SHARD#1#DAY#2022-03-28", "URL#a#SHARD1", "SHARD#1"):
        assert check_key(key) == key


# -- packing -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    key: str
    event_id: str
    shard: int = 0
    amount: int = 1


def events(key: str, n: int, shard: int = 0) -> list[Event]:
    return [Event(key, f"{key}-{i}", shard) for i in range(n)]


def test_a_transaction_is_filled_to_exactly_100_actions():
    a, b = events("a", 50), events("b", 60)
    groups, rest = pack_transaction(a + b)
    assert [(g.key, len(g.events)) for g in groups] == [("a", 50), ("b", 48)]  # 51 + 49 actions
    assert rest == b[48:]


def test_the_last_free_action_pair_takes_one_event():
    a, b = events("a", 97), events("b", 5)
    groups, rest = pack_transaction(a + b)  # 98 actions used: room for one marker and its update
    assert [(g.key, len(g.events)) for g in groups] == [("a", 97), ("b", 1)]
    assert rest == b[1:]


def test_groups_after_a_full_transaction_wait_for_the_next_one():
    a, b, c = events("a", 99), events("b", 2), events("c", 3)
    groups, rest = pack_transaction(a + b + c)
    assert [(g.key, len(g.events)) for g in groups] == [("a", 99)]
    assert rest == b + c
    groups, rest = pack_transaction(rest)
    assert [(g.key, g.shard, g.amount) for g in groups] == [("b", 0, 2), ("c", 0, 3)] and rest == []


def test_each_shard_of_a_key_is_its_own_counter_item():
    groups, rest = pack_transaction(events("a", 2, shard=0) + events("a", 3, shard=1))
    assert [(g.key, g.shard, len(g.events)) for g in groups] == [("a", 0, 2), ("a", 1, 3)] and rest == []


# -- duplicate share ---------------------------------------------------------------------------


def test_the_duplicate_share_weighs_each_event_one_two_hundredth():
    share = DuplicateShare()
    share.observe(0, 0)  # nothing seen: nothing learnt
    assert share.value == 0.0
    share.observe(1, 1)
    assert share.value == pytest.approx(1 / 200)
    share.observe(1, 0)
    assert share.value == pytest.approx(1 / 200 * (1 - 1 / 200))
    many = DuplicateShare()
    many.observe(100, 50)
    assert many.value == pytest.approx(0.5 * (1 - (1 - 1 / 200) ** 100))


def test_reading_first_only_when_cheaper_than_a_likely_cancellation():
    share = DuplicateShare()
    assert share.read_first(10, 20) is False  # never met a duplicate
    share.value = 0.5
    # one event, half of them duplicates: a cancellation of 2 actions (1.0 expected) > a read (0.2)
    assert share.read_first(1, 2) is True
    # break-even (0.5 * 0.4 == 0.2 * 1): the read is not cheaper, so it is not made
    assert share.read_first(1, 0.4) is False
    assert share.read_first(0, 0) is False
