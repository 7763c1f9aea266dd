"""Core speed: µs per SQS record, lambda_kit vs Powertools vs a plain loop; cold start.

Everything is measured side by side in one process: each round runs every variant once, in
turn, and the median over rounds is reported, because this machine's two shared cores are
noisy. Log output goes to /dev/null.

    (a) lambda_kit ``sqs_handler`` with default logging (arrival + result line per record), and
        0, 1 or 3 lines per record the function writes itself through ``get_logger()``
    (b) Powertools ``BatchProcessor`` + ``process_partial_response`` + ``Logger`` with a
        per-record correlation id, emitting the same lines
    (c) the floor: a plain loop that decodes the body with the same codec and writes the same
        JSON lines (same keys and values) with one ``write`` each
"""

from __future__ import annotations

import compileall
import gc
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from time import perf_counter, process_time
from typing import Any

BODY = {
    "url": "myblog.com/article-17",
    "time": "2022-03-28T13:17:23+00:00",
    "clientId": "adidOIkenODSksi92LHd6",
}
SIZES = (10, 100, 1000)
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "9"))
RECORDS_PER_RUN = int(os.environ.get("BENCH_RECORDS", "6000"))  # per variant, per round
COLD_RUNS = int(os.environ.get("BENCH_COLD_RUNS", "11"))
CODECS = ("ujson", "orjson")
HEAVY = ("boto3", "botocore", "datadog", "aws_lambda_powertools", "orjson")
ROOT = Path(__file__).resolve().parent.parent

TARGET_POWERTOOLS_RATIO = 10.0  # (b)/(a) at least
TARGET_IMPORT_MS = 15.0  # import lambda_kit adds at most
FAST_PATH_SHARE = 0.20  # a fast path stays only if it is worth more than this share of per-record time
# Retired (issue 26): lambda_kit/floor <= 1.5x, one user line <= 2 µs, each decorator <= 5 ms cold start.
# The floor's own line costs 2-3.4 µs on these machines; what stays is the lead over the peers.

Target = tuple[str, bool, str]

LONGEST = 900.0
"""The timeout of the contexts the sections pass: Lambda's longest (15 min). One context serves a
section's many invocations here, where Lambda gives each its own deadline; with a shorter one the
deadline would pass mid-section and each batch would run only its first record (the others
returned unstarted, as ``deadline_margin_ms`` promises)."""


# --- helpers --------------------------------------------------------------------------------


@contextmanager
def stdout_to_devnull() -> Any:
    devnull = open(os.devnull, "w")  # noqa: SIM115
    saved = sys.stdout
    sys.stdout = devnull
    try:
        yield devnull
    finally:
        sys.stdout = saved
        devnull.close()


def _use_codec(name: str) -> None:
    from lambda_kit import codec

    os.environ["LAMBDA_KIT_JSON"] = name
    codec.reload()
    if codec.name != name:
        raise RuntimeError(f"bench: could not select the {name} codec (is it installed?)")


def time_per_record(run: Callable[[], Any], calls: int, records: int) -> float:
    """CPU µs per record for ``calls`` invocations of a batch of ``records``.

    CPU time of this process (user + system, so the writes count), not wall time: on two shared
    cores wall time mostly measures the neighbours.
    """
    gc.collect()
    started = process_time()
    for _ in range(calls):
        run()
    return (process_time() - started) * 1e6 / (calls * records)


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
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


# --- the three variants -----------------------------------------------------------------------

# the user's logger: get_logger(LOGGER) on lambda_kit's side, Logger(service=...) on Powertools'
LOGGER = "bench.views"


def _lambda_kit_handler(user_lines: int = 0) -> Callable[[Any, Any], Any]:
    from lambda_kit import get_logger, sqs_handler

    log = get_logger(LOGGER)
    lines = range(user_lines)

    @sqs_handler
    def handler(message: Any, context: Any) -> Any:
        for n in lines:
            log.info("counting", extra={"url": message["url"], "n": n})
        return len(message["url"])

    return handler


