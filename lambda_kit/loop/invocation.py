"""One invocation of a decorated function, whatever its source: the context the batch path
(``lambda_kit.loop.batch``) and the request path (``lambda_kit.sources.api.path``) share.

Entering it stamps every line written until it ends with the function's name and the request id;
``recognize`` picks the adapter that recognizes the event (any other event is refused: one ERROR
line, ``UnsupportedEvent`` raised, never acknowledged); leaving it sends the invocation's counts to
the metrics (``outcome``, filled by the path) and flushes the lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, NoReturn, TypeVar

from .. import log, metrics
from ..errors import UnsupportedEvent
from ..record import Outcome
from ..sources import describe
from ..sources.base import Source
from .options import Options

if TYPE_CHECKING:
    from ..context import LambdaContext

S = TypeVar("S", bound=Source)


class Invocation:
    """``with Invocation(options, context) as invocation:`` around one invocation."""

    def __init__(self, options: Options, context: LambdaContext | None) -> None:
        self.options = options
        self.context = context
        self.adapter: Source | None = None
        self.outcome = Outcome()

    def __enter__(self) -> Invocation:
        self.token, self.function_name = log.enter_invocation(self.context)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        try:
            backends = metrics.enabled(self.options.metrics)
            if self.adapter is not None and backends:
                counts = metrics.counts_of(self.outcome)
                metrics.count(self.function_name, self.adapter.name, counts, backends)
            metrics.flush()  # the user's own metrics of this invocation (``metrics.add``)
            log.flush()
        finally:
            log.leave_invocation(self.token)

    def recognize(self, adapters: Sequence[S], event: object) -> S:
        """The first of ``adapters`` that recognizes ``event``; any other event is refused."""
        for adapter in adapters:
            if adapter.recognizes(event):
                self.adapter = adapter
                return adapter
        self.refuse(adapters, event)

    def refuse(self, adapters: Sequence[Source], event: object) -> NoReturn:
        """Log one ERROR line saying what the event looks like (its shape, never its values) and
        which decorator fits, then raise ``UnsupportedEvent``: Lambda retries the event and its DLQ
        or on-failure destination keeps it."""
        decorator = self.options.decorator
        found, fits = describe(event)
        expected = " or ".join(dict.fromkeys(adapter.label for adapter in adapters))
        error = UnsupportedEvent(decorator, expected, found, fits)  # fits is another decorator, or None
        log.emit(
            "ERROR",
            "event not processed: unsupported event",
            fields={
                "decorator": decorator,
                "error_type": "UnsupportedEvent",
                "error": log.clean(str(error)),
                "event_shape": log.clean(log.outline(event)),
            },
        )
        backends = metrics.enabled(self.options.metrics)
        if backends:
            metrics.count(self.function_name, "unsupported", metrics.Counts(failed=1, refused=1), backends)
        raise error
