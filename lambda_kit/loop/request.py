"""The per-request scope of ``api_handler``: the API's counterpart of the record loop.

It builds the request and its trace id, logs the request and its outcome, calls the function and
shapes the response: ``HTTPError`` gives its status, anything else a 500 that never carries the
exception's text; every response carries the trace header.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from time import perf_counter
from typing import Any

from .. import codec, log, metrics
from ..errors import HTTPError, InvalidPayload
from ..record import Record
from ..sources import api as api_source
from ..sources.base import Source
from ..trace import reset_current_record, set_current_record
from . import Options, recognize, record_spans, set_powertools_correlation, warn_rejected_trace_id


def run_request(
    adapters: Sequence[Source],
    fn: Callable[[Any, Any], Any],
    options: Options,
    trace_header: str,
    max_body: int | None,
    event: Any,
    context: Any,
) -> dict[str, Any]:
    invocation_token, function_name = log.enter_invocation(context)
    token = span = spans = None
    outcome = "server_error"
    try:
        recognize("api_handler", adapters, event, options)
        started = perf_counter()
        request = api_source.Request(event)
        trace_id, rejected, found = api_source.trace_of(request, trace_header)
        request.trace_id = trace_id
        record = Record(source="api", id=api_source.request_id(event, context), trace_id=trace_id, payload=request, raw=event, error=None, attempt=0, rejected_trace_id=rejected, context=found)
        token = set_current_record(record)
        spans = record_spans()  # None unless OpenTelemetry is configured
        if spans is not None:
            span = spans.start(record, 1)
        if rejected is not None:
            warn_rejected_trace_id(record)
        if options.logger is not None:
            set_powertools_correlation(options.logger, trace_id)
        if options.log_event and log.enabled(20):
            log.emit("INFO", "request received", trace_id, _request_fields(request, record))
        response, outcome, result = _respond(fn, options, request, record, context, trace_header, max_body, started)
        if outcome == "ok" and options.log_result and log.enabled(20):
            fields = _result_fields(record, response, started, None)
            fields["result"] = log.clean(_result_for_log(result))
            log.emit("INFO", "request processed", trace_id, fields)
        return response
    finally:
        if span is not None:
            spans.end(span, None, outcome)
        if token is not None:
            reset_current_record(token)
            if metrics.enabled(options.metrics):
                failed = outcome == "server_error"
                metrics.count(function_name, "api", 0 if failed else 1, 1 if failed else 0, 0)
        log.flush()
        log.leave_invocation(invocation_token)


def _respond(
    fn: Callable[[Any, Any], Any],
    options: Options,
    request: api_source.Request,
    record: Record,
    context: Any,
    trace_header: str,
    max_body: int | None,
    started: float,
) -> tuple[dict[str, Any], str, Any]:
    """(the response, "ok" | "client_error" | "server_error", what the function returned): the
    function's result shaped, an ``HTTPError`` as its status (its line written), anything else a
    500 that says nothing of the exception (its ERROR line written). With a model, the body is
    validated first: one that does not fit answers 422 naming the fields, and the function is not
    called."""
    trace_id = record.trace_id
    try:
        if max_body is not None and request.body_size > max_body:
            raise HTTPError(413, f"request body is larger than {max_body} bytes")
        if options.validate is not None:
            request.model = _validated(options.validate, request)
        result = fn(request, context)
        if result is not None and hasattr(result, "__await__"):
            from .event_loop import awaited  # an async def: its coroutine run on this thread's loop

            result = awaited(result)
        return api_source.shape_response(request, result, trace_id, trace_header), "ok", result
    except HTTPError as exc:
        status = exc.status if 400 <= exc.status <= 599 else 500
        response = api_source.error_response(request, status, exc.message, trace_id, trace_header, exc.headers)
        level = "ERROR" if status >= 500 else "WARNING"
        if log.enabled(log.LEVELS[level]):
            log.emit(level, "request failed", trace_id, _result_fields(record, response, started, exc.message))
        return response, "server_error" if status >= 500 else "client_error", None
    except Exception as exc:
        response = api_source.error_response(request, 500, "Internal Server Error", trace_id, trace_header)
        fields = _result_fields(record, response, started, None)
        fields.update(log.error_fields(exc))
        log.emit("ERROR", "request failed", trace_id, fields)
        return response, "server_error", None


def _result_for_log(result: Any) -> Any:
    """What the response body was made from, masked like any payload once cleaned: the value the
    function returned (not its JSON decoded again: a codec's decoder may not give it back exactly),
    the body of a response it shaped itself, decoded when it is JSON text."""
    if isinstance(result, dict) and "statusCode" in result:
        return _body_for_log(result.get("body"))
    return result


def _validated(validate: Callable[[Any], Any], request: api_source.Request) -> Any:
    """The JSON body (400/415 when it is not JSON) validated; 422 naming the fields when it does not fit."""
    try:
        return validate(request.json)
    except InvalidPayload as exc:
        raise HTTPError(422, f"request body does not fit {exc.model}: {exc.listing}") from None


def _body_for_log(body: Any) -> Any:
    """A JSON body decoded, so its secrets are masked like any payload's; else as it is."""
    if isinstance(body, str) and body[:1] in ("{", "["):
        try:
            return codec.loads(body)
        except Exception:
            pass
    return body


def _request_fields(request: api_source.Request, record: Record) -> dict[str, Any]:
    try:
        body: Any = request.body
    except HTTPError:  # binary, or base64 that is not: said, not written out
        body = f"<{request.body_size} bytes, not UTF-8 text>"
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
        "shape": request.shape,
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
