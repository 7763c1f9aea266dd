"""The AWS calls a local run's roles denied, kept for ``lambda-kit check``.

The stack that authorises its functions' calls against their roles notes each denial here
(``DeniedCalls.record``): the file ``.lambda-kit/denied-calls.json`` beside the service's
``serverless.yml`` holds one entry per function, action and resource, with the first trace id and
the number of calls, and the hash of the ``serverless.yml`` the run read. A new run starts it
empty. ``lambda-kit check`` reads it (``read``): an entry is an error naming the statement to add;
entries of a run under another ``serverless.yml`` are only pointed out (the roles may have changed
since).

    {"config": "/srv/shop/serverless.yml", "config_sha256": "9f2c…", "started": "2026-12-01T10:00:00Z",
     "pid": 4242, "denied": [{"function": "api", "action": "kinesis:PutRecord",
     "resource": "arn:aws:kinesis:us-east-1:123456789012:stream/shop-dev-orders",
     "resource_ref": "OrdersStream.Arn", "calls": 3, "trace_id": "T1"}]}

The file is rewritten whole (a new file renamed over the old one), so a reader never sees half of it.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FILE_NAME = "denied-calls.json"
FOLDER = ".lambda-kit"


def path_for(config_path: Path) -> Path:
    """Where the denials of the service at ``config_path`` are kept."""
    return config_path.resolve().parent / FOLDER / FILE_NAME


def config_hash(config_path: Path) -> str:
    return hashlib.sha256(config_path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class Denied:
    function: str
    action: str
    resource: str
    resource_ref: str = ""  # "OrdersStream.Arn" when the resource is one serverless.yml declares
    calls: int = 1
    trace_id: str = ""


class DeniedCalls:
    """The denials of one run of the stack (thread-safe): empty when made, one entry per function,
    action and resource as they come."""

    def __init__(self, config_path: str | os.PathLike[str]) -> None:
        self.config_path = Path(config_path).resolve()
        self.path = path_for(self.config_path)
        self._header = {
            "config": str(self.config_path),
            "config_sha256": config_hash(self.config_path),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "pid": os.getpid(),
        }
        self._denied: dict[tuple[str, str, str], Denied] = {}
        self._lock = threading.Lock()
        self._write()

    def record(
        self, function: str, action: str, resource: str, resource_ref: str = "", trace_id: str = ""
    ) -> None:
        key = (function, action, resource)
        with self._lock:
            known = self._denied.get(key)
            calls = 1 if known is None else known.calls + 1
            first = trace_id if known is None else known.trace_id
            self._denied[key] = Denied(function, action, resource, resource_ref, calls, first)
            self._write()

    def _write(self) -> None:
        document = {**self._header, "denied": [vars(entry) for entry in self._denied.values()]}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(f".{FILE_NAME}.{os.getpid()}.tmp")
        partial.write_text(json.dumps(document, indent=1), encoding="utf-8")
        os.replace(partial, self.path)


@dataclass
class Recorded:
    """What a run recorded: its denials, whether its ``serverless.yml`` is the one read now, when it
    started, and what could not be read (``problem``)."""

    denied: list[Denied] = field(default_factory=list)
    current: bool = True
    started: str = ""
    problem: str = ""


def read(config_path: str | os.PathLike[str]) -> Recorded | None:
    """The denials recorded for the service at ``config_path``; None when no run recorded any file."""
    config = Path(config_path).resolve()
    path = path_for(config)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        return Recorded(
            problem=f"{path} cannot be read ({type(exc).__name__}): delete it, or run the stack again"
        )
    if not isinstance(document, dict):
        return Recorded(
            problem=f"{path} is not what lambda-kit local writes: delete it, or run the stack again"
        )
    entries = document.get("denied") if isinstance(document.get("denied"), list) else []
    return Recorded(
        denied=[found for found in map(_denied, entries) if found is not None],
        current=document.get("config_sha256") == config_hash(config),
        started=str(document.get("started") or ""),
    )


def _denied(entry: Any) -> Denied | None:
    if not isinstance(entry, dict):
        return None
    texts = {key: entry.get(key) for key in ("function", "action", "resource", "resource_ref", "trace_id")}
    if not all(isinstance(texts[key], str) and texts[key] for key in ("function", "action", "resource")):
        return None
    calls = entry.get("calls")
    return Denied(
        **{key: value if isinstance(value, str) else "" for key, value in texts.items()},
        calls=calls if isinstance(calls, int) and not isinstance(calls, bool) and calls > 0 else 1,
    )
