"""What idempotency costs on DynamoDB, per event, beside Powertools' utility: part of the cost section.

The same event stream as the counters' (``bench.cost.event_stream``: 1,000 events, 0% or 20% of
them redeliveries); each event's side effect is one ``ADD 1`` to its article's counter, so the
counts say whether it ran once. Four ways to make it idempotent:

(d) ``@idempotent``, the ADD an ``update_item`` of its own (the side effect outside the entry);
(e) ``@idempotent``, the ADD added to ``current_writes()``: committed with the completed entry;
(f) as (e) under ``sqs_handler(commit=complete_batch)`` with ``at_commit=True``, batches of 100;
(c) Powertools' ``idempotent_function`` around an ``update_item`` (``bench.cost.powertools_counter``).

Units are modelled from AWS's billing rules as ``bench.cost`` does (``MODEL``). Then the crash
window: each method counts one event, the process dies right after the side effect's write and the
event comes again.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Any

from bench import cost
from lambda_kit import log, sqs_handler
from lambda_kit.counters import COUNT_ATTRIBUTE, COUNTER_SK, Counter
from lambda_kit.idempotency import complete_batch, current_writes, idempotent
from lambda_kit.testing import lambda_context, sqs_event

TTL = timedelta(seconds=cost.MARKER_TTL_SECONDS)
METHODS = (
    "(d) @idempotent, ADD outside",
    "(e) @idempotent, ADD in its transaction",
    "(f) as (e), at_commit, batch 100",
    "(c) Powertools idempotency",
)


def _add(table: str, key: str) -> dict[str, Any]:
    return {
        "TableName": table,
        "Key": {"PK": {"S": key}, "SK": {"S": COUNTER_SK}},
        "UpdateExpression": "ADD #count :one",
        "ExpressionAttributeNames": {"#count": COUNT_ATTRIBUTE},
        "ExpressionAttributeValues": {":one": {"N": "1"}},
    }


def lambda_kit_counter(
    client: Any, admin: Any, table: str, in_transaction: bool, at_commit: bool = False
) -> Any:
    """A function counting one event ``{"key", "event_id"}`` once per event id."""

    @idempotent(
        key="event_id", table=cost.create_table(admin), client=client, expires_after=TTL, at_commit=at_commit
    )
    def count_view(event: dict[str, str], context: Any = None) -> dict[str, bool]:
        if in_transaction:
            current_writes().add({"Update": _add(table, event["key"])})
        else:
            client.update_item(**_add(table, event["key"]))
        return {"counted": True}

    return count_view


def one_at_a_time(make: Callable[[str], Any], admin: Any, stream: Sequence[cost.Event]) -> str:
    table = cost.create_table(admin)
    count_view = make(table)
    for key, event_id in stream:
        count_view({"key": key, "event_id": event_id}, lambda_context())
    return table


def in_batches(client: Any, admin: Any, stream: Sequence[cost.Event]) -> str:
    table = cost.create_table(admin)
    handler = sqs_handler(commit=complete_batch)(
        lambda_kit_counter(client, admin, table, True, at_commit=True)
    )
    for events in cost.batches(stream, 100):
        batch = sqs_event(*({"key": key, "event_id": event_id} for key, event_id in events))
        response = handler(batch, lambda_context())
        if response["batchItemFailures"]:
            raise AssertionError(f"records failed in the bench: {response}")
    return table


@dataclass(frozen=True)
class Spent:
    method: str
    duplicates: float
    requests: int
    write_units: int
    read_units: float

    @property
    def dollars_per_million_events(self) -> float:
        return (self.write_units * cost.WRITE_PRICE + self.read_units * cost.READ_PRICE) / cost.EVENTS


def measure_all(client: Any, admin: Any, meter: cost.Meter) -> list[Spent]:
    """Every method on the 0% and 20% duplicate streams, each count checked exact."""
    spent = []
    for duplicates in (0.0, 0.2):
        stream = cost.event_stream(duplicates)
        ways = (
            partial(
                one_at_a_time, lambda table: lambda_kit_counter(client, admin, table, False), admin, stream
            ),
            partial(
                one_at_a_time, lambda table: lambda_kit_counter(client, admin, table, True), admin, stream
            ),
            partial(in_batches, client, admin, stream),
            partial(cost.count_with_powertools, client, admin, stream),
        )
        for method, way in zip(METHODS, ways, strict=True):
            requests, _transactions, write_units, read_units, _cancelled = cost.measure(
                meter, admin, stream, way
            )
            spent.append(Spent(method, duplicates, requests, write_units, read_units))
    return spent


def crash_window(client: Any, admin: Any) -> list[tuple[str, int, str]]:
    """Each counts one event; the process fails right after the side effect's write; the event comes again."""
    key = cost.article_keys()[0]
    event = {"key": key, "event_id": "crash-1"}
    cases = (
        (
            METHODS[0],
            "UpdateItem",
            partial(lambda_kit_counter, in_transaction=False),
            "the ADD, then the entry",
        ),
        (
            METHODS[1],
            "TransactWriteItems",
            partial(lambda_kit_counter, in_transaction=True),
            "one transaction",
        ),
        (METHODS[3], "UpdateItem", cost.powertools_counter, "the ADD, then Powertools' record"),
    )
    found = []
    for method, operation, make, why in cases:
        table = cost.create_table(admin)
        count_view = make(client, admin, table)
        call = partial(count_view, event=event) if method.startswith("(c)") else partial(count_view, event)
        with cost.fail_once_after(client, operation):
            cost.delivered_twice(call)
        found.append((method, Counter(table, client=admin).get(key), why))
    return found