def _powertools_handler(stream: Any, user_lines: int = 0) -> Callable[[Any, Any], Any]:
    from aws_lambda_powertools import Logger
    from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response

    logger = Logger(service=f"{LOGGER}.powertools", stream=stream)
    processor = BatchProcessor(event_type=EventType.SQS)
    lines = range(user_lines)

    def record_handler(record: Any) -> Any:
        started = perf_counter()
        attribute = record.message_attributes["trace_id"]
        trace_id = attribute.string_value if attribute is not None else record.message_id
        logger.set_correlation_id(trace_id)
        logger.append_keys(trace_id=trace_id)
        payload = record.json_body
        logger.info(
            "record received", extra={"source": "sqs", "record_id": record.message_id, "payload": payload}
        )
        for n in lines:
            logger.info("counting", extra={"url": payload["url"], "n": n})
        result = len(payload["url"])
        logger.info(
            "record processed",
            extra={
                "source": "sqs",
                "record_id": record.message_id,
                "outcome": "ok",
                "duration_ms": round((perf_counter() - started) * 1000, 3),
                "result": result,
            },
        )
        return result

    @logger.inject_lambda_context
    def handler(event: Any, context: Any) -> Any:
        return process_partial_response(event, record_handler, processor, context)

    return handler


def _floor_handler(user_lines: int = 0) -> Callable[[Any, Any], Any]:
    """The same lines, written by a plain loop: decode, build the dict, encode, one write."""
    from lambda_kit import codec

    ts_cache: list[Any] = [0, ""]
    millis = tuple(f".{ms:03d}Z" for ms in range(1000))
    clock = time.time
    lines = range(user_lines)

    def stamp() -> str:  # as cheap as lambda_kit's: the date part cached per second
        now = clock()
        second = int(now)
        if second != ts_cache[0]:
            ts_cache[0] = second
            ts_cache[1] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return ts_cache[1] + millis[int((now - second) * 1000)]

    def handler(event: Any, context: Any) -> Any:
        loads, dumps = codec.loads, codec.dumps  # the codec itself, as the decorator's log lines use it
        write = sys.stdout.write
        function_name, request_id = context.function_name, context.aws_request_id
        failures: list[Any] = []
        for raw in event["Records"]:
            started = perf_counter()
            message_id = raw["messageId"]
            trace_id = raw["messageAttributes"]["trace_id"]["stringValue"]
            payload = loads(raw["body"])
            write(
                dumps(
                    {
                        "timestamp": stamp(),
                        "level": "INFO",
                        "message": "record received",
                        "function_name": function_name,
                        "request_id": request_id,
                        "trace_id": trace_id,
                        "record_id": message_id,
                        "source": "sqs",
                        "payload": payload,
                    }
                )
                + "\n"
            )
            for n in lines:
                write(
                    dumps(
                        {
                            "timestamp": stamp(),
                            "level": "INFO",
                            "message": "counting",
                            "function_name": function_name,
                            "request_id": request_id,
                            "trace_id": trace_id,
                            "record_id": message_id,
                            "logger": LOGGER,
                            "url": payload["url"],
                            "n": n,
                        }
                    )
                    + "\n"
                )
            result = len(payload["url"])
            write(
                dumps(
                    {
                        "timestamp": stamp(),
                        "level": "INFO",
                        "message": "record processed",
                        "function_name": function_name,
                        "request_id": request_id,
                        "trace_id": trace_id,
                        "record_id": message_id,
                        "source": "sqs",
                        "outcome": "ok",
                        "duration_ms": round((perf_counter() - started) * 1000, 3),
                        "result": result,
                    }
                )
                + "\n"
            )
        return {"batchItemFailures": failures}

    return handler


def _check_same_lines(event: Any, context: Any, user_lines: int) -> None:
    """(a) and (c) must write the same keys with the same values (bar time-dependent ones)."""
    import io

    from lambda_kit import codec

    outputs = []
    for handler in (_lambda_kit_handler(user_lines), _floor_handler(user_lines)):
        buffer = io.StringIO()
        saved, sys.stdout = sys.stdout, buffer
        try:
            handler(event, context)
        finally:
            sys.stdout = saved
        lines = [codec.loads(line) for line in buffer.getvalue().splitlines()]
        for line in lines:
            line.pop("timestamp")
            line.pop("duration_ms", None)
        outputs.append(lines)
    if outputs[0] != outputs[1] or len(outputs[0]) != len(event["Records"]) * (2 + user_lines):
        raise RuntimeError(
            f"bench: the floor does not write lambda_kit's lines:\n{outputs[0][:3]}\n{outputs[1][:3]}"
        )


