"""One invocation of a batch decorator.

The adapter that recognizes the event (``Invocation.recognize``) reads its records, the record
path runs them (``RecordPath.run``: one record at a time for a plain function; ``AsyncRecordPath``
for an ``async def``), and the adapter shapes the response its source's retry machinery expects.
The loop never names a source: what a failure means comes from the adapter
(``stop_at_first_failure``, ``requeueing``, ``response``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..context import LambdaContext
from ..sources.base import Source
from .invocation import Invocation
from .options import Options
from .path import Function, RecordPath


def run_batch(
    path: type[RecordPath],
    adapters: Sequence[Source],
    function: Function,
    options: Options,
    event: object,
    context: LambdaContext | None,
) -> Any:
    """One invocation: recognize, read, run, respond (the value Lambda gets back)."""
    with Invocation(options, context) as invocation:
        adapter = invocation.recognize(adapters, event)
        with adapter.scope(event):
            records = adapter.records(event)
            outcome = invocation.outcome = path(function, context, options, adapter, len(records)).run(
                records
            )
            return adapter.response(event, outcome)
