"""HTTP request events: API Gateway REST and HTTP APIs, Function URLs, ALB targets.

One builder per shape, as AWS documents each one; :func:`api_event` reads the request once into a
:class:`_Request` and hands it to the builder of the shape asked for.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from ._events import ACCOUNT, REGION, example, payload_text

USER_AGENT = "lambda-kit-tests"
SOURCE_IP = "192.0.2.1"
API_ID = "api-id"
API_DOMAIN = f"{API_ID}.execute-api.{REGION}.amazonaws.com"
FUNCTION_URL_ID = "a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6"
FUNCTION_URL_DOMAIN = f"{FUNCTION_URL_ID}.lambda-url.{REGION}.on.aws"
ALB_HOST = "lambda-kit-alb-123456789.us-east-1.elb.amazonaws.com"
ALB_TARGET_GROUP = f"arn:aws:elasticloadbalancing:{REGION}:{ACCOUNT}:targetgroup/lambda-kit/6d0ecf831eec9f09"


@dataclass(frozen=True)
class _Request:
    """What ``api_event`` was asked for, in the terms every shape is built from."""

    method: str
    path: str
    body: str | None  # as the event carries it: base64 text when ``is_base64``
    is_base64: bool
    headers: dict[str, str]
    query: list[tuple[str, str]]  # (name, value) in order, a repeated name once per value
    path_params: dict[str, str] | None
    route: str | None
    cookies: list[str]  # "name=value"
    multi_value_headers: dict[str, list[str]] | None
    multi_value: bool
    request_id: str
    now: float

    @property
    def grouped(self) -> dict[str, list[str]]:
        """Each query parameter's values, in order."""
        grouped: dict[str, list[str]] = {}
        for name, value in self.query:
            grouped.setdefault(name, []).append(value)
        return grouped

    @property
    def clock(self) -> str:
        return time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(self.now))

    @property
    def epoch_ms(self) -> int:
        return int(self.now * 1000)


def _query_pairs(query: dict[str, Any] | None) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for name, value in (query or {}).items():
        values = value if isinstance(value, list | tuple) else [value]
        pairs.extend((str(name), str(v)) for v in values)
    return pairs


def _body(body: Any, base64_body: bool) -> tuple[str | None, bool]:
    """The body as the event carries it, and whether that is base64 (a ``bytes`` body always is)."""
    is_base64 = base64_body or isinstance(body, bytes)
    if body is None:
        return None, is_base64
    if not is_base64:
        return payload_text(body), False
    raw = body if isinstance(body, bytes) else payload_text(body).encode("utf-8", "surrogatepass")
    return base64.b64encode(raw).decode(), is_base64


def _lowered(headers: dict[str, str]) -> dict[str, str]:
    return {name.lower(): value for name, value in headers.items()}


def _one_value_each(headers: dict[str, str]) -> dict[str, list[str]]:
    return {name: [value] for name, value in headers.items()}


# --- payload format 2.0: HTTP APIs and Function URLs ---------------------------------------------


def _payload_v2(
    request: _Request,
    *,
    route_key: str,
    api_id: str,
    domain: str,
    authorization: dict[str, None],
    path_params: dict[str, str] | None,
) -> dict[str, Any]:
    headers = {"content-type": "application/json", "user-agent": USER_AGENT, **_lowered(request.headers)}
    built: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": request.path,
        "rawQueryString": urlencode(request.query, quote_via=quote),
    }
    if request.cookies:
        built["cookies"] = request.cookies
    built["headers"] = headers
    if request.query:  # repeated names are joined with commas, as API Gateway and Function URLs do
        built["queryStringParameters"] = {name: ",".join(values) for name, values in request.grouped.items()}
    built["requestContext"] = {
        "accountId": ACCOUNT,
        "apiId": api_id,
        **authorization,
        "domainName": domain,
        "domainPrefix": api_id,
        "http": {
            "method": request.method,
            "path": request.path,
            "protocol": "HTTP/1.1",
            "sourceIp": SOURCE_IP,
            "userAgent": headers.get("user-agent", ""),
        },
        "requestId": request.request_id,
        "routeKey": route_key,
        "stage": "$default",
        "time": request.clock,
        "timeEpoch": request.epoch_ms,
    }
    return {**built, **_v2_rest(request, path_params)}


