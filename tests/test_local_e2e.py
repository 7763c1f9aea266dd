"""End to end: ``lambda-kit run`` on the real view-stats service, and ``lambda-kit local`` serving
until interrupted — each in its own process, as a user runs them."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import pytest

from tests._local_process import start_local
from tests._local_toys import vendor_lambda_kit

ROOT = Path(__file__).resolve().parent.parent


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.mark.skipif(
    not (ROOT / "handlers" / "ingest.py").exists(), reason="the view-stats handlers are not there yet"
)
@pytest.mark.parametrize("dynamodb", ["DynamoDB Local", "moto's"])
def test_run_counts_every_unique_event_once(tmp_path, dynamodb):
    """On DynamoDB Local, and on moto's DynamoDB (what `make run` serves without npm or Java)."""
    logs = tmp_path / "logs.jsonl"
    command = [
        sys.executable,
        "-m",
        "lambda_kit.cli",
        "run",
        "--events",
        "60",
        "--articles",
        "6",
        "--logs",
        str(logs),
    ]
    env = _env()
    if dynamodb == "moto's":
        env["LAMBDA_KIT_DYNAMODB_LOCAL"] = "off"
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert f"  DynamoDB       {dynamodb}" in out
    assert "✓ counted == unique" in out
    assert "poison messages           2   ✓ 2 in views-dlq" in out
    assert "latency POST→counted" in out and "trace demo-7-" in out
    lines = [json.loads(line) for line in logs.read_text(encoding="utf-8").splitlines()]
    functions = {line["function_name"] for line in lines}
    assert {"view-stats-dev-ingest", "view-stats-dev-counter", "view-stats-dev-aggregator"} <= functions
    # The poison messages failed in the counter with their trace id, each in an ERROR line.
    assert {line["trace_id"] for line in lines if line["level"] == "ERROR"} >= {"poison-7-1", "poison-7-2"}


def test_make_run_needs_no_npm():
    """Without npm, `make run` does not install node_modules (the stack then serves moto's DynamoDB)."""
    make = shutil.which("make")
    if make is None:
        pytest.skip("needs make")
    # as if node_modules were out of date; run as from a terminal, not as make test's sub-make
    stale = [make, "--no-print-directory", "-n", "run", "-W", "package-lock.json"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE") and k != "MFLAGS"}
    with_npm = subprocess.run(stale, cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout
    assert "npm ci" in with_npm and "lambda-kit run" in with_npm
    env["PATH"] = "/nonexistent"  # no npm to be found
    without = subprocess.run(stale, cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout
    assert "npm" not in without and without.strip().endswith("lambda-kit run")


SERVICE = """
service: served
provider:
  name: aws
functions:
  echo:
    handler: served_echo.handler
    events:
      - httpApi: 'POST /echo'
"""

ECHO = """
from lambda_kit import api_handler

@api_handler
def handler(request, context):
    return {"echo": request.json}
"""


def test_local_serves_until_interrupted(tmp_path):
    (tmp_path / "serverless.yml").write_text(textwrap.dedent(SERVICE), encoding="utf-8")
    (tmp_path / "served_echo.py").write_text(textwrap.dedent(ECHO), encoding="utf-8")
    vendor_lambda_kit(tmp_path)  # the zip holds what the handler imports (the workers see no PYTHONPATH)
    env = _env()
    env["PYTHONPATH"] = str(ROOT)
    process, url = start_local(tmp_path, env)
    try:
        request = urllib.request.Request(
            url + "/echo", data=b'{"a": 1}', method="POST", headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert json.loads(response.read()) == {"echo": {"a": 1}}
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) in (0, 130)
        assert "request processed" in (tmp_path / ".lambda-kit" / "logs.jsonl").read_text(encoding="utf-8")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl_c", "sigterm"])
def test_local_restarts_at_once_on_the_port_it_just_served(tmp_path, stop):
    """The port it served is in TIME_WAIT for a minute after the server closed its connections;
    waitress binds it with SO_REUSEADDR, and so does the check that the port is free."""
    (tmp_path / "serverless.yml").write_text(textwrap.dedent(SERVICE), encoding="utf-8")
    (tmp_path / "served_echo.py").write_text(textwrap.dedent(ECHO), encoding="utf-8")
    vendor_lambda_kit(tmp_path)
    env = _env()
    env["PYTHONPATH"] = str(ROOT)
    process, url = start_local(tmp_path, env)
    port = int(url.rsplit(":", 1)[1])
    for attempt in range(2):
        try:
            request = urllib.request.Request(  # Connection: close: the server closes first (TIME_WAIT)
                url + "/echo", data=b'{"a": 1}', method="POST", headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                assert json.loads(response.read()) == {"echo": {"a": 1}}
            process.send_signal(stop)
            assert process.wait(timeout=30) in (0, 130, -stop, 128 + stop)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        if attempt == 0:  # at once, on the same port
            process, url = start_local(tmp_path, env, port=port)
            assert url.endswith(f":{port}")
