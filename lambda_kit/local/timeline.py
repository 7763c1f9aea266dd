"""One trace as a timeline: every log line carrying a trace id, across functions, in time order.

Lines come from the local JSON-lines log file or from CloudWatch Logs of the deployed functions
(``filter_log_events`` on each function's log group, or one CloudWatch Logs Insights query over
all of them, filtered again here since a pattern is only as good as the lines it parses). The id
can be lambda_kit's, a W3C trace-id, a Datadog trace id or an X-Ray id: ``id_forms`` says which
log keys hold it in which form.
"""

from __future__ import annotations

import json
import re
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


_XRAY_ID = re.compile(r"1-([0-9a-f]{8})-([0-9a-f]{24})")
_W3C_ID = re.compile(r"[0-9a-fA-F]{32}")


def id_forms(trace_id: str) -> dict[str, str]:
    """The log keys a line of this trace can carry it in, each with the id as that key holds it:
    lambda_kit's ``trace_id`` always; for a W3C trace-id (32 hex digits) or an X-Ray id, the
    other's form and Datadog's (the low 64 bits, decimal); for a decimal up to 2**64-1, Datadog's."""
    forms = {"trace_id": trace_id}
    xray = _XRAY_ID.fullmatch(trace_id)
    number = None
    if xray is not None:
        number = int(xray.group(1) + xray.group(2), 16)
    elif _W3C_ID.fullmatch(trace_id) and int(trace_id, 16):
        number = int(trace_id, 16)
    elif trace_id.isascii() and trace_id.isdigit() and 0 < int(trace_id) < 2**64:
        forms["dd.trace_id"] = str(int(trace_id))
    if number is not None:
        hex_id = f"{number:032x}"
        forms.update({"otelTraceID": hex_id, "xray_trace_id": f"1-{hex_id[:8]}-{hex_id[8:]}", "dd.trace_id": str(number & (2**64 - 1))})
    return forms


def matches(forms: dict[str, str], line: dict[str, Any]) -> bool:
    """Whether ``line`` belongs to the trace: one of its keys holds the id in that key's form, or
    its ``trace_id`` is the id in any form (a trace started by a tracer: its own id)."""
    found = line.get("trace_id")
    if found is not None and found in forms.values():
        return True
    return any(line.get(key) == value for key, value in forms.items() if key != "trace_id")


