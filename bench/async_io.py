"""Async I/O: an ``async def`` that awaits 10 ms per record, a batch of 100 SQS records.

Wall time of one invocation (median of interleaved rounds), lambda_kit one record at a time
(``max_concurrency=1``) and with ``max_concurrency`` 10, 25 and 100, beside Powertools'
``AsyncBatchProcessor`` + ``async_process_partial_response`` (it gathers every record at once)
doing the same work. Log lines go to /dev/null; Powertools writes none, so lambda_kit is also run
with ``log_event=False, log_result=False`` for the like-for-like rows. Then the loop's own cost:
CPU µs per record with an ``await asyncio.sleep(0)`` body. Then what ``async def`` and
``model=`` add to a cold start.

Targets: with ``max_concurrency=25`` the batch takes at most 1/8 of the sequential run's wall time
(room for the loop's overhead on two shared cores: 25 at once is 1/25 at best; the table shows
10, whose best is 1/10, too); the loop's own CPU per record is no more than Powertools'
``AsyncBatchProcessor``'s for the same work.
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from time import perf_counter, process_time
from typing import Any

from bench.core import LONGEST

BATCH = 100
AWAIT_S = 0.010
ROUNDS = int(os.environ.get("BENCH_ASYNC_ROUNDS", "5"))
FAST_REPEATS = 5  # the variants that take ~15 ms run this many times per round (more samples, same cost)
OVERHEAD_ROUNDS = int(os.environ.get("BENCH_ROUNDS", "9"))
OVERHEAD_CALLS = 40  # invocations of 100 records per variant per round
COLD_RUNS = int(os.environ.get("BENCH_COLD_RUNS", "11"))
TARGET_CONCURRENCY = 25
TARGET_FRACTION = 1 / 8
ROOT = Path(__file__).resolve().parent.parent

Target = tuple[str, bool, str]


@contextmanager
def _stdout_to_devnull() -> Any:
    devnull = open(os.devnull, "w")  # noqa: SIM115
    saved = sys.stdout
    sys.stdout = devnull
    try:
        yield devnull
    finally:
        sys.stdout = saved
        devnull.close()


def _table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    print(f"\n{title}")
    print(
        "  "
        + "  ".join(
            h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths, strict=True))
        )
    )
    print("  " + "  ".join("-" * w for w in widths))
    for row in rows:
        print(
            "  "
            + "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )


# --- the variants ------------------------------------------------------------------------------


def _lambda_kit(concurrency: int, pause: float, logged: bool) -> Callable[[Any, Any], Any]:
    from lambda_kit import sqs_handler

    @sqs_handler(max_concurrency=concurrency, log_event=logged, log_result=logged)
    async def handler(message: Any, context: Any) -> Any:
        await asyncio.sleep(pause)
        return len(message["url"])

    return handler


def _powertools(pause: float) -> Callable[[Any, Any], Any]:
    from aws_lambda_powertools.utilities.batch import (
        AsyncBatchProcessor,
        EventType,
        async_process_partial_response,
    )

    processor = AsyncBatchProcessor(event_type=EventType.SQS)

    async def record_handler(record: Any) -> Any:
        await asyncio.sleep(pause)
        return len(record.json_body["url"])

    def handler(event: Any, context: Any) -> Any:
        return async_process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )

    return handler


def _check(handler: Callable[[Any, Any], Any], event: Any, context: Any) -> None:
    if handler(event, context) != {"batchItemFailures": []}:
        raise RuntimeError("bench: a variant failed records")


# --- wall time ---------------------------------------------------------------------------------


def _wall_times(event: Any, context: Any) -> dict[str, float]:
    variants: dict[str, Callable[[Any, Any], Any]] = {
        "lambda_kit, one at a time (max_concurrency=1)": _lambda_kit(1, AWAIT_S, True),
        "lambda_kit, max_concurrency=10": _lambda_kit(10, AWAIT_S, True),
        f"lambda_kit, max_concurrency={TARGET_CONCURRENCY}": _lambda_kit(TARGET_CONCURRENCY, AWAIT_S, True),
        "lambda_kit, max_concurrency=100": _lambda_kit(100, AWAIT_S, True),
        "lambda_kit, max_concurrency=100, no log lines": _lambda_kit(100, AWAIT_S, False),
        "Powertools AsyncBatchProcessor (all at once, no log lines)": _powertools(AWAIT_S),
    }
    samples: dict[str, list[float]] = {label: [] for label in variants}
    for handler in variants.values():
        _check(handler, event, context)  # warm: imports, the event loop
    items = list(variants.items())
    sequential = items[0][0]
    for round_ in range(ROUNDS):
        for label, handler in items if round_ % 2 == 0 else items[::-1]:
            for _ in range(1 if label == sequential else FAST_REPEATS):
                started = perf_counter()
                handler(event, context)
                samples[label].append((perf_counter() - started) * 1000)
    return {label: statistics.median(values) for label, values in samples.items()}


# --- the loop's own cost ------------------------------------------------------------------------

OURS = "lambda_kit async, max_concurrency=100, no log lines"
THEIRS = "Powertools AsyncBatchProcessor, no log lines"


def _overhead(event: Any, context: Any) -> tuple[dict[str, float], float]:
    """(label -> median CPU µs per record, median over rounds of lambda_kit's / Powertools' ratio
    with no log lines, both all at once: paired, as both ran in the same round)."""
    variants = {
        OURS: _lambda_kit(100, 0, False),
        "lambda_kit async, max_concurrency=1, no log lines": _lambda_kit(1, 0, False),
        THEIRS: _powertools(0),
        "lambda_kit async, max_concurrency=100, 2 log lines per record": _lambda_kit(100, 0, True),
    }
    samples: dict[str, list[float]] = {label: [] for label in variants}
    for handler in variants.values():
        _check(handler, event, context)
    items = list(variants.items())
    for round_ in range(OVERHEAD_ROUNDS):
        for label, handler in items if round_ % 2 == 0 else items[::-1]:
            gc.collect()
            started = process_time()
            for _ in range(OVERHEAD_CALLS):
                handler(event, context)
            samples[label].append((process_time() - started) * 1e6 / (OVERHEAD_CALLS * BATCH))
    ours, theirs = samples[OURS], samples[THEIRS]
    ratio = statistics.median(a / b for a, b in zip(ours, theirs, strict=True))
    return {label: statistics.median(values) for label, values in samples.items()}, ratio


# --- cold start ----------------------------------------------------------------------------------

_COLD = {
    "plain def under sqs_handler": "from lambda_kit import sqs_handler\nsqs_handler(lambda m, c: m)",
    "async def under sqs_handler (asyncio)": (
        "from lambda_kit import sqs_handler\nasync def f(m, c): return m\nsqs_handler(f)"
    ),
    "sqs_handler(model=<pydantic model>) (pydantic)": (
        "from pydantic import BaseModel\nfrom lambda_kit import sqs_handler\n"
        "class View(BaseModel):\n    url: str\n    time: str\nsqs_handler(model=View)(lambda m, c: m)"
    ),
}


def _cold_start() -> dict[str, tuple[float, float]]:
    """label -> (wall ms, CPU ms) of a fresh interpreter, medians."""
    import resource

    env = dict(os.environ)

    def spawn(code: str) -> tuple[float, float]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
        wall = (perf_counter() - started) * 1000
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000

    for code in _COLD.values():
        spawn(code)  # page cache, .pyc
    samples: dict[str, list[tuple[float, float]]] = {label: [] for label in _COLD}
    items = list(_COLD.items())
    for round_ in range(COLD_RUNS):
        for label, code in items if round_ % 2 == 0 else items[::-1]:
            samples[label].append(spawn(code))
    return {
        label: (statistics.median(w for w, _ in values), statistics.median(c for _, c in values))
        for label, values in samples.items()
    }


def run() -> list[Target]:
    from lambda_kit.testing import lambda_context, sqs_event

    body = {"url": "myblog.com/article-17", "time": "2022-03-28T13:17:23+00:00"}
    event = sqs_event(*[body] * BATCH, trace_id=[f"trace-{i}" for i in range(BATCH)])
    context = lambda_context("view-counter", timeout=LONGEST)
    with _stdout_to_devnull():
        wall = _wall_times(event, context)
        overhead, ratio = _overhead(event, context)
    cold = _cold_start()

    sequential = wall["lambda_kit, one at a time (max_concurrency=1)"]
    _table(
        f"Async I/O: {BATCH} SQS records, each awaiting {AWAIT_S * 1000:g} ms: wall ms per invocation "
        f"(median of {ROUNDS} interleaved rounds; lines to /dev/null)",
        ["variant", "wall ms", "of sequential"],
        [[label, f"{ms:.1f}", f"1/{sequential / ms:.1f}"] for label, ms in wall.items()],
    )
    _table(
        f"The loop's own cost: CPU µs per record, body `await asyncio.sleep(0)` (median of {OVERHEAD_ROUNDS} "
        f"rounds of {OVERHEAD_CALLS} invocations)",
        ["variant", "µs/record"],
        [[label, f"{us:.1f}"] for label, us in overhead.items()],
    )
    plain_wall, plain_cpu = cold["plain def under sqs_handler"]
    _table(
        f"Cold start: fresh interpreter, import + decorate (median of {COLD_RUNS}, interleaved; "
        "CPU = user + system of the child)",
        ["python -c ...", "wall ms", "added", "CPU ms", "added"],
        [
            [
                label,
                f"{w:.1f}",
                "" if w == plain_wall else f"{w - plain_wall:+.1f}",
                f"{c:.1f}",
                "" if c == plain_cpu else f"{c - plain_cpu:+.1f}",
            ]
            for label, (w, c) in cold.items()
        ],
    )

    bounded = wall[f"lambda_kit, max_concurrency={TARGET_CONCURRENCY}"]
    fraction = bounded / sequential
    ours, theirs = overhead[OURS], overhead[THEIRS]
    return [
        (
            f"max_concurrency={TARGET_CONCURRENCY}: wall <= 1/8 of one at a time",
            fraction <= TARGET_FRACTION,
            f"{bounded:.0f} ms vs {sequential:.0f} ms: 1/{1 / fraction:.1f}",
        ),
        (
            "loop CPU per record <= Powertools AsyncBatchProcessor's (all at once, no lines)",
            ratio <= 1.0,
            f"{ours:.1f} µs vs {theirs:.1f} µs (paired ratio {ratio:.2f}); "
            f"wall {wall['lambda_kit, max_concurrency=100, no log lines']:.1f} ms vs "
            f"{wall['Powertools AsyncBatchProcessor (all at once, no log lines)']:.1f} ms",
        ),
    ]
