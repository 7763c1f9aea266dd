"""The ``lambda-kit`` command on hostile input: special files (a FIFO, ``/dev/zero``, a directory),
files it may not read, YAML bombs and deep nesting, a serverless.yml without ``service``. Each is
answered in one line, never with "internal error" or a hang: a special file is refused before a
byte is read, a YAML document is measured while it is composed."""

from __future__ import annotations

import io
import json
import os
import re
import threading

import pytest

from lambda_kit.cli import main
from lambda_kit.local.logfile import LogFile

# 687 bytes: nine levels of nine aliases stand for 9**9 (387 million) strings.
ALIAS_BOMB = (
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    + "".join(
        f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]\n"
        for previous, name in zip("abcdefgh", "bcdefghi", strict=True)
    )
    + "service: bomb\nfunctions:\n  f:\n    handler: m.handler\n    environment:\n      BOMB: ${self:i}\n"
)

SERVICE = "service: hostile\nprovider:\n  name: aws\nfunctions:\n  f:\n    handler: m.handler\n"


HANG = 30.0
"""Seconds after which a command that has not answered is taken to hang (each answers at once; the
tests assert no wall-clock speed, which a shared machine cannot promise)."""


def answer(argv: list[str], capsys) -> tuple[int, str]:
    """Run ``lambda-kit argv``; (exit status, its one stderr line). The command runs in a thread, so
    one that hangs (a FIFO opened for reading waits for a writer) fails the test instead of blocking it."""
    done: list[int] = []
    runner = threading.Thread(target=lambda: done.append(_status(argv)), daemon=True)
    runner.start()
    runner.join(HANG)
    assert done, f"lambda-kit {' '.join(argv)} still running after {HANG:.0f} s"
    captured = capsys.readouterr()
    [line] = captured.err.splitlines()
    assert "internal error" not in line and "Traceback" not in captured.err + captured.out
    return done[0], line


def _status(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exit_:  # a bad command line: argparse's exit
        return int(exit_.code or 0)


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "serverless.yml"
    os.mkfifo(path)
    return str(path)


@pytest.fixture
def logs(tmp_path):
    path = tmp_path / "logs.jsonl"
    path.write_text(
        '{"timestamp": "2024-05-01T10:00:00Z", "level": "INFO", "message": "m", "trace_id": "T-1"}\n'
    )
    return str(path)


# --- special files ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [["check"], ["check", "-c"], ["invoke", "f", "--event", "sqs", "-c"], ["local", "-c"], ["run", "-c"]],
)
def test_a_fifo_as_serverless_yml_is_refused_before_reading(fifo, command, capsys):
    argv = [*command, fifo] if command != ["check"] else ["check", fifo]
    status, line = answer(argv, capsys)
    assert status == 2
    assert f"{fifo} is a FIFO (named pipe), not a file" in line


@pytest.mark.parametrize(("path", "kind"), [("/dev/zero", "a character device"), ("/", "a directory")])
def test_a_device_or_a_directory_as_serverless_yml_is_refused(path, kind, capsys):
    status, line = answer(["check", path], capsys)
    assert (status, line) == (
        2,
        f"error: {path} is {kind}, not a file: "
        "run in the service directory or pass the path to serverless.yml",
    )
    status, line = answer(["invoke", "f", "--event", "sqs", "-c", path], capsys)
    assert status == 2 and f"{path} is {kind}, not a file" in line


def test_trace_refuses_a_fifo_or_a_device_as_its_log_file(tmp_path, capsys):
    fifo = tmp_path / "logs.fifo"
    os.mkfifo(fifo)
    status, line = answer(["trace", "T-1", "--logs", str(fifo)], capsys)
    assert status == 2 and line.startswith(f"lambda-kit trace: argument --logs: {fifo} is a FIFO or a socket")
    status, line = answer(["trace", "T-1", "--logs", "/dev/zero"], capsys)
    assert (status, line) == (
        2,
        "lambda-kit trace: /dev/zero is a character device, not a file: "
        "run `lambda-kit run` or `lambda-kit local` first, or pass --logs FILE",
    )


