"""The embedded AWS endpoint: moto's server in-process on 127.0.0.1, on a free port.

moto does not isolate concurrent DynamoDB transactions (a cancelled one restores a table
snapshot and can erase another request's write), while DynamoDB's are serializable. Wherever
several threads write at once we therefore serialize the server's DynamoDB (and DynamoDB Streams)
requests with one lock, so what we observe is our code's behaviour, not moto's.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import threading
from typing import Any

_dynamodb_lock = threading.RLock()
_serialized = False


def serialize_dynamodb() -> None:
    """Run moto's DynamoDB and DynamoDB Streams request handlers one at a time (idempotent)."""
    global _serialized
    if _serialized:
        return
    from moto.dynamodb.responses import DynamoHandler
    from moto.dynamodbstreams.responses import DynamoDBStreamsHandler

    for handler in (DynamoHandler, DynamoDBStreamsHandler):
        original = handler.call_action

        @functools.wraps(original)
        def locked(self: Any, _original: Any = original) -> Any:
            with _dynamodb_lock:
                return _original(self)

        handler.call_action = locked  # type: ignore[method-assign]
    _serialized = True


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


class Endpoint:
    """moto's server on loopback. ``url`` is what boto3's ``endpoint_url`` / ``AWS_ENDPOINT_URL`` take."""

    def __init__(self, port: int = 0, host: str = "127.0.0.1") -> None:
        from moto.server import ThreadedMotoServer

        serialize_dynamodb()
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self._server = ThreadedMotoServer(ip_address=host, port=port, verbose=False)
        self.url = ""

    def start(self) -> Endpoint:
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.url = f"http://{host}:{port}"
        return self

    def stop(self) -> None:
        self._server.stop()

    def reset(self) -> None:
        """Forget every resource (moto's ``/moto-api/reset``)."""
        import urllib.request

        urllib.request.urlopen(urllib.request.Request(f"{self.url}/moto-api/reset", method="POST")).read()

    def __enter__(self) -> Endpoint:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def aws_environment(url: str, region: str = "us-east-1") -> dict[str, str]:
    """Environment variables that point boto3 (and the handlers) at ``url`` with dummy credentials."""
    return {
        "AWS_ENDPOINT_URL": url,
        "AWS_ACCESS_KEY_ID": os.environ.get("AWS_ACCESS_KEY_ID", "testing"),
        "AWS_SECRET_ACCESS_KEY": os.environ.get("AWS_SECRET_ACCESS_KEY", "testing"),
        "AWS_DEFAULT_REGION": region,
        "AWS_REGION": region,
    }
