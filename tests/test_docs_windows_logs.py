"""The code examples of the manual's sections on tumbling windows and CloudWatch Logs subscriptions
run, in order, each section in one namespace (their asserts are the documented results)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = ("Tumbling windows: `current_window()`", "CloudWatch Logs subscriptions: `cloudwatch_logs_handler`")


def section(title: str) -> str:
    """The text under the heading ``title`` (in the README or a page of docs/), to the next heading."""
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        match = re.search(rf"^(#+) {re.escape(title)}\n(.*?)(?=^#{{1,3}} |\Z)", text, re.M | re.S)
        if match:
            return match.group(2)
    raise AssertionError(f"no section {title!r} in README.md or docs/")


@pytest.mark.parametrize("title", SECTIONS)
def test_the_sections_examples_run(title, capfd):
    blocks = re.findall(r"^```python\n(.*?)^```", section(title), re.M | re.S)
    assert len(blocks) >= 2
    namespace: dict = {"__name__": f"docs_{SECTIONS.index(title)}"}
    for block in blocks:
        exec(compile(block, f"<{title}>", "exec"), namespace)  # noqa: S102 - the manual's own examples
