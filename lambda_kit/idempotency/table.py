"""The idempotency table: one entry per key, claimed, completed or released by one conditional write.

==========  ===========================================  ========================================
attribute   in progress                                  completed
==========  ===========================================  ========================================
``PK``      ``IDEMPOTENCY#<name>#<key digest>``           the same
``SK``      ``IDEMPOTENCY``                               the same
``status``  ``IN_PROGRESS``                               ``COMPLETED``
``until``   the claiming invocation's deadline (ms)       -
``ttl``     epoch seconds, at least the deadline          completion + ``expires_after``
``owner``   the claiming call's token                     the same
``result``  -                                             the result's JSON text, ``kind``, ``type``
==========  ===========================================  ========================================

``fingerprint`` (the digest ``validate=`` compares) and ``trace_id`` are on both. The layout is the
counters' (``PK``/``SK`` strings, TTL on ``ttl``): one table can hold both.

A claim is one ``PutItem`` on condition that no entry exists, or that it expired (its ``ttl`` is
past: DynamoDB's TTL deletes late, so the condition decides, not the deletion), or that it is in
progress past its deadline: a run killed mid-call blocks its key until its own invocation's
deadline, no longer. A claim that fails gets the entry back in the same request
(``ReturnValuesOnConditionCheckFailure``). Completion is one ``PutItem`` (or, with writes, one
transaction) on condition that the entry is still this call's claim; a failed call deletes its
claim on the same condition, so the next delivery runs at once.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from .. import log
from ..counters.packing import MAX_ACTIONS
from ..counters.retry import TRANSIENT_CANCELLATION_REASONS, Backoff, Tries, error_code
from ..counters.transact import (
    LazyClient,
    cancellation_reasons,
    raise_unless_transient,
    reason_code,
    send,
)
from ..counters.transact import explain as counters_explain
from ..trace import current_trace_id
from .errors import IdempotencyError
from .results import Stored

NEEDS_BOTO3 = "lambda_kit.idempotency"
PK_PREFIX = "IDEMPOTENCY#"
ENTRY_SK = "IDEMPOTENCY"
IN_PROGRESS = "IN_PROGRESS"
COMPLETED = "COMPLETED"

NAMES = {"#pk": "PK", "#status": "status", "#ttl": "ttl", "#until": "until", "#owner": "owner"}
CLAIMABLE = "attribute_not_exists(#pk) OR #ttl < :now OR (#status = :in_progress AND #until < :now_ms)"
OWNED = "#owner = :owner"
RELEASABLE = "#owner = :owner AND #status = :in_progress"


@dataclass(frozen=True, slots=True)
class Claim:
    """This call's entry, in progress: completed or released on condition that it is still ``owner``'s."""

    pk: str
    owner: str
    fingerprint: str | None
    until_ms: int


@dataclass(frozen=True, slots=True)
class Entry:
    """The entry a claim met: in progress elsewhere, or completed with its result."""

    status: str
    fingerprint: str | None
    until_ms: int
    result: Stored | None
    owner: str | None = None


def entry_pk(name: str, key_digest: str) -> str:
    return f"{PK_PREFIX}{name}#{key_digest}"


def _key(pk: str) -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"S": ENTRY_SK}}


def _number(item: dict[str, Any], name: str) -> int:
    return int(item.get(name, {}).get("N", "0"))


def _text(item: dict[str, Any], name: str) -> str | None:
    value = item.get(name)
    return value.get("S") if isinstance(value, dict) else None


def _entry(item: dict[str, Any]) -> Entry:
    result = None
    if _text(item, "status") == COMPLETED:
        result = Stored(_text(item, "kind") or "json", _text(item, "result") or "null", _text(item, "type"))
    status, fingerprint = _text(item, "status") or "", _text(item, "fingerprint")
    return Entry(status, fingerprint, _number(item, "until"), result, _text(item, "owner"))


def _stamped(item: dict[str, Any], claim: Claim) -> dict[str, Any]:
    """``item`` with what every entry of ``claim`` carries: its owner, fingerprint and trace id."""
    item["owner"] = {"S": claim.owner}
    if claim.fingerprint is not None:
        item["fingerprint"] = {"S": claim.fingerprint}
    trace_id = current_trace_id()
    if isinstance(trace_id, str) and trace_id:
        item["trace_id"] = {"S": trace_id}
    return item


def explain(table: str, error: Exception) -> Exception | None:
    """A one-line :class:`IdempotencyError` for what a user fixes (the table, the role, the request)."""
    return counters_explain(
        error,
        table,
        kind=IdempotencyError,
        writes_with="lambda_kit.idempotency writes with PutItem and DeleteItem",
        transaction_needs="dynamodb:PutItem (the entry) and the item actions of the call's writes",
        rejected=lambda message: IdempotencyError(
            f"DynamoDB rejected a write to idempotency table {table!r}: {message}"
        ),
    )


class Table:
    """One idempotency table; the client is created on first use (``AWS_ENDPOINT_URL`` works)."""

    def __init__(self, name: str, client: Any, backoff: Backoff | None, expires_after: timedelta) -> None:
        self.name = name
        self.backoff = backoff or Backoff()
        self.expires_after = expires_after
        self._client = LazyClient(client, NEEDS_BOTO3)

    @property
    def client(self) -> Any:
        return self._client.get()

    def _explain(self, error: Exception) -> Exception | None:
        return explain(self.name, error)

    def _put(self, item: dict[str, Any], condition: str, values: dict[str, Any], tries: Tries) -> Any:
        """One conditional ``PutItem``: None when written, else the entry that failed the condition."""
        names = {name: NAMES[name] for name in NAMES if name in condition}
        while True:
            try:
                self.client.put_item(
                    TableName=self.name,
                    Item=item,
                    ConditionExpression=condition,
                    ExpressionAttributeNames=names,
                    ExpressionAttributeValues=values,
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            except Exception as error:
                if error_code(error) == "ConditionalCheckFailedException":
                    return getattr(error, "response", {}).get("Item") or {}
                raise_unless_transient(error, self._explain)
                tries.failed(error)
            else:
                return None

    # -- claim -------------------------------------------------------------------------------------

    def claim(self, pk: str, fingerprint: str | None, until_ms: int) -> Claim | Entry:
        """Claim ``pk`` until ``until_ms``: the claim, or the live entry another call holds."""
        tries = Tries(self.backoff)
        while True:
            now = time.time()
            claim = Claim(pk, str(uuid.uuid4()), fingerprint, until_ms)
            ttl = max(int(now + self.expires_after.total_seconds()), until_ms // 1000 + 1)
            state = {"status": {"S": IN_PROGRESS}, "until": {"N": str(until_ms)}, "ttl": {"N": str(ttl)}}
            item = _stamped({**_key(pk), **state}, claim)
            values = {
                ":now": {"N": str(int(now))},
                ":now_ms": {"N": str(int(now * 1000))},
                ":in_progress": {"S": IN_PROGRESS},
            }
            found = self._put(item, CLAIMABLE, values, tries)
            if found is None:
                return claim
            entry = _entry(found)
            if self._live(entry, found, time.time()):
                return entry
            # the entry expired after the condition was checked (clocks differ by a little): try again
            tries.failed(IdempotencyError(f"the idempotency entry {pk!r} kept changing under its claim"))

    @staticmethod
    def _live(entry: Entry, item: dict[str, Any], now: float) -> bool:
        if entry.status == COMPLETED:
            return _number(item, "ttl") >= int(now)
        return entry.status == IN_PROGRESS and entry.until_ms >= int(now * 1000)

    # -- complete ----------------------------------------------------------------------------------

    def completed_item(self, claim: Claim, stored: Stored) -> dict[str, Any]:
        item = {
            **_key(claim.pk),
            "status": {"S": COMPLETED},
            "ttl": {"N": str(int(time.time() + self.expires_after.total_seconds()))},
            "kind": {"S": stored.kind},
            "result": {"S": stored.text},
        }
        if stored.type_name is not None:
            item["type"] = {"S": stored.type_name}
        return _stamped(item, claim)

    def complete(self, claim: Claim, stored: Stored) -> bool:
        """Mark the call completed with its result: False when the claim was lost (it outlived its
        deadline and another call claimed the key)."""
        found = self._put(
            self.completed_item(claim, stored), OWNED, {":owner": {"S": claim.owner}}, Tries(self.backoff)
        )
        return found is None

    def entry_action(self, completion: Completion) -> dict[str, Any]:
        """The transaction's action that marks ``completion``'s call completed, if still its claim."""
        return {
            "Put": {
                "TableName": self.name,
                "Item": self.completed_item(completion.claim, completion.stored),
                "ConditionExpression": OWNED,
                "ExpressionAttributeNames": {"#owner": "owner"},
                "ExpressionAttributeValues": {":owner": {"S": completion.claim.owner}},
            }
        }

    def complete_together(self, completions: list[Completion]) -> list[tuple[Completion, IdempotencyError]]:
        """Each call's writes with its completed entry, as few transactions as they pack into (up to
        100 actions; a call's actions never split): the calls whose claim was lost or whose write was
        refused, with why; nothing of theirs is written. What no try gets past is raised."""
        failed: list[tuple[Completion, IdempotencyError]] = []
        tries = Tries(self.backoff)
        pending = list(completions)
        while pending:
            taken, pending = pack(pending)
            actions = [action for completion in taken for action in completion.actions_with(self)]
            try:
                cancelled = send(self.client, actions, tries, self._explain)
            except IdempotencyError:
                if len(taken) == 1:
                    raise
                failed += self._one_by_one(taken)
                continue
            if cancelled is None:
                continue
            refused = self._refused(cancelled, taken)
            if refused:
                failed += refused
                tries.succeeded()  # progress: resend the rest at once
            else:
                tries.failed(cancelled)
            lost = {id(completion) for completion, _ in refused}
            pending = [completion for completion in taken if id(completion) not in lost] + pending
        return failed

    def _one_by_one(self, taken: list[Completion]) -> list[tuple[Completion, IdempotencyError]]:
        """Calls DynamoDB refused together (a transaction takes one action per item: two calls
        putting one item), each in its own transaction."""
        return [failure for completion in taken for failure in self.complete_together([completion])]

    def _refused(
        self, cancelled: Exception, taken: list[Completion]
    ) -> list[tuple[Completion, IdempotencyError]]:
        """The calls a cancelled transaction refused, with why (none: the cancellation is transient)."""
        reasons = iter(cancellation_reasons(cancelled))
        refused = []
        for completion in taken:
            actions = completion.actions_with(self)
            error = _refusal([next(reasons, {}) for _ in actions], actions)
            if error is not None:
                refused.append((completion, error))
        return refused

    # -- release -----------------------------------------------------------------------------------

    def release(self, claim: Claim) -> None:
        """Delete the claim of a call that failed, so the next delivery runs at once; if that fails,
        the claim expires at its deadline (one WARNING line says so)."""
        try:
            # never a completed entry: a completion whose answer was lost may have committed
            self.client.delete_item(
                TableName=self.name,
                Key=_key(claim.pk),
                ConditionExpression=RELEASABLE,
                ExpressionAttributeNames={"#owner": "owner", "#status": "status"},
                ExpressionAttributeValues={":owner": {"S": claim.owner}, ":in_progress": {"S": IN_PROGRESS}},
            )
        except Exception as error:
            if error_code(error) == "ConditionalCheckFailedException":
                return  # no longer this call's: nothing to release
            log.emit(
                "WARN",
                "could not release the idempotency claim of a failed call; it expires at its deadline",
                fields={"table": self.name, "error": log.clean(log.safe_str(error))},
            )


class ClaimLost(IdempotencyError):
    """The call outlived its deadline and another call claimed its key: its writes were not made."""


@dataclass(eq=False)
class Completion:
    """A call that returned: its claim, its result and its writes, to commit together."""

    claim: Claim
    stored: Stored
    writes: list[dict[str, Any]]
    record: Any = None  # the record the call ran for, when it is completed at the batch's commit
    invocation: str | None = None  # the request id of that record's invocation

    def actions_with(self, table: Table) -> list[dict[str, Any]]:
        return [*self.writes, table.entry_action(self)]


def _keyed_items(completion: Completion) -> set[tuple[str, str]]:
    """The items a call's writes name by key (updates, deletes, condition checks; a put names its
    item by the table's key schema, which is not known here)."""
    return {
        (str(body.get("TableName")), json.dumps(body["Key"], sort_keys=True))
        for action in completion.writes
        for body in action.values()
        if isinstance(body, dict) and "Key" in body
    }


