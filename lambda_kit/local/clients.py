"""boto3 clients for the stack's own calls (pollers, resources), bound to one endpoint."""

from __future__ import annotations

import threading
from typing import Any

DYNAMODB_SERVICES = frozenset({"dynamodb", "dynamodbstreams"})


class Clients:
    """One client per service, created on first use, for ``endpoint_url`` and ``region``;
    DynamoDB and DynamoDB Streams on ``dynamodb_url`` when given (DynamoDB Local).

    The stack's clients are separate from the handlers' (which read ``AWS_ENDPOINT_URL`` and
    ``AWS_ENDPOINT_URL_DYNAMODB``), so a fault injected into the handlers' clients does not stall
    the event sources.
    """

    def __init__(self, endpoint_url: str, region: str, dynamodb_url: str | None = None) -> None:
        self.endpoint_url = endpoint_url
        self.dynamodb_url = dynamodb_url or endpoint_url
        self.region = region
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._session: Any = None

    def __call__(self, service: str) -> Any:
        found = self._clients.get(service)
        if found is None:
            with self._lock:
                found = self._clients.get(service)
                if found is None:
                    import boto3
                    from botocore.config import Config

                    if self._session is None:
                        self._session = boto3.session.Session(
                            aws_access_key_id="testing", aws_secret_access_key="testing", region_name=self.region
                        ) if _dummy_credentials() else boto3.session.Session(region_name=self.region)
                    found = self._clients[service] = self._session.client(
                        service,
                        endpoint_url=self.dynamodb_url if service in DYNAMODB_SERVICES else self.endpoint_url,
                        # The stack builds its requests itself: botocore's validation of them is CPU spent
                        # on every poll, and the emulators validate them anyway.
                        config=Config(retries={"max_attempts": 3, "mode": "standard"}, max_pool_connections=32, parameter_validation=False),
                    )
        return found


def _dummy_credentials() -> bool:
    """Use dummy credentials unless the user configured some (e.g. for LocalStack)."""
    import os

    return not (os.environ.get("AWS_ACCESS_KEY_ID") or os.environ.get("AWS_PROFILE"))
