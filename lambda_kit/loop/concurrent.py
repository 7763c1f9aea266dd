"""The record loop for ``async def`` functions: up to ``max_concurrency`` records at once, in order
where the source keeps order.

Records are split into lanes by the adapter's ``ordering_key`` (an SQS FIFO message group, a Kinesis
partition key, a DynamoDB item key, a Kafka topic-partition; no key: a lane of its own). A lane runs
one record at a time, in batch order; up to ``max_concurrency`` lanes run at once. A free worker
takes the lane whose next record comes first in the batch, so the batch advances in order as far as
the lanes allow.

Failures are routed as ``record_loop`` routes them, with the same ``RecordSteps``:

- a failed record's group (FIFO message group, Kafka partition in ``report`` mode) holds back its
  later records, unprocessed and reported, so they are retried in order;
- an adapter that stops at the first failure (Kinesis and DynamoDB streams, Kafka in ``raise``
  mode) keeps the checkpoint sound: once the record at batch position *i* failed, no record after
  *i* is started (those already running finish), while every record before *i* still runs, in
  every lane. Lambda checkpoints at the lowest sequence number reported, so each record before it
  is done and each one after it is retried: nothing is acknowledged unprocessed. Records after *i*
  that finished while it failed run again on the retry (at least once, as always on a stream).
  Failures and skipped records are reported in batch order, the lowest first.

Each record runs in its worker's task: ``current_record()``, ``current_trace_id()``, log lines and
the Powertools logger's correlation id (``thread_safe_append_keys``) are the record's own.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from heapq import heappop, heappush
from time import perf_counter
from typing import Any

from ..record import Outcome, Record
from ..trace import reset_current_record, set_current_record
from . import (
    Options,
    RecordSteps,
    event_loop,
    record_spans,
    set_powertools_correlation,
    warn_rejected_trace_id,
)


def record_loop(records: list[Record], fn: Callable[[Any, Any], Any], context: Any, options: Options, adapter: Any) -> Outcome:
    """Run ``records`` on this thread's event loop (``event_loop.run``); same contract as
    ``loop.record_loop``."""
    batch = ConcurrentBatch(records, RecordSteps(fn, context, options, adapter), options, adapter)
    return event_loop.run(batch.run())


class ConcurrentBatch:
    """One batch of records run by up to ``max_concurrency`` workers, lane by lane."""

    __slots__ = ("records", "steps", "limit", "stop", "stop_at", "ready", "lanes", "skipped", "correlate", "logger", "spans")

    def __init__(self, records: list[Record], steps: RecordSteps, options: Options, adapter: Any) -> None:
        self.records = records
        self.steps = steps
        self.limit = 1 if adapter.serial() else options.max_concurrency
        self.stop = adapter.stop_at_first_failure
        self.stop_at = len(records)  # no record after this position is started
        self.skipped: list[int] = []
        self.logger = options.logger
        self.spans = record_spans()  # None unless OpenTelemetry is configured
        # the Powertools logger's keys for this task only (Powertools 3); else its shared keys
        self.correlate = getattr(options.logger, "thread_safe_append_keys", None)
        lanes: dict[Any, deque[int]] = {}
        for index, record in enumerate(records):
            key = adapter.ordering_key(record)
            lanes.setdefault(("record", index) if key is None else ("key", key), deque()).append(index)
        self.lanes = list(lanes.values())
        self.ready = [(lane[0], number) for number, lane in enumerate(self.lanes)]  # a heap: next position first

    async def run(self) -> Outcome:
        workers = min(self.limit, len(self.lanes))
        async with asyncio.TaskGroup() as group:
            for _ in range(workers):
                group.create_task(self.work())
        steps = self.steps
        if steps.pending:
            await self.commit()
        self.in_batch_order()
        return steps.outcome

    async def work(self) -> None:
        """Take the ready lane whose next record comes first, run that record, put the lane back."""
        ready = self.ready
        while ready:
            _, number = heappop(ready)
            lane = self.lanes[number]
            index = lane.popleft()
            if index > self.stop_at:  # an earlier record failed: this lane's rest waits for the retry
                self.skipped.append(index)
                self.skipped.extend(lane)
                lane.clear()
                continue
            await self.one(index, self.records[index])
            if lane:
                heappush(ready, (lane[0], number))

    async def one(self, index: int, record: Record) -> None:
        """The per-record scope, as ``loop.record_loop``'s body: keep the two in step."""
        steps = self.steps
        token = set_current_record(record)
        span = error = None
        try:
            if steps.failed_groups and record.group in steps.failed_groups:
                steps.hold_back(record)
                return
            if record.rejected_trace_id is not None:
                warn_rejected_trace_id(record)
            if self.correlate is not None:
                self.correlate(correlation_id=record.trace_id, trace_id=record.trace_id)
            elif self.logger is not None:
                set_powertools_correlation(self.logger, record.trace_id)
            if record.attempt:
                steps.outcome.retried += 1
            started = perf_counter()
            if self.spans is not None:
                span = self.spans.start(record, len(self.records))
            try:
                error = await steps.run_async(record, started)
            except asyncio.CancelledError as cancelled:
                if current_task_cancelling():
                    raise
                error = cancelled  # the function's own (a cancelled inner task it awaited): its record fails
            if error is not None and steps.fail(record, error, started) and self.stop:
                self.stop_at = min(self.stop_at, index)
        finally:
            if span is not None:
                self.spans.end(span, error)
            reset_current_record(token)

    async def commit(self) -> None:
        """``RecordSteps.commit`` on the loop: a commit that is ``async def`` is awaited."""
        steps = self.steps
        assert steps.commit_batch is not None
        positions = {id(record): index for index, record in enumerate(self.records)}
        steps.pending.sort(key=lambda item: positions[id(item[0])])  # the commit sees batch order
        reported: Any = None
        error: BaseException | None = None
        try:
            reported = steps.commit_batch(steps.committed())
            if reported is not None and hasattr(reported, "__await__"):
                reported = await reported
        except Exception as exc:
            error = exc
        steps.settle(reported, error)

    def in_batch_order(self) -> None:
        """Failures and skipped records in batch order (the lowest, Lambda's checkpoint, first)."""
        outcome = self.steps.outcome
        if len(outcome.failures) > 1:
            positions = {id(record): index for index, record in enumerate(self.records)}
            outcome.failures.sort(key=lambda failure: positions[id(failure[0])])
        if self.skipped:
            self.skipped.sort()
            self.steps.stopped(self.records[self.stop_at], [self.records[index] for index in self.skipped])


def current_task_cancelling() -> bool:
    """Whether this task itself is being cancelled (not merely handed a ``CancelledError``)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
