"""What a function's execution environments write to the stack's log file: the lines their processes
print, and Lambda's platform lines around each invocation.

A JSON line a function writes (lambda_kit's, Powertools', the runtime's JSON format) goes to the
file as it is, with the function's name added where it has none (the file holds every function's
lines; CloudWatch Logs would tell them apart by log group), and ``origin`` ``runtime`` on the
runtime's report of an error in its JSON format (``errorType``, ``requestId``, no ``message``). A
text line becomes a JSON line: the runtime's own text format (``[LEVEL]\\ttime\\trequest
id\\tmessage``; an error's lines joined by ``\\r``, ``[ERROR] Type: message``) is read into
``level``, ``request_id``, ``message`` (and ``error_type``), with ``origin`` ``runtime`` (the
runtime's report of an error the handler raised is such a line, as on Lambda); any other text (a
``print``) is the ``message``, with the request that was running and ``origin`` ``print``.

The platform lines are Lambda's JSON log format's (``type`` ``platform.start``,
``platform.runtimeDone``, ``platform.report`` with ``record``), plus the fields the timeline reads
(``timestamp``, ``level``, ``function_name``, ``request_id``, ``message`` with Lambda's text line
but its request id, which ``request_id`` holds: ``REPORT Duration: 3.02 ms ... Init Duration: 240.51
ms`` on a cold start; a REPORT's ``duration_ms``, and its ``outcome``: the status, with the init
duration on a cold start). A function whose ``systemLogLevel`` is WARN or above gets none, as on
Lambda.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..log.line import timestamp

_TEXT_LINE = re.compile(r"\[(TRACE|DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\]\s?(.*)", re.DOTALL)
_ERROR_HEAD = re.compile(r"([\w.]+): (.*)", re.DOTALL)
QUIET_SYSTEM_LEVELS = ("WARN", "ERROR", "FATAL")


def function_line(line: str, function_name: str, request_id: str | None) -> str:
    """One line a worker printed, as the log file holds it (see the module's docstring)."""
    if line.startswith("{"):
        if '"function_name"' in line:
            return line
        try:
            parsed = json.loads(line)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            parsed.setdefault("function_name", function_name)
            if "errorType" in parsed and "requestId" in parsed and "message" not in parsed:
                parsed.setdefault("origin", "runtime")  # the runtime's report of an error, JSON format
                parsed.setdefault("request_id", parsed["requestId"])
            if request_id and "requestId" not in parsed:
                parsed.setdefault("request_id", request_id)
            return json.dumps(parsed, ensure_ascii=False, default=str)
    return json.dumps(_text_line(line, function_name, request_id), ensure_ascii=False)


def _text_line(line: str, function_name: str, request_id: str | None) -> dict[str, Any]:
    found: dict[str, Any] = {"timestamp": timestamp(time.time()), "function_name": function_name}
    if request_id:
        found["request_id"] = request_id
    matched = _TEXT_LINE.fullmatch(line)
    if matched is None:
        return {**found, "message": line, "origin": "print"}
    return {**found, **_runtime_text(*matched.groups())}


def _runtime_text(level: str, rest: str) -> dict[str, Any]:
    """The fields of a line the runtime wrote in its text format: ``[LEVEL]``, then the time, the
    request id and the message between tabs (or the message alone), a stack after a carriage return."""
    found: dict[str, Any] = {"origin": "runtime", "level": "WARN" if level == "WARNING" else level}
    head, _, trace = rest.partition("\r")
    fields = head.split("\t")
    if len(fields) == 3:
        if fields[1]:
            found["request_id"] = fields[1]
        head = fields[2]
    error = _ERROR_HEAD.fullmatch(head) if level == "ERROR" and "\t" not in rest else None
    if error is not None:
        found["error_type"], head = error.group(1), error.group(2)
        found["error"] = head
    found["message"] = head.rstrip("\n")
    if trace:
        found["stack"] = trace.replace("\r", "\n").replace("\u00a0", " ").rstrip("\n")
    return found


@dataclass
class Report:
    """One invocation as the platform's REPORT line tells it."""

    request_id: str
    duration: float  # seconds
    memory_mb: int
    max_memory_mb: int
    init_duration: float | None  # seconds, on a cold start
    error_type: str | None = None
    timed_out: bool = False


class PlatformLines:
    """Writes a function's START / END / REPORT lines through ``write``."""

    def __init__(self, write: Callable[[str], None], function_name: str, system_level: str | None) -> None:
        self._write = write
        self.function_name = function_name
        self.enabled = (system_level or "INFO").upper() not in QUIET_SYSTEM_LEVELS

    def _line(
        self, kind: str, record: dict[str, Any], message: str, level: str = "INFO", **fields: Any
    ) -> None:
        if not self.enabled:
            return
        now = timestamp(time.time())
        line = {
            "time": now,
            "type": kind,
            "record": record,
            "timestamp": now,
            "level": level,
            "function_name": self.function_name,
            "request_id": record["requestId"],
            "message": message,
            **fields,
        }
        self._write(json.dumps(line))

    def start(self, request_id: str) -> None:
        self._line(
            "platform.start",
            {"requestId": request_id, "version": "$LATEST"},
            "START Version: $LATEST",
        )

    def timed_out(self, request_id: str, text: str) -> None:
        """The line Lambda writes when it stops an invocation at its deadline."""
        self._line(
            "platform.runtimeDone",
            {"requestId": request_id, "status": "timeout"},
            text,
            level="ERROR",
        )

    def end(self, report: Report) -> None:
        status = "timeout" if report.timed_out else ("failure" if report.error_type else "success")
        self._line("platform.runtimeDone", {"requestId": report.request_id, "status": status},
                   "END")  # fmt: skip
        metrics: dict[str, Any] = {
            "durationMs": round(report.duration * 1000, 2),
            "billedDurationMs": max(1, math.ceil(report.duration * 1000)),
            "memorySizeMB": report.memory_mb,
            "maxMemoryUsedMB": report.max_memory_mb,
        }
        text = (
            f"REPORT Duration: {metrics['durationMs']:.2f} ms\t"
            f"Billed Duration: {metrics['billedDurationMs']} ms\tMemory Size: {report.memory_mb} MB\t"
            f"Max Memory Used: {report.max_memory_mb} MB"
        )
        if report.init_duration is not None:
            metrics["initDurationMs"] = round(report.init_duration * 1000, 2)
            text += f"\tInit Duration: {metrics['initDurationMs']:.2f} ms"
        record: dict[str, Any] = {"requestId": report.request_id, "metrics": metrics, "status": status}
        if report.error_type:
            record["errorType"] = report.error_type
            text += f"\tStatus: {status}\tError Type: {report.error_type}"
        outcome = (
            status if report.init_duration is None else f"{status}, init {metrics['initDurationMs']:.2f} ms"
        )
        self._line("platform.report", record, text, duration_ms=metrics["durationMs"], outcome=outcome)
