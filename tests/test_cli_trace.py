"""``lambda-kit trace`` on hostile log lines (control characters in any field cannot reach the
terminal, forge a row or retitle it) and on batches (each line's record id; the batch's commit as
a row of its own, with its duration)."""

from __future__ import annotations

import json
import re

import pytest

from lambda_kit.cli import main

CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
"""Every control character but the newline ending each printed row."""

FORGED = "\x1b]0;pwned\x07\r\n     +0 ms  forged    INFO    a row no function wrote\x1b[2J\x9b31m\x7f\u202e"


def write_lines(tmp_path, lines: list[dict]) -> str:
    path = tmp_path / "logs.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return str(path)


def trace(tmp_path, trace_id: str, lines: list[dict], capsys) -> tuple[int, str]:
    status = main(
        ["trace", trace_id, "--logs", write_lines(tmp_path, lines), "-c", str(tmp_path / "none.yml")]
    )
    captured = capsys.readouterr()
    assert captured.err == ""
    return status, captured.out


def rows(out: str) -> list[str]:
    return [row for row in out.splitlines() if re.match(r"\s+\+\d+ ms  ", row)]


# --- control characters -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field", ["message", "function_name", "level", "outcome", "error_type", "error", "record_id", "status"]
)
def test_a_control_character_in_any_field_is_escaped(tmp_path, field, capsys):
    line = {
        "timestamp": "2024-05-01T10:00:00.000Z",
        "level": "INFO",
        "message": "m",
        "function_name": "svc-dev-f",
        "trace_id": "T-1",
        "outcome": "failed",
        "error_type": "ValueError",
        "error": "bad",
        field: FORGED,
    }
    status, out = trace(tmp_path, "T-1", [line], capsys)
    assert status == 0
    assert not CONTROL.search(out), repr(out)
    assert len(rows(out)) == 1  # the forged row is text inside the one real row
    if field not in (
        "record_id",
        "status",
    ):  # shown whole (a record id is shortened; status gives way to outcome)
        assert "\\x1b]0;pwned\\x07\\r\\n" in out


def test_escaping_keeps_ordinary_unicode(tmp_path, capsys):
    line = {
        "timestamp": "2024-05-01T10:00:00.000Z",
        "level": "INFO",
        "message": "café 日本 ✓",
        "function_name": "svc-dev-f",
        "trace_id": "T-1",
    }
    _, out = trace(tmp_path, "T-1", [line], capsys)
    assert "café 日本 ✓" in out


def test_a_hostile_line_cannot_break_the_reading(tmp_path, capsys):
    """Fields of any JSON type where a string is expected, and a line nested too deep to parse."""
    lines = [
        {
            "timestamp": ["x"],
            "level": {"a": 1},
            "message": None,
            "function_name": 7,
            "trace_id": "T-1",
            "request_id": {"r": 1},
            "duration_ms": True,
            "records": "3",
            "record_id": {"id": 1},
        },
        {
            "timestamp": "2024-05-01T10:00:00.000Z",
            "trace_id": ["T-1"],
            "request_id": ["r"],
            "message": "list trace id",
        },
    ]
    path = write_lines(tmp_path, lines)
    with open(path, "a") as file:
        file.write("{" + '"a":' * 0 + "[" * 100_000 + "\n")
    assert main(["trace", "T-1", "--logs", path, "-c", str(tmp_path / "none.yml")]) == 0
    out = capsys.readouterr().out
    assert len(rows(out)) == 0 and "1 log lines" in out  # the one line has no timestamp: offset "?"


# --- batches: record ids and the commit's own row ----------------------------------------------------


