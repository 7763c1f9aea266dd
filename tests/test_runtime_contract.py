"""Lambda's runtime contract, in-process: its log levels and their floor, one write per record, log
buffering, the deadline, unnamed loggers, and plain ``logging`` under the runtime's root handler.

What runs under AWS's runtime interface client itself is in tests/test_runtime_awslambdaric.py.
"""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest
from _hostile import captured, of_level, parse_lines

from lambda_kit import get_logger, log, sqs_handler, stream_handler
from lambda_kit.testing import (
    dynamodb_record,
    dynamodb_stream_event,
    kinesis_event,
    lambda_context,
    sqs_event,
)

LEVEL_VARIABLES = ("LAMBDA_KIT_LOG_LEVEL", "LOG_LEVEL", "AWS_LAMBDA_LOG_LEVEL")


@pytest.fixture
def clean_levels(monkeypatch):
    for name in LEVEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


# --- levels ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("environment", "level"),
    [
        ({"AWS_LAMBDA_LOG_LEVEL": "TRACE"}, 5),
        ({"AWS_LAMBDA_LOG_LEVEL": "WARN"}, 30),
        ({"AWS_LAMBDA_LOG_LEVEL": "FATAL"}, 50),
        ({"LOG_LEVEL": "warn"}, 30),
        ({"LOG_LEVEL": "INFO", "AWS_LAMBDA_LOG_LEVEL": "ERROR"}, 40),  # Lambda's level is a floor
        ({"LAMBDA_KIT_LOG_LEVEL": "DEBUG", "AWS_LAMBDA_LOG_LEVEL": "WARN"}, 30),
        ({"LOG_LEVEL": "ERROR", "AWS_LAMBDA_LOG_LEVEL": "INFO"}, 40),  # ours may raise it
        ({"LOG_LEVEL": "VERBOSE", "AWS_LAMBDA_LOG_LEVEL": "WARN"}, 30),
    ],
)
def test_lambdas_levels_and_its_floor(environment, level, clean_levels):
    for name, value in environment.items():
        clean_levels.setenv(name, value)
    assert log.level_from_environment() == level


def test_a_level_below_lambdas_or_no_level_at_all_is_said_once(clean_levels):
    clean_levels.setenv("LOG_LEVEL", "INFO")
    clean_levels.setenv("AWS_LAMBDA_LOG_LEVEL", "ERROR")
    _, problem = log.line.levels_from_environment()
    assert "LOG_LEVEL=INFO is below the function's log level (AWS_LAMBDA_LOG_LEVEL=ERROR)" in problem
    clean_levels.setenv("LOG_LEVEL", "loud")
    clean_levels.delenv("AWS_LAMBDA_LOG_LEVEL")
    assert log.line.levels_from_environment() == (
        20,
        "LOG_LEVEL='loud' is no log level (TRACE, DEBUG, INFO, WARN, ERROR, FATAL)",
    )
    clean_levels.setenv("LOG_LEVEL", "DEBUG")
    assert log.line.levels_from_environment() == (10, None)


def run_python(code: str, **environment: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in LEVEL_VARIABLES}
    env.update(environment)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=120
    )


def test_the_conflict_is_one_warn_line_at_init_and_info_stays_silent():
    done = run_python(
        """
        from lambda_kit import get_logger, sqs_handler
        from lambda_kit.testing import lambda_context, sqs_event
        log = get_logger("app")

        @sqs_handler
        def handler(message, context):
            log.info("info line")
            log.warning("warning line")

        handler(sqs_event({"n": 1}), lambda_context())
        """,
        LOG_LEVEL="INFO",
        AWS_LAMBDA_LOG_LEVEL="WARN",
    )
    lines = [json.loads(text) for text in done.stdout.splitlines()]
    assert [(line["level"], line["message"][:10]) for line in lines] == [
        ("WARN", "log level:"),
        ("WARN", "warning li"),
    ]


def test_lines_carry_lambdas_level_names(clean_levels):
    logger = get_logger("contract.names")
    with captured() as out:
        logger.warning("w")
        logger.critical("c")
        logger.log(logging.ERROR, "e")
    assert [line["level"] for line in parse_lines(out, traced=False)] == ["WARN", "FATAL", "ERROR"]


