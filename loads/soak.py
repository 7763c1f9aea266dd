"""The view-stats service's fault soak, which ``lambda-kit soak`` (``make soak``) runs because
serverless.yml names it (``custom.lambdaKit.soak``): the service on the local stack, driven with
view events while faults are injected, then every count checked.

With a fixed seed it plans ``events`` deliveries of valid view events and injects:

- **duplicate deliveries**: about ``duplicate_share`` of the unique events are delivered two to
  four times: re-POSTed soon after (same wave), re-POSTed or sent through the clickstream Kinesis
  stream after the first wave was counted (far apart in time), or sent twice back to back
  straight to the views queue in one ``SendMessageBatch`` (same batch of the counter);
- **DynamoDB faults** on ``fault_rate`` of the functions' DynamoDB calls, injected by a call hook
  of the stack's AWS proxy, which the functions' workers call through (the stack's own clients,
  pollers included, are not touched): ``ThrottlingException``,
  ``ProvisionedThroughputExceededException``, ``TransactionConflict`` (a
  ``TransactionCanceledException`` with that reason; ``TransactionConflictException`` on single
  item writes), a 500 ``InternalServerError`` before the request is carried out, and a 500 after
  it was carried out (the request is sent, its response replaced: the write happened, the
  caller does not know);
- **crashes after commit**: on ``crash_rate`` of the invocations whose work committed, a stack
  invocation hook raises after the function returned and before the event source acknowledged
  the batch, so the whole batch comes back (SQS after the visibility timeout; streams retry).
  Only first deliveries / first attempts crash, so the injected crashes alone never exhaust a
  retry budget (they would then be a poison of our making, not of the input);
- **poison**: not-JSON, missing-field, no-trace-id and ~1 MB (1,000,000-byte body: SQS and moto
  now accept up to 1 MiB) messages on the views queue, and a clickstream Kinesis record that
  always fails (requeued by the function, then dead-lettered).

Every AWS call each function makes is recorded (``lambda_kit.local.aws_calls``) as the IAM action
and resource it needs (``SoakResult.aws_calls``; ``tests/test_soak.py`` checks them against each
function's role in the packaged template).

It then reads the counts back over the API (``GET /views``, ``GET /stats``), reads the table with
the stack's own clients and checks: counted == unique, per article
and per day; no article counted above or below its unique events; every unique event's marker
present; each poison message in a DLQ exactly once and nothing else there, each with its trace id
on an ERROR line of the log file; site total ``AGG#VIEWS`` == sum of article totals (and per day);
distinct articles; every crossed milestone recorded once; every log line JSON with a trace id (a
batch's commit line: the trace ids of its records).

Everything is bounded by ``timeout`` and talks to loopback only (the embedded moto server and the
local API; a call the proxy would forward to any other host is refused).
"""

from __future__ import annotations

import argparse
import base64
import http.client
import itertools
import json
import os
import random
import string
import sys
import threading
import time
from collections import Counter as Tally
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from lambda_kit.cli import COUNT, SEED, bounded
from lambda_kit.local.logfile import DEFAULT_PATH
from lambda_kit.local.poller import Timing
from lambda_kit.local.runtime import Invocation

DEFAULT_EVENTS = 5000
DEFAULT_SEED = 20240521
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
POISON_TAG = "-poison-"
ONE_MB = 1_000_000


# --- options and plan ---------------------------------------------------------------------------


@dataclass
class SoakOptions:
    events: int = DEFAULT_EVENTS
    """Deliveries of valid view events (duplicates included; poison not included)."""
    seed: int = DEFAULT_SEED
    articles: int = 40
    duplicate_share: float = 0.2
    """Share of the unique events delivered more than once."""
    fault_rate: float = 0.1
    """Share of the functions' DynamoDB calls that fail."""
    crash_rate: float = 0.1
    """Share of committed (first-try) invocations that crash before their batch is acknowledged."""
    clickstream_share: float = 0.1
    """Share of first deliveries sent through the clickstream Kinesis stream instead of POST /views."""
    concurrency: int = 16
    timeout: float = 1200.0
    """Seconds for the whole soak; past it the soak stops waiting and fails."""
    config: str | os.PathLike[str] = "serverless.yml"
    stage: str = "soak"
    log_path: str | os.PathLike[str] | None = DEFAULT_PATH


@dataclass
class Delivery:
    kind: str  # "post" | "pair" | "kinesis" | "poison-sqs" | "poison-kinesis"
    trace_id: str
    view: dict[str, str] | None = None
    body: str | None = None  # poison: the raw message body / record data
    trace_attribute: bool = True  # poison-sqs: carry the trace id as a message attribute


@dataclass
class Plan:
    unique: list[dict[str, str]]
    first_wave: list[Delivery]
    second_wave: list[Delivery]
    duplicates: Tally[str]  # extra deliveries by how they were sent
    poisons: list[Delivery]

    @property
    def sent(self) -> int:
        return sum(
            2 if d.kind == "pair" else 1 for d in self.first_wave + self.second_wave if d.view is not None
        )