def _v2_rest(request: _Request, path_params: dict[str, str] | None) -> dict[str, Any]:
    body = {} if request.body is None else {"body": request.body}
    return {
        **body,
        "pathParameters": path_params,
        "isBase64Encoded": request.is_base64,
        "stageVariables": None,
    }


def _http_api(request: _Request) -> dict[str, Any]:
    return _payload_v2(
        request,
        route_key=request.route or f"{request.method} {request.path}",
        api_id=API_ID,
        domain=API_DOMAIN,
        authorization={},
        path_params=request.path_params,
    )


def _function_url(request: _Request) -> dict[str, Any]:
    """A Function URL: no routes (no path parameters), and IAM or no authorization."""
    return _payload_v2(
        request,
        route_key="$default",
        api_id=FUNCTION_URL_ID,
        domain=FUNCTION_URL_DOMAIN,
        authorization={"authentication": None, "authorizer": None},
        path_params=None,
    )


# --- payload format 1.0: REST APIs and HTTP APIs ---------------------------------------------------


@dataclass(frozen=True)
class _Door:
    """What differs between the front doors that send payload format 1.0."""

    version: dict[str, str]  # the event's "version" field: an HTTP API's only
    stage: str
    stage_path: str  # what the request context's path starts with
    resource_id: str | None


_REST_API = _Door(version={}, stage="prod", stage_path="/prod", resource_id="abc123")
_HTTP_API_V1 = _Door(version={"version": "1.0"}, stage="$default", stage_path="", resource_id=None)


def _payload_v1(request: _Request, door: _Door) -> dict[str, Any]:
    return {
        **door.version,
        "resource": request.route or request.path,
        "path": request.path,
        "httpMethod": request.method,
        **_v1_headers(request),
        **_v1_query(request.grouped),
        "requestContext": _v1_context(request, door),
        "pathParameters": request.path_params,
        "stageVariables": None,
        "body": request.body,
        "isBase64Encoded": request.is_base64,
    }


def _v1_headers(request: _Request) -> dict[str, Any]:
    headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT, **request.headers}
    if request.cookies:
        headers.setdefault("Cookie", "; ".join(request.cookies))
    given = request.multi_value_headers
    return {
        "headers": headers if given is None else None,
        "multiValueHeaders": given or _one_value_each(headers),
    }


def _v1_query(grouped: dict[str, list[str]]) -> dict[str, Any]:
    last_values = {name: values[-1] for name, values in grouped.items()}
    return {"queryStringParameters": last_values or None, "multiValueQueryStringParameters": grouped or None}


def _v1_context(request: _Request, door: _Door) -> dict[str, Any]:
    return {
        "accountId": ACCOUNT,
        "apiId": API_ID,
        "domainName": API_DOMAIN,
        "domainPrefix": API_ID,
        "extendedRequestId": uuid.uuid4().hex[:16],
        "httpMethod": request.method,
        "identity": {"sourceIp": SOURCE_IP, "userAgent": USER_AGENT},
        "path": door.stage_path + request.path,
        "protocol": "HTTP/1.1",
        "requestId": request.request_id,
        "requestTime": request.clock,
        "requestTimeEpoch": request.epoch_ms,
        "resourceId": door.resource_id,
        "resourcePath": request.route or request.path,
        "stage": door.stage,
    }


def _rest_api(request: _Request) -> dict[str, Any]:
    return _payload_v1(request, _REST_API)


def _http_api_v1(request: _Request) -> dict[str, Any]:
    return _payload_v1(request, _HTTP_API_V1)


# --- Application Load Balancer --------------------------------------------------------------------


