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
from itertools import zip_longest
from typing import Any

from .. import sources
from .._data import dig, mapping
from .clients import Clients
from .config import EventSource
from .destinations import Destinations, stream_failure_record, target_arn
from .filters import compile_patterns
from .poller import BatchFailure, Journal, Poller, Timing, reported_failures
from .runtime import FunctionRuntime, Result

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
    """boto3's parsed stream record back to the wire JSON (bytes -> base64, sets -> lists)."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | set):
        return [_plain(v) for v in value]
    return value


def _keys_fingerprint(table: str, keys: dict[str, Any]) -> str:
    return table + "|" + json.dumps(_plain(keys), sort_keys=True)


class TtlDeletions:
    """Keys the TTL sweeper deleted, so their REMOVE records can carry DynamoDB's userIdentity."""

    def __init__(self) -> None:
        self._keys: dict[str, float] = {}
        self._lock = threading.Lock()

    def add(self, table: str, keys: dict[str, Any]) -> None:
        with self._lock:
            self._keys[_keys_fingerprint(table, keys)] = time.time()

    def take(self, table: str, keys: dict[str, Any]) -> bool:
        with self._lock:
            return self._keys.pop(_keys_fingerprint(table, keys), None) is not None


# --- shard readers: records after a sequence number, Lambda-shaped --------------------------