def make_plan(options: SoakOptions) -> Plan:
    """The deliveries, reproducibly from the seed (view times are relative to now)."""
    rng = random.Random(options.seed)
    urls = [f"myblog.com/article-{rank + 1}" for rank in range(options.articles)]
    weights = [1.0 / (rank + 1) ** 1.1 for rank in range(options.articles)]
    now = datetime.now(UTC).replace(microsecond=0)
    tag = f"soak-{options.seed}"
    numbers = itertools.count(1)
    unique: list[dict[str, str]] = []
    first: list[Delivery] = []
    second: list[Delivery] = []
    duplicates: Tally[str] = Tally()
    sent = 0
    while sent < options.events:
        view = {
            "url": rng.choices(urls, weights)[0],
            "time": (now - timedelta(seconds=rng.randrange(0, 6 * 86400))).isoformat(),
            "clientId": "".join(rng.choices(string.ascii_letters + string.digits, k=21)),
        }
        copies = 1
        if rng.random() < options.duplicate_share:
            copies += rng.choices((1, 2, 3), (0.7, 0.2, 0.1))[0]
        copies = min(copies, options.events - sent)
        sent += copies
        unique.append(view)
        extras = copies - 1
        if extras and rng.random() < 0.25:
            first.append(Delivery("pair", f"{tag}-{next(numbers):06d}", view))
            duplicates["same batch (twice back to back on the views queue)"] += 1
            extras -= 1
        elif rng.random() < options.clickstream_share:
            first.append(Delivery("kinesis", f"{tag}-{next(numbers):06d}", view))
        else:
            first.append(Delivery("post", f"{tag}-{next(numbers):06d}", view))
        for _ in range(extras):
            draw = rng.random()
            if draw < 0.5:
                second.append(Delivery("post", f"{tag}-{next(numbers):06d}", view))
                duplicates["re-POSTed after the first wave was counted"] += 1
            elif draw < 0.7:
                second.append(Delivery("kinesis", f"{tag}-{next(numbers):06d}", view))
                duplicates["through the clickstream after the first wave"] += 1
            else:
                first.append(Delivery("post", f"{tag}-{next(numbers):06d}", view))
                duplicates["re-POSTed within the same wave"] += 1
    rng.shuffle(first)
    rng.shuffle(second)

    when = now.isoformat()
    huge = json.dumps({"url": "myblog.com/" + "x" * (ONE_MB - 120), "time": when, "clientId": "huge"})
    poisons = [
        Delivery("poison-sqs", f"{tag}{POISON_TAG}not-json", body='this is not JSON {"url": '),
        Delivery(
            "poison-sqs", f"{tag}{POISON_TAG}missing-fields", body=json.dumps({"url": "myblog.com/poison"})
        ),
        Delivery(
            "poison-sqs",
            "",
            body=json.dumps({"url": "myblog.com/poison", "clientId": "no-trace-id"}),
            trace_attribute=False,
        ),
        Delivery("poison-sqs", f"{tag}{POISON_TAG}one-megabyte", body=huge),
        Delivery(
            "poison-kinesis",
            f"{tag}{POISON_TAG}kinesis",
            body=json.dumps(
                {
                    "trace_id": f"{tag}{POISON_TAG}kinesis",
                    "url": "myblog.com/poison",
                    "time": "not a time",
                    "clientId": "k",
                }
            ),
        ),
    ]
    for poison in poisons:
        first.insert(rng.randrange(0, len(first) + 1), poison)
    return Plan(unique, first, second, duplicates, poisons)


# --- DynamoDB faults in the functions' calls ------------------------------------------------


FAULT_KINDS = (
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "TransactionConflict",
    "InternalServerError (500, not carried out)",
    "InternalServerError (500 after the write was carried out)",
)
NOT_CARRIED_OUT, AFTER_WRITE = FAULT_KINDS[-2:]
WRITE_OPERATIONS = frozenset({"TransactWriteItems", "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"})


class ClientFaults:
    """A call hook of the stack's AWS proxy (``LocalStack.aws_proxy.hooks``), which every call of
    the functions' workers goes through (the stack's own clients, pollers included, do not):
    DynamoDB faults on a share of calls, and a guard refusing any call the proxy would forward to a
    host that is not loopback."""

    def __init__(self, rate: float, seed: int) -> None:
        self.rate = rate
        self._rng = random.Random(seed ^ 0x5EED)
        self._cycle = itertools.cycle(FAULT_KINDS)
        self._lock = threading.Lock()
        self.enabled = True
        self.calls: Tally[str] = Tally()
        self.injected: Tally[str] = Tally()
        self.applied_before_500 = 0
        self._after_write_owed = (
            False  # the 500-after-the-write fault drawn by a read, or by a refused write, is owed
        )
        self._refused_body: Any = None  # the refused write's body: its resends are not owed the fault
        self.refused: list[str] = []

    @property
    def total(self) -> int:
        return sum(self.injected.values())

    def __call__(self, call: Any, proceed: Callable[[], Any]) -> Any:
        host = urlsplit(call.upstream).hostname or ""
        if host not in LOOPBACK:
            with self._lock:
                self.refused.append(host)
            refusal = f"the soak refused a call to {host}"
            return _error(400, "com.amazon.coral.service#RequestRefused", refusal)
        if not self.enabled or call.service != "dynamodb":
            return proceed()
        return self._dynamodb(call, proceed)

    def _draw(self, operation: str, body: bytes) -> str | None:
        """The fault this call gets (None: none)."""
        with self._lock:
            self.calls[operation] += 1
            write = operation in WRITE_OPERATIONS
            if self._after_write_owed and write and body != self._refused_body:
                kind = (
                    AFTER_WRITE  # owed: a read drew it, or the write it fell on was refused (not its resend)
                )
                self._after_write_owed = False
            elif self._rng.random() >= self.rate:
                return None
            else:
                kind = next(self._cycle)
                if kind == AFTER_WRITE and not write:
                    kind = next(
                        self._cycle
                    )  # a lost response only means something for a write: the next one gets it
                    self._after_write_owed = True
            if kind != AFTER_WRITE:
                self.injected[kind] += 1
        return kind

    def _dynamodb(self, call: Any, proceed: Callable[[], Any]) -> Any:
        operation = call.operation
        kind = self._draw(operation, call.body)
        if kind is None:
            return proceed()
        if kind == "ThrottlingException":
            return _error(
                400,
                "com.amazon.coral.availability#ThrottlingException",
                "Rate of requests exceeds the allowed throughput.",
            )
        if kind == "ProvisionedThroughputExceededException":
            return _error(
                400,
                "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
                "The level of configured provisioned throughput for the table was exceeded.",
            )
        if kind == "TransactionConflict":
            return self._conflict(operation, call.body)
        if kind == AFTER_WRITE:
            applied = proceed().status == 200
            with self._lock:
                # a write DynamoDB refused (a duplicate's condition, a conflict) lost no response:
                # it counts as a 500 not carried out, and the next other write is owed the fault
                self.injected[AFTER_WRITE if applied else NOT_CARRIED_OUT] += 1
                self.applied_before_500 += applied
                if not applied:
                    self._after_write_owed, self._refused_body = True, call.body
        return _error(500, "com.amazonaws.dynamodb.v20120810#InternalServerError", "Internal server error")

    def _conflict(self, operation: str, body: bytes) -> Any:
        if operation != "TransactWriteItems":
            return _error(
                400,
                "com.amazonaws.dynamodb.v20120810#TransactionConflictException",
                "Transaction is ongoing for the item",
            )
        actions = len(json.loads(body or b"{}").get("TransactItems") or [None])
        with self._lock:
            reasons = [{"Code": "None"} for _ in range(actions)]
            reasons[self._rng.randrange(actions)] = {
                "Code": "TransactionConflict",
                "Message": "Transaction is ongoing for the item",
            }
        codes = ", ".join(r["Code"] for r in reasons)
        return _error(
            400,
            "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
            f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
            CancellationReasons=reasons,
        )


