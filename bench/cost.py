"""What counting costs on DynamoDB: requests, read and write units, and dollars per 1,000 events.

Compares, on the same event stream (20 article day buckets with a Zipf-like spread, exponent 1.1):
(a) ``Counter.increment_many``; (b) the per-event transaction this library replaces (one
``TransactWriteItems`` of the marker and the counter update per event); (c) Powertools' idempotency
utility around an ``update_item`` ADD. Requests are counted with botocore event hooks; units are
modeled from AWS's published billing rules for on-demand tables (see ``MODEL``), from the sizes of
the items each request writes or reads: DynamoDB Local's (and moto's) own ``ConsumedCapacity`` is
not what AWS bills. Then shows what each does when the caller fails after the count was written and
the event is retried (the crash window). Runs on DynamoDB Local, or moto where it cannot run.

Run alone: ``.venv/bin/python -c "import bench.cost as c; c.run()"``.
"""

from __future__ import annotations

import itertools
import math
import random
import time
import uuid
import warnings
from collections import Counter as Tally
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from types import SimpleNamespace
from typing import Any

from lambda_kit.counters import COUNT_ATTRIBUTE, COUNTER_SK, Counter, bucket_keys, marker_sk

EVENTS = 1000
ARTICLES = 20
ZIPF_EXPONENT = 1.1
DAY = "2022-03-28T12:00:00Z"
REDELIVERY_HORIZON = 100
"""A duplicate is a redelivery of one of the last 100 distinct events."""
SEED = 20220328
MARKER_TTL_SECONDS = 7 * 86400
BATCHES = (10, 100, 1000)
WRITE_PRICE = 1.25
"""$ per million write request units (on-demand)."""
READ_PRICE = 0.25
"""$ per million read request units (on-demand)."""

MODEL = (
    "Cost model: AWS's published billing rules for on-demand tables, from the item sizes "
    "(DynamoDB Local's own",
    "ConsumedCapacity is not AWS's: it reports 2 units for a two-item transaction AWS bills 4).",
    "  writes: 1 write unit per KB per item; 2 in a transaction (prepare + commit). "
    "A cancelled transaction is",
    "          counted at its prepare half (1 per KB per item: AWS publishes no rule of its own for it), "
    "a failed",
    "          conditional write at 1 per KB.",
    "  reads:  a strongly consistent read is 1 read unit per 4 KB per item, found or not "
    "(BatchGetItem reads each",
    "          key as one GetItem); an eventually consistent one half that.",
    f"  prices: ${WRITE_PRICE} per million write units, ${READ_PRICE} per million read units;"
    " $/M events = (write units x 1.25 + read units x 0.25) per event.",
    "  (b) and (c) send one event at a time, so the batch size does not change them.",
)

Event = tuple[str, str]


# -- the event stream ------------------------------------------------------------------------------


def article_keys() -> list[str]:
    return [bucket_keys(f"URL#myblog.com/article{rank:02d}", DAY)[0] for rank in range(1, ARTICLES + 1)]


def event_stream(duplicate_rate: float, seed: int = SEED) -> list[Event]:
    """``EVENTS`` events, a share ``duplicate_rate`` of them redeliveries of recent ones."""
    rng = random.Random(seed)
    keys = article_keys()
    weights = [1 / rank**ZIPF_EXPONENT for rank in range(1, ARTICLES + 1)]
    redelivered = set(rng.sample(range(1, EVENTS), round(EVENTS * duplicate_rate)))
    distinct: list[Event] = []
    stream: list[Event] = []
    for position in range(EVENTS):
        if position in redelivered:
            stream.append(rng.choice(distinct[-REDELIVERY_HORIZON:]))
            continue
        event = (rng.choices(keys, weights)[0], str(uuid.UUID(int=rng.getrandbits(128))))
        distinct.append(event)
        stream.append(event)
    return stream


# -- metering --------------------------------------------------------------------------------------


