"""The README's code examples for Kafka, EventBridge Pipes, KPL aggregates, HTTP (every front door),
typed payloads and async functions run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _hostile import captured

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()
SECTIONS = ("### Kafka (`kafka_handler`)", "### EventBridge Pipes", "### KPL-aggregated Kinesis records",
            "### HTTP: every front door (`api_handler`)", "### Typed payloads: `model=`",
            "### `async def` and `max_concurrency`")


def examples(heading: str) -> list[str]:
    start = README.index(heading + "\n")
    end = README.find("\n### ", start + len(heading))
    return re.findall(r"```python\n(.*?)```", README[start:end], re.S)


@pytest.mark.parametrize(("heading", "index"), [(h, i) for h in SECTIONS for i in range(len(examples(h)))])
def test_readme_example_runs(heading, index):
    with captured():
        exec(compile(examples(heading)[index], f"README {heading} #{index}", "exec"), {})


def test_every_section_has_an_example():
    assert all(examples(heading) for heading in SECTIONS)