def _alb_headers(request: _Request) -> dict[str, str]:
    headers = {
        "host": ALB_HOST,
        "user-agent": USER_AGENT,
        "x-amzn-trace-id": f"Root=1-{int(request.now):08x}-{uuid.uuid4().hex[:24]}",
        "x-forwarded-for": SOURCE_IP,
        "x-forwarded-port": "443",
        "x-forwarded-proto": "https",
        **_lowered(request.headers),
    }
    if request.cookies:
        headers.setdefault("cookie", "; ".join(request.cookies))
    if request.body is not None:
        headers.setdefault("content-type", "application/json")
    return headers


def _alb(request: _Request) -> dict[str, Any]:
    return {
        "requestContext": {"elb": {"targetGroupArn": ALB_TARGET_GROUP}},
        "httpMethod": request.method,
        "path": request.path,
        **_alb_query_and_headers(request, _alb_headers(request)),
        "body": request.body or "",
        "isBase64Encoded": request.is_base64,
    }


def _alb_query_and_headers(request: _Request, headers: dict[str, str]) -> dict[str, Any]:
    """Multi-value fields when the target group has that option on (``multi_value``), else single."""
    # the ALB passes the query on as the client sent it: not decoded
    sent = {quote(name): [quote(v) for v in values] for name, values in request.grouped.items()}
    given = request.multi_value_headers
    if request.multi_value or given is not None:
        return {
            "multiValueQueryStringParameters": sent,
            "multiValueHeaders": _one_value_each(headers) if given is None else given,
        }
    return {"queryStringParameters": {name: values[-1] for name, values in sent.items()}, "headers": headers}


_SHAPES: dict[str, Callable[[_Request], dict[str, Any]]] = {
    "v2": _http_api,
    "v1": _rest_api,
    "http-v1": _http_api_v1,
    "url": _function_url,
    "alb": _alb,
}

API_VERSIONS = tuple(_SHAPES)
"""``api_event`` shapes: HTTP API payload 2.0, REST API, HTTP API payload 1.0, Function URL, ALB."""


def api_event(
    method: str = "GET",
    path: str = "/",
    *,
    body: Any = None,
    headers: dict[str, str] | None = None,
    query: dict[str, str | list[str]] | None = None,
    path_params: dict[str, str] | None = None,
    version: str = "v2",
    base64_body: bool = False,
    multi_value_headers: dict[str, list[str]] | None = None,
    route: str | None = None,
    cookies: dict[str, str] | None = None,
    multi_value: bool = False,
) -> dict[str, Any]:
    """An HTTP request event as Lambda receives it, in the fields AWS documents for ``version``:

    ``"v2"`` an HTTP API (payload format 2.0), ``"v1"`` a REST API, ``"http-v1"`` an HTTP API with
    payload format 1.0, ``"url"`` a Function URL, ``"alb"`` an Application Load Balancer target
    (``multi_value=True``: its target group has multi-value headers on). ``query`` values may be
    lists (a repeated parameter); a ``bytes`` body (or ``base64_body=True``) is sent base64-encoded.
    """
    build = _SHAPES.get(version)
    if build is None:
        raise ValueError(f"version must be one of {', '.join(API_VERSIONS)}, not {version!r}")
    text, is_base64 = _body(body, base64_body)
    request = _Request(
        method=method.upper(),
        path=path,
        body=text,
        is_base64=is_base64,
        headers=dict(headers or {}),
        query=_query_pairs(query),
        path_params=path_params,
        route=route,
        cookies=[f"{name}={value}" for name, value in (cookies or {}).items()],
        multi_value_headers=multi_value_headers,
        multi_value=multi_value,
        request_id=uuid.uuid4().hex[:20],
        now=time.time(),
    )
    return build(request)


@example("api")
def _api_example(
    payload: Any,
    *,
    trace_id: str | None,
    source_arn: str | None,
    method: str = "GET",
    path: str = "/",
    **options: Any,
) -> dict[str, Any]:
    headers = {**options.pop("headers", {}), **({"X-Trace-Id": trace_id} if trace_id else {})}
    return api_event(method, path, body=payload, headers=headers or None, **options)