def _error(status: int, error_type: str, message: str, **extra: Any) -> Any:
    from lambda_kit.local.aws_proxy import Response

    body = json.dumps({"__type": error_type, "message": message, **extra}).encode()
    headers = [
        ("Content-Type", "application/x-amz-json-1.0"),
        ("Content-Length", str(len(body))),
        ("x-amzn-RequestId", "soak-injected"),
    ]
    return Response(status, headers, body)


# --- crashes after commit ---------------------------------------------------------------------


class InjectedCrash(RuntimeError):
    """The soak's crash after the work committed, before the batch was acknowledged."""


class CrashAfterCommit:
    """A stack invocation hook: after a batch function returned, with its work committed, crash on
    a share of first tries (SQS: every message on its first receive; streams: attempt 1), and on
    the first such invocation of each function."""

    def __init__(self, rate: float, seed: int) -> None:
        self.rate = rate
        self._rng = random.Random(seed ^ 0xC4A5)
        self._lock = threading.Lock()
        self.crashes: Tally[str] = Tally()
        self.eligible: Tally[str] = Tally()

    def __call__(self, invocation: Invocation, proceed: Callable[[], Any]) -> Any:
        response = proceed()
        if invocation.source not in ("sqs", "dynamodb", "kinesis") or not self._committed(
            invocation, response
        ):
            return response
        function = invocation.function.key
        with self._lock:
            self.eligible[function] += 1
            # The first chance of each function always crashes, so every run exercises each path.
            crash = self.eligible[function] == 1 or self._rng.random() < self.rate
            if crash:
                self.crashes[function] += 1
        if crash:
            raise InjectedCrash(
                f"soak: {function} crashed after its work committed, before the batch was acknowledged"
            )
        return response

    @staticmethod
    def _committed(invocation: Invocation, response: Any) -> bool:
        records = (invocation.event or {}).get("Records") or []
        failed = (response or {}).get("batchItemFailures") or [] if isinstance(response, dict) else []
        if not records or len(failed) >= len(records):
            return False  # nothing was committed
        if invocation.source == "sqs":
            return all((r.get("attributes") or {}).get("ApproximateReceiveCount") == "1" for r in records)
        if invocation.attempt != 1 or failed:
            return False
        if invocation.source == "kinesis":  # not with the poison record in it: its requeue is a side effect
            for record in records:
                try:
                    data = base64.b64decode(record["kinesis"]["data"])
                except Exception:
                    return False
                if POISON_TAG.encode() in data or b"lambda_kit_requeue" in data:
                    return False
        return True


# --- result -----------------------------------------------------------------------------------


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""


@dataclass
class SoakResult:
    options: SoakOptions
    sent: int = 0
    unique: int = 0
    duplicates: dict[str, int] = field(default_factory=dict)
    pairs_in_one_batch: int = 0
    pairs: int = 0
    rejected_posts: int = 0
    not_sent: int = 0
    counted: int = 0
    double_counted: int = 0
    double_counted_articles: list[str] = field(default_factory=list)
    lost: int = 0
    lost_articles: list[str] = field(default_factory=list)
    markers_missing: int = 0
    articles: int = 0
    articles_exact: int = 0
    day_buckets_wrong: int = 0
    per_article: dict[str, dict[str, int]] = field(default_factory=dict)
    site_total: int | None = None
    site_days_wrong: int = 0
    distinct_articles: int | None = None
    milestones_expected: int = 0
    milestones_recorded: int = 0
    milestones_missing: list[str] = field(default_factory=list)
    poison_injected: int = 0
    poison_in_dlq: int = 0
    dlq: dict[str, int] = field(default_factory=dict)
    dlq_unexpected: list[str] = field(default_factory=list)
    poison_missing: list[str] = field(default_factory=list)
    poison_error_lines: dict[str, int] = field(default_factory=dict)
    log_lines: int = 0
    log_lines_bad: int = 0
    log_lines_without_trace: int = 0
    untraced: list[str] = field(default_factory=list)  # the first few such lines, for the summary
    error_lines: int = 0
    dynamodb_calls: dict[str, int] = field(default_factory=dict)
    faults: dict[str, int] = field(default_factory=dict)
    writes_applied_before_500: int = 0
    crashes: dict[str, int] = field(default_factory=dict)
    sqs_batches_failed: int = 0
    stream_batches_failed: int = 0
    refused_hosts: list[str] = field(default_factory=list)
    aws_calls: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    """{function: {IAM action: {resource ARN: calls}}}: every AWS call the functions made."""
    resource_ids: dict[str, str] = field(default_factory=dict)
    """{resource ARN: "LogicalId.Arn"} of the stack's tables, queues, topics and streams."""
    api_reads: dict[str, Any] = field(default_factory=dict)
    drained: bool = False
    timed_out: bool = False
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    log_path: str | None = None
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def as_dict(self) -> dict[str, Any]:
        return {
            "events_sent": self.sent,
            "unique_valid_events": self.unique,
            "duplicate_deliveries": dict(self.duplicates),
            "pairs_in_one_batch": self.pairs_in_one_batch,
            "pairs": self.pairs,
            "rejected_posts": self.rejected_posts,
            "not_sent": self.not_sent,
            "counted": self.counted,
            "double_counted": self.double_counted,
            "double_counted_articles": self.double_counted_articles,
            "lost": self.lost,
            "lost_articles": self.lost_articles,
            "markers_missing": self.markers_missing,
            "articles": self.articles,
            "articles_exact": self.articles_exact,
            "day_buckets_wrong": self.day_buckets_wrong,
            "per_article": self.per_article,
            "site_total": self.site_total,
            "site_days_wrong": self.site_days_wrong,
            "distinct_articles": self.distinct_articles,
            "milestones_expected": self.milestones_expected,
            "milestones_recorded": self.milestones_recorded,
            "poison_injected": self.poison_injected,
            "poison_in_dlq": self.poison_in_dlq,
            "dlq": dict(self.dlq),
            "poison_error_lines": dict(self.poison_error_lines),
            "log_lines": self.log_lines,
            "log_lines_bad": self.log_lines_bad,
            "log_lines_without_trace_id": self.log_lines_without_trace,
            "error_lines": self.error_lines,
            "dynamodb_calls": dict(self.dynamodb_calls),
            "faults": dict(self.faults),
            "writes_applied_before_500": self.writes_applied_before_500,
            "crashes_after_commit": dict(self.crashes),
            "sqs_batches_failed": self.sqs_batches_failed,
            "stream_batches_failed": self.stream_batches_failed,
            "refused_non_loopback": list(self.refused_hosts),
            "aws_calls": self.aws_calls,
            "api_reads": dict(self.api_reads),
            "drained": self.drained,
            "seconds": round(self.seconds, 1),
            "phases": {k: round(v, 1) for k, v in self.phases.items()},
            "seed": self.options.seed,
            "ok": self.ok,
            "checks": {c.name: {"ok": c.ok, "detail": c.detail} for c in self.checks},
        }


