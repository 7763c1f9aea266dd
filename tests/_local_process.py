"""``lambda-kit local`` started in its own process, as a user runs it."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path


def start_local(
    cwd: Path, env: dict[str, str], *options: str, python: str = sys.executable, port: int = 0
) -> tuple[subprocess.Popen[str], str]:
    """``lambda-kit local --port PORT`` (0: any free port) in its own process (run by ``python``:
    this venv's unless given), once it serves: (the process, its HTTP API URL)."""
    process = subprocess.Popen(
        [python, "-m", "lambda_kit.cli", "local", "--port", str(port), *options],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,  # one pipe, drained below
    )
    url = ""
    shown: list[str] = []
    deadline = time.monotonic() + 120
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        shown.append(line)
        if line.strip().startswith("HTTP API"):
            url = line.split()[2]
        if "serving until Ctrl-C" in line:
            break
    if not url:
        process.kill()
        raise AssertionError("lambda-kit local did not start:\n" + "".join(shown[-30:]))
    threading.Thread(target=process.stdout.read, daemon=True).start()  # keep its output pipe drained
    return process, url
