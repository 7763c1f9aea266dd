"""Tumbling windows and CloudWatch Logs subscriptions: what they cost per record.

- the window guard every ``stream_handler`` function runs through, on a stream without a window;
- a windowed function reading and changing its state, by state size (each record that reads the
  state is checked: encoded once, its size measured);
- one log event of a CloudWatch Logs subscription (unpacked from gzip, its lambda_kit line decoded
  for the trace id), through ``cloudwatch_logs_handler`` and through Kinesis.

CPU µs per record of this process (``process_time``), logs written to /dev/null as in ``core``.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable
from time import process_time
from typing import Any

CALLS = 40
RECORDS = 100


def _per_record(run: Callable[[], Any], calls: int = CALLS, records: int = RECORDS) -> float:
    run()  # warm
    gc.collect()
    started = process_time()
    for _ in range(calls):
        run()
    return (process_time() - started) * 1e6 / (calls * records)


def _guard_overhead() -> list[list[str]]:
    from lambda_kit.decorators import batch_decorator
    from lambda_kit.loop.options import Options
    from lambda_kit.sources import get
    from lambda_kit.testing import kinesis_event

    def count(view: Any, context: Any) -> Any:
        return len(view["url"])

    adapters = [get("kinesis")(), get("dynamodb")()]
    options = Options("stream_handler")
    plain = batch_decorator(count, options, adapters)
    wrapped = batch_decorator(count, options, adapters, wrap=adapters[0].wrap)
    event = kinesis_event(*({"url": f"/a/{i}"} for i in range(RECORDS)))
    rows = []
    for name, handler in (
        ("stream_handler, no window: without the guard", plain),
        ("stream_handler, no window: with the guard", wrapped),
    ):
        rows.append([name, f"{_per_record(lambda h=handler: h(event, None)):.2f}"])
    return rows


def _windowed(keys: int) -> list[str]:
    from lambda_kit import current_window, stream_handler
    from lambda_kit.testing import kinesis_event, tumbling_window

    @stream_handler
    def count(view: Any, context: Any) -> Any:
        state = current_window().state
        state[view["url"]] = state.get(view["url"], 0) + 1

    state = {f"/articles/{i:06d}": i for i in range(keys)}
    size = len(__import__("json").dumps(state, separators=(",", ":")))
    batch = kinesis_event(*({"url": f"/articles/{i % max(keys, 1):06d}"} for i in range(RECORDS)))
    run = lambda: count(tumbling_window(batch, dict(state)), None)  # noqa: E731
    return [
        f"windowed, state of {keys} keys ({size:,} bytes of JSON)",
        f"{_per_record(run, calls=CALLS if keys < 5000 else 4):.2f}",
    ]


def _log_events() -> list[list[str]]:
    from lambda_kit import cloudwatch_logs_handler, stream_handler
    from lambda_kit.testing import cloudwatch_logs_event, kinesis_log_record, log_line

    lines = [
        log_line("record processed", trace_id=f"t-{i}", url=f"/a/{i}", duration_ms=1.25)
        for i in range(RECORDS)
    ]
    direct = cloudwatch_logs_event(*lines)
    through = {"Records": [kinesis_log_record(*lines)]}

    def first_field(log_event: Any, context: Any) -> Any:
        return log_event["json"]["url"]

    return [
        [
            "cloudwatch_logs_handler, one log event (a lambda_kit line)",
            f"{_per_record(lambda: cloudwatch_logs_handler(first_field)(direct, None)):.2f}",
        ],
        [
            "stream_handler, one log event of a Kinesis record",
            f"{_per_record(lambda: stream_handler(first_field)(through, None)):.2f}",
        ],
    ]


def run() -> list[tuple[str, bool, str]]:
    from lambda_kit import codec

    devnull = open(os.devnull, "w")  # noqa: SIM115
    saved, sys.stdout = sys.stdout, devnull
    try:
        rows = _guard_overhead() + [_windowed(keys) for keys in (10, 1_000, 20_000)] + _log_events()
    finally:
        sys.stdout = saved
        devnull.close()
    width = max(len(row[0]) for row in rows)
    print(
        "\n== windows: tumbling windows and CloudWatch Logs subscriptions "
        f"(CPU µs per record, codec {codec.name}) =="
    )
    for name, value in rows:
        print(f"  {name.ljust(width)}  {value.rjust(8)}")
    return []
