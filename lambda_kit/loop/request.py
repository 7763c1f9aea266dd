"""One invocation of ``api_handler``: the request is one record on the record path.

``RequestPath`` is ``RecordPath`` with the HTTP steps: the ``request received`` line, the call
(413 for a body over ``max_body``, 422 for one that does not fit the model), the response shaped
from what the function returned, and a failure answered instead of raised: ``HTTPError`` gives
its status, anything else a 500 that never carries the exception's text. Every response carries
the trace header.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from time import perf_counter
from typing import Any
from urllib.parse import parse_qsl

from .. import codec, log, metrics
from ..errors import HTTPError, InvalidPayload
from ..record import Record
from ..sources import api as api_source
from ..sources.base import Source
from .batch import recognize
from .options import Options
from .path import RecordPath, run_now

__all__ = ["RequestPath", "run_request"]


def run_request(
    adapters: Sequence[Source],
    function: Callable[[Any, Any], Any],
    options: Options,
    trace_header: str,
    max_body: int | None,
    event: Any,
    context: Any,
) -> dict[str, Any]:
    """One request: the path runs here; an ``async def``'s coroutine runs on this thread's loop
    (a handler called inside a running loop answers 500, saying why in its ERROR line)."""
    token, function_name = log.enter_invocation(context)
    path: RequestPath | None = None
    try:
        recognize(options, adapters, event)
        path = RequestPath(function, context, options, adapters[0], trace_header, max_body)
        run_now(path.run_record(request_record(event, context, trace_header), 0))
        return path.response
    finally:
        if path is not None and metrics.enabled(options.metrics):
            failed = path.status_outcome == "server_error"
            metrics.count(function_name, "api", 0 if failed else 1, 1 if failed else 0, 0)
        log.flush()
        log.leave_invocation(token)


def request_record(event: Any, context: Any, trace_header: str) -> Record:
    request = api_source.Request(event)
    trace_id, rejected, found = api_source.trace_of(request, trace_header)
    request.trace_id = trace_id
    return Record(source="api", id=api_source.request_id(event, context), trace_id=trace_id, payload=request, raw=event,
                  rejected_trace_id=rejected, context=found)


class RequestPath(RecordPath):
    """The record path of one HTTP request; ``response`` is what it answers."""

    received_message = "request received"
    processed_message = "request processed"

    def __init__(self, function: Callable[[Any, Any], Any], context: Any, options: Options, adapter: Any,
                 trace_header: str, max_body: int | None) -> None:
        super().__init__(function, context, options, adapter, 1)
        self.trace_header = trace_header
        self.max_body = max_body
        self.response: dict[str, Any] = {}
        self.status_outcome = "server_error"

    def received_fields(self, record: Record) -> dict[str, Any]:
        return request_fields(record.payload)

    def call(self, record: Record) -> Any:
        request = record.payload
        if self.max_body is not None and request.body_size > self.max_body:
            raise HTTPError(413, f"request body is larger than {self.max_body} bytes")
        if self.options.validate is not None:
            request.model = validated(self.options.validate, request)
        return self.function(request, self.context)

    def returned(self, record: Record, result: Any, started: float) -> None:
        self.response = api_source.shape_response(record.payload, result, record.trace_id, self.trace_header)
        self.status_outcome = "ok"
        if self.log_result:
            fields = result_fields(self.response, started)
            fields["result"] = log.clean(result_for_log(result))
            log.emit("INFO", self.processed_message, fields=fields)

    def failed(self, record: Record, error: BaseException, started: float, index: int) -> None:
        """``HTTPError``: its status, its line a WARNING (4xx) or ERROR; anything else: a 500
        that says nothing of the exception, and an ERROR line that says all."""
        request = record.payload
        if isinstance(error, HTTPError):
            status = error.status if 400 <= error.status <= 599 else 500
            self.response = api_source.error_response(request, status, error.message, record.trace_id,
                                                      self.trace_header, error.headers)
            fields = {**result_fields(self.response, started), "error": log.clean(error.message)}
        else:
            self.response = api_source.error_response(request, 500, "Internal Server Error", record.trace_id,
                                                      self.trace_header)
            fields = {**result_fields(self.response, started), **log.error_fields(error)}
        self.status_outcome = fields["outcome"]
        level = "WARNING" if self.status_outcome == "client_error" else "ERROR"
        if log.enabled(log.LEVELS[level]):
            log.emit(level, "request failed", fields=fields)

    def span_outcome(self, error: BaseException | None) -> str | None:
        return self.status_outcome


def validated(validate: Callable[[Any], Any], request: api_source.Request) -> Any:
    """The JSON body (400/415 when it is not JSON) validated; 422 naming the fields when it does not fit."""
    try:
        return validate(request.json)
    except InvalidPayload as exc:
        raise HTTPError(422, f"request body does not fit {exc.model}: {exc.listing}") from None


def result_for_log(result: Any) -> Any:
    """What the response body was made from: the value the function returned, or the body of a
    response it shaped itself (decoded when it is JSON text, so its secrets are masked)."""
    if isinstance(result, dict) and "statusCode" in result:
        return body_for_log(result.get("body"))
    return result


def body_for_log(body: Any) -> Any:
    """A JSON body decoded, so its secrets are masked like any payload's; else as it is."""
    if isinstance(body, str) and body[:1] in ("{", "["):
        try:
            return codec.loads(body)
        except Exception:
            pass
    return body


def request_fields(request: api_source.Request) -> dict[str, Any]:
    try:
        body: Any = request.body
    except HTTPError:  # binary, or base64 that is not: said, not written out
        body = f"<{request.body_size} bytes, not UTF-8 text>"
    if body[:1] in ("{", "["):
        try:
            body = request.json
        except HTTPError:
            body = body_for_log(body)
    elif body and "x-www-form-urlencoded" in request.headers.get("content-type", ""):
        # logged as its fields, so a password=... in a form is masked like a JSON one
        body = dict(parse_qsl(body, keep_blank_values=True))
    return log.clean({
        "source": "api", "shape": request.shape, "method": request.method, "path": request.path,
        "query": request.query, "headers": request.headers, "body": body,
    })


def result_fields(response: dict[str, Any], started: float) -> dict[str, Any]:
    status = response.get("statusCode")
    known = isinstance(status, int)
    return {
        "source": "api",
        "status": log.clean(status),
        "outcome": "ok" if known and status < 400 else "client_error" if known and status < 500 else "server_error",
        "duration_ms": round((perf_counter() - started) * 1000, 3),
    }

