"""The trace scope: the record being processed, its trace id, id validation and generation."""

from __future__ import annotations

import os
import re
from contextvars import ContextVar
from typing import Any

from .foreign import bounded_repr

_VALID_ID = re.compile(r"[A-Za-z0-9\-_.:=;/+]{1,128}")

_record: ContextVar[Any] = ContextVar("lambda_kit_record", default=None)

set_current_record = _record.set
"""Make ``record`` the current one (returns a token for ``reset_current_record``)."""

reset_current_record = _record.reset
"""Restore the record that was current before the matching ``set_current_record``."""

record_in_scope = _record.get
"""``current_record`` with no Python call of its own (the log lines' hot path)."""


def is_valid_id(value: object) -> bool:
    """A trace id is 1-128 letters, digits or ``-_.:=;/+``; anything else is never used as one."""
    return isinstance(value, str) and _valid_text(value) is not None


_valid_text = _VALID_ID.fullmatch


def new_id() -> str:
    return os.urandom(16).hex()


STABLE_TEXT = 64 * 1024
"""How much of a value's ``repr`` ``stable_id`` digests: any id or record, whole."""


def stable_id(value: object) -> str:
    """An id derived from ``value``: itself when valid, else a digest of its ``repr`` (stable across
    retries). Any value, however deep or large: it is read no further than ``STABLE_TEXT``
    characters (``trace.foreign``), so this never raises."""
    if is_valid_id(value):
        return value  # type: ignore[return-value]
    text = bounded_repr(value, STABLE_TEXT)
    return "h-" + digest("sha1", text.encode("utf-8", "backslashreplace")).hex()


def digest(algorithm: str, data: bytes, size: int | None = None) -> bytes:
    """``hashlib``'s digest of ``data`` (``size`` bytes, for blake2b), loaded with the first digest
    made: OpenSSL's hashlib costs a cold start about 6 ms, and most invocations make none."""
    import hashlib

    found = hashlib.new(algorithm, data) if size is None else hashlib.blake2b(data, digest_size=size)
    return found.digest()


def current_record() -> Any:
    """The record being processed (``source``, ``id``, ``trace_id``, ``payload``, ``raw``), else None."""
    return _record.get()


def current_trace_id() -> str | None:
    """The trace id of the record being processed, else None."""
    record = _record.get()
    return None if record is None else record.trace_id
