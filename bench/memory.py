"""Memory: peak RSS of a 10,000-record SQS batch, and no growth over 1,000 warm invocations.

Each measure runs in a fresh interpreter (``python -c``), so nothing else in the bench's process
counts. The batch: the event arrives as JSON text and is decoded as the Lambda runtime does, then
the handler (its two lines and one ``get_logger`` line per record, to /dev/null) runs it; the peak
is read from ``/proc/self/status`` (``VmHWM``, reset just before the call with ``clear_refs``), so
what is reported is what the invocation adds over the process holding the decoded event. Growth:
``tracemalloc``'s traced memory after 100 warm invocations and after 1,000 more.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORDS = 10_000
WARM = 1_000
TARGET_EXTRA_MB = 20.0  # peak <= 2x the event's size + this
TARGET_GROWTH_BYTES = 16 * 1024  # over WARM invocations, at most (allocator and interning noise)

Target = tuple[str, bool, str]

_COMMON = """
import json, os, sys
from lambda_kit import get_logger, sqs_handler
from lambda_kit.testing import lambda_context, sqs_event
sys.stdout = open(os.devnull, "w")
log = get_logger("bench.memory")

@sqs_handler
def handler(message, context):
    log.info("counting", extra={"url": message["url"]})
    return len(message["url"])

BODY = {"url": "myblog.com/article-17", "time": "2022-03-28T13:17:23+00:00", \
"clientId": "adidOIkenODSksi92LHd6"}
context = lambda_context("view-counter", timeout=900)

def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
"""

_PEAK = (
    _COMMON
    + f"""
text = json.dumps(sqs_event(*[BODY] * {RECORDS}, trace_id=[f"trace-{{i}}" for i in range({RECORDS})]))
event = json.loads(text)  # as the runtime hands it over
before = status("VmRSS")
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # VmHWM back to the current RSS: the peak from here on is the invocation's
response = handler(event, context)
assert response == {{"batchItemFailures": []}}, response
print(json.dumps({{"size": len(text.encode()), "before": before, "peak": status("VmHWM")}}), file=sys.stderr)
"""
)

_GROWTH = (
    _COMMON
    + f"""
import tracemalloc
event = sqs_event(*[BODY] * 10, trace_id=[f"trace-{{i}}" for i in range(10)])
tracemalloc.start()
for _ in range(100):
    handler(event, context)
warm = tracemalloc.get_traced_memory()[0]
for _ in range({WARM}):
    handler(event, context)
after = tracemalloc.get_traced_memory()[0]
print(json.dumps({{"warm": warm, "after": after}}), file=sys.stderr)
"""
)


def _child(code: str) -> dict[str, int]:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(done.stderr.strip().splitlines()[-1])


def run() -> list[Target]:
    print("== memory: a 10,000-record SQS batch; 1,000 warm invocations ==")
    peak = _child(_PEAK)
    size_mb = peak["size"] / 2**20
    added_mb = (peak["peak"] - peak["before"]) / 2**20
    limit_mb = 2 * size_mb + TARGET_EXTRA_MB
    growth = _child(_GROWTH)
    grown = growth["after"] - growth["warm"]
    print(
        f"\n  event: {RECORDS:,} records, {size_mb:.1f} MB of JSON; process RSS holding it decoded "
        f"{peak['before'] / 2**20:.1f} MB; the invocation's peak adds {added_mb:.1f} MB "
        f"(target <= 2 x {size_mb:.1f} + {TARGET_EXTRA_MB:g} = {limit_mb:.1f} MB)"
    )
    print(
        f"  tracemalloc: {growth['warm'] / 1024:.1f} KiB traced after 100 warm invocations (batch of 10), "
        f"{growth['after'] / 1024:.1f} KiB after {WARM:,} more: {grown:+,} bytes"
    )
    return [
        (
            f"peak RSS of a {RECORDS:,}-record batch <= 2x the event + {TARGET_EXTRA_MB:g} MB",
            added_mb <= limit_mb,
            f"+{added_mb:.1f} MB for a {size_mb:.1f} MB event (limit {limit_mb:.1f} MB)",
        ),
        (
            f"no growth over {WARM:,} warm invocations (tracemalloc, <= {TARGET_GROWTH_BYTES // 1024} KiB)",
            grown <= TARGET_GROWTH_BYTES,
            f"{grown:+,} bytes",
        ),
    ]
