"""The item layout in the single table (partition key ``PK``, sort key ``SK``, TTL on ``ttl``).

=============  ===========  =====================  =====================================================
item           ``PK``       ``SK``                 other attributes
=============  ===========  =====================  =====================================================
counter        ``<key>``    ``COUNT``              ``count`` (N), ``trace_id`` of the last change
counter shard  ``<key>#SHARD#<n>``  ``COUNT``      as the counter; shard 0 is the counter itself, n = 1..N-1
event marker   shard's PK   ``EVENT#<event_id>``   ``ttl``, ``amount``, ``counted_at``, ``trace_id``
=============  ===========  =====================  =====================================================

Each shard has its own partition key, so a hot counter's writes (its markers included) spread over
that many partitions instead of meeting DynamoDB's per-partition limit. Shard 0 being the plain key
means raising ``shards`` later keeps every count readable. A stream consumer recognises a new marker
by ``SK`` beginning with :data:`MARKER_PREFIX`; :func:`key_of` turns its ``PK`` back into the counter
key that changed.

No key names another counter's item: a key that ends like a shard suffix (``K#SHARD#1``, which is
where shard 1 of ``K`` lives) is refused by :func:`check_key`, so ``(key, shard) -> PK`` is one to one
and ``key_of(shard_pk(key, n)) == key`` for every key the counters accept. Markers cannot meet
counter items (``SK`` ``EVENT#...`` against ``COUNT``), and a time bucket (``K#DAY#2022-03-28``) is
a counter key of its own, so naming it reads or counts that bucket.
"""

from __future__ import annotations

import zlib

from lambda_kit.counters.errors import InvalidKeyError

MARKER_PREFIX = "EVENT#"
"""Sort-key prefix of event markers (filter a stream on ``SK`` begins_with this)."""

COUNTER_SK = "COUNT"
"""Sort key of a counter item (and of shard 0 of a sharded counter)."""

COUNT_ATTRIBUTE = "count"
"""Attribute holding the number on a counter item."""

MAX_PK_BYTES = 2048  # DynamoDB's limit for a partition key value
MAX_SK_BYTES = 1024  # DynamoDB's limit for a sort key value
MAX_EVENT_ID_BYTES = MAX_SK_BYTES - len(MARKER_PREFIX)
MAX_AMOUNT = 10**38  # DynamoDB numbers carry 38 significant digits


SHARD_SEPARATOR = "#SHARD#"
"""Joins a counter key and its shard number in a shard's partition key."""

MAX_KEY_BYTES = MAX_PK_BYTES - len(SHARD_SEPARATOR) - 6
"""The longest counter key, in bytes of UTF-8: room is kept for a shard suffix (``#SHARD#n``)."""


def shard_pk(key: str, shard: int) -> str:
    """Partition key of ``shard`` of counter ``key``: the key itself for shard 0."""
    return key if shard == 0 else f"{key}{SHARD_SEPARATOR}{shard}"


def key_of(pk: str) -> str:
    """The counter key a counter, shard or marker item belongs to (its ``PK`` without the shard)."""
    key, separator, shard = pk.rpartition(SHARD_SEPARATOR)
    return key if separator and shard.isdigit() else pk


def marker_sk(event_id: str) -> str:
    """Sort key of the marker that records ``event_id`` as counted."""
    return MARKER_PREFIX + event_id


def shard_for(event_id: str, shards: int) -> int:
    """The shard an event increments: a stable hash of its id, so a retried event hits the same shard."""
    if shards == 1:
        return 0
    return zlib.crc32(event_id.encode("utf-8")) % shards


def _utf8_bytes(text: str) -> int:
    """How many bytes of UTF-8 ``text`` is; -1 for text no UTF-8 holds (a lone surrogate), which
    is no Unicode text and which DynamoDB cannot store."""
    if text.isascii():
        return len(text)
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return -1


_NOT_UNICODE = "holds a lone surrogate, which is no Unicode text: DynamoDB cannot store it"


def check_key(key: object) -> str:
    """``key`` if it can be a counter's partition key, else :class:`InvalidKeyError` naming it."""
    if not isinstance(key, str):
        raise InvalidKeyError(f"counter key {key!r} must be a str, not {type(key).__name__}")
    if not key:
        raise InvalidKeyError("counter key '' must not be empty")
    size = _utf8_bytes(key)
    if size < 0:
        raise InvalidKeyError(f"counter key {key[:60]!r} {_NOT_UNICODE}")
    if size > MAX_KEY_BYTES:
        raise InvalidKeyError(f"counter key {key[:60]!r}... is longer than {MAX_KEY_BYTES} bytes")
    owner = key_of(key)
    if owner != key:
        raise InvalidKeyError(
            f"counter key {key!r} must not end in {SHARD_SEPARATOR!r} and a number:"
            f" that is where a shard of counter {owner!r} is stored"
        )
    return key


def check_event_id(key: str, event_id: object) -> str:
    """``event_id`` if it can name a marker, else :class:`InvalidKeyError` naming key and id."""
    if not isinstance(event_id, str):
        raise InvalidKeyError(
            f"event id {event_id!r} for counter key {key!r} must be a str, not {type(event_id).__name__}"
        )
    if not event_id:
        raise InvalidKeyError(f"event id for counter key {key!r} must not be empty")
    size = _utf8_bytes(event_id)
    if size < 0:
        raise InvalidKeyError(f"event id {event_id[:60]!r} for counter key {key!r} {_NOT_UNICODE}")
    if size > MAX_EVENT_ID_BYTES:
        raise InvalidKeyError(
            f"event id {event_id[:60]!r}... for counter key {key!r} is longer than {MAX_EVENT_ID_BYTES} bytes"
        )
    return event_id


def check_amount(key: str, amount: object) -> int:
    """``amount`` if it is an int DynamoDB can add, else :class:`InvalidKeyError` naming the key."""
    if isinstance(amount, bool) or not isinstance(amount, int):
        raise InvalidKeyError(f"amount {amount!r} for counter key {key!r} must be an int")
    if abs(amount) >= MAX_AMOUNT:
        raise InvalidKeyError(f"amount {amount} for counter key {key!r} has more than 38 digits")
    return amount
