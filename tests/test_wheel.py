"""lambda_kit in someone else's project: the wheel, installed alone in a fresh venv outside the repo.

Once per run (shared by the xdist workers under a file lock): build the sdist and the wheel as
`make dist` does, create a venv in a temp directory, install the wheel there without any extra (pip's own
cache is reused), and lay out a user project beside it: its own `handlers/` package with one
function per decorator, its own pytest file using `lambda_kit.testing`, a serverless.yml. Then
the project's tests run in that venv, and every CLI command runs on the base install: it works,
or it names the extra to install in one line.

To cover a new decorator, add one `UserFunction` to USER_FUNCTIONS.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTION = "lambda-event-kit"
LOCAL_HINT = f"pip install '{DISTRIBUTION}[local]'"


@dataclass(frozen=True)
class UserFunction:
    """One function of the user's project (in handlers/functions.py) and its test."""

    name: str
    decorator: str
    source: str  # the decorated function
    test: str  # a pytest test of it; `functions`, `testing`, `json` and `pytest` are imported
    event: str  # its entry under `events:` in serverless.yml, on one line


USER_FUNCTIONS = [
    UserFunction(
        "take_order",
        "sqs_handler",
        """
        @sqs_handler
        def take_order(order, context):
            if order.get("quantity", 0) < 1:
                raise ValueError("quantity must be at least 1")
            return {"ordered": order["quantity"]}
        """,
        """
        def test_take_order_reports_only_the_bad_message():
            event = testing.sqs_event({"quantity": 2}, {"quantity": 0})
            result = functions.take_order(event, testing.lambda_context())
            assert result == {"batchItemFailures": [{"itemIdentifier": event["Records"][1]["messageId"]}]}
        """,
        "sqs: {arn: 'arn:aws:sqs:us-east-1:123456789012:orders', functionResponseType: ReportBatchItemFailures}",
    ),
    UserFunction(
        "notice",
        "sns_handler",
        """
        NOTICES = []

        @sns_handler
        def notice(message, context):
            if "text" not in message:
                raise KeyError("text")
            NOTICES.append(message["text"])
        """,
        """
        def test_notice_records_the_message_and_raises_on_a_bad_one():
            functions.notice(testing.sns_event({"text": "shipped"}), testing.lambda_context())
            assert functions.NOTICES == ["shipped"]
            with pytest.raises(Exception):
                functions.notice(testing.sns_event({"nope": 1}), testing.lambda_context())
        """,
        "sns: notices",
    ),
    UserFunction(
        "click",
        "stream_handler",
        """
        @stream_handler
        def click(event, context):
            if "page" not in event:
                raise KeyError("page")
            return event["page"]
        """,
        """
        def test_click_reports_the_record_without_a_page():
            event = testing.kinesis_event({"page": "/a"}, {"other": 1})
            result = functions.click(event, testing.lambda_context())
            assert result == {"batchItemFailures": [{"itemIdentifier": event["Records"][1]["kinesis"]["sequenceNumber"]}]}
        """,
        "stream: {type: kinesis, arn: 'arn:aws:kinesis:us-east-1:123456789012:stream/clicks', functionResponseType: ReportBatchItemFailures}",
    ),
    UserFunction(
        "get_order",
        "api_handler",
        """
        @api_handler
        def get_order(request, context):
            return {"statusCode": 200, "body": {"order": request.query.get("id")}}
        """,
        """
        def test_get_order_answers_with_the_query():
            event = testing.api_event("GET", "/orders", query={"id": "7"})
            response = functions.get_order(event, testing.lambda_context())
            assert response["statusCode"] == 200
            assert json.loads(response["body"]) == {"order": "7"}
        """,
        "httpApi: 'GET /orders'",
    ),
]


def _functions_module() -> str:
    decorators = ", ".join(sorted(f.decorator for f in USER_FUNCTIONS))
    body = "\n\n".join(textwrap.dedent(f.source).strip() for f in USER_FUNCTIONS)
    return f"from lambda_kit import {decorators}\n\n\n{body}\n"


