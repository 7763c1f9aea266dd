"""boto3 clients for lambda_kit's own calls (requeue, dead letters), created on first use.

boto3 costs ~150 ms to import, so nothing here runs at ``import lambda_kit``. Clients honour
``AWS_ENDPOINT_URL`` (boto3 reads it), so a local endpoint needs no code.
"""

from __future__ import annotations

import os
from threading import Lock
from typing import Any

_clients: dict[tuple[str, str | None, str | None], Any] = {}
_lock = Lock()


def client(service: str) -> Any:
    """A boto3 client for ``service``: one per endpoint and region, made on first use (threads of
    the local stack share it)."""
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    key = (service, os.environ.get("AWS_ENDPOINT_URL"), region)
    with _lock:
        if key not in _clients:
            import boto3  # an optional extra, and ~150 ms to import: only for a requeue or dead letter

            _clients[key] = boto3.client(service, region_name=region)
        return _clients[key]
