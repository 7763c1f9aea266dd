"""Lambda's Invoke API for a running stack, on 127.0.0.1: ``lambda-kit invoke`` sends to it, and so
can the AWS CLI or boto3 (``aws lambda invoke --endpoint-url http://127.0.0.1:PORT``).

``POST /2015-03-31/functions/{FunctionName}/invocations``, as Lambda answers it: the function's key,
its deployed name or its ARN (a ``:qualifier`` is ignored); ``X-Amz-Invocation-Type``
``RequestResponse`` (the default: 200 and the response; a function error is ``X-Amz-Function-Error:
Unhandled`` with ``{"errorMessage", "errorType", "requestId", "stackTrace"}``), ``Event`` (202: the
stack's asynchronous invocation, with its retries and destinations) or ``DryRun`` (204);
``X-Amz-Log-Type: Tail`` returns the invocation's last 4 KB of log lines base64-encoded in
``X-Amz-Log-Result``. An unknown function is 404 ``ResourceNotFoundException``, a body that is not
JSON 400 ``InvalidRequestContentException``, one over 6 MB 413 ``RequestEntityTooLargeException``.
Every answer names the request in ``x-amzn-RequestId``.

``invoke(url, function, event)`` is the client ``lambda-kit invoke`` uses.
"""

from __future__ import annotations

import base64
import http.client
import json
import re
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlsplit

MAX_PAYLOAD = 6 * 1024 * 1024
"""Lambda's limit for a synchronous invocation's request and response."""
TAIL_BYTES = 4096
INVOCATIONS = re.compile(r"/2015-03-31/functions/([^/]+)/invocations")

Answer = tuple[int, list[tuple[str, str]], bytes]


def function_key(stack: Any, name: str) -> str | None:
    """The key of the running function ``name`` names (its key, deployed name or ARN), or None."""
    name = name.split(":function:", 1)[-1].split(":", 1)[0]
    for key, runtime in stack.runtimes.items():
        if name in (key, runtime.function.name):
            return str(key)
    return None


def _error(status: int, kind: str, message: str) -> Answer:
    body = json.dumps({"Type": "User", "message": message}).encode()
    return status, [("Content-Type", "application/json"), ("x-amzn-ErrorType", kind)], body


class LambdaApi:
    """The Invoke API of ``stack`` (a started ``LocalStack``), served from a thread of its own."""

    def __init__(self, stack: Any, port: int = 0, host: str = "127.0.0.1") -> None:
        from ._wsgi import WsgiServer  # waitress, the local extra's: the client below needs none

        self.stack = stack
        self.server = WsgiServer(self, host, port, name="lambda-api", threads=16, max_body=MAX_PAYLOAD)
        self.url = self.server.url

    def start(self) -> LambdaApi:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        found = INVOCATIONS.fullmatch(environ.get("PATH_INFO", ""))
        body = environ["wsgi.input"].read()
        if found is None or environ["REQUEST_METHOD"] != "POST":
            status, headers, data = _error(404, "UnknownOperationException", "Unknown operation")
        else:
            headers_in = {
                key[5:].replace("_", "-").lower(): value
                for key, value in environ.items()
                if key.startswith("HTTP_")
            }
            status, headers, data = self.answer(unquote(found.group(1)), headers_in, body)
        start_response(
            f"{status} {http.client.responses.get(status, '')}",
            [*headers, ("Content-Length", str(len(data)))],
        )
        return [data]

    def answer(self, name: str, headers: dict[str, str], body: bytes) -> Answer:
        """Lambda's answer to one ``Invoke`` of the function ``name`` with ``body``."""
        key = function_key(self.stack, name)
        if key is None:
            arn = f"arn:aws:lambda:{self.stack.region}:123456789012:function:{name}"
            return _error(404, "ResourceNotFoundException", f"Function not found: {arn}")
        if len(body) > MAX_PAYLOAD:
            return _error(413, "RequestEntityTooLargeException", "Request must be smaller than 6291456 bytes")
        try:
            event = json.loads(body) if body.strip() else {}
        except (ValueError, RecursionError) as exc:
            return _error(
                400, "InvalidRequestContentException", f"Could not parse request body into json: {exc}"
            )
        kind = headers.get("x-amz-invocation-type", "RequestResponse")
        if kind == "DryRun":
            return 204, [("x-amzn-RequestId", str(uuid.uuid4()))], b""
        if kind == "Event":
            self.stack.invoker.submit(self.stack.runtime(key), event, source="direct")
            return 202, [("x-amzn-RequestId", str(uuid.uuid4()))], b""
        if kind != "RequestResponse":
            return _error(400, "InvalidParameterValueException", f"Unsupported invocation type {kind}")
        return self._invoked(key, event, headers.get("x-amz-log-type") == "Tail")

    def _invoked(self, key: str, event: Any, tail: bool) -> Answer:
        lines: list[dict[str, Any]] = []
        unsubscribe = self.stack.log.subscribe(lambda line, _: lines.append(line)) if tail else None
        try:
            result = self.stack.invoke(key, event)
        finally:
            if unsubscribe is not None:
                unsubscribe()
        headers = [
            ("Content-Type", "application/json"),
            ("x-amzn-RequestId", result.request_id),
            ("X-Amz-Executed-Version", "$LATEST"),
            ("X-Lambda-Kit-Duration-Ms", f"{result.duration * 1000:.1f}"),
        ]
        if tail:
            own = [
                json.dumps(line, separators=(",", ":"))
                for line in lines
                if line.get("request_id") == result.request_id
            ]
            tail_bytes = "".join(f"{text}\n" for text in own).encode()[-TAIL_BYTES:]
            headers.append(("X-Amz-Log-Result", base64.b64encode(tail_bytes).decode()))
        if result.error is not None:
            error = {
                "errorMessage": str(result.error),
                "errorType": result.error_type,
                "requestId": result.request_id,
                "stackTrace": getattr(result.error, "stack_trace", []),
            }
            return 200, [*headers, ("X-Amz-Function-Error", "Unhandled")], json.dumps(error).encode()
        return 200, headers, json.dumps(result.response, default=str).encode()


# --- the client -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Invoked:
    """One synchronous invocation's answer: its request id, the response (None on an error), the
    error's type and message, the duration the stack measured."""

    request_id: str
    response: Any = None
    error_type: str | None = None
    error_message: str = ""
    duration: float = 0.0


class InvokeError(Exception):
    """The Invoke API refused the call (unknown function, bad payload ...); one line."""


def invoke(url: str, function: str, event: Any, timeout: float = 960.0) -> Invoked:
    """``event`` sent to ``function`` through the Invoke API at ``url``, synchronously."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
    started = time.perf_counter()
    try:
        connection.request(
            "POST",
            f"/2015-03-31/functions/{quote(function, safe='')}/invocations",
            body=json.dumps(event).encode(),
            headers={"Content-Type": "application/json"},
        )
        response = connection.getresponse()
        data = response.read()
    finally:
        connection.close()
    if response.status != 200:
        raise InvokeError(
            f"the running stack answered {response.status}: {data.decode(errors='replace')[:300]}"
        )
    request_id = response.getheader("x-amzn-RequestId", "")
    measured = response.getheader("X-Lambda-Kit-Duration-Ms")
    duration = float(measured) / 1000 if measured else time.perf_counter() - started
    answer = json.loads(data) if data else None
    if response.getheader("X-Amz-Function-Error"):
        error = answer if isinstance(answer, dict) else {}
        return Invoked(
            request_id,
            None,
            str(error.get("errorType", "Error")),
            str(error.get("errorMessage", "")),
            duration,
        )
    return Invoked(request_id, answer, duration=duration)
