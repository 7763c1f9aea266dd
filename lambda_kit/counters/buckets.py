"""Time buckets: a timestamp turned into counter keys such as ``DAY#2022-03-28``, always in UTC.

Dates are stored as strings inside the key, so one ``GetItem`` (or one ``BatchGetItem`` for many
articles) reads a day, an hour or a month, and one event can increment several buckets in the same
transaction::

    keys = [article, *bucket_keys(article, viewed_at, ("DAY", "MONTH"))]
    counter.increment_many([(key, event_id) for key in keys])
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Literal

Timestamp = datetime | str | int | float
"""A datetime (naive means UTC), an ISO-8601 string, or epoch seconds."""

Granularity = Literal["HOUR", "DAY", "MONTH"]

GRANULARITIES: tuple[Granularity, ...] = ("HOUR", "DAY", "MONTH")


def to_utc(ts: Timestamp) -> datetime:
    """``ts`` as an aware UTC datetime; naive datetimes and ISO strings without offset are UTC."""
    if isinstance(ts, datetime):
        moment = ts
    elif isinstance(ts, str):
        moment = _from_iso(ts)
    elif isinstance(ts, int | float) and not isinstance(ts, bool):
        return _from_epoch(ts)
    else:
        raise TypeError(f"timestamp {ts!r} must be a datetime, an ISO-8601 string or epoch seconds")
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _from_iso(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"timestamp {text!r} is not an ISO-8601 date or time") from None


def _from_epoch(seconds: int | float) -> datetime:
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        raise ValueError(f"timestamp {seconds!r} is out of range for epoch seconds (milliseconds?)") from None


def bucket(granularity: Granularity, ts: Timestamp) -> str:
    """The bucket of ``ts``: ``HOUR#2022-03-28T13``, ``DAY#2022-03-28`` or ``MONTH#2022-03``."""
    moment = to_utc(ts)
    if granularity == "DAY":
        return f"DAY#{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
    if granularity == "HOUR":
        return f"HOUR#{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}"
    if granularity == "MONTH":
        return f"MONTH#{moment.year:04d}-{moment.month:02d}"
    raise ValueError(f"granularity {granularity!r} must be one of {', '.join(GRANULARITIES)}")


def hour_key(ts: Timestamp) -> str:
    """``HOUR#YYYY-MM-DDTHH`` of ``ts`` in UTC."""
    return bucket("HOUR", ts)


def day_key(ts: Timestamp) -> str:
    """``DAY#YYYY-MM-DD`` of ``ts`` in UTC."""
    return bucket("DAY", ts)


def month_key(ts: Timestamp) -> str:
    """``MONTH#YYYY-MM`` of ``ts`` in UTC."""
    return bucket("MONTH", ts)


def bucket_keys(key: str, ts: Timestamp, granularities: Iterable[Granularity] = ("DAY",)) -> list[str]:
    """The counter keys of ``key``'s buckets for ``ts``: ``<key>#DAY#2022-03-28`` ... in the order asked."""
    moment = to_utc(ts)
    return [f"{key}#{bucket(granularity, moment)}" for granularity in granularities]
