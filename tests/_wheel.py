"""lambda_kit's wheel, built as `make dist` builds it, and fresh venvs outside the repository to
install it in, as a user's machine would have them.

Each costs seconds to a minute, so it is made once per test run and shared by the pytest-xdist
workers: ``once_per_run(name, set_up)`` runs ``set_up`` in its own temp directory under a file
lock, the first worker to come makes it, the others wait and reuse it (the run's
PYTEST_XDIST_TESTRUNUID is stamped beside it). tests/test_wheel.py installs the wheel alone;
tests/test_scaffold.py makes a service with ``lambda-kit new`` from it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTION = "lambda-event-kit"
KEY = hashlib.sha1(str(ROOT).encode()).hexdigest()[:12]
"""This checkout's: two checkouts testing at once never share a directory."""


def run(
    command: list[str], cwd: Path, env: dict[str, str], timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def clean_env() -> dict[str, str]:
    """The environment of a shell outside this repo: no venv, no PYTHONPATH, no test settings."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYTEST_", "LAMBDA_KIT_", "AWS_", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(d for d in env.get("PATH", "").split(os.pathsep) if d != venv_bin)
    return env


def documented(prefix: str) -> list[str]:
    """The command of docs/install.md that starts with ``prefix``, as a user would type it."""
    for line in (ROOT / "docs" / "install.md").read_text().splitlines():
        if line.startswith(prefix):
            return shlex.split(line, comments=True)
    raise AssertionError(f"docs/install.md no longer says {prefix!r}...: update this test with it")


def pip(python: Path | str, argv: list[str]) -> list[str]:
    """``pip install ...`` run by the venv's Python, any DeprecationWarning an error."""
    assert argv[:2] == ["pip", "install"], argv
    return [str(python), "-W", "error::DeprecationWarning", "-m", *argv]


def checked(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, f"{result.args}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def once_per_run(name: str, set_up: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
    """``set_up(directory)``'s result, made once per test run in an emptied temp directory of this
    checkout's (``lambda-kit-NAME-KEY``) and shared by every worker."""
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID", f"pid-{os.getpid()}")
    base = Path(tempfile.gettempdir()) / f"lambda-kit-{name}-{KEY}"
    stamp = base / "ready.json"
    with open(Path(tempfile.gettempdir()) / f"lambda-kit-{name}-{KEY}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            ready = json.loads(stamp.read_text()) if stamp.exists() else {}
            if ready.get("run") != run_id:
                shutil.rmtree(base, ignore_errors=True)
                base.mkdir(parents=True)
                ready = {"run": run_id, **set_up(base)}
                stamp.write_text(json.dumps(ready))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return ready


def _build(base: Path) -> dict[str, Any]:
    # as `make dist` does: the sdist, then the wheel from the unpacked sdist (never from a stale build/)
    build = run([sys.executable, "-m", "build", "--outdir", str(base), str(ROOT)], ROOT, clean_env())
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    [wheel] = base.glob("*.whl")
    return {"wheel": str(wheel), "output": build.stdout + build.stderr}


def built_wheel() -> dict[str, Any]:
    """``{"wheel": its path, "output": what the build printed}``, built once per run."""
    return once_per_run("wheel", _build)


def fresh_venv(path: Path, upgrade_pip: bool) -> Path:
    """A new venv at ``path`` from the Python running the tests; its python. ``upgrade_pip``: the
    current pip, as `make` installs it (a venv's bundled one can be old enough to warn about itself)."""
    checked(run([sys.executable, "-m", "venv", str(path)], path.parent, clean_env()))
    python = path / "bin" / "python"
    if upgrade_pip:
        checked(run([str(python), "-m", "pip", "install", "--upgrade", "pip"], path.parent, clean_env()))
    return python
