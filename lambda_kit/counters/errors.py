"""The exceptions ``lambda_kit.counters`` raises itself (transient AWS errors propagate unchanged)."""

from __future__ import annotations


class CounterError(Exception):
    """A counter operation that cannot succeed as asked (missing table, rejected request ...)."""


class InvalidKeyError(CounterError, ValueError):
    """A key, event id or amount that DynamoDB would reject; the message names the offending key."""
