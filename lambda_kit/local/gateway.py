"""The HTTP API on 127.0.0.1: real HTTP requests in, API Gateway events to functions.

Routes come from the ``httpApi`` events in serverless.yml, sent as HTTP API (payload 2.0) events,
and from the ``http`` events, sent as REST API (payload 1.0) events (``method`` + ``path`` with
``{param}`` and greedy ``{proxy+}``, ``'*'``/``any`` for any method or the catch-all route). The
most specific route wins (literal segments over parameters over greedy). Unknown routes answer 404
``{"message":"Not Found"}``, a function error answers 500 ``{"message":"Internal Server
Error"}`` — API Gateway's own bodies. A function's response is used as API Gateway does: a dict
with ``statusCode`` gives status, headers, ``multiValueHeaders``, ``cookies`` and body
(base64-decoded when ``isBase64Encoded``); anything else is a 200 JSON body. Bodies of binary
content types go base64-encoded to REST routes too (a REST API does that only for its
``binaryMediaTypes``).

The HTTP server is waitress (``_wsgi.py``): it reads chunked bodies, answers 400 to a
repeated or malformed ``Content-Length`` (so what is left of a body is never read as another
request), never hands on a request whose body is shorter than its ``Content-Length``, closes
connections idle for ``IDLE_TIMEOUT`` seconds, and answers 413 to a body over API Gateway's
10 MB (``MAX_BODY``), then reads and drops the rest of it (up to ``_wsgi.DRAIN_BYTES``) before it
closes, so a client that sends its whole body first still reads the 413. The events get the
header lines as sent, with their case, order and repeats (a REST route's ``multiValueHeaders``),
which a WSGI environment would merge.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from .runtime import FunctionRuntime

TEXT_TYPES = (
    "text/",
    "application/json",
    "application/xml",
    "application/javascript",
    "application/x-www-form-urlencoded",
    "+json",
    "+xml",
)
MAX_BODY = 10 * 1024 * 1024
"""API Gateway's payload limit: a larger request body is answered 413."""
IDLE_TIMEOUT = 30
"""Seconds a connection may stay silent (between requests, or in the middle of one) before it is closed."""
THREADS = 32
"""Requests served at once (each runs its function in its worker thread); more wait their turn."""
METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"})
"""The methods API Gateway routes; others are answered 501."""
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "content-length",
    }
)
"""Response headers the server sets itself, whatever the function says."""

Response = tuple[int, list[tuple[str, str]], bytes]


class PortInUse(Exception):
    pass


# --- routes ---------------------------------------------------------------------------------------

_PARAMETER = re.compile(r"\{(\w+)(\+?)\}")


def _segment_pattern(segment: str) -> str:
    found = _PARAMETER.fullmatch(segment)
    if found is None:
        return "/" + re.escape(segment)
    name, greedy = found.groups()
    return f"/(?P<{name}>{'.+' if greedy else '[^/]+'})"


def _path_regex(path: str) -> re.Pattern[str]:
    """``/items/{id}`` -> a regex naming ``id``; a trailing slash is optional."""
    segments = path.strip("/").split("/") if path.strip("/") else []
    return re.compile(("".join(_segment_pattern(s) for s in segments) or "/") + "/?")


@dataclass
class Route:
    method: str  # "GET", ... or "ANY"
    path: str  # "/views/{id}", "/{proxy+}", "$default"
    runtime: FunctionRuntime
    payload: str = "2.0"  # "2.0": an HTTP API route; "1.0": a REST API route
    authorizer: Any = None  # a Lambda authorizer in front of it (``authorizers.Authorizer``), or None
    _regex: re.Pattern[str] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self._regex = None if self.path == "$default" else _path_regex(self.path)

    @property
    def key(self) -> str:
        return "$default" if self.path == "$default" else f"{self.method} {self.path}"

    def match(self, method: str, path: str) -> dict[str, str] | None:
        """The path parameters when the route takes this request, else None."""
        if self.method not in ("ANY", method):
            return None
        if self._regex is None:
            return {}
        found = self._regex.fullmatch(path)
        return None if found is None else {k: unquote(v) for k, v in found.groupdict().items()}

    @property
    def specificity(self) -> tuple[int, int, int, int]:
        if self.path == "$default":
            return (-1, 0, 0, 0)
        segments = [s for s in self.path.strip("/").split("/") if s]
        literal = sum(not s.startswith("{") for s in segments)
        greedy = any(s.endswith("+}") for s in segments)
        return (int(not greedy), literal, len(segments), int(self.method != "ANY"))


