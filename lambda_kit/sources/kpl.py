"""KPL-aggregated Kinesis records: split into the user records the producer put.

The Kinesis Producer Library packs many user records into one Kinesis record: the magic bytes
``F3 89 9A C2``, a protobuf ``AggregatedRecord`` (partition key table, explicit hash key table,
records), then the MD5 digest of the protobuf bytes. The protobuf schema is aws-kinesis-agg's
(``pip install 'lambda-event-kit[kpl]'``), parsed by protobuf; it is imported on the first aggregated
record only (an optional extra; protobuf costs tens of milliseconds to import).

aws-kinesis-agg's own ``deaggregator`` is not used: it hands a corrupt aggregate (bad digest,
unparsable protobuf) through as an ordinary record, and on a bad key index prints to standard error
and drops the rest of the aggregate; it also leaves its folder at the front of ``sys.path``. Here an
aggregate that cannot be read raises ``AggregateError`` with the reason, and its record fails.
"""

from __future__ import annotations

import hashlib
import os
import sys
from typing import Any

from ..extras import MissingExtra, import_optional

MAGIC = b"\xf3\x89\x9a\xc2"
DIGEST_SIZE = 16  # MD5

_schema: Any = None


class AggregateError(ValueError):
    """A record that carries the KPL magic bytes but cannot be split into user records."""


class UserRecord:
    """One user record of an aggregate."""

    __slots__ = ("partition_key", "explicit_hash_key", "data")

    def __init__(self, partition_key: str, explicit_hash_key: str | None, data: bytes) -> None:
        self.partition_key = partition_key
        self.explicit_hash_key = explicit_hash_key
        self.data = data


def split(data: bytes) -> list[UserRecord] | None:
    """The user records of aggregate ``data``, in order (their subsequence numbers are their
    indexes); None when ``data`` is no aggregate. Raises ``AggregateError`` when it carries the
    magic bytes but cannot be read."""
    if data[: len(MAGIC)] != MAGIC:
        return None
    aggregate = _parsed(data)
    keys = list(aggregate.partition_key_table)
    hash_keys = list(aggregate.explicit_hash_key_table)
    users = [_user(index, user, keys, hash_keys) for index, user in enumerate(aggregate.records)]
    if not users:
        raise AggregateError("KPL aggregate holds no user records")
    return users


def _parsed(data: bytes) -> Any:
    """The ``AggregatedRecord`` in ``data``, its digest checked."""
    body, digest = data[len(MAGIC) : -DIGEST_SIZE], data[-DIGEST_SIZE:]
    if len(data) <= len(MAGIC) + DIGEST_SIZE or hashlib.md5(body).digest() != digest:
        raise AggregateError("KPL aggregate's MD5 digest does not match its contents (corrupt or truncated)")
    aggregate = schema()()
    try:
        aggregate.ParseFromString(body)
    except Exception as exc:  # protobuf's DecodeError, or a message missing required fields
        raise AggregateError(f"KPL aggregate's protobuf cannot be parsed ({exc})") from None
    return aggregate


def _user(index: int, user: object, keys: list[str], hash_keys: list[str]) -> UserRecord:
    """User record ``index``, its partition key (and explicit hash key) looked up in the tables."""
    if user.partition_key_index >= len(keys):
        raise AggregateError(
            f"KPL user record {index} names partition key {user.partition_key_index} of {len(keys)}"
        )
    if not user.HasField("explicit_hash_key_index"):
        return UserRecord(keys[user.partition_key_index], None, user.data)
    if user.explicit_hash_key_index >= len(hash_keys):
        raise AggregateError(
            f"KPL user record {index} names explicit hash key {user.explicit_hash_key_index} "
            f"of {len(hash_keys)}"
        )
    return UserRecord(keys[user.partition_key_index], hash_keys[user.explicit_hash_key_index], user.data)


def schema() -> Any:
    """aws-kinesis-agg's ``AggregatedRecord`` message class, imported on first use."""
    global _schema
    if _schema is None:
        _schema = _load_schema()
    return _schema


def _load_schema() -> Any:
    try:
        aws_kinesis_agg = import_optional("aws_kinesis_agg", "a KPL-aggregated record")
    except MissingExtra as exc:
        raise AggregateError(str(exc)) from None
    # Its generated messages_pb2 imports config_pb2 as a top-level module: let it, for this import
    # only, and leave sys.path and any config_pb2 of the application as they were.
    saved_path = list(sys.path)
    theirs = sys.modules.pop("config_pb2", None)
    sys.path.insert(0, os.path.dirname(aws_kinesis_agg.__file__))
    try:
        from aws_kinesis_agg import messages_pb2  # an optional extra (aws-kinesis-agg), its protobuf costly
    except Exception as exc:
        raise AggregateError(
            f"aws-kinesis-agg's protobuf schema cannot be loaded ({type(exc).__name__}: {exc})"
        ) from None
    finally:
        sys.path[:] = saved_path
        sys.modules.pop("config_pb2", None)
        if theirs is not None:
            sys.modules["config_pb2"] = theirs
    return messages_pb2.AggregatedRecord
