"""HTTP requests, every shape Lambda receives them in: the ``api`` source.

One request per invocation: ``lambda_kit.loop.request`` runs it with the functions this package
gives it. The package's modules:

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
from .request import Headers, Request, request_id, trace_of
from .response import error_response, shape_response

__all__ = [
    "SOURCE", "ApiSource", "Headers", "Request", "check_request", "error_response", "failure_fields",
    "failure_level", "failure_response", "request_fields", "request_id", "result_fields", "result_for_log",
    "shape_response", "trace_of",
]


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


SOURCE = ApiSource