def attribute_size(value: dict[str, Any]) -> int:
    """Bytes DynamoDB bills for one attribute value (its name not included)."""
    ((kind, data),) = value.items()
    if kind == "S":
        return len(data.encode("utf-8"))
    if kind == "N":
        digits = len(data.lstrip("-").replace(".", "").strip("0")) or 1
        return (digits + 1) // 2 + 1
    if kind == "B":
        return len(data)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "NS", "BS"):
        return sum(attribute_size({kind[0]: member}) for member in data)
    if kind == "M":
        return 3 + sum(
            len(name.encode("utf-8")) + attribute_size(member) + 1 for name, member in data.items()
        )
    if kind == "L":
        return 3 + sum(attribute_size(member) + 1 for member in data)
    raise ValueError(f"unknown attribute type {kind!r}")


def item_size(item: dict[str, dict[str, Any]]) -> int:
    return sum(len(name.encode("utf-8")) + attribute_size(value) for name, value in item.items())


def update_size(update: dict[str, Any]) -> int:
    """Size of the item an update leaves behind: its key plus the values it sets or adds."""
    names = update.get("ExpressionAttributeNames", {})
    size = item_size(update["Key"])
    for placeholder, value in update.get("ExpressionAttributeValues", {}).items():
        name = names.get("#" + placeholder[1:], placeholder[1:])
        size += len(name.encode("utf-8")) + attribute_size(value)
    return size


def units(size: int) -> int:
    return max(1, math.ceil(size / 1024))


def read_units(size: int, consistent: bool) -> float:
    """Read units of one item of ``size`` bytes (0 for an item not found: still the minimum)."""
    whole = max(1, math.ceil(size / 4096))
    return whole if consistent else whole / 2


@dataclass
class Meter:
    """Requests, write units and read units a client spends, from botocore event hooks."""

    requests: int = 0
    write_units: int = 0
    read_units: float = 0
    cancelled_units: int = 0
    largest_item: int = 0
    by_operation: Tally[str] = field(default_factory=Tally)
    _pending: tuple[int, int] = (0, 0)
    _consistent: bool = False
    _asked: int = 0

    def attach(self, client: Any) -> None:
        client.meta.events.register(
            "before-parameter-build.dynamodb", self._before, unique_id="bench-meter-before"
        )
        client.meta.events.register("before-send.dynamodb", self._on_send, unique_id="bench-meter-send")
        client.meta.events.register("after-call.dynamodb", self._after, unique_id="bench-meter-after")

    def reset(self) -> None:
        self.requests = self.write_units = self.cancelled_units = self.largest_item = 0
        self.read_units = 0
        self.by_operation.clear()

    def _on_send(self, event_name: str, **_kwargs: Any) -> None:
        self.requests += 1
        self.by_operation[event_name.rsplit(".", 1)[-1]] += 1

    def _before(self, params: dict[str, Any], event_name: str, **_kwargs: Any) -> None:
        operation = event_name.rsplit(".", 1)[-1]
        sizes: list[int] = []
        if operation == "TransactWriteItems":
            for action in params["TransactItems"]:
                ((kind, body),) = action.items()
                if kind == "Put":
                    sizes.append(item_size(body["Item"]))
                elif kind == "Update":
                    sizes.append(update_size(body))
                else:
                    sizes.append(item_size(body["Key"]))
        elif operation == "PutItem":
            sizes.append(item_size(params["Item"]))
        elif operation == "UpdateItem":
            sizes.append(update_size(params))
        elif operation == "DeleteItem":
            sizes.append(item_size(params["Key"]))
        elif operation == "GetItem":
            self._consistent = bool(params.get("ConsistentRead"))
        elif operation == "BatchGetItem":
            self._consistent = all(r.get("ConsistentRead") for r in params["RequestItems"].values())
            self._asked = sum(len(r["Keys"]) for r in params["RequestItems"].values())
        self.largest_item = max([self.largest_item, *sizes])
        one_pass = sum(units(size) for size in sizes)
        # a transaction writes every item twice (prepare, commit); a cancelled one only prepared
        self._pending = (
            (2 * one_pass, one_pass) if operation == "TransactWriteItems" else (one_pass, one_pass)
        )

    def _after(self, http_response: Any, parsed: dict[str, Any], model: Any, **_kwargs: Any) -> None:
        committed, failed = self._pending
        self._pending = (0, 0)
        if http_response.status_code < 300:
            self.write_units += committed
        else:
            self.write_units += failed
            self.cancelled_units += failed
        if model.name == "GetItem":
            self.read_units += read_units(item_size(parsed.get("Item") or {}), self._consistent)
        elif model.name == "BatchGetItem" and http_response.status_code < 300:
            # every key asked for is read, found or not; the response holds the found ones
            found = [item for items in parsed.get("Responses", {}).values() for item in items]
            unprocessed = sum(len(r.get("Keys", [])) for r in parsed.get("UnprocessedKeys", {}).values())
            asked = self._asked - unprocessed
            self.read_units += sum(read_units(item_size(item), self._consistent) for item in found)
            self.read_units += (asked - len(found)) * read_units(0, self._consistent)


