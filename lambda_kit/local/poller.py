"""What every event source has in common: a thread that polls, a journal, timings, idleness,
and Lambda's reading of a ``batchItemFailures`` response.

``Timing`` holds the knobs where the local stack deliberately runs faster than AWS (each says
what Lambda does); ``Journal`` records what the stack did (batches, deletes, checkpoints,
retries, records sent to destinations) so tests and the soak can inspect it from Python.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Container
from dataclasses import dataclass
from typing import Any


@dataclass
class Timing:
    poll_interval: float = 0.1
    """Seconds between polls of an empty queue or shard (Lambda: ~1 s for streams, long polling for SQS)."""
    sqs_retry_delay: float | None = 1.0
    """Failed SQS messages become visible again after this many seconds. ``None`` = as on AWS:
    after the queue's VisibilityTimeout (often minutes: a demo would wait that long)."""
    stream_retry_delay: float = 0.2
    """Pause before a failed stream batch is retried (Lambda backs off exponentially)."""
    async_retry_delays: tuple[float, ...] = (1.0, 2.0)
    """Pauses before the async retries of an SNS-invoked function (Lambda: ~1 min, then ~2 min)."""
    ttl_interval: float = 2.0
    """Seconds between TTL sweeps (DynamoDB: best effort, typically within 48 hours)."""
    sqs_wait_seconds: int = 1
    """Long polling of an SQS source's queue and of the relays' (SNS, EventBridge, S3): a receive
    waits up to this many seconds for a message (Lambda's pollers long-poll, 20 s); 0: an empty
    receive answers at once and the poller sleeps ``poll_interval``, one request each time, which
    costs moto's CPU while the stack is busy."""
    sqs_concurrency: int = 10
    """Concurrent pollers per SQS event source (capped by maximumConcurrency). Lambda starts with 5
    and adds more while the queue backs up; a local stack under load is always backed up."""
    async_concurrency: int = 4
    """Concurrent asynchronous (SNS) invocations across the stack."""
    function_concurrency: int = 8
    """Execution environments (worker processes) per function at most, unless its
    ``reservedConcurrency`` says; an invocation beyond them waits for one to be free. Lambda scales
    a function to the account's concurrency (1,000 by default) and throttles beyond it."""


class Journal:
    """A thread-safe record of stack events: ``{"kind": ..., "time": ..., **detail}``."""

    def __init__(self, limit: int = 100_000) -> None:
        self._events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._limit = limit
        self._subscribers: list[Callable[[dict[str, Any]], None]] = []

    def record(self, kind: str, **detail: Any) -> None:
        event = {"kind": kind, "time": time.time(), **detail}
        with self._lock:
            self._events.append(event)
            if len(self._events) > self._limit:
                del self._events[: self._limit // 10]
            subscribers = list(self._subscribers)
        for subscriber in subscribers:
            try:
                subscriber(event)
            except Exception:
                pass

    def subscribe(self, callback: Callable[[dict[str, Any]], None]) -> None:
        with self._lock:
            self._subscribers.append(callback)

    def events(self, kind: str | None = None, **match: Any) -> list[dict[str, Any]]:
        """The events of ``kind`` (``"sqs"`` takes ``"sqs.batch"`` too) whose fields equal ``match``."""
        with self._lock:
            events = list(self._events)
        return [event for event in events if _is_kind(event, kind) and _has(event, match)]


def _is_kind(event: dict[str, Any], kind: str | None) -> bool:
    return kind is None or event["kind"] == kind or event["kind"].startswith(kind + ".")


def _has(event: dict[str, Any], fields: dict[str, Any]) -> bool:
    return all(event.get(name) == value for name, value in fields.items())


class BatchFailure(Exception):
    """A function's response that fails its whole batch; the message says why."""


def reported_failures(response: Any, batch_ids: Container[str], report_failures: bool) -> list[str]:
    """The ids a response's ``batchItemFailures`` names, per Lambda's rules: none when the
    function does not report failures (``ReportBatchItemFailures``) or reports none;
    :class:`BatchFailure` when the response is malformed (which fails the whole batch)."""
    failures = response.get("batchItemFailures") if report_failures and isinstance(response, dict) else None
    if failures in (None, []):
        return []
    if not isinstance(failures, list):
        raise BatchFailure("batchItemFailures is not a list")
    return [_failed_id(item, batch_ids) for item in failures]


def _failed_id(item: Any, batch_ids: Container[str]) -> str:
    identifier = item.get("itemIdentifier") if isinstance(item, dict) else None
    if not isinstance(identifier, str) or identifier not in batch_ids:
        raise BatchFailure(f"batchItemFailures names {identifier!r}, which is not in the batch")
    return identifier


class Poller:
    """A daemon thread calling ``poll_once()`` until stopped. ``poll_once`` returns True when it
    found work (then it is called again at once) and False when idle (then the thread sleeps)."""

    name = "poller"

    def __init__(self, timing: Timing, journal: Journal) -> None:
        self.timing = timing
        self.journal = journal
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._busy = 0
        self._busy_lock = threading.Lock()
        self.last_activity = time.monotonic()
        self.errors = 0

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self, workers: int = 1) -> None:
        for index in range(workers):
            thread = threading.Thread(target=self._run, name=f"lambda-kit {self.name} #{index}", daemon=True)
            self._threads.append(thread)
            thread.start()

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def sleep(self, seconds: float) -> bool:
        """Sleep unless stopped; True when stopped."""
        return self._stop.wait(seconds)

    # --- idleness -----------------------------------------------------------------------------

    def mark_busy(self) -> None:
        with self._busy_lock:
            self._busy += 1
            self.last_activity = time.monotonic()

    def mark_done(self) -> None:
        with self._busy_lock:
            self._busy -= 1
            self.last_activity = time.monotonic()

    def idle(self, quiet: float) -> bool:
        """Nothing in flight, and nothing found for ``quiet`` seconds."""
        return self._busy == 0 and time.monotonic() - self.last_activity >= quiet

    # --- the loop -----------------------------------------------------------------------------

    def poll_once(self) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                found = self.poll_once()
                failures = 0
            except Exception as exc:
                if self._stop.is_set():
                    break
                failures += 1
                self.errors += 1
                self.journal.record("poller.error", poller=self.name, error=f"{type(exc).__name__}: {exc}")
                self.sleep(min(2.0, self.timing.poll_interval * (2 ** min(failures, 5))))
                continue
            if not found:
                self.sleep(self.timing.poll_interval)
