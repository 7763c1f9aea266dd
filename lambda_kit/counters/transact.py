"""One DynamoDB transaction sent until it commits or is cancelled: the piece the counters and
``lambda_kit.idempotency`` share.

``send`` keeps the ``ClientRequestToken`` across a resend whose outcome is unknown (a timeout, a
5xx, the same transaction still in progress), so DynamoDB answers it as the success it was; takes a
new one after an error that cannot have been carried out, or when DynamoDB refuses the token (used
for another request); waits between tries under a :class:`~lambda_kit.counters.Backoff`; and hands
back a cancellation (``TransactionCanceledException``) for the caller to read: what each action's
``CancellationReasons`` entry means is the caller's (a duplicate marker, a claim lost, a user's
condition). An error no try gets past is raised as the caller's one-line error for it.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

from lambda_kit.counters.retry import Tries, error_code, is_transient, outcome_unknown
from lambda_kit.extras import import_optional

Explain = Callable[[Exception], Exception | None]
"""The one-line error a user fixes for an error no try gets past, or None (raised as it is)."""


def new_token() -> str:
    return str(uuid.uuid4())


def default_client(needs: str) -> Any:
    """A DynamoDB client with botocore's own retries off (the :class:`Backoff` is the one retry
    policy) and without botocore's parameter validation: every request is built from checked values,
    and DynamoDB validates it again. The validation walks each of a transaction's 100 actions: about
    a third of the client's CPU for the call. ``needs`` names what needs boto3 in the one-line error
    of a missing extra."""
    boto3 = import_optional("boto3", needs)
    config = import_optional("botocore.config", needs)
    return boto3.client(
        "dynamodb", config=config.Config(retries={"total_max_attempts": 1}, parameter_validation=False)
    )


def explain(
    error: Exception,
    table: str,
    *,
    kind: type[Exception],
    writes_with: str,
    transaction_needs: str,
    rejected: Callable[[str], Exception],
) -> Exception | None:
    """The one-line error of kind ``kind`` for what a user fixes: a table not found, an action the role
    may not make (``writes_with`` says which the caller uses; IAM has no ``TransactWriteItems`` action,
    it authorises each item's action: ``transaction_needs``), a request DynamoDB rejects (``rejected``
    of its message); None for anything else."""
    code = error_code(error)
    if code == "ResourceNotFoundException":
        return kind(f"DynamoDB table {table!r} not found: create it or fix the table name")
    if code == "AccessDeniedException":
        operation = getattr(error, "operation_name", "") or "the request"
        needs = transaction_needs if operation == "TransactWriteItems" else f"dynamodb:{operation}"
        return kind(f"DynamoDB denied {operation} on table {table!r}: the role needs {needs} ({writes_with})")
    if code == "ValidationException":
        return rejected(getattr(error, "response", {}).get("Error", {}).get("Message", ""))
    return None


class LazyClient:
    """A DynamoDB client given, or the default one (``default_client(needs)``) created on first use,
    once, whichever thread asks first."""

    def __init__(self, client: Any, needs: str) -> None:
        self._client = client
        self._needs = needs
        self._lock = threading.Lock()

    def get(self) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = default_client(self._needs)
        return self._client


def raise_unless_transient(error: Exception, explain: Explain) -> None:
    """Unless another try may get past ``error``: raise the one-line error ``explain`` gives for it,
    or ``error`` itself."""
    if is_transient(error):
        return
    explained = explain(error)
    if explained is None:
        raise error
    raise explained from error


def cancellation_reasons(error: Exception) -> list[dict[str, Any]]:
    """The ``CancellationReasons`` of a cancelled transaction, one per action (fewer when DynamoDB
    gives fewer: the rest had no objection)."""
    return getattr(error, "response", {}).get("CancellationReasons") or []


def reason_code(reason: dict[str, Any]) -> str:
    """An action's cancellation code; ``"None"`` for an action that had no objection."""
    return reason.get("Code") or "None"


def send(client: Any, actions: list[dict[str, Any]], tries: Tries, explain: Explain) -> Exception | None:
    """Send one transaction until DynamoDB commits it (None) or cancels it (the cancellation)."""
    token = new_token()
    while True:
        try:
            # The token makes a resend after a lost response succeed without writing twice
            # (DynamoDB honours it for 10 minutes; the conditions make it safe either way).
            client.transact_write_items(TransactItems=actions, ClientRequestToken=token)
        except Exception as error:
            if error_code(error) == "TransactionCanceledException":
                return error
            token = resend_token(error, token, explain)
            tries.failed(error)
        else:
            tries.succeeded()
            return None


def resend_token(error: Exception, token: str, explain: Explain) -> str:
    """The token to send the transaction again with after ``error``; raises what no try gets past."""
    if error_code(error) == "IdempotentParameterMismatchException":
        return new_token()  # the token is spoilt: the conditions decide what the last send did
    raise_unless_transient(error, explain)
    return token if outcome_unknown(error) else new_token()
