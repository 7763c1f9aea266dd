"""The DynamoDB writes of one idempotent call, committed with its completed entry in one transaction.

Inside an ``@idempotent`` function, ``current_writes()`` is the call's :class:`Writes`. What is added
to it is not sent at once: when the function returns, its writes and the entry that marks the call
completed go in one ``TransactWriteItems``, on condition that the entry is still this call's claim.
So the writes happen exactly once: never without the entry, never twice, and never when the
function raised. Items, keys and expression values are plain Python values (``Decimal`` for
non-integers, as boto3 takes them); ``add`` takes an action in the low-level client's form.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from ..extras import import_optional
from .errors import IdempotencyError

MAX_WRITES = 99
"""A transaction takes 100 actions; one is the completed entry."""

_current: ContextVar[Writes | None] = ContextVar("lambda_kit_idempotency_writes", default=None)


def _serializer() -> Any:
    types = import_optional("boto3.dynamodb.types", "lambda_kit.idempotency")
    return types.TypeSerializer()


def _attributes(values: dict[str, Any] | None) -> dict[str, Any]:
    if not values:
        return {}
    serializer = _serializer()
    try:
        return {name: serializer.serialize(value) for name, value in values.items()}
    except TypeError as exc:
        raise IdempotencyError(f"a value of an idempotent call's write cannot be written: {exc}") from None


def _expressions(
    body: dict[str, Any], condition: str | None, names: dict[str, str] | None, values: dict[str, Any] | None
) -> dict[str, Any]:
    if condition is not None:
        body["ConditionExpression"] = condition
    if names:
        body["ExpressionAttributeNames"] = dict(names)
    if values:
        body["ExpressionAttributeValues"] = _attributes(values)
    return body


class Writes:
    """The writes of one call; see the module's docstring."""

    def __init__(self) -> None:
        self.actions: list[dict[str, Any]] = []

    def add(self, action: dict[str, Any]) -> None:
        """One ``TransactWriteItems`` action as the low-level client takes it (``{"Put": {...}}``,
        ``Update``, ``Delete`` or ``ConditionCheck``), attribute values typed (``{"S": "a"}``)."""
        if not isinstance(action, dict) or len(action) != 1 or next(iter(action)) not in _KINDS:
            raise IdempotencyError(
                f"an idempotent call's write must be one of {', '.join(_KINDS)} as TransactWriteItems "
                f"takes it, not {action!r:.100}"
            )
        if len(self.actions) >= MAX_WRITES:
            raise IdempotencyError(
                f"an idempotent call's writes take at most {MAX_WRITES} actions (a transaction takes 100, "
                "one is the completed entry)"
            )
        self.actions.append(action)

    def put(
        self,
        table: str,
        item: dict[str, Any],
        *,
        condition: str | None = None,
        names: dict[str, str] | None = None,
        values: dict[str, Any] | None = None,
    ) -> None:
        body = {"TableName": table, "Item": _attributes(item)}
        self.add({"Put": _expressions(body, condition, names, values)})

    def update(
        self,
        table: str,
        key: dict[str, Any],
        expression: str,
        *,
        condition: str | None = None,
        names: dict[str, str] | None = None,
        values: dict[str, Any] | None = None,
    ) -> None:
        body = {"TableName": table, "Key": _attributes(key), "UpdateExpression": expression}
        self.add({"Update": _expressions(body, condition, names, values)})

    def delete(
        self,
        table: str,
        key: dict[str, Any],
        *,
        condition: str | None = None,
        names: dict[str, str] | None = None,
        values: dict[str, Any] | None = None,
    ) -> None:
        body = {"TableName": table, "Key": _attributes(key)}
        self.add({"Delete": _expressions(body, condition, names, values)})

    def check(
        self,
        table: str,
        key: dict[str, Any],
        condition: str,
        *,
        names: dict[str, str] | None = None,
        values: dict[str, Any] | None = None,
    ) -> None:
        """The transaction commits only if ``condition`` holds on ``key``'s item (not written to)."""
        body = {"TableName": table, "Key": _attributes(key)}
        self.add({"ConditionCheck": _expressions(body, condition, names, values)})


_KINDS = ("Put", "Update", "Delete", "ConditionCheck")


def current_writes() -> Writes:
    """The writes of the idempotent call running now; outside one, :class:`IdempotencyError`."""
    writes = _current.get()
    if writes is None:
        raise IdempotencyError(
            "current_writes() is called outside an @idempotent function: its writes would have no entry"
        )
    return writes


def open_writes() -> tuple[Writes, Any]:
    """A new call's writes, current until ``close_writes(token)``."""
    writes = Writes()
    return writes, _current.set(writes)


def close_writes(token: Any) -> None:
    _current.reset(token)
