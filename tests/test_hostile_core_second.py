"""Hostile input, second pass, in the core: a refusal at any depth, a window time UTC cannot hold,
one JSON grammar whatever the codec (issue 37, points 11 and 12)."""

from __future__ import annotations

import pytest
from _hostile import CODECS, DECORATORS, captured, of_level, parse_lines, using_codec

from lambda_kit import UnsupportedEvent, codec, stream_handler
from lambda_kit.sources.window import WindowStateError
from lambda_kit.testing import api_event, kinesis_event


def nested(depth: int, as_dict: bool) -> object:
    value: object = "x"
    for _ in range(depth):
        value = {"a": value} if as_dict else [value]
    return value


PLACES = {
    "eventSource": lambda deep: {"Records": [{"eventSource": deep}]},
    "EventSource": lambda deep: {"Records": [{"EventSource": deep}]},
    "a key": lambda deep: {"Records": [{"eventSource": "aws:nothing"}], "k": deep},
    "header value": lambda deep: {**api_event("GET", "/"), "headers": {"x-deep": deep}},
    "query value": lambda deep: {**api_event("GET", "/"), "queryStringParameters": {"q": deep}},
}


@pytest.mark.parametrize("as_dict", [True, False], ids=["objects", "arrays"])
@pytest.mark.parametrize("place", list(PLACES))
@pytest.mark.parametrize("decorator", list(DECORATORS))
def test_an_event_nested_10000_deep_where_only_the_platform_writes_is_refused_or_answered(
    decorator, place, as_dict
):
    handler = DECORATORS[decorator](lambda payload, context: None)
    event = PLACES[place](nested(10_000, as_dict))
    with captured() as out:
        try:
            answer = handler(event, None)
        except UnsupportedEvent:
            assert of_level(parse_lines(out, traced=False), "ERROR")
            return
        except Exception as exc:  # a record's failure raised by an asynchronous source: fine, bounded
            assert not isinstance(exc, RecursionError)
            return
    assert answer is not None  # an HTTP answer, or a batch response


@pytest.mark.parametrize("end", ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00", "x", ""])
def test_a_window_end_no_utc_time_holds_is_refused_with_its_error_line(end):
    event = kinesis_event({"n": 1})
    event.update(window={"start": "2020-01-01T00:00:00Z", "end": end}, state={}, shardId="shard-1")
    with captured() as out, pytest.raises(WindowStateError, match="window.end"):
        stream_handler(lambda payload, context: None)(event, None)
    [line] = of_level(parse_lines(out, traced=False), "ERROR")
    assert line["message"] == "event not processed: malformed tumbling window"


NOT_JSON = ['{"k":"\x1f"}', '"a\tb"', "01", "-01", "[01]", "00", "1.", "1.e5", "-", "[-]", "-.5"]


@pytest.mark.parametrize("name", CODECS)
@pytest.mark.parametrize("text", NOT_JSON, ids=[f"case{n}" for n in range(len(NOT_JSON))])
def test_every_codec_refuses_what_json_does_not_allow(name, text):
    with using_codec(name), pytest.raises(ValueError):
        codec.loads(text)