def batch_lines() -> list[dict]:
    """What the record loop writes for a batch of two records with a commit, and a second batch."""
    base = {"level": "INFO", "function_name": "svc-dev-counter", "request_id": "req-1"}
    return [
        {
            **base,
            "timestamp": "2024-05-01T10:00:00.000Z",
            "message": "record received",
            "trace_id": "T-1",
            "record_id": "m-1",
        },
        {
            **base,
            "timestamp": "2024-05-01T10:00:00.010Z",
            "message": "record received",
            "trace_id": "T-2",
            "record_id": "m-2",
        },
        {
            **base,
            "timestamp": "2024-05-01T10:00:00.020Z",
            "message": "counted",
            "trace_id": "T-1",
            "record_id": "m-1",
        },
        {
            **base,
            "timestamp": "2024-05-01T10:00:02.500Z",
            "message": "batch committed",
            "records": 2,
            "failed": 0,
            "duration_ms": 2470.5,
            "trace_ids": ["T-1", "T-2"],
        },
        {
            **base,
            "timestamp": "2024-05-01T10:00:02.510Z",
            "message": "record processed",
            "trace_id": "T-1",
            "record_id": "m-1",
            "duration_ms": 20.1,
            "outcome": "ok",
        },
        {
            **base,
            "timestamp": "2024-05-01T10:00:02.520Z",
            "message": "record processed",
            "trace_id": "T-2",
            "record_id": "m-2",
            "duration_ms": 11.0,
            "outcome": "ok",
        },
        {
            **base,
            "timestamp": "2024-05-01T10:00:05.000Z",
            "request_id": "req-2",
            "message": "batch committed",
            "records": 1,
            "duration_ms": 3.0,
            "trace_ids": ["T-3"],
        },
    ]


def test_every_line_of_a_batch_shows_its_record_id(tmp_path, capsys):
    status, out = trace(tmp_path, "T-1", batch_lines(), capsys)
    assert status == 0
    heading = next(row for row in out.splitlines() if "offset" in row)
    assert heading.split() == ["offset", "function", "record", "level", "message", "duration", "outcome"]
    shown = rows(out)
    records = [row.split()[3] for row in shown if re.search("record received|record processed|counted", row)]
    assert records == ["m-1", "m-1", "m-1"]  # T-1's lines only, each with its record
    assert "m-2" not in out


def test_the_batch_commit_is_a_row_of_its_own(tmp_path, capsys):
    _, out = trace(tmp_path, "T-1", batch_lines(), capsys)
    [commit] = [row for row in rows(out) if "batch committed" in row]
    assert commit.split()[:2] == ["+2500", "ms"] and "2470.5 ms" in commit and commit.endswith("2 records")
    [processed] = [row for row in rows(out) if "record processed" in row]
    assert "20.1 ms" in processed  # the record's own duration, the commit apart
    assert "4 log lines" in out  # the other invocation's commit is not this trace's


@pytest.mark.parametrize("by", ["trace_ids", "request_id"])
def test_a_batch_commit_is_found_by_its_trace_ids_or_its_invocation(tmp_path, by, capsys):
    """The commit line names the batch's trace ids; a line of no trace id written in the same
    invocation (a commit that names none) belongs to the batch's traces too."""
    commit = {
        "timestamp": "2024-05-01T10:00:01.000Z",
        "level": "WARN",
        "message": "batch committed",
        "records": 3,
        "failed": 1,
        "duration_ms": 12.0,
        "error_type": "CommitFailed",
        "error": "one record refused",
        "request_id": "req-9" if by == "request_id" else "req-other",
        "trace_ids": ["T-7"] if by == "trace_ids" else None,
    }
    received = {
        "timestamp": "2024-05-01T10:00:00.000Z",
        "level": "INFO",
        "message": "record received",
        "trace_id": "T-7",
        "record_id": "m-7",
        "request_id": "req-9",
    }
    _, out = trace(tmp_path, "T-7", [received, commit], capsys)
    [row] = [row for row in rows(out) if "batch committed" in row]
    assert row.endswith("12.0 ms  CommitFailed: one record refused 3 records (1 failed)")


def test_a_trace_without_record_ids_keeps_its_columns(tmp_path, capsys):
    lines = [
        {
            "timestamp": "2024-05-01T10:00:00.000Z",
            "level": "INFO",
            "message": "request received",
            "function_name": "svc-dev-ingest",
            "trace_id": "T-1",
        }
    ]
    _, out = trace(tmp_path, "T-1", lines, capsys)
    heading = next(row for row in out.splitlines() if "offset" in row)
    assert heading.split() == ["offset", "function", "level", "message", "duration", "outcome"]


def test_a_long_record_id_keeps_its_start_and_its_end(tmp_path, capsys):
    sequence = "49590338271490256608559692538361571095921575989136588898"
    line = {
        "timestamp": "2024-05-01T10:00:00.000Z",
        "level": "INFO",
        "message": "record received",
        "trace_id": "T-1",
        "record_id": sequence,
    }
    _, out = trace(tmp_path, "T-1", [line], capsys)
    [row] = rows(out)
    shown = row.split()[3]
    assert (
        len(shown) == 40
        and shown.startswith(sequence[:19])
        and shown.endswith(sequence[-20:])
        and "…" in shown
    )
