"""End to end on the local stack: view events over HTTP until counted (``make bench`` section).

Starts ``lambda-kit local`` on the project's serverless.yml in its own process, as a user runs it
(moto's server and DynamoDB Local in theirs), sends ``EVENTS`` view events to ``POST /views`` from
``CLIENTS`` client threads of this process (keep-alive), follows the stack's log file until the
counter has processed every accepted POST, and prints events/second (HTTP accepted, and counted
end to end: unique events / first POST -> last one counted) and the POST -> counted latency (the
POST's send time here, the counter's ``record processed`` line's timestamp there: one clock, one
machine). Then ``GET /views`` per article checks that each unique event was counted once. What it
measures is the local stack, moto and DynamoDB Local on this machine, not AWS: useful to compare
changes to the stack, the handlers or the counter, not as a production figure.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
EVENTS = 2000
ARTICLES = 20
CLIENTS = 16
COUNTER = "view-stats-dev-counter"  # the function whose "record processed" line means counted
DRAIN_TIMEOUT = 300.0
TARGET_RATE = 100.0
"""Events per second counted end to end (issue 12)."""


class _Counted:
    """Follows the stack's log file: when the counter processed each trace id (its line's time)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""
        self.at: dict[str, float] = {}

    def read(self) -> None:
        if not self.path.exists():
            return
        with self.path.open("rb") as file:
            file.seek(self.offset)
            chunk = file.read()
        self.offset += len(chunk)
        lines = (self.partial + chunk).split(b"\n")
        self.partial = lines.pop()
        for raw in lines:
            if b'"record processed"' not in raw or COUNTER.encode() not in raw:
                continue
            line = json.loads(raw)
            trace_id = line.get("trace_id")
            if (
                line.get("function_name") == COUNTER
                and line.get("message") == "record processed"
                and trace_id not in self.at
            ):
                self.at[trace_id] = datetime.fromisoformat(
                    line["timestamp"].replace("Z", "+00:00")
                ).timestamp()


def _request(
    connection: http.client.HTTPConnection,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    connection.request(
        method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})}
    )
    response = connection.getresponse()
    return response.status, json.loads(response.read() or b"null")


def run(events: int = EVENTS) -> list[tuple[str, bool, str]]:
    from loads.demo import view_events
    from tests._local_process import start_local  # as the load test starts it

    print(
        "\n== local: end to end on `lambda-kit local` "
        "(POST /views -> SQS -> counter -> stream -> aggregator) =="
    )
    batch, unique = view_events(events, ARTICLES, 0.1, 7)
    with tempfile.TemporaryDirectory() as scratch:
        logs = Path(scratch) / "logs.jsonl"
        started = time.monotonic()
        process, url = start_local(ROOT, {**os.environ, "PYTHONUNBUFFERED": "1"}, "--logs", str(logs))
        boot = time.monotonic() - started
        try:
            host, port = urlsplit(url).hostname or "127.0.0.1", urlsplit(url).port or 80
            posted: dict[str, float] = {}
            statuses: list[int] = []
            lock = threading.Lock()
            local = threading.local()

            def send(item: tuple[int, dict[str, str]]) -> None:
                index, view = item
                if getattr(local, "connection", None) is None:
                    local.connection = http.client.HTTPConnection(host, port, timeout=120)
                trace_id = f"bench-{index:05d}"
                sent_at = time.time()
                status, _ = _request(local.connection, "POST", "/views", view, {"X-Trace-Id": trace_id})
                with lock:
                    statuses.append(status)
                    if status == 202:
                        posted[trace_id] = sent_at

            first_post = time.time()
            with ThreadPoolExecutor(max_workers=CLIENTS, thread_name_prefix="bench-client") as pool:
                list(pool.map(send, enumerate(batch)))
            send_seconds = time.time() - first_post

            counted = _Counted(logs)
            deadline = time.monotonic() + DRAIN_TIMEOUT
            while time.monotonic() < deadline:
                counted.read()
                if all(trace_id in counted.at for trace_id in posted):
                    break
                time.sleep(0.2)
            drained = all(trace_id in counted.at for trace_id in posted)

            reader = http.client.HTTPConnection(host, port, timeout=60)
            total = 0
            for article in sorted({view["url"] for view in batch}):
                status, body = _request(reader, "GET", f"/views?url={quote(article, safe='')}")
                total += int(body["views"]) if status == 200 else 0
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
    latencies = sorted(counted.at[t] - posted[t] for t in posted if t in counted.at)
    count_seconds = max(counted.at.values()) - first_post if counted.at else 0.0
    accepted = len(posted)
    p50 = latencies[len(latencies) // 2] if latencies else None
    p95 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.95))] if latencies else None
    counted_rate = unique / count_seconds if count_seconds else 0.0
    rows: list[tuple[str, Any]] = [
        ("`lambda-kit local` start (moto, DynamoDB Local, resources, imports)", f"{boot:.2f} s"),
        ("clients", f"{CLIENTS} threads in another process, keep-alive"),
        ("events sent / accepted / unique / counted", f"{len(batch)} / {accepted} / {unique} / {total}"),
        ("POST /views accepted", f"{accepted / send_seconds if send_seconds else 0:.0f} events/s"),
        ("counted end to end", f"{counted_rate:.1f} events/s"),
        ("latency POST -> counted p50", f"{(p50 or 0) * 1000:.0f} ms"),
        ("latency POST -> counted p95", f"{(p95 or 0) * 1000:.0f} ms"),
        ("drained", "yes" if drained else "NO"),
    ]
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"  {label.ljust(width)}  {value}")
    print("  (the counter's batching window, maximumBatchingWindow 2 s, is part of the latency, as on AWS)")
    return [
        (
            "counted == unique on the local stack",
            total == unique and drained and accepted == len(batch),
            f"{total} of {unique}",
        ),
        (
            f"counted end to end >= {TARGET_RATE:.0f} events/s",
            counted_rate >= TARGET_RATE,
            f"{counted_rate:.1f} events/s",
        ),
        (
            "p95 POST -> counted measured for every accepted POST",
            p95 is not None and len(latencies) == accepted,
            f"p95 {(p95 or 0) * 1000:.0f} ms over {len(latencies)} events",
        ),
    ]


if __name__ == "__main__":
    run()
