"""What ``lambda_kit.idempotency`` raises. The three a caller can be answered with are
``HTTPError`` too, so an ``api_handler`` answers them with their status (409, 422, 400); under a
batch decorator they fail their record alone, which comes back."""

from __future__ import annotations

from ..errors import HTTPError


class IdempotencyError(Exception):
    """A call that cannot be made idempotent as asked (a table, a role, a result that cannot be
    stored, a claim lost at completion ...); the message says what to fix."""


class AlreadyInProgress(HTTPError, IdempotencyError):
    """Another call with the same key is running (its entry is in progress until its deadline): this
    one is not run. In a batch, this record fails alone and comes back later (409 on an API)."""

    def __init__(self, message: str) -> None:
        HTTPError.__init__(self, 409, message)


class PayloadMismatch(HTTPError, IdempotencyError):
    """The key was used before for another payload (``validate=``): no stored answer is given for
    another request (422 on an API)."""

    def __init__(self, message: str) -> None:
        HTTPError.__init__(self, 422, message)


class MissingKey(HTTPError, IdempotencyError):
    """The payload has no value for the key (a field missing or null, no ``Idempotency-Key``
    header): the call is not run without its protection (400 on an API)."""

    def __init__(self, message: str) -> None:
        HTTPError.__init__(self, 400, message)