def routes_for(runtime: FunctionRuntime, specs: list[dict[str, Any]], payload: str = "2.0") -> list[Route]:
    """The routes of ``httpApi`` event specs (``payload="2.0"``) or ``http`` ones (``"1.0"``)."""
    return [_route(runtime, spec, payload) for spec in specs]


def _route(runtime: FunctionRuntime, spec: dict[str, Any], payload: str) -> Route:
    method = str(spec.get("method", "*")).upper()
    path = str(spec.get("path", "*"))
    if path == "*":
        return Route("ANY", "$default", runtime, payload)
    return Route(
        "ANY" if method == "*" else method, path if path.startswith("/") else "/" + path, runtime, payload
    )


# --- one request ----------------------------------------------------------------------------------


@dataclass
class Request:
    """One HTTP request as the event builders read it."""

    route: Route
    method: str
    path: str
    query: str
    headers: list[tuple[str, str]]  # as sent: names' case, order and repeats
    body: bytes
    params: dict[str, str]
    client_ip: str
    host: str  # the gateway's, for a request without a Host header
    stage: str


class HttpGateway:
    def __init__(
        self,
        routes: list[Route],
        port: int = 0,
        host: str = "127.0.0.1",
        stage: str = "$default",
        idle_timeout: int = IDLE_TIMEOUT,
    ) -> None:
        self.routes = sorted(routes, key=lambda r: r.specificity, reverse=True)
        self.stage = stage
        self.in_flight = 0
        self.last_activity = time.monotonic()
        self._lock = threading.Lock()
        # waitress is the local extra's: the CLI imports PortInUse from this module without it.
        from ._wsgi import WsgiServer

        try:
            self.server = WsgiServer(
                self,
                host,
                port,
                name="lambda-kit",
                threads=THREADS,
                idle_timeout=idle_timeout,
                max_body=MAX_BODY,
                header_lines=True,
            )
        except OSError as exc:
            raise PortInUse(
                f"port {port} on {host} is in use: pass --port with a free port (or 0 for any free port)"
            ) from exc
        self.host, self.port, self.url = self.server.host, self.server.port, self.server.url

    def start(self) -> HttpGateway:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()

    def idle(self, quiet: float) -> bool:
        return self.in_flight == 0 and time.monotonic() - self.last_activity >= quiet

    def route(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        for route in self.routes:
            params = route.match(method, path)
            if params is not None:
                return route, params
        return None

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        """The WSGI application: one request, one response."""
        method = environ["REQUEST_METHOD"]
        body = environ["wsgi.input"].read()
        status, headers, data = self.handle(
            method, environ["REQUEST_URI"], environ[self.server.HEADER_LINES], body, environ["REMOTE_ADDR"]
        )
        headers = [(name, value) for name, value in headers if name.lower() not in HOP_BY_HOP]
        start_response(f"{status} {_reason(status)}", [*headers, ("Content-Length", str(len(data)))])
        return [b"" if method == "HEAD" else data]

    def handle(
        self, method: str, target: str, headers: list[tuple[str, str]], body: bytes, client_ip: str
    ) -> Response:
        with self._lock:
            self.in_flight += 1
            self.last_activity = time.monotonic()
        try:
            return self._handle(method, target, headers, body, client_ip)
        finally:
            with self._lock:
                self.in_flight -= 1
                self.last_activity = time.monotonic()

    def _handle(
        self, method: str, target: str, headers: list[tuple[str, str]], body: bytes, client_ip: str
    ) -> Response:
        if method not in METHODS:
            return _json_response(501, {"message": "Not Implemented"})
        parts = urlsplit(target)
        path = parts.path or "/"
        found = self.route(method, path)
        if found is None:
            return _json_response(404, {"message": "Not Found"})
        route, params = found
        host = f"{self.host}:{self.port}"
        request = Request(
            route, method, path, parts.query, headers, body, params, client_ip, host, self.stage
        )
        build = http_api_event if route.payload == "2.0" else rest_api_event
        event = build(request)
        refused = None if route.authorizer is None else route.authorizer.admit(request, event)
        if refused is not None:
            return refused
        result = route.runtime.invoke(event, source="api")
        if result.error is not None:
            return _server_error()
        return http_response(result.response)


# --- events ---------------------------------------------------------------------------------------


def _multi(pairs: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for name, value in pairs:
        found.setdefault(name, []).append(value)
    return found


def _last_values(multi: dict[str, list[str]]) -> dict[str, str] | None:
    return {name: values[-1] for name, values in multi.items()} or None


def _last(multi: dict[str, list[str]], name: str, default: str = "") -> str:
    """The last value of header ``name`` (any case)."""
    return next((values[-1] for key, values in multi.items() if key.lower() == name), default)


def _joined(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Repeated names' values joined with commas, as HTTP API does."""
    return {name: ",".join(values) for name, values in _multi(pairs).items()}


def _cookies(headers: list[tuple[str, str]]) -> list[str]:
    """The cookies of the (lower-cased) ``cookie`` headers, one by one."""
    found = [cookie.strip() for name, value in headers if name == "cookie" for cookie in value.split(";")]
    return [cookie for cookie in found if cookie]


def _times(now: float) -> tuple[str, int]:
    """API Gateway's request time: as text, and in epoch milliseconds."""
    return time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)), int(now * 1000)


def rest_api_event(request: Request) -> dict[str, Any]:
    """A REST API (payload 1.0) event: every value in the multi-value fields, the last one in
    ``headers`` and ``queryStringParameters``."""
    headers = _multi(request.headers)
    query = _multi(parse_qsl(request.query, keep_blank_values=True))
    text_body, is_base64 = _body_text(request.body, _last(headers, "content-type"))
    return {
        "resource": _resource(request.route),
        "path": request.path,
        "httpMethod": request.method,
        "headers": _last_values(headers),
        "multiValueHeaders": headers or None,
        "queryStringParameters": _last_values(query),
        "multiValueQueryStringParameters": query or None,
        "pathParameters": request.params or None,
        "stageVariables": None,
        "requestContext": _rest_request_context(request, headers),
        "body": text_body,
        "isBase64Encoded": is_base64,
    }


def _resource(route: Route) -> str:
    return "/" if route.path == "$default" else route.path


def _rest_request_context(request: Request, headers: dict[str, list[str]]) -> dict[str, Any]:
    request_time, epoch = _times(time.time())
    return {
        "accountId": "123456789012",
        "apiId": "local",
        "domainName": _last(headers, "host", request.host),
        "httpMethod": request.method,
        "identity": {"sourceIp": request.client_ip, "userAgent": _last(headers, "user-agent")},
        "path": f"/local{request.path}",
        "protocol": "HTTP/1.1",
        "requestId": str(uuid.uuid4()),
        "requestTime": request_time,
        "requestTimeEpoch": epoch,
        "resourceId": "local",
        "resourcePath": _resource(request.route),
        "stage": "local",
    }


def http_api_event(request: Request) -> dict[str, Any]:
    """An HTTP API (payload 2.0) event: header names in lower case, cookies on their own."""
    lowered = [(name.lower(), value) for name, value in request.headers]
    headers = _joined((name, value) for name, value in lowered if name != "cookie")
    text_body, is_base64 = _body_text(request.body, headers.get("content-type", ""))
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": request.route.key,
        "rawPath": request.path,
        "rawQueryString": request.query,
        "headers": headers,
        "requestContext": _http_request_context(request, headers),
        "isBase64Encoded": is_base64,
    }
    optional = {
        "cookies": _cookies(lowered),
        "queryStringParameters": _joined(parse_qsl(request.query, keep_blank_values=True)),
        "pathParameters": request.params,
        "body": text_body,
    }
    event.update((name, value) for name, value in optional.items() if value)
    return event


