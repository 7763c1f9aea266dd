"""Kinesis and DynamoDB Streams event sources with Lambda's semantics, one poller per shard.

Per shard, in order: read up to ``batchSize`` records after the checkpoint (waiting up to
``maximumBatchingWindow`` for more), drop the ones no ``filterPatterns`` match (they count as
processed), invoke, then:

- success (or an empty ``batchItemFailures``): checkpoint after the batch;
- ``batchItemFailures`` (with ``ReportBatchItemFailures``): checkpoint before the failed record
  with the LOWEST sequence number and retry from it; an id not in the batch fails the whole batch;
- exception / timeout: the whole batch failed;
- a failed batch is split in two when ``bisectBatchOnFunctionError`` is on (splitting does not
  use up the retry quota, as on AWS), otherwise retried; after ``maximumRetryAttempts`` retries
  (default -1: until the records age out) or once a record is older than
  ``maximumRecordAgeInSeconds``, the batch is discarded and described to the on-failure
  destination (see ``destinations.py``) and the shard moves on.

moto specifics handled here (``moto_quirks``, on unless the stack knows its DynamoDB is DynamoDB
Local): DynamoDB stream iterators are re-acquired for every read (a cancelled transaction in moto
can leave an old iterator past records written since, so it would miss them); an ``UpdateItem``
that creates an item emits a keys-only INSERT before the real one, which is dropped so the
function sees one INSERT, as DynamoDB emits; TTL deletions made by the local TTL sweeper carry
DynamoDB's ``userIdentity``. DynamoDB Local's own TTL deletions reach its stream with
``eventName`` ``UNKNOWN_TO_SDK_VERSION`` and no ``userIdentity``: they are given back the
``REMOVE`` and the service identity DynamoDB sends. Records carry the stack's region (DynamoDB
Local says ``ddblocal``).
"""

from __future__ import annotations

import base64
import datetime
import json
import threading
import time
from collections import deque
from typing import Any

from .. import sources
from .clients import Clients
from .config import EventSource
from .destinations import Destinations, stream_failure_record, target_arn
from .filters import compile_patterns
from .poller import Journal, Poller, Timing
from .runtime import FunctionRuntime
from .sqs_source import BatchFailure

TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
UNKNOWN_EVENT = "UNKNOWN_TO_SDK_VERSION"
"""What DynamoDB Local names the stream record of an item its TTL job deleted."""


def _epoch(value: Any) -> float:
    if isinstance(value, datetime.datetime):
        return value.timestamp()
    try:
        return float(value)
    except (TypeError, ValueError):
        return time.time()


def _plain(value: Any) -> Any:
    """boto3's parsed stream record back to the wire JSON (bytes -> base64)."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, set):
        return [_plain(v) for v in value]
    return value


def keys_fingerprint(table: str, keys: dict[str, Any]) -> str:
    return table + "|" + json.dumps(_plain(keys), sort_keys=True)


class TtlDeletions:
    """Keys the TTL sweeper deleted, so their REMOVE records can carry DynamoDB's userIdentity."""

    def __init__(self) -> None:
        self._keys: dict[str, float] = {}
        self._lock = threading.Lock()

    def add(self, table: str, keys: dict[str, Any]) -> None:
        with self._lock:
            self._keys[keys_fingerprint(table, keys)] = time.time()

    def take(self, table: str, keys: dict[str, Any]) -> bool:
        with self._lock:
            return self._keys.pop(keys_fingerprint(table, keys), None) is not None


# --- shard readers: records after a sequence number, Lambda-shaped --------------------------


