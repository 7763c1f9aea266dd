"""One invocation of ``websocket_handler``: the route event is one record on the record path.

``WebSocketPath`` is ``RecordPath`` with the WebSocket steps: the ``request received`` line (route
key, connection, the body as JSON when it is, masked), ``model=`` validating the JSON body
(``message.model``; 422 when it does not fit), the integration response shaped from what the
function returned (``response_of``), and a failure answered instead of raised: ``HTTPError``'s
status (a ``$connect`` refused with it), anything else a 500 that never carries the exception's
text. Every response carries the trace header.
"""

from __future__ import annotations

import binascii
from collections.abc import Sequence
from typing import Any

from ... import codec, log
from ...context import LambdaContext
from ...errors import HTTPError, InvalidPayload, UndecodableRecord
from ...loop.invocation import Invocation
from ...loop.options import Options
from ...loop.path import Function, RecordPath, duration_ms, run_now
from ...record import Record
from . import WebSocketSource
from .message import WebSocketMessage

BINARY = (bytes, bytearray, memoryview)


def run_route(
    adapters: Sequence[WebSocketSource],
    function: Function,
    options: Options,
    trace_header: str,
    event: object,
    context: LambdaContext | None,
) -> dict[str, Any]:
    """One route event: the integration response API Gateway reads."""
    with Invocation(options, context) as invocation:
        adapter = invocation.recognize(adapters, event)
        path = WebSocketPath(function, context, options, adapter, trace_header)
        invocation.outcome = path.outcome
        run_now(path.run_record(adapter.record(event, context, trace_header), 0))
        return path.response


def response_of(result: Any, trace_id: str, trace_header: str) -> dict[str, Any]:
    """What the function returned as an integration response: a dict with ``statusCode`` as it
    is; ``None`` a 200 with no body; text as the body, bytes base64-encoded, anything else JSON.
    ``TypeError`` for a ``statusCode`` that is no HTTP status."""
    if type(result) is dict and "statusCode" in result:
        response = dict(result)
        status = response["statusCode"]
        if type(status) is not int or not 100 <= status <= 599:
            raise TypeError(f"the function returned statusCode {status!r:.40}: an HTTP status is 100-599")
    else:
        response = {"statusCode": 200} if result is None else {"statusCode": 200, "body": result}
    body = response.get("body")
    if isinstance(body, BINARY):
        response["body"] = binascii.b2a_base64(bytes(body), newline=False).decode("ascii")
        response["isBase64Encoded"] = True
    elif body is not None and not isinstance(body, str):
        response["body"] = codec.dumps(body)
    headers = response.get("headers")
    response["headers"] = {**(headers if type(headers) is dict else {}), trace_header: trace_id}
    return response


class WebSocketPath(RecordPath):
    """The record path of one route event; ``response`` is what it answers."""

    received_message = "request received"
    processed_message = "request processed"

    def __init__(
        self,
        function: Function,
        context: LambdaContext | None,
        options: Options,
        adapter: WebSocketSource,
        trace_header: str,
    ) -> None:
        super().__init__(function, context, options, adapter, 1)
        self.trace_header = trace_header
        self.response: dict[str, Any] = {}
        self.status_outcome = "server_error"

    def received_fields(self, record: Record) -> dict[str, Any]:
        message: WebSocketMessage = record.payload
        fields: dict[str, Any] = {
            "source": "websocket",
            "route_key": log.clean(message.route_key),
            "event_type": log.clean(message.event_type),
            "connection_id": log.clean(message.connection_id),
        }
        if message.headers:
            fields["headers"] = log.clean(dict(message.headers))
        if message.event.get("body") is not None:
            fields["body"] = log.clean(body_for_log(message))
        return fields

    def call(self, record: Record) -> Any:
        if record.error is not None:
            raise UndecodableRecord(record.error)
        message: WebSocketMessage = record.payload
        if self.options.validate is not None:
            try:
                message.model = self.options.validate(message.json)
            except InvalidPayload as exc:
                raise HTTPError(422, f"message body does not fit {exc.model}: {exc.listing}") from None
        return self.function(message, self.context)

    def returned(self, record: Record, result: Any, started: float) -> None:
        self.response = response_of(result, record.trace_id, self.trace_header)
        self.answered(record, None)
        if self.log_result:
            fields = self.result_fields(started)
            fields["result"] = log.clean(result)
            log.emit("INFO", self.processed_message, fields=fields)

    def failed(self, record: Record, error: BaseException, started: float, index: int) -> None:
        """Answered, never raised: ``HTTPError``'s status with a WARNING (4xx) line, or a 500 that
        says nothing of the exception, with an ERROR line that says all."""
        status = error.status if isinstance(error, HTTPError) and 400 <= error.status <= 599 else 500
        message = error.message if isinstance(error, HTTPError) else "Internal Server Error"
        body = codec.dumps({"error": message, "trace_id": record.trace_id})
        self.response = {"statusCode": status, "headers": {self.trace_header: record.trace_id}, "body": body}
        self.answered(record, error)
        fields = self.result_fields(started)
        if isinstance(error, HTTPError):
            fields["error"] = log.clean(error.message)
        else:
            fields.update(log.error_fields(error))
        log.emit("ERROR" if status >= 500 else "WARN", "request failed", fields=fields)

    def answered(self, record: Record, error: BaseException | None) -> None:
        status = self.response["statusCode"]
        self.status_outcome = "server_error" if status >= 500 else "ok" if status < 400 else "client_error"
        if self.status_outcome == "server_error":
            self.outcome.failures.append((record, error or RuntimeError(f"answered {status}")))
        else:
            self.outcome.processed += 1

    def result_fields(self, started: float) -> dict[str, Any]:
        return {
            "source": "websocket",
            "status": self.response["statusCode"],
            "outcome": self.status_outcome,
            "duration_ms": duration_ms(started),
        }

    def span_outcome(self, error: BaseException | None) -> str | None:
        return self.status_outcome


def body_for_log(message: WebSocketMessage) -> Any:
    """The body as the log shows it: its JSON value when it is JSON, else its text."""
    try:
        return message.json
    except HTTPError:
        try:
            return message.body
        except HTTPError:
            return f"<{len(message.event.get('body') or '')} base64 characters, not UTF-8 text>"
