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

The server is the standard library's threaded HTTP/1.1 server (one thread per connection,
keep-alive), with a listen backlog of ``BACKLOG`` instead of its default 5: a burst of clients
connecting at once waits in the kernel's queue to be accepted, as API Gateway would accept them,
instead of being refused or reset. It keeps what a WSGI server would lose: the headers as sent,
with their case, order and repeats (a REST route's ``multiValueHeaders``).
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from .runtime import FunctionRuntime

TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript", "application/x-www-form-urlencoded", "+json", "+xml")


BACKLOG = 1024
"""Connections the kernel queues before they are accepted (capped by ``net.core.somaxconn``)."""


class PortInUse(Exception):
    pass


class GatewayServer(ThreadingHTTPServer):
    request_queue_size = BACKLOG
    daemon_threads = True


@dataclass
class Route:
    method: str  # "GET", ... or "ANY"
    path: str  # "/views/{id}", "/{proxy+}", "$default"
    runtime: FunctionRuntime
    payload: str = "2.0"  # "2.0": an HTTP API route; "1.0": a REST API route
    _regex: re.Pattern[str] | None = None

    @property
    def key(self) -> str:
        return "$default" if self.path == "$default" else f"{self.method} {self.path}"

    def match(self, method: str, path: str) -> dict[str, str] | None:
        if self.method not in ("ANY", method):
            return None
        if self.path == "$default":
            return {}
        if self._regex is None:
            pattern = ""
            for segment in self.path.strip("/").split("/") if self.path.strip("/") else []:
                greedy = re.fullmatch(r"\{(\w+)\+\}", segment)
                param = re.fullmatch(r"\{(\w+)\}", segment)
                if greedy:
                    pattern += f"/(?P<{greedy.group(1)}>.+)"
                elif param:
                    pattern += f"/(?P<{param.group(1)}>[^/]+)"
                else:
                    pattern += "/" + re.escape(segment)
            self._regex = re.compile((pattern or "/") + "/?")
        found = self._regex.fullmatch(path)
        return None if found is None else {k: unquote(v) for k, v in found.groupdict().items()}

    @property
    def specificity(self) -> tuple[int, int, int, int]:
        if self.path == "$default":
            return (-1, 0, 0, 0)
        segments = [s for s in self.path.strip("/").split("/") if s]
        literal = sum(1 for s in segments if not s.startswith("{"))
        greedy = any(s.endswith("+}") for s in segments)
        return (0 if greedy else 1, literal, len(segments), 0 if self.method == "ANY" else 1)


def routes_for(runtime: FunctionRuntime, specs: list[dict[str, Any]], payload: str = "2.0") -> list[Route]:
    """The routes of ``httpApi`` event specs (``payload="2.0"``) or ``http`` ones (``"1.0"``)."""
    routes = []
    for spec in specs:
        method = str(spec.get("method", "*")).upper()
        path = str(spec.get("path", "*"))
        if path == "*":
            routes.append(Route("ANY", "$default", runtime, payload))
            continue
        routes.append(Route("ANY" if method == "*" else method, path if path.startswith("/") else "/" + path, runtime, payload))
    return routes


class HttpGateway:
    def __init__(self, routes: list[Route], port: int = 0, host: str = "127.0.0.1", stage: str = "$default") -> None:
        self.routes = sorted(routes, key=lambda r: r.specificity, reverse=True)
        self.stage = stage
        self.in_flight = 0
        self.last_activity = time.monotonic()
        self._lock = threading.Lock()
        gateway = self

        class Handler(_RequestHandler):
            pass

        Handler.gateway = gateway
        try:
            self.server = GatewayServer((host, port), Handler)
        except OSError as exc:
            raise PortInUse(f"port {port} on {host} is in use: pass --port with a free port (or 0 for any free port)") from exc
        self.host, self.port = self.server.server_address[:2]
        self.url = f"http://{self.host}:{self.port}"
        self._thread: threading.Thread | None = None

    def start(self) -> HttpGateway:
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, name="lambda-kit http", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def idle(self, quiet: float) -> bool:
        return self.in_flight == 0 and time.monotonic() - self.last_activity >= quiet

    def route(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        for route in self.routes:
            params = route.match(method, path)
            if params is not None:
                return route, params
        return None

    # --- one request ----------------------------------------------------------------------

    def handle(self, method: str, target: str, headers: list[tuple[str, str]], body: bytes, client_ip: str) -> tuple[int, list[tuple[str, str]], bytes]:
        with self._lock:
            self.in_flight += 1
            self.last_activity = time.monotonic()
        try:
            return self._handle(method, target, headers, body, client_ip)
        finally:
            with self._lock:
                self.in_flight -= 1
                self.last_activity = time.monotonic()

    def _handle(self, method: str, target: str, headers: list[tuple[str, str]], body: bytes, client_ip: str) -> tuple[int, list[tuple[str, str]], bytes]:
        parts = urlsplit(target)
        path = parts.path or "/"
        found = self.route(method, path)
        if found is None:
            return _json_response(404, {"message": "Not Found"})
        route, params = found
        build = self.event if route.payload == "2.0" else self.rest_event
        event = build(route, method, path, parts.query, headers, body, params, client_ip)
        result = route.runtime.invoke(event, source="api")
        if result.error is not None:
            return _json_response(500, {"message": "Internal Server Error"})
        return http_response(result.response)

    def rest_event(self, route: Route, method: str, path: str, query: str, headers: list[tuple[str, str]], body: bytes, params: dict[str, str], client_ip: str) -> dict[str, Any]:
        """A REST API (payload 1.0) event: every value in the multi-value fields, the last one in
        ``headers`` and ``queryStringParameters``."""
        multi_headers: dict[str, list[str]] = {}
        for name, value in headers:
            multi_headers.setdefault(name, []).append(value)
        multi_query: dict[str, list[str]] = {}
        for name, value in parse_qsl(query, keep_blank_values=True):
            multi_query.setdefault(name, []).append(value)
        content_type = next((v[-1] for k, v in multi_headers.items() if k.lower() == "content-type"), "")
        text_body, is_base64 = _body_text(body, content_type)
        now = time.time()
        resource = "/" if route.path == "$default" else route.path
        stage = "local"
        return {
            "resource": resource,
            "path": path,
            "httpMethod": method,
            "headers": {name: values[-1] for name, values in multi_headers.items()} or None,
            "multiValueHeaders": multi_headers or None,
            "queryStringParameters": {name: values[-1] for name, values in multi_query.items()} or None,
            "multiValueQueryStringParameters": multi_query or None,
            "pathParameters": params or None,
            "stageVariables": None,
            "requestContext": {
                "accountId": "123456789012",
                "apiId": "local",
                "domainName": next((v[-1] for k, v in multi_headers.items() if k.lower() == "host"), f"{self.host}:{self.port}"),
                "httpMethod": method,
                "identity": {"sourceIp": client_ip, "userAgent": next((v[-1] for k, v in multi_headers.items() if k.lower() == "user-agent"), "")},
                "path": f"/{stage}{path}",
                "protocol": "HTTP/1.1",
                "requestId": str(uuid.uuid4()),
                "requestTime": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
                "requestTimeEpoch": int(now * 1000),
                "resourceId": "local",
                "resourcePath": resource,
                "stage": stage,
            },
            "body": text_body,
            "isBase64Encoded": is_base64,
        }

    def event(self, route: Route, method: str, path: str, query: str, headers: list[tuple[str, str]], body: bytes, params: dict[str, str], client_ip: str) -> dict[str, Any]:
        merged: dict[str, str] = {}
        cookies: list[str] = []
        for name, value in headers:
            lower = name.lower()
            if lower == "cookie":
                cookies.extend(c.strip() for c in value.split(";") if c.strip())
                continue
            merged[lower] = f"{merged[lower]},{value}" if lower in merged else value
        query_params: dict[str, str] = {}
        for name, value in parse_qsl(query, keep_blank_values=True):
            query_params[name] = f"{query_params[name]},{value}" if name in query_params else value
        text_body, is_base64 = _body_text(body, merged.get("content-type", ""))
        now = time.time()
        event: dict[str, Any] = {
            "version": "2.0",
            "routeKey": route.key,
            "rawPath": path,
            "rawQueryString": query,
            "headers": merged,
            "requestContext": {
                "accountId": "123456789012",
                "apiId": "local",
                "domainName": merged.get("host", f"{self.host}:{self.port}"),
                "domainPrefix": "local",
                "http": {
                    "method": method,
                    "path": path,
                    "protocol": "HTTP/1.1",
                    "sourceIp": client_ip,
                    "userAgent": merged.get("user-agent", ""),
                },
                "requestId": uuid.uuid4().hex[:20],
                "routeKey": route.key,
                "stage": self.stage,
                "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
                "timeEpoch": int(now * 1000),
            },
            "isBase64Encoded": is_base64,
        }
        if cookies:
            event["cookies"] = cookies
        if query_params:
            event["queryStringParameters"] = query_params
        if params:
            event["pathParameters"] = params
        if text_body is not None:
            event["body"] = text_body
        return event


def _body_text(body: bytes, content_type: str) -> tuple[str | None, bool]:
    """(the event's ``body``, ``isBase64Encoded``): text content types as text, others base64."""
    if not body:
        return None, False
    if any(t in content_type for t in TEXT_TYPES) or not content_type:
        try:
            return body.decode("utf-8"), False
        except UnicodeDecodeError:
            pass
    return base64.b64encode(body).decode(), True


def _json_response(status: int, body: Any) -> tuple[int, list[tuple[str, str]], bytes]:
    return status, [("Content-Type", "application/json")], json.dumps(body).encode()


def http_response(response: Any) -> tuple[int, list[tuple[str, str]], bytes]:
    """A payload 2.0 function response as HTTP API turns it into an HTTP response."""
    if not (isinstance(response, dict) and "statusCode" in response):
        if isinstance(response, str):
            return 200, [("Content-Type", "application/json")], response.encode()
        return _json_response(200, response)
    try:
        status = int(response["statusCode"])
    except (TypeError, ValueError):
        return _json_response(500, {"message": "Internal Server Error"})
    headers: list[tuple[str, str]] = []
    for name, value in (response.get("headers") or {}).items():
        headers.append((str(name), str(value)))
    for name, values in (response.get("multiValueHeaders") or {}).items():
        for value in values or []:
            headers.append((str(name), str(value)))
    for cookie in response.get("cookies") or []:
        headers.append(("Set-Cookie", str(cookie)))
    body = response.get("body")
    if body is None:
        data = b""
    elif response.get("isBase64Encoded"):
        try:
            data = base64.b64decode(body)
        except (ValueError, TypeError):
            return _json_response(500, {"message": "Internal Server Error"})
    else:
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
    if not any(name.lower() == "content-type" for name, _ in headers):
        headers.append(("Content-Type", "application/json"))
    return status, headers, data


class _RequestHandler(BaseHTTPRequestHandler):
    gateway: HttpGateway
    protocol_version = "HTTP/1.1"
    server_version = "lambda-kit"
    # The headers and the body go out in two writes: with Nagle's algorithm the body waits for the
    # client's (delayed, up to 40 ms) ACK of the headers, on every keep-alive response.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the functions log
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        status, headers, data = self.gateway.handle(self.command, self.path, list(self.headers.items()), body, self.client_address[0])
        self.send_response(status)
        for name, value in headers:
            if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = _serve
