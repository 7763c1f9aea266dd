"""boto3 clients for the stack's own calls (pollers, resources), bound to one endpoint."""

from __future__ import annotations

import functools
import os
import threading
from typing import Any

import boto3
from botocore.config import Config
from botocore.useragent import UserAgentString

try:  # botocore from early 2025 on adds the feature ids of each call to its User-Agent
    from botocore.context import get_context
except ImportError:  # pragma: no cover - an older botocore builds one header per client

    def get_context() -> Any:
        return None


DYNAMODB_SERVICES = frozenset({"dynamodb", "dynamodbstreams"})
CONFIG = Config(
    retries={"max_attempts": 3, "mode": "standard"}, max_pool_connections=32, parameter_validation=False
)
"""The stack builds its requests itself: botocore's validation of them is CPU spent on every poll,
and the emulators validate them anyway."""


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
                found = self._clients.get(service) or self._make(service)
        return found

    def _make(self, service: str) -> Any:
        if self._session is None:  # made at first use: the stack sets the environment's credentials first
            self._session = boto3.session.Session(region_name=self.region, **_dummy_credentials())
        endpoint_url = self.dynamodb_url if service in DYNAMODB_SERVICES else self.endpoint_url
        client = self._clients[service] = self._session.client(
            service, endpoint_url=endpoint_url, config=CONFIG
        )
        return client


def _dummy_credentials() -> dict[str, str]:
    """Dummy credentials unless the user configured some (e.g. for LocalStack)."""
    if os.environ.get("AWS_ACCESS_KEY_ID") or os.environ.get("AWS_PROFILE"):
        return {}
    return {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


def remember_user_agents() -> None:
    """Build each botocore client's ``User-Agent`` once per set of feature ids, not twice a call.

    botocore (1.31 and later) assembles the header from a dozen sanitized components when it
    serializes a request and again just before sending it: about 0.45 ms of a 2.6 ms
    ``SendMessage`` on these machines, in every handler's and poller's call to the emulators. The
    string depends only on the client and on the feature ids of the call (botocore's context),
    so it is remembered per client and feature set: the same headers, built once. Installed by
    the local stack for its process (moto's patches are the same kind); a botocore whose
    ``UserAgentString`` keeps no ``__dict__`` is left as it is.
    """
    build = UserAgentString.to_string
    if getattr(build, "remembered", False) or "__slots__" in vars(
        UserAgentString
    ):  # no __dict__ to remember in
        return

    @functools.wraps(build)
    def to_string(self: Any) -> str:
        state = self.__dict__
        memo = state.get("_lambda_kit_user_agents")
        if memo is None or memo[0] is not self:  # copies (with_client_config) share __dict__'s values
            memo = state["_lambda_kit_user_agents"] = (self, {})
        context = get_context()
        key = frozenset(context.features) if context is not None else frozenset()
        found = memo[1].get(key)
        if found is None:
            found = memo[1][key] = build(self)
        return found

    to_string.remembered = True  # type: ignore[attr-defined]
    UserAgentString.to_string = to_string  # type: ignore[method-assign]