def pack(pending: list[Completion]) -> tuple[list[Completion], list[Completion]]:
    """The next transaction's calls (whole, up to 100 actions, none writing an item another one
    of them writes by key: a transaction takes one action per item), and the rest, in order."""
    taken: list[Completion] = []
    rest: list[Completion] = []
    used = 0
    touched: set[tuple[str, str]] = set()
    for completion in pending:
        size, items = len(completion.writes) + 1, _keyed_items(completion)
        if taken and (used + size > MAX_ACTIONS or items & touched):
            rest.append(completion)
            continue
        taken.append(completion)
        used += size
        touched |= items
    return taken, rest


def _refusal(reasons: list[dict[str, Any]], actions: list[dict[str, Any]]) -> IdempotencyError | None:
    """Why a call's actions were refused (its entry's condition: the claim lost; a write's), or None."""
    codes = [reason_code(reason) for reason in reasons]
    if codes[-1] == "ConditionalCheckFailed":
        return ClaimLost(
            "the idempotency entry was claimed by another call after this one's deadline: "
            "its writes were not made"
        )
    for index, code in enumerate(codes):
        if code not in ("None", *TRANSIENT_CANCELLATION_REASONS):
            action, body = next(iter(actions[index].items()))
            return IdempotencyError(
                f"write {index + 1} of the idempotent call ({action} on table {body.get('TableName')!r}) "
                f"was refused: {code} {reasons[index].get('Message', '')}".rstrip()
            )
    return None