def _http_request_context(request: Request, headers: dict[str, str]) -> dict[str, Any]:
    request_time, epoch = _times(time.time())
    return {
        "accountId": "123456789012",
        "apiId": "local",
        "domainName": headers.get("host", request.host),
        "domainPrefix": "local",
        "http": {
            "method": request.method,
            "path": request.path,
            "protocol": "HTTP/1.1",
            "sourceIp": request.client_ip,
            "userAgent": headers.get("user-agent", ""),
        },
        "requestId": uuid.uuid4().hex[:20],
        "routeKey": request.route.key,
        "stage": request.stage,
        "time": request_time,
        "timeEpoch": epoch,
    }


def _body_text(body: bytes, content_type: str) -> tuple[str | None, bool]:
    """(the event's ``body``, ``isBase64Encoded``): text content types as text, others base64."""
    if not body:
        return None, False
    if not content_type or any(t in content_type for t in TEXT_TYPES):
        try:
            return body.decode("utf-8"), False
        except UnicodeDecodeError:
            pass
    return base64.b64encode(body).decode(), True


# --- responses ------------------------------------------------------------------------------------


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def _json_response(status: int, body: Any) -> Response:
    return status, [("Content-Type", "application/json")], json.dumps(body).encode()


def _server_error() -> Response:
    return _json_response(500, {"message": "Internal Server Error"})


