"""WebSocket APIs on 127.0.0.1: real WebSocket connections in, API Gateway's route events to
functions, and the API's ``@connections`` endpoint for the functions to answer clients.

The routes come from the ``websocket`` events in serverless.yml. The server is the ``websockets``
library's (asyncio, in a thread of its own): a handshake is the ``$connect`` event (its headers and
query string; the ``$connect`` authorizer first, when the event names one: ``Unauthorized`` 401,
a deny 403, a failure 500), and a status of 400 or more, or a function error, refuses the
connection; each message is routed by ``websocketsApiRouteSelectionExpression`` (default
``$request.body.action``) to its route key's function, else ``$default``, else answered
``{"message": "Forbidden", ...}`` as API Gateway does; what the function returns goes back to the
client when its route has a ``routeResponseSelectionExpression``; a function error answers
``{"message": "Internal server error", ...}``; closing is the ``$disconnect`` event.

``@connections`` (``POST`` to send, ``GET``, ``DELETE`` to close; 410 for a connection that is gone)
is an HTTP server beside it; the functions find it through
``AWS_ENDPOINT_URL_APIGATEWAYMANAGEMENTAPI``, which boto3 reads. Each post is journaled with the
trace id its request carries (``X-Trace-Id``). Ports: the HTTP API's port + 1 and + 2 under
``lambda-kit local`` (3001 and 3002, as serverless-offline's WebSocket port is 3001), free ones for
a stack with ``api_port=0``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from .._data import dig, mapping
from .authorizers import ACCOUNT, named_authorizers
from .config import EventSource
from .runtime import FunctionRuntime

STAGE = "local"
ENDPOINT_VARIABLE = "AWS_ENDPOINT_URL_APIGATEWAYMANAGEMENTAPI"
DEFAULT_SELECTION = "$request.body.action"


class Connection:
    """One client: its id, its socket, what API Gateway keeps of it."""

    def __init__(self, socket: Any, source_ip: str, user_agent: str) -> None:
        self.id = base64.b64encode(uuid.uuid4().bytes[:9]).decode()
        self.socket = socket
        self.source_ip = source_ip
        self.user_agent = user_agent
        self.connected_at = int(time.time() * 1000)
        self.last_active = self.connected_at
        self.authorizer: dict[str, Any] | None = None


class WebSocketGateway:
    """The WebSocket API of a service: ``add`` its routes, ``start``, ``stop`` (a stack delivery)."""

    def __init__(self, stack: Any, port: int, management_port: int) -> None:
        self.stack = stack
        self.port, self.management_port = port, management_port
        self.routes: dict[str, tuple[FunctionRuntime, EventSource]] = {}
        self.connections: dict[str, Connection] = {}
        self.handshakes: dict[int, Connection] = {}  # by id() of the socket, until its messages start
        self.selection = str(
            stack.config.provider.get("websocketsApiRouteSelectionExpression") or DEFAULT_SELECTION
        )
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None
        self.saved_endpoint: str | None = None
        self.url = ""

    def add(self, runtime: FunctionRuntime, event: EventSource) -> None:
        route = event.spec.get("route")
        if isinstance(route, str):
            self.routes[route] = (runtime, event)

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        self.management = ThreadingHTTPServer(("127.0.0.1", self.management_port), _management_handler(self))
        threading.Thread(target=self.management.serve_forever, daemon=True, name="ws-connections").start()
        endpoint = f"http://127.0.0.1:{self.management.server_address[1]}/{STAGE}"
        self.saved_endpoint = os.environ.get(ENDPOINT_VARIABLE)
        os.environ[ENDPOINT_VARIABLE] = endpoint
        ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, args=(ready,), daemon=True, name="ws-gateway")
        self.thread.start()
        ready.wait(10)
        self.stack.journal.record("websocket.listening", url=self.url, connections_endpoint=endpoint)

    def _serve(self, ready: threading.Event) -> None:
        from websockets.asyncio.server import serve  # the local extra's WebSocket server

        async def main() -> None:
            self.loop = asyncio.get_running_loop()
            self.stopped = asyncio.Event()
            async with serve(self._talk, "127.0.0.1", self.port, process_request=self._connect) as server:
                self.url = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"
                ready.set()
                await self.stopped.wait()

        asyncio.run(main())

    def stop(self) -> None:
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.stopped.set)
        self.management.shutdown()
        self.management.server_close()
        if self.saved_endpoint is None:
            os.environ.pop(ENDPOINT_VARIABLE, None)
        else:
            os.environ[ENDPOINT_VARIABLE] = self.saved_endpoint

    def join(self, timeout: float) -> None:
        if self.thread is not None:
            self.thread.join(timeout)

    # --- the routes -----------------------------------------------------------------------------

    def context(self, connection: Connection, route_key: str, event_type: str) -> dict[str, Any]:
        now = int(time.time() * 1000)
        request_id = base64.b64encode(uuid.uuid4().bytes[:9]).decode()
        found = {
            "routeKey": route_key,
            "eventType": event_type,
            "extendedRequestId": request_id,
            "requestTime": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime()),
            "messageDirection": "IN",
            "stage": STAGE,
            "connectedAt": connection.connected_at,
            "requestTimeEpoch": now,
            "identity": {"sourceIp": connection.source_ip, "userAgent": connection.user_agent},
            "requestId": request_id,
            "domainName": self.url.removeprefix("ws://"),
            "connectionId": connection.id,
            "apiId": "local",
        }
        if connection.authorizer is not None:
            found["authorizer"] = connection.authorizer
        return found

    async def invoke(self, route_key: str, event: dict[str, Any]) -> Any:
        runtime, _ = self.routes[route_key]
        return await asyncio.to_thread(runtime.invoke, event, "websocket")

    async def _connect(self, socket: Any, request: Any) -> Any:
        """The handshake: the ``$connect`` authorizer and route; a response refuses the connection."""
        headers = {name: value for name, value in request.headers.raw_items()}
        query = dict(parse_qsl(urlsplit(request.path).query, keep_blank_values=True))
        peer = socket.remote_address[0] if socket.remote_address else "127.0.0.1"
        connection = Connection(socket, peer, headers.get("User-Agent", ""))
        self.handshakes[id(socket)] = connection
        event = {
            "headers": headers,
            "multiValueHeaders": {name: [value] for name, value in headers.items()},
            "requestContext": self.context(connection, "$connect", "CONNECT"),
            "isBase64Encoded": False,
        }
        if query:
            event.update(
                queryStringParameters=query,
                multiValueQueryStringParameters={k: [v] for k, v in query.items()},
            )
        refused = await self._authorize(connection, event)
        if refused is not None:
            self.handshakes.pop(id(socket), None)
            return socket.respond(*refused)
        if "$connect" in self.routes:
            event["requestContext"] = self.context(connection, "$connect", "CONNECT")
            result = await self.invoke("$connect", event)
            status = dig(result.response, "statusCode") if result.error is None else 500
            if isinstance(status, int) and status >= 400:
                self.handshakes.pop(id(socket), None)
                return socket.respond(status, "Forbidden\n" if status == 403 else f"{status}\n")
        self.connections[connection.id] = connection
        return None

    async def _authorize(self, connection: Connection, event: dict[str, Any]) -> tuple[int, str] | None:
        """The ``$connect`` authorizer's verdict: None to go on, else the refusal."""
        if "$connect" not in self.routes:
            return None
        _, connect = self.routes["$connect"]
        for _, named_event, name, _ in named_authorizers(self.stack.config):
            runtime = self.stack.runtimes.get(name)
            if named_event is not connect or runtime is None:
                continue
            arn = f"arn:aws:execute-api:{self.stack.region}:{ACCOUNT}:local/{STAGE}/$connect"
            request = {"type": "REQUEST", "methodArn": arn, **event, "stageVariables": {}}
            result = await asyncio.to_thread(runtime.invoke, request, "authorizer")
            if result.error is not None:
                return (
                    (401, "Unauthorized\n")
                    if str(result.error) == "Unauthorized"
                    else (500, "Internal Server Error\n")
                )
            statements = dig(result.response, "policyDocument", "Statement")
            effects = (
                {mapping(s).get("Effect") for s in statements} if isinstance(statements, list) else set()
            )
            if "Allow" not in effects or "Deny" in effects:
                return 403, "Forbidden\n"
            connection.authorizer = {
                "principalId": result.response.get("principalId"),
                **mapping(result.response.get("context")),
            }
        return None

    async def _talk(self, socket: Any) -> None:
        """A connection's messages, one route event each; then ``$disconnect``."""
        connection = self.handshakes.pop(id(socket))
        try:
            async for frame in socket:
                connection.last_active = int(time.time() * 1000)
                await self._message(connection, frame)
        finally:
            self.connections.pop(connection.id, None)
            if "$disconnect" in self.routes:
                event = {
                    "requestContext": self.context(connection, "$disconnect", "DISCONNECT"),
                    "isBase64Encoded": False,
                }
                code = socket.close_code
                event["requestContext"].update(disconnectStatusCode=code if code is not None else 1005)
                await self.invoke("$disconnect", event)

    async def _message(self, connection: Connection, frame: str | bytes) -> None:
        binary = isinstance(frame, bytes)
        body = base64.b64encode(frame).decode() if binary else frame
        key = self.route_key(None if binary else frame)
        context = self.context(connection, key or "$default", "MESSAGE")
        context["messageId"] = context["requestId"]
        if key is None:
            answer = {
                "message": "Forbidden",
                "connectionId": connection.id,
                "requestId": context["requestId"],
            }
            await connection.socket.send(json.dumps(answer))
            return
        result = await self.invoke(key, {"requestContext": context, "body": body, "isBase64Encoded": binary})
        if result.error is not None:
            answer = {
                "message": "Internal server error",
                "connectionId": connection.id,
                "requestId": context["requestId"],
            }
            await connection.socket.send(json.dumps(answer))
            return
        _, event = self.routes[key]
        reply = dig(result.response, "body")
        if event.spec.get("routeResponseSelectionExpression") and reply is not None:
            await connection.socket.send(reply)

    def route_key(self, text: str | None) -> str | None:
        """The message's route key by the selection expression (``$request.body.action``), else
        ``$default`` when there is one, else None."""
        found: Any = None
        if text is not None and self.selection.startswith("$request.body."):
            try:
                found = json.loads(text)
            except ValueError:
                found = None
            for part in self.selection.removeprefix("$request.body.").split("."):
                found = mapping(found).get(part)
        if isinstance(found, str) and found in self.routes and not found.startswith("$"):
            return found
        return "$default" if "$default" in self.routes else None

    # --- @connections ---------------------------------------------------------------------------

    def post(self, connection_id: str, data: bytes, trace_id: str | None) -> int:
        connection = self.connections.get(connection_id)
        if connection is None or self.loop is None:
            return 410
        try:
            frame: str | bytes = data.decode("utf-8")
        except UnicodeDecodeError:
            frame = data
        asyncio.run_coroutine_threadsafe(connection.socket.send(frame), self.loop).result(10)
        self.stack.journal.record(
            "websocket.post", connection_id=connection_id, bytes=len(data), trace_id=trace_id
        )
        return 200

    def close(self, connection_id: str) -> int:
        connection = self.connections.get(connection_id)
        if connection is None or self.loop is None:
            return 410
        asyncio.run_coroutine_threadsafe(connection.socket.close(), self.loop).result(10)
        return 204


