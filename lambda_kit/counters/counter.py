"""``Counter``: exactly-once increments on DynamoDB, coalesced into as few transactions as possible.

Each ``(key, event_id)`` is counted by one ``TransactWriteItems`` that puts its marker on condition
that it does not exist yet and adds the amount to the counter item. A marker that already exists
cancels the transaction with ``ConditionalCheckFailed`` on that action: the event was counted
before, so it is dropped and the rest of the transaction is sent again. There is no moment at
which a marker exists without its count or the other way round.

Where duplicates are frequent, the batch's markers are read first (a strongly consistent
``BatchGetItem``) and only the events not seen are written: a known duplicate then costs a read,
not a cancelled transaction (see ``duplicates.py``). The markers' conditions still decide races;
a transaction they cancel has the call's unsent markers read before they go (the rest of a
redelivered batch, or of events another invocation is counting at the same time).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from lambda_kit.counters.duplicates import DuplicateShare
from lambda_kit.counters.errors import CounterError, InvalidKeyError
from lambda_kit.counters.layout import (
    COUNT_ATTRIBUTE,
    COUNTER_SK,
    check_amount,
    check_event_id,
    check_key,
    marker_sk,
    shard_for,
    shard_pk,
)
from lambda_kit.counters.packing import MAX_ACTIONS, CounterGroup, pack_transaction
from lambda_kit.counters.retry import (
    TRANSIENT_CANCELLATION_REASONS,
    Backoff,
    error_code,
    is_transient,
    outcome_unknown,
)
from lambda_kit.trace import current_trace_id

EventRef = tuple[str, str]
"""``(key, event_id)``."""


class Increment(NamedTuple):
    """One increment for ``increment_many``; a plain ``(key, event_id[, amount])`` tuple works too.

    ``trace_id`` goes on the marker; when None, the trace id of the record being processed at the
    call (``lambda_kit.current_trace_id()``) is used. Give it when a batch is counted after its
    records ran (e.g. in ``sqs_handler(commit=...)``) so each marker carries its own record's id.
    """

    key: str
    event_id: str
    amount: int = 1
    trace_id: str | None = None


IncrementRequest = tuple[str, str] | tuple[str, str, int] | Increment
"""``(key, event_id)``, ``(key, event_id, amount)`` or an :class:`Increment`."""

BATCH_GET_KEYS = 100
"""Keys ``BatchGetItem`` takes in one request."""


@dataclass
class IncrementResult:
    """What ``increment_many`` did, in the order of its input.

    ``counted``: the ``(key, event_id)`` pairs counted by this call. ``duplicates``: pairs counted
    before, plus every repeat of a pair within the same call.
    """

    counted: list[EventRef] = field(default_factory=list)
    duplicates: list[EventRef] = field(default_factory=list)


@dataclass(slots=True, eq=False)
class _Pending:
    index: int
    key: str
    event_id: str
    amount: int
    shard: int
    trace_id: str | None


@dataclass(frozen=True, slots=True)
class _Stamp:
    """What every marker of one call carries."""

    ttl: int
    counted_at: str


def _trace_id(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _default_client() -> Any:
    """A DynamoDB client with botocore's own retries off (:class:`Backoff` is the one retry policy)
    and without botocore's parameter validation: every request is built here from checked keys,
    ids and amounts, and DynamoDB validates it again. The validation walks each of a transaction's
    100 actions: about a third of the client's CPU for the call."""
    import boto3
    from botocore.config import Config

    return boto3.client("dynamodb", config=Config(retries={"total_max_attempts": 1}, parameter_validation=False))


