"""One JSON-lines file for every function's log lines, exactly as the functions print them.

``LogFile`` is the sink given to ``lambda_kit.log.set_sink``: it is called from every poller and
gateway thread, so writes are serialized. It can echo a short form of each line to the terminal
and notify subscribers (a service's load can measure latency with one, or count ERROR lines).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from .terminal import printable

Subscriber = Callable[[dict[str, Any], float], None]

DEFAULT_PATH = Path(".lambda-kit") / "logs.jsonl"

ECHOED = {
    "trace_id": "trace",
    "record_id": "record",
    "outcome": "outcome",
    "status": "status",
    "duration_ms": "duration_ms",
    "error": "error",
}
"""The fields the short form shows after the message, each as ``name=value``."""


def _parsed(line: str) -> dict[str, Any]:
    """A written line as a dict (a line that is not a JSON object: its text as the message)."""
    try:
        parsed = json.loads(line)
    except (ValueError, RecursionError):
        return {"message": line.rstrip("\n")}
    return parsed if isinstance(parsed, dict) else {"message": parsed}


class LogFile:
    def __init__(
        self, path: str | Path | None = DEFAULT_PATH, echo: bool | TextIO = False, prefix: str = ""
    ) -> None:
        self.path = Path(path) if path is not None else None
        self._file: TextIO | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # line-buffered: `lambda-kit trace` in another terminal sees each line as it is written
            self._file = open(self.path, "w", encoding="utf-8", buffering=1)  # closed in close()
        self._echo: TextIO | None = (sys.stderr if echo is True else echo) or None
        self._prefix = prefix  # stripped from function names when echoing
        self._lock = threading.Lock()
        self._subscribers: list[Subscriber] = []
        self.count = 0

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback(line, wall_time)`` for every line; returns the unsubscribe function."""
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    def write(self, line: str) -> None:
        now = time.time()
        with self._lock:
            self.count += 1
            if self._file is not None:
                self._file.write(line if line.endswith("\n") else line + "\n")
            subscribers = list(self._subscribers)
        if not subscribers and self._echo is None:
            return
        parsed = _parsed(line)
        if self._echo is not None:
            self._echo_line(parsed)
        for subscriber in subscribers:
            try:
                subscriber(parsed, now)
            except Exception:  # a subscriber's bug must not break a function's logging
                pass

    __call__ = write

    def _echo_line(self, line: dict[str, Any]) -> None:
        """The line's short form on the terminal, its fields printable (``terminal.printable``)."""
        function = str(line.get("function_name") or "-").removeprefix(self._prefix)
        parts = [
            str(line.get("timestamp", ""))[11:23],
            f"{function:<12}",
            f"{line.get('level', ''):<7}",
            str(line.get("message", "")),
        ]
        parts += [f"{name}={line[key]}" for key, name in ECHOED.items() if line.get(key) not in (None, "")]
        with self._lock:
            try:
                self._echo.write(printable(" ".join(parts)) + "\n")  # type: ignore[union-attr]
                self._echo.flush()  # type: ignore[union-attr]
            except (OSError, ValueError):
                pass

    def flush(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.flush()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
