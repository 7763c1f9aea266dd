"""Log levels, ``get_logger`` made inside a test, and the exact marks of cut values and cut lines.

Each test makes what it checks while it runs (a logger, a level), so a change to that code fails
it: a logger made at import would hide ``get_logger`` from the tests (and from mutation testing).
"""

from __future__ import annotations

import itertools
import json
import logging
import sys
from types import SimpleNamespace
from typing import Any

import pytest
from _hostile import captured, parse_lines

from lambda_kit import get_logger, log, sqs_handler
from lambda_kit.testing import lambda_context, sqs_event

_names = itertools.count()


@pytest.fixture
def fresh_logger():
    """A logger no test has made yet; lambda_kit's level restored after."""
    saved = log.threshold()
    yield get_logger(f"levels.{next(_names)}")
    log.set_level(saved)


def lines_of(fn: Any) -> list[dict[str, Any]]:
    with captured() as out:
        sqs_handler(fn)(sqs_event({"n": 1}, trace_id="t-levels"), lambda_context("levels-fn"))
    return parse_lines(out)


@pytest.mark.parametrize(
    ("environment", "level"),
    [
        ({}, 20),
        ({"LOG_LEVEL": "debug"}, 10),
        ({"AWS_LAMBDA_LOG_LEVEL": "ERROR"}, 40),
        ({"LOG_LEVEL": "WARN", "AWS_LAMBDA_LOG_LEVEL": "DEBUG"}, 30),  # LOG_LEVEL before AWS's
        ({"LAMBDA_KIT_LOG_LEVEL": "critical", "LOG_LEVEL": "DEBUG"}, 50),  # lambda_kit's own first
        ({"LAMBDA_KIT_LOG_LEVEL": "loud", "LOG_LEVEL": "error"}, 40),  # not a level: the next one
    ],
)
def test_the_level_comes_from_the_environment(environment, level, monkeypatch):
    for name in ("LAMBDA_KIT_LOG_LEVEL", "LOG_LEVEL", "AWS_LAMBDA_LOG_LEVEL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert log.level_from_environment() == level


def test_set_level_drops_lower_lines_and_sets_every_logger(fresh_logger):
    def fn(payload: Any, context: Any) -> None:
        fresh_logger.info("info line")
        fresh_logger.warning("warning line")

    log.set_level("warning")
    assert fresh_logger.level == logging.WARNING
    assert [line["message"] for line in lines_of(fn)] == ["warning line"]  # nor record received/processed
    log.set_level(logging.DEBUG)
    assert fresh_logger.level == logging.DEBUG
    assert [line["message"] for line in lines_of(fn)] == [
        "record received",
        "info line",
        "warning line",
        "record processed",
    ]


def test_get_logger_writes_one_json_line_per_call_and_nothing_to_the_root(fresh_logger):
    again = get_logger(fresh_logger.name)  # the same logger, not a second handler
    assert again is fresh_logger and not fresh_logger.propagate
    assert fresh_logger.level == log.threshold()

    def fn(payload: Any, context: Any) -> None:
        fresh_logger.info("hello", extra={"n": 2})

    lines = lines_of(fn)
    [hello] = [line for line in lines if line["message"] == "hello"]
    assert hello["logger"] == fresh_logger.name and hello["n"] == 2 and hello["trace_id"] == "t-levels"
    assert hello["function_name"] == "levels-fn"


def test_a_logger_keeps_the_level_set_on_it():
    logger = logging.getLogger(f"levels.own.{next(_names)}")
    logger.setLevel(logging.ERROR)
    assert get_logger(logger.name).level == logging.ERROR


def test_the_function_name_is_known_while_an_invocation_runs():
    seen = []
    lines_of(lambda payload, context: seen.append(log.current_function_name()))
    assert seen == ["levels-fn"]


def test_a_cut_value_says_how_much_went_and_fits_the_limit():
    assert log.clean("x" * 8_200) == "x" * 8_152 + "...[truncated 48 chars]"
    assert log.clean("x" * 8_192) == "x" * 8_192  # at the limit: whole
    assert log.cut("abcdef" * 20, 42) == "ab...[truncated 118 chars]"
    assert log.clean(log.clean("x" * 9_000)) == log.clean("x" * 9_000)  # cutting again changes nothing


def test_a_line_too_long_is_cut_field_by_field_from_the_original_text():
    fields = {f"field_{i}": "z" * 8_000 for i in range(40)}

    def fn(payload: Any, context: Any) -> None:
        get_logger("levels.wide").info("wide", extra=fields)

    [line] = [line for line in lines_of(fn) if line["message"] == "wide"]
    # 40 fields of 8,000: cut to 16 KiB, 4 KiB, then 1 KiB each, the first budget at which the line fits
    assert all(line[key] == "z" * 984 + "...[truncated 7016 chars]" for key in fields)
    assert len(json.dumps(line, separators=(",", ":"))) <= log.MAX_LINE_CHARS


def emitted(
    fields: dict[str, Any], level: str = "INFO", message: str = "fit", trace_id: str | None = None
) -> str:
    """The line ``log.emit`` writes (newline dropped) for fields already clean (no string over 8 KiB)."""
    with captured() as out:
        log.emit(level, message, trace_id, fields)
    (text,) = out
    assert text.endswith("\n")
    return text[:-1]


def cut_json(value: Any, budget: int) -> str:
    text = json.dumps(value, separators=(",", ":"))
    kept = budget - 40
    return f"{text[:kept]}...[truncated {len(text) - kept} chars]"


def test_a_field_exactly_at_the_budget_is_kept_whole():
    exact = [10] + [1] * 8_190  # its JSON text is 16,384 characters: the first budget
    assert len(json.dumps(exact, separators=(",", ":"))) == 16_384
    big = [1] * 30_000
    line = json.loads(emitted({"big": big, "exact": exact}))
    assert line["big"] == cut_json(big, 16_384)  # over the budget: cut
    assert line["exact"] == exact  # at it: whole


def test_a_line_that_fits_to_the_byte_is_not_cut_further():
    bigs = {name: [1] * 30_000 for name in ("a", "b", "c")}  # each cut to 16 KiB: the line then fits

    def line_with(pad: int) -> str:
        return emitted({**bigs, "pad": "p" * 8_000, "pad2": "r" * 300, "more": "q" * pad})

    pad = 100 + log.MAX_LINE_CHARS - len(line_with(100))
    assert pad <= log.MAX_VALUE_CHARS  # a value clean() leaves whole
    text = line_with(pad)
    assert len(text) == log.MAX_LINE_CHARS  # exactly the limit: it fits
    line = json.loads(text)
    assert all(line[name] == cut_json(value, 16_384) for name, value in bigs.items())
    assert line["more"] == "q" * pad
    assert len(line_with(pad + 1)) < log.MAX_LINE_CHARS // 2  # a byte more: cut at the next budget, 4 KiB


def test_a_line_of_too_many_fields_keeps_its_own_keys_cut_to_1_kib_and_counts_the_others():
    fields = {f"field_{i}": "v" * 300 for i in range(1_000)}  # too many to fit even cut to 256 characters
    line = json.loads(emitted(fields, level="L" * 1_025, message="m" * 2_000, trace_id="t" * 1_024))
    assert line.pop("timestamp").endswith("Z")
    assert line == {
        "level": "L" * 984 + "...[truncated 41 chars]",  # each base field cut to 1 KiB
        "message": "m" * 984 + "...[truncated 1016 chars]",
        "function_name": log.current_function_name(),
        "request_id": None,
        "trace_id": "t" * 1_024,  # 1 KiB exactly: whole
        "fields_dropped": 1_000,
    }


def test_a_line_of_exactly_64_kib_is_written_whole_and_a_short_one_as_the_codec_writes_it():
    def line_with(pad: int) -> str:
        return emitted(
            {"list": [1] * 10_000, **{f"pad_{i}": "p" * 8_000 for i in range(5)}, "more": "q" * pad}
        )

    pad = 100 + log.MAX_LINE_CHARS - len(line_with(100))
    assert 100 < pad <= log.MAX_VALUE_CHARS
    text = line_with(pad)
    assert len(text) == log.MAX_LINE_CHARS
    assert json.loads(text)["list"] == [1] * 10_000  # nothing cut, though the list is over the first budget
    assert emitted({"a": 1, "b": "x"}).endswith(',"a":1,"b":"x"}')


def test_without_a_function_name_in_the_context_the_lines_take_lambdas_variable(monkeypatch):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "from-env")
    with captured() as out:
        for context in (None, object(), lambda_context("from-context")):
            sqs_handler(lambda payload, ctx: None)(sqs_event({"n": 1}), context)
    assert [line["function_name"] for line in parse_lines(out)] == ["from-env"] * 4 + ["from-context"] * 2


