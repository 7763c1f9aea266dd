"""The masking rule at its bounds (``lambda_kit.log``: ``clean``, ``brief``, ``outline``), and the
shape of an unsupported event as its ERROR line writes it: each case at the edge a slip would move."""

from __future__ import annotations

import json
from decimal import Decimal

from _hostile import captured, parse_lines

from lambda_kit import get_logger, log, sqs_handler
from lambda_kit.errors import UnsupportedEvent
from lambda_kit.testing import lambda_context

INT_LIMIT = 10**4_299  # Python writes no int of more digits as text


def nested(depth: int, inner):
    for _ in range(depth):
        inner = [inner]
    return inner


def test_ints_are_kept_up_to_the_largest_python_writes_and_written_as_text_at_it():
    assert log.clean(INT_LIMIT - 1) == INT_LIMIT - 1
    assert log.clean(-INT_LIMIT + 1) == -INT_LIMIT + 1
    assert log.clean(INT_LIMIT) == str(INT_LIMIT)
    assert log.clean(-INT_LIMIT) == str(-INT_LIMIT)
    assert log.clean(10**5_000) == "<int of 16610 bits>"


def test_nan_and_infinities_are_null_and_other_floats_kept():
    assert [log.clean(value) for value in (float("nan"), float("inf"), -float("inf"), 1.5)] == [
        None,
        None,
        None,
        1.5,
    ]


def test_text_and_keys_of_exactly_the_value_limit_are_kept_whole():
    text = "é" * log.MAX_VALUE_CHARS
    assert log.clean(text) == text
    assert log.clean({text: 1}) == {text: 1}
    assert log.clean("é" * (log.MAX_VALUE_CHARS + 1)) == log.cut("é" * (log.MAX_VALUE_CHARS + 1))


def test_json_text_deep_in_a_value_is_masked_at_the_depth_it_sits():
    value = nested(log.MAX_DEPTH - 1, '{"a": {"b": 1}}')
    inner = log.clean(value)
    for _ in range(log.MAX_DEPTH - 1):
        (inner,) = inner
    assert json.loads(inner) == {"a": "[nested too deep]"}


def test_a_value_of_another_type_at_the_depth_limit_is_not_converted():
    assert log.clean(nested(log.MAX_DEPTH, Decimal(5))) == nested(log.MAX_DEPTH, "[nested too deep]")
    assert log.clean(nested(log.MAX_DEPTH - 1, Decimal(5))) == nested(log.MAX_DEPTH - 1, 5)


def test_an_unconvertible_value_whose_text_is_json_is_masked_as_json():
    class Odd:
        def __str__(self) -> str:
            return '{"password": "hunter2", "n": 1}'

    assert json.loads(log.clean(Odd())) == {"password": log.MASK, "n": 1}


def test_extra_fields_are_cleaned_as_values_of_their_own():
    deep = nested(log.MAX_DEPTH, "bottom")

    class Unreadable(dict):
        def items(self):
            raise RuntimeError("no items today")

    with captured() as out:
        get_logger("mask.extra").warning("deep", extra={"deep": deep})
        get_logger("mask.extra").warning("unreadable", extra=Unreadable(a=1))
    deep_line, unreadable_line = parse_lines(out)
    assert deep_line["deep"] == log.clean(deep) == deep
    assert unreadable_line["fields_error"] == "no items today" and "a" not in unreadable_line


def test_brief_is_ascii():
    assert log.brief(["é"]) == "['\\xe9']"


def test_an_unsupported_events_line_gives_its_shape_never_its_values():
    event = {
        "n": 1,
        "s": "secret",
        "f": 1.5,
        "b": True,
        "z": None,
        "empty": [],
        "items": [{"h": [1]}],
        "lists": [[[[1]]]],
        "deep": {"1": {"2": {"3": {"4": 1}}}},
        "k" * 100: 1,
        7: "seven",
        "raw": b"bytes",
    }
    many = {f"k{i}": 0 for i in range(25)}
    twenty = {f"k{i}": 0 for i in range(20)}
    with captured() as out:
        for each in (event, many, twenty):
            try:
                sqs_handler(lambda message, context: None)(each, lambda_context())
            except UnsupportedEvent:
                pass
            else:
                raise AssertionError("an unsupported event was accepted")
    shapes = [line["event_shape"] for line in parse_lines(out)]
    assert shapes[0] == {
        "n": "number",
        "s": "string",
        "f": "number",
        "b": "boolean",
        "z": "null",
        "empty": "array",
        "items": [{"h": ["number"]}],
        "lists": [[["array"]]],
        "deep": {"1": {"2": {"3": "object"}}},
        "k" * 64: "number",
        "7": "string",
        "raw": "bytes",
    }
    assert shapes[1] == {**{f"k{i}": "number" for i in range(20)}, "...": "5 more keys"}
    assert shapes[2] == {f"k{i}": "number" for i in range(20)}
