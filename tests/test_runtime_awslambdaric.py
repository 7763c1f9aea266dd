"""Lambda's runtime contract under AWS's runtime interface client itself (``awslambdaric``, through
the local stack's execution environment: a Runtime API on loopback, standard output a pipe): log
levels and their floor, plain ``logging`` and unnamed loggers under the runtime's root handler, and
a batch cut short by its deadline answering before it."""

from __future__ import annotations

import json
import os
import site
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from lambda_kit.local.environments import Launch, Pending, Worker
from lambda_kit.testing import sqs_event

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow

HANDLERS = """
import logging
import time

from lambda_kit import get_logger, sqs_handler

named = get_logger("app.orders")
unnamed = get_logger()


@sqs_handler
def levels(message, context):
    named.debug("debug line")
    named.info("info line")
    named.warning("warn line")
    named.error("error line")


@sqs_handler(log_event=False, log_result=False)
def plain(message, context):
    logging.getLogger("library").warning("from a library: %s", message["n"])
    unnamed.info("unnamed info")
    unnamed.warning("unnamed warn")


@sqs_handler(log_event=False, log_result=False)
def slow(message, context):
    time.sleep(0.05)
"""


class Function:
    """One handler of ``HANDLERS`` in an execution environment of its own."""

    def __init__(self, root: Path, handler: str, **environment: str) -> None:
        self.lines: list[str] = []
        env = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "LAMBDA_KIT"))}
        env.pop("LOG_LEVEL", None)
        env.update(
            _HANDLER=f"toy_runtime.{handler}",
            LAMBDA_TASK_ROOT=str(root),
            AWS_LAMBDA_FUNCTION_NAME=handler,
            AWS_LAMBDA_FUNCTION_VERSION="$LATEST",
            AWS_LAMBDA_FUNCTION_MEMORY_SIZE="256",
            AWS_REGION="us-east-1",
            AWS_EXECUTION_ENV=f"AWS_Lambda_python{sys.version_info.major}.{sys.version_info.minor}",
            PYTHONPATH=os.pathsep.join([str(root), str(ROOT), *site.getsitepackages()]),
            **environment,
        )
        command = [sys.executable, "-S", "-m", "awslambdaric", f"toy_runtime.{handler}"]
        self.worker = Worker(Launch(command, env, root, None), self.lines.append)

    def invoke(self, event: dict, timeout: float = 30.0) -> Pending:
        request_id = str(uuid.uuid4())
        headers = {
            "Lambda-Runtime-Aws-Request-Id": request_id,
            "Lambda-Runtime-Invoked-Function-Arn": "arn:aws:lambda:us-east-1:123456789012:function:toy",
            "Lambda-Runtime-Trace-Id": "Root=1-5e1b4151-5ac6c58f3875a5b2b8eb4a61;Sampled=0",
        }
        return self.worker.run(Pending(request_id, json.dumps(event).encode(), headers, timeout))

    def json_lines(self) -> list[dict]:
        return [json.loads(line) for line in self.lines]


@pytest.fixture
def root(tmp_path):
    (tmp_path / "toy_runtime.py").write_text(textwrap.dedent(HANDLERS), encoding="utf-8")
    return tmp_path


def run_once(root: Path, handler: str, event: dict | None = None, **environment: str) -> tuple[Pending, list]:
    function = Function(root, handler, **environment)
    try:
        pending = function.invoke(event or sqs_event({"n": 7}, trace_id="T-runtime"))
    finally:
        function.worker.close()
    return pending, function.json_lines()


@pytest.mark.parametrize(
    ("environment", "levels"),
    [
        ({}, ["INFO", "INFO", "WARN", "ERROR", "INFO"]),
        ({"AWS_LAMBDA_LOG_LEVEL": "WARN", "AWS_LAMBDA_LOG_FORMAT": "JSON"}, ["WARN", "ERROR"]),
        (
            {"AWS_LAMBDA_LOG_LEVEL": "TRACE", "AWS_LAMBDA_LOG_FORMAT": "JSON"},
            ["INFO", "DEBUG", "INFO", "WARN", "ERROR", "INFO"],
        ),
        ({"AWS_LAMBDA_LOG_LEVEL": "FATAL", "AWS_LAMBDA_LOG_FORMAT": "JSON"}, []),
    ],
    ids=["default", "warn", "trace", "fatal"],
)
def test_lambdas_level_names_are_honoured(root, environment, levels):
    pending, lines = run_once(root, "levels", **environment)
    assert pending.error is None and json.loads(pending.response) == {"batchItemFailures": []}
    assert [line["level"] for line in lines] == levels


def test_lambdas_level_is_a_floor_log_level_cannot_lower_with_one_warn_line_at_init(root):
    pending, lines = run_once(root, "levels", AWS_LAMBDA_LOG_LEVEL="ERROR", LOG_LEVEL="INFO")
    assert pending.error is None
    assert [(line["level"], line["message"][:10]) for line in lines] == [
        ("WARN", "log level:"),
        ("ERROR", "error line"),
    ]


@pytest.mark.parametrize("log_format", ["Text", "JSON"])
def test_plain_logging_and_an_unnamed_logger_are_lambda_kit_lines_once_each(root, log_format):
    pending, lines = run_once(root, "plain", AWS_LAMBDA_LOG_FORMAT=log_format, AWS_LAMBDA_LOG_LEVEL="INFO")
    assert pending.error is None
    assert [(line["logger"], line["message"], line["level"]) for line in lines] == [
        ("library", "from a library: 7", "WARN"),
        ("toy_runtime", "unnamed info", "INFO"),
        ("toy_runtime", "unnamed warn", "WARN"),
    ]
    assert {line["trace_id"] for line in lines} == {"T-runtime"}
    assert all(line["request_id"] and line["function_name"] == "plain" for line in lines)


def test_a_batch_near_its_deadline_answers_before_it_with_only_the_unstarted_records(root):
    function = Function(root, "slow")
    try:
        warm = function.invoke(sqs_event({"n": 0}))  # INIT out of the way: the deadline is the batch's
        assert warm.error is None
        event = sqs_event(*({"n": n} for n in range(10)))
        pending = function.invoke(event, timeout=0.3)  # 10 records of 50 ms, 300 ms to run them
    finally:
        function.worker.close()
    assert pending.error is None, pending.error  # answered: no "Task timed out"
    reported = [item["itemIdentifier"] for item in json.loads(pending.response)["batchItemFailures"]]
    ids = [record["messageId"] for record in event["Records"]]
    assert 1 <= len(reported) <= 9 and reported == ids[len(ids) - len(reported) :]  # the unstarted: the last
    [warning] = [line for line in function.json_lines() if "not started" in line.get("message", "")]
    assert warning["not_started"] == len(reported)