def test_a_context_attribute_that_is_not_text_is_not_written(monkeypatch):
    """Lambda's context names are text; anything else in their place is left out (the function
    name falls back to Lambda's variable)."""
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "from-env")
    context = SimpleNamespace(function_name=123, aws_request_id=["not", "text"])
    with captured() as out:
        sqs_handler(lambda payload, ctx: None)(sqs_event({"n": 1}), context)
    lines = parse_lines(out)
    assert lines and all((line["function_name"], line["request_id"]) == ("from-env", None) for line in lines)


def test_a_line_cut_to_fit_escapes_the_unicode_line_breaks_too():
    """A line over the limit is cut field by field and still written as one line: U+2028, U+2029
    and U+0085 escaped as in a short line."""
    text = emitted({f"pad_{i}": "p" * 8_000 for i in range(9)} | {"breaks": "a\u2028b\u2029c\x85d"})
    assert len(text.splitlines()) == 1 and "\\u2028" in text and "\\u0085" in text
    assert json.loads(text)["breaks"] == "a\u2028b\u2029c\x85d"


def test_flush_flushes_standard_output_and_leaves_a_sink_alone(monkeypatch):
    """The loop's last step (Lambda may freeze the process once the handler returns)."""
    flushed: list[str] = []
    monkeypatch.setattr(sys, "stdout", SimpleNamespace(flush=lambda: flushed.append("stdout")))
    saved = log.set_sink(None)
    try:
        log.flush()
        assert flushed == ["stdout"]
        log.set_sink(flushed.append)
        log.flush()
        assert flushed == ["stdout"]
    finally:
        log.set_sink(saved)


def wrapped(levels: int, wrap: Any, inner: Any = 1) -> Any:
    for _ in range(levels):
        inner = wrap(inner)
    return inner


def test_lists_and_sets_nested_past_the_limit_are_cut_where_they_go_too_deep():
    """A payload of lists keeps 24 levels; a set counts two (itself, then the list it is written as)."""
    deep = "[nested too deep]"
    fields = {
        "lists": wrapped(24, lambda v: [v]),
        "deeper_lists": wrapped(25, lambda v: [v]),
        "tuples": wrapped(25, lambda v: (v,)),
        "sets": wrapped(12, lambda v: frozenset([v])),
        "deeper_sets": wrapped(13, lambda v: frozenset([v])),
    }
    line = json.loads(emitted({key: log.clean(value) for key, value in fields.items()}))  # each a payload
    assert line["lists"] == wrapped(24, lambda v: [v])
    assert line["deeper_lists"] == line["tuples"] == wrapped(24, lambda v: [v], deep)
    assert line["sets"] == wrapped(12, lambda v: [v])
    assert line["deeper_sets"] == wrapped(12, lambda v: [v], deep)
