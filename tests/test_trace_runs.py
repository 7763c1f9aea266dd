"""Logs survive restarts, and `lambda-kit trace` reads them as they stream (issue 32 point 5,
issue 37 point 9): each run of the stack writes a file of its own, the log path links to the current
one, `trace` shows the newest run holding the trace (`--limit` more), and its memory follows the
trace, not the file."""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path

from lambda_kit.cli import main
from lambda_kit.local.logfile import RUNS_KEPT, LogFile, run_files


def line(trace_id: str, message: str, at: str = "2026-12-01T10:00:00.000Z", **fields: object) -> str:
    return json.dumps(
        {
            "timestamp": at,
            "level": "INFO",
            "message": message,
            "function_name": "shop-dev-api",
            "request_id": f"r-{trace_id}-{message}",
            "trace_id": trace_id,
            **fields,
        }
    )


def one_run(path: Path, *lines: str) -> LogFile:
    log = LogFile(path)
    for text in lines:
        log.write(text)
    log.close()
    return log


def trace(capsys, *argv: str) -> tuple[int, list[str]]:
    status = main(["trace", *argv, "-c", "none.yml"])
    return status, capsys.readouterr().out.splitlines()


def test_each_run_keeps_its_file_and_the_path_is_the_current_run(tmp_path):
    path = tmp_path / "logs.jsonl"
    first = one_run(path, line("T1", "first run"))
    second = one_run(path, line("T1", "second run"))
    assert first.run_path != second.run_path
    assert [run.name for run in run_files(path)] == [second.run_path.name, first.run_path.name]
    assert path.is_symlink() and path.resolve() == second.run_path.resolve()
    assert json.loads(path.read_text())["message"] == "second run"  # the current run, by its old name
    assert json.loads(first.run_path.read_text())["message"] == "first run"  # nothing lost


def test_an_earlier_lambda_kits_log_file_becomes_a_run(tmp_path):
    path = tmp_path / "logs.jsonl"
    path.write_text(line("T0", "from before") + "\n")
    one_run(path, line("T1", "now"))
    older = run_files(path)[1]
    assert older.name.endswith("-0.jsonl") and "from before" in older.read_text()


def test_the_oldest_runs_beyond_the_kept_ones_go(tmp_path):
    path = tmp_path / "logs.jsonl"
    runs = [one_run(path, line("T", str(number))).run_path for number in range(RUNS_KEPT + 2)]
    assert run_files(path) == sorted(runs[2:], reverse=True)


def test_trace_shows_the_newest_run_holding_it_and_limit_shows_more(tmp_path, capsys):
    path = tmp_path / "logs.jsonl"
    older = one_run(path, line("T1", "older"))
    newer = one_run(path, line("T1", "newer"))
    one_run(path, line("T2", "another trace"))  # the current run, without T1
    status, out = trace(capsys, "T1", "--logs", str(path))
    assert status == 0
    assert out[0] == f"trace T1 — 1 log lines from {newer.run_path}"
    assert "newer" in "\n".join(out) and "older" not in "\n".join(out)
    assert "  note: an earlier run holds T1 too: --limit 2 shows it" in "\n".join(out)
    status, out = trace(capsys, "T1", "--logs", str(path), "--limit", "2")
    headings = [row for row in out if row.startswith("trace T1")]
    assert headings == [
        f"trace T1 — 1 log lines from {newer.run_path}",
        f"trace T1 — 1 log lines from {older.run_path}",
    ]
    assert not any("note: an earlier run" in row for row in out)


def test_trace_of_no_run_says_none(tmp_path, capsys):
    path = tmp_path / "logs.jsonl"
    one_run(path, line("T2", "another trace"))
    status, out = trace(capsys, "T1", "--logs", str(path))
    assert status == 1
    assert out[:2] == [f"trace T1 — 0 log lines from {run_files(path)[0]}", "  no log lines with trace_id T1"]


def test_trace_memory_follows_the_trace_not_the_file(tmp_path, capsys):
    """A 100,000-line file (about 30 MB) holding 5 lines of the trace: the peak of what `trace`
    allocates is a small part of the file (reading it whole took 242 MB for this size)."""
    path = tmp_path / "big.jsonl"
    noise = [
        line(f"N-{number}", "record processed", record_id=f"m-{number}", pad="x" * 150)
        for number in range(1000)
    ]
    with open(path, "w", encoding="utf-8") as file:
        for block in range(100):
            file.write("\n".join(noise) + "\n")
            if block % 20 == 0:
                file.write(
                    line("T-needle", f"hop {block}", at=f"2026-12-01T10:00:{block // 20:02d}.000Z") + "\n"
                )
    size = os.path.getsize(path)
    assert size > 25_000_000
    tracemalloc.start()
    try:
        status, out = trace(capsys, "T-needle", "--logs", str(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert status == 0
    assert out[0] == f"trace T-needle — 5 log lines from {path}"
    assert [row.split()[-1] for row in out if " hop " in row] == ["0", "20", "40", "60", "80"]
    assert peak < size / 50, f"peak {peak:,} bytes for a {size:,}-byte file"
