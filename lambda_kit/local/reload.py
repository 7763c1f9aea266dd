"""Reloading: a change to a function's files replaces its warm workers at its next invocation.

``Reloader`` watches the folders (and top-level files) the functions' task roots are copied from,
with watchfiles (inotify where the system has it), ignoring the stack's own ``.lambda-kit`` folder,
bytecode and editors' files. Each batch of changes goes to ``on_change`` with the changed paths
relative to the project (``/``-separated); the stack rebuilds the task roots holding one of them
and renews those functions' pools (``environments.WorkerPool.renew``): an invocation running now
finishes on its worker, the next one starts a fresh worker from the new task root. Nothing the
event sources hold is touched: queued messages and stream records are delivered to the new workers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from watchfiles import DefaultFilter, watch

DEBOUNCE_MS = 200
"""Changes within this many milliseconds are one batch (an editor's save writes several times)."""


class _Filter(DefaultFilter):
    ignore_dirs = (*DefaultFilter.ignore_dirs, ".lambda-kit", ".serverless")


class Reloader:
    def __init__(self, project: Path, watched: Iterable[Path], on_change: Callable[[set[str]], None]) -> None:
        self.project = project
        self.watched = sorted({path for path in watched if path.exists()})
        self._on_change = on_change
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lambda-kit reload", daemon=True)
        self.batches = 0

    def start(self) -> Reloader:
        if self.watched:
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5.0)

    def _run(self) -> None:
        changes: Any = watch(
            *self.watched,
            watch_filter=_Filter(),
            debounce=DEBOUNCE_MS,
            step=20,
            stop_event=self._stop,
            raise_interrupt=False,
            rust_timeout=500,
            yield_on_timeout=True,
        )
        for batch in changes:
            self._ready.set()
            paths = {self._relative(path) for _, path in batch}
            paths.discard("")
            if paths:
                self.batches += 1
                try:
                    self._on_change(paths)
                except Exception:  # a rebuild that failed (a file removed meanwhile): the next change retries
                    pass

    def _relative(self, path: str) -> str:
        try:
            return Path(path).resolve().relative_to(self.project.resolve()).as_posix()
        except ValueError:
            return ""

    def wait_ready(self, timeout: float = 5.0) -> bool:
        """Whether the watcher is running (its first timeout passed): changes from now on are seen."""
        return self._ready.wait(timeout)


def watched_paths(project: Path, files: Iterable[str]) -> set[Path]:
    """What to watch for ``files`` (relative to ``project``): their top-level folders, or the
    project's folder itself when one of them is a top-level file."""
    tops = {file.split("/", 1)[0] for file in files}
    if any("/" not in file for file in files):
        return {project}
    return {project / top for top in tops}
