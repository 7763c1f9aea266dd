"""One invocation of ``api_handler``: the request is one record on the record path.

``RequestPath`` is ``RecordPath`` with the HTTP steps of this package: the ``request received``
line (``fields.request_fields``), the checks before the call (413 for a body over ``max_body``, 422
for one that does not fit the model: ``fields.check_request``), the response shaped from what the
function returned (``response.shape_response``), and a failure answered instead of raised
(``fields.failure_response``): ``HTTPError`` gives its status, anything else a 500 that never
carries the exception's text. Every response carries the trace header.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ... import log
from ...context import LambdaContext
from ...loop.invocation import Invocation
from ...loop.options import Options
from ...loop.path import Function, RecordPath, duration_ms, run_now
from ...record import Record
from . import ApiSource
from .fields import (
    check_request,
    failure_fields,
    failure_level,
    failure_response,
    outcome_of,
    request_fields,
    result_fields,
    result_for_log,
)
from .request import Request
from .response import checked_trace_header, shape_response


def request_runner(
    adapters: Sequence[ApiSource], options: Options, trace_header: str, max_body: int | None
) -> Callable[[Function, Any, LambdaContext | None], dict[str, Any]]:
    """``api_handler``'s invocation, ``run(function, event, context)``, once ``trace_header`` is
    checked (when the function is decorated: a name that is no HTTP header is refused then)."""
    checked_trace_header(trace_header)

    def run(function: Function, event: object, context: LambdaContext | None) -> dict[str, Any]:
        return run_request(adapters, function, options, trace_header, max_body, event, context)

    return run


def run_request(
    adapters: Sequence[ApiSource],
    function: Function,
    options: Options,
    trace_header: str,
    max_body: int | None,
    event: object,
    context: LambdaContext | None,
) -> dict[str, Any]:
    """One request: the path runs here; an ``async def``'s coroutine runs on this thread's loop
    (a handler called inside a running loop answers 500, saying why in its ERROR line)."""
    with Invocation(options, context) as invocation:
        adapter = invocation.recognize(adapters, event)
        path = RequestPath(function, context, options, adapter, trace_header, max_body)
        invocation.outcome = path.outcome
        run_now(path.run_record(adapter.record(event, context, trace_header), 0))
        return path.response


class RequestPath(RecordPath):
    """The record path of one HTTP request (the record's payload is its ``Request``); ``response``
    is what it answers. Its outcome counts the request as processed unless it answered a server
    error."""

    received_message = "request received"
    processed_message = "request processed"

    def __init__(
        self,
        function: Function,
        context: LambdaContext | None,
        options: Options,
        adapter: ApiSource,
        trace_header: str,
        max_body: int | None,
    ) -> None:
        super().__init__(function, context, options, adapter, 1)
        self.trace_header = trace_header
        self.max_body = max_body
        self.response: dict[str, Any] = {}
        self.status_outcome = "server_error"

    def received_fields(self, record: Record) -> dict[str, Any]:
        return request_fields(record.payload)

    def call(self, record: Record) -> Any:
        check_request(record.payload, self.max_body, self.options.validate)
        return self.function(record.payload, self.context)

    def returned(self, record: Record, result: Any, started: float) -> None:
        request: Request = record.payload
        self.response = shape_response(request, result, request.trace_id, self.trace_header)
        self.answered(record, None)
        if self.log_result:
            fields = result_fields(self.response, duration_ms(started))
            if record.outcome != "ok":  # a duplicate answered from an @idempotent function's table
                fields["outcome"] = record.outcome
            fields["result"] = None if request.method == "HEAD" else log.clean(result_for_log(result))
            log.emit("INFO", self.processed_message, fields=fields)

    def failed(self, record: Record, error: BaseException, started: float, index: int) -> None:
        """Answered, never raised: ``HTTPError``'s status with a WARN (4xx) or ERROR line, or a 500
        that says nothing of the exception, with an ERROR line that says all. An ``HTTPError`` whose
        answer cannot go out (a header HTTP forbids, a message over Lambda's limit) is a 500 whose
        line says why."""
        try:
            self.response = failure_response(record.payload, error, self.trace_header)
        except ValueError as refused:
            self.response, error = failure_response(record.payload, refused, self.trace_header), refused
        level = failure_level(self.response)
        self.answered(record, error)
        if log.enabled(log.LEVELS[level]):
            log.emit(
                level, "request failed", fields=failure_fields(self.response, duration_ms(started), error)
            )

    def answered(self, record: Record, error: BaseException | None) -> None:
        """The request's outcome, what its metrics count: the status it answered; a server error
        the function failed with is its failure (one it returned itself is an answer)."""
        status = self.response["statusCode"]  # an int: shape_response and error_response make it one
        self.status_outcome = outcome_of(status)
        self.outcome.status = status
        if error is not None and self.status_outcome == "server_error":
            self.outcome.failures.append((record, error))

    def span_outcome(self, error: BaseException | None) -> str | None:
        return self.status_outcome
