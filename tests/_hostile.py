"""Helpers for the hostile-input tests: capture lambda_kit's lines, switch codecs, check lines."""

from __future__ import annotations

import importlib.util
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import HealthCheck, settings

import lambda_kit
from lambda_kit import codec, log
from lambda_kit import sources as registry
from lambda_kit.trace import is_valid_id

# every codec installed here (the standard library's json always is): each must write the same lines
CODECS = tuple(name for name in ("orjson", "ujson", "json") if importlib.util.find_spec(name) is not None)
MAX_LINE_BYTES = 64 * 1024
LEVELS = {"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"}
BASE_KEYS = ("timestamp", "level", "message", "function_name", "request_id")
ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")

# Reproducible in CI (derandomize), bounded for 2 shared cores, no example database on disk.
HOSTILE = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)


@contextmanager
def captured() -> Iterator[list[str]]:
    """Every line lambda_kit writes while inside, as written (``set_sink``); restored after."""
    lines: list[str] = []
    saved = log.set_sink(lines.append)
    try:
        yield lines
    finally:
        log.set_sink(saved)


@contextmanager
def using_codec(name: str) -> Iterator[None]:
    """Run with ``LAMBDA_KIT_JSON=name``; the environment and the codec are restored after."""
    saved = os.environ.get("LAMBDA_KIT_JSON")
    os.environ["LAMBDA_KIT_JSON"] = name
    codec.reload()
    try:
        assert codec.name == name
        yield
    finally:
        if saved is None:
            os.environ.pop("LAMBDA_KIT_JSON", None)
        else:
            os.environ["LAMBDA_KIT_JSON"] = saved
        codec.reload()


def _reject_constant(token: str) -> Any:
    raise AssertionError(f"log line holds the non-JSON constant {token}")


def parse_line(text: str, *, traced: bool = True) -> dict[str, Any]:
    """One written line, checked: one JSON object, one line, valid UTF-8, at most 64 KiB."""
    assert text.endswith("\n") and text.count("\n") == 1, repr(text[:300])
    body = text[:-1]
    assert "\r" not in body, repr(body[:300])
    assert len(body.splitlines()) == 1, f"a Unicode line break inside: {body[:300]!r}"
    raw = body.encode("utf-8")  # raises on lone surrogates: they cannot be written to fd 1
    assert len(raw) <= MAX_LINE_BYTES, len(raw)
    line = json.loads(body, parse_constant=_reject_constant)
    assert isinstance(line, dict), body[:300]
    for key in BASE_KEYS:
        assert key in line, f"{key} missing in {body[:300]}"
    assert line["level"] in LEVELS, line["level"]
    assert isinstance(line["message"], str)
    assert ISO_UTC.match(line["timestamp"]), line["timestamp"]
    if traced and "trace_id" in line:
        assert is_valid_id(line["trace_id"]), line["trace_id"]
    return line


def parse_lines(lines: list[str], *, traced: bool = True) -> list[dict[str, Any]]:
    return [parse_line(text, traced=traced) for text in lines]


def of_level(lines: list[dict[str, Any]], level: str) -> list[dict[str, Any]]:
    return [line for line in lines if line["level"] == level]


DECORATORS = {source.decorator: getattr(lambda_kit, source.decorator) for source in registry.all_sources()}
"""Every decorator by name, from the registry: each source names the decorator that takes it."""


def refused(decorator: str, event: Any) -> str:
    """What ``decorator`` says refusing ``event`` (its ``UnsupportedEvent``, as text); fails when it
    takes it."""
    with captured():
        try:
            DECORATORS[decorator](lambda payload, context: None)(event, None)
        except lambda_kit.UnsupportedEvent as error:
            return str(error)
    raise AssertionError(f"{decorator} took {str(event)[:200]}")
