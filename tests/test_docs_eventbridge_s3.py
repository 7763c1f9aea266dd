"""The code examples of the EventBridge and S3 sections of the manual run as written (wherever the
sections live: the README or ``docs/``), and the sections say what they must."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEADINGS = ("`eventbridge_handler`: EventBridge rules", "`s3_handler`: S3 notifications, however they arrive")


def section(heading: str) -> str:
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]:
        text = path.read_text(encoding="utf-8")
        found = re.search(rf"^(#+) {re.escape(heading)}\n", text, re.MULTILINE)
        if found:
            level = len(found.group(1))
            end = re.search(rf"^#{{1,{level}}} ", text[found.end() :], re.MULTILINE)
            return text[found.end() : found.end() + end.start() if end else None]
    raise AssertionError(f"no section {heading!r} in the README or docs/")


def examples() -> list[tuple[str, int, str]]:
    found = []
    for heading in HEADINGS:
        for index, block in enumerate(re.findall(r"```python\n(.*?)```", section(heading), re.DOTALL)):
            found.append((heading, index, block))
    return found


@pytest.mark.parametrize(("heading", "index", "code"), examples(), ids=lambda value: str(value)[:24])
def test_the_example_runs(heading, index, code, capfd):
    exec(compile(code, f"<{heading} example {index}>", "exec"), {"__name__": "docs_example"})
    assert "Traceback" not in capfd.readouterr().err


def test_each_section_says_what_lambda_does_on_failure_and_how_lambda_kit_routes_it():
    eventbridge, s3 = (section(heading) for heading in HEADINGS)
    for text in (eventbridge, s3):
        assert "asynchronously" in text and "on-failure destination" in text and "re-raised" in text
        assert "`record.id`" in text and "trace id" in text
    assert "deadLetterQueueArn" in eventbridge and "`detail.trace_id`" in eventbridge
    assert "batchItemFailures" in s3 and "s3:TestEvent" in s3 and "URL-decoded" in s3
