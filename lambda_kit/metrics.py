"""Record counts per function and source, sent to Datadog over DogStatsD (UDP).

Off unless a decorator is given ``metrics=True`` or ``LAMBDA_KIT_METRICS=1`` is set; the
``datadog`` package (~100 ms to import) is loaded on the first send only. The Datadog Lambda
extension listens on 127.0.0.1:8125; ``DD_AGENT_HOST`` / ``DD_DOGSTATSD_PORT`` override it.
"""

from __future__ import annotations

import os
from threading import Lock
from typing import Any

from . import log
from .extras import import_optional

PROCESSED = "lambda_kit.records.processed"
FAILED = "lambda_kit.records.failed"
RETRIED = "lambda_kit.records.retried"

_statsd: Any = None
_statsd_target: tuple[str, int] | None = None
_lock = Lock()


def enabled(option: bool | None) -> bool:
    if option is not None:
        return option
    return os.environ.get("LAMBDA_KIT_METRICS", "").lower() in ("1", "true", "yes", "datadog")


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


def count(function_name: str | None, source: str, processed: int, failed: int, retried: int) -> None:
    """Send the three counters for one invocation; a metrics failure never fails the function."""
    try:
        statsd = _client()
        tags = [f"function:{function_name or 'unknown'}", f"source:{source}"]
        statsd.increment(PROCESSED, processed, tags=tags)
        statsd.increment(FAILED, failed, tags=tags)
        statsd.increment(RETRIED, retried, tags=tags)
    except Exception as exc:  # metrics are best-effort by design
        log.emit("WARN", "could not send metrics", None, {"error": log.clean(log.safe_str(exc))})
