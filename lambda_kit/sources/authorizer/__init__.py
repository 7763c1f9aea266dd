"""API Gateway Lambda authorizers: the ``authorizer`` source (``authorizer_handler``).

One authorization request per invocation, in one of five shapes (``request``: REST ``TOKEN`` and
``REQUEST``, WebSocket ``$connect``, HTTP API payload 1.0 and 2.0). The function decides
(``answer``: ``Allow``, ``Deny``, a policy or a simple response, checked); ``path`` runs the
request on the record path and turns every failure into a deny. The trace id is read from the
request's headers (lambda_kit's header, then a tracer's context); a ``TOKEN`` request has none,
and is traced by its request id.

No ``serverless.yml`` event delivers these: an ``http``, ``httpApi`` or ``websocket`` event names
the authorizer function (``authorizer:``), and API Gateway calls it in front of those routes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...record import Record
from .._gateway import header_trace, request_id
from ..base import Source, malformed
from .request import AuthorizerRequest

if TYPE_CHECKING:
    from ...context import LambdaContext


class AuthorizerSource(Source):
    name = "authorizer"
    label = "a Lambda authorizer event (API Gateway)"
    decorator = "authorizer_handler"
    arn_service = "execute-api"

    @classmethod
    def recognizes(cls, event: object) -> bool:
        if type(event) is not dict:
            return False
        kind = event.get("type")
        if kind == "TOKEN":
            return isinstance(event.get("methodArn"), str)
        arn = "routeArn" if event.get("version") == "2.0" else "methodArn"
        return kind == "REQUEST" and isinstance(event.get(arn), str)

    def record(
        self, event: dict[str, Any], context: LambdaContext | None = None, trace_header: str = "X-Trace-Id"
    ) -> Record:
        """The request as the one record of its invocation (its ``payload`` the
        ``AuthorizerRequest``); an event that cannot be read is a record that fails (a deny)."""
        found_id = request_id(event, context)
        try:
            request = AuthorizerRequest(event)
        except Exception as exc:  # an event of a shape nobody foresaw: denied, with the reason
            return malformed("authorizer", event, f"authorizer event cannot be read ({type(exc).__name__})")
        trace_id, rejected, found = header_trace(
            "authorizer", request.headers, trace_header, found_id or None
        )
        request.trace_id = trace_id
        return Record(
            source="authorizer",
            id=found_id,
            trace_id=trace_id,
            payload=request,
            raw=event,
            rejected_trace_id=rejected,
            context=found,
        )


SOURCE = AuthorizerSource