class Counter:
    """Exactly-once counters in one DynamoDB table (``PK``/``SK`` strings, TTL on ``ttl``).

    ``client`` defaults to ``boto3.client("dynamodb")``, created on first use (so ``AWS_ENDPOINT_URL``
    pointing at a local endpoint just works). ``marker_ttl`` is how long an event id is remembered;
    a retry arriving later is counted again. ``shards`` spreads each counter over that many items for
    keys written faster than one item takes (~500 transactional increments/s); raising it later is
    safe, lowering it hides the counts of the dropped shards. ``backoff`` sets the retry policy for
    throttling, conflicts, 5xx and network errors. ``read_first``: read a batch's markers before
    writing it (True), never (False), or when this counter has been meeting duplicates (None, the
    default: see :mod:`lambda_kit.counters.duplicates`); unless False, a transaction cancelled by
    duplicates also has the call's unsent markers read. The role then needs ``dynamodb:BatchGetItem``.
    """

    def __init__(
        self,
        table: str,
        client: Any = None,
        marker_ttl: timedelta = timedelta(days=7),
        shards: int = 1,
        backoff: Backoff | None = None,
        read_first: bool | None = None,
    ) -> None:
        if not isinstance(table, str) or not table:
            raise CounterError(f"table name {table!r} must be a non-empty str")
        if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
            raise CounterError(f"shards={shards!r} must be an int of at least 1")
        if not isinstance(marker_ttl, timedelta) or marker_ttl <= timedelta(0):
            raise CounterError(f"marker_ttl={marker_ttl!r} must be a positive timedelta")
        self.table = table
        self.marker_ttl = marker_ttl
        self.shards = shards
        self.backoff = backoff or Backoff()
        self.read_first = read_first
        self.duplicate_share = DuplicateShare()
        self._client = client
        self._client_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Counter({self.table!r}, shards={self.shards}, marker_ttl={self.marker_ttl!r})"

    @property
    def client(self) -> Any:
        """The DynamoDB client, created on first use when none was given."""
        if self._client is None:
            with self._client_lock:
                if self._client is None:
                    self._client = _default_client()
        return self._client

    # -- writing -------------------------------------------------------------------------------

    def increment(self, key: str, event_id: str, amount: int = 1) -> bool:
        """Add ``amount`` to ``key`` once per ``event_id``: True if counted now, False if counted before."""
        return bool(self.increment_many([(key, event_id, amount)]).counted)

    def increment_many(self, events: Iterable[IncrementRequest]) -> IncrementResult:
        """Count a batch of ``(key, event_id[, amount])`` or :class:`Increment` exactly once each, in as
        few requests as possible.

        Up to 100 actions go in one transaction, with one counter update per distinct counter item
        carrying the summed amount; markers found by a first read (see ``read_first``), or by the read
        after a transaction their duplicates cancelled, are not written.
        Transient errors are retried (see :class:`Backoff`); after the last try the error propagates
        and nothing of the unsent rest is counted, so the caller's retry of the whole batch is safe:
        what was counted comes back as duplicates. A resend after a lost response carries the same
        ``ClientRequestToken``, so DynamoDB answers it as the success it was; if DynamoDB refuses the
        token (``IdempotentParameterMismatchException``: it was used for another request), the
        transaction is sent again with a new token and the markers decide, so what the earlier send
        counted comes back as duplicates.
        """
        refs: list[EventRef] = []
        counted_now: list[bool] = []
        first_seen: set[EventRef] = set()
        pending: list[_Pending] = []
        default_trace_id = _trace_id(current_trace_id())
        for index, event in enumerate(events):
            key, event_id, amount, trace_id = self._parse(event)
            refs.append((key, event_id))
            counted_now.append(False)
            if (key, event_id) in first_seen:
                continue  # a repeat within this call: a duplicate, whatever the first one turns out to be
            first_seen.add((key, event_id))
            shard = shard_for(event_id, self.shards)
            pending.append(_Pending(index, key, event_id, amount, shard, trace_id or default_trace_id))
        if pending:
            seen = self._counted_before(pending) if self._should_read(pending) else set()
            unseen = [event for event in pending if event not in seen]
            written = self._write(unseen, self._stamp()) if unseen else []
            for event in written:
                counted_now[event.index] = True
            self.duplicate_share.observe(len(pending), len(pending) - len(written))
        result = IncrementResult()
        for ref, counted in zip(refs, counted_now, strict=True):
            (result.counted if counted else result.duplicates).append(ref)
        return result

    @staticmethod
    def _parse(event: object) -> tuple[str, str, int, str | None]:
        if not isinstance(event, tuple | list) or not 2 <= len(event) <= 4:
            raise InvalidKeyError(
                f"increment {event!r} must be (key, event_id), (key, event_id, amount) or an Increment"
            )
        key = check_key(event[0])
        event_id = check_event_id(key, event[1])
        amount = check_amount(key, event[2]) if len(event) >= 3 else 1
        trace_id = event[3] if len(event) == 4 else None
        if trace_id is not None and not isinstance(trace_id, str):
            raise InvalidKeyError(f"trace id {trace_id!r} for counter key {key!r} must be a str or None")
        return key, event_id, amount, _trace_id(trace_id)

    def _should_read(self, pending: list[_Pending]) -> bool:
        if self.read_first is not None:
            return self.read_first
        events = len(pending)
        actions = events + len({(event.key, event.shard) for event in pending})
        per_transaction = min(1.0, MAX_ACTIONS / actions)
        return self.duplicate_share.read_first(events * per_transaction, actions * per_transaction)

    def _counted_before(self, pending: list[_Pending]) -> set[_Pending]:
        """The events whose marker exists: a strongly consistent ``BatchGetItem`` of their markers,
        100 at a time. Markers left unread (throttled, unprocessed) are written; their condition decides."""
        by_marker = {(shard_pk(e.key, e.shard), marker_sk(e.event_id)): e for e in pending}
        markers = list(by_marker)
        found: set[_Pending] = set()
        for at in range(0, len(markers), BATCH_GET_KEYS):
            chunk = markers[at : at + BATCH_GET_KEYS]
            request = {
                self.table: {
                    "Keys": [{"PK": {"S": pk}, "SK": {"S": sk}} for pk, sk in chunk],
                    "ProjectionExpression": "#pk, #sk",
                    "ExpressionAttributeNames": {"#pk": "PK", "#sk": "SK"},
                    "ConsistentRead": True,
                }
            }
            try:
                response = self.client.batch_get_item(RequestItems=request)
            except Exception as error:
                if is_transient(error):
                    continue
                explained = self._explain(error, [pk for pk, _sk in chunk])
                if explained is None:
                    raise
                raise explained from error
            for item in response.get("Responses", {}).get(self.table, []):
                found.add(by_marker[(item["PK"]["S"], item["SK"]["S"])])
        return found

    def _stamp(self) -> _Stamp:
        now = time.time()
        return _Stamp(
            ttl=int(now + self.marker_ttl.total_seconds()),
            counted_at=datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        )

    def _write(self, pending: list[_Pending], stamp: _Stamp) -> list[_Pending]:
        """Send ``pending`` in transactions; return the events counted (the rest were duplicates)."""
        counted: list[_Pending] = []
        failures = 0
        groups: list[CounterGroup[_Pending]] = []
        token = ""
        while groups or pending:
            if not groups:
                groups, pending = pack_transaction(pending)
                token = str(uuid.uuid4())
            actions, subjects = self._actions(groups, stamp)
            try:
                # The token makes a resend after a lost response succeed without writing twice
                # (DynamoDB honours it for 10 minutes; the markers make it safe either way).
                self.client.transact_write_items(TransactItems=actions, ClientRequestToken=token)
            except Exception as error:
                code = error_code(error)
                if code == "TransactionCanceledException":
                    duplicates, transient = self._read_cancellation(error, subjects)
                    retry = [e for group in groups for e in group.events if e not in duplicates]
                    if duplicates and self.read_first is not False:
                        # Someone counted this call's events before: a redelivered batch, or another
                        # invocation given the same events right now. The rest may be counted too,
                        # and a read costs less than cancelling the next transaction whole.
                        seen = self._counted_before(pending)
                        pending = [e for e in pending if e not in seen]
                    pending = retry + pending
                    groups = []
                    if duplicates and not transient:
                        failures = 0
                        continue  # progress: resend the rest at once
                elif code == "IdempotentParameterMismatchException":
                    token = str(uuid.uuid4())  # the token is spoilt: the markers decide what the last send did
                elif not is_transient(error):
                    explained = self._explain(error, [e.key for group in groups for e in group.events])
                    if explained is None:
                        raise
                    raise explained from error
                elif not outcome_unknown(error):
                    token = str(uuid.uuid4())
                failures += 1
                if failures >= self.backoff.attempts:
                    raise
                self.backoff.wait(failures)
                continue
            counted.extend(e for group in groups for e in group.events)
            groups = []
            failures = 0
        return counted

    def _actions(
        self, groups: Sequence[CounterGroup[_Pending]], stamp: _Stamp
    ) -> tuple[list[dict[str, Any]], list[_Pending | str]]:
        """The transaction's actions, and for each the event (marker) or key (counter update) it writes."""
        actions: list[dict[str, Any]] = []
        subjects: list[_Pending | str] = []
        for group in groups:
            for event in group.events:
                item: dict[str, Any] = {
                    "PK": {"S": shard_pk(event.key, event.shard)},
                    "SK": {"S": marker_sk(event.event_id)},
                    "ttl": {"N": str(stamp.ttl)},
                    "amount": {"N": str(event.amount)},
                    "counted_at": {"S": stamp.counted_at},
                }
                if event.trace_id is not None:
                    item["trace_id"] = {"S": event.trace_id}
                actions.append(
                    {
                        "Put": {
                            "TableName": self.table,
                            "Item": item,
                            "ConditionExpression": "attribute_not_exists(PK)",
                        }
                    }
                )
                subjects.append(event)
            update: dict[str, Any] = {
                "TableName": self.table,
                "Key": {"PK": {"S": shard_pk(group.key, group.shard)}, "SK": {"S": COUNTER_SK}},
                "UpdateExpression": "ADD #count :amount",
                "ExpressionAttributeNames": {"#count": COUNT_ATTRIBUTE},
                "ExpressionAttributeValues": {":amount": {"N": str(group.amount)}},
            }
            last_trace_id = group.events[-1].trace_id
            if last_trace_id is not None:
                # The counter's own stream record then carries a trace id too (milestones log under it).
                update["UpdateExpression"] += " SET #trace = :trace"
                update["ExpressionAttributeNames"]["#trace"] = "trace_id"
                update["ExpressionAttributeValues"][":trace"] = {"S": last_trace_id}
            actions.append({"Update": update})
            subjects.append(group.key)
        return actions, subjects

    def _read_cancellation(
        self, error: Exception, subjects: list[_Pending | str]
    ) -> tuple[set[_Pending], bool]:
        """From ``CancellationReasons``: the events whose marker existed, and whether to back off."""
        reasons = getattr(error, "response", {}).get("CancellationReasons") or []
        duplicates: set[_Pending] = set()
        transient = False
        for subject, reason in zip(subjects, reasons, strict=False):
            code = reason.get("Code") or "None"
            key = subject if isinstance(subject, str) else subject.key
            if code == "None":
                continue
            if code == "ConditionalCheckFailed" and not isinstance(subject, str):
                duplicates.add(subject)
            elif code in TRANSIENT_CANCELLATION_REASONS:
                transient = True
            elif code == "ValidationError":
                raise InvalidKeyError(
                    f"DynamoDB rejected the increment of counter key {key!r}: {reason.get('Message', '')}"
                ) from error
            else:
                raise CounterError(
                    f"DynamoDB cancelled the increment of counter key {key!r}: {code} {reason.get('Message', '')}"
                ) from error
        if not duplicates and not transient:
            raise CounterError(
                f"DynamoDB cancelled a transaction on table {self.table!r} without a usable reason: {error}"
            ) from error
        return duplicates, transient

    def _explain(self, error: Exception, keys: list[str]) -> CounterError | None:
        """A one-line :class:`CounterError` for errors a user fixes (table, request), else None."""
        code = error_code(error)
        if code == "ResourceNotFoundException":
            return CounterError(f"DynamoDB table {self.table!r} not found: create it or fix the table name")
        if code == "AccessDeniedException":
            operation = getattr(error, "operation_name", "") or "the request"
            needs = f"dynamodb:{operation}"
            if operation == "TransactWriteItems":  # IAM has no such action: it authorises each item's action
                needs = "dynamodb:PutItem and dynamodb:UpdateItem, which IAM checks for a transaction's items"
            return CounterError(
                f"DynamoDB denied {operation} on table {self.table!r}: the role needs {needs}"
                " (Counter reads with BatchGetItem and writes with PutItem and UpdateItem)"
            )
        if code == "ValidationException":
            shown = ", ".join(repr(k) for k in dict.fromkeys(keys[:5]))
            more = " ..." if len(set(keys)) > 5 else ""
            message = getattr(error, "response", {}).get("Error", {}).get("Message", "")
            return InvalidKeyError(f"DynamoDB rejected the request for counter keys {shown}{more}: {message}")
        return None

    # -- reading -------------------------------------------------------------------------------

    def get(self, key: str, *, consistent: bool = False) -> int:
        """The count of ``key`` (all shards summed); 0 for a key never counted."""
        return self.get_many([key], consistent=consistent)[key]

    def get_many(self, keys: Iterable[str], *, consistent: bool = False) -> dict[str, int]:
        """The counts of ``keys`` (0 for keys never counted), read with ``BatchGetItem`` 100 items at a time.

        Each key reads ``shards`` items; keys DynamoDB leaves unprocessed are asked for again after a
        backoff, and if they are still unread after the last try a :class:`CounterError` says how many.
        """
        totals = {check_key(key): 0 for key in keys}
        key_by_pk = {shard_pk(key, shard): key for key in totals for shard in range(self.shards)}
        queue = [{"PK": {"S": pk}, "SK": {"S": COUNTER_SK}} for pk in key_by_pk]
        failures = 0
        while queue:
            chunk, queue = queue[:BATCH_GET_KEYS], queue[BATCH_GET_KEYS:]
            request = {
                self.table: {
                    "Keys": chunk,
                    "ProjectionExpression": "#pk, #count",
                    "ExpressionAttributeNames": {"#pk": "PK", "#count": COUNT_ATTRIBUTE},
                    "ConsistentRead": consistent,
                }
            }
            try:
                response = self.client.batch_get_item(RequestItems=request)
            except Exception as error:
                if not is_transient(error):
                    explained = self._explain(error, [k["PK"]["S"] for k in chunk])
                    if explained is None:
                        raise
                    raise explained from error
                failures += 1
                if failures >= self.backoff.attempts:
                    raise
                queue = chunk + queue
                self.backoff.wait(failures)
                continue
            for item in response.get("Responses", {}).get(self.table, []):
                totals[key_by_pk[item["PK"]["S"]]] += int(item.get(COUNT_ATTRIBUTE, {}).get("N", "0"))
            unprocessed = response.get("UnprocessedKeys", {}).get(self.table, {}).get("Keys", [])
            if not unprocessed:
                failures = 0
                continue
            failures += 1
            if failures >= self.backoff.attempts:
                raise CounterError(
                    f"DynamoDB left {len(unprocessed)} counter items of table {self.table!r} unread after "
                    f"{failures} tries (throttled), first key {unprocessed[0]['PK']['S']!r}"
                )
            queue = unprocessed + queue
            self.backoff.wait(failures)
        return totals