def lines_of(trace_id: str, lines: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lines of ``trace_id`` (any of its forms: ``id_forms``), in time order, with every line
    sharing a lambda_kit ``trace_id`` with them (the hops before a tracer's context appeared)."""
    forms = id_forms(trace_id)
    every = list(lines)
    ids = {line.get("trace_id") for line in every if matches(forms, line)}
    ids.discard(None)
    found = [line for line in every if line.get("trace_id") in ids or matches(forms, line)]
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
    """Datadog Logs' search for the trace: lambda_kit's attribute, and Datadog's correlated
    ``trace_id`` (remapped from ``dd.trace_id``) when the id has a Datadog form."""
    dd = id_forms(trace_id).get("dd.trace_id")
    return f"@trace_id:{trace_id}" if dd is None else f"@trace_id:{trace_id} OR trace_id:{dd}"


def xray_link(trace_id: str, region: str) -> str | None:
    """The X-Ray trace in the CloudWatch console, when the id has an X-Ray form."""
    xray = id_forms(trace_id).get("xray_trace_id")
    if xray is None:
        return None
    return f"https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}#xray:traces/{xray}"


def filter_pattern(trace_id: str) -> str:
    """The CloudWatch Logs filter pattern: lambda_kit's JSON field alone, or any of the id's forms
    as terms (a dotted key such as ``dd.trace_id`` has no JSON selector)."""
    forms = dict.fromkeys(id_forms(trace_id).values())
    if len(forms) == 1:
        return f'{{ $.trace_id = "{trace_id}" }}'
    return " ".join(f'?"{form}"' for form in forms)


def insights_query(trace_id: str) -> str:
    """The CloudWatch Logs Insights query of the trace's lines (any of the id's forms)."""
    forms = id_forms(trace_id)
    tests = [f'`{key}` = "{value}"' for key, value in forms.items()]
    tests += [f'trace_id = "{value}"' for key, value in forms.items() if key != "trace_id"]
    return f"fields @timestamp, @message | filter {' or '.join(dict.fromkeys(tests))} | sort @timestamp asc | limit 10000"


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


def logs_client(region: str) -> Any:
    try:
        import boto3

        return boto3.client("logs", region_name=region)
    except Exception as exc:  # no region / broken config
        raise TraceError(f"cannot create a CloudWatch Logs client: {exc}") from None


def _line_of(message: Any, timestamp: Any) -> dict[str, Any] | None:
    try:
        line = json.loads(message or "")
    except (TypeError, ValueError):
        return None
    if not isinstance(line, dict):
        return None
    line.setdefault("timestamp", timestamp)
    return line


def _missing_group(exc: Exception) -> bool:
    """True for a missing log group; raises ``TraceError`` for what the user must fix; else False."""
    code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
    name = type(exc).__name__
    if code == "ResourceNotFoundException":
        return True
    if name in ("NoCredentialsError", "PartialCredentialsError") or code in ("UnrecognizedClientException", "InvalidClientTokenId", "ExpiredTokenException", "AccessDeniedException"):
        raise TraceError(f"CloudWatch Logs refused the request ({code or name}): configure AWS credentials (AWS_PROFILE or aws configure)") from None
    if name in ("EndpointConnectionError", "ConnectTimeoutError"):
        raise TraceError(f"cannot reach CloudWatch Logs: {exc}") from None
    return False


NOT_DEPLOYED = "no such log group (not deployed, or no invocations yet)"


def cloudwatch_lines(trace_id: str, log_groups: list[str], since_seconds: float, region: str, client: Any = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Lines of ``trace_id`` from CloudWatch Logs (``filter_log_events`` per group); returns
    (lines, notes about missing groups)."""
    client = client or logs_client(region)
    start = int((time.time() - since_seconds) * 1000)
    pattern = filter_pattern(trace_id)
    found: list[dict[str, Any]] = []
    notes: list[str] = []
    for group in log_groups:
        request: dict[str, Any] = {"logGroupName": group, "filterPattern": pattern, "startTime": start}
        try:
            while True:
                page = client.filter_log_events(**request)
                for event in page.get("events", []):
                    line = _line_of(event.get("message"), event.get("timestamp"))
                    if line is not None:
                        found.append(line)
                token = page.get("nextToken")
                if not token:
                    break
                request["nextToken"] = token
        except Exception as exc:
            if not _missing_group(exc):
                raise
            notes.append(f"{group}: {NOT_DEPLOYED}")
    return lines_of(trace_id, found), notes


MAX_INSIGHTS_GROUPS = 50


def insights_lines(
    trace_id: str, log_groups: list[str], since_seconds: float, region: str, client: Any = None, timeout: float = 300.0
) -> tuple[list[dict[str, Any]], list[str]]:
    """Lines of ``trace_id`` from CloudWatch Logs Insights: one query over every group that exists
    (up to 50), for volumes ``filter_log_events`` pages through slowly; (lines, notes)."""
    client = client or logs_client(region)
    notes: list[str] = []
    existing = []
    for group in log_groups:
        try:
            listed = client.describe_log_groups(logGroupNamePrefix=group).get("logGroups", [])
        except Exception as exc:
            if not _missing_group(exc):
                raise
            listed = []
        if any(item.get("logGroupName") == group for item in listed):
            existing.append(group)
        else:
            notes.append(f"{group}: {NOT_DEPLOYED}")
    if not existing:
        return [], notes
    if len(existing) > MAX_INSIGHTS_GROUPS:
        notes.append(f"Logs Insights queries {MAX_INSIGHTS_GROUPS} log groups at most: {len(existing) - MAX_INSIGHTS_GROUPS} not searched")
        existing = existing[:MAX_INSIGHTS_GROUPS]
    now = time.time()
    try:
        query_id = client.start_query(
            logGroupNames=existing, startTime=int(now - since_seconds), endTime=int(now) + 1, queryString=insights_query(trace_id)
        )["queryId"]
    except Exception as exc:
        _missing_group(exc)
        raise
    deadline = time.monotonic() + timeout
    while True:
        answer = client.get_query_results(queryId=query_id)
        status = answer.get("status")
        if status == "Complete":
            break
        if status in ("Failed", "Cancelled", "Timeout", "Unknown"):
            raise TraceError(f"the Logs Insights query ended {status}")
        if time.monotonic() > deadline:
            raise TraceError(f"the Logs Insights query did not finish within {timeout:.0f} s")
        time.sleep(1.0)
    found = []
    for row in answer.get("results", []):
        fields = {item.get("field"): item.get("value") for item in row}
        line = _line_of(fields.get("@message"), fields.get("@timestamp"))
        if line is not None:
            found.append(line)
    return lines_of(trace_id, found), notes