class _ShardReader:
    """A shard's records after a sequence number; the iterator that continues the last read is
    kept (``_next``), so reading on from where it ended costs one call."""

    source = ""
    position_field = ""  # GetShardIterator's name for the sequence number to start after

    def __init__(self, clients: Clients, stream_arn: str, shard_id: str, region: str) -> None:
        self.clients = clients
        self.stream_arn = stream_arn
        self.shard_id = shard_id
        self.region = region
        self._next: tuple[str | None, str] | None = None  # (after, iterator) continuing the last read

    def _position(self, after: str | None) -> dict[str, str]:
        """``GetShardIterator``'s position: the shard's start, or just after the sequence number ``after``."""
        if after is None:
            return {"ShardIteratorType": "TRIM_HORIZON"}
        return {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", self.position_field: after}

    def _iterator(self, after: str | None) -> str:
        if self._next is not None and self._next[0] == after:
            return self._next[1]
        return self._new_iterator(self._position(after))

    def _new_iterator(self, where: dict[str, str]) -> str:
        raise NotImplementedError

    def _continue(
        self, records: list[dict[str, Any]], after: str | None, response: dict[str, Any]
    ) -> list[dict[str, Any]]:
        """Remember the iterator that reads on after ``records``; ``records``."""
        last = self.sequence_of(records[-1]) if records else after
        following = response.get("NextShardIterator")
        self._next = (last, following) if following else None
        return records

    @staticmethod
    def sequence_of(record: dict[str, Any]) -> str:
        raise NotImplementedError


class DynamoDBShardReader(_ShardReader):
    source = "dynamodb"
    position_field = "SequenceNumber"

    def __init__(
        self,
        clients: Clients,
        stream_arn: str,
        shard_id: str,
        region: str,
        ttl: TtlDeletions | None,
        moto_quirks: bool = True,
    ) -> None:
        super().__init__(clients, stream_arn, shard_id, region)
        self.table = stream_arn.split(":table/", 1)[-1].split("/stream/", 1)[0]
        self.ttl = ttl
        self.moto_quirks = moto_quirks
        self._held: str | None = None  # a trailing keys-only INSERT held back once

    def _new_iterator(self, where: dict[str, str]) -> str:
        streams = self.clients("dynamodbstreams")
        return str(
            streams.get_shard_iterator(StreamArn=self.stream_arn, ShardId=self.shard_id, **where)[
                "ShardIterator"
            ]
        )

    def read(self, after: str | None, limit: int) -> list[dict[str, Any]]:
        if self.moto_quirks:
            return self._read_moto(after, limit)
        streams = self.clients("dynamodbstreams")
        try:
            response = streams.get_records(ShardIterator=self._iterator(after), Limit=limit)
        except streams.exceptions.ExpiredIteratorException:
            self._next = None
            return self.read(after, limit)
        return self._continue([self._lambda_record(r) for r in response["Records"]], after, response)

    def _read_moto(self, after: str | None, limit: int) -> list[dict[str, Any]]:
        """A fresh iterator for every read: after a cancelled transaction, moto can leave an old
        iterator past records written since. One record more is read, to see what follows a
        keys-only INSERT."""
        iterator = self._new_iterator(self._position(after))
        raw = self.clients("dynamodbstreams").get_records(ShardIterator=iterator, Limit=min(limit + 1, 1000))[
            "Records"
        ]
        return self._clean([self._lambda_record(r) for r in raw])[:limit]

    def _lambda_record(self, raw: dict[str, Any]) -> dict[str, Any]:
        record = _plain({k: v for k, v in raw.items() if k != "dynamodb"})
        change = dict(mapping(raw.get("dynamodb")))
        change["ApproximateCreationDateTime"] = int(_epoch(change.get("ApproximateCreationDateTime")))
        record.update(dynamodb=_plain(change), eventSourceARN=self.stream_arn, awsRegion=self.region)
        if self._deleted_by_ttl(record, change):
            record.update(eventName="REMOVE", userIdentity=dict(TTL_IDENTITY))
        return record

    def _deleted_by_ttl(self, record: dict[str, Any], change: dict[str, Any]) -> bool:
        """DynamoDB Local's own TTL deletion (``UNKNOWN_TO_SDK_VERSION``, with an old image and no
        new one), or a ``REMOVE`` the local TTL sweeper made."""
        name = record.get("eventName")
        if name == UNKNOWN_EVENT:
            return "OldImage" in change and "NewImage" not in change
        return (
            name == "REMOVE" and self.ttl is not None and self.ttl.take(self.table, change.get("Keys") or {})
        )

    def _clean(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Drop moto's extra keys-only INSERT emitted before an UpdateItem's real INSERT."""
        kept = []
        for record, following in zip_longest(records, records[1:]):
            if not _keys_only_insert(record):
                kept.append(record)
            elif following is None and self._held != self.sequence_of(record):
                self._held = self.sequence_of(
                    record
                )  # the real INSERT may be just past this page: wait a read
                break
            elif following is None or not _shadows(record, following):
                kept.append(record)
        return kept

    @staticmethod
    def sequence_of(record: dict[str, Any]) -> str:
        return str(record["dynamodb"]["SequenceNumber"])

    @staticmethod
    def arrival_of(record: dict[str, Any]) -> float:
        return float(record["dynamodb"].get("ApproximateCreationDateTime") or time.time())


def _keys_only_insert(record: dict[str, Any]) -> bool:
    change = record.get("dynamodb") or {}
    return (
        record.get("eventName") == "INSERT"
        and "NewImage" in change
        and set(change["NewImage"]) == set(mapping(change.get("Keys")))
    )


def _shadows(record: dict[str, Any], following: dict[str, Any]) -> bool:
    """A keys-only INSERT right before the real INSERT of the same item (moto's extra record)."""
    return following.get("eventName") == "INSERT" and following["dynamodb"].get("Keys") == record[
        "dynamodb"
    ].get("Keys")


class KinesisShardReader(_ShardReader):
    source = "kinesis"
    position_field = "StartingSequenceNumber"

    def _new_iterator(self, where: dict[str, str]) -> str:
        kinesis = self.clients("kinesis")
        return str(
            kinesis.get_shard_iterator(StreamARN=self.stream_arn, ShardId=self.shard_id, **where)[
                "ShardIterator"
            ]
        )

    def read(self, after: str | None, limit: int) -> list[dict[str, Any]]:
        kinesis = self.clients("kinesis")
        response = kinesis.get_records(
            ShardIterator=self._iterator(after), Limit=limit, StreamARN=self.stream_arn
        )
        return self._continue([self._lambda_record(r) for r in response.get("Records", [])], after, response)

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
        return str(record["kinesis"]["sequenceNumber"])

    @staticmethod
    def arrival_of(record: dict[str, Any]) -> float:
        return float(record["kinesis"].get("approximateArrivalTimestamp") or time.time())


ShardReader = DynamoDBShardReader | KinesisShardReader


def list_shards(clients: Clients, source: str, stream_arn: str) -> list[str]:
    if source == "dynamodb":
        description = clients("dynamodbstreams").describe_stream(StreamArn=stream_arn)["StreamDescription"]
        return [s["ShardId"] for s in description.get("Shards", [])]
    shards = clients("kinesis").list_shards(StreamARN=stream_arn).get("Shards", [])
    return [s["ShardId"] for s in shards]


def failed_index(
    response: Any, batch: list[dict[str, Any]], sequence_of: Any, report_failures: bool
) -> int | None:
    """Index of the first record to retry (lowest reported sequence number), or None on success."""
    positions = {sequence_of(r): i for i, r in enumerate(batch)}
    failed = reported_failures(response, positions, report_failures)
    return min(positions[identifier] for identifier in failed) if failed else None


def _outcome(
    result: Result, records: list[dict[str, Any]], reader: ShardReader, report_failures: bool
) -> tuple[int | None, BaseException | None]:
    """(the index to retry from, or None when the batch is done; the error) of one invocation."""
    if result.error is not None:
        return 0, result.error
    try:
        return failed_index(result.response, records, reader.sequence_of, report_failures), None
    except BatchFailure as exc:
        return 0, exc


class ShardPoller(Poller):
    """One shard of one stream event source."""

    def __init__(
        self,
        runtime: FunctionRuntime,
        reader: ShardReader,
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
        self.on_failure = target_arn(dig(spec, "destinations", "onFailure"))
        self.filter = compile_patterns(spec.get("filterPatterns"), reader.source)
        self.starting_position = str(spec.get("startingPosition", "TRIM_HORIZON")).upper()
        self.checkpoint: str | None = None  # sequence number of the last record done with
        self._started = False

    def _start_position(self) -> None:
        """``LATEST``: skip what is already on the shard."""
        while self.starting_position == "LATEST" and (records := self.reader.read(self.checkpoint, 1000)):
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
            self._fill(records)
            self._process(self._filtered(records))
            if not self.stopping:
                self._checkpoint(self.reader.sequence_of(records[-1]))
        finally:
            self.mark_done()
        return True

    def _fill(self, records: list[dict[str, Any]]) -> None:
        """Read more until the batch is full or the batching window has passed."""
        deadline = time.monotonic() + self.window
        while len(records) < self.batch_size and self.window > 0 and not self.stopping:
            more = self.reader.read(self.reader.sequence_of(records[-1]), self.batch_size - len(records))
            records.extend(more)
            if more:
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self.sleep(min(self.timing.poll_interval, remaining))

    def _filtered(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The records the filter patterns let through (the others count as processed)."""
        if self.filter is None:
            return records
        batch = [r for r in records if self.filter(r)]
        if len(batch) < len(records):
            self.journal.record(
                "stream.filtered",
                function=self.function,
                shard=self.reader.shard_id,
                dropped=len(records) - len(batch),
            )
        return batch

    def _checkpoint(self, sequence: str, journal_only: bool = False) -> None:
        if not journal_only:
            self.checkpoint = sequence
        self.journal.record(
            "stream.checkpoint", function=self.function, shard=self.reader.shard_id, sequence=sequence
        )

    def _process(self, batch: list[dict[str, Any]]) -> None:
        """Invoke with ``batch`` until every record is done or discarded: retried, split in two
        (``bisectBatchOnFunctionError``), or given up on after ``maximumRetryAttempts``."""
        pending: deque[tuple[list[dict[str, Any]], int]] = deque([(batch, 0)] if batch else [])
        while pending and not self.stopping:
            records, retries = pending.popleft()
            records = self._fresh(records, retries)
            if records:
                pending.extendleft(reversed(self._attempt(records, retries)))

    def _fresh(self, records: list[dict[str, Any]], retries: int) -> list[dict[str, Any]]:
        """The records younger than ``maximumRecordAgeInSeconds``; the others are discarded."""
        if self.max_age < 0:
            return records
        now = time.time()
        expired = [r for r in records if now - self.reader.arrival_of(r) > self.max_age]
        if expired:
            self._discard(expired, "RecordAgeExceeded", retries, None)
        return [r for r in records if r not in expired]

    def _attempt(self, records: list[dict[str, Any]], retries: int) -> list[tuple[list[dict[str, Any]], int]]:
        """One invocation; what is left to do after it, first things first."""
        result = self.runtime.invoke({"Records": records}, source=self.reader.source, attempt=retries + 1)
        index, error = _outcome(result, records, self.reader, self.report_failures)
        self._journal_batch(records, index, retries, result)
        if index is None:
            return []
        if index > 0:  # the records before the lowest failure are done: checkpoint there
            self._checkpoint(self.reader.sequence_of(records[index - 1]), journal_only=True)
        return self._retries(records[index:], retries, error)

    def _retries(
        self, remaining: list[dict[str, Any]], retries: int, error: BaseException | None
    ) -> list[tuple[list[dict[str, Any]], int]]:
        if self.bisect and len(remaining) > 1:  # splitting does not use up the retry quota, as on AWS
            half = len(remaining) // 2
            return [(remaining[:half], retries), (remaining[half:], retries)]
        if 0 <= self.max_retries < retries + 1:
            self._discard(remaining, "RetryAttemptsExhausted", retries + 1, error)
            return []
        self.sleep(self.timing.stream_retry_delay)
        return [(remaining, retries + 1)]

    def _journal_batch(
        self, records: list[dict[str, Any]], index: int | None, retries: int, result: Result
    ) -> None:
        sequence_of = self.reader.sequence_of
        self.journal.record(
            "stream.batch",
            function=self.function,
            shard=self.reader.shard_id,
            first=sequence_of(records[0]),
            last=sequence_of(records[-1]),
            size=len(records),
            failed_at=None if index is None else sequence_of(records[index]),
            attempt=retries + 1,
            error=result.error_text,
            request_id=result.request_id,
        )

    def _discard(
        self, records: list[dict[str, Any]], condition: str, retries: int, error: BaseException | None
    ) -> None:
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
        self.journal.record(
            "stream.discarded",
            function=self.function,
            shard=self.reader.shard_id,
            condition=condition,
            first=self.reader.sequence_of(records[0]),
            last=self.reader.sequence_of(records[-1]),
            size=len(records),
            destination=self.on_failure,
        )


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
        self.source = sources.delivered_by(event.kind, {"arn": stream_arn})[
            0
        ].name  # the registry's one answer
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
                    reader: Any = DynamoDBShardReader(
                        self.clients, self.stream_arn, shard_id, self.region, self.ttl, self.moto_quirks
                    )
                else:
                    reader = KinesisShardReader(self.clients, self.stream_arn, shard_id, self.region)
                poller = ShardPoller(
                    self.runtime, reader, self.spec, self.destinations, self.timing, self.journal
                )
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