def test_trace_with_a_fifo_for_serverless_yml_still_reads_the_log(fifo, logs, capsys):
    """The service only shortens function names in a trace: a FIFO in its place is skipped, not waited on."""
    done: list[int] = []
    runner = threading.Thread(
        target=lambda: done.append(main(["trace", "T-1", "--logs", logs, "-c", fifo])), daemon=True
    )
    runner.start()
    runner.join(HANG)
    assert done == [0]
    assert "1 log lines" in capsys.readouterr().out


def test_invoke_refuses_a_fifo_or_a_device_as_its_payload_file(tmp_path, capsys):
    config = tmp_path / "serverless.yml"
    config.write_text(SERVICE)
    fifo = tmp_path / "payload.json"
    os.mkfifo(fifo)
    status, line = answer(["invoke", "f", "--event", "sqs", "--file", str(fifo), "-c", str(config)], capsys)
    assert status == 2 and line.startswith(
        f"lambda-kit invoke: --file {fifo} is a FIFO (named pipe), not a file"
    )
    status, line = answer(["invoke", "f", "--event", "sqs", "--file", "/dev/zero", "-c", str(config)], capsys)
    assert status == 2 and line.startswith(
        "lambda-kit invoke: --file /dev/zero is a character device, not a file"
    )


@pytest.mark.parametrize("log_option", [["local"], ["soak"]])
def test_a_fifo_as_the_log_file_to_write_is_refused(tmp_path, log_option, capsys):
    fifo = tmp_path / "logs.fifo"
    os.mkfifo(fifo)
    with pytest.raises(SystemExit) as exit_:
        main([*log_option, "--logs", str(fifo)])
    assert exit_.value.code == 2
    assert f"argument --logs: {fifo} is a FIFO or a socket, which would block" in capsys.readouterr().err


# --- files it may not read: the OS error, named ------------------------------------------------------


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_an_unreadable_file_is_named_with_the_os_error(tmp_path, logs, capsys):
    config = tmp_path / "serverless.yml"
    config.write_text(SERVICE)
    config.chmod(0)
    os.chmod(logs, 0)
    assert answer(["check", str(config)], capsys) == (2, f"error: cannot read {config}: Permission denied")
    assert answer(["trace", "T-1", "--logs", logs], capsys) == (
        2,
        f"lambda-kit trace: cannot read {logs}: Permission denied",
    )


@pytest.mark.parametrize(
    ("name", "reason"), [("a-file/serverless.yml", "Not a directory"), ("x" * 300, "File name too long")]
)
def test_an_os_error_is_named_never_an_internal_error(tmp_path, name, reason, capsys):
    (tmp_path / "a-file").write_text("")
    path = tmp_path / name
    assert answer(["check", str(path)], capsys) == (2, f"error: cannot read {path}: {reason}")
    assert answer(["trace", "T-1", "--logs", str(path)], capsys) == (
        2,
        f"lambda-kit trace: cannot read {path}: {reason}",
    )
    status, line = answer(["invoke", "f", "--event", "sqs", "-c", str(path)], capsys)
    assert (status, line) == (2, f"lambda-kit invoke: cannot read {path}: {reason}")


# --- YAML limits -------------------------------------------------------------------------------------


def test_the_alias_bomb_is_refused_by_check_and_invoke(tmp_path, capsys):
    path = tmp_path / "serverless.yml"
    path.write_text(ALIAS_BOMB)
    assert len(ALIAS_BOMB.encode()) < 800
    expected = (
        f"{path} is not valid YAML: more than 250,000 values once its aliases are expanded "
        "at line 6, column 17"
    )
    assert answer(["check", str(path)], capsys) == (2, f"error: {expected}")
    assert answer(["invoke", "f", "--event", "sqs", "-c", str(path)], capsys) == (
        2,
        f"lambda-kit invoke: {expected}",
    )


def test_aliases_a_service_shares_settings_with_still_load(tmp_path, capsys):
    path = tmp_path / "serverless.yml"
    path.write_text(
        "service: shared\n"
        "x-settings: &settings {batchSize: 5, functionResponseType: ReportBatchItemFailures}\n"
        "functions:\n  f:\n    handler: m.handler\n    events:\n"
        + "".join(f"      - sqs: {{arn: 'arn:aws:sqs:us-east-1:1:q{n}', <<: *settings}}\n" for n in range(20))
    )
    assert main(["check", str(path)]) == 1  # the handler module is missing: a finding, not a YAML error
    out = capsys.readouterr().out
    assert "handler 'm.handler' names m.py, which does not exist" in out and "20 warning" not in out