def make_client(url: str) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "dynamodb",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
        config=Config(retries={"total_max_attempts": 1}),
    )


@contextmanager
def one_snapshot_per_transaction() -> Iterator[None]:
    """moto snapshots a whole table once per *action* of a transaction (for its rollback); make it once
    per transaction, in this process only. The snapshots are all taken before any action applies, so
    the rollback and every response stay the same: only the bench's run time changes."""
    import copy

    import moto.dynamodb.models as models

    original = models.DynamoDBBackend.transact_write_items

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        snapshots: dict[int, Any] = {}

        def deepcopy(table: Any) -> Any:
            if id(table) not in snapshots:
                snapshots[id(table)] = copy.deepcopy(table)
            return snapshots[id(table)]

        models.copy = SimpleNamespace(deepcopy=deepcopy)  # type: ignore[assignment]
        try:
            return original(self, transact_items)
        finally:
            models.copy = copy

    models.DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
    try:
        yield
    finally:
        models.DynamoDBBackend.transact_write_items = original  # type: ignore[method-assign]


_names = itertools.count()


def create_table(admin: Any, hash_key: str = "PK", range_key: str | None = "SK") -> str:
    """A fresh table (no stream: the bench measures writes, and moto copies streams on every write)."""
    name = f"bench-{next(_names)}"
    attributes = [{"AttributeName": hash_key, "AttributeType": "S"}]
    schema = [{"AttributeName": hash_key, "KeyType": "HASH"}]
    if range_key:
        attributes.append({"AttributeName": range_key, "AttributeType": "S"})
        schema.append({"AttributeName": range_key, "KeyType": "RANGE"})
    admin.create_table(
        TableName=name, AttributeDefinitions=attributes, KeySchema=schema, BillingMode="PAY_PER_REQUEST"
    )
    return name


class MarkerJanitor:
    """Deletes (unmetered) the markers of events older than the redelivery horizon: where moto serves,
    it copies the whole table on every transaction, so a small table keeps the bench fast; billing is
    unchanged (no later event is a redelivery of those)."""

    def __init__(self, admin: Any, table: str) -> None:
        self.admin, self.table = admin, table
        self.live: deque[Event] = deque()
        self.known: set[Event] = set()

    def written(self, events: Sequence[Event]) -> None:
        for event in events:
            if event not in self.known:
                self.known.add(event)
                self.live.append(event)
        old: list[Event] = []
        while len(self.live) > REDELIVERY_HORIZON:
            old.append(self.live.popleft())
        for at in range(0, len(old), 25):
            self.admin.batch_write_item(
                RequestItems={
                    self.table: [
                        {"DeleteRequest": {"Key": {"PK": {"S": key}, "SK": {"S": marker_sk(event_id)}}}}
                        for key, event_id in old[at : at + 25]
                    ]
                }
            )


def batches(stream: Sequence[Event], size: int) -> Iterator[Sequence[Event]]:
    for at in range(0, len(stream), size):
        yield stream[at : at + size]


# -- the three ways to count -----------------------------------------------------------------------


def count_with_increment_many(client: Any, admin: Any, stream: Sequence[Event], batch: int) -> str:
    """(a): one ``increment_many`` per batch."""
    table = create_table(admin)
    counter = Counter(table, client=client)
    janitor = MarkerJanitor(admin, table)
    for events in batches(stream, batch):
        counter.increment_many(events)
        janitor.written(events)
    return table


