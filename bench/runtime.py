"""What a record costs under Lambda's runtime: each variant's handler in its own process under AWS's
runtime interface client (``awslambdaric``), driven through a Runtime API on loopback, its standard
output a pipe as on Lambda: the local stack's execution environment (``lambda_kit.local``).

Per record over a bare handler (which returns at once), for a 100-record SQS batch over warm
invocations: microseconds (the handler's CPU time, user and system, which is what the targets
compare, and wall time), write system calls (``/proc/<pid>/io`` ``syscw``: the runtime makes
standard output unbuffered, so every line written is a system call) and log bytes; and each
variant's cold init (from the process's start to its first ``/next``). The variants run in rounds,
interleaved, and each figure is the median of its rounds: the ratios are measured side by side.
"""

from __future__ import annotations

import json
import os
import site
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from lambda_kit.local.environments import Launch, Pending, Worker
from lambda_kit.testing import sqs_event

REPO = Path(__file__).resolve().parent.parent
RECORDS = 100
WARM = 5
TIMED = 20
ROUNDS = 3

CPU_CLOCK = """

import time as _time

_handler, _spent = handler, [0.0]


def handler(event, context):  # noqa: F811 -- the variant's handler, its CPU time (user + system) added up
    if event == {"bench": "spent"}:
        return _spent[0]
    started = _time.process_time()
    try:
        return _handler(event, context)
    finally:
        _spent[0] += _time.process_time() - started
"""
"""Appended to every variant: the CPU time its handler took, writes' system calls included, which
other work on a shared machine inflates far less than wall time."""

VARIANTS: dict[str, tuple[str, str]] = {
    "bare": (
        "a bare handler (returns at once)",
        """
def handler(event, context):
    return {"batchItemFailures": []}
""",
    ),
    "lambda_kit": (
        "lambda_kit defaults (received + processed)",
        """
from lambda_kit import sqs_handler

@sqs_handler
def handler(message, context):
    return None
""",
    ),
    "lambda_kit_quiet": (
        "lambda_kit, no decorator lines",
        """
from lambda_kit import sqs_handler

@sqs_handler(log_event=False, log_result=False)
def handler(message, context):
    return None
""",
    ),
    "lambda_kit_one_line": (
        "lambda_kit, no decorator lines, one get_logger().info",
        """
from lambda_kit import get_logger, sqs_handler

log = get_logger("bench")

@sqs_handler(log_event=False, log_result=False)
def handler(message, context):
    log.info("counting", extra={"url": message["url"]})
""",
    ),
    "lambda_kit_buffered": (
        "lambda_kit, log_buffer=True (a healthy batch)",
        """
from lambda_kit import sqs_handler

@sqs_handler(log_buffer=True)
def handler(message, context):
    return None
""",
    ),
    "hand_written": (
        "a hand-written loop writing lambda_kit's default lines",
        """
import json, time

def line(level, message, record, **fields):
    attributes = record.get("messageAttributes") or {}
    trace_id = (attributes.get("trace_id") or {}).get("stringValue") or record["messageId"]
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + ".000Z"
    return json.dumps({"timestamp": stamp, "level": level, "message": message, "trace_id": trace_id,
                       "record_id": record["messageId"], **fields})

def handler(event, context):
    failures = []
    for record in event["Records"]:
        started = time.perf_counter()
        try:
            payload = json.loads(record["body"])
            print(line("INFO", "record received", record, source="sqs", payload=payload))
            result = None
            print(line("INFO", "record processed", record, source="sqs", outcome="ok",
                       duration_ms=round((time.perf_counter() - started) * 1000, 3), result=result))
        except Exception as exc:
            print(line("ERROR", "record failed", record, error=str(exc)))
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}
""",
    ),
    "powertools_quiet": (
        "Powertools BatchProcessor + Logger, correlation id",
        """
import json
from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response

logger = Logger(service="bench")
processor = BatchProcessor(event_type=EventType.SQS)

def record_handler(record):
    attributes = record.message_attributes
    found = "trace_id" in attributes
    logger.set_correlation_id(attributes["trace_id"].string_value if found else record.message_id)
    json.loads(record.body)

def handler(event, context):
    return process_partial_response(event=event, record_handler=record_handler, processor=processor,
                                    context=context)
""",
    ),
    "powertools_one_line": (
        "Powertools BatchProcessor + Logger, correlation id, one logger.info",
        """
import json
from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response

logger = Logger(service="bench")
processor = BatchProcessor(event_type=EventType.SQS)

def record_handler(record):
    attributes = record.message_attributes
    found = "trace_id" in attributes
    logger.set_correlation_id(attributes["trace_id"].string_value if found else record.message_id)
    message = json.loads(record.body)
    logger.info("counting", extra={"url": message["url"]})

def handler(event, context):
    return process_partial_response(event=event, record_handler=record_handler, processor=processor,
                                    context=context)
""",
    ),
}


