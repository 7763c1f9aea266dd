"""What a ``websocket_handler`` function receives: ``WebSocketMessage``, one event of a WebSocket
API route (``$connect``, ``$disconnect``, ``$default`` or a custom route key).

The fields are the event's (``requestContext`` as Powertools' ``APIGatewayWebSocketEvent`` reads
it); ``headers`` and ``query`` are sent with ``$connect`` only. ``body`` is the frame as text,
``body_bytes`` its bytes (a binary frame arrives base64-encoded), ``json`` it decoded (400 when it
is not JSON). ``reply(data)`` sends to this connection, ``send(connection_id, data)`` to another,
``connections`` is the API stage's ``@connections`` (``post``, ``get``, ``delete``).
"""

from __future__ import annotations

import binascii
from typing import Any

from ... import codec
from ..._data import mapping
from ...errors import HTTPError
from .._gateway import Headers, multi_valued
from .connections import Connections, endpoint_of, region_of

_UNSET: Any = object()


def _texts(value: Any) -> dict[str, str]:
    return {str(key): str(item) for key, item in mapping(value).items() if item is not None}


class WebSocketMessage:
    """One event of a WebSocket route (the module's docstring lists what it holds)."""

    __slots__ = (
        "event",
        "request_context",
        "route_key",
        "event_type",
        "connection_id",
        "message_id",
        "request_id",
        "domain_name",
        "stage",
        "api_id",
        "connected_at",
        "request_time_epoch",
        "disconnect_status_code",
        "disconnect_reason",
        "identity",
        "authorizer",
        "headers",
        "query",
        "is_base64_encoded",
        "trace_id",
        "model",
        "_body",
        "_json",
    )

    def __init__(self, event: dict[str, Any]) -> None:
        self.event = event
        context = self.request_context = dict(mapping(event.get("requestContext")))
        self.route_key = str(context.get("routeKey"))
        self.event_type = str(context.get("eventType") or "")
        self.connection_id = str(context.get("connectionId"))
        self.message_id = context.get("messageId")
        self.request_id = context.get("requestId")
        self.domain_name = str(context.get("domainName") or "")
        self.stage = str(context.get("stage") or "")
        self.api_id = str(context.get("apiId") or "")
        self.connected_at = context.get("connectedAt")
        self.request_time_epoch = context.get("requestTimeEpoch")
        self.disconnect_status_code = context.get("disconnectStatusCode")
        self.disconnect_reason = context.get("disconnectReason")
        self.identity: dict[str, Any] = dict(mapping(context.get("identity")))
        self.authorizer: dict[str, Any] = dict(mapping(context.get("authorizer")))
        self.headers = Headers.of_lowered(multi_valued(event))
        self.query = _texts(event.get("queryStringParameters"))
        self.is_base64_encoded = event.get("isBase64Encoded") is True
        body = event.get("body")
        self._body = "" if body is None else str(body)
        self._json = _UNSET
        self.trace_id = ""
        self.model: Any = None

    @property
    def source_ip(self) -> str | None:
        found = self.identity.get("sourceIp")
        return found if isinstance(found, str) else None

    @property
    def body_bytes(self) -> bytes:
        """The frame's exact bytes; a binary frame that is not base64 answers 400."""
        if not self.is_base64_encoded:
            return self._body.encode("utf-8", "surrogatepass")
        try:
            return binascii.a2b_base64(self._body, strict_mode=True)
        except (binascii.Error, ValueError):
            raise HTTPError(400, "message body is not valid base64") from None

    @property
    def body(self) -> str:
        """The frame as text; a binary frame that is not UTF-8 answers 400 (read ``body_bytes``)."""
        if not self.is_base64_encoded:
            return self._body
        try:
            return self.body_bytes.decode("utf-8")
        except UnicodeDecodeError:
            raise HTTPError(400, "message body is not UTF-8 text") from None

    @property
    def json(self) -> Any:
        """The body decoded (None for an empty one); 400 when it is not JSON."""
        if self._json is _UNSET:
            text = self.body
            try:
                self._json = codec.loads(text) if text.strip() else None
            except Exception:
                raise HTTPError(400, "message body is not JSON") from None
        return self._json

    @property
    def connections(self) -> Connections:
        """This API stage's ``@connections``."""
        return Connections(
            endpoint_of(self.domain_name, self.api_id, self.stage), region_of(self.domain_name)
        )

    def reply(self, data: Any) -> bool:
        """Send ``data`` to this message's client (False: its connection is gone)."""
        return self.connections.post(self.connection_id, data)

    def send(self, connection_id: str, data: Any) -> bool:
        """Send ``data`` to another client of this API (False: its connection is gone)."""
        return self.connections.post(connection_id, data)

    def __repr__(self) -> str:
        return f"WebSocketMessage(route_key={self.route_key!r}, connection_id={self.connection_id!r})"
