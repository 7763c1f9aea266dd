"""Tiny toy services for the local-stack tests: a serverless.yml and handler modules in tmp_path,
started on the session's moto endpoint with short poll intervals.

The functions run in worker processes, so what a toy handler saw is kept where the test can read
it: a module's ``calls = recorded(__name__, "calls")`` (``toy_state.py``, written beside the
handlers) is a list whose appends also go to a file of the project's ``.lambda-kit/toy-state/``,
and ``module_of(stack, function).calls`` reads that file (tuples stay tuples)."""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import lambda_kit
from lambda_kit.local.poller import Timing
from lambda_kit.local.stack import LocalStack

LAMBDA_KIT = Path(lambda_kit.__file__).resolve().parent


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


TOY_STATE = """
import json
import os

DIRECTORY = {directory!r}


def _encoded(value):
    if isinstance(value, tuple):
        return {{"__tuple__": [_encoded(item) for item in value]}}
    if isinstance(value, list):
        return [_encoded(item) for item in value]
    if isinstance(value, dict):
        return {{key: _encoded(item) for key, item in value.items()}}
    return value


class Recorded(list):
    def __init__(self, module, name):
        super().__init__()
        os.makedirs(DIRECTORY, exist_ok=True)
        self.path = os.path.join(DIRECTORY, module + "." + name + ".jsonl")

    def append(self, value):
        super().append(value)
        with open(self.path, "a", encoding="utf-8") as file:
            file.write(json.dumps(_encoded(value)) + "\\n")


def recorded(module, name):
    return Recorded(module, name)
"""


def _decoded(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"__tuple__"}:
        return tuple(_decoded(item) for item in value["__tuple__"])
    if isinstance(value, list):
        return [_decoded(item) for item in value]
    if isinstance(value, dict):
        return {key: _decoded(item) for key, item in value.items()}
    return value


class ToyState:
    """What one toy module recorded (its ``recorded`` lists), read from their files."""

    def __init__(self, directory: Path, module: str) -> None:
        self._directory = directory
        self._module = module

    def __getattr__(self, name: str) -> list[Any]:
        path = self._directory / f"{self._module}.{name}.jsonl"
        if not path.exists():
            return []
        lines = path.read_text(encoding="utf-8").splitlines()
        return [_decoded(json.loads(line)) for line in lines if line.strip()]


def state_directory(root: Path) -> Path:
    return root / ".lambda-kit" / "toy-state"


def vendor_lambda_kit(root: Path) -> None:
    """Put lambda_kit in a toy project (a link to this checkout's): its zip holds it, as a service's
    requirements would put it there (the functions' workers import nothing from the test venv)."""
    if not (root / "lambda_kit").exists():
        (root / "lambda_kit").symlink_to(LAMBDA_KIT, target_is_directory=True)


def write_project(root: Path, config: str, modules: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "serverless.yml").write_text(textwrap.dedent(config), encoding="utf-8")
    state = TOY_STATE.format(directory=str(state_directory(root)))
    (root / "toy_state.py").write_text(state, encoding="utf-8")
    vendor_lambda_kit(root)
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


def module_of(stack: LocalStack, function: str) -> ToyState:
    """What the module of ``function``'s handler recorded (see the module's docstring)."""
    module = stack.runtime(function).function.module
    return ToyState(state_directory(stack.config.project_dir), module)


def wait_for(predicate: Callable[[], Any], timeout: float = 15.0, interval: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(interval)
