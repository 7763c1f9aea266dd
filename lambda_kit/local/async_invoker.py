"""Lambda's asynchronous invocation: a queue of events, retries, then destinations.

The invoker runs the function; when it raises it retries ``maximumRetryAttempts`` times
(function setting, default 2; pauses from ``Timing.async_retry_delays``), and events older than
``maximumEventAge`` are not retried. Then the event goes to the function's
``destinations.onFailure`` (an invocation record) or, failing that, its DLQ (``onError``: the
event itself with ``RequestID`` / ``ErrorCode`` / ``ErrorMessage`` attributes).
``destinations.onSuccess`` receives success records. SNS subscriptions, EventBridge rules and S3
notifications hand their events to it (``relay.py``).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .._data import dig
from .destinations import Destinations, async_invocation_record, target_arn
from .poller import Journal, Timing
from .runtime import FunctionRuntime, Result


class AsyncInvoker:
    """Lambda's asynchronous invocation: a queue of events, retries, then destinations."""

    def __init__(self, destinations: Destinations, timing: Timing, journal: Journal) -> None:
        self.destinations = destinations
        self.timing = timing
        self.journal = journal
        self._pool = ThreadPoolExecutor(
            max_workers=timing.async_concurrency, thread_name_prefix="lambda-kit async"
        )
        self._pending = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.last_activity = time.monotonic()

    @property
    def pending(self) -> int:
        return self._pending

    def idle(self, quiet: float) -> bool:
        return self._pending == 0 and time.monotonic() - self.last_activity >= quiet

    def submit(self, runtime: FunctionRuntime, event: Any, source: str = "sns") -> None:
        with self._lock:
            self._pending += 1
            self.last_activity = time.monotonic()
        self._pool.submit(self._run, runtime, event, source, time.time())

    def _run(self, runtime: FunctionRuntime, event: Any, source: str, accepted: float) -> None:
        try:
            self._invoke_with_retries(runtime, event, source, accepted)
        except Exception as exc:  # a destination that cannot be reached
            self.journal.record(
                "async.error", function=runtime.function.key, error=f"{type(exc).__name__}: {exc}"
            )
        finally:
            with self._lock:
                self._pending -= 1
                self.last_activity = time.monotonic()

    def _invoke_with_retries(
        self, runtime: FunctionRuntime, event: Any, source: str, accepted: float
    ) -> None:
        result, attempt = self._attempts(runtime, event, source, accepted)
        if result.ok:
            self._succeeded(runtime, event, result, attempt)
        else:
            self._failed(runtime, event, result, attempt)

    def _attempts(
        self, runtime: FunctionRuntime, event: Any, source: str, accepted: float
    ) -> tuple[Result, int]:
        """Invoke until it succeeds, the retries are used up, the event is too old, or the stack
        stops: the last result and how many invocations it took."""
        retries = int(runtime.function.setting("maximumRetryAttempts", 2))
        max_age = float(runtime.function.setting("maximumEventAge", 21600))
        delays = self.timing.async_retry_delays or (0.0,)
        for attempt in range(1, max(retries, 0) + 2):
            result = runtime.invoke(event, source=source, attempt=attempt)
            self.journal.record(
                "async.invoke",
                function=runtime.function.key,
                attempt=attempt,
                ok=result.ok,
                error=result.error_text,
                request_id=result.request_id,
            )
            last = result.ok or attempt > retries or time.time() - accepted > max_age
            if last or self._stop.wait(delays[min(attempt - 1, len(delays) - 1)]):
                break
        return result, attempt

    def _succeeded(self, runtime: FunctionRuntime, event: Any, result: Result, attempt: int) -> None:
        on_success = target_arn(dig(runtime.function.setting("destinations"), "onSuccess"))
        if on_success:
            self._send(
                on_success,
                async_invocation_record(
                    function_arn=runtime.arn,
                    condition="Success",
                    invoke_count=attempt,
                    request_id=result.request_id,
                    event=event,
                    response=result.response,
                    error=None,
                ),
            )

    def _failed(self, runtime: FunctionRuntime, event: Any, result: Result, attempt: int) -> None:
        """To ``destinations.onFailure`` (an invocation record), or else the ``onError`` DLQ (the event)."""
        function = runtime.function
        condition = (
            "RetriesExhausted"
            if attempt > int(function.setting("maximumRetryAttempts", 2))
            else "EventAgeExceeded"
        )
        on_failure = target_arn(dig(function.setting("destinations"), "onFailure"))
        dead_letter = target_arn(function.setting("onError"))
        if on_failure:
            self._send(
                on_failure,
                async_invocation_record(
                    function_arn=runtime.arn,
                    condition=condition,
                    invoke_count=attempt,
                    request_id=result.request_id,
                    event=event,
                    response=None,
                    error=result.error,
                ),
            )
        elif dead_letter:
            attributes = {
                "RequestID": result.request_id,
                "ErrorCode": "200",
                "ErrorMessage": str(result.error)[:1000],
            }
            self._send(dead_letter, event, attributes)
        self.journal.record(
            "async.failed",
            function=function.key,
            attempts=attempt,
            condition=condition,
            destination=on_failure or dead_letter,
        )

    def _send(self, arn: str, body: Any, attributes: dict[str, str] | None = None) -> None:
        self.destinations.send(arn, body, attributes)
        self.journal.record("destination.sent", destination=arn)

    def stop(self) -> None:
        self._stop.set()
        self._pool.shutdown(wait=False, cancel_futures=True)
