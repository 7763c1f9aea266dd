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

import time
from collections.abc import Iterable
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
from lambda_kit.counters.retry import NEEDS_BOTO3, TRANSIENT_CANCELLATION_REASONS, Backoff, Tries
from lambda_kit.counters.transact import (
    LazyClient,
    cancellation_reasons,
    explain,
    raise_unless_transient,
    reason_code,
    send,
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


_Groups = list[CounterGroup[_Pending]]
"""One transaction's events, grouped by the counter item they change."""

_Subject = _Pending | str
"""What a transaction's action writes: an event's marker, or a counter key's update."""


class _Read(NamedTuple):
    """What one ``BatchGetItem`` found, and the keys it left unprocessed."""

    items: list[dict[str, Any]]
    unprocessed: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class _Stamp:
    """What every marker of one call carries."""

    ttl: int
    counted_at: str


def _trace_id(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _checked_trace_id(key: str, value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise InvalidKeyError(f"trace id {value!r} for counter key {key!r} must be a str or None")
    if value and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidKeyError(
                f"trace id {value[:60]!r} for counter key {key!r} holds a lone surrogate, which is no "
                "Unicode text: DynamoDB cannot store it"
            ) from None
    return _trace_id(value)


def _parse(event: object) -> tuple[str, str, int, str | None]:
    """``(key, event_id, amount, trace_id)`` of one increment, checked."""
    if not isinstance(event, tuple | list) or not 2 <= len(event) <= 4:
        raise InvalidKeyError(
            f"increment {event!r} must be (key, event_id), (key, event_id, amount) or an Increment"
        )
    key = check_key(event[0])
    event_id = check_event_id(key, event[1])
    amount = check_amount(key, event[2]) if len(event) >= 3 else 1
    return key, event_id, amount, _checked_trace_id(key, event[3] if len(event) == 4 else None)


def _events(groups: _Groups) -> list[_Pending]:
    return [event for group in groups for event in group.events]


def _marker_put(table: str, event: _Pending, stamp: _Stamp) -> dict[str, Any]:
    """The action that puts ``event``'s marker, on condition that it does not exist yet."""
    item: dict[str, Any] = {
        "PK": {"S": shard_pk(event.key, event.shard)},
        "SK": {"S": marker_sk(event.event_id)},
        "ttl": {"N": str(stamp.ttl)},
        "amount": {"N": str(event.amount)},
        "counted_at": {"S": stamp.counted_at},
    }
    if event.trace_id is not None:
        item["trace_id"] = {"S": event.trace_id}
    return {"Put": {"TableName": table, "Item": item, "ConditionExpression": "attribute_not_exists(PK)"}}


def _counter_update(table: str, group: CounterGroup[_Pending]) -> dict[str, Any]:
    """The action that adds ``group``'s summed amount to its counter item."""
    update: dict[str, Any] = {
        "TableName": table,
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
    return {"Update": update}


_KIND_OF_CODE: dict[str, str | None] = {
    "None": None,
    **dict.fromkeys(TRANSIENT_CANCELLATION_REASONS, "transient"),
}
"""What a ``CancellationReasons`` code says of its action (no objection, or worth another try);
any other code refuses it."""


def _reason_kind(subject: _Subject, reason: dict[str, Any]) -> str | None:
    """What one action's ``CancellationReasons`` entry says: duplicate, transient, refused, or None
    (no objection to that action)."""
    code = reason_code(reason)
    if code == "ConditionalCheckFailed" and isinstance(subject, _Pending):
        return "duplicate"
    return _KIND_OF_CODE.get(code, "refused")


def _refusal(subject: _Subject, reason: dict[str, Any]) -> CounterError:
    """The one-line error for an action DynamoDB refused (a user fixes the key or the item)."""
    key = subject if isinstance(subject, str) else subject.key
    code, message = reason.get("Code"), reason.get("Message", "")
    if code == "ValidationError":
        return InvalidKeyError(f"DynamoDB rejected the increment of counter key {key!r}: {message}")
    return CounterError(f"DynamoDB cancelled the increment of counter key {key!r}: {code} {message}")


WRITES_WITH = "Counter reads with BatchGetItem and writes with PutItem and UpdateItem"
TRANSACTION_NEEDS = "dynamodb:PutItem and dynamodb:UpdateItem, which IAM checks for a transaction's items"


def _rejected(keys: list[str], message: str) -> InvalidKeyError:
    shown = ", ".join(repr(k) for k in dict.fromkeys(keys[:5]))
    more = " ..." if len(set(keys)) > 5 else ""
    return InvalidKeyError(f"DynamoDB rejected the request for counter keys {shown}{more}: {message}")


def _explain(table: str, error: Exception, keys: list[str]) -> Exception | None:
    """A one-line :class:`CounterError` for errors a user fixes (table, role, request), else None."""
    return explain(
        error,
        table,
        kind=CounterError,
        writes_with=WRITES_WITH,
        transaction_needs=TRANSACTION_NEEDS,
        rejected=lambda message: _rejected(keys, message),
    )


def _table_name(table: object) -> str:
    if not isinstance(table, str) or not table:
        raise CounterError(f"table name {table!r} must be a non-empty str")
    return table


def _shard_count(shards: object) -> int:
    if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
        raise CounterError(f"shards={shards!r} must be an int of at least 1")
    return shards


def _positive_ttl(marker_ttl: object) -> timedelta:
    if not isinstance(marker_ttl, timedelta) or marker_ttl <= timedelta(0):
        raise CounterError(f"marker_ttl={marker_ttl!r} must be a positive timedelta")
    return marker_ttl


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
        self.table = _table_name(table)
        self.shards = _shard_count(shards)
        self.marker_ttl = _positive_ttl(marker_ttl)
        self.backoff = backoff or Backoff()
        self.read_first = read_first
        self.duplicate_share = DuplicateShare()
        self._client = LazyClient(client, NEEDS_BOTO3)

    def __repr__(self) -> str:
        return f"Counter({self.table!r}, shards={self.shards}, marker_ttl={self.marker_ttl!r})"

    @property
    def client(self) -> Any:
        """The DynamoDB client, created on first use when none was given."""
        return self._client.get()

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
        refs, pending = self._pending(events)
        counted = {event.index for event in self._count(pending)}
        result = IncrementResult()
        for index, ref in enumerate(refs):
            (result.counted if index in counted else result.duplicates).append(ref)
        return result

    def _pending(self, events: Iterable[IncrementRequest]) -> tuple[list[EventRef], list[_Pending]]:
        """Every increment's ``(key, event_id)``, and the first of each pair to count; all checked
        before any request is sent."""
        refs: list[EventRef] = []
        pending: dict[EventRef, _Pending] = {}
        default_trace_id = _trace_id(current_trace_id())
        for index, event in enumerate(events):
            key, event_id, amount, trace_id = _parse(event)
            refs.append((key, event_id))
            if (key, event_id) not in pending:  # a repeat within this call is a duplicate, whatever the first
                shard = shard_for(event_id, self.shards)
                trace_id = trace_id or default_trace_id
                pending[key, event_id] = _Pending(index, key, event_id, amount, shard, trace_id)
        return refs, list(pending.values())

    def _count(self, pending: list[_Pending]) -> list[_Pending]:
        """Count ``pending``: the events counted now (the rest were counted before)."""
        if not pending:
            return []
        unseen = self._not_counted_before(pending) if self._should_read(pending) else pending
        written = self._write(unseen, self._stamp())
        self.duplicate_share.observe(len(pending), len(pending) - len(written))
        return written

    def _should_read(self, pending: list[_Pending]) -> bool:
        if self.read_first is not None:
            return self.read_first
        events = len(pending)
        actions = events + len({(event.key, event.shard) for event in pending})
        per_transaction = min(1.0, MAX_ACTIONS / actions)
        return self.duplicate_share.read_first(events * per_transaction, actions * per_transaction)

    def _not_counted_before(self, pending: list[_Pending]) -> list[_Pending]:
        """The events whose marker a strongly consistent ``BatchGetItem`` (100 markers at a time) does
        not find. Markers left unread (throttled, unprocessed) are written; their condition decides."""
        by_marker = {(shard_pk(e.key, e.shard), marker_sk(e.event_id)): e for e in pending}
        markers = list(by_marker)
        found: set[_Pending] = set()
        for at in range(0, len(markers), BATCH_GET_KEYS):
            chunk = markers[at : at + BATCH_GET_KEYS]
            found.update(by_marker[marker] for marker in self._markers_found(chunk))
        return [event for event in pending if event not in found]

    def _markers_found(self, markers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """Which of ``markers`` (``(PK, SK)``, 100 at most) exist; none when the read fails transiently."""
        keys = [{"PK": {"S": pk}, "SK": {"S": sk}} for pk, sk in markers]
        try:
            items = self._batch_get(keys, ("PK", "SK"), consistent=True).items
        except Exception as error:
            self._raise_unless_transient(error, [pk for pk, _sk in markers])
            return []
        return [(item["PK"]["S"], item["SK"]["S"]) for item in items]

    def _batch_get(self, keys: list[dict[str, Any]], attributes: tuple[str, ...], consistent: bool) -> _Read:
        """One ``BatchGetItem`` of ``keys``, reading ``attributes`` only."""
        names = {f"#{index}": attribute for index, attribute in enumerate(attributes)}  # COUNT is reserved
        request = {
            "Keys": keys,
            "ProjectionExpression": ", ".join(names),
            "ExpressionAttributeNames": names,
            "ConsistentRead": consistent,
        }
        response = self.client.batch_get_item(RequestItems={self.table: request})
        return _Read(
            items=response.get("Responses", {}).get(self.table, []),
            unprocessed=response.get("UnprocessedKeys", {}).get(self.table, {}).get("Keys", []),
        )

    def _stamp(self) -> _Stamp:
        now = time.time()
        return _Stamp(
            ttl=int(now + self.marker_ttl.total_seconds()),
            counted_at=datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        )

    def _write(self, pending: list[_Pending], stamp: _Stamp) -> list[_Pending]:
        """Send ``pending`` in transactions; return the events counted (the rest were duplicates)."""
        counted: list[_Pending] = []
        tries = Tries(self.backoff)
        while pending:
            groups, pending = pack_transaction(pending)
            actions, subjects = self._actions(groups, stamp)
            try:
                cancellation = self._send(actions, groups, tries)
                if cancellation is not None:
                    pending = self._after_cancellation(cancellation, subjects, groups, pending, tries)
                    continue
            except InvalidKeyError as refusal:
                pending = self._after_refusal(groups, refusal) + pending
                continue
            counted.extend(_events(groups))
        return counted

    def _after_refusal(self, groups: _Groups, refusal: InvalidKeyError) -> list[_Pending]:
        """DynamoDB refused the transaction (a count it would take past 38 digits, say): it may
        refuse an update before it looks at the markers, so the transaction's events counted before
        are found by reading their markers, dropped as duplicates whatever their amount, and the
        rest is what is left to send. None counted before: the refusal is raised."""
        events = _events(groups)
        unseen = self._not_counted_before(events)
        if len(unseen) == len(events):
            raise refusal
        return unseen

    def _send(self, actions: list[dict[str, Any]], groups: _Groups, tries: Tries) -> Exception | None:
        """Send one transaction until DynamoDB commits it (None) or cancels it (the cancellation)."""
        keys = [event.key for event in _events(groups)]
        return send(self.client, actions, tries, lambda error: _explain(self.table, error, keys))

    def _after_cancellation(
        self,
        error: Exception,
        subjects: list[_Subject],
        groups: _Groups,
        pending: list[_Pending],
        tries: Tries,
    ) -> list[_Pending]:
        """What is left to send after DynamoDB cancelled a transaction: its events not counted
        before, then the rest of the call."""
        duplicates, transient = self._read_cancellation(error, subjects)
        if duplicates and self.read_first is not False:
            # Someone counted this call's events before: a redelivered batch, or another
            # invocation given the same events right now. The rest may be counted too,
            # and a read costs less than cancelling the next transaction whole.
            pending = self._not_counted_before(pending)
        if duplicates and not transient:
            tries.succeeded()  # progress: resend the rest at once
        else:
            tries.failed(error)
        return [event for event in _events(groups) if event not in duplicates] + pending

    def _actions(self, groups: _Groups, stamp: _Stamp) -> tuple[list[dict[str, Any]], list[_Subject]]:
        """The transaction's actions, and for each the event (marker) or key (counter update) it writes."""
        actions: list[dict[str, Any]] = []
        subjects: list[_Subject] = []
        for group in groups:
            actions += [_marker_put(self.table, event, stamp) for event in group.events]
            actions.append(_counter_update(self.table, group))
            subjects += [*group.events, group.key]
        return actions, subjects

    def _read_cancellation(self, error: Exception, subjects: list[_Subject]) -> tuple[set[_Pending], bool]:
        """From ``CancellationReasons``: the events whose marker existed, and whether to back off."""
        reasons = cancellation_reasons(error)
        duplicates: set[_Pending] = set()
        transient = False
        for subject, reason in zip(subjects, reasons, strict=False):
            kind = _reason_kind(subject, reason)
            if kind == "refused":
                raise _refusal(subject, reason) from error
            if kind == "duplicate":
                duplicates.add(subject)  # type: ignore[arg-type]  # only markers are duplicates
            transient = transient or kind == "transient"
        if not duplicates and not transient:
            raise CounterError(
                f"DynamoDB cancelled a transaction on table {self.table!r} without a usable reason: {error}"
            ) from error
        return duplicates, transient

    def _raise_unless_transient(self, error: Exception, keys: list[str]) -> None:
        """Unless another try may get past ``error``: raise the one-line error a user fixes for it,
        or ``error`` itself."""
        raise_unless_transient(error, lambda exc: _explain(self.table, exc, keys))

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
        tries = Tries(self.backoff)
        while queue:
            chunk, queue = queue[:BATCH_GET_KEYS], queue[BATCH_GET_KEYS:]
            read = self._read_counts(chunk, consistent, tries)
            for item in read.items:
                totals[key_by_pk[item["PK"]["S"]]] += int(item.get(COUNT_ATTRIBUTE, {}).get("N", "0"))
            queue = read.unprocessed + queue
        return totals

    def _read_counts(self, keys: list[dict[str, Any]], consistent: bool, tries: Tries) -> _Read:
        """One read of counter items: the items found, and the keys to ask for again (all of them
        after a transient error, the unprocessed ones otherwise), after a backoff."""
        try:
            read = self._batch_get(keys, ("PK", COUNT_ATTRIBUTE), consistent)
        except Exception as error:
            self._raise_unless_transient(error, [key["PK"]["S"] for key in keys])
            tries.failed(error)
            return _Read(items=[], unprocessed=keys)
        if not read.unprocessed:
            tries.succeeded()
            return read
        tries.failed(
            CounterError(
                f"DynamoDB left {len(read.unprocessed)} counter items of table {self.table!r} unread after "
                f"{tries.backoff.attempts} tries (throttled), first key {read.unprocessed[0]['PK']['S']!r}"
            )
        )
        return read
