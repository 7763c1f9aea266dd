"""The stack serving a service, found from another process: ``lambda-kit local`` (and ``run
--keep``) writes ``.lambda-kit/stack.json`` beside the service's ``serverless.yml`` while it serves,
and ``lambda-kit invoke`` reads it to send to that stack (same state, same log file) instead of
starting one of its own.

    {"pid": 4242, "config": "/srv/shop/serverless.yml", "stage": "dev", "started": "2026-12-01T10:00:00Z",
     "lambda_api": "http://127.0.0.1:40123", "http_api": "http://127.0.0.1:3000",
     "log": ".lambda-kit/logs/20261201T100000.000000Z-4242.jsonl",
     "functions": {"worker": {"name": "shop-dev-worker", "source_arns": {"sqs": "arn:aws:sqs:..."}}}}

A file left by a stack that is gone (its process ended, or its Invoke API does not answer) is
ignored; the stack removes its own file when it stops.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .. import sources
from .config import EventSource, FunctionConfig

FILE_NAME = "stack.json"
FOLDER = ".lambda-kit"


def path_for(config_path: str | os.PathLike[str]) -> Path:
    return Path(config_path).resolve().parent / FOLDER / FILE_NAME


def source_arn(stack: Any, function: FunctionConfig, kind: str) -> str | None:
    """The ARN of the function's own event of source ``kind`` (its queue, topic, stream, table) in
    the started ``stack``, if any: what an event of that source names as its origin."""
    source = sources.get(kind)
    for event in function.events:
        arn = _resolved_arn(stack, event) if event.kind in source.serverless_events else None
        if arn and f":{source.arn_service}:" in arn:
            return arn
    return None


def _resolved_arn(stack: Any, event: EventSource) -> str | None:
    try:
        arn = stack.resources.resolve(event.spec).get("arn")
    except Exception:  # a reference the local resources cannot resolve: no ARN to send
        return None
    return arn if isinstance(arn, str) else None


def _source_arns(stack: Any, function: FunctionConfig) -> dict[str, str]:
    kinds = {found.name for event in function.events for found in stack.config.sources_of(event)}
    arns = {kind: source_arn(stack, function, kind) for kind in sorted(kinds)}
    return {kind: arn for kind, arn in arns.items() if arn}


@dataclass
class Running:
    """A stack serving the service, as its file says."""

    pid: int
    lambda_api: str
    log: str
    http_api: str = ""
    started: str = ""
    functions: dict[str, dict[str, Any]] = field(default_factory=dict)

    def source_arn(self, function: str, kind: str) -> str | None:
        arn = self.functions.get(function, {}).get("source_arns", {}).get(kind)
        return arn if isinstance(arn, str) else None


def announce(stack: Any, lambda_api: str, log: str | os.PathLike[str] | None) -> Path:
    """Write the file that says ``stack`` serves its service (replacing any other's)."""
    document = {
        "pid": os.getpid(),
        "config": str(stack.config.path),
        "stage": stack.config.stage,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "lambda_api": lambda_api,
        "http_api": stack.api_url,
        "log": "" if log is None else str(Path(log).resolve()),
        "functions": {
            key: {"name": runtime.function.name, "source_arns": _source_arns(stack, runtime.function)}
            for key, runtime in stack.runtimes.items()
        },
    }
    path = path_for(stack.config.path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{FILE_NAME}.{os.getpid()}.tmp")
    partial.write_text(json.dumps(document, indent=1), encoding="utf-8")
    os.replace(partial, path)
    return path


def withdraw(config_path: str | os.PathLike[str]) -> None:
    """Remove the file, if it is this process's."""
    path = path_for(config_path)
    found = _read(path)
    if found is not None and found.get("pid") == os.getpid():
        path.unlink(missing_ok=True)


def find(config_path: str | os.PathLike[str], stage: str) -> Running | None:
    """The stack serving the service at ``config_path`` on ``stage``, if one is up."""
    found = _read(path_for(config_path))
    if (
        found is None
        or found.get("config") != str(Path(config_path).resolve())
        or found.get("stage") != stage
    ):
        return None
    pid, url = found.get("pid"), found.get("lambda_api")
    if not isinstance(pid, int) or not isinstance(url, str) or not _alive(pid) or not _answers(url):
        return None
    functions = found.get("functions")
    return Running(
        pid=pid,
        lambda_api=url,
        log=str(found.get("log") or ""),
        http_api=str(found.get("http_api") or ""),
        started=str(found.get("started") or ""),
        functions=functions if isinstance(functions, dict) else {},
    )


def _read(path: Path) -> dict[str, Any] | None:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return document if isinstance(document, dict) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def _answers(url: str) -> bool:
    parts = urlsplit(url)
    try:
        socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=2).close()
    except (OSError, ValueError):
        return False
    return True
