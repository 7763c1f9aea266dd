"""Settings from the environment and the AWS clients the handlers use, all made on first use.

Nothing here runs at import: environment variables are read when a handler runs (so tests and the
local stack can set them after import), and clients and counters are created on first use and
cached per endpoint and region (``AWS_ENDPOINT_URL`` points boto3 at a local endpoint). SQS, SNS
and Kinesis clients are wrapped with :func:`lambda_kit.propagate`, so what a handler sends carries
the trace id of the record it is handling.
"""

from __future__ import annotations

import os
import threading
from datetime import timedelta
from typing import Any

from lambda_kit import propagate
from lambda_kit.counters import Counter

SETTINGS = {
    "TABLE_NAME": "the DynamoDB table of counters, aggregates and milestones",
    "VIEWS_QUEUE_URL": "the SQS queue POST /views sends view events to",
    "MILESTONES_TOPIC_ARN": "the SNS topic milestones are published to",
    "CLICKSTREAM_DLQ_URL": "the SQS queue clickstream records go to after their last attempt",
}

_cache: dict[tuple[Any, ...], Any] = {}
_lock = threading.Lock()


def setting(name: str) -> str:
    """The environment variable ``name``; a missing one is a one-line error naming it."""
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"environment variable {name} is not set ({SETTINGS.get(name, 'required')})")
    return value


def _where() -> tuple[str | None, str | None]:
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    return os.environ.get("AWS_ENDPOINT_URL"), region


def _cached(key: tuple[Any, ...], make: Any) -> Any:
    found = _cache.get(key)
    if found is None:
        with _lock:
            found = _cache.get(key)
            if found is None:
                found = _cache[key] = make()
    return found


def client(service: str) -> Any:
    """A boto3 client for ``service`` (trace id propagation on), one per endpoint and region."""
    endpoint, region = _where()

    def make() -> Any:
        import boto3

        return propagate(boto3.client(service, region_name=region))

    return _cached(("client", service, endpoint, region), make)


def counter(marker_ttl: timedelta | None = None) -> Counter:
    """The :class:`Counter` on ``TABLE_NAME`` (one per table, endpoint, region and marker TTL)."""
    table = setting("TABLE_NAME")
    endpoint, region = _where()

    def make() -> Counter:
        return Counter(table) if marker_ttl is None else Counter(table, marker_ttl=marker_ttl)

    return _cached(("counter", table, marker_ttl, endpoint, region), make)