def test_get_logger_without_a_name_is_the_callers_module_and_writes_info():
    unnamed = get_logger()
    assert unnamed.name == __name__ and unnamed.logger is not logging.getLogger()
    with captured() as out:
        unnamed.info("hello")
    [line] = parse_lines(out, traced=False)
    assert (line["logger"], line["message"], line["level"]) == (__name__, "hello", "INFO")


# --- writes ------------------------------------------------------------------------------------------


class CountingStdout(io.StringIO):
    """A standard output that counts its writes (under Lambda's runtime, each is a system call)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


def test_the_defaults_make_one_write_per_record_and_the_record_in_flight_has_its_received_line_out(
    monkeypatch,
):
    out = CountingStdout()
    monkeypatch.setattr(sys, "stdout", out)
    seen = []

    @sqs_handler
    def handler(message, context):
        seen.append(out.getvalue().splitlines()[-1])  # what is out when the function runs

    event = sqs_event(*({"n": n} for n in range(10)))
    handler(event, lambda_context())
    lines = [json.loads(text) for text in out.getvalue().splitlines()]
    assert out.writes == 10 + 1  # one per record, and the invocation's last line
    assert [json.loads(text)["message"] for text in seen] == ["record received"] * 10
    assert [json.loads(text)["record_id"] for text in seen] == [r["messageId"] for r in event["Records"]]
    assert [line["message"] for line in lines] == ["record received", "record processed"] * 10


def test_a_held_line_goes_out_before_any_later_line(monkeypatch):
    out = CountingStdout()
    monkeypatch.setattr(sys, "stdout", out)
    logger = get_logger("contract.order")

    @sqs_handler
    def handler(message, context):
        logger.info("inside", extra={"n": message["n"]})
        if message["n"] == 1:
            raise ValueError("boom")

    handler(sqs_event({"n": 0}, {"n": 1}, {"n": 2}), lambda_context())
    messages = [json.loads(text)["message"] for text in out.getvalue().splitlines()]
    assert messages == [
        "record received", "inside", "record processed",
        "record received", "inside", "record failed",
        "record received", "inside", "record processed",
    ]  # fmt: skip


# --- log buffering -----------------------------------------------------------------------------------


def test_a_buffered_batch_writes_a_healthy_records_line_only_and_a_failed_ones_whole_story():
    logger = get_logger("contract.buffer")

    @sqs_handler(log_buffer=True)
    def handler(message, context):
        logger.info("working", extra={"n": message["n"]})
        logger.warning("careful")  # WARN and above are never held
        if message["n"] == 1:
            raise ValueError("boom")

    with captured() as out:
        response = handler(sqs_event({"n": 0}, {"n": 1}), lambda_context())
    lines = parse_lines(out)
    assert len(response["batchItemFailures"]) == 1
    assert [(line["message"], line.get("n")) for line in lines] == [
        ("careful", None),
        ("record processed", None),
        ("careful", None),
        ("record received", None),
        ("working", 1),
        ("record failed", None),
    ]


def test_log_buffer_is_off_by_default_and_the_record_keeps_no_buffer():
    @sqs_handler
    def handler(message, context):
        from lambda_kit import current_record

        assert current_record().buffered is None

    handler(sqs_event({"n": 0}), lambda_context())


# --- the deadline ------------------------------------------------------------------------------------


class Context:
    """A Lambda context whose invocation ends ``left`` seconds after it is made."""

    function_name = "deadline-fn"
    aws_request_id = "req-1"

    def __init__(self, left: float) -> None:
        self.ends = time.monotonic() + left

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.ends - time.monotonic()) * 1000))


def slow(seconds: float) -> Any:
    ran = []

    def function(message: Any, context: Any) -> None:
        ran.append(message["n"] if "n" in message else message["new_image"]["n"])
        time.sleep(seconds)

    return function, ran


def test_records_are_not_started_near_the_deadline_and_only_those_come_back():
    function, ran = slow(0.05)
    handler = sqs_handler(function)
    event = sqs_event(*({"n": n} for n in range(10)))
    context = Context(0.4)
    with captured() as out:
        response = handler(event, context)
    answered_with = context.get_remaining_time_in_millis()
    assert 2 <= len(ran) <= 6 and ran == list(range(len(ran)))
    unstarted = [record["messageId"] for record in event["Records"][len(ran) :]]
    assert response == {"batchItemFailures": [{"itemIdentifier": i} for i in unstarted]}
    assert answered_with > 0  # before the deadline
    [warning] = [line for line in parse_lines(out) if "not started" in line["message"]]
    assert warning["level"] == "WARN" and warning["not_started"] == len(unstarted)
    assert not of_level(parse_lines(out), "ERROR")


def test_the_margin_is_an_option_and_the_first_record_always_starts():
    function, ran = slow(0.0)
    handler = sqs_handler(deadline_margin_ms=10_000)(function)
    event = sqs_event({"n": 0}, {"n": 1}, {"n": 2})
    response = handler(event, Context(1.0))
    assert ran == [0]
    assert [item["itemIdentifier"] for item in response["batchItemFailures"]] == [
        record["messageId"] for record in event["Records"][1:]
    ]
    with pytest.raises(ValueError, match="deadline_margin_ms must be a whole number"):
        sqs_handler(deadline_margin_ms=-1)


def test_without_a_deadline_every_record_runs():
    function, ran = slow(0.0)
    assert sqs_handler(function)(sqs_event({"n": 0}, {"n": 1}), None) == {"batchItemFailures": []}
    assert ran == [0, 1]


@pytest.mark.parametrize("make", [kinesis_event, dynamodb_stream_event], ids=["kinesis", "dynamodb"])
def test_a_stream_stops_at_the_first_record_not_started(make):
    function, ran = slow(0.0)
    handler = stream_handler(deadline_margin_ms=10_000)(function)
    if make is kinesis_event:
        event = make({"n": 0}, {"n": 1}, {"n": 2})
    else:
        event = make(
            *(dynamodb_record(keys={"pk": str(n)}, new_image={"pk": str(n), "n": n}) for n in range(3))
        )
    response = handler(event, Context(1.0))
    first_unstarted = event["Records"][1]
    reported = [item["itemIdentifier"] for item in response["batchItemFailures"]]
    sequence = first_unstarted.get("kinesis") or first_unstarted.get("dynamodb")
    assert reported[0] == sequence.get("sequenceNumber", sequence.get("SequenceNumber"))
    assert len(ran) == 1


def test_an_async_batch_stops_starting_records_too():
    import asyncio

    ran = []

    @sqs_handler(max_concurrency=2)
    async def handler(message, context):
        ran.append(message["n"])
        await asyncio.sleep(0.05)

    event = sqs_event(*({"n": n} for n in range(20)))
    response = handler(event, Context(0.4))
    assert 2 <= len(ran) < 20
    assert len(response["batchItemFailures"]) == 20 - len(ran)


# --- an extra trace id -------------------------------------------------------------------------------


def test_an_invalid_trace_id_in_extra_is_never_written_as_the_lines_trace_id():
    logger = get_logger("contract.extra")
    with captured() as out:
        logger.info("outside", extra={"trace_id": "evil\nid"})
        logger.info("outside", extra={"trace_id": "good-id"})
    bad, good = (json.loads(text) for text in out)
    assert "trace_id" not in bad and bad["extra_trace_id"] == "evil\nid"
    assert good["trace_id"] == "good-id"


# --- plain logging under the runtime's root handler --------------------------------------------------


@pytest.mark.parametrize("log_format", ["Text", "JSON"])
def test_plain_logging_under_the_runtimes_root_handler_is_one_lambda_kit_line(log_format):
    done = run_python(
        """
        import logging
        from awslambdaric import bootstrap
        from awslambdaric.lambda_runtime_log_utils import LogFormat

        bootstrap._setup_logging(LogFormat.from_str("FORMAT"), "INFO", bootstrap.StandardLogSink())
        import lambda_kit
        from lambda_kit import sqs_handler
        from lambda_kit.testing import lambda_context, sqs_event

        @sqs_handler(log_event=False, log_result=False)
        def handler(message, context):
            logging.getLogger("library").warning("from a library: %s", message["n"])
            logging.getLogger("user.module").info("plain info")

        handler(sqs_event({"n": 7}, trace_id="t-root"), lambda_context("root-fn"))
        """.replace("FORMAT", log_format),
        AWS_LAMBDA_LOG_FORMAT=log_format,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(text) for text in done.stdout.splitlines()]
    assert [(line["logger"], line["message"], line["level"]) for line in lines] == [
        ("library", "from a library: 7", "WARN"),
        ("user.module", "plain info", "INFO"),
    ]
    assert {line["trace_id"] for line in lines} == {"t-root"}
    assert all(line["function_name"] == "root-fn" and line["request_id"] for line in lines)
