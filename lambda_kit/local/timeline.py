"""One trace as a timeline: every log line carrying a trace id, across functions, in time order.

Lines come from the local JSON-lines log file or from CloudWatch Logs of the deployed functions
(``filter_log_events`` with the JSON pattern ``{ $.trace_id = "ID" }`` on each function's log
group, filtered again here since a pattern is only as good as the lines it parses).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any


class TraceError(Exception):
    """A problem the user can fix (missing log file, no credentials ...); one line."""


def parse_timestamp(value: Any) -> float | None:
    if isinstance(value, (int, float)):
        return float(value) / (1000.0 if value > 1e11 else 1.0)
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def read_log_file(path: str | Path) -> Iterator[dict[str, Any]]:
    file = Path(path)
    if not file.exists():
        raise TraceError(f"{file} not found: run `lambda-kit run` or `lambda-kit local` first, or pass --logs FILE")
    with open(file, encoding="utf-8", errors="replace") as lines:
        for text in lines:
            text = text.strip()
            if not text.startswith("{"):
                continue
            try:
                line = json.loads(text)
            except ValueError:
                continue
            if isinstance(line, dict):
                yield line


def lines_of(trace_id: str, lines: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    found = [line for line in lines if line.get("trace_id") == trace_id]
    found.sort(key=lambda line: parse_timestamp(line.get("timestamp")) or 0.0)
    return found


def short_function(name: Any, prefix: str = "") -> str:
    text = str(name or "-")
    return text[len(prefix) :] if prefix and text.startswith(prefix) else text


def render(trace_id: str, lines: list[dict[str, Any]], prefix: str = "", indent: str = "  ") -> str:
    if not lines:
        return f"{indent}no log lines with trace_id {trace_id}"
    start = parse_timestamp(lines[0].get("timestamp")) or 0.0
    width = max(8, *(len(short_function(line.get("function_name"), prefix)) for line in lines))
    rows = [f"{indent}{'offset':>9}  {'function':<{width}}  {'level':<7} {'message':<34} {'duration':>9}  outcome"]
    for line in lines:
        at = parse_timestamp(line.get("timestamp"))
        offset = f"+{(at - start) * 1000:.0f} ms" if at is not None else "?"
        duration = line.get("duration_ms")
        duration_text = f"{duration:.1f} ms" if isinstance(duration, (int, float)) else ""
        outcome = line.get("outcome") or line.get("status") or ""
        if line.get("error_type"):
            outcome = f"{outcome} {line['error_type']}: {line.get('error', '')}".strip()
        message = str(line.get("message", ""))
        if len(message) > 34:
            message = message[:33] + "…"
        rows.append(
            f"{indent}{offset:>9}  {short_function(line.get('function_name'), prefix):<{width}}  "
            f"{str(line.get('level', '')):<7} {message:<34} {duration_text:>9}  {outcome}".rstrip()
        )
    return "\n".join(rows)


def functions_crossed(lines: list[dict[str, Any]], prefix: str = "") -> list[str]:
    seen: list[str] = []
    for line in lines:
        name = short_function(line.get("function_name"), prefix)
        if name not in seen:
            seen.append(name)
    return seen


def datadog_query(trace_id: str) -> str:
    return f"@trace_id:{trace_id}"


def parse_since(text: str) -> float:
    """``"1h"``, ``"30m"``, ``"2d"``, ``"90s"`` -> seconds."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    text = text.strip().lower()
    try:
        if text[-1:] in units:
            return float(text[:-1]) * units[text[-1]]
        return float(text)
    except ValueError:
        raise TraceError(f"--since {text!r}: use a number with s, m, h, d or w, e.g. 1h or 30m") from None


def cloudwatch_lines(trace_id: str, log_groups: list[str], since_seconds: float, region: str, client: Any = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Lines of ``trace_id`` from CloudWatch Logs; returns (lines, notes about missing groups)."""
    if client is None:
        try:
            import boto3

            client = boto3.client("logs", region_name=region)
        except Exception as exc:  # no region / broken config
            raise TraceError(f"cannot create a CloudWatch Logs client: {exc}") from None
    start = int((time.time() - since_seconds) * 1000)
    pattern = f'{{ $.trace_id = "{trace_id}" }}'
    found: list[dict[str, Any]] = []
    notes: list[str] = []
    for group in log_groups:
        request: dict[str, Any] = {"logGroupName": group, "filterPattern": pattern, "startTime": start}
        try:
            while True:
                page = client.filter_log_events(**request)
                for event in page.get("events", []):
                    try:
                        line = json.loads(event.get("message", ""))
                    except ValueError:
                        continue
                    if isinstance(line, dict) and line.get("trace_id") == trace_id:
                        line.setdefault("timestamp", event.get("timestamp"))
                        found.append(line)
                token = page.get("nextToken")
                if not token:
                    break
                request["nextToken"] = token
        except Exception as exc:
            code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
            name = type(exc).__name__
            if code == "ResourceNotFoundException":
                notes.append(f"{group}: no such log group (not deployed, or no invocations yet)")
                continue
            if name in ("NoCredentialsError", "PartialCredentialsError") or code in ("UnrecognizedClientException", "InvalidClientTokenId", "ExpiredTokenException", "AccessDeniedException"):
                raise TraceError(f"CloudWatch Logs refused the request ({code or name}): configure AWS credentials (AWS_PROFILE or aws configure)") from None
            if name in ("EndpointConnectionError", "ConnectTimeoutError"):
                raise TraceError(f"cannot reach CloudWatch Logs: {exc}") from None
            raise
    return lines_of(trace_id, found), notes
