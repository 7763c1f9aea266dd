"""Answering WebSocket clients: ``Connections``, the API's ``@connections`` (the
``ApiGatewayManagementApi`` service), through a boto3 client that carries the trace id.

A client is made on first use, one per endpoint (boto3 is imported then: it is an optional extra
and ~150 ms to import). Every call it makes carries the current record's trace context as HTTP
headers (``trace_headers``: lambda_kit's ``X-Trace-Id``, ``traceparent`` ...), so the next hop
— the local stack's gateway, a proxy — logs it under the same trace id.

The endpoint is the API's own: ``https://{domainName}/{stage}`` for an ``execute-api`` domain,
``https://{apiId}.execute-api.{region}.amazonaws.com/{stage}`` behind a custom domain (whose
base path need not be the stage). ``AWS_ENDPOINT_URL_APIGATEWAYMANAGEMENTAPI``, when set, wins
(boto3 reads it): the local stack sets it to its gateway.
"""

from __future__ import annotations

import os
from threading import Lock
from typing import Any

from ... import codec
from ...trace.propagation import trace_headers

ENDPOINT_VARIABLE = "AWS_ENDPOINT_URL_APIGATEWAYMANAGEMENTAPI"
GONE = 410

_clients: dict[tuple[str | None, str | None, str], Any] = {}
_lock = Lock()


def region_of(domain: str) -> str:
    """The region of an ``execute-api`` domain, else the function's."""
    parts = domain.split(".")
    if len(parts) == 5 and parts[1] == "execute-api" and domain.endswith(".amazonaws.com"):
        return parts[2]
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


def endpoint_of(domain: str, api_id: str, stage: str) -> str:
    """The ``@connections`` endpoint of a WebSocket API stage (the module's docstring says which)."""
    if domain.endswith(".amazonaws.com"):
        return f"https://{domain}/{stage}"
    return f"https://{api_id}.execute-api.{region_of(domain)}.amazonaws.com/{stage}"


def payload_bytes(data: Any) -> bytes:
    """What goes to a client: bytes as they are, text as UTF-8, anything else as JSON."""
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    return (data if isinstance(data, str) else codec.dumps(data)).encode("utf-8")


def is_gone(error: BaseException) -> bool:
    """Whether a boto3 error says the connection is gone (``GoneException``, 410)."""
    response = getattr(error, "response", None)
    if type(response) is not dict:
        return False
    error_fields = response.get("Error") if type(response.get("Error")) is dict else {}
    status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
    return error_fields.get("Code") == "GoneException" or status == GONE


def _stamp(request: Any, **_: Any) -> None:
    """botocore's ``before-sign`` hook: the trace headers on the outgoing request."""
    for name, value in trace_headers().items():
        request.headers[name] = value


def management_client(endpoint_url: str, region: str) -> Any:
    """The boto3 ``apigatewaymanagementapi`` client of ``endpoint_url`` (the variable's, when set)."""
    override = os.environ.get(ENDPOINT_VARIABLE)
    key = (override, None if override else endpoint_url, region)
    with _lock:
        if key not in _clients:
            import boto3  # an optional extra, and ~150 ms to import: only for a post to a client

            client = boto3.client(
                "apigatewaymanagementapi", endpoint_url=None if override else endpoint_url, region_name=region
            )
            client.meta.events.register("before-sign.apigatewaymanagementapi.*", _stamp)
            _clients[key] = client
        return _clients[key]


class Connections:
    """The connections of one WebSocket API stage: post to one, read it, close it."""

    def __init__(self, endpoint_url: str, region: str) -> None:
        self.endpoint_url = endpoint_url
        self.region = region

    @property
    def client(self) -> Any:
        return management_client(self.endpoint_url, self.region)

    def post(self, connection_id: str, data: Any) -> bool:
        """Send ``data`` to a client (bytes as they are, text as UTF-8, anything else as JSON); False
        when its connection is gone (410: drop it from your records), any other error raised."""
        try:
            self.client.post_to_connection(ConnectionId=connection_id, Data=payload_bytes(data))
        except Exception as exc:
            if is_gone(exc):
                return False
            raise
        return True

    def get(self, connection_id: str) -> dict[str, Any]:
        """The connection's ``ConnectedAt``, ``Identity``, ``LastActiveAt``."""
        found: dict[str, Any] = self.client.get_connection(ConnectionId=connection_id)
        return found

    def delete(self, connection_id: str) -> bool:
        """Close a client's connection; False when it is gone already."""
        try:
            self.client.delete_connection(ConnectionId=connection_id)
        except Exception as exc:
            if is_gone(exc):
                return False
            raise
        return True

    def __repr__(self) -> str:
        return f"Connections({self.endpoint_url!r})"