def report(spent: list[Spent], crash: list[tuple[str, int, str]]) -> list[tuple[str, bool, str]]:
    """Print the table and the crash window; the targets for ``make bench``'s summary."""
    print(
        f"\nIdempotency: cost per event ({cost.EVENTS:,} events, the side effect one ADD each; counts exact)"
    )
    print(f"{'dups':>4}  {'method':<42}{'requests':>9}{'WU/event':>9}{'RU/event':>9}{'$/M events':>11}")
    for row in spent:
        print(
            f"{row.duplicates:>4.0%}  {row.method:<42}{row.requests / cost.EVENTS:>9.2f}"
            f"{row.write_units / cost.EVENTS:>9.2f}{row.read_units / cost.EVENTS:>9.2f}"
            f"{row.dollars_per_million_events:>11.2f}"
        )
    print("  requests are per event; a duplicate costs one conditional PutItem that fails (1 write unit),")
    print("  answered with the stored entry in the same request (ReturnValuesOnConditionCheckFailure).")
    print(
        "Crash window: each counts 1 event, fails right after the side effect's write, the event comes again:"
    )
    for method, count, why in crash:
        print(f"  {method:<42} count {count}  {'exact' if count == 1 else 'DOUBLE-COUNTED'}: {why}")

    def row(method: str, duplicates: float) -> Spent:
        return next(r for r in spent if r.method.startswith(method) and r.duplicates == duplicates)

    d, c, f, e = row("(d)", 0.2), row("(c)", 0.2), row("(f)", 0.2), row("(e)", 0.2)
    return [
        (
            "idempotency (d) 20% duplicates: write units per event <= Powertools' (c)",
            d.write_units <= c.write_units,
            f"{d.write_units / cost.EVENTS:.2f} vs {c.write_units / cost.EVENTS:.2f}",
        ),
        (
            "idempotency (f) at_commit: fewer requests per event than (e)",
            f.requests < e.requests,
            f"{f.requests / cost.EVENTS:.2f} vs {e.requests / cost.EVENTS:.2f}",
        ),
        (
            "idempotency (e) exact across a failure after the write (Powertools' (c) is not)",
            crash[1][1] == 1,
            ", ".join(f"{method[:3]} count {count}" for method, count, _ in crash),
        ),
    ]


def run() -> list[tuple[str, bool, str]]:
    """The idempotency costs and crash window (``bench.cost``'s endpoint, clients and meter; lambda_kit's
    own lines dropped); the targets for ``make bench``'s summary."""
    sink = log.set_sink(lambda _text: None)  # the records' lines are not the bench's output
    try:
        with warnings.catch_warnings(), cost.dynamodb_endpoint() as (url, where):
            warnings.simplefilter("ignore")  # Powertools warns that no Lambda context is registered
            client, admin = cost.make_client(url), cost.make_client(url)
            meter = cost.Meter()
            meter.attach(client)
            spent, crash = measure_all(client, admin, meter), crash_window(client, admin)
    finally:
        log.set_sink(sink)
    print(f"(on {where})")
    return report(spent, crash)
