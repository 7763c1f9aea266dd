"""What the stack's log file holds of a worker's output, and Lambda's platform lines
(``lambda_kit.local.function_log``)."""

from __future__ import annotations

import json

from lambda_kit.local.function_log import PlatformLines, Report, function_line


def test_a_lambda_kit_line_is_written_as_it_is():
    line = '{"timestamp":"t","level":"INFO","message":"m","function_name":"f","trace_id":"T"}'
    assert function_line(line, "other", "r-1") == line


def test_a_json_line_without_a_function_gets_the_function_and_the_request():
    line = json.loads(function_line('{"level": "INFO", "message": "powertools"}', "svc-dev-f", "r-1"))
    assert line == {
        "level": "INFO",
        "message": "powertools",
        "function_name": "svc-dev-f",
        "request_id": "r-1",
    }


def test_the_runtimes_text_lines_are_read_into_fields():
    text = "[WARNING]\t2026-01-01T00:00:00.000Z\tr-9\tsomething odd"
    line = json.loads(function_line(text, "f", None))
    assert (line["level"], line["request_id"], line["message"], line["origin"]) == (
        "WARN",
        "r-9",
        "something odd",
        "runtime",
    )
    error = (
        "[ERROR] Runtime.ImportModuleError: Unable to import module 'x': No module named 'y'\rTraceback (most"
    )
    line = json.loads(function_line(error, "f", "r-2"))
    assert (line["level"], line["error_type"], line["origin"]) == (
        "ERROR",
        "Runtime.ImportModuleError",
        "runtime",
    )
    assert line["message"] == line["error"] == "Unable to import module 'x': No module named 'y'"
    assert line["stack"] == "Traceback (most"


def test_a_print_is_the_message_of_the_running_request():
    line = json.loads(function_line("hello there", "f", "r-3"))
    assert (line["message"], line["request_id"], line["origin"], "level" in line) == (
        "hello there",
        "r-3",
        "print",
        False,
    )


def test_start_end_and_report_with_the_init_duration_of_a_cold_start():
    written: list[str] = []
    lines = PlatformLines(written.append, "svc-dev-f", None)
    lines.start("r-1")
    lines.end(Report("r-1", 0.01234, 128, 40, init_duration=0.2501))
    start, end, report = (json.loads(line) for line in written)
    assert (start["type"], start["record"], start["message"]) == (
        "platform.start",
        {"requestId": "r-1", "version": "$LATEST"},
        "START Version: $LATEST",
    )
    assert (end["type"], end["record"]["status"], end["request_id"]) == (
        "platform.runtimeDone",
        "success",
        "r-1",
    )
    assert report["record"]["metrics"] == {
        "durationMs": 12.34,
        "billedDurationMs": 13,
        "memorySizeMB": 128,
        "maxMemoryUsedMB": 40,
        "initDurationMs": 250.1,
    }
    assert (
        report["message"].endswith("\tInit Duration: 250.10 ms")
        and report["outcome"] == "success, init 250.10 ms"
    )
    quiet: list[str] = []
    PlatformLines(quiet.append, "f", "WARN").start("r-2")
    assert quiet == []  # systemLogLevel WARN: no platform lines, as on Lambda


def test_the_runtimes_json_error_report_is_the_runtimes_line():
    """Under ``AWS_LAMBDA_LOG_FORMAT=JSON`` the runtime reports a raised error as a JSON line of its
    own: marked as the runtime's (it carries no trace id: it is no record's line)."""
    report = {
        "timestamp": "2026-12-01T23:03:14Z",
        "level": "ERROR",
        "errorMessage": "boom",
        "errorType": "ValueError",
        "requestId": "r-9",
        "stackTrace": ["  File x"],
    }
    line = json.loads(function_line(json.dumps(report), "shop-dev-api", "r-9"))
    assert (line["origin"], line["request_id"], line["function_name"]) == ("runtime", "r-9", "shop-dev-api")
    own = json.loads(function_line('{"level": "INFO", "message": "hi"}', "shop-dev-api", "r-9"))
    assert "origin" not in own
