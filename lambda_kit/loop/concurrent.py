"""The records of an ``async def`` (``AsyncRecordPath``): up to ``max_concurrency`` at once, in order
where the source keeps order, each on the one record path (``RecordPath.run_record``).

Records are split into lanes by the adapter's ``ordering_key`` (an SQS FIFO message group, a Kinesis
partition key, a DynamoDB item key, a Kafka topic-partition; no key: a lane of its own). A lane runs
one record at a time, in batch order; up to ``max_concurrency`` lanes run at once. A free worker
takes the lane whose next record comes first in the batch, so the batch advances in order as far as
the lanes allow.

Failures are routed as for a plain function:

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
from heapq import heappop, heappush
from typing import Any

from ..record import Outcome, Record
from ..sources.base import Source
from . import event_loop
from .path import RecordPath


class AsyncRecordPath(RecordPath):
    """The record path of an ``async def``: its records run on the event loop, in lanes."""

    def run(self, records: list[Record]) -> Outcome:
        """Run ``records`` on this thread's event loop (``event_loop.run``)."""
        limit = 1 if self.adapter.serial() else self.options.max_concurrency
        return event_loop.run(Lanes(records, self).run(limit))

    resolve = staticmethod(event_loop.wait)  # awaited on the loop the records run on

    def owns(self, error: BaseException) -> bool:
        """A record's failure: an ``Exception``, or a ``CancelledError`` the function raised itself
        (a cancelled inner task it awaited), not the cancellation of the record's own task."""
        if isinstance(error, Exception):
            return True
        task = asyncio.current_task()
        return isinstance(error, asyncio.CancelledError) and task is not None and task.cancelling() == 0


def lane_key(adapter: Source, record: Record, index: int) -> Any:
    """The lane of ``record``: its ordering key's, or a lane of its own (no key, or a key that
    cannot be one: a record must never cost the batch)."""
    try:
        key = adapter.ordering_key(record)
        hash(key)
    except Exception:
        key = None
    return ("record", index) if key is None else ("key", key)


class Lanes:
    """One batch's records by ordering key, taken by up to ``limit`` workers."""

    def __init__(self, records: list[Record], path: RecordPath) -> None:
        self.records = records
        self.path = path
        lanes: dict[Any, deque[int]] = {}
        for index, record in enumerate(records):
            lanes.setdefault(lane_key(path.adapter, record, index), deque()).append(index)
        self.lanes = list(lanes.values())
        self.ready = [
            (lane[0], number) for number, lane in enumerate(self.lanes)
        ]  # a heap: next position first

    async def run(self, limit: int) -> Outcome:
        async with asyncio.TaskGroup() as group:
            for _ in range(min(limit, len(self.lanes))):
                group.create_task(self.work())
        return await self.path.finish(self.records)

    async def work(self) -> None:
        """Take the ready lane whose next record comes first, run that record, put the lane back."""
        path, ready = self.path, self.ready
        while ready:
            _, number = heappop(ready)
            lane = self.lanes[number]
            index = lane.popleft()
            if index > path.stop_at:  # an earlier record failed: this lane's rest waits for the retry
                path.skipped.extend((index, *lane))
                lane.clear()
                continue
            if not path.may_start():  # too little time left: this lane's rest goes back unstarted
                path.unstarted.extend((index, *lane))
                lane.clear()
                continue
            await path.run_record(self.records[index], index)
            if lane:
                heappush(ready, (lane[0], number))