class Function:
    """One variant's handler in its own execution environment: a worker of the local stack
    (``lambda_kit.local.environments.Worker``: ``awslambdaric`` on a Runtime API of its own, its
    standard output a pipe read line by line)."""

    def __init__(self, root: Path, name: str) -> None:
        self.log_bytes = 0
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("AWS_", "LAMBDA_KIT_", "LOG_LEVEL", "POWERTOOLS_"))
        }
        env.update(
            LAMBDA_TASK_ROOT=str(root),
            _HANDLER=f"variant_{name}.handler",
            AWS_LAMBDA_FUNCTION_NAME=name,
            AWS_LAMBDA_FUNCTION_VERSION="$LATEST",
            AWS_LAMBDA_FUNCTION_MEMORY_SIZE="1024",
            AWS_LAMBDA_LOG_GROUP_NAME=f"/aws/lambda/{name}",
            AWS_LAMBDA_LOG_STREAM_NAME="bench",
            AWS_REGION="us-east-1",
            AWS_DEFAULT_REGION="us-east-1",
            AWS_EXECUTION_ENV=f"AWS_Lambda_python{sys.version_info.major}.{sys.version_info.minor}",
            # lambda_kit from this checkout as a zip holds it, beside the venv's packages (Powertools,
            # awslambdaric): never through the editable install's import hook, which a zip has not
            PYTHONPATH=os.pathsep.join([str(root), str(REPO), *site.getsitepackages()]),
            PYTHONDONTWRITEBYTECODE="1",
        )
        command = [sys.executable, "-S", "-m", "awslambdaric", f"variant_{name}.handler"]
        self.worker = Worker(Launch(command, env, root, None), self._line)
        self._invoke(b'{"bench": "spent"}')  # the cold start: INIT, then a first invocation
        self.init_ms = (self.worker.init_duration or 0.0) * 1000

    def _line(self, line: str) -> None:
        self.log_bytes += len(line) + 1

    def io(self) -> tuple[int, int]:
        """(write system calls, bytes written) so far, by the kernel's count."""
        text = Path(f"/proc/{self.worker.pid}/io").read_text()
        fields = dict(line.split(": ") for line in text.splitlines())
        return int(fields["syscw"]), int(fields["wchar"])

    def measure(self, event: bytes) -> dict[str, float]:
        for _ in range(WARM):
            self._invoke(event)
        writes, _ = self.io()
        logged = self.log_bytes
        spent = self.spent()
        total = 0.0
        for _ in range(TIMED):
            started = time.perf_counter()
            self._invoke(event)
            total += time.perf_counter() - started
        cpu = self.spent() - spent
        after, _ = self.io()
        return {"seconds": total, "cpu": cpu, "writes": after - writes, "log_bytes": self.log_bytes - logged}

    def spent(self) -> float:
        return float(self._invoke(b'{"bench": "spent"}'))

    def _invoke(self, event: bytes) -> bytes:
        request_id = str(uuid.uuid4())
        headers = {
            "Lambda-Runtime-Aws-Request-Id": request_id,
            "Lambda-Runtime-Invoked-Function-Arn": "arn:aws:lambda:us-east-1:123456789012:function:bench",
            "Lambda-Runtime-Trace-Id": "Root=1-5e1b4151-5ac6c58f3875a5b2b8eb4a61;Sampled=0",
        }
        pending = self.worker.run(Pending(request_id, event, headers, timeout=120.0))
        if pending.error is not None or pending.response is None:
            raise RuntimeError(f"the function failed: {pending.error}")
        return pending.response

    def close(self) -> None:
        self.worker.close()


def batch() -> bytes:
    payloads = [{"url": f"myblog.com/article-{n % 20}", "n": n} for n in range(RECORDS)]
    event = sqs_event(*payloads)
    for number, record in enumerate(event["Records"]):
        record["messageAttributes"] = {"trace_id": {"stringValue": f"bench-{number}", "dataType": "String"}}
    return json.dumps(event).encode()


