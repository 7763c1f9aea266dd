"""HTTP requests, every shape Lambda receives them in: the ``api`` source.

One request per invocation: ``path`` runs it on the record path (``RequestPath``), with the HTTP
steps of this package. Its modules:

- ``shapes``: one class per front door (REST API payload 1.0, HTTP API payload 2.0, Function URL,
  ALB), after AWS's documented payloads and Mangum's adapters: each recognizes its events, reads
  the request out of them and writes its response;
- ``request``: ``Request``, what the function receives, whatever the shape;
- ``response``: what the function returned (a value, a response dict, a ``(body, status[,
  headers])`` tuple) as its front door's response, and error responses;
- ``fields``: the checks before the function runs, the answer to a failure, and the fields of the
  request's log lines (bodies masked exactly when they parse as JSON);
- ``router``: ``Router``, one function behind many routes;
- ``path``: ``api_handler``'s invocation (``run_request``), the request on the record path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...record import Record
from .._gateway import request_id
from ..base import Source
from .request import Request, trace_of

if TYPE_CHECKING:
    from ...context import LambdaContext


class ApiSource(Source):
    name = "api"
    label = "an HTTP request event (API Gateway, Function URL or ALB)"
    decorator = "api_handler"
    serverless_events = ("httpApi", "http", "alb", "url")
    """``url`` is no event but the function property ``url:`` (a Function URL); ``lambda-kit
    check`` reads it as one."""
    arn_service = "execute-api"
    delivery = "gateway"

    @classmethod
    def recognizes(cls, event: object) -> bool:
        if type(event) is not dict:
            return False
        context = event.get("requestContext")
        if type(context) is not dict:
            return False
        if "methodArn" in event or "routeArn" in event or "connectionId" in context:
            return False  # a Lambda authorizer's or a WebSocket API's event: no HTTP response fits
        if isinstance(event.get("httpMethod"), str):  # payload format 1.0, ALB
            return True
        http = context.get("http")  # payload format 2.0, Function URLs
        return type(http) is dict and isinstance(http.get("method"), str)

    def record(
        self, event: dict[str, Any], context: LambdaContext | None = None, trace_header: str = "X-Trace-Id"
    ) -> Record:
        """The request as the one record of its invocation (its ``payload`` the ``Request``)."""
        request = Request(event)
        trace_id, rejected, found = trace_of(request, trace_header)
        request.trace_id = trace_id
        return Record(
            source="api",
            id=request_id(event, context),
            trace_id=trace_id,
            payload=request,
            raw=event,
            rejected_trace_id=rejected,
            context=found,
        )


SOURCE = ApiSource