def _management_handler(gateway: WebSocketGateway) -> type[BaseHTTPRequestHandler]:
    class Management(BaseHTTPRequestHandler):
        def _connection(self) -> str | None:
            head, _, connection = urlsplit(self.path).path.rpartition("/@connections/")
            return unquote(connection) if head == f"/{STAGE}" and connection else None

        def _answer(self, status: int, body: dict[str, Any] | None = None) -> None:
            if status == 410:
                body = {"message": "GoneException"}
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            if status == 410:
                self.send_header("x-amzn-ErrorType", "GoneException")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            connection = self._connection()
            status = (
                404 if connection is None else gateway.post(connection, data, self.headers.get("X-Trace-Id"))
            )
            self._answer(status, {} if status == 200 else None)

        def do_GET(self) -> None:  # noqa: N802
            found = gateway.connections.get(self._connection() or "")
            if found is None:
                self._answer(410)
                return
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(found.connected_at / 1000))
            identity = {"SourceIp": found.source_ip, "UserAgent": found.user_agent}
            self._answer(200, {"ConnectedAt": stamp, "Identity": identity, "LastActiveAt": stamp})

        def do_DELETE(self) -> None:  # noqa: N802
            self._answer(gateway.close(self._connection() or ""))

        def log_message(self, *args: Any) -> None:
            pass

    return Management


def websocket_route(stack: Any, runtime: FunctionRuntime, event: EventSource, spec: dict[str, Any]) -> Any:
    """``DELIVERIES["websocket"]``: the route of a ``websocket`` event on the service's one WebSocket
    gateway (made, and returned to be started, with the first route)."""
    found = next((part for part in stack.deliveries if isinstance(part, WebSocketGateway)), None)
    made = found is None
    if found is None:
        base = stack.api_port or 0
        found = WebSocketGateway(stack, base + 1 if base else 0, base + 2 if base else 0)
    found.add(runtime, event)
    return found if made else None