def http_response(response: Any) -> Response:
    """A function's response as API Gateway turns it into an HTTP response."""
    if not (isinstance(response, dict) and "statusCode" in response):
        return _plain_response(response)
    try:
        status = _status(response["statusCode"])
        data = _response_body(response)
        headers = _response_headers(response)
    except (TypeError, ValueError):
        return _server_error()
    if not any(name.lower() == "content-type" for name, _ in headers):
        headers.append(("Content-Type", "application/json"))
    return status, headers, data


def _plain_response(response: Any) -> Response:
    """Anything but a dict with ``statusCode``: a 200 JSON body (a string is that body)."""
    if isinstance(response, str):
        return 200, [("Content-Type", "application/json")], response.encode()
    return _json_response(200, response)


def _status(value: Any) -> int:
    status = int(value)
    if not 100 <= status <= 599:
        raise ValueError(f"statusCode {status} is not an HTTP status")
    return status


def _response_body(response: dict[str, Any]) -> bytes:
    body = response.get("body")
    if body is None:
        return b""
    if response.get("isBase64Encoded"):
        return base64.b64decode(body)
    return (body if isinstance(body, str) else json.dumps(body)).encode()


def _response_headers(response: dict[str, Any]) -> list[tuple[str, str]]:
    single = {name: [value] for name, value in (response.get("headers") or {}).items()}
    cookies = {"Set-Cookie": response.get("cookies") or []}
    return _pairs(single) + _pairs(response.get("multiValueHeaders") or {}) + _pairs(cookies)


def _pairs(multi: dict[Any, Any]) -> list[tuple[str, str]]:
    pairs = [(name, value) for name, values in multi.items() for value in values or []]
    return [(_header_text(name), _header_text(value)) for name, value in pairs]


def _header_text(value: Any) -> str:
    """A response header's name or value as HTTP/1.1 carries it; ValueError if it cannot (a line
    break would end the header and start another: the response is then a 500)."""
    text = str(value)
    if "\r" in text or "\n" in text:
        raise ValueError(f"a line break in the response header {text!r}")
    text.encode("latin-1")  # UnicodeEncodeError, a ValueError, for what latin-1 cannot carry
    return text
