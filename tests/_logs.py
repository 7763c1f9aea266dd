"""Read the JSON log lines a handler wrote to standard output (file descriptor 1)."""

from __future__ import annotations

import json
import re
from typing import Any

BASE_KEYS = ("timestamp", "level", "message", "function_name", "request_id")
ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|\+00:00)$")


def read_lines(capfd: Any) -> list[dict[str, Any]]:
    """Every line written to fd 1 since the last read, each parsed as one JSON object."""
    out = capfd.readouterr().out
    lines = []
    for text in out.splitlines():
        line = json.loads(text)  # a line that is not JSON fails the test here
        assert isinstance(line, dict), text
        for key in BASE_KEYS:
            assert key in line, f"{key} missing in {text}"
        assert ISO_UTC.match(line["timestamp"]), line["timestamp"]
        lines.append(line)
    return lines


def of_level(lines: list[dict[str, Any]], level: str) -> list[dict[str, Any]]:
    return [line for line in lines if line["level"] == level]


def with_message(lines: list[dict[str, Any]], message: str) -> list[dict[str, Any]]:
    return [line for line in lines if line["message"] == message]
