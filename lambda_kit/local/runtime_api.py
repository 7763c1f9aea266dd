"""Lambda's Runtime API for one execution environment, on 127.0.0.1.

The runtime interface client in a worker (``awslambdaric``) asks for its next invocation with
``GET /2018-06-01/runtime/invocation/next`` (answered when there is one, with Lambda's headers:
request id, deadline, function ARN, X-Ray trace id, client context, Cognito identity) and answers
with ``POST .../invocation/{id}/response`` or ``.../invocation/{id}/error``; an initialization
that failed (the handler does not import) is posted to ``.../init/error``. Each environment has a
server of its own (its own port), as each Lambda execution environment has its own API: which
worker asked is the port it asked on.

The server only carries messages: ``Channel`` is what the environment on the stack's side
implements (``environments.Worker``).
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol

PREFIX = "/2018-06-01/runtime/"


class Channel(Protocol):
    def next_invocation(self) -> tuple[bytes, dict[str, str]] | None:
        """Block until the next invocation (its body and headers); None when the worker must stop."""

    def respond(self, request_id: str, body: bytes) -> bool:
        """The function's response; False when ``request_id`` is not the one running."""

    def fail(self, request_id: str, error: dict[str, Any]) -> bool:
        """The function's error (``errorType``, ``errorMessage``, ``stackTrace``)."""

    def init_failed(self, error: dict[str, Any]) -> None:
        """The initialization's error."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # awslambdaric keeps its connection open across invocations
    server: _Server

    def setup(self) -> None:
        super().setup()
        # headers and body are two writes: without this, each answer waits for a delayed ACK (40 ms)
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # the stack logs what matters (START / END / REPORT); not every request

    def do_GET(self) -> None:
        if self.path != PREFIX + "invocation/next":
            return self._answer(HTTPStatus.NOT_FOUND, {"errorMessage": f"no route {self.path}"})
        found = self.server.channel.next_invocation()
        if found is None:
            self.close_connection = True
            return self._answer(HTTPStatus.GONE, {"errorMessage": "the execution environment is shut down"})
        body, headers = found
        self.send_response(HTTPStatus.OK)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = self.path.removeprefix(PREFIX).split("/")
        channel = self.server.channel
        if parts == ["init", "error"]:
            channel.init_failed(_error(body, self.headers.get("Lambda-Runtime-Function-Error-Type")))
            return self._answer(HTTPStatus.ACCEPTED, {"status": "OK"})
        if len(parts) == 3 and parts[0] == "invocation" and parts[2] in ("response", "error"):
            taken = (
                channel.respond(parts[1], body)
                if parts[2] == "response"
                else channel.fail(
                    parts[1], _error(body, self.headers.get("Lambda-Runtime-Function-Error-Type"))
                )
            )
            if taken:
                return self._answer(HTTPStatus.ACCEPTED, {"status": "OK"})
            return self._answer(HTTPStatus.BAD_REQUEST, {"errorMessage": f"invalid request id {parts[1]}"})
        return self._answer(HTTPStatus.NOT_FOUND, {"errorMessage": f"no route {self.path}"})

    def _answer(self, status: HTTPStatus, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _error(body: bytes, error_type: str | None) -> dict[str, Any]:
    """The error a runtime posted, as Lambda reports it (``errorType``, ``errorMessage`` ...)."""
    try:
        parsed = json.loads(body or b"{}")
    except ValueError:
        parsed = {"errorMessage": body.decode("utf-8", "replace")}
    error = parsed if isinstance(parsed, dict) else {"errorMessage": str(parsed)}
    error.setdefault("errorType", error_type or "Runtime.Unknown")
    error.setdefault("errorMessage", "")
    return error


class _Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 16
    channel: Channel

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a worker killed mid-request (its deadline, the stack stopping): its exit tells what happened


class RuntimeApi:
    """One environment's Runtime API on a free loopback port, served by daemon threads."""

    def __init__(self, channel: Channel) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.channel = channel
        self.address = f"127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.2,), name=f"runtime api {self.address}", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