def blog_post_transaction(client: Any, table: str, key: str, event_id: str) -> bool:
    """(b)'s snippet: the marker and the counter update in one transaction per event."""
    try:
        client.transact_write_items(
            TransactItems=[
                {
                    "Put": {
                        "TableName": table,
                        "Item": {
                            "PK": {"S": key},
                            "SK": {"S": marker_sk(event_id)},
                            "ttl": {"N": str(int(time.time()) + MARKER_TTL_SECONDS)},
                            "amount": {"N": "1"},
                            "counted_at": {"S": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
                        },
                        "ConditionExpression": "attribute_not_exists(PK)",
                    }
                },
                {
                    "Update": {
                        "TableName": table,
                        "Key": {"PK": {"S": key}, "SK": {"S": COUNTER_SK}},
                        "UpdateExpression": "ADD #count :one",
                        "ExpressionAttributeNames": {"#count": COUNT_ATTRIBUTE},
                        "ExpressionAttributeValues": {":one": {"N": "1"}},
                    }
                },
            ]
        )
    except client.exceptions.TransactionCanceledException:
        return False
    return True


def count_with_transaction_per_event(client: Any, admin: Any, stream: Sequence[Event]) -> str:
    """(b): one transaction per event, whatever the batch."""
    table = create_table(admin)
    janitor = MarkerJanitor(admin, table)
    for events in batches(stream, 10):
        for key, event_id in events:
            blog_post_transaction(client, table, key, event_id)
        janitor.written(events)
    return table


def powertools_counter(client: Any, admin: Any, table: str) -> Callable[..., Any]:
    """(c): Powertools' idempotency utility (its own table, key ``id``) around an ``update_item`` ADD."""
    from aws_lambda_powertools.utilities.idempotency import (
        DynamoDBPersistenceLayer,
        IdempotencyConfig,
        idempotent_function,
    )

    persistence = DynamoDBPersistenceLayer(table_name=create_table(admin, "id", None), boto3_client=client)
    config = IdempotencyConfig(expires_after_seconds=MARKER_TTL_SECONDS)

    @idempotent_function(data_keyword_argument="event", persistence_store=persistence, config=config)
    def count_view(event: dict[str, str]) -> dict[str, bool]:
        client.update_item(
            TableName=table,
            Key={"PK": {"S": event["key"]}, "SK": {"S": COUNTER_SK}},
            UpdateExpression="ADD #count :one",
            ExpressionAttributeNames={"#count": COUNT_ATTRIBUTE},
            ExpressionAttributeValues={":one": {"N": "1"}},
        )
        return {"counted": True}

    return count_view


def count_with_powertools(client: Any, admin: Any, stream: Sequence[Event]) -> str:
    table = create_table(admin)
    count_view = powertools_counter(client, admin, table)
    for key, event_id in stream:
        count_view(event={"key": key, "event_id": event_id})
    return table


# -- the run ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    batch: int
    duplicates: float
    method: str
    requests: int
    transactions: int
    write_units: int
    read_units: float
    cancelled_units: int

    @property
    def units_per_event(self) -> float:
        return self.write_units / EVENTS

    @property
    def dollars_per_million_events(self) -> float:
        """$ per million events: write units x $1.25 and read units x $0.25 per million, per event."""
        return (self.write_units * WRITE_PRICE + self.read_units * READ_PRICE) / EVENTS


def measure(meter: Meter, admin: Any, stream: Sequence[Event], count: Callable[[], str]) -> tuple[Any, ...]:
    """Requests, transactions, write units, read units and cancelled units of ``count()``, after checking
    its counts are exact."""
    meter.reset()
    table = count()
    spent = (
        meter.requests,
        meter.by_operation["TransactWriteItems"],
        meter.write_units,
        meter.read_units,
        meter.cancelled_units,
    )
    distinct = Tally(key for key, _ in set(stream))
    counts = Counter(table, client=admin).get_many(sorted(distinct))
    if counts != dict(distinct):
        raise AssertionError(f"counts in {table} are not exact: {counts} != {dict(distinct)}")
    return spent


@contextmanager
def fail_once_after(client: Any, operation: str) -> Iterator[None]:
    """The caller fails once, right after ``operation`` returned (the write is done)."""
    calls = itertools.count()

    def fail(**_kwargs: Any) -> None:
        if next(calls) == 0:
            raise RuntimeError("the Lambda failed after the write")

    client.meta.events.register(f"after-call.dynamodb.{operation}", fail, unique_id="bench-crash")
    try:
        yield
    finally:
        client.meta.events.unregister(f"after-call.dynamodb.{operation}", unique_id="bench-crash")


def delivered_twice(attempt: Callable[[], Any]) -> None:
    try:
        attempt()
    except RuntimeError:
        attempt()  # the event source delivers the record again


def crash_window(client: Any, admin: Any) -> list[tuple[str, int, str]]:
    """Each method counts one event, fails after its write, and gets the event again."""
    key, event_id = article_keys()[0], str(uuid.uuid4())
    results = []
    table = create_table(admin)
    with fail_once_after(client, "TransactWriteItems"):
        delivered_twice(lambda: Counter(table, client=client).increment(key, event_id))
    results.append(
        ("(a) increment_many", Counter(table, client=admin).get(key), "marker and count: one transaction")
    )
    table = create_table(admin)
    with fail_once_after(client, "TransactWriteItems"):
        delivered_twice(lambda: blog_post_transaction(client, table, key, event_id))
    results.append(
        (
            "(b) transaction per event",
            Counter(table, client=admin).get(key),
            "marker and count: one transaction",
        )
    )
    table = create_table(admin)
    count_view = powertools_counter(client, admin, table)
    with fail_once_after(client, "UpdateItem"):
        delivered_twice(lambda: count_view(event={"key": key, "event_id": event_id}))
    results.append(
        (
            "(c) Powertools idempotency",
            Counter(table, client=admin).get(key),
            "the ADD and Powertools' record are separate writes",
        )
    )
    return results


@contextmanager
def dynamodb_endpoint() -> Iterator[tuple[str, str]]:
    """``(url, name)``: DynamoDB Local, or moto (one snapshot per transaction) where it cannot run."""
    from lambda_kit.local.dynamodb_local import DynamoDBLocal, DynamoDBLocalUnavailable

    try:
        local = DynamoDBLocal().start()
    except DynamoDBLocalUnavailable as reason:
        from lambda_kit.local.endpoint import Endpoint

        with Endpoint() as endpoint, one_snapshot_per_transaction():
            yield endpoint.url, f"moto (DynamoDB Local cannot run: {reason})"
        return
    try:
        yield local.url, f"DynamoDB Local {local.version}"
    finally:
        local.stop()


def run() -> list[tuple[str, bool, str]]:
    """Print the cost table, whether the targets are met, and the crash window.

    Returns the targets as ``(name, met, detail)`` for ``make bench``'s summary.
    """
    started = time.perf_counter()
    rows: list[Row] = []
    with warnings.catch_warnings(), dynamodb_endpoint() as (url, where):
        warnings.simplefilter("ignore")  # Powertools warns that no Lambda context is registered
        client, admin = make_client(url), make_client(url)
        meter = Meter()
        meter.attach(client)
        for duplicates in (0.0, 0.2):
            stream = event_stream(duplicates)
            for batch in BATCHES:
                spent = measure(
                    meter, admin, stream, partial(count_with_increment_many, client, admin, stream, batch)
                )
                rows.append(Row(batch, duplicates, "(a) increment_many", *spent))
            spent_b = measure(
                meter, admin, stream, partial(count_with_transaction_per_event, client, admin, stream)
            )
            spent_c = measure(meter, admin, stream, partial(count_with_powertools, client, admin, stream))
            rows.append(Row(1, duplicates, "(b) transaction per event", *spent_b))
            rows.append(Row(1, duplicates, "(c) Powertools idempotency", *spent_c))
        crash = crash_window(client, admin)
        largest = meter.largest_item

    rows.sort(key=lambda r: (r.duplicates, r.method, r.batch))
    print(
        f"DynamoDB cost per {EVENTS:,} events: {ARTICLES} article day buckets with a Zipf-like spread"
        f" (exponent {ZIPF_EXPONENT});"
    )
    print(
        f"a duplicate is a redelivery of one of the last {REDELIVERY_HORIZON} events. "
        f"Every count checked exact (on {where})."
    )
    print()
    header = (
        f"{'dups':>4}  {'method':<28}{'batch':>6}{'requests':>9}{'transact.':>10}"
        f"{'write u.':>9}{'read u.':>8}{'WU/event':>9}{'$/M events':>11}{'cancelled':>10}"
    )
    print(header)
    for row in rows:
        print(
            f"{row.duplicates:>4.0%}  {row.method:<28}{'-' if row.method[:3] != '(a)' else row.batch:>6}"
            f"{row.requests:>9,}{row.transactions:>10,}{row.write_units:>9,}{row.read_units:>8,.0f}"
            f"{row.units_per_event:>9.2f}{row.dollars_per_million_events:>11.2f}{row.cancelled_units:>10,}"
        )
    print()
    print(f"Largest item written: {largest} bytes (1 KB of writes, 4 KB of reads each).")
    for line in MODEL:
        print(line)
    print(
        "(a) reads a batch's markers first (strongly consistent BatchGetItem) while it meets duplicates, "
        "and writes only the unseen:"
    )
    print(
        "  the first batch with duplicates is still cancelled once (nothing told it to read yet); "
        "that cancellation"
    )
    print("  has the rest of the batch read before it is sent.")
    print()

    def row(method: str, duplicates: float, batch: int = 1) -> Row:
        return next(r for r in rows if (r.method[:3], r.duplicates, r.batch) == (method, duplicates, batch))

    a, b = row("(a)", 0.0, 100), row("(b)", 0.0)
    dup_a, dup_b, dup_c = row("(a)", 0.2, 100), row("(b)", 0.2), row("(c)", 0.2)
    ratio = a.write_units / b.write_units
    cheapest = dup_a.dollars_per_million_events < min(
        dup_b.dollars_per_million_events, dup_c.dollars_per_million_events
    )
    big = [row("(a)", d, 1000) for d in (0.0, 0.2)]
    print(
        "Crash window: each counts 1 event, the caller fails after the write, the event is delivered again:"
    )
    for method, count, why in crash:
        print(f"  {method:<28} count {count}  {'exact' if count == 1 else 'DOUBLE-COUNTED'}: {why}")
    print(
        "  (c) on failure Powertools deletes its in-progress record, so the retry adds again; a Lambda killed"
        " after the ADD leaves the record INPROGRESS until it expires, then the same."
    )
    print(f"\n({time.perf_counter() - started:.0f} s)")
    return [
        (
            "(a) 20% duplicates, batch 100: <= 2.6 write units per event",
            dup_a.units_per_event <= 2.6,
            f"{dup_a.units_per_event:.2f} (+ {dup_a.read_units / EVENTS:.2f} read units)",
        ),
        (
            "(a) 20% duplicates, batch 100: fewer $ per million events than (b) and (c)",
            cheapest,
            f"${dup_a.dollars_per_million_events:.2f} vs ${dup_b.dollars_per_million_events:.2f} (b),"
            f" ${dup_c.dollars_per_million_events:.2f} (c)",
        ),
        (
            "(a) no duplicates, batch 100: <= 20 requests and <= 2.37 write units per event",
            a.requests <= 20 and a.units_per_event <= 2.37,
            f"{a.requests} requests, {a.units_per_event:.2f} write units, {a.read_units:.0f} read units",
        ),
        (
            "(a) batch 1,000: <= 12 transactions per 1,000 events (0% and 20% duplicates)",
            all(r.transactions <= 12 for r in big),
            " and ".join(f"{r.transactions} ({r.duplicates:.0%})" for r in big),
        ),
        (
            "(a) write units per event <= 65% of (b) (batch 100, no duplicates)",
            ratio <= 0.65,
            f"{ratio:.0%} ({a.units_per_event:.2f} vs {b.units_per_event:.2f})",
        ),
        ("(a) exact across a failure after commit", crash[0][1] == 1, f"count {crash[0][1]} for 1 event"),
    ]


if __name__ == "__main__":
    run()
