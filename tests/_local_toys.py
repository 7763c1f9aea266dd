"""Tiny toy services for the local-stack tests: a serverless.yml and handler modules in tmp_path,
started on the session's moto endpoint with short poll intervals."""

from __future__ import annotations

import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from lambda_kit.local.poller import Timing
from lambda_kit.local.stack import LocalStack


def fast_timing(**overrides: Any) -> Timing:
    values: dict[str, Any] = {
        "poll_interval": 0.02,
        "sqs_retry_delay": 0,
        "stream_retry_delay": 0.01,
        "async_retry_delays": (0.05,),
        "ttl_interval": 0.1,
        "sqs_concurrency": 1,
    }
    values.update(overrides)
    return Timing(**values)


def write_project(root: Path, config: str, modules: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "serverless.yml").write_text(textwrap.dedent(config), encoding="utf-8")
    for name, code in modules.items():
        (root / f"{name}.py").write_text(textwrap.dedent(code), encoding="utf-8")
    return root / "serverless.yml"


@contextmanager
def toy_stack(
    root: Path, config: str, modules: dict[str, str], endpoint_url: str, **options: Any
) -> Iterator[LocalStack]:
    path = write_project(root, config, modules)
    options.setdefault("timing", fast_timing())
    options.setdefault("log_path", root / "logs.jsonl")
    options.setdefault("api_port", None)
    stack = LocalStack(path, endpoint_url=endpoint_url, **options)
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


def module_of(stack: LocalStack, function: str) -> ModuleType:
    handler = stack.runtime(function).handler()
    return sys.modules[handler.__module__]


def wait_for(predicate: Callable[[], Any], timeout: float = 15.0, interval: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(interval)
