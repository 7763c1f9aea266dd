"""What the stack's child processes (moto's server, DynamoDB Local) have in common."""

from __future__ import annotations

import subprocess
from typing import Any


def wait_or_kill(process: subprocess.Popen[Any], timeout: float = 5.0) -> None:
    """Wait for ``process`` to exit (it was asked to); kill it if it has not within ``timeout`` seconds."""
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout)


def tail(output: str) -> str:
    """The last three lines of a child's output, on one line (for a one-line error)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return " | ".join(lines[-3:]) or "no output"
