"""The per-request scope of ``api_handler``: the API's counterpart of the record loop.

It builds the request and its trace id, logs the request and its outcome, calls the function and
shapes the response: ``HTTPError`` gives its status, anything else a 500 that never carries the
exception's text; every response carries the trace header.
"""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter
from typing import Any

from . import codec, log, metrics
from .decorators import invocation_of
from .errors import HTTPError
from .loop import Options, set_powertools_correlation, warn_rejected_trace_id
from .record import Record
from .sources import api as api_source
from .trace import _record


def run_request(
    fn: Callable[[Any, Any], Any],
    options: Options,
    trace_header: str,
    max_body: int | None,
    event: Any,
    context: Any,
) -> dict[str, Any]:
    invocation = invocation_of(context)
    invocation_token = log._invocation.set(invocation)
    started = perf_counter()
    request = api_source.Request(event, trace_header)
    trace_id, rejected = api_source.trace_of(request, trace_header)
    request.trace_id = trace_id
    record = Record("api", api_source.request_id(event, context), trace_id, request, event, None, 0, rejected)
    token = _record.set(record)
    failed = False
    try:
        if rejected is not None:
            warn_rejected_trace_id(record)
        if options.logger is not None:
            set_powertools_correlation(options.logger, trace_id)
        if options.log_event and log.enabled(20):
            log.emit("INFO", "request received", trace_id, _request_fields(request, record))
        try:
            if max_body is not None and len(request.body.encode("utf-8", "surrogatepass")) > max_body:
                raise HTTPError(413, f"request body is larger than {max_body} bytes")
            result = fn(request, context)
            response = api_source.shape_response(result, trace_id, trace_header)
        except HTTPError as exc:
            status = exc.status if 400 <= exc.status <= 599 else 500
            response = api_source.error_response(status, exc.message, trace_id, trace_header, exc.headers)
            failed = status >= 500
            level = "ERROR" if failed else "WARNING"
            if log.enabled(log.LEVELS[level]):
                log.emit(level, "request failed", trace_id, _result_fields(record, response, started, exc.message))
            return response
        except Exception as exc:
            failed = True
            response = api_source.error_response(500, "Internal Server Error", trace_id, trace_header)
            fields = _result_fields(record, response, started, None)
            fields.update(log.error_fields(exc))
            log.emit("ERROR", "request failed", trace_id, fields)
            return response
        if options.log_result and log.enabled(20):
            fields = _result_fields(record, response, started, None)
            fields["result"] = log.clean(_result_for_log(result))
            log.emit("INFO", "request processed", trace_id, fields)
        return response
    finally:
        _record.reset(token)
        if metrics.enabled(options.metrics):
            metrics.count(invocation[0], "api", 0 if failed else 1, 1 if failed else 0, 0)
        log.flush()
        log._invocation.reset(invocation_token)


def _result_for_log(result: Any) -> Any:
    """What the response body was made from, masked like any payload once cleaned: the value the
    function returned (not its JSON decoded again: a codec's decoder may not give it back exactly),
    the body of a response it shaped itself, decoded when it is JSON text."""
    if isinstance(result, dict) and "statusCode" in result:
        return _body_for_log(result.get("body"))
    return result


def _body_for_log(body: Any) -> Any:
    """A JSON body decoded, so its secrets are masked like any payload's; else as it is."""
    if isinstance(body, str) and body[:1] in ("{", "["):
        try:
            return codec.loads(body)
        except Exception:
            pass
    return body


def _request_fields(request: api_source.Request, record: Record) -> dict[str, Any]:
    body: Any = request.body
    if body[:1] in ("{", "["):
        try:
            body = request.json
        except HTTPError:
            body = _body_for_log(body)
    elif body and "x-www-form-urlencoded" in request.headers.get("content-type", ""):
        # logged as its fields, so a password=... in a form is masked like a JSON one
        from urllib.parse import parse_qsl

        body = dict(parse_qsl(body, keep_blank_values=True))
    return {
        "source": "api",
        "record_id": record.id,
        "method": log.clean(request.method),
        "path": log.clean(request.path),
        "query": log.clean(request.query),
        "headers": log.clean(request.headers),
        "body": log.clean(body),
    }


def _result_fields(record: Record, response: dict[str, Any], started: float, error: str | None) -> dict[str, Any]:
    status = response.get("statusCode")
    fields: dict[str, Any] = {
        "source": "api",
        "record_id": record.id,
        "status": log.clean(status),  # the function's own value: cleaned like any logged value
        "outcome": "ok" if isinstance(status, int) and status < 400 else "client_error" if isinstance(status, int) and status < 500 else "server_error",
        "duration_ms": round((perf_counter() - started) * 1000, 3),
    }
    if error is not None:
        fields["error"] = log.clean(error)
    return fields
