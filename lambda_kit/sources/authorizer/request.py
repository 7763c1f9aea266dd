"""What an ``authorizer_handler`` function receives: ``AuthorizerRequest``, whatever the shape.

API Gateway sends a Lambda authorizer one of five shapes (``shape``):

- ``"rest-token"``: a REST API ``TOKEN`` authorizer: ``authorizationToken`` and ``methodArn`` only;
- ``"rest-request"``: a REST API ``REQUEST`` authorizer: the request's headers, query string, path
  and stage variables and ``requestContext`` (payload 1.0, without ``version``);
- ``"websocket"``: a WebSocket API's ``$connect`` ``REQUEST`` authorizer (``requestContext``
  carries the ``connectionId``; ``methodArn`` names the route, no HTTP method);
- ``"http-1.0"`` and ``"http-2.0"``: an HTTP API ``REQUEST`` authorizer, payload format 1.0
  (``version: "1.0"``, ``methodArn``) or 2.0 (``routeArn``, ``identitySource`` a list,
  ``rawPath``, ``cookies``).

``arn`` is the method or route ARN; ``arn_for(method, resource)`` another route of the same API
and stage (``arn_for("*", "*")``: all of them), for a policy that stays right when API Gateway
caches it for other routes.
"""

from __future__ import annotations

from typing import Any

from ..._data import dig, mapping
from .._gateway import Headers, lowered, multi_valued

SHAPES = ("rest-token", "rest-request", "websocket", "http-1.0", "http-2.0")


def shape_of(event: dict[str, Any]) -> str:
    """The shape of an event ``AuthorizerSource`` recognizes."""
    if event.get("type") == "TOKEN":
        return "rest-token"
    if event.get("version") == "2.0":
        return "http-2.0"
    if event.get("version") == "1.0":
        return "http-1.0"
    return "websocket" if "connectionId" in mapping(event.get("requestContext")) else "rest-request"


def _texts(value: Any) -> dict[str, str]:
    """A string map of the event (query string, path and stage variables) as text; no others."""
    return {str(key): str(item) for key, item in mapping(value).items() if item is not None}


class AuthorizerRequest:
    """One authorization request (``shape`` says which of the five; the module's docstring lists
    them). ``token`` is the ``authorizationToken`` (a TOKEN authorizer's; HTTP API 1.0 events
    carry the identity sources there too), ``identity_source`` the event's; ``headers`` look names
    up in any case. ``event`` is the event as API Gateway sent it, ``model`` it validated into the
    decorator's ``model=``."""

    __slots__ = (
        "event",
        "shape",
        "type",
        "version",
        "arn",
        "token",
        "identity_source",
        "headers",
        "query",
        "path_params",
        "stage_variables",
        "request_context",
        "method",
        "path",
        "resource",
        "route_key",
        "cookies",
        "partition",
        "region",
        "account_id",
        "api_id",
        "stage",
        "trace_id",
        "model",
    )

    def __init__(self, event: dict[str, Any]) -> None:
        self.event = event
        self.shape = shape = shape_of(event)
        self.type = str(event.get("type"))
        self.version = "2.0" if shape == "http-2.0" else "1.0"
        self.arn = str(event.get("routeArn" if shape == "http-2.0" else "methodArn"))
        token = event.get("authorizationToken")
        self.token: str | None = token if isinstance(token, str) else None
        self.identity_source = event.get("identitySource")
        self.headers = Headers.of_lowered(
            lowered(event.get("headers")) if shape == "http-2.0" else multi_valued(event)
        )
        self.query = _texts(event.get("queryStringParameters"))
        self.path_params = _texts(event.get("pathParameters"))
        self.stage_variables = _texts(event.get("stageVariables"))
        self.request_context: dict[str, Any] = dict(mapping(event.get("requestContext")))
        cookies = event.get("cookies")
        self.cookies = [str(cookie) for cookie in cookies] if type(cookies) is list else []
        self.partition, self.region, self.account_id, self.api_id, self.stage, *route = _arn_parts(self.arn)
        self.method, self.path, self.resource, self.route_key = self._route(event, route)
        self.trace_id = ""
        self.model: Any = None

    def _route(self, event: dict[str, Any], route: list[str]) -> tuple[str, str, str, str]:
        """(HTTP method, path, resource, route key) of the request, from the event where it says
        them, else from the ARN's route (a TOKEN event says nothing else)."""
        context = self.request_context
        if self.shape == "websocket":
            return "", "", "", str(context.get("routeKey") or "/".join(route))
        arn_method, arn_resource = (route[0], "/" + "/".join(route[1:])) if route else ("", "")
        if self.shape == "http-2.0":
            method = dig(context, "http", "method") or arn_method
            path = event.get("rawPath") or dig(context, "http", "path") or ""
            return str(method), str(path), "", str(event.get("routeKey") or "")
        resource = str(event.get("resource") or arn_resource)
        return str(event.get("httpMethod") or arn_method), str(event.get("path") or resource), resource, ""

    def arn_for(self, method: str = "*", resource: str = "*") -> str:
        """The ARN of another route of this API and stage: ``arn_for("GET", "orders/*")``,
        ``arn_for()`` for every route (a WebSocket route has no method: ``arn_for(resource=...)``)."""
        base = f"arn:{self.partition}:execute-api:{self.region}:{self.account_id}:{self.api_id}/{self.stage}"
        route = resource.lstrip("/") if self.shape == "websocket" else f"{method}/{resource.lstrip('/')}"
        return f"{base}/{route}"

    def __repr__(self) -> str:
        return f"AuthorizerRequest(shape={self.shape!r}, arn={self.arn!r})"


def _arn_parts(arn: str) -> list[str]:
    """[partition, region, account, api id, stage, *the route's parts] of a method or route ARN
    (``arn:aws:execute-api:us-east-1:123456789012:abcdef123/test/GET/request``); empty parts for
    an ARN of another form."""
    fields = arn.split(":", 5)
    if len(fields) < 6:
        return ["aws", "", "", "", ""]
    api_id, _, rest = fields[5].partition("/")
    stage, _, route = rest.partition("/")
    return [fields[1], fields[3], fields[4], api_id, stage, *(route.split("/", 1) if route else [])]
