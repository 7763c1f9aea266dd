"""A WSGI application served by waitress on a loopback port, from a thread of its own: moto's
server (``endpoint.py``) and the HTTP API (``gateway.py``).

waitress reads requests on one thread (an ``asyncore`` loop) and hands each complete one to a pool
of ``threads`` worker threads: a slow or half-sent request holds no worker, only a connection,
which is closed after ``idle_timeout`` seconds without traffic. ``stop()`` closes the listening
socket and every connection from the loop's own thread (as waitress does on Ctrl-C), then waits
for the workers. For the HTTP API's events, waitress's request parser is extended (``_Parser``)
to keep the header lines as sent.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import waitress
from waitress import wasyncore
from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser, ParsingError, get_header_lines

BACKLOG = 1024
"""Connections the kernel queues before they are accepted (capped by ``net.core.somaxconn``): a
burst of clients connecting at once waits to be accepted instead of being refused or reset."""

# waitress warns on its own logger whenever a request waits for a free worker thread ("Task queue
# depth is 1"): under a burst of clients that is what the queue is for, not a problem to report.
logging.getLogger("waitress.queue").setLevel(logging.ERROR)


class WsgiServer:
    """``app`` on ``host:port`` (0: a free port); ``url`` once made. With ``header_lines``, the
    environment also holds the request's header lines as sent (``HEADER_LINES``: a list of
    ``(name, value)`` with the names' case, the order and the repeats a WSGI environment merges)."""

    HEADER_LINES = "HTTP_lambda_kit.headers"
    """No client header lands there: waitress names those in capitals."""

    def __init__(
        self,
        app: Callable[..., Any],
        host: str,
        port: int,
        *,
        name: str,
        threads: int,
        idle_timeout: int = 120,
        max_body: int = 1 << 30,
        header_lines: bool = False,
    ) -> None:
        self._map: dict[int, Any] = {}
        self._server = waitress.create_server(
            app,
            map=self._map,
            host=host,
            port=port,
            threads=threads,
            backlog=BACKLOG,
            connection_limit=1000,
            channel_timeout=idle_timeout,
            cleanup_interval=min(30, idle_timeout),
            # waitress answers 413 from this size on: bodies up to max_body bytes are taken
            max_request_body_size=max_body + 1,
            asyncore_use_poll=True,
            ident=name,
        )
        if header_lines:
            self._server.channel_class = _Channel  # type: ignore[union-attr]
        self.name = name
        self.host = str(self._server.effective_host)
        self.port = int(self._server.effective_port)
        self.url = f"http://{self.host}:{self.port}"
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._server.run, name=f"lambda-kit {self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop listening, close every connection, and wait (up to 5 s) for the requests being served."""
        if self._thread is not None and self._thread.is_alive():
            try:
                self._server.trigger.pull_trigger(self._close_all)  # type: ignore[union-attr]
            except OSError:  # its trigger is already closed (its loop is ending): close what is left here
                self._close_all()
            self._thread.join(5)
        else:
            self._close_all()
        self._server.task_dispatcher.shutdown()

    def _close_all(self) -> None:
        wasyncore.close_all(self._map, ignore_all=True)


def _header(line: bytes) -> tuple[str, str]:
    name, _, value = line.partition(b":")
    return name.decode("latin-1"), value.strip(b" \t").decode("latin-1")


class _Parser(HTTPRequestParser):
    """waitress's request parser, which also keeps the header lines as sent, and refuses the
    framings RFC 9112 6.1 calls faulty, where waitress would serve them: ``Content-Length`` beside
    ``Transfer-Encoding: chunked`` (it would read the chunks and keep the connection, so what
    follows could be a request smuggled past a proxy that went by the length), and
    ``Transfer-Encoding`` on an HTTP/1.0 request (it would ignore it and serve an empty body)."""

    def parse_header(self, header_plus: bytes) -> None:
        super().parse_header(header_plus)  # raises on anything malformed: nothing is kept then
        if self.chunked and "CONTENT_LENGTH" in self.headers:
            raise ParsingError("both Content-Length and Transfer-Encoding: chunked")
        if "TRANSFER_ENCODING" in self.headers:  # left there by waitress for HTTP/1.0 only
            raise ParsingError("Transfer-Encoding on an HTTP/1.0 request")
        lines = get_header_lines(header_plus.split(b"\r\n", 1)[1])
        self.headers[WsgiServer.HEADER_LINES.removeprefix("HTTP_")] = [_header(line) for line in lines]


DRAIN_BYTES = 64 * 1024 * 1024
"""What a client may still send once the server has answered and is closing the connection (the
rest of a body answered 413) before the connection is closed anyway."""


class _Channel(HTTPChannel):
    """waitress's connection, with the header lines kept (``_Parser``), closed gracefully: once the
    last answer is sent, the server stops sending (its FIN follows the answer) and reads what the
    client still sends, up to ``DRAIN_BYTES``, before it closes. Closed at once, a connection with
    unread data is reset, and the client, still sending its body, never reads the 413 it was sent."""

    parser_class = _Parser
    draining: int | None = None
    """Bytes left to read and drop before closing; None while the connection serves."""

    def handle_close(self) -> None:
        if self.draining is not None or not self.connected or self.requests or self.total_outbufs_len:
            super().handle_close()
            return
        try:
            self.socket.shutdown(socket.SHUT_WR)
        except OSError:  # the client is gone already
            super().handle_close()
            return
        self.draining = DRAIN_BYTES
        self.will_close = self.close_when_flushed = False
        self.last_activity = time.time()  # the idle timeout ends a client that neither sends nor closes

    def readable(self) -> bool:
        return self.draining is not None or super().readable()

    def writable(self) -> bool:
        if self.draining is not None:
            return self.will_close  # set by the idle timeout: then closed
        return super().writable()

    def handle_read(self) -> None:
        if self.draining is None:
            super().handle_read()
            return
        try:
            data = self.socket.recv(self.adj.recv_bytes)  # not self.recv, which closes on its own at EOF
        except BlockingIOError:  # nothing to read after all
            return
        except OSError:  # reset by the client
            data = b""
        self.draining -= len(data)
        if data and self.draining > 0:
            self.last_activity = time.time()
        else:  # the client closed, or sent more than is drained
            self.handle_close()