def position(after: str | None, sequence_field: str) -> dict[str, str]:
    """``GetShardIterator``'s position: the shard's start, or just after the sequence number ``after``."""
    if after is None:
        return {"ShardIteratorType": "TRIM_HORIZON"}
    return {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", sequence_field: after}


class DynamoDBShardReader:
    source = "dynamodb"

    def __init__(
        self, clients: Clients, stream_arn: str, shard_id: str, region: str, ttl: TtlDeletions | None, moto_quirks: bool = True
    ) -> None:
        self.clients = clients
        self.stream_arn = stream_arn
        self.shard_id = shard_id
        self.region = region
        self.table = stream_arn.split(":table/", 1)[-1].split("/stream/", 1)[0]
        self.ttl = ttl
        self.moto_quirks = moto_quirks
        self._held: str | None = None  # a trailing keys-only INSERT held back once
        self._next: tuple[str | None, str] | None = None  # (after, iterator) continuing the last read

    def read(self, after: str | None, limit: int) -> list[dict[str, Any]]:
        streams = self.clients("dynamodbstreams")
        if self._next is not None and self._next[0] == after:
            iterator = self._next[1]
        else:
            where = position(after, "SequenceNumber")
            iterator = streams.get_shard_iterator(StreamArn=self.stream_arn, ShardId=self.shard_id, **where)["ShardIterator"]
        if self.moto_quirks:
            raw = streams.get_records(ShardIterator=iterator, Limit=min(limit + 1, 1000))["Records"]
            return self._clean([self._lambda_record(r) for r in raw])[:limit]
        try:
            response = streams.get_records(ShardIterator=iterator, Limit=limit)
        except streams.exceptions.ExpiredIteratorException:
            self._next = None
            return self.read(after, limit)
        records = [self._lambda_record(r) for r in response["Records"]]
        last = self.sequence_of(records[-1]) if records else after
        self._next = (last, response["NextShardIterator"]) if response.get("NextShardIterator") else None
        return records

    def _lambda_record(self, raw: dict[str, Any]) -> dict[str, Any]:
        record = _plain({k: v for k, v in raw.items() if k != "dynamodb"})
        change = dict(raw.get("dynamodb") or {})
        change["ApproximateCreationDateTime"] = int(_epoch(change.get("ApproximateCreationDateTime")))
        record["dynamodb"] = _plain(change)
        record["eventSourceARN"] = self.stream_arn
        record["awsRegion"] = self.region
        if record.get("eventName") == UNKNOWN_EVENT and "OldImage" in change and "NewImage" not in change:
            record["eventName"] = "REMOVE"  # DynamoDB Local's TTL deletion
            record["userIdentity"] = dict(TTL_IDENTITY)
        elif record.get("eventName") == "REMOVE" and self.ttl is not None and self.ttl.take(self.table, change.get("Keys") or {}):
            record["userIdentity"] = dict(TTL_IDENTITY)
        return record

    def _clean(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Drop moto's extra keys-only INSERT emitted before an UpdateItem's real INSERT."""
        kept = []
        for index, record in enumerate(records):
            if _keys_only_insert(record):
                following = records[index + 1] if index + 1 < len(records) else None
                if following is not None:
                    if following.get("eventName") == "INSERT" and following["dynamodb"].get("Keys") == record["dynamodb"].get("Keys"):
                        continue
                elif self._held != self.sequence_of(record):
                    # The real INSERT may be just past this page: hold it back for one read.
                    self._held = self.sequence_of(record)
                    break
            kept.append(record)
        return kept

    @staticmethod
    def sequence_of(record: dict[str, Any]) -> str:
        return record["dynamodb"]["SequenceNumber"]

    @staticmethod
    def arrival_of(record: dict[str, Any]) -> float:
        return float(record["dynamodb"].get("ApproximateCreationDateTime") or time.time())


def _keys_only_insert(record: dict[str, Any]) -> bool:
    change = record.get("dynamodb") or {}
    return record.get("eventName") == "INSERT" and "NewImage" in change and set(change["NewImage"]) == set(change.get("Keys") or {})


class KinesisShardReader:
    source = "kinesis"

    def __init__(self, clients: Clients, stream_arn: str, shard_id: str, region: str) -> None:
        self.clients = clients
        self.stream_arn = stream_arn
        self.stream_name = stream_arn.split(":stream/", 1)[-1]
        self.shard_id = shard_id
        self.region = region
        self._next: tuple[str | None, str] | None = None  # (after, iterator) continuing the last read

    def read(self, after: str | None, limit: int) -> list[dict[str, Any]]:
        kinesis = self.clients("kinesis")
        if self._next is not None and self._next[0] == after:
            iterator = self._next[1]
        else:
            where = position(after, "StartingSequenceNumber")
            iterator = kinesis.get_shard_iterator(StreamARN=self.stream_arn, ShardId=self.shard_id, **where)["ShardIterator"]
        response = kinesis.get_records(ShardIterator=iterator, Limit=limit, StreamARN=self.stream_arn)
        records = [self._lambda_record(r) for r in response.get("Records", [])]
        last = records[-1]["kinesis"]["sequenceNumber"] if records else after
        self._next = (last, response["NextShardIterator"]) if response.get("NextShardIterator") else None
        return records

    def _lambda_record(self, raw: dict[str, Any]) -> dict[str, Any]:
        sequence = raw["SequenceNumber"]
        data = raw.get("Data", b"")
        return {
            "kinesis": {
                "kinesisSchemaVersion": "1.0",
                "partitionKey": raw.get("PartitionKey"),
                "sequenceNumber": sequence,
                "data": base64.b64encode(data if isinstance(data, bytes) else str(data).encode()).decode(),
                "approximateArrivalTimestamp": _epoch(raw.get("ApproximateArrivalTimestamp")),
            },
            "eventSource": "aws:kinesis",
            "eventVersion": "1.0",
            "eventID": f"{self.shard_id}:{sequence}",
            "eventName": "aws:kinesis:record",
            "invokeIdentityArn": "arn:aws:iam::123456789012:role/lambda-kit-local",
            "awsRegion": self.region,
            "eventSourceARN": self.stream_arn,
        }

    @staticmethod
    def sequence_of(record: dict[str, Any]) -> str:
        return record["kinesis"]["sequenceNumber"]

    @staticmethod
    def arrival_of(record: dict[str, Any]) -> float:
        return float(record["kinesis"].get("approximateArrivalTimestamp") or time.time())


def list_shards(clients: Clients, source: str, stream_arn: str) -> list[str]:
    if source == "dynamodb":
        description = clients("dynamodbstreams").describe_stream(StreamArn=stream_arn)["StreamDescription"]
        return [s["ShardId"] for s in description.get("Shards", [])]
    shards = clients("kinesis").list_shards(StreamARN=stream_arn).get("Shards", [])
    return [s["ShardId"] for s in shards]


def failed_index(response: Any, batch: list[dict[str, Any]], sequence_of: Any, report_failures: bool) -> int | None:
    """Index of the first record to retry (lowest reported sequence number), or None on success."""
    if not report_failures or not isinstance(response, dict):
        return None
    failures = response.get("batchItemFailures")
    if failures is None or failures == []:
        return None
    if not isinstance(failures, list):
        raise BatchFailure("batchItemFailures is not a list")
    positions = {sequence_of(r): i for i, r in enumerate(batch)}
    indexes = []
    for item in failures:
        identifier = item.get("itemIdentifier") if isinstance(item, dict) else None
        if not isinstance(identifier, str) or identifier not in positions:
            raise BatchFailure(f"batchItemFailures names {identifier!r}, which is not in the batch")
        indexes.append(positions[identifier])
    return min(indexes)


class ShardPoller(Poller):
    """One shard of one stream event source."""

    def __init__(
        self,
        runtime: FunctionRuntime,
        reader: DynamoDBShardReader | KinesisShardReader,
        spec: dict[str, Any],
        destinations: Destinations,
        timing: Timing,
        journal: Journal,
    ) -> None:
        super().__init__(timing, journal)
        self.runtime = runtime
        self.reader = reader
        self.function = runtime.function.key
        self.name = f"{reader.source}:{self.function}:{reader.shard_id}"
        self.destinations = destinations
        self.batch_size = int(spec.get("batchSize", 100))
        self.window = float(spec.get("maximumBatchingWindow", 0) or 0)
        self.report_failures = spec.get("functionResponseType") == "ReportBatchItemFailures"
        self.max_retries = int(spec.get("maximumRetryAttempts", -1))
        self.max_age = float(spec.get("maximumRecordAgeInSeconds", -1))
        self.bisect = bool(spec.get("bisectBatchOnFunctionError", False))
        self.on_failure = target_arn((spec.get("destinations") or {}).get("onFailure"))
        self.filter = compile_patterns(spec.get("filterPatterns"), reader.source)
        self.starting_position = str(spec.get("startingPosition", "TRIM_HORIZON")).upper()
        self.checkpoint: str | None = None  # sequence number of the last record done with
        self._started = False

    def _start_position(self) -> None:
        if self.starting_position == "LATEST":
            # Skip what is already on the shard.
            while True:
                records = self.reader.read(self.checkpoint, 1000)
                if not records:
                    break
                self.checkpoint = self.reader.sequence_of(records[-1])
        self._started = True

    def poll_once(self) -> bool:
        if not self._started:
            self._start_position()
        records = self.reader.read(self.checkpoint, self.batch_size)
        if not records:
            return False
        self.mark_busy()
        try:
            deadline = time.monotonic() + self.window
            while len(records) < self.batch_size and self.window > 0 and not self.stopping:
                more = self.reader.read(self.reader.sequence_of(records[-1]), self.batch_size - len(records))
                if more:
                    records.extend(more)
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self.sleep(min(self.timing.poll_interval, remaining))
            last = self.reader.sequence_of(records[-1])
            batch = records if self.filter is None else [r for r in records if self.filter(r)]
            if len(batch) < len(records):
                self.journal.record("stream.filtered", function=self.function, shard=self.reader.shard_id, dropped=len(records) - len(batch))
            if batch:
                self._process(batch)
            if not self.stopping:
                self.checkpoint = last
                self.journal.record("stream.checkpoint", function=self.function, shard=self.reader.shard_id, sequence=last)
        finally:
            self.mark_done()
        return True

    def _process(self, batch: list[dict[str, Any]]) -> None:
        sequence_of = self.reader.sequence_of
        pending: deque[tuple[list[dict[str, Any]], int]] = deque([(batch, 0)])
        while pending and not self.stopping:
            records, retries = pending.popleft()
            if self.max_age >= 0:
                now = time.time()
                expired = [r for r in records if now - self.reader.arrival_of(r) > self.max_age]
                if expired:
                    self._discard(expired, "RecordAgeExceeded", retries, None)
                    records = [r for r in records if r not in expired]
                    if not records:
                        continue
            result = self.runtime.invoke({"Records": records}, source=self.reader.source, attempt=retries + 1)
            error = result.error
            if error is None:
                try:
                    index = failed_index(result.response, records, sequence_of, self.report_failures)
                except BatchFailure as exc:
                    index, error = 0, exc
            else:
                index = 0
            self.journal.record(
                "stream.batch",
                function=self.function,
                shard=self.reader.shard_id,
                first=sequence_of(records[0]),
                last=sequence_of(records[-1]),
                size=len(records),
                failed_at=None if index is None else sequence_of(records[index]),
                attempt=retries + 1,
                error=None if result.error is None else f"{type(result.error).__name__}: {result.error}",
                request_id=result.request_id,
            )
            if index is None:
                continue
            if index > 0:  # the records before the lowest failure are done: checkpoint there
                self.journal.record("stream.checkpoint", function=self.function, shard=self.reader.shard_id, sequence=sequence_of(records[index - 1]))
            remaining = records[index:]
            if self.bisect and len(remaining) > 1:
                half = len(remaining) // 2
                pending.appendleft((remaining[half:], retries))
                pending.appendleft((remaining[:half], retries))
                continue
            retries += 1
            if 0 <= self.max_retries < retries:
                self._discard(remaining, "RetryAttemptsExhausted", retries, error)
                continue
            pending.appendleft((remaining, retries))
            self.sleep(self.timing.stream_retry_delay)

    def _discard(self, records: list[dict[str, Any]], condition: str, retries: int, error: BaseException | None) -> None:
        detail = {
            "function": self.function,
            "shard": self.reader.shard_id,
            "condition": condition,
            "first": self.reader.sequence_of(records[0]),
            "last": self.reader.sequence_of(records[-1]),
            "size": len(records),
            "destination": self.on_failure,
        }
        if self.on_failure:
            record = stream_failure_record(
                source=self.reader.source,
                function_arn=self.runtime.arn,
                condition=condition,
                invoke_count=max(1, retries),
                shard_id=self.reader.shard_id,
                stream_arn=self.reader.stream_arn,
                records=records,
                sequence_of=self.reader.sequence_of,
                arrival_of=self.reader.arrival_of,
                error=error,
            )
            self.destinations.send(self.on_failure, record)
        self.journal.record("stream.discarded", **detail)


class StreamEventSource:
    """All shards of one stream event source, listed at start (``refresh_shards()`` picks up
    shards added later, e.g. after Kinesis resharding)."""

    def __init__(
        self,
        runtime: FunctionRuntime,
        event: EventSource,
        spec: dict[str, Any],
        stream_arn: str,
        clients: Clients,
        destinations: Destinations,
        timing: Timing,
        journal: Journal,
        region: str,
        ttl: TtlDeletions | None,
        moto_quirks: bool = True,
    ) -> None:
        self.runtime = runtime
        self.moto_quirks = moto_quirks
        self.spec = spec
        self.stream_arn = stream_arn
        self.source = sources.delivered_by(event.kind, {"arn": stream_arn})[0].name  # the registry's one answer
        self.clients = clients
        self.destinations = destinations
        self.timing = timing
        self.journal = journal
        self.region = region
        self.ttl = ttl
        self.enabled = spec.get("enabled", True) is not False
        self.shards: dict[str, ShardPoller] = {}
        self._lock = threading.Lock()
        self.name = f"{self.source}:{runtime.function.key}"

    def start(self) -> None:
        if self.enabled:
            self.refresh_shards()

    def refresh_shards(self) -> None:
        with self._lock:
            for shard_id in list_shards(self.clients, self.source, self.stream_arn):
                if shard_id in self.shards:
                    continue
                if self.source == "dynamodb":
                    reader: Any = DynamoDBShardReader(self.clients, self.stream_arn, shard_id, self.region, self.ttl, self.moto_quirks)
                else:
                    reader = KinesisShardReader(self.clients, self.stream_arn, shard_id, self.region)
                poller = ShardPoller(self.runtime, reader, self.spec, self.destinations, self.timing, self.journal)
                self.shards[shard_id] = poller
                poller.start()

    def pollers(self) -> list[ShardPoller]:
        with self._lock:
            return list(self.shards.values())

    def stop(self) -> None:
        for poller in self.pollers():
            poller.stop()

    def join(self, timeout: float = 5.0) -> None:
        for poller in self.pollers():
            poller.join(timeout)
