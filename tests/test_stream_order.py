"""A Kinesis or DynamoDB Streams batch stopped at a failed record, whatever order it came in.

Lambda checkpoints a stream at the lowest sequence number a function reports and retries from
there, so the lowest sequence number not done must be reported: in a batch out of order (replayed,
or built by hand: ``[300, 100, 200]``, 300 fails) the records not reached with lower numbers must
not be taken as done. Sequence numbers are decimal text, compared as integers ("99" < "100").
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _hostile import HOSTILE, captured
from hypothesis import given
from hypothesis import strategies as st

from lambda_kit import stream_handler
from lambda_kit.testing import dynamodb_record, dynamodb_stream_event, kinesis_event, kinesis_record


def batch(source: str, numbers: list[int], keys: list[str]) -> dict[str, Any]:
    """A stream event whose records carry ``n`` (their position) and these sequence numbers."""
    if source == "kinesis":
        records = [
            kinesis_record({"n": n}, sequence_number=str(number), partition_key=key)
            for n, (number, key) in enumerate(zip(numbers, keys, strict=True))
        ]
        return {"Records": records}
    return dynamodb_stream_event(
        *(
            dynamodb_record(keys={"PK": key}, new_image={"PK": key, "n": n}, sequence_number=str(number))
            for n, (number, key) in enumerate(zip(numbers, keys, strict=True))
        )
    )


def position(source: str, payload: Any) -> int:
    return int(payload["n"] if source == "kinesis" else payload["new_image"]["n"])


def run(source: str, event: dict, failing: set[int], concurrent: bool) -> tuple[list[int], set[int]]:
    """(the sequence numbers reported, the positions the function processed)."""
    done: set[int] = set()

    def work(payload: Any) -> None:
        n = position(source, payload)
        if n in failing:
            raise RuntimeError(f"record {n} fails")
        done.add(n)

    if concurrent:

        @stream_handler(max_concurrency=4)
        async def handler(payload: Any, context: Any) -> None:
            await asyncio.sleep(0)
            work(payload)

    else:

        @stream_handler
        def handler(payload: Any, context: Any) -> None:
            work(payload)

    with captured():
        response = handler(event, None)
    return [int(item["itemIdentifier"]) for item in response["batchItemFailures"]], done


@pytest.mark.parametrize("source", ["kinesis", "dynamodb"])
@pytest.mark.parametrize("concurrent", [False, True], ids=["plain", "max_concurrency"])
def test_the_records_not_reached_below_the_failed_one_are_reported(source, concurrent):
    event = batch(source, [300, 100, 200], ["k"] * 3)
    reported, done = run(source, event, {0}, concurrent)
    assert done == set() and min(reported) == 100 and 300 in reported
    event = batch(source, [1000, 99, 500], ["k"] * 3)  # "1000" < "99" as text: compared as numbers
    reported, done = run(source, event, {0}, concurrent)
    assert done == set() and min(reported) == 99


@pytest.mark.parametrize("source", ["kinesis", "dynamodb"])
def test_a_batch_in_order_still_reports_the_failed_record_alone(source):
    event = batch(source, [99, 100, 101, 1000], ["k"] * 4)  # "100" < "99" as text: compared as numbers
    assert run(source, event, {1}, False) == ([100], {0})


@HOSTILE
@given(
    source=st.sampled_from(["kinesis", "dynamodb"]),
    numbers=st.lists(st.integers(1, 10**60), min_size=1, max_size=12, unique=True),
    keys=st.lists(st.sampled_from("abc"), min_size=12, max_size=12),
    failing=st.sets(st.integers(0, 11), min_size=1, max_size=3),
    concurrent=st.booleans(),
)
def test_the_checkpoint_is_the_lowest_sequence_number_not_done_whatever_the_order(
    source, numbers, keys, failing, concurrent
):
    failing = {index for index in failing if index < len(numbers)}
    event = batch(source, numbers, keys[: len(numbers)])
    reported, done = run(source, event, failing, concurrent)
    not_done = [number for index, number in enumerate(numbers) if index not in done]
    if not failing:
        assert reported == [] and not not_done
        return
    assert set(reported) <= set(not_done)  # nothing done is reported
    assert min(reported) == min(not_done)  # so Lambda resumes at the first record not done
    assert failing & {numbers.index(number) for number in reported}  # a failed record among them


@pytest.mark.parametrize("source", ["kinesis", "dynamodb"])
def test_a_batch_in_order_reports_one_record_per_failure_as_before(source):
    event = kinesis_event({"n": 0}, {"n": 1}) if source == "kinesis" else batch(source, [5, 6], ["k", "k"])
    reported, done = run(source, event, {0}, False)
    assert len(reported) == 1 and done == set()
