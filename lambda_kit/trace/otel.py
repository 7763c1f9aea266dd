"""OpenTelemetry: one span per record, when the function runs with a tracer provider configured.

Nothing here imports OpenTelemetry: ``record_spans()`` looks, once per invocation, whether the
process already loaded ``opentelemetry.trace`` (the ADOT layer, ``opentelemetry-instrument`` or
the user's own setup do) and set a tracer provider; without one it answers None and the record
loop does nothing more. With one, each record gets a span named ``<source> process`` (CONSUMER; a
request: ``api request``, SERVER) with ``lambda_kit.source``, ``lambda_kit.record_id`` and
``lambda_kit.outcome``; the producer's context (``Record.context``) is its parent when the
invocation holds one record, and a link when it holds a batch (OpenTelemetry's messaging
convention). While it runs the span is current (spans of instrumented clients nest under it), and
the record's log keys and written ``traceparent`` carry its ids.
"""

from __future__ import annotations

import sys
from typing import Any

from ..record import Record
from .context import TraceContext


def record_spans() -> RecordSpans | None:
    """The span maker for this invocation, or None when OpenTelemetry is not configured."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    return RecordSpans(trace)


class RecordSpans:
    """Starts and ends the span of each record (``start`` / ``end``, around the function)."""

    __slots__ = ("trace", "context_api", "tracer")

    def __init__(self, trace: object) -> None:
        from opentelemetry import context as context_api  # an optional extra, already loaded by the process

        self.trace = trace
        self.context_api = context_api
        self.tracer = trace.get_tracer("lambda_kit")

    def start(self, record: Record, batch_size: int) -> tuple[Any, Any]:
        """Start the record's span and make it current: the producer's span (``Record.context``)
        is its parent when the invocation holds one record, a link when a batch."""
        trace = self.trace
        remote = self.remote(record.context)
        parent = (
            trace.set_span_in_context(trace.NonRecordingSpan(remote)) if remote and batch_size == 1 else None
        )
        api = record.source == "api"
        span = self.tracer.start_span(
            "api request" if api else f"{record.source} process",
            context=parent,
            kind=trace.SpanKind.SERVER if api else trace.SpanKind.CONSUMER,
            links=[trace.Link(remote)] if remote and batch_size > 1 else None,
            attributes={"lambda_kit.source": record.source, "lambda_kit.record_id": str(record.id)},
        )
        token = self.context_api.attach(trace.set_span_in_context(span))
        own = span.get_span_context()
        if own.is_valid:
            record.set_context(carried(own, record.context))
        return span, token

    def remote(self, incoming: TraceContext | None) -> Any:
        """The producer's span as OpenTelemetry's ``SpanContext``, or None without one."""
        if incoming is None or incoming.span_id is None:
            return None
        trace = self.trace
        return trace.SpanContext(
            incoming.trace_id,
            incoming.span_id,
            is_remote=True,
            trace_flags=trace.TraceFlags(0 if incoming.sampled is False else 1),
            trace_state=trace.TraceState.from_header([incoming.tracestate]) if incoming.tracestate else None,
        )

    def end(self, started: tuple[Any, Any], error: BaseException | None, outcome: str | None = None) -> None:
        """End the span: ``outcome`` (by default ``ok``, or ``failed`` with ``error``); an error or
        a ``server_error`` sets its status to ERROR."""
        span, token = started
        try:
            outcome = outcome or ("ok" if error is None else "failed")
            span.set_attribute("lambda_kit.outcome", outcome)
            if error is not None:
                span.record_exception(error)
            if error is not None or outcome == "server_error":
                span.set_status(
                    self.trace.Status(self.trace.StatusCode.ERROR, type(error).__name__ if error else outcome)
                )
            span.end()
        finally:
            self.context_api.detach(token)


def carried(own: object, incoming: TraceContext | None) -> TraceContext:
    """The record's context from now on: its own span's ids, with the incoming vendor's traits."""
    state = own.trace_state.to_header() if own.trace_state else None
    vendor = incoming.vendor if incoming is not None else "otel"
    datadog = incoming.datadog if incoming is not None else None
    return TraceContext(vendor, own.trace_id, own.span_id, own.trace_flags.sampled, state or None, datadog)