def measure_all(root: Path, event: bytes, names: list[str]) -> dict[str, dict[str, float]]:
    """Every variant, ``ROUNDS`` times, interleaved; the median of each figure."""
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    for _ in range(ROUNDS):
        for name in names:
            function = Function(root, name)
            try:
                figures = function.measure(event)
                figures["init_ms"] = function.init_ms
                rounds[name].append(figures)
            finally:
                function.close()
    return {
        name: {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        for name, runs in rounds.items()
    }


def run() -> list[tuple[str, bool, str]]:
    print("\n== runtime: per record under awslambdaric (100-record SQS batch, warm), over a bare handler ==")
    with tempfile.TemporaryDirectory(prefix="lk-bench-runtime-") as folder:
        root = Path(folder)
        for name, (_, code) in VARIANTS.items():
            (root / f"variant_{name}.py").write_text(code + CPU_CLOCK)
        figures = measure_all(root, batch(), list(VARIANTS))
    bare = figures["bare"]
    per_record = {
        name: {
            "us": (f["cpu"] - bare["cpu"]) / (TIMED * RECORDS) * 1e6,
            "wall_us": (f["seconds"] - bare["seconds"]) / (TIMED * RECORDS) * 1e6,
            "writes": (f["writes"] - bare["writes"]) / (TIMED * RECORDS),
            "bytes": (f["log_bytes"] - bare["log_bytes"]) / (TIMED * RECORDS),
            "init_ms": f["init_ms"],
        }
        for name, f in figures.items()
    }
    print(f"  {'variant':<68} {'CPU µs':>7} {'wall µs':>8} {'writes':>7} {'bytes':>6} {'cold init':>10}")
    for name, (what, _) in VARIANTS.items():
        p = per_record[name]
        print(
            f"  {what:<68} {p['us']:>7.1f} {p['wall_us']:>8.1f} {p['writes']:>7.2f} {p['bytes']:>6.0f}"
            f" {p['init_ms']:>7.1f} ms"
        )
    lk = pt = per_record
    targets = [
        (
            "defaults cost at most a third of Powertools writing one line per record",
            lk["lambda_kit"]["us"] <= pt["powertools_one_line"]["us"] / 3,
            f"{lk['lambda_kit']['us']:.1f} vs {pt['powertools_one_line']['us']:.1f} µs "
            f"({pt['powertools_one_line']['us'] / max(lk['lambda_kit']['us'], 0.01):.2f}x)",
        ),
        (
            "one user line, no decorator lines: at least 4x Powertools",
            pt["powertools_one_line"]["us"] >= 4 * lk["lambda_kit_one_line"]["us"],
            f"{pt['powertools_one_line']['us'] / max(lk['lambda_kit_one_line']['us'], 0.01):.2f}x",
        ),
        (
            "no lines: at least 2x Powertools",
            pt["powertools_quiet"]["us"] >= 2 * lk["lambda_kit_quiet"]["us"],
            f"{pt['powertools_quiet']['us'] / max(lk['lambda_kit_quiet']['us'], 0.01):.2f}x",
        ),
        (
            "defaults at most 1.3x the hand-written loop writing the same lines",
            lk["lambda_kit"]["us"] <= 1.3 * per_record["hand_written"]["us"],
            f"{lk['lambda_kit']['us'] / max(per_record['hand_written']['us'], 0.01):.2f}x",
        ),
        (
            "defaults make at most one write per record (and one for the invocation's last line)",
            lk["lambda_kit"]["writes"] <= 1.0 + 1 / RECORDS,
            f"{lk['lambda_kit']['writes']:.2f} writes per record",
        ),
        (
            "cold init under half of Powertools'",
            lk["lambda_kit"]["init_ms"] < pt["powertools_quiet"]["init_ms"] / 2,
            f"{lk['lambda_kit']['init_ms']:.1f} vs {pt['powertools_quiet']['init_ms']:.1f} ms "
            f"(bare {per_record['bare']['init_ms']:.1f} ms)",
        ),
    ]
    return targets


if __name__ == "__main__":
    for label, passed, detail in run():
        print(f"  {'PASS' if passed else 'FAIL'}  {label}  {detail}")
