"""API Gateway WebSocket APIs: the ``websocket`` source (``websocket_handler``).

One route event per invocation: ``$connect`` (the handshake: a status of 400 or more refuses the
connection), ``$disconnect`` (nothing goes back), ``$default`` and custom route keys (what the
function returns goes to the client when the route has a route response). ``message`` is what the
function receives, ``connections`` how it answers clients (``post_to_connection``), ``router``
routes by route key, ``path`` runs the event on the record path.

The trace id: lambda_kit's header (``X-Trace-Id`` unless the decorator names another) or a
tracer's context in the ``$connect`` headers; a message's JSON body's ``trace_id``; else the
connection id (every event of a connection shares it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...record import Record
from .._gateway import header_trace, request_id
from ..base import Source, malformed
from .message import WebSocketMessage

if TYPE_CHECKING:
    from ...context import LambdaContext


class WebSocketSource(Source):
    name = "websocket"
    label = "an API Gateway WebSocket event"
    decorator = "websocket_handler"
    serverless_events = ("websocket",)
    arn_service = "execute-api"
    delivery = "websocket"

    @classmethod
    def recognizes(cls, event: object) -> bool:
        if type(event) is not dict or "methodArn" in event:  # a $connect authorizer's event
            return False
        context = event.get("requestContext")
        return (
            type(context) is dict
            and isinstance(context.get("connectionId"), str)
            and isinstance(context.get("routeKey"), str)
        )

    def record(
        self, event: dict[str, Any], context: LambdaContext | None = None, trace_header: str = "X-Trace-Id"
    ) -> Record:
        """The route event as the one record of its invocation (its ``payload`` the message); an
        event that cannot be read is a record that fails (a 500)."""
        found_id = request_id(event, context)
        try:
            message = WebSocketMessage(event)
        except Exception as exc:  # an event of a shape nobody foresaw: failed, with the reason
            return malformed("websocket", event, f"WebSocket event cannot be read ({type(exc).__name__})")
        trace_id, rejected, found = header_trace(
            "websocket", message.headers, trace_header, message.connection_id, body_trace_id(message)
        )
        message.trace_id = trace_id
        return Record(
            source="websocket",
            id=found_id,
            trace_id=trace_id,
            payload=message,
            raw=event,
            rejected_trace_id=rejected,
            context=found,
        )


def body_trace_id(message: WebSocketMessage) -> Any:
    """The ``trace_id`` of a message whose body is a JSON object (a client's own id), else None."""
    if message.is_base64_encoded or not str(message.event.get("body") or "").lstrip().startswith("{"):
        return None
    try:
        doc = message.json
    except Exception:  # not JSON after all: the function reads it as it is
        return None
    return doc.get("trace_id") if type(doc) is dict else None


SOURCE = WebSocketSource
