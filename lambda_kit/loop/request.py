"""The per-request scope of ``api_handler``: the API's counterpart of the record loop.

It builds the request and its trace id, logs the request and its outcome, calls the function and
shapes the response: ``HTTPError`` gives its status, anything else a 500 that never carries the
exception's text; every response carries the trace header. What is HTTP about it (the request,
the response, the log lines' fields) comes from ``lambda_kit.sources.api``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from time import perf_counter
from typing import Any

from .. import log, metrics
from ..record import Record
from ..sources import api
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
        request = api.Request(event)
        trace_id, rejected, found = api.trace_of(request, trace_header)
        request.trace_id = trace_id
        record = Record(source="api", id=api.request_id(event, context), trace_id=trace_id, payload=request,
                        raw=event, rejected_trace_id=rejected, context=found)
        token = set_current_record(record)
        spans = record_spans()  # None unless OpenTelemetry is configured
        if spans is not None:
            span = spans.start(record, 1)
        if rejected is not None:
            warn_rejected_trace_id(record)
        if options.logger is not None:
            set_powertools_correlation(options.logger, trace_id)
        if options.log_event and log.enabled(20):
            log.emit("INFO", "request received", trace_id, api.request_fields(request, record))
        response, outcome, result = _respond(fn, options, request, record, context, trace_header, max_body,
                                             started)
        if outcome == "ok" and options.log_result and log.enabled(20):
            fields = api.result_fields(record, response, started)
            fields["result"] = log.clean(api.result_for_log(result))
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
    request: api.Request,
    record: Record,
    context: Any,
    trace_header: str,
    max_body: int | None,
    started: float,
) -> tuple[dict[str, Any], str, Any]:
    """(the response, "ok" | "client_error" | "server_error", what the function returned): the
    function's result shaped, or a failure's response with its line written (WARNING for a client
    error, ERROR for a server error). A body over ``max_body`` or that does not fit the model is
    answered before the function is called."""
    try:
        api.check_request(request, max_body, options.validate)
        result = fn(request, context)
        if result is not None and hasattr(result, "__await__"):
            from .event_loop import awaited  # an async def: its coroutine run on this thread's loop

            result = awaited(result)
        return api.shape_response(request, result, record.trace_id, trace_header), "ok", result
    except Exception as exc:
        response = api.failure_response(request, exc, trace_header)
        level = api.failure_level(response)
        if log.enabled(40 if level == "ERROR" else 30):
            fields = api.failure_fields(record, response, started, exc)
            log.emit(level, "request failed", record.trace_id, fields)
        return response, "server_error" if level == "ERROR" else "client_error", None