def _test_module() -> str:
    body = "\n\n".join(textwrap.dedent(f.test).strip() for f in USER_FUNCTIONS)
    return f"import json\n\nimport pytest\n\nfrom handlers import functions\nfrom lambda_kit import testing\n\n\n{body}\n"


def _serverless_yml() -> str:
    lines = ["service: user-project", "provider:", "  name: aws", "  runtime: python3.12", "functions:"]
    for f in USER_FUNCTIONS:
        lines += [f"  {f.name}:", f"    handler: handlers/functions.{f.name}", "    events:", f"      - {f.event}"]
    return "\n".join(lines) + "\n"


def _run(command: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _clean_env() -> dict[str, str]:
    """The environment of a shell outside this repo: no venv, no PYTHONPATH, no test settings."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYTEST_", "LAMBDA_KIT_", "AWS_", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(d for d in env.get("PATH", "").split(os.pathsep) if d != venv_bin)
    return env


def _set_up(base: Path) -> dict[str, Any]:
    env = _clean_env()
    dist = base / "dist"
    # as `make dist` does: the sdist, then the wheel from the unpacked sdist (never from a stale build/)
    build = _run([sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)], ROOT, env)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    [wheel] = dist.glob("*.whl")
    venv = base / "venv"
    created = _run([sys.executable, "-m", "venv", str(venv)], base, env)
    assert created.returncode == 0, created.stderr
    python = venv / "bin" / "python"
    install = _run([str(python), "-m", "pip", "install", str(wheel)], base, env)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    # the user's own test runner, as their project would have it (not lambda_kit's dev extra)
    runner = _run([str(python), "-m", "pip", "install", "pytest"], base, env)
    assert runner.returncode == 0, runner.stdout[-3000:] + runner.stderr[-3000:]
    project = base / "project"
    (project / "handlers").mkdir(parents=True)
    (project / "handlers" / "__init__.py").write_text('"""The user\'s own handlers package."""\n')
    (project / "handlers" / "functions.py").write_text(_functions_module())
    (project / "tests").mkdir()
    (project / "tests" / "test_functions.py").write_text(_test_module())
    (project / "serverless.yml").write_text(_serverless_yml())
    return {
        "wheel": str(wheel),
        "python": str(python),
        "bin": str(venv / "bin"),
        "project": str(project),
        "build_output": build.stdout + build.stderr,
        "install_output": install.stdout + install.stderr,
    }