# --- per-record speed -------------------------------------------------------------------------

# (batch size, user lines per record) measured; the targets are read at batch 100
CASES = ((10, 0), (100, 0), (1000, 0), (100, 1), (100, 3))
USER_LINES = (0, 1, 3)
TARGET_BATCH = 100


def _speed() -> tuple[list[Target], dict[tuple[str, str | None, int, int], float]]:
    from lambda_kit import codec
    from lambda_kit.testing import lambda_context, sqs_event

    context = lambda_context("view-counter", timeout=LONGEST)
    events = {
        size: sqs_event(*[BODY] * size, trace_id=[f"trace-{size}-{i}" for i in range(size)]) for size in SIZES
    }
    saved_choice = os.environ.get("LAMBDA_KIT_JSON")
    default_codec = codec.name
    for name in CODECS:
        _use_codec(name)
        for lines in USER_LINES:
            _check_same_lines(events[SIZES[0]], context, lines)

    Key = tuple[str, str | None, int, int]  # (variant, codec, batch size, user lines)
    samples: dict[Key, list[float]] = {}
    with stdout_to_devnull() as devnull:
        for size, lines in CASES:
            variants: list[tuple[str, str | None, Callable[[Any, Any], Any]]] = []
            for name in CODECS:
                variants.append(("a", name, _lambda_kit_handler(lines)))
            variants.append(("b", None, _powertools_handler(devnull, lines)))
            for name in CODECS:
                variants.append(("c", name, _floor_handler(lines)))
            event = events[size]
            calls = max(1, RECORDS_PER_RUN // size)
            for _, codec_name, handler in variants:  # warm up
                if codec_name:
                    _use_codec(codec_name)
                handler(event, context)
            for round_ in range(ROUNDS):
                order = variants if round_ % 2 == 0 else variants[::-1]
                for kind, codec_name, handler in order:
                    if codec_name:
                        _use_codec(codec_name)
                    micros = time_per_record(lambda h=handler, e=event: h(e, context), calls, size)
                    samples.setdefault((kind, codec_name, size, lines), []).append(micros)

    if saved_choice is None:
        os.environ.pop("LAMBDA_KIT_JSON", None)
    else:
        os.environ["LAMBDA_KIT_JSON"] = saved_choice
    codec.reload()

    median = {key: statistics.median(values) for key, values in samples.items()}

    def ratio(top: tuple[str, str | None], bottom: tuple[str, str | None], case: tuple[int, int]) -> float:
        """Median over rounds of the per-round ratio (paired: both ran in the same round)."""
        return statistics.median(
            t / b for t, b in zip(samples[(*top, *case)], samples[(*bottom, *case)], strict=True)
        )

    def spread(key: Key) -> str:
        values = samples[key]
        return f"{median[key]:.2f} ({min(values):.1f}-{max(values):.1f})"

    labels = {
        ("a", "orjson"): "(a) lambda_kit sqs_handler, orjson",
        ("a", "ujson"): "(a) lambda_kit sqs_handler, ujson",
        ("b", None): "(b) Powertools BatchProcessor + Logger",
        ("c", "orjson"): "(c) floor: plain loop, orjson",
        ("c", "ujson"): "(c) floor: plain loop, ujson",
    }
    header = ["variant", *(f"batch {size}, {lines} user" for size, lines in CASES)]
    rows = [[label, *(spread((*key, *case)) for case in CASES)] for key, label in labels.items()]
    for name in CODECS:
        rows.append(
            [
                f"(b)/(a) {name}  (target >= {TARGET_POWERTOOLS_RATIO:g})",
                *(f"{ratio(('b', None), ('a', name), case):.1f}x" for case in CASES),
            ]
        )
    for name in CODECS:
        rows.append(
            [
                f"(a)/(c) {name}  (no target)",
                *(f"{ratio(('a', name), ('c', name), case):.2f}x" for case in CASES),
            ]
        )
    table(
        f"SQS batch, CPU µs per record: median (min-max) of {ROUNDS} interleaved rounds, "
        f"~{RECORDS_PER_RUN} records per variant per round;\n"
        "  the decorator's 2 log lines + N user lines per record "
        f'(log.info("counting", extra={{...}})), to /dev/null;\n  ratios: median of per-round ratios; '
        f"targets at batch {TARGET_BATCH}, lambda_kit's default codec ({default_codec})",
        header,
        rows,
    )

    def per_line(kind: str, name: str) -> list[float]:
        """µs one user line adds to a record: (3 lines - 0 lines) / 3, paired per round."""
        three, none = samples[(kind, name, TARGET_BATCH, 3)], samples[(kind, name, TARGET_BATCH, 0)]
        return [(t - n) / 3 for t, n in zip(three, none, strict=True)]

    print("\n  one user line (the 3-line records less the 0-line ones, / 3; median (min-max) over rounds):")
    for kind, what in (("a", "lambda_kit get_logger().info"), ("c", "the floor's dumps + write")):
        for name in CODECS:
            values = per_line(kind, name)
            print(
                f"    {what}, {name}: {statistics.median(values):.2f} µs "
                f"({min(values):.2f}-{max(values):.2f})"
            )

    targets: list[Target] = []
    for lines in USER_LINES:
        case = (TARGET_BATCH, lines)
        against_b = ratio(("b", None), ("a", default_codec), case)
        against_c = ratio(("a", default_codec), ("c", default_codec), case)
        targets.append(
            (
                f"{lines} user line(s): Powertools/lambda_kit >= {TARGET_POWERTOOLS_RATIO:g}x",
                against_b >= TARGET_POWERTOOLS_RATIO,
                f"{against_b:.1f}x (batch {TARGET_BATCH}, {default_codec})",
            )
        )
        print(
            f"  {lines} user line(s): lambda_kit/floor {against_c:.2f}x "
            f"(batch {TARGET_BATCH}, {default_codec})"
        )
    line_cost = statistics.median(per_line("a", default_codec))
    print(
        f"  one user line: {line_cost:.2f} µs ({default_codec}; the floor's: "
        f"{statistics.median(per_line('c', default_codec)):.2f} µs)"
    )
    return targets, median


def _codec_micro() -> None:
    import orjson
    import ujson

    text = ujson.dumps(BODY)
    data = text.encode()
    line = {
        "timestamp": "2022-03-28T13:17:23.000Z",
        "level": "INFO",
        "message": "record received",
        "function_name": "view-counter",
        "request_id": "0b7e2c7e-6a4b-4f0e-9d55-3b2c1b7d9a10",
        "trace_id": "trace-1",
        "source": "sqs",
        "record_id": "9f1c8c56-7b1e-4bb0-8f4c-2a1f5c1e2d3a",
        "payload": BODY,
    }
    u_dumps, o_dumps = ujson.dumps, orjson.dumps
    cases = {
        "decode body: ujson.loads(str)": lambda: ujson.loads(text),
        "decode body: orjson.loads(str)": lambda: orjson.loads(text),
        "decode body: orjson.loads(bytes)": lambda: orjson.loads(data),
        "encode line: ujson.dumps -> str": lambda: u_dumps(line, ensure_ascii=False, reject_bytes=True),
        "encode line: orjson.dumps().decode()": lambda: o_dumps(line).decode(),
    }
    n = 20_000
    samples: dict[str, list[float]] = {}
    for _ in range(ROUNDS):
        for label, fn in cases.items():
            started = process_time()
            for _ in range(n):
                fn()
            samples.setdefault(label, []).append((process_time() - started) * 1e6 / n)
    rows = [[label, f"{statistics.median(v):.3f}"] for label, v in samples.items()]
    table(
        f"Codec micro (CPU µs per call, median of {ROUNDS} rounds; includes a lambda call)",
        ["operation", "µs"],
        rows,
    )


# --- cold start -----------------------------------------------------------------------------

_FIRST_CALL = (
    "import sys\nfrom lambda_kit import sqs_handler\nfrom lambda_kit.testing import sqs_event\n"
    "sqs_handler(lambda m, c: None)(sqs_event(" + repr(BODY) + ", trace_id='t'), None)"
)
DECORATORS = (
    "sqs_handler",
    "sns_handler",
    "stream_handler",
    "api_handler",
    "kafka_handler",
    "eventbridge_handler",
    "s3_handler",
    "cloudwatch_logs_handler",
)


RUNTIME_IMPORTS = "import importlib, json, logging, os, sys, time, traceback"
"""What Lambda's Python runtime interface client (awslambdaric's ``bootstrap.py``) has imported
before it imports the handler's module: a handler never pays for these."""


def _decorating(decorator: str) -> str:
    """What a handler module pays on Lambda: the decorator and get_logger imported, a logger made,
    one function decorated, after what the runtime has already imported (``RUNTIME_IMPORTS``).
    The child prints the CPU ms of those lines (``time.process_time`` around them): the
    interpreter's own start and exit, the same for every variant and noisier than the figure
    itself on a shared machine, stay out of it."""
    return (
        f"{RUNTIME_IMPORTS}\nstarted = time.process_time()\nfrom lambda_kit import {decorator}, get_logger\n"
        f"log = get_logger(__name__)\n@{decorator}\ndef handler(event, context):\n    return None\n"
        "print((time.process_time() - started) * 1000)"
    )


COLD_VARIANTS: dict[str, tuple[str, str | None]] = {
    "bare interpreter (pass)": ("pass", None),
    "import lambda_kit": ("import lambda_kit", None),
    **{
        f"{decorator} + get_logger, one function decorated": (_decorating(decorator), None)
        for decorator in DECORATORS
    },
    "from aws_lambda_powertools import Logger": ("from aws_lambda_powertools import Logger", None),
    "first SQS invocation (1 record), orjson": (_FIRST_CALL, "orjson"),
    "first SQS invocation (1 record), ujson": (_FIRST_CALL, "ujson"),
}
BARE = "bare interpreter (pass)"


def _compile_bytecode() -> None:
    """Compile ahead (PYTHONDONTWRITEBYTECODE only stops writing; cached .pyc are still read)."""
    import aws_lambda_powertools

    for path in (ROOT / "lambda_kit", Path(aws_lambda_powertools.__file__).parent):
        compileall.compile_dir(str(path), quiet=2, force=False)


def _cold_start() -> tuple[list[Target], dict[str, float]]:
    import resource

    _compile_bytecode()
    base_env = dict(os.environ)
    base_env.pop("LAMBDA_KIT_JSON", None)

    def spawn(code: str, codec_name: str | None) -> tuple[float, float, str]:
        """(wall ms, CPU ms, standard output) of one fresh interpreter running ``code``."""
        env = base_env if codec_name is None else {**base_env, "LAMBDA_KIT_JSON": codec_name}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", code], check=True, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
        ).stdout
        wall = (perf_counter() - started) * 1000
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
        return wall, cpu, out

    for code, codec_name in COLD_VARIANTS.values():  # warm the page cache
        spawn(code, codec_name)
    walls: dict[str, list[float]] = {label: [] for label in COLD_VARIANTS}
    cpus: dict[str, list[float]] = {label: [] for label in COLD_VARIANTS}
    inside: dict[str, list[float]] = {decorator: [] for decorator in DECORATORS}  # CPU ms the child measured
    for round_ in range(COLD_RUNS):
        items = list(COLD_VARIANTS.items())
        for label, (code, codec_name) in items if round_ % 2 == 0 else items[::-1]:
            wall, cpu, out = spawn(code, codec_name)
            walls[label].append(wall)
            cpus[label].append(cpu)
            decorator = label.partition(" ")[0]
            if decorator in inside:
                inside[decorator].append(float(out))
    wall = {label: statistics.median(v) for label, v in walls.items()}
    cpu = {label: statistics.median(v) for label, v in cpus.items()}
    rows = [
        [
            label,
            f"{wall[label]:.1f}",
            "" if label == BARE else f"{wall[label] - wall[BARE]:+.1f}",
            f"{cpu[label]:.1f}",
            "" if label == BARE else f"{cpu[label] - cpu[BARE]:+.1f}",
        ]
        for label in COLD_VARIANTS
    ]

    probe = (
        "import sys\nfrom lambda_kit import sqs_handler, get_logger\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], check=True, cwd=ROOT, env=base_env, capture_output=True, text=True
    ).stdout.strip()
    table(
        f"Cold start, fresh processes (median of {COLD_RUNS}, interleaved; .pyc compiled ahead; "
        "CPU = user + system of the child)",
        ["python -c ...", "wall ms", "added", "CPU ms", "added"],
        rows,
    )
    print(
        f"  heavy modules in sys.modules after `from lambda_kit import sqs_handler, get_logger`: "
        f"{loaded or 'none'} (checked: {', '.join(HEAVY)})"
    )

    added_cpu = cpu["import lambda_kit"] - cpu[BARE]
    added_wall = wall["import lambda_kit"] - wall[BARE]
    whole = {
        decorator: cpu[f"{decorator} + get_logger, one function decorated"] - cpu[BARE]
        for decorator in DECORATORS
    }
    decorating = {decorator: statistics.median(v) for decorator, v in inside.items()}
    table(
        "Cold start per decorator: CPU ms of `from lambda_kit import <decorator>, get_logger` "
        "+ get_logger() + decorating, measured inside the fresh process after what Lambda's runtime "
        f"has imported ({RUNTIME_IMPORTS}; median of {COLD_RUNS}, min-max), and the whole process "
        "over a bare one (those imports included)",
        ["decorator", "CPU ms inside", "min-max", "whole process, added"],
        [
            [
                decorator,
                f"{decorating[decorator]:.1f}",
                f"{min(inside[decorator]):.1f}-{max(inside[decorator]):.1f}",
                f"{whole[decorator]:+.1f}",
            ]
            for decorator in DECORATORS
        ],
    )
    worst = max(decorating, key=decorating.__getitem__)
    print(
        f"  each decorator + get_logger + decorating: worst {worst} {decorating[worst]:.1f} ms, best "
        f"{min(decorating.values()):.1f} ms (inside the process, median of {COLD_RUNS}; "
        f"whole process over a bare one: {min(whole.values()):+.1f} to {max(whole.values()):+.1f} ms)"
    )
    return [
        (
            f"import lambda_kit adds <= {TARGET_IMPORT_MS:g} ms (CPU)",
            added_cpu <= TARGET_IMPORT_MS,
            f"{added_cpu:+.1f} ms CPU, {added_wall:+.1f} ms wall",
        ),
        ("no boto3/botocore/datadog/powertools/orjson at import", not loaded, loaded or "none loaded"),
    ], cpu