@pytest.mark.parametrize(
    "text",
    [
        "service: deep\nfunctions: " + "[" * 5000 + "]" * 5000 + "\n",
        "service: deep\nfunctions: " + "{a: " * 150 + "1" + "}" * 150 + "\n",
    ],
)
def test_deeply_nested_yaml_is_refused(tmp_path, text, capsys):
    path = tmp_path / "serverless.yml"
    path.write_text(text)
    status, line = answer(["check", str(path)], capsys)
    assert status == 2 and line.startswith(f"error: {path} is not valid YAML: ")
    # lambda_kit's limit, or libyaml's own at 1,000 levels where its parser reads ahead that far
    assert re.search(
        r"(nested deeper than 100 levels|exceeded maximum nesting depth) at line 2, column \d+$", line
    ), line


def test_a_recursive_alias_is_refused(tmp_path, capsys):
    path = tmp_path / "serverless.yml"
    path.write_text("service: loop\nfunctions: &f [*f]\n")
    assert answer(["check", str(path)], capsys) == (
        2,
        f"error: {path} is not valid YAML: an alias refers to the value that holds it at line 2, column 16",
    )


def test_a_serverless_yml_over_a_megabyte_is_refused_unread(tmp_path, capsys):
    path = tmp_path / "serverless.yml"
    path.write_text(SERVICE + "# " + "x" * 1_000_000 + "\n")
    assert answer(["check", str(path)], capsys) == (
        2,
        f"error: {path} is larger than 1,000,000 bytes, more than lambda-kit reads: pass a smaller file",
    )


def test_a_file_that_is_not_utf8_is_one_line(tmp_path, capsys):
    path = tmp_path / "serverless.yml"
    path.write_bytes(b"service: \xff\xfe\n")
    status, line = answer(["check", str(path)], capsys)
    assert status == 2 and line.startswith(f"error: {path} is not UTF-8 text (byte 9)")


# --- what check needs ---------------------------------------------------------------------------------


def test_check_fails_on_a_file_without_service(tmp_path, capsys):
    path = tmp_path / "serverless.yml"
    path.write_text(SERVICE.replace("service: hostile\n", ""))
    assert answer(["check", str(path)], capsys) == (
        2,
        f"error: {path} names no service: add service: <name> (the framework requires it)",
    )
    path.write_text(SERVICE.replace("service: hostile", "service: {name: ''}"))
    assert answer(["check", str(path)], capsys)[0] == 2


def test_a_payload_nested_too_deeply_is_one_line(tmp_path, capsys):
    config = tmp_path / "serverless.yml"
    config.write_text(SERVICE)
    status, line = answer(
        ["invoke", "f", "--event", "sqs", "--body", "[" * 100_000, "-c", str(config)], capsys
    )
    assert (status, line) == (2, "lambda-kit invoke: --body is nested too deeply to be a payload")


# --- `lambda-kit local --echo`: a log line's fields cannot drive the terminal -----------------------

HOSTILE_TEXT = "a\x1b]0;owned\x07b\x1b[2Jc\x9bd\re\nf\u2028g"


def test_the_echoed_short_form_escapes_every_control_character():
    """ESC, BEL, a C1 CSI, CR, LF and a line separator in the message and in echoed fields: each
    echoed line stays one printable line on the terminal (nothing retitles or clears it, nothing
    forges a second row)."""
    echoed = io.StringIO()
    logs = LogFile(path=None, echo=echoed)
    line = {
        "timestamp": "2026-11-27T01:02:03.456Z",
        "level": "INFO",
        "function_name": "svc-dev-" + HOSTILE_TEXT,
        "message": HOSTILE_TEXT,
        "trace_id": HOSTILE_TEXT,
        "error": HOSTILE_TEXT,
    }
    logs.write(json.dumps(line))
    logs.write(HOSTILE_TEXT)  # not JSON: echoed as its text, escaped too
    text = echoed.getvalue()
    rows = text.split("\n")
    assert len(rows) == 3 and rows[2] == ""  # two lines, each ended by the one newline echo writes
    assert not [char for char in text if char != "\n" and not char.isprintable()]
    assert "trace=" in rows[0] and "error=" in rows[0] and "owned" in rows[0]  # shown, escaped
