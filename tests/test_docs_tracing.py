"""The tracing section of the manual: its examples run as written (wherever it lives: the README or
``docs/``), and it names the log keys each vendor needs and the read order."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lambda_kit.trace.context import LOG_KEYS

ROOT = Path(__file__).resolve().parent.parent
HEADING = "Tracing with Datadog / X-Ray / OpenTelemetry"


def section() -> str:
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]:
        text = path.read_text(encoding="utf-8")
        found = re.search(rf"^(#+) {re.escape(HEADING)}\n", text, re.MULTILINE)
        if found:
            level = len(found.group(1))
            end = re.search(rf"^#{{1,{level}}} ", text[found.end() :], re.MULTILINE)
            return text[found.end() : found.end() + end.start() if end else None]
    raise AssertionError(f"no section {HEADING!r} in the README or docs/")


EXAMPLES = re.findall(r"```python\n(.*?)```", section(), re.DOTALL)


@pytest.mark.parametrize("index", range(len(EXAMPLES)))
def test_the_example_runs(index, capfd, aws_endpoint, monkeypatch):
    import boto3

    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)  # propagate() on a session of this test's own
    exec(compile(EXAMPLES[index], f"<tracing example {index}>", "exec"), {"__name__": "docs_example"})
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err
    if "messageAttributes" in EXAMPLES[index]:
        assert '"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"' in captured.out.replace(" ", "")


def test_the_section_names_every_log_key_and_the_read_order():
    text = section()
    for key in LOG_KEYS:
        assert f"`{key}`" in text
    order = [
        text.index(name)
        for name in (
            "lambda_kit's `trace_id`",
            "W3C `traceparent`",
            "Datadog: a `_datadog`",
            "X-Ray: the SQS",
        )
    ]
    assert order == sorted(order)
