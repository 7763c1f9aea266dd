"""End to end on the local stack: view events over HTTP until counted (``make bench`` section).

Starts the local stack on the project's serverless.yml (moto's server in its own process,
DynamoDB Local), sends ``EVENTS`` view events to ``POST /views`` from ``CLIENTS`` client threads,
waits until every queue and stream is drained, and prints events/second (HTTP accepted, and
counted end to end: unique events / first POST -> last one counted) and the POST -> counted
latency. What it measures is the local stack, moto and DynamoDB Local on this machine, not AWS:
useful to compare changes to the stack, the handlers or the counter, not as a production figure.
"""

from __future__ import annotations

import io
import os
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EVENTS = 2000
ARTICLES = 20
CLIENTS = 16
TARGET_RATE = 100.0
"""Events per second counted end to end (issue 12)."""


def run(events: int = EVENTS) -> list[tuple[str, bool, str]]:
    from lambda_kit.local.stack import LocalStack
    from loads.demo import run_demo

    print("\n== local: end to end on the local stack (POST /views -> SQS -> counter -> stream -> aggregator) ==")
    if not (ROOT / "handlers" / "ingest.py").exists():
        print("  skipped: handlers/ingest.py is not there yet")
        return []
    saved = os.getcwd()
    os.chdir(ROOT)
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory() as scratch:
            stack = LocalStack(ROOT / "serverless.yml", endpoint_url=None, log_path=Path(scratch) / "logs.jsonl", api_port=0)
            with stack:
                boot = time.monotonic() - started
                result = run_demo(stack, events=events, articles=ARTICLES, duplicates=0.1, poisons=0, out=io.StringIO(), concurrency=CLIENTS)
    finally:
        os.chdir(saved)
    p50, p95 = result.percentile(50), result.percentile(95)
    accepted_rate = result.accepted / result.send_seconds if result.send_seconds else 0.0
    counted_rate = result.unique / result.count_seconds if result.count_seconds else 0.0
    rows: list[tuple[str, Any]] = [
        ("stack start (moto, DynamoDB Local, resources, imports)", f"{boot:.2f} s"),
        ("clients", f"{CLIENTS} threads, keep-alive"),
        ("events sent / unique / counted", f"{result.sent} / {result.unique} / {result.counted}"),
        ("POST /views accepted", f"{accepted_rate:.0f} events/s"),
        ("counted end to end", f"{counted_rate:.1f} events/s"),
        ("latency POST -> counted p50", f"{(p50 or 0) * 1000:.0f} ms"),
        ("latency POST -> counted p95", f"{(p95 or 0) * 1000:.0f} ms"),
        ("drained", "yes" if result.drained else "NO"),
    ]
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"  {label.ljust(width)}  {value}")
    print("  (the counter's batching window, maximumBatchingWindow 2 s, is part of the latency, as on AWS)")
    return [
        ("counted == unique on the local stack", result.counted == result.unique and result.drained, f"{result.counted} of {result.unique}"),
        (f"counted end to end >= {TARGET_RATE:.0f} events/s", counted_rate >= TARGET_RATE, f"{counted_rate:.1f} events/s"),
        (
            "p95 POST -> counted measured for every accepted POST",
            p95 is not None and len(result.latencies) == result.accepted,
            f"p95 {(p95 or 0) * 1000:.0f} ms over {len(result.latencies)} events",
        ),
    ]


if __name__ == "__main__":
    run()
