"""Exactly-once counters on DynamoDB: transactional increments, batch coalescing, shards, time buckets.

``import lambda_kit.counters`` does not import boto3: the client is created on first use.
"""

from lambda_kit.counters.buckets import (
    GRANULARITIES,
    Granularity,
    Timestamp,
    bucket,
    bucket_keys,
    day_key,
    hour_key,
    month_key,
    to_utc,
)
from lambda_kit.counters.counter import Counter, EventRef, Increment, IncrementRequest, IncrementResult
from lambda_kit.counters.errors import CounterError, InvalidKeyError
from lambda_kit.counters.layout import (
    COUNT_ATTRIBUTE,
    COUNTER_SK,
    MARKER_PREFIX,
    MAX_KEY_BYTES,
    check_key,
    key_of,
    marker_sk,
    shard_pk,
)
from lambda_kit.counters.retry import Backoff

__all__ = [
    "COUNTER_SK",
    "COUNT_ATTRIBUTE",
    "GRANULARITIES",
    "MARKER_PREFIX",
    "MAX_KEY_BYTES",
    "Backoff",
    "Counter",
    "CounterError",
    "EventRef",
    "Granularity",
    "Increment",
    "IncrementRequest",
    "IncrementResult",
    "InvalidKeyError",
    "Timestamp",
    "bucket",
    "bucket_keys",
    "check_key",
    "key_of",
    "day_key",
    "hour_key",
    "marker_sk",
    "shard_pk",
    "month_key",
    "to_utc",
]