# --- running it -------------------------------------------------------------------------------


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self.end - time.monotonic())

    @property
    def passed(self) -> bool:
        return time.monotonic() >= self.end


def run_soak(options: SoakOptions | None = None, out: TextIO | None = None) -> SoakResult:
    """Run the soak; never raises for a failed check (see ``SoakResult.checks``)."""
    from lambda_kit.local.aws_calls import resource_ids
    from lambda_kit.local.stack import LocalStack

    options = options or SoakOptions()
    out = out or sys.stdout
    deadline = _Deadline(options.timeout)
    result = SoakResult(options=options)
    started = time.monotonic()
    plan = make_plan(options)
    result.sent, result.unique = plan.sent, len(plan.unique)
    result.duplicates = dict(plan.duplicates)
    result.poison_injected = len(plan.poisons)

    faults = ClientFaults(options.fault_rate, options.seed)
    crashes = CrashAfterCommit(options.crash_rate, options.seed)
    stack = LocalStack(
        options.config,
        stage=options.stage,
        endpoint_url=None,  # the embedded moto server on 127.0.0.1, whatever AWS_ENDPOINT_URL says
        dynamodb_endpoint_url=None,  # and DynamoDB Local started for the soak (moto's where it cannot run)
        api_port=0,
        log_path=options.log_path,
        timing=Timing(),
        ttl=False,  # nothing expires within a soak; the sweep would scan the whole table every 2 s
        hooks=[crashes],
    )
    try:
        stack.start()
        stack.aws_proxy.hooks.append(faults)  # the functions' calls, not the stack's own
        _say(
            out,
            f"lambda-kit soak · {result.sent} view events ({result.unique} unique) + "
            f"{len(plan.poisons)} poison, seed {options.seed}, DynamoDB faults on "
            f"{options.fault_rate:.0%} of calls, crashes after commit on "
            f"{options.crash_rate:.0%} of first tries · API {stack.api_url} · AWS {stack.endpoint_url}"
            f" · DynamoDB: {stack.dynamodb_description}",
        )
        for url in (stack.api_url, stack.endpoint_url, stack.dynamodb_url):
            if urlsplit(url).hostname not in LOOPBACK:
                raise RuntimeError(f"the soak only talks to loopback, not {url}")
        sender = _Sender(stack, options, deadline, out)
        phase = time.monotonic()
        sender.send(plan.first_wave, "first wave")
        result.phases["first wave sent"] = time.monotonic() - phase
        phase = time.monotonic()
        _say(out, "  waiting until the first wave is counted ...")
        drained_first = stack.wait_drained(deadline.left())
        result.phases["first wave drained"] = time.monotonic() - phase
        phase = time.monotonic()
        sender.send(plan.second_wave, "second wave (late duplicates)")
        result.phases["second wave sent"] = time.monotonic() - phase
        phase = time.monotonic()
        _say(out, "  waiting until every queue and stream is drained ...")
        result.drained = drained_first and stack.wait_drained(deadline.left())
        result.phases["second wave drained"] = time.monotonic() - phase
        result.timed_out = deadline.passed
        result.rejected_posts = sender.rejected
        result.not_sent = sender.skipped
        result.pairs = len(sender.pair_ids)
        result.pairs_in_one_batch = _pairs_in_one_batch(stack, sender.pair_ids)
        phase = time.monotonic()
        result.resource_ids = resource_ids(stack.resources, stack.region)
        faults.enabled = False  # the reads after the load: nothing left to retry them
        _read_api(sender, plan, result)
        _read_table(stack, plan, result)
        _read_dead_letters(stack, plan, result)
        failed_batches = stack.journal.events("sqs.batch")
        result.sqs_batches_failed = sum(1 for e in failed_batches if e.get("failed"))
        result.stream_batches_failed = sum(
            1 for e in stack.journal.events("stream.batch") if e.get("failed_at") is not None
        )
        result.phases["checks"] = time.monotonic() - phase
    finally:
        stack.stop()
    result.dynamodb_calls = dict(faults.calls)
    result.faults = {kind: faults.injected.get(kind, 0) for kind in FAULT_KINDS}
    result.writes_applied_before_500 = faults.applied_before_500
    result.crashes = dict(crashes.crashes)
    result.refused_hosts = sorted(set(faults.refused))
    result.aws_calls = stack.calls.by_function()
    result.log_path = str(options.log_path) if options.log_path is not None else None
    _read_log(result)
    result.seconds = time.monotonic() - started
    _judge(result)
    return result


