"""HTTP requests, every shape Lambda receives them in: the ``api`` source.

One request per invocation: ``lambda_kit.loop.request`` runs it on the record path, asking the
adapter (``ApiSource``) for each HTTP step. The package's modules:

- ``shapes``: one class per front door (REST API payload 1.0, HTTP API payload 2.0, Function URL,
  ALB), after AWS's documented payloads and Mangum's adapters: each recognizes its events, reads
  the request out of them and writes its response;
- ``request``: ``Request``, what the function receives, whatever the shape;
- ``response``: what the function returned (a value, a response dict, a ``(body, status[,
  headers])`` tuple) as its front door's response, and error responses;
- ``fields``: the checks before the function runs, the answer to a failure, and the fields of the
  request's log lines (bodies masked exactly when they parse as JSON);
- ``router``: ``Router``, one function behind many routes.
"""

from __future__ import annotations

from typing import Any

from ...record import Record
from ..base import Source
from .fields import (
    check_request,
    failure_fields,
    failure_level,
    failure_response,
    request_fields,
    result_fields,
    result_for_log,
)
from .request import Request, request_id, trace_of
from .response import shape_response


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
    def recognizes(cls, event: Any) -> bool:
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

    # --- the HTTP steps of the record path (lambda_kit.loop.request) ------------------------------

    def record(self, event: Any, context: Any = None, trace_header: str = "X-Trace-Id") -> Record:
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

    received_fields = staticmethod(request_fields)
    check = staticmethod(check_request)

    def respond(
        self, request: Request, result: Any, trace_header: str, started: float
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """(the response to what the function returned, the ``request processed`` line's fields:
        its ``result`` is the body, none for ``HEAD``)."""
        response = shape_response(request, result, request.trace_id, trace_header)
        fields = result_fields(response, started)
        fields["result"] = None if request.method == "HEAD" else result_for_log(result)
        return response, fields

    def fail(
        self, request: Request, error: BaseException, trace_header: str, started: float
    ) -> tuple[dict[str, Any], str, dict[str, Any]]:
        """(the answer to a failure, its line's level, the ``request failed`` line's fields). An
        ``HTTPError`` whose answer cannot go out (a header HTTP forbids, a message over Lambda's
        limit) is a 500 whose line says why."""
        try:
            response = failure_response(request, error, trace_header)
        except ValueError as refused:
            response, error = failure_response(request, refused, trace_header), refused
        return response, failure_level(response), failure_fields(response, started, error)


SOURCE = ApiSource
