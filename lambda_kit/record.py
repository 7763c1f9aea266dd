"""The normalized record every source adapter produces, and the outcome of a batch of them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .trace.context import TraceContext


class Record:
    """One unit of work: what the wrapped function receives, plus what the loop needs to route it.

    ``id`` is the identifier the source's own failure report uses; ``error`` is set when the
    record could not be decoded (it then fails without reaching the function, and ``payload``
    holds the raw part that could not be decoded, for its ERROR line);
    ``rejected_trace_id`` keeps an invalid trace id that was found and not used; ``group`` is the
    ordering group (SQS FIFO ``MessageGroupId``, Kafka topic-partition): after a failure, later
    records of the same group are not processed, so they are retried in order; ``report_id``, when
    set, is what the failure report names this record by instead of ``id`` (EventBridge Pipes names
    stream records by ``eventID``; a KPL user record is named by its aggregate's sequence number).
    ``context`` is the tracer's context the producer sent (W3C, Datadog, X-Ray; see
    ``trace_context``), else None; ``log_keys`` the vendors' correlation keys every log line of
    the record carries (None without a context). ``buffered`` holds its lines below WARN while
    the decorator's ``log_buffer`` keeps them (``lambda_kit.log.line``), else None. ``outcome``
    is what its ``record processed`` line says: ``"ok"``, or ``"duplicate"`` when an
    ``@idempotent`` function answered it from its table.
    """

    __slots__ = (
        "source",
        "id",
        "trace_id",
        "payload",
        "raw",
        "error",
        "attempt",
        "rejected_trace_id",
        "group",
        "report_id",
        "context",
        "log_keys",
        "line_keys",
        "buffered",
        "buffered_size",
        "buffered_dropped",
        "outcome",
    )

    def __init__(
        self,
        *,
        source: str,
        id: str,
        trace_id: str,
        payload: Any = None,
        raw: object = None,
        error: str | None = None,
        attempt: int = 0,
        rejected_trace_id: object = None,
        group: str | None = None,
        report_id: str | None = None,
        context: TraceContext | None = None,
    ) -> None:
        self.source = source
        self.id = id
        self.trace_id = trace_id
        self.payload = payload
        self.raw = raw
        self.error = error
        self.attempt = attempt
        self.rejected_trace_id = rejected_trace_id
        self.group = group
        self.report_id = report_id
        self.context = context
        self.log_keys = None
        self.line_keys: dict[str, Any] | None = None
        self.buffered: list[str] | None = None  # its lines below WARN, while they are held
        self.buffered_size = 0
        self.buffered_dropped = 0
        self.outcome = "ok"
        if context is not None:
            self.set_context(context)

    def set_context(self, context: TraceContext) -> None:
        """Carry ``context`` (a ``trace_context.TraceContext``) and its log keys from now on."""
        self.context = context
        self.log_keys = context.log_keys()
        self.line_keys = None  # made again, with these keys

    def __repr__(self) -> str:
        return f"Record(source={self.source!r}, id={self.id!r}, trace_id={self.trace_id!r})"


class Outcome:
    """What became of a batch: failures (with their exceptions), records not reached, counts; and,
    for a source that answers with each record's result (``Source.keeps_results``: Firehose's
    transformed data), each processed record with what the function returned."""

    __slots__ = ("failures", "skipped", "processed", "retried", "unstarted", "results", "status")

    def __init__(self) -> None:
        self.failures: list[tuple[Record, BaseException]] = []
        self.skipped: list[Record] = []
        self.results: list[tuple[Record, Any]] = []
        self.processed = 0
        self.retried = 0
        self.unstarted = 0  # of the failures, those not started for lack of time
        self.status: int | None = None  # a request's: the HTTP status it was answered with
