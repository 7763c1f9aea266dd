"""One invocation of ``api_handler``: the request is one record on the record path.

``RequestPath`` is ``RecordPath`` with the HTTP steps, each from ``lambda_kit.sources.api``: the
``request received`` line, the checks before the call (413 for a body over ``max_body``, 422 for
one that does not fit the model), the response shaped from what the function returned, and a
failure answered instead of raised: ``HTTPError`` gives its status, anything else a 500 that never
carries the exception's text. Every response carries the trace header.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import log, metrics
from ..record import Record
from ..sources.base import Source
from .batch import recognize
from .options import Options
from .path import RecordPath, run_now


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
        adapter = recognize(options, adapters, event)
        path = RequestPath(function, context, options, adapter, trace_header, max_body)
        run_now(path.run_record(adapter.record(event, context, trace_header), 0))
        return path.response
    finally:
        backends = metrics.enabled(options.metrics)
        if path is not None and backends:
            failed = path.status_outcome == "server_error"
            counts = metrics.request_counts(path.response.get("statusCode"), failed)
            metrics.count(function_name, "api", counts, backends)
        metrics.flush()
        log.flush()
        log.leave_invocation(token)


class RequestPath(RecordPath):
    """The record path of one HTTP request; ``response`` is what it answers. Each HTTP step is the
    adapter's (``lambda_kit.sources.api.ApiSource``)."""

    received_message = "request received"
    processed_message = "request processed"

    def __init__(
        self,
        function: Callable[[Any, Any], Any],
        context: Any,
        options: Options,
        adapter: Any,
        trace_header: str,
        max_body: int | None,
    ) -> None:
        super().__init__(function, context, options, adapter, 1)
        self.trace_header = trace_header
        self.max_body = max_body
        self.response: dict[str, Any] = {}
        self.status_outcome = "server_error"

    def received_fields(self, record: Record) -> dict[str, Any]:
        return self.adapter.received_fields(record.payload)

    def call(self, record: Record) -> Any:
        self.adapter.check(record.payload, self.max_body, self.options.validate)
        return self.function(record.payload, self.context)

    def returned(self, record: Record, result: Any, started: float) -> None:
        self.response, fields = self.adapter.respond(record.payload, result, self.trace_header, started)
        self.status_outcome = "ok"
        if record.outcome != "ok":  # a duplicate answered from an @idempotent function's table
            fields["outcome"] = record.outcome
        if self.log_result:
            fields["result"] = log.clean(fields["result"])
            log.emit("INFO", self.processed_message, fields=fields)

    def failed(self, record: Record, error: BaseException, started: float, index: int) -> None:
        """Answered, never raised: ``HTTPError``'s status with a WARNING (4xx) or ERROR line, or a
        500 that says nothing of the exception, with an ERROR line that says all."""
        self.response, level, fields = self.adapter.fail(record.payload, error, self.trace_header, started)
        self.status_outcome = "server_error" if level == "ERROR" else "client_error"
        if log.enabled(log.LEVELS[level]):
            log.emit(level, "request failed", fields=fields)

    def span_outcome(self, error: BaseException | None) -> str | None:
        return self.status_outcome
