"""One JSON-lines file for every function's log lines, exactly as the functions print them, a file
per run.

``LogFile`` is the sink given to ``lambda_kit.log.set_sink``: it is called from every poller and
gateway thread, so writes are serialized. It can echo a short form of each line to the terminal
and notify subscribers (a service's load can measure latency with one, or count ERROR lines).

Each run writes a file of its own beside the path it is given, and the path becomes a link to it:
``.lambda-kit/logs.jsonl`` names the current run's ``.lambda-kit/logs/<UTC time>-<pid>.jsonl``
(``run_files``: the runs, newest first; the ``RUNS_KEPT`` newest are kept). A restart loses no
earlier run, and two stacks running at once never write one file. A regular file already at the
path (an earlier lambda_kit's) is moved in among the runs.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from .terminal import printable

Subscriber = Callable[[dict[str, Any], float], None]

DEFAULT_PATH = Path(".lambda-kit") / "logs.jsonl"
RUNS_KEPT = 20
"""How many runs' files are kept beside a log path: the oldest beyond are deleted when a run starts."""

ECHOED = {
    "trace_id": "trace",
    "record_id": "record",
    "outcome": "outcome",
    "status": "status",
    "duration_ms": "duration_ms",
    "error": "error",
}
"""The fields the short form shows after the message, each as ``name=value``."""


def run_directory(path: Path) -> Path:
    """Where the runs of the log path ``path`` are kept: ``logs.jsonl`` -> ``logs/``."""
    return path.parent / (path.stem if path.suffix else f"{path.name}.runs")


def _stamp(seconds: float) -> str:
    """A run's file name's time: sortable as text (UTC, to the microsecond)."""
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(seconds)) + f".{int(seconds % 1 * 1e6):06d}Z"


def start_run(path: Path) -> Path:
    """A new, empty file for this run among the runs of ``path``, and ``path`` made a link to it."""
    runs = run_directory(path)
    runs.mkdir(parents=True, exist_ok=True)
    if path.is_file() and not path.is_symlink():  # an earlier lambda_kit's log: one run more
        os.replace(path, runs / f"{_stamp(path.stat().st_mtime)}-0.jsonl")
    run = runs / f"{_stamp(time.time())}-{os.getpid()}.jsonl"
    run.touch(exist_ok=False)
    link = path.with_name(f".{path.name}.{os.getpid()}.link")
    link.unlink(missing_ok=True)
    link.symlink_to(run.relative_to(path.parent))
    os.replace(link, path)
    for old in run_files(path)[RUNS_KEPT:]:
        old.unlink(missing_ok=True)
    return run


def run_files(path: str | Path) -> list[Path]:
    """The log files of ``path``'s runs, newest first; ``[path]`` itself when it has none (a file
    of its own, or none yet)."""
    path = Path(path)
    runs = run_directory(path)
    try:
        found = sorted(runs.glob("*.jsonl"), reverse=True) if runs.is_dir() else []
    except OSError:  # a name too long, a file where a folder would be: reading ``path`` says what
        found = []
    return found or [path]


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
        self.run_path: Path | None = None  # this run's file, which ``path`` links to
        self._file: TextIO | None = None
        if self.path is not None:
            self.run_path = start_run(self.path)
            # line-buffered: `lambda-kit trace` in another terminal sees each line as it is written
            self._file = open(self.run_path, "a", encoding="utf-8", buffering=1)  # closed in close()
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