def _say(out: TextIO, text: str) -> None:
    out.write(text + "\n")
    out.flush()


class _Sender:
    def __init__(self, stack: Any, options: SoakOptions, deadline: _Deadline, out: TextIO) -> None:
        self.stack = stack
        self.out = out
        self.options = options
        self.deadline = deadline
        self.base = urlsplit(stack.api_url)
        self.queue_url = stack.sqs_sources[0].queue_url
        kinesis = [s for s in stack.streams if s.source == "kinesis"]
        if not kinesis:
            raise RuntimeError("the soak needs the clickstream Kinesis stream of the view-stats service")
        self.stream_name = kinesis[0].stream_arn.split(":stream/", 1)[1]
        self.local = threading.local()
        self.lock = threading.Lock()
        self.rejected = 0
        self.skipped = 0
        self.pair_ids: list[tuple[str, str]] = []

    def send(self, deliveries: list[Delivery], label: str) -> None:
        from .demo import Progress

        progress = Progress(len(deliveries), self.out, label)

        def one(delivery: Delivery) -> None:
            if self.deadline.passed:
                with self.lock:
                    self.skipped += 1
                return
            self._send(delivery)
            progress.step()

        with ThreadPoolExecutor(max_workers=self.options.concurrency, thread_name_prefix="soak") as pool:
            list(pool.map(one, deliveries))

    def _send(self, delivery: Delivery) -> None:
        sqs, kinesis = self.stack.clients("sqs"), self.stack.clients("kinesis")
        if delivery.kind == "post":
            status = self._post(delivery.view, delivery.trace_id)
            if status != 202:
                with self.lock:
                    self.rejected += 1
        elif delivery.kind == "pair":
            body = json.dumps(delivery.view)
            sent = sqs.send_message_batch(
                QueueUrl=self.queue_url,
                Entries=[
                    {"Id": "a", "MessageBody": body, "MessageAttributes": _trace(delivery.trace_id + "a")},
                    {"Id": "b", "MessageBody": body, "MessageAttributes": _trace(delivery.trace_id + "b")},
                ],
            )
            ids = {entry["Id"]: entry["MessageId"] for entry in sent.get("Successful", [])}
            with self.lock:
                self.pair_ids.append((ids.get("a", ""), ids.get("b", "")))
        elif delivery.kind == "kinesis":
            data = json.dumps({**(delivery.view or {}), "trace_id": delivery.trace_id})
            kinesis.put_record(
                StreamName=self.stream_name, Data=data.encode(), PartitionKey=delivery.trace_id
            )
        elif delivery.kind == "poison-sqs":
            attributes = _trace(delivery.trace_id) if delivery.trace_attribute else {}
            sqs.send_message(
                QueueUrl=self.queue_url, MessageBody=delivery.body or "", MessageAttributes=attributes
            )
        elif delivery.kind == "poison-kinesis":
            kinesis.put_record(
                StreamName=self.stream_name,
                Data=(delivery.body or "").encode(),
                PartitionKey=delivery.trace_id,
            )

    def get(self, path: str) -> tuple[int, Any]:
        connection = http.client.HTTPConnection(self.base.hostname, self.base.port, timeout=60)
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            body = response.read()
            return response.status, json.loads(body) if body else None
        finally:
            connection.close()

    def _post(self, view: Any, trace_id: str) -> int:
        for attempt in range(3):
            connection = getattr(self.local, "connection", None)
            if connection is None:
                connection = self.local.connection = http.client.HTTPConnection(
                    self.base.hostname, self.base.port, timeout=60
                )
            try:
                connection.request(
                    "POST",
                    "/views",
                    body=json.dumps(view).encode(),
                    headers={"Content-Type": "application/json", "X-Trace-Id": trace_id},
                )
                response = connection.getresponse()
                response.read()
                return response.status
            except (OSError, http.client.HTTPException):
                connection.close()
                self.local.connection = None
                if attempt == 2:
                    raise
        return 0


def _trace(trace_id: str) -> dict[str, Any]:
    return {"trace_id": {"DataType": "String", "StringValue": trace_id}}


def _pairs_in_one_batch(stack: Any, pairs: list[tuple[str, str]]) -> int:
    """How many back-to-back pairs the counter got in one invocation (first delivery)."""
    first_batch: dict[str, int] = {}
    for number, event in enumerate(stack.journal.events("sqs.batch")):
        for message_id in [*event.get("deleted", []), *event.get("failed", [])]:
            first_batch.setdefault(message_id, number)
    return sum(1 for a, b in pairs if a in first_batch and first_batch.get(a) == first_batch.get(b))


# --- reading what happened --------------------------------------------------------------------


def _table_name(stack: Any) -> str:
    tables = stack.resources.of_type("AWS::DynamoDB::Table")
    if len(tables) != 1:
        raise RuntimeError("the soak expects the view-stats service's one DynamoDB table")
    return tables[0].attributes["Ref"]


def _read_api(sender: _Sender, plan: Plan, result: SoakResult) -> None:
    """The counts as a reader gets them: GET /views of the most viewed article, GET /stats."""
    from urllib.parse import quote

    top = Tally(view["url"] for view in plan.unique).most_common(1)[0][0]
    status, body = sender.get(f"/views?url={quote(top, safe='')}")
    result.api_reads["views"] = {
        "url": top,
        "status": status,
        "views": (body or {}).get("views") if isinstance(body, dict) else None,
    }
    status, body = sender.get("/stats")
    result.api_reads["stats"] = {
        "status": status,
        "views": (body or {}).get("views") if isinstance(body, dict) else None,
    }


