"""The view-stats service's demo load, which ``lambda-kit run`` (``make run``) drives because
serverless.yml names it (``custom.lambdaKit.run``): view events over real HTTP, then the figures.

Sends ``events`` view events (over ``articles`` articles, a few popular ones crossing
milestones) to ``POST /views`` with an ``X-Trace-Id`` each, re-sends a share of them
(``duplicates``: the same view delivered again), puts ``poisons`` malformed messages straight on
the views queue (a misbehaving producer), waits until the stack is drained, and reads the
counts back over ``GET /views`` and ``GET /stats``. Latency is POST → the counter's "record
processed" line for that trace id (the moment the view was counted).
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import statistics
import string
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO
from urllib.parse import quote, urlsplit

from lambda_kit.cli import COUNT, SEED, bounded
from lambda_kit.local import timeline
from lambda_kit.local.stack import LocalStack


@dataclass
class DemoResult:
    sent: int = 0
    accepted: int = 0
    rejected: int = 0
    unique: int = 0
    duplicates: int = 0
    poisons: int = 0
    counted: int = 0
    site_views: int | None = None
    articles: int | None = None
    milestones: list[dict[str, Any]] = field(default_factory=list)
    dlq: dict[str, int] = field(default_factory=dict)
    poison_dlq: str = ""
    latencies: list[float] = field(default_factory=list)
    drained: bool = False
    seconds: float = 0.0
    send_seconds: float = 0.0  # first POST -> last POST answered
    count_seconds: float = 0.0  # first POST -> last view counted
    trace_id: str | None = None
    trace_lines: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (
            self.drained and self.counted == self.unique and self.dlq.get(self.poison_dlq, 0) == self.poisons
        )

    def percentile(self, q: float) -> float | None:
        if not self.latencies:
            return None
        if len(self.latencies) == 1:
            return self.latencies[0]
        return statistics.quantiles(self.latencies, n=100, method="inclusive")[int(q) - 1]


def view_events(count: int, articles: int, duplicates: float, seed: int) -> tuple[list[dict[str, str]], int]:
    """``count`` view events to send, of which about ``duplicates`` × count are re-sends of an
    earlier event; returns (events in send order, number of unique events)."""
    rng = random.Random(seed)
    weights = [1.0 / (rank + 1) ** 1.1 for rank in range(articles)]
    urls = [f"myblog.com/article-{rank + 1}" for rank in range(articles)]
    now = datetime.now(UTC).replace(microsecond=0)
    unique_count = max(1, count - round(count * duplicates)) if count else 0
    unique = []
    for _ in range(unique_count):
        when = now - timedelta(seconds=rng.randrange(0, 6 * 86400))
        unique.append(
            {
                "url": rng.choices(urls, weights)[0],
                "time": when.isoformat(),
                "clientId": "".join(rng.choices(string.ascii_letters + string.digits, k=21)),
            }
        )
    events = list(unique)
    while len(events) < count:  # a duplicate delivery: the same view again, later
        events.append(dict(rng.choice(unique)))
    rng.shuffle(events)
    return events, unique_count


class Progress:
    def __init__(self, total: int, out: TextIO, label: str) -> None:
        self.total = max(1, total)
        self.out = out
        self.label = label
        self.done = 0
        self.tty = hasattr(out, "isatty") and out.isatty()
        self._lock = threading.Lock()
        self._last_quarter = -1

    def step(self) -> None:
        with self._lock:
            self.done += 1
            if self.tty:
                filled = int(30 * self.done / self.total)
                self.out.write(
                    f"\r  {self.label} [{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total}"
                )
                if self.done == self.total:
                    self.out.write("\n")
                self.out.flush()
            else:
                quarter = 4 * self.done // self.total
                if quarter != self._last_quarter and (quarter > self._last_quarter):
                    self._last_quarter = quarter
                    filled = int(30 * self.done / self.total)
                    self.out.write(
                        f"  {self.label} [{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total}\n"
                    )
                    self.out.flush()


class _Client(threading.local):
    def __init__(self) -> None:
        self.connection: http.client.HTTPConnection | None = None


def _request(
    local: _Client, base: str, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    parts = urlsplit(base)
    for attempt in range(3):
        if local.connection is None:
            local.connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        try:
            data = None if body is None else json.dumps(body).encode()
            local.connection.request(
                method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})}
            )
            response = local.connection.getresponse()
            raw = response.read()
            try:
                return response.status, json.loads(raw) if raw else None
            except ValueError:
                return response.status, raw.decode("utf-8", "replace")
        except (ConnectionError, http.client.HTTPException, OSError):
            local.connection.close()
            local.connection = None
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def run_demo(
    stack: LocalStack,
    events: int = 300,
    articles: int = 30,
    duplicates: float = 0.1,
    poisons: int = 2,
    seed: int = 7,
    out: TextIO = sys.stdout,
    concurrency: int = 4,
    drain_timeout: float = 180.0,
    counter_function: str | None = None,
) -> DemoResult:
    result = DemoResult(poisons=poisons)
    started = time.monotonic()
    base = stack.api_url
    if not base:
        raise RuntimeError("the demo needs the HTTP API (the stack was started without one)")
    views_source = stack.sqs_sources[0] if stack.sqs_sources else None
    if views_source is None:
        raise RuntimeError("the demo needs an SQS-fed counter function in serverless.yml")
    counter_name = stack.runtimes[counter_function].name if counter_function else views_source.runtime.name
    posted: dict[str, float] = {}
    counted_at: dict[str, float] = {}
    lines_by_trace: dict[str, set[str]] = {}
    lock = threading.Lock()

    def on_line(line: dict[str, Any], now: float) -> None:
        trace_id = line.get("trace_id")
        if not isinstance(trace_id, str):
            return
        with lock:
            lines_by_trace.setdefault(trace_id, set()).add(str(line.get("function_name")))
            if (
                line.get("function_name") == counter_name
                and line.get("message") == "record processed"
                and trace_id not in counted_at
            ):
                counted_at[trace_id] = now

    assert stack.log is not None
    unsubscribe = stack.log.subscribe(on_line)
    try:
        batch, result.unique = view_events(events, articles, duplicates, seed)
        result.duplicates = len(batch) - result.unique
        progress = Progress(len(batch), out, "POST /views")
        local = _Client()

        def send(index_event: tuple[int, dict[str, str]]) -> None:
            index, event = index_event
            trace_id = f"demo-{seed}-{index:05d}"
            with lock:
                posted[trace_id] = time.time()
            status, _ = _request(local, base, "POST", "/views", event, {"X-Trace-Id": trace_id})
            with lock:
                result.sent += 1
                if status == 202:
                    result.accepted += 1
                else:
                    result.rejected += 1
                    posted.pop(trace_id, None)
            progress.step()

        first_post = time.time()
        with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="demo") as pool:
            list(pool.map(send, enumerate(batch)))
        result.send_seconds = time.time() - first_post

        sqs = stack.clients("sqs")  # type: ignore[misc]
        poison_bodies = ["this is not JSON {", json.dumps({"url": "myblog.com/poison", "clientId": "x"})]
        for number in range(poisons):
            sqs.send_message(
                QueueUrl=views_source.queue_url,
                MessageBody=poison_bodies[number % len(poison_bodies)],
                MessageAttributes={
                    "trace_id": {"DataType": "String", "StringValue": f"poison-{seed}-{number + 1}"}
                },
            )
        out.write("  waiting until every queue and stream is drained ...\n")
        out.flush()
        result.drained = stack.wait_drained(drain_timeout)

        urls = sorted({event["url"] for event in batch})
        reader = _Client()
        for url in urls:
            status, body = _request(reader, base, "GET", f"/views?url={quote(url, safe='')}")
            if status == 200 and isinstance(body, dict):
                result.counted += int(body.get("views") or 0)
        status, stats = _request(reader, base, "GET", "/stats")
        if status == 200 and isinstance(stats, dict):
            result.site_views = stats.get("views")
            result.articles = stats.get("articles")
            result.milestones = list(stats.get("milestones") or [])
        result.dlq = {_queue_label(stack, logical): count for logical, count in stack.dlq_counts().items()}
        redrive = stack.resources.by_arn(views_source.queue_arn) if stack.resources else None
        result.poison_dlq = _poison_dlq_label(stack, redrive)
        with lock:
            result.latencies = sorted(counted_at[t] - posted[t] for t in posted if t in counted_at)
            if counted_at:
                result.count_seconds = max(counted_at.values()) - first_post
            candidates = {t: fns for t, fns in lines_by_trace.items() if t in posted}
        stack.log.flush()
        result.trace_id = _interesting_trace(candidates)
        if result.trace_id and stack.log.path is not None:
            result.trace_lines = timeline.file_lines_of(result.trace_id, stack.log.path)
    finally:
        unsubscribe()
    result.seconds = time.monotonic() - started
    return result


def _queue_label(stack: LocalStack, logical: str) -> str:
    assert stack.resources is not None
    name = stack.resources.by_id[logical].attributes.get("QueueName", logical)
    prefix = f"{stack.config.service}-{stack.config.stage}-"
    return name[len(prefix) :] if name.startswith(prefix) else name


def _poison_dlq_label(stack: LocalStack, queue: Any) -> str:
    if queue is None or stack.resources is None:
        return ""
    policy = stack.resources.resolve(queue.properties.get("RedrivePolicy"))
    if isinstance(policy, str):
        policy = json.loads(policy)
    target = stack.resources.by_arn((policy or {}).get("deadLetterTargetArn", "")) if policy else None
    return _queue_label(stack, target.logical_id) if target is not None else ""


def _interesting_trace(candidates: dict[str, set[str]]) -> str | None:
    """The trace that crossed the most functions (a milestone crossing wins)."""
    if not candidates:
        return None
    return max(
        sorted(candidates),
        key=lambda t: (len(candidates[t]), any(f.endswith("milestones") for f in candidates[t])),
    )


def summary(stack: LocalStack, result: DemoResult) -> str:
    prefix = f"{stack.config.service}-{stack.config.stage}-"
    check = "✓" if result.counted == result.unique else "✗"
    p50, p95 = result.percentile(50), result.percentile(95)
    rows = [
        "",
        (
            f"  events sent          {result.sent:>6}   "
            f"({result.accepted} accepted with 202, {result.rejected} rejected)"
        ),
        f"  unique events        {result.unique:>6}",
        (
            f"  counted              {result.counted:>6}   "
            f"{check} counted {'==' if check == '✓' else '!='} unique"
        ),
        f"  duplicates dropped   {result.duplicates:>6}",
    ]
    if result.site_views is not None:
        site = "✓" if result.site_views == result.counted else "✗"
        rows.append(
            f"  site total           {result.site_views:>6}   "
            f"{site} aggregator (stream) agrees, {result.articles} articles"
        )
    dlq_ok = "✓" if result.dlq.get(result.poison_dlq, 0) == result.poisons else "✗"
    rows.append(
        f"  poison messages      {result.poisons:>6}   "
        f"{dlq_ok} {result.dlq.get(result.poison_dlq, 0)} in {result.poison_dlq or 'no DLQ'}"
    )
    rows.append(
        "  messages in DLQs     " + ", ".join(f"{name} {count}" for name, count in sorted(result.dlq.items()))
    )
    if result.milestones:
        crossed = sorted(result.milestones, key=lambda m: (-int(m.get("milestone", 0)), str(m.get("url"))))
        shown = ", ".join(f"{m.get('url')} → {m.get('milestone')}" for m in crossed[:6])
        more = f" (+{len(crossed) - 6} more)" if len(crossed) > 6 else ""
        rows.append(f"  milestones           {len(crossed):>6}   {shown}{more}")
    else:
        rows.append(f"  milestones           {0:>6}")
    if p50 is not None and p95 is not None:
        rows.append(
            f"  latency POST→counted   p50 {p50 * 1000:.0f} ms · p95 {p95 * 1000:.0f} ms   "
            f"({len(result.latencies)} requests)"
        )
    rows.append(
        f"  drained              {'yes' if result.drained else 'NO (timed out)'} after {result.seconds:.1f} s"
    )
    if result.trace_id:
        crossed_functions = timeline.functions_crossed(result.trace_lines, prefix)
        rows.append("")
        rows.append(
            f"  trace {result.trace_id}: {' → '.join(crossed_functions)}   "
            f"(lambda-kit trace {result.trace_id})"
        )
        rows.append(timeline.render(result.trace_id, result.trace_lines, prefix, indent="    "))
    return "\n".join(rows) + "\n"


# --- lambda-kit run ---------------------------------------------------------------------------


def options(parser: Any) -> None:
    """The demo's options on ``lambda-kit run``."""
    parser.add_argument(
        "--events", type=COUNT, default=300, help="view events to send (default: %(default)s)"
    )
    parser.add_argument("--articles", type=COUNT, default=30, help="distinct articles (default: %(default)s)")
    parser.add_argument(
        "--duplicates",
        type=bounded(float, 0, 0.9, "a share of the events"),
        default=0.1,
        help="share of events delivered twice, 0..0.9 (default: %(default)s)",
    )
    parser.add_argument(
        "--poison",
        type=bounded(int, 0, what="a count"),
        default=2,
        help="malformed messages put on the views queue (default: %(default)s)",
    )
    parser.add_argument("--seed", type=SEED, default=7, help="random seed (default: %(default)s)")


def run(stack: LocalStack, args: argparse.Namespace, out: TextIO) -> list[str]:
    """``lambda-kit run``: the demo on the started stack, its summary on ``out``; what failed."""
    result = run_demo(
        stack,
        events=args.events,
        articles=args.articles,
        duplicates=args.duplicates,
        poisons=args.poison,
        seed=args.seed,
        out=out,
    )
    out.write(summary(stack, result) + "\n")
    failed = []
    if not result.drained:
        failed.append("the stack did not drain in time")
    if result.counted != result.unique:
        failed.append(f"counted {result.counted} != unique {result.unique}")
    if result.dlq.get(result.poison_dlq, 0) != result.poisons:
        failed.append(
            f"{result.dlq.get(result.poison_dlq, 0)} messages in the DLQ, "
            f"expected the {result.poisons} poison messages"
        )
    return failed
