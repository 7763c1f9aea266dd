"""A loopback HTTP proxy in front of DynamoDB that loses responses: it forwards a request, lets the
server carry it out, then closes the client's connection without answering (botocore raises
``ConnectionClosedError``, as when a response is lost on the network)."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

Rewrite = Callable[[str, bytes], tuple[bytes, bool]]
"""``(operation, body) -> (body to forward, lose the response?)``."""


@contextmanager
def lossy_proxy(upstream: str, rewrite: Rewrite) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """``(url, exchanges)``: each exchange is ``{"operation", "sent", "status", "lost"}``."""
    target = urlsplit(upstream)
    exchanges: list[dict[str, Any]] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            operation = (self.headers.get("X-Amz-Target") or "").rsplit(".", 1)[-1]
            with lock:
                sent, lose = rewrite(operation, body)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
            connection = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
            try:
                connection.request("POST", self.path, body=sent, headers=headers)
                response = connection.getresponse()
                payload = response.read()
            finally:
                connection.close()
            with lock:
                exchanges.append(
                    {
                        "operation": operation,
                        "sent": sent,
                        "status": response.status,
                        "lost": lose,
                        "response": payload,
                    }
                )
            if lose:
                self.close_connection = True
                return  # no status line: the client sees the connection closed
            self.send_response(response.status)
            for name, value in response.getheaders():
                if name.lower() not in (
                    "content-length",
                    "connection",
                    "transfer-encoding",
                    "date",
                    "server",
                ):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *_args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", exchanges
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
