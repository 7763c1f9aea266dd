"""`serverless package` of the example service (osls, offline, dummy credentials), once per test run.

Packaging runs as a new machine would run it: with an empty requirements cache (a fresh
XDG_CACHE_HOME: no static cache, no download cache) and no interpreter of the runtime's version on
PATH (only the Python the tests run with, as `python3`), so the Lambda-platform wheels must come
from pip's --platform/--python-version. Under pytest-xdist every worker that needs the template
takes an exclusive file lock, and the first one packages while the others wait and then reuse its
output (the run's PYTEST_XDIST_TESTRUNUID is stamped into .serverless/). The template is read into
memory under the lock, so a later packaging cannot change it under a test. The session fixture
``packaged`` (tests/conftest.py) serves it to tests/test_deploy.py and tests/test_soak.py.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from lambda_kit.serverless_config import load

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / ".serverless"
TEMPLATE = OUT / "cloudformation-template-update-stack.json"
ARTIFACT = OUT / "view-stats.zip"
STAMP = OUT / ".lambda-kit-package-run"
SERVICE, STAGE = "view-stats", "dev"
CONFIG = load(ROOT / "serverless.yml")
RUNTIME_VERSION = CONFIG["provider"]["runtime"].removeprefix("python")  # "3.12"


def runtime_python() -> str | None:
    """An interpreter of the runtime's version (pyenv's, or on PATH), for running an artifact."""
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates = sorted(
        glob.glob(
            os.path.join(pyenv_root, "versions", f"{RUNTIME_VERSION}*", "bin", f"python{RUNTIME_VERSION}")
        )
    )
    candidates.append(shutil.which(f"python{RUNTIME_VERSION}") or "")
    for candidate in filter(None, candidates):
        probe = subprocess.run(
            [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
        )
        if probe.returncode == 0 and probe.stdout.strip() == RUNTIME_VERSION:
            return candidate
    return None


def package_offline(directory: Path) -> subprocess.CompletedProcess[str]:
    """`serverless package` (osls) of the service in ``directory``, offline with dummy credentials."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        SLS_TELEMETRY_DISABLED="1", AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x", AWS_REGION="us-east-1"
    )
    return subprocess.run(
        [str(ROOT / "node_modules" / ".bin" / "serverless"), "package"],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _scratch(name: str) -> Path:
    """A directory of this checkout's own under the system temp dir, emptied."""
    path = (
        Path(tempfile.gettempdir()) / f"lambda-kit-{name}-{hashlib.sha1(str(ROOT).encode()).hexdigest()[:12]}"
    )
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def _package_env(cache: Path, bin_dir: Path) -> dict[str, str]:
    """The environment of a machine with no python<runtime version> and nothing cached."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PYENV_VERSION"))}
    (bin_dir / "python3").symlink_to(sys.executable)  # the only Python: the one running the tests
    kept = [
        d
        for d in env.get("PATH", "").split(os.pathsep)
        if d and not shutil.which(f"python{RUNTIME_VERSION}", path=d)
    ]
    env.update(
        PATH=os.pathsep.join([str(bin_dir), *kept]),
        XDG_CACHE_HOME=str(cache),
        SLS_TELEMETRY_DISABLED="1",
        AWS_ACCESS_KEY_ID="packaging-needs-no-credentials",
        AWS_SECRET_ACCESS_KEY="packaging-needs-no-credentials",
        AWS_REGION="us-east-1",
        AWS_DEFAULT_REGION="us-east-1",
    )
    return env


def _package() -> dict[str, Any]:
    serverless = ROOT / "node_modules" / ".bin" / "serverless"
    if not serverless.exists():
        pytest.fail("node_modules/.bin/serverless is missing: run `npm ci` (make test does)")
    cache = _scratch("cold-cache")
    env = _package_env(cache, _scratch("python-bin"))
    assert shutil.which(f"python{RUNTIME_VERSION}", path=env["PATH"]) is None
    result = subprocess.run(
        [str(serverless), "package", "--stage", STAGE, "--verbose"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode != 0:
        pytest.fail(
            f"serverless package failed ({result.returncode}):\n"
            f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        )
    return {"path": env["PATH"], "cache": str(cache), "output": result.stdout + result.stderr}


def _stamp() -> dict[str, Any]:
    """What the last packaging of this checkout recorded; {} when absent or written by an older test."""
    try:
        stamp = json.loads(STAMP.read_text())
    except (OSError, ValueError):
        return {}
    return stamp if isinstance(stamp, dict) else {}


def packaged(copy_dir: Path) -> dict[str, Any]:
    """Package once per run; returns the template, private copies of it and of the artifact (in
    ``copy_dir``), and how the packaging ran (its PATH, its cache directory, its output)."""
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    lock_name = "lambda-kit-package-" + hashlib.sha1(str(ROOT).encode()).hexdigest()[:12] + ".lock"
    with open(os.path.join(tempfile.gettempdir(), lock_name), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            stamp = _stamp() if run_id is not None else {}
            if stamp.get("run") != run_id or run_id is None or not TEMPLATE.exists():
                stamp = {"run": run_id, **_package()}
                STAMP.write_text(json.dumps(stamp))
            shutil.copy(TEMPLATE, copy_dir / TEMPLATE.name)
            shutil.copy(ARTIFACT, copy_dir / ARTIFACT.name)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    template_path = copy_dir / TEMPLATE.name
    return {
        "template": json.loads(template_path.read_text()),
        "template_path": template_path,
        "artifact": copy_dir / ARTIFACT.name,
        "run": stamp,
    }


def package_service(directory: Path) -> dict[str, Any]:
    """`serverless package --stage dev` (osls, offline, dummy credentials) of the small service in
    ``directory``: the CloudFormation template it makes."""
    serverless = ROOT / "node_modules" / ".bin" / "serverless"
    env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    env.update(
        SLS_TELEMETRY_DISABLED="1",
        AWS_ACCESS_KEY_ID="offline",
        AWS_SECRET_ACCESS_KEY="offline",
        AWS_REGION="us-east-1",
    )
    done = subprocess.run(
        [str(serverless), "package", "--stage", "dev"],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    template: dict[str, Any] = json.loads(
        (directory / ".serverless" / "cloudformation-template-update-stack.json").read_text()
    )
    return template