def _read_table(stack: Any, plan: Plan, result: SoakResult) -> None:
    """What the table holds, against what the plan sent: expected counts come from the plan's views
    alone and actual ones from a raw, consistent Scan of the table in the layout docs/counters.md
    documents (no ``parse_view``, no ``Counter``: the code under test computes neither side)."""
    from handlers.aggregates import DISTINCT_ARTICLES, MILESTONES_PK, SITE_VIEWS

    table = _table_name(stack)
    client = stack.clients("dynamodb")
    # the plan's urls are already normalized and its times UTC ISO 8601: a view counts under
    # URL#<url>, URL#<url>#DAY#<yyyy-mm-dd> and the site's AGG#VIEWS#DAY#<yyyy-mm-dd>
    expected: Tally[str] = Tally(view["url"] for view in plan.unique)
    expected_days: Tally[tuple[str, str]] = Tally((view["url"], view["time"][:10]) for view in plan.unique)
    days = sorted({day for _, day in expected_days})

    counts: Tally[str] = Tally()  # a counter's count, its shards summed
    markers: Tally[str] = Tally()  # event markers per counter partition key
    request: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        page = client.scan(**request)
        for item in page.get("Items", []):
            pk, sk = item["PK"]["S"], item["SK"]["S"]
            if sk == "COUNT":
                key, separator, shard = pk.rpartition("#SHARD#")
                counts[key if separator and shard.isdigit() else pk] += int(item["count"]["N"])
            elif sk.startswith("EVENT#"):
                markers[pk] += 1
        if "LastEvaluatedKey" not in page:
            break
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    result.articles = len(expected)
    for url in sorted(expected, key=lambda u: (-expected[u], u)):
        actual = counts[f"URL#{url}"]
        result.per_article[url] = {"expected": expected[url], "actual": actual}
        result.counted += actual
        if actual > expected[url]:
            result.double_counted += actual - expected[url]
            result.double_counted_articles.append(url)
        elif actual < expected[url]:
            result.lost += expected[url] - actual
            result.lost_articles.append(url)
        else:
            result.articles_exact += 1
    result.day_buckets_wrong = sum(
        1
        for url in expected
        for day in days
        if counts[f"URL#{url}#DAY#{day}"] != expected_days.get((url, day), 0)
    )
    result.site_total = counts[SITE_VIEWS]
    result.distinct_articles = counts[DISTINCT_ARTICLES]
    per_day = Tally({day: sum(n for (_, d), n in expected_days.items() if d == day) for day in days})
    result.site_days_wrong = sum(1 for day in days if counts[f"{SITE_VIEWS}#DAY#{day}"] != per_day[day])
    # every unique view leaves one marker under its article's counter (the article keys are not sharded)
    result.markers_missing = sum(max(0, n - markers[f"URL#{url}"]) for url, n in expected.items())

    # milestones are 10, 100, 1,000 ...: one per power of ten an article's count reached
    wanted = {f"{url}#{10**power}" for url, n in expected.items() for power in range(1, len(str(n)))}
    recorded: set[str] = set()
    request: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "PK = :pk",
        "ExpressionAttributeValues": {":pk": {"S": MILESTONES_PK}},
        "ConsistentRead": True,
    }
    while True:
        page = client.query(**request)
        recorded.update(item["SK"]["S"] for item in page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            break
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    result.milestones_expected = len(wanted)
    result.milestones_recorded = len(recorded)
    result.milestones_missing = sorted(wanted - recorded)[:10]
    if recorded - wanted:
        result.milestones_missing.append(f"unexpected: {sorted(recorded - wanted)[:5]}")


def _read_dead_letters(stack: Any, plan: Plan, result: SoakResult) -> None:
    from lambda_kit.local.sqs_source import lambda_record
    from lambda_kit.sources.sqs import SqsSource

    source = SqsSource(json=False)
    poison_ids = {p.trace_id for p in plan.poisons if p.trace_id}
    found: Tally[str] = Tally()
    without_attribute: list[str] = []
    prefix = f"{stack.config.service}-{stack.config.stage}-"
    for logical, url in stack.dead_letter_queues().items():
        name = stack.resources.by_id[logical].attributes.get("QueueName", logical)
        messages = stack.receive_all(url)
        result.dlq[name[len(prefix) :] if name.startswith(prefix) else name] = len(messages)
        for message in messages:
            [record] = source.read(
                lambda_record(message, stack.resources.by_id[logical].attributes.get("Arn", ""), stack.region)
            )
            trace_id = record.trace_id
            if trace_id in poison_ids:
                found[trace_id] += 1
            elif "trace_id" not in (message.get("MessageAttributes") or {}) and "no-trace-id" in (
                message.get("Body") or ""
            ):
                without_attribute.append(
                    trace_id
                )  # the poison sent without a trace id: its id is the message's
                found[trace_id] += 1
            else:
                result.dlq_unexpected.append(f"{name}: {trace_id}")
    result.poison_in_dlq = sum(result.dlq.values())
    expected_ids = poison_ids | set(without_attribute)
    result.poison_missing = sorted(p for p in poison_ids if found[p] == 0)
    if len(without_attribute) != 1:
        result.poison_missing.append(
            f"the poison without a trace id attribute ({len(without_attribute)} found)"
        )
    result.dlq_unexpected += [f"{t} x{n}" for t, n in found.items() if n > 1]
    result.poison_error_lines = {trace_id: 0 for trace_id in sorted(expected_ids)}


SDK_LOGGERS = ("botocore", "boto3", "urllib3", "s3transfer")
"""Libraries whose plain ``logging`` lines lambda_kit writes under Lambda's runtime (docs/logging.md)."""


def _read_log(result: SoakResult) -> None:
    if result.log_path is None:
        return
    wanted = result.poison_error_lines
    path = Path(result.log_path)
    if not path.exists():
        return
    with open(path, encoding="utf-8", errors="replace") as lines:
        for text in lines:
            result.log_lines += 1
            try:
                line = json.loads(text)
            except ValueError:
                result.log_lines_bad += 1
                continue
            if not isinstance(line, dict):
                result.log_lines_bad += 1
                continue
            if str(line.get("type", "")).startswith("platform.") or line.get("origin") == "runtime":
                continue  # Lambda's own lines (START / END / REPORT, the runtime's report of an error)
            if str(line.get("logger", "")).split(".")[0] in SDK_LOGGERS and "trace_id" not in line:
                continue  # the AWS SDK's own line outside a record (a client made at a batch's commit)
            trace_id = line.get("trace_id")
            traced = isinstance(trace_id, str) and trace_id
            batch = (
                isinstance(line.get("trace_ids"), list) and line["trace_ids"]
            )  # a batch's commit: each record's
            if not (traced or batch):
                result.log_lines_without_trace += 1
                if len(result.untraced) < 3:
                    result.untraced.append(text.strip()[:300])
            if line.get("level") == "ERROR":
                result.error_lines += 1
                if trace_id in wanted:
                    wanted[trace_id] += 1


def _judge(result: SoakResult) -> None:
    checks = result.checks
    checks.append(
        Check(
            "finished in time",
            result.drained and not result.timed_out,
            f"drained after {result.seconds:.0f} s"
            if result.drained
            else f"not drained within {result.options.timeout:.0f} s",
        )
    )
    checks.append(
        Check(
            "every delivery sent and accepted",
            result.rejected_posts == 0 and result.not_sent == 0,
            f"{result.rejected_posts} POSTs rejected, {result.not_sent} deliveries not sent (timeout)",
        )
    )
    checks.append(
        Check(
            "counted == unique",
            result.counted == result.unique,
            f"{result.counted} counted, {result.unique} unique",
        )
    )
    checks.append(
        Check(
            "per article exact",
            result.articles_exact == result.articles,
            f"{result.articles_exact}/{result.articles} articles",
        )
    )
    checks.append(
        Check(
            "double counted == 0",
            result.double_counted == 0,
            f"{result.double_counted} ({', '.join(result.double_counted_articles[:5])})"
            if result.double_counted
            else "0",
        )
    )
    checks.append(
        Check(
            "lost == 0",
            result.lost == 0 and result.markers_missing == 0,
            f"{result.lost} below expected, {result.markers_missing} markers missing",
        )
    )
    checks.append(
        Check(
            "day buckets exact",
            result.day_buckets_wrong == 0,
            f"{result.day_buckets_wrong} article-days wrong",
        )
    )
    checks.append(
        Check(
            "site total == sum of article totals",
            result.site_total == result.counted,
            f"AGG#VIEWS {result.site_total}, articles {result.counted}",
        )
    )
    views, stats = result.api_reads.get("views") or {}, result.api_reads.get("stats") or {}
    article = result.per_article.get(views.get("url") or "", {})
    checks.append(
        Check(
            "the API reads the counts back",
            views.get("status") == 200
            and views.get("views") == article.get("expected")
            and stats.get("status") == 200
            and stats.get("views") == result.site_total,
            f"GET /views {views.get('status')}: {views.get('views')} of {article.get('expected')}; "
            f"GET /stats {stats.get('status')}: {stats.get('views')} of {result.site_total}",
        )
    )
    checks.append(
        Check("site day totals", result.site_days_wrong == 0, f"{result.site_days_wrong} days wrong")
    )
    checks.append(
        Check(
            "distinct articles",
            result.distinct_articles == result.articles,
            f"AGG#ARTICLES {result.distinct_articles}, {result.articles} articles viewed",
        )
    )
    checks.append(
        Check(
            "milestones recorded once each",
            not result.milestones_missing and result.milestones_recorded == result.milestones_expected,
            f"{result.milestones_recorded}/{result.milestones_expected}"
            + (f" ({result.milestones_missing})" if result.milestones_missing else ""),
        )
    )
    checks.append(
        Check(
            "poison in DLQs == injected",
            result.poison_in_dlq == result.poison_injected
            and not result.poison_missing
            and not result.dlq_unexpected,
            f"{result.poison_in_dlq} of {result.poison_injected}"
            + (f"; missing {result.poison_missing}" if result.poison_missing else "")
            + (f"; unexpected {result.dlq_unexpected[:5]}" if result.dlq_unexpected else ""),
        )
    )
    no_error_line = [t for t, n in result.poison_error_lines.items() if n == 0]
    checks.append(
        Check(
            "each poison's trace id on an ERROR line",
            bool(result.poison_error_lines) and not no_error_line,
            f"missing for {no_error_line}"
            if no_error_line
            else f"{len(result.poison_error_lines)} trace ids",
        )
    )
    checks.append(
        Check(
            "every log line JSON with a trace id",
            result.log_lines > 0 and result.log_lines_bad == 0 and result.log_lines_without_trace == 0,
            f"{result.log_lines} lines, {result.log_lines_bad} not JSON, "
            f"{result.log_lines_without_trace} without trace id"
            + "".join(f"; e.g. {line}" for line in result.untraced[:1]),
        )
    )
    checks.append(
        Check(
            "faults injected",
            result.faults and all(result.faults.values()) and sum(result.crashes.values()) > 0,
            f"{sum(result.faults.values())} DynamoDB faults, {sum(result.crashes.values())} crashes",
        )
    )
    checks.append(
        Check(
            "loopback only",
            not result.refused_hosts,
            ", ".join(result.refused_hosts) or "no other host contacted",
        )
    )


def summary(result: SoakResult) -> str:
    mark = {True: "✓", False: "✗"}
    by_name = {c.name: c for c in result.checks}

    def flag(name: str) -> str:
        check = by_name.get(name)
        return mark[check.ok] if check else " "

    calls = sum(result.dynamodb_calls.values())
    dupes = sum(result.duplicates.values())
    rows = [
        "",
        (
            f"  events sent            {result.sent:>7}   view events (+ {result.poison_injected} poison); "
            f"{dupes} duplicate deliveries:"
        ),
    ]
    for how, count in sorted(result.duplicates.items(), key=lambda kv: -kv[1]):
        rows.append(f"                                   {count:>5} {how}")
    rows.append(
        f"                                   ({result.pairs_in_one_batch} of {result.pairs} "
        "back-to-back pairs reached the counter in one batch)"
    )
    rows += [
        f"  unique valid events    {result.unique:>7}",
        f"  counted                {result.counted:>7}   {flag('counted == unique')} == unique "
        f"(sum of {result.articles} article totals; "
        f"{result.articles_exact}/{result.articles} articles exact {flag('per article exact')}, "
        f"day buckets {flag('day buckets exact')})",
        f"  double counted         {result.double_counted:>7}   {flag('double counted == 0')}",
        f"  lost                   {result.lost:>7}   {flag('lost == 0')} "
        f"({result.markers_missing} unique events without their marker)",
        f"  poison in DLQs         {result.poison_in_dlq:>7}   {flag('poison in DLQs == injected')} "
        f"of {result.poison_injected} injected  "
        + ", ".join(f"{k} {v}" for k, v in sorted(result.dlq.items())),
        "                                   "
        f"{flag('each poison' + chr(39) + 's trace id on an ERROR line')} each trace id on ERROR lines: "
        + ", ".join(f"{t} x{n}" for t, n in result.poison_error_lines.items()),
        f"  site total AGG#VIEWS   {result.site_total if result.site_total is not None else '-':>7}   "
        f"{flag('site total == sum of article totals')} == sum of article totals; "
        f"per day {flag('site day totals')}",
        "  distinct articles      "
        f"{result.distinct_articles if result.distinct_articles is not None else '-':>7}   "
        f"{flag('distinct articles')}",
        f"  milestones             {result.milestones_recorded:>7}   "
        f"{flag('milestones recorded once each')} of {result.milestones_expected} crossed",
        f"  log lines              {result.log_lines:>7}   "
        f"{flag('every log line JSON with a trace id')} all JSON with a trace id "
        f"({result.error_lines} ERROR)",
        f"  DynamoDB faults        {sum(result.faults.values()):>7}   of {calls} calls by the functions: "
        + ", ".join(f"{k} {v}" for k, v in result.faults.items()),
        f"                                   ({result.writes_applied_before_500} "
        "of the 500s-after came after a write that was applied)",
        f"  crashes after commit   {sum(result.crashes.values()):>7}   "
        + ", ".join(f"{k} {v}" for k, v in sorted(result.crashes.items()))
        + f"  (failed batches redelivered: sqs {result.sqs_batches_failed}, "
        f"stream {result.stream_batches_failed})",
        f"  API reads              {flag('the API reads the counts back')}         "
        "GET /views and GET /stats agree with the table",
        "  AWS calls by function  "
        f"{sum(n for f in result.aws_calls.values() for a in f.values() for n in a.values()):>7}   "
        + "; ".join(
            f"{function} " + ", ".join(sorted(actions))
            for function, actions in sorted(result.aws_calls.items())
        ),
        f"  time                   {result.seconds:>6.1f}s   "
        + ", ".join(f"{k} {v:.1f} s" for k, v in result.phases.items()),
    ]
    failed = result.failed
    rows.append("")
    rows.append(
        "  RESULT: "
        + (
            "all checks passed"
            if not failed
            else "FAILED: " + "; ".join(f"{c.name} ({c.detail})" for c in failed)
        )
    )
    return "\n".join(rows) + "\n"


# --- lambda-kit soak --------------------------------------------------------------------------


def options(parser: Any) -> None:
    """The soak's options on ``lambda-kit soak`` (which gives ``-c``, ``--stage``, ``--logs``,
    ``--timeout`` and ``--json``)."""
    share = bounded(float, 0, 0.5, "a share")
    parser.add_argument(
        "--events",
        type=COUNT,
        default=DEFAULT_EVENTS,
        help="view events to deliver, duplicates included (default: %(default)s)",
    )
    parser.add_argument("--seed", type=SEED, default=DEFAULT_SEED, help="random seed (default: %(default)s)")
    parser.add_argument("--articles", type=COUNT, default=40, help="distinct articles (default: %(default)s)")
    parser.add_argument(
        "--duplicates",
        type=share,
        default=0.2,
        help="share of unique events delivered more than once, 0..0.5 (default: %(default)s)",
    )
    parser.add_argument(
        "--fault-rate",
        type=share,
        default=0.1,
        help="share of the functions' DynamoDB calls that fail, 0..0.5 (default: %(default)s)",
    )
    parser.add_argument(
        "--crash-rate",
        type=share,
        default=0.1,
        help="share of committed first tries that crash before the ack, 0..0.5 (default: %(default)s)",
    )


def soak(args: argparse.Namespace, out: TextIO) -> list[str]:
    """``lambda-kit soak``: the soak, its summary (and ``--json`` figures) on ``out``; the names of
    the checks that failed."""
    result = run_soak(
        SoakOptions(
            events=args.events,
            seed=args.seed,
            articles=args.articles,
            duplicate_share=args.duplicates,
            fault_rate=args.fault_rate,
            crash_rate=args.crash_rate,
            timeout=args.timeout,
            config=args.config,
            stage=args.stage,
            log_path=args.logs,
        ),
        out=out,
    )
    out.write(summary(result) + "\n")
    if args.json:
        out.write(
            json.dumps({k: v for k, v in result.as_dict().items() if k != "per_article"}, ensure_ascii=False)
            + "\n"
        )
    out.flush()
    return [check.name for check in result.failed]