@pytest.fixture(scope="session")
def installed() -> dict[str, Any]:
    """The wheel built and installed in a fresh venv outside the repo, once per run."""
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID", f"pid-{os.getpid()}")
    key = hashlib.sha1(str(ROOT).encode()).hexdigest()[:12]
    base = Path(tempfile.gettempdir()) / f"lambda-kit-user-project-{key}"
    stamp = base / "ready.json"
    with open(Path(tempfile.gettempdir()) / f"lambda-kit-user-project-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            ready = json.loads(stamp.read_text()) if stamp.exists() else {}
            if ready.get("run") != run_id:
                shutil.rmtree(base, ignore_errors=True)
                base.mkdir(parents=True)
                ready = {"run": run_id, **_set_up(base)}
                stamp.write_text(json.dumps(ready))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    ready["env"] = _clean_env()
    return ready


# --- the wheel --------------------------------------------------------------------------------------


def test_the_wheel_holds_lambda_kit_and_py_typed_only(installed):
    names = zipfile.ZipFile(installed["wheel"]).namelist()
    metadata = [n for n in names if ".dist-info/" in n]
    assert {n.split("/", 1)[0] for n in names if n not in metadata} == {"lambda_kit"}
    assert "lambda_kit/py.typed" in names
    assert "lambda_kit/sources/sqs.py" in names and "lambda_kit/counters/counter.py" in names
    assert {n.split("/", 1)[0] for n in metadata} == {"lambda_event_kit-0.1.0.dist-info"}


def test_the_base_install_has_no_dependency_and_names_its_extras(installed):
    names = zipfile.ZipFile(installed["wheel"]).namelist()
    [meta] = [n for n in names if n.endswith(".dist-info/METADATA")]
    lines = zipfile.ZipFile(installed["wheel"]).read(meta).decode().splitlines()
    assert f"Name: {DISTRIBUTION}" in lines
    assert "License-Expression: MIT" in lines
    requires = [line.removeprefix("Requires-Dist: ") for line in lines if line.startswith("Requires-Dist: ")]
    assert requires and all("extra ==" in r for r in requires), requires  # nothing unconditional
    extras = {line.removeprefix("Provides-Extra: ") for line in lines if line.startswith("Provides-Extra: ")}
    assert {"fast", "powertools", "datadog", "local", "all", "dev"} <= extras
    assert any(r.startswith("moto[server]") and "<5.3" in r for r in requires)  # pinned to the tested range


def test_build_and_install_print_no_deprecation_warning(installed):
    for step in ("build_output", "install_output"):
        assert "deprecat" not in installed[step].lower(), installed[step]


# --- the user's project -----------------------------------------------------------------------------


def test_the_users_project_passes_its_tests_in_the_venv(installed):
    result = _run([installed["python"], "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], Path(installed["project"]), installed["env"])
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert f"{len(USER_FUNCTIONS)} passed" in result.stdout


def test_lambda_kit_comes_from_the_venv_and_leaves_the_users_handlers_alone(installed):
    probe = textwrap.dedent(
        """
        import json, sys
        import lambda_kit
        from lambda_kit import api_handler, sns_handler, sqs_handler, stream_handler, testing
        import lambda_kit.counters
        before = "handlers" in sys.modules
        import handlers.functions
        print(json.dumps({"lambda_kit": lambda_kit.__file__, "handlers_before": before,
                          "handlers": handlers.__file__, "prefix": sys.prefix}))
        """
    )
    result = _run([installed["python"], "-c", probe], Path(installed["project"]), installed["env"])
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["lambda_kit"].startswith(found["prefix"])  # the installed wheel, not the repo
    assert found["handlers_before"] is False  # lambda_kit never imports handlers
    assert found["handlers"] == str(Path(installed["project"]) / "handlers" / "__init__.py")
    # and the venv has no `handlers` of its own to offer anyone
    elsewhere = _run([installed["python"], "-c", "import importlib.util; print(importlib.util.find_spec('handlers'))"], Path(installed["bin"]), installed["env"])
    assert elsewhere.stdout.strip() == "None"


# --- every CLI command on the base install ----------------------------------------------------------

LOG_LINE = {"timestamp": "2024-05-01T10:00:00.000Z", "level": "INFO", "message": "record received", "function_name": "user-project-dev-take_order", "trace_id": "T-user"}

COMMANDS = [
    # (argv, works on the base install)
    (["trace", "T-user", "--logs", "logs.jsonl"], True),
    (["trace", "T-user", "--aws"], False),
    (["check"], False),
    (["check", "-c", "serverless.yml"], False),
    (["invoke", "take_order", "--event", "sqs", "--body", "{}"], False),
    (["local", "--port", "0"], False),
    (["run"], False),
    (["soak", "--events", "10"], False),
]


@pytest.mark.parametrize("argv, works", COMMANDS, ids=[" ".join(argv) for argv, _ in COMMANDS])
def test_each_cli_command_works_or_names_its_extra(installed, argv, works):
    project = Path(installed["project"])
    (project / "logs.jsonl").write_text(json.dumps(LOG_LINE) + "\n")
    result = _run([str(Path(installed["bin"]) / "lambda-kit"), *argv], project, installed["env"], timeout=120)
    assert "Traceback" not in result.stdout + result.stderr
    if works:
        assert (result.returncode, result.stderr) == (0, ""), result.stderr
        assert "trace T-user — 1 log lines" in result.stdout and "record received" in result.stdout
    else:
        assert result.returncode == 2
        [line] = result.stderr.splitlines()
        assert line.startswith(f"lambda-kit {argv[0]}: ") and line.endswith(LOCAL_HINT), line


@pytest.mark.parametrize("command", sorted({argv[0] for argv, _ in COMMANDS}))
def test_each_cli_command_has_help_on_the_base_install(installed, command):
    result = _run([str(Path(installed["bin"]) / "lambda-kit"), command, "--help"], Path(installed["project"]), installed["env"])
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.startswith(f"usage: lambda-kit {command}")
