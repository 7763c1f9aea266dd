"""Record counts per function and source, sent to Datadog over DogStatsD (UDP).

The ``datadog`` package (~100 ms to import) is loaded on the first send only. The Datadog Lambda
extension listens on 127.0.0.1:8125; ``DD_AGENT_HOST`` / ``DD_DOGSTATSD_PORT`` override it.
"""

from __future__ import annotations

import os
from threading import Lock
from typing import TYPE_CHECKING, Any

from ..extras import import_optional

if TYPE_CHECKING:
    from . import Counts

PROCESSED = "lambda_kit.records.processed"
FAILED = "lambda_kit.records.failed"
RETRIED = "lambda_kit.records.retried"

_statsd: Any = None
_statsd_target: tuple[str, int] | None = None
_lock = Lock()


def _client() -> Any:
    global _statsd, _statsd_target
    target = (
        os.environ.get("DD_AGENT_HOST", "127.0.0.1"),
        int(os.environ.get("DD_DOGSTATSD_PORT", "8125")),
    )
    with _lock:
        if _statsd is None or _statsd_target != target:
            # datadog costs ~100 ms to import: loaded on the first send; missing, the line names the extra
            dogstatsd = import_optional("datadog.dogstatsd.base", "metrics")
            _statsd = dogstatsd.DogStatsd(
                host=target[0], port=target[1], disable_telemetry=True, disable_buffering=True
            )
            _statsd_target = target
        return _statsd


def write_counts(function_name: str | None, source: str, counts: Counts) -> None:
    """Send the three counters of one invocation (a refused event is one failed record)."""
    statsd = _client()
    tags = [f"function:{function_name or 'unknown'}", f"source:{source}"]
    statsd.increment(PROCESSED, counts.processed, tags=tags)
    statsd.increment(FAILED, counts.failed, tags=tags)
    statsd.increment(RETRIED, counts.retried, tags=tags)
