"""One trace as a timeline: every log line carrying a trace id, across functions, in time order.

Lines come from the local JSON-lines log file or from CloudWatch Logs of the deployed functions
(``filter_log_events`` on each function's log group, or one CloudWatch Logs Insights query over
all of them, filtered again here since a pattern is only as good as the lines it parses). The id
can be lambda_kit's, a W3C trace-id, a Datadog trace id or an X-Ray id: ``id_forms`` says which
log keys hold it in which form.
"""

from __future__ import annotations

import io
import json
import re
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from ..extras import import_optional
from ..serverless_config import ConfigError, open_regular
from .terminal import printable


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


MAX_LINE_CHARS = 1_000_000
"""A longer line in a log file is no function's log line (Lambda cuts lines at 256 KB): skipped."""


def read_log_file(path: str | Path) -> Iterator[dict[str, Any]]:
    """The JSON object lines of the log file at ``path`` (a regular file: a FIFO or a device is
    refused before reading, ``TraceError``)."""
    return (line for _, line in _file_lines(path, None))


def _file_lines(path: str | Path, needles: frozenset[str] | None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(position, line) of each JSON object line of the file, read as it streams; with ``needles``,
    only the lines whose text holds one of them are parsed."""
    try:
        binary = open_regular(path, "run `lambda-kit run` or `lambda-kit local` first, or pass --logs FILE")
    except ConfigError as exc:
        raise TraceError(str(exc)) from None
    with io.TextIOWrapper(binary, encoding="utf-8", errors="replace") as lines:
        for position, text in enumerate(_bounded_lines(lines)):
            if needles is None or any(needle in text for needle in needles):
                line = _json_line(text)
                if line is not None:
                    yield position, line


def _bounded_lines(file: TextIO) -> Iterator[str]:
    while text := file.readline(MAX_LINE_CHARS):
        if len(text) < MAX_LINE_CHARS or text.endswith("\n"):
            yield text
            continue
        while text and not text.endswith("\n"):  # the rest of a line too long to be one
            text = file.readline(MAX_LINE_CHARS)


def _json_line(text: str) -> dict[str, Any] | None:
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        line = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return line if isinstance(line, dict) else None


_XRAY_ID = re.compile(r"1-([0-9a-f]{8})-([0-9a-f]{24})")
_W3C_ID = re.compile(r"[0-9a-fA-F]{32}")


def _id_number(trace_id: str) -> int | None:
    """The 128-bit number an X-Ray id or a W3C trace-id stands for."""
    xray = _XRAY_ID.fullmatch(trace_id)
    if xray is not None:
        return int(xray.group(1) + xray.group(2), 16)
    if _W3C_ID.fullmatch(trace_id) is None:
        return None
    return int(trace_id, 16) or None  # all zeros: W3C's invalid id


def id_forms(trace_id: str) -> dict[str, str]:
    """The log keys a line of this trace can carry it in, each with the id as that key holds it:
    lambda_kit's ``trace_id`` always; for a W3C trace-id (32 hex digits) or an X-Ray id, the
    other's form and Datadog's (the low 64 bits, decimal); for a decimal up to 2**64-1, Datadog's."""
    forms = {"trace_id": trace_id}
    number = _id_number(trace_id)
    if number is not None:
        hex_id = f"{number:032x}"
        forms.update(
            {
                "otelTraceID": hex_id,
                "xray_trace_id": f"1-{hex_id[:8]}-{hex_id[8:]}",
                "dd.trace_id": str(number & (2**64 - 1)),
            }
        )
    elif trace_id.isascii() and trace_id.isdigit() and 0 < int(trace_id) < 2**64:
        forms["dd.trace_id"] = str(int(trace_id))
    return forms


def matches(forms: dict[str, str], line: dict[str, Any]) -> bool:
    """Whether ``line`` belongs to the trace: one of its keys holds the id in that key's form, its
    ``trace_id`` is the id in any form (a trace started by a tracer: its own id), or it is a
    batch's line (a commit) naming the id among its ``trace_ids``."""
    ids = [line.get("trace_id"), *_listed(line.get("trace_ids"))]
    if any(found in forms.values() for found in ids):
        return True
    return any(line.get(key) == value for key, value in forms.items() if key != "trace_id")


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


Passes = Callable[[frozenset[str]], Iterable[tuple[int, dict[str, Any]]]]
"""Lines to read again, once per pass: (position, line) of each that may hold one of the texts given."""


def lines_of(trace_id: str, lines: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lines of ``trace_id`` (any of its forms: ``id_forms``), in time order, with every line
    sharing a lambda_kit ``trace_id`` with them (the hops before a tracer's context appeared), and
    the batch's own lines (no trace id: a batch's commit) of the invocations they were written in."""
    every = list(lines)
    return _gathered(trace_id, lambda needles: enumerate(every))


def file_lines_of(trace_id: str, path: str | Path) -> list[dict[str, Any]]:
    """``lines_of`` the log file at ``path``, streamed: the file is read three times and only the
    trace's lines are kept, so memory follows the trace, not the file."""
    return _gathered(trace_id, lambda needles: _file_lines(path, needles))


def request_lines(path: str | Path, request_id: str) -> list[dict[str, Any]]:
    """The lines one invocation wrote (its ``request_id``) in the log file at ``path``, streamed."""
    found = _file_lines(path, _needles([request_id]))
    return [line for _, line in found if _key(line, "request_id") == request_id]


def _needles(values: Iterable[str]) -> frozenset[str]:
    """The texts a line holding one of ``values`` as a JSON string holds (``/`` may be escaped)."""
    return frozenset(form for value in values for form in (value, value.replace("/", "\\/")))


def _gathered(trace_id: str, passes: Passes) -> list[dict[str, Any]]:
    """The trace's lines in three passes: the lambda_kit ids its lines carry; every line of those
    ids or forms; the lines of no trace (a batch's commit) of the same invocations."""
    forms = id_forms(trace_id)
    ids = {_key(line, "trace_id") for _, line in passes(_needles(forms.values())) if matches(forms, line)}
    ids -= {None}
    found = {
        position: line
        for position, line in passes(_needles([*forms.values(), *ids]))  # type: ignore[list-item]
        if _key(line, "trace_id") in ids or matches(forms, line)
    }
    requests = {_key(line, "request_id") for line in found.values()} - {None}
    for position, line in passes(_needles(requests)) if requests else ():  # type: ignore[arg-type]
        if line.get("trace_id") is None and _key(line, "request_id") in requests:
            found.setdefault(position, line)
    return sorted(found.values(), key=_at)


def _at(line: dict[str, Any]) -> float:
    """When the line was written (0 when it does not say)."""
    return parse_timestamp(line.get("timestamp")) or 0.0


def _key(line: dict[str, Any], name: str) -> str | None:
    """The line's ``name`` field when it is text (a hostile line may hold anything there)."""
    value = line.get(name)
    return value if isinstance(value, str) else None


def short_function(name: Any, prefix: str = "") -> str:
    """A line's function name without the service's ``<service>-<stage>-``, printable."""
    text = str(name or "-")
    return printable(text.removeprefix(prefix))


MESSAGE_WIDTH = 34
RECORD_WIDTH = 40


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _record(value: Any) -> str:
    """A record id as its column shows it: the start and the end of a long one (a Kinesis sequence
    number differs at its end, a message id at its start)."""
    text = printable(value) if isinstance(value, (str, int)) else ""
    half = (RECORD_WIDTH - 1) // 2
    return text if len(text) <= RECORD_WIDTH else f"{text[:half]}…{text[-(RECORD_WIDTH - 1 - half) :]}"


def _count(line: dict[str, Any], key: str) -> int | None:
    value = line.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _outcome(line: dict[str, Any]) -> str:
    """The outcome (or status), its error, and for a batch's commit its records and failures."""
    records, failed = _count(line, "records"), _count(line, "failed")
    parts = [
        printable(line.get("outcome") or line.get("status") or ""),
        f"{printable(line['error_type'])}: {printable(line.get('error', ''))}"
        if line.get("error_type")
        else "",
        "" if records is None else f"{records} record{'s' * (records != 1)}",
        f"({failed} failed)" if failed else "",
    ]
    return " ".join(filter(None, parts))


def _cells(line: dict[str, Any], start: float, prefix: str) -> list[str]:
    """offset, function, record, level, message, duration, outcome of one line, printable."""
    at = parse_timestamp(line.get("timestamp"))
    duration = line.get("duration_ms")
    return [
        f"+{(at - start) * 1000:.0f} ms" if at is not None else "?",
        short_function(line.get("function_name"), prefix),
        _record(line.get("record_id")),
        printable(line.get("level", "")),
        _cut(printable(str(line.get("message", "")).replace("\t", " ")), MESSAGE_WIDTH),  # REPORT's tabs
        f"{duration:.1f} ms" if isinstance(duration, (int, float)) and not isinstance(duration, bool) else "",
        _outcome(line),
    ]


HEADINGS = ["offset", "function", "record", "level", "message", "duration", "outcome"]


def render(trace_id: str, lines: list[dict[str, Any]], prefix: str = "", indent: str = "  ") -> str:
    """The lines as a timeline, one row each: offset from the first, function, record id (when
    a line has one: a batch's records), level, message, duration, outcome. Every field is printable
    (``terminal.printable``): a log line cannot forge a row."""
    if not lines:
        return printable(f"{indent}no log lines with trace_id {trace_id}")
    start = _at(lines[0])
    rows = [HEADINGS, *(_cells(line, start, prefix) for line in lines)]
    function_width = max(8, *(len(row[1]) for row in rows))
    record_width = max(len(row[2]) for row in rows[1:])
    return "\n".join(_row(row, indent, function_width, record_width) for row in rows)


def _row(cells: list[str], indent: str, function_width: int, record_width: int) -> str:
    offset, function, record, level, message, duration, outcome = cells
    record_column = f"{record:<{max(record_width, 6)}}  " if record_width else ""
    return (
        f"{indent}{offset:>9}  {function:<{function_width}}  {record_column}"
        f"{level:<7} {message:<{MESSAGE_WIDTH}} {duration:>9}  {outcome}"
    ).rstrip()


def functions_crossed(lines: list[dict[str, Any]], prefix: str = "") -> list[str]:
    """The functions the lines were written by, in order of first appearance, printable."""
    return list(dict.fromkeys(short_function(line.get("function_name"), prefix) for line in lines))


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
    found = " or ".join(dict.fromkeys(tests))
    return f"fields @timestamp, @message | filter {found} | sort @timestamp asc | limit 10000"


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
    boto3 = import_optional("boto3", "reading CloudWatch Logs")
    try:
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


AUTH_ERRORS = frozenset(
    {
        "NoCredentialsError",
        "PartialCredentialsError",
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "ExpiredTokenException",
        "AccessDeniedException",
    }
)
UNREACHABLE = frozenset({"EndpointConnectionError", "ConnectTimeoutError"})


def _missing_group(exc: Exception) -> bool:
    """True for a missing log group; raises ``TraceError`` for what the user must fix; else False."""
    code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
    name = type(exc).__name__
    if code in AUTH_ERRORS or name in AUTH_ERRORS:
        raise TraceError(
            f"CloudWatch Logs refused the request ({code or name}): configure AWS credentials "
            "(AWS_PROFILE or aws configure)"
        ) from None
    if name in UNREACHABLE:
        raise TraceError(f"cannot reach CloudWatch Logs: {exc}") from None
    return code == "ResourceNotFoundException"


NOT_DEPLOYED = "no such log group (not deployed, or no invocations yet)"


def _group_lines(client: Any, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The lines of one log group ``filter_log_events`` finds, page after page."""
    while True:
        page = client.filter_log_events(**request)
        for event in page.get("events", []):
            line = _line_of(event.get("message"), event.get("timestamp"))
            if line is not None:
                yield line
        if not page.get("nextToken"):
            return
        request = {**request, "nextToken": page["nextToken"]}


def cloudwatch_lines(
    trace_id: str, log_groups: list[str], since_seconds: float, region: str, client: Any = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """Lines of ``trace_id`` from CloudWatch Logs (``filter_log_events`` per group); returns
    (lines, notes about missing groups)."""
    client = client or logs_client(region)
    start = int((time.time() - since_seconds) * 1000)
    found: list[dict[str, Any]] = []
    notes: list[str] = []
    for group in log_groups:
        try:
            found += _group_lines(
                client, {"logGroupName": group, "filterPattern": filter_pattern(trace_id), "startTime": start}
            )
        except Exception as exc:
            if not _missing_group(exc):
                raise
            notes.append(f"{group}: {NOT_DEPLOYED}")
    return lines_of(trace_id, found), notes


MAX_INSIGHTS_GROUPS = 50


def _exists(client: Any, group: str) -> bool:
    try:
        listed = client.describe_log_groups(logGroupNamePrefix=group).get("logGroups", [])
    except Exception as exc:
        if not _missing_group(exc):
            raise
        return False
    return any(item.get("logGroupName") == group for item in listed)


def _existing_groups(client: Any, log_groups: list[str], notes: list[str]) -> list[str]:
    """The groups that exist, up to Logs Insights' 50; a note for each one left out."""
    existing = [group for group in log_groups if _exists(client, group)]
    notes += [f"{group}: {NOT_DEPLOYED}" for group in log_groups if group not in existing]
    if len(existing) > MAX_INSIGHTS_GROUPS:
        notes.append(
            f"Logs Insights queries {MAX_INSIGHTS_GROUPS} log groups at most: "
            f"{len(existing) - MAX_INSIGHTS_GROUPS} not searched"
        )
    return existing[:MAX_INSIGHTS_GROUPS]


def _start_query(client: Any, groups: list[str], since_seconds: float, trace_id: str) -> str:
    now = time.time()
    try:
        return str(
            client.start_query(
                logGroupNames=groups,
                startTime=int(now - since_seconds),
                endTime=int(now) + 1,
                queryString=insights_query(trace_id),
            )["queryId"]
        )
    except Exception as exc:
        _missing_group(exc)
        raise


def _query_results(client: Any, query_id: str, timeout: float) -> list[Any]:
    """The rows of a finished query; ``TraceError`` if it fails or outlasts ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        answer = client.get_query_results(queryId=query_id)
        status = answer.get("status")
        if status == "Complete":
            return list(answer.get("results", []))
        if status in ("Failed", "Cancelled", "Timeout", "Unknown"):
            raise TraceError(f"the Logs Insights query ended {status}")
        if time.monotonic() > deadline:
            raise TraceError(f"the Logs Insights query did not finish within {timeout:.0f} s")
        time.sleep(1.0)


def _row_line(row: list[dict[str, Any]]) -> dict[str, Any] | None:
    fields = {item.get("field"): item.get("value") for item in row}
    return _line_of(fields.get("@message"), fields.get("@timestamp"))


def insights_lines(
    trace_id: str,
    log_groups: list[str],
    since_seconds: float,
    region: str,
    client: Any = None,
    timeout: float = 300.0,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Lines of ``trace_id`` from CloudWatch Logs Insights: one query over every group that exists
    (up to 50), for volumes ``filter_log_events`` pages through slowly; (lines, notes)."""
    client = client or logs_client(region)
    notes: list[str] = []
    existing = _existing_groups(client, log_groups, notes)
    if not existing:
        return [], notes
    rows = _query_results(client, _start_query(client, existing, since_seconds, trace_id), timeout)
    return lines_of(trace_id, filter(None, map(_row_line, rows))), notes
