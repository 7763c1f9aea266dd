"""``lambda-kit trace ID``: every log line of one trace, across functions, as a timeline, from the
local log file or the deployed functions' CloudWatch Logs. Every field it prints is escaped
(``lambda_kit.local.terminal``): a log line cannot forge a row or retitle the terminal."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

from ..extras import import_optional
from ..local import timeline
from ..local.config import load_service
from ..local.logfile import run_files
from ..local.terminal import printable
from ..trace import is_valid_id
from ._errors import UserError
from ._options import DEFAULT_LOGS


def check_trace_id(value: str, option: str = "") -> None:
    if not is_valid_id(value):
        raise UserError(f"{option}{value!r} is not a trace id (1-128 letters, digits and -_.:=;/+)")


@dataclass
class _Found:
    parts: list[tuple[str, list[dict[str, Any]]]]  # (where the lines came from, the lines), newest first
    prefix: str = ""  # the service's `<service>-<stage>-`, cut from function names
    region: str = "us-east-1"
    notes: list[str] = field(default_factory=list)

    @property
    def lines(self) -> list[dict[str, Any]]:
        return [line for _, lines in self.parts for line in lines]


def _from_aws(args: argparse.Namespace) -> _Found:
    import_optional("boto3", "reading CloudWatch Logs")
    config = load_service(args.config, stage=args.stage, region=args.region)
    groups = [f"/aws/lambda/{function.name}" for function in config.functions.values()]
    search = timeline.insights_lines if args.insights else timeline.cloudwatch_lines
    region = args.region or config.region
    lines, notes = search(args.trace_id, groups, timeline.parse_since(args.since), region)
    source = (
        f"CloudWatch Logs, {len(groups)} log groups of {config.service}-{config.stage}, last {args.since}"
    )
    return _Found([(source, lines)], f"{config.service}-{config.stage}-", region, notes)


def _runs_of(trace_id: str, path: str, limit: int) -> tuple[list[tuple[str, list[dict[str, Any]]]], bool]:
    """The ``limit`` newest runs of the log file at ``path`` that hold the trace, with its lines
    (each run's file streamed: memory follows the trace), and whether an older run holds it too."""
    found: list[tuple[str, list[dict[str, Any]]]] = []
    for run in run_files(path):
        lines = timeline.file_lines_of(trace_id, run)
        if lines and len(found) == limit:
            return found, True
        if lines:
            found.append((str(run), lines))
    return found or [(str(run_files(path)[0]), [])], False


def _from_file(args: argparse.Namespace) -> _Found:
    if args.insights:
        raise UserError("--insights searches CloudWatch Logs: use it with --aws")
    parts, more = _runs_of(args.trace_id, args.logs or DEFAULT_LOGS, args.limit)
    found = _Found(parts)
    if more:
        found.notes.append(
            f"an earlier run holds {args.trace_id} too: --limit {args.limit + 1} shows it (trace ids are "
            "often reused after a restart)"
        )
    try:
        config = load_service(args.config)
    except Exception:  # no usable serverless.yml: it would only have shortened the function names
        config = None
    if config is not None:
        found.prefix, found.region = f"{config.service}-{config.stage}-", config.region
    found.region = args.region or found.region
    return found


def _xray_link(trace_id: str, found: _Found) -> str | None:
    """The X-Ray console link of the trace: its own id's, or for lambda_kit's own id, the X-Ray
    trace the lines say they joined, if any."""
    link = timeline.xray_link(trace_id, found.region)
    if link is not None:
        return link
    joined = next(
        (line["xray_trace_id"] for line in found.lines if isinstance(line.get("xray_trace_id"), str)), None
    )
    return None if joined is None else timeline.xray_link(joined, found.region)


def cmd_trace(args: argparse.Namespace) -> int:
    check_trace_id(args.trace_id)
    found = _from_aws(args) if args.aws else _from_file(args)
    trace_id = args.trace_id
    for source, lines in found.parts:
        print(printable(f"trace {trace_id} — {len(lines)} log lines from {source}"))
        if lines:
            print(f"  crosses: {' → '.join(timeline.functions_crossed(lines, found.prefix))}")
        print(timeline.render(trace_id, lines, found.prefix))
    for note in found.notes:
        print(printable(f"  note: {note}"))
    print(f"  Datadog Logs: {timeline.datadog_query(trace_id)}")
    link = _xray_link(trace_id, found)
    if link is not None:
        print(printable(f"  X-Ray: {link}"))
    return 0 if found.lines else 1