def _codec_verdict(
    per_record: dict[tuple[str, str | None, int, int], float], cold_cpu: dict[str, float]
) -> None:
    """Which codec wins: orjson per record against its import cost on a cold start."""
    saved = statistics.median(
        per_record[("a", "ujson", s, 0)] - per_record[("a", "orjson", s, 0)] for s in SIZES
    )
    extra_ms = (
        cold_cpu["first SQS invocation (1 record), orjson"]
        - cold_cpu["first SQS invocation (1 record), ujson"]
    )
    print("\nCodec verdict")
    print(
        f"  orjson saves {saved:.2f} µs CPU per record in (a) and costs {extra_ms:+.1f} ms CPU once, "
        "on a cold start (its import)"
    )
    if saved > 0 and extra_ms > 0:
        print(
            f"  break-even: ~{extra_ms * 1000 / saved:,.0f} records per container; orjson wins beyond that, "
            "ujson below (LAMBDA_KIT_JSON=ujson)"
        )
    else:
        print("  " + ("orjson wins outright" if saved > 0 else "ujson wins outright"))


def _tracing() -> list[Target]:
    """µs per SQS record with and without a tracer's context (side by side, interleaved rounds):
    (t0) lambda_kit's own trace id only; (t1) a W3C traceparent attribute too; (t2) Datadog's
    _datadog attribute; (t3) X-Ray's AWSTraceHeader."""
    from lambda_kit import codec
    from lambda_kit.testing import lambda_context, sqs_event

    context = lambda_context("view-counter", timeout=LONGEST)
    size = 100
    calls = max(1, RECORDS_PER_RUN // size)
    plain = sqs_event(*[BODY] * size, trace_id=[f"trace-{i}" for i in range(size)])

    def with_attribute(name: str, value: str) -> dict[str, Any]:
        event = codec.loads(codec.dumps(plain))
        for index, record in enumerate(event["Records"]):
            if name == "AWSTraceHeader":
                record["attributes"][name] = value.replace("XX", f"{index:02x}")
            else:
                record["messageAttributes"][name] = {
                    "stringValue": value.replace("XX", f"{index:02x}"),
                    "dataType": "String",
                }
        return event

    variants = {
        "(t0) own trace id only": plain,
        "(t1) + W3C traceparent": with_attribute(
            "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e47XX-00f067aa0ba902b7-01"
        ),
        "(t2) + Datadog _datadog": with_attribute(
            "_datadog", '{"x-datadog-trace-id": "1234567XX", "x-datadog-parent-id": "99"}'
        ),
        "(t3) + X-Ray AWSTraceHeader": with_attribute(
            "AWSTraceHeader", "Root=1-5759e988-bd862e3fe1be46a9942727XX;Parent=53995c3f42cd8ad8;Sampled=1"
        ),
    }
    handler = _lambda_kit_handler()
    samples: dict[str, list[float]] = {label: [] for label in variants}
    with stdout_to_devnull():
        for event in variants.values():
            handler(event, context)
        for round_ in range(ROUNDS):
            items = list(variants.items())
            for label, event in items if round_ % 2 == 0 else items[::-1]:
                samples[label].append(time_per_record(lambda e=event: handler(e, context), calls, size))
    base = "(t0) own trace id only"
    rows = [
        [
            label,
            f"{statistics.median(values):.2f}",
            f"{statistics.median(v / b for v, b in zip(values, samples[base], strict=True)):.2f}x",
        ]
        for label, values in samples.items()
    ]
    table(
        f"Tracing: SQS batch of {size}, CPU µs per record (median of {ROUNDS} interleaved rounds; "
        f"codec {codec.name}; vs (t0): median of per-round ratios)",
        ["variant", "µs", "vs (t0)"],
        rows,
    )
    return []


def _direct_path() -> list[Target]:
    """What ``get_logger``'s direct path is worth (issue 26: a fast path stays only if it is worth
    more than 20% of per-record time): records of 3 user lines with the direct path, and with the
    standard ``logging`` path (a filter on the logger that passes every line), side by side."""
    import logging

    from lambda_kit import get_logger, sqs_handler
    from lambda_kit.testing import lambda_context, sqs_event

    context = lambda_context("view-counter", timeout=LONGEST)
    size = 100
    event = sqs_event(*[BODY] * size, trace_id=[f"trace-{i}" for i in range(size)])
    calls = max(1, RECORDS_PER_RUN // size)
    direct = _lambda_kit_handler(3)
    standard_logger = logging.getLogger(f"{LOGGER}.standard")

    def through_standard(payload: Any, ctx: Any) -> Any:  # the same lines, on a logger with a filter
        for n in range(3):
            user.info("counting", extra={"url": payload["url"], "n": n})
        return len(payload["url"])

    user = get_logger(standard_logger.name)
    standard_logger.addFilter(lambda record: True)
    standard = sqs_handler(through_standard)
    samples: dict[str, list[float]] = {"direct": [], "standard": []}
    with stdout_to_devnull():
        direct(event, context)
        standard(event, context)
        for round_ in range(ROUNDS):
            order = (("direct", direct), ("standard", standard))
            for label, handler in order if round_ % 2 == 0 else order[::-1]:
                samples[label].append(time_per_record(lambda h=handler: h(event, context), calls, size))
    share = statistics.median(1 - d / s for d, s in zip(samples["direct"], samples["standard"], strict=True))
    print(
        "\n  get_logger's direct path, records of 3 user lines: "
        f"{statistics.median(samples['direct']):.2f} µs, standard logging path "
        f"{statistics.median(samples['standard']):.2f} µs: the direct path saves {share:.0%} "
        f"of per-record time (it stays if over {FAST_PATH_SHARE:.0%})"
    )
    return [
        (
            f"get_logger's direct path worth > {FAST_PATH_SHARE:.0%} of a 3-line record",
            share > FAST_PATH_SHARE,
            f"{share:.0%}",
        )
    ]


HANDLER_MODULES = (
    "handlers.ingest",
    "handlers.counter",
    "handlers.aggregator",
    "handlers.milestones",
    "handlers.clickstream",
)


def _handler_imports() -> list[Target]:
    """CPU ms of importing each of the example service's handler modules in a fresh interpreter,
    after what Lambda's runtime has imported: what a cold start of the service pays. With
    ``BENCH_BASELINE=<checkout>``, the same modules of that checkout are measured in the same rounds."""
    baseline = os.environ.get("BENCH_BASELINE")
    roots = {"now": str(ROOT), **({"baseline": baseline} if baseline else {})}
    code = (
        f"{RUNTIME_IMPORTS}\nstarted = time.process_time()\nimport {{module}}\n"
        "print((time.process_time() - started) * 1000)"
    )
    for root in roots.values():  # compiled ahead in both trees, as on Lambda (the zip's .pyc, or a warm one)
        for folder in ("lambda_kit", "handlers"):
            compileall.compile_dir(str(Path(root) / folder), quiet=2, force=False)
    samples: dict[tuple[str, str], list[float]] = {}
    for round_ in range(COLD_RUNS):
        for label, root in roots.items() if round_ % 2 == 0 else list(roots.items())[::-1]:
            env = {**os.environ, "PYTHONPATH": root}
            for module in HANDLER_MODULES:
                out = subprocess.run(
                    [sys.executable, "-c", code.format(module=module)],
                    check=True,
                    cwd=root,
                    env=env,
                    capture_output=True,
                    text=True,
                ).stdout
                samples.setdefault((label, module), []).append(float(out))
    rows = [
        [module, *(f"{statistics.median(samples[(label, module)]):.1f}" for label in roots)]
        for module in HANDLER_MODULES
    ]
    table(
        "Importing the example service's handler modules: CPU ms in a fresh process after "
        f"Lambda's runtime imports (median of {COLD_RUNS})",
        ["module", *roots],
        rows,
    )
    if not baseline:
        return []
    slower = [
        module
        for module in HANDLER_MODULES
        if statistics.median(samples[("now", module)])
        > 1.1 * statistics.median(samples[("baseline", module)])
    ]
    return [
        (
            "importing the example service's handlers is no slower than the baseline (10%)",
            not slower,
            ", ".join(slower) or "none slower",
        )
    ]


def _same_name_logger() -> list[Target]:
    """``get_logger(name)`` next to a Powertools ``Logger(service=name)`` (made before it, and
    after): lines written for one ``info`` call through each, counted."""
    import io

    from aws_lambda_powertools import Logger

    from lambda_kit import get_logger

    counts = []
    for powertools_first in (True, False):
        name = f"bench.same-name.{powertools_first}"
        buffer = io.StringIO()
        saved, sys.stdout = sys.stdout, buffer
        try:
            if powertools_first:
                powertools = Logger(service=name, stream=buffer)
                ours = get_logger(name)
            else:
                ours = get_logger(name)
                powertools = Logger(service=name, stream=buffer)
            ours.info("from get_logger")
            powertools.info("from powertools")
        finally:
            sys.stdout = saved
        counts.append(len(buffer.getvalue().splitlines()))
    print(
        f"\n  same-name loggers: 2 calls wrote {counts[0]} lines (Powertools' Logger made first), "
        f"{counts[1]} (get_logger first)"
    )
    return [
        (
            "a same-name Powertools Logger: each line written once",
            counts == [2, 2],
            f"{counts[0]} and {counts[1]} lines for 2 calls",
        )
    ]


def run() -> list[Target]:
    started = perf_counter()
    print("== core: lambda_kit vs Powertools vs the floor ==")
    targets, per_record = _speed()
    targets += _tracing()
    targets += _direct_path()
    targets += _same_name_logger()
    targets += _handler_imports()
    _codec_micro()
    cold_targets, cold_cpu = _cold_start()
    targets += cold_targets
    _codec_verdict(per_record, cold_cpu)
    print(f"\n  (core section took {perf_counter() - started:.0f} s)")
    return targets
