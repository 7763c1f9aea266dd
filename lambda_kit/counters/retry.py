"""How long to wait between tries, and which DynamoDB errors are worth another try."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType

from lambda_kit.extras import import_optional

NEEDS_BOTO3 = "lambda_kit.counters.Counter"
"""What the one-line error of a missing boto3 (an extra) names as needing it."""

TRANSIENT_ERROR_CODES = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
        "TransactionInProgressException",
        "TransactionConflictException",
    }
)
"""Error codes of a whole request that a later try can get past."""

TRANSIENT_CANCELLATION_REASONS = frozenset(
    {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"}
)
"""``CancellationReasons`` codes of a cancelled transaction that a later try can get past."""


@dataclass(frozen=True)
class Backoff:
    """Capped exponential backoff with full jitter.

    After the n-th consecutive failure the caller waits ``jitter() * min(cap, base * 2 ** (n - 1))``
    seconds; after ``attempts`` failures the error propagates. ``sleep`` and ``jitter`` are
    injectable so tests run without waiting.
    """

    attempts: int = 8
    base: float = 0.05
    cap: float = 2.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)
    jitter: Callable[[], float] = field(default=random.random, compare=False)

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"Backoff.attempts must be at least 1, got {self.attempts}")
        if self.base < 0 or self.cap < 0:
            raise ValueError(
                f"Backoff.base and Backoff.cap must not be negative, got {self.base}, {self.cap}"
            )

    def delay(self, failures: int) -> float:
        """Seconds to wait after ``failures`` consecutive failures (1 for the first)."""
        return self.jitter() * min(self.cap, self.base * 2 ** (failures - 1))

    def wait(self, failures: int) -> None:
        self.sleep(self.delay(failures))


class Tries:
    """Consecutive failures of one call under a :class:`Backoff`: wait after each, give up after the last."""

    def __init__(self, backoff: Backoff) -> None:
        self.backoff = backoff
        self.failures = 0

    def failed(self, error: BaseException) -> None:
        """One more failure: wait before the next try, or raise ``error`` when it was the last."""
        self.failures += 1
        if self.failures >= self.backoff.attempts:
            raise error
        self.backoff.wait(self.failures)

    def succeeded(self) -> None:
        """Progress: the next failure is the first again."""
        self.failures = 0


def _botocore_exceptions() -> ModuleType:
    """``botocore.exceptions``, imported when an error is looked at (botocore comes with boto3, an extra)."""
    return import_optional("botocore.exceptions", NEEDS_BOTO3)


def error_code(error: BaseException) -> str | None:
    """The AWS error code of a botocore ``ClientError``, else None."""
    response = getattr(error, "response", None)
    if not isinstance(response, dict):
        return None
    return response.get("Error", {}).get("Code")


def _status(error: BaseException) -> int:
    response = getattr(error, "response", None)
    if not isinstance(response, dict):
        return 0
    return int(response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)


def is_transient(error: BaseException) -> bool:
    """True for throttling, conflicts, 5xx and network errors: worth another try after a wait."""
    exceptions = _botocore_exceptions()
    if isinstance(error, exceptions.ConnectionError | exceptions.HTTPClientError):
        return True
    return error_code(error) in TRANSIENT_ERROR_CODES or _status(error) >= 500


def outcome_unknown(error: BaseException) -> bool:
    """True when the request may have been carried out although it failed (timeouts, 5xx, or the
    same transaction still in progress): resend it with the same ``ClientRequestToken``."""
    if isinstance(error, _botocore_exceptions().HTTPClientError) or _status(error) >= 500:
        return True
    return error_code(error) == "TransactionInProgressException"
