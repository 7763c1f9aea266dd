"""JSON log lines through the public API: format, extra fields, masking, truncation, Powertools."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from _hostile import CODECS, captured, using_codec
from _logs import of_level, read_lines, with_message

from lambda_kit import codec, get_logger, sqs_handler, stream_handler
from lambda_kit import log as lambda_log
from lambda_kit.testing import kinesis_event, lambda_context, sqs_event

log = get_logger("tests.views")

SECRETS = {
    "authorization": "Bearer s3cr3t-auth",
    "Cookie": "session=s3cr3t-cookie",
    "x-api-key": "s3cr3t-apikey",
    "password": "s3cr3t-password",
    "refresh_token": "s3cr3t-token",
    "client_secret": "s3cr3t-secret",
}


def test_every_line_has_the_base_keys_and_the_record_trace_id(capfd):
    context = lambda_context("count-views")

    @sqs_handler
    def handler(message, ctx):
        log.info("counting", extra={"url": message["url"], "views": 3})
        log.warning("slow\nsecond line")

    handler(sqs_event({"url": "/a"}, {"url": "/b"}, trace_id=["t-a", "t-b"]), context)
    raw = capfd.readouterr().out
    lines = [json.loads(text) for text in raw.splitlines()]
    assert len(lines) == 8
    for line in lines:
        assert line["function_name"] == "count-views"
        assert line["request_id"] == context.aws_request_id
        assert line["timestamp"].endswith("Z") and "T" in line["timestamp"]
        assert line["trace_id"] in ("t-a", "t-b")
    counting = with_message(lines, "counting")
    assert [(c["trace_id"], c["url"], c["views"], c["level"]) for c in counting] == [
        ("t-a", "/a", 3, "INFO"),
        ("t-b", "/b", 3, "INFO"),
    ]
    assert counting[0]["logger"] == "tests.views"
    assert [w["message"] for w in of_level(lines, "WARN")] == ["slow\nsecond line"] * 2


def test_get_logger_wraps_the_standard_logger_and_has_no_trace_id_outside_a_handler(capfd):
    assert isinstance(log, logging.LoggerAdapter) and log.logger is logging.getLogger("tests.views")
    assert get_logger("tests.views") is log
    log.info("outside", extra={"k": "v"})
    (line,) = read_lines(capfd)
    assert line["message"] == "outside" and line["k"] == "v"
    assert line.get("trace_id") is None


def test_logged_exception_carries_type_message_and_traceback(capfd):
    @sqs_handler
    def handler(message, context):
        try:
            raise KeyError("missing")
        except KeyError:
            log.exception("handled")

    handler(sqs_event({"a": 1}, trace_id="t-exc"), None)
    (error,) = of_level(read_lines(capfd), "ERROR")
    assert error["trace_id"] == "t-exc" and error["error_type"] == "KeyError"
    assert "Traceback" in error["traceback"]


def test_secrets_are_masked_in_payloads_results_and_extra_fields(capfd):
    @sqs_handler
    def handler(message, context):
        log.info("with extras", extra={**SECRETS, "nested": {"headers": SECRETS}, "plain": "visible"})
        return {"echo": message, "Authorization": "Bearer s3cr3t-result"}

    handler(sqs_event({"user": "ann", "headers": SECRETS, "list": [SECRETS]}), None)
    out = capfd.readouterr().out
    assert "s3cr3t" not in out
    lines = [json.loads(text) for text in out.splitlines()]
    payload = with_message(lines, "record received")[0]["payload"]
    assert payload["user"] == "ann"
    assert set(payload["headers"].values()) == {"***"} and set(payload["list"][0].values()) == {"***"}
    result = with_message(lines, "record processed")[0]["result"]
    assert result["Authorization"] == "***" and result["echo"]["user"] == "ann"
    extras = with_message(lines, "with extras")[0]
    assert all(extras[key] == "***" for key in SECRETS)
    assert set(extras["nested"]["headers"].values()) == {"***"} and extras["plain"] == "visible"


def test_long_values_are_cut_with_a_visible_marker(capfd):
    @sqs_handler
    def handler(message, context):
        log.info("big extra", extra={"blob": "z" * 300_000})
        return "r" * 300_000

    handler(sqs_event({"huge": "x" * 300_000, "many": ["y" * 5_000] * 100}), None)
    raw = capfd.readouterr().out
    lines = raw.splitlines()
    assert len(lines) == 3
    for text in lines:
        assert len(text.encode()) < 100_000  # CloudWatch's event limit is 256 KB
        assert "truncated" in text
        json.loads(text)
    assert "xxxxxxxx" in lines[0] and "zzzzzzzz" in lines[1] and "rrrrrrrr" in lines[2]


def test_a_long_value_in_a_small_line_is_cut_in_place(capfd):
    @sqs_handler
    def handler(message, context):
        pass

    handler(sqs_event({"huge": "x" * 20_000, "small": 1}), None)
    received = with_message(read_lines(capfd), "record received")[0]
    assert received["payload"]["small"] == 1
    assert received["payload"]["huge"].startswith("xxx") and "truncated" in received["payload"]["huge"]
    assert len(received["payload"]["huge"]) < 10_000


def test_log_event_and_log_result_turn_their_lines_off(capfd):
    @stream_handler(log_event=False)
    def no_event(payload, context):
        return "done"

    @stream_handler(log_result=False)
    def no_result(payload, context):
        return "done"

    no_event(kinesis_event({"a": 1}), None)
    assert [line["message"] for line in read_lines(capfd)] == ["record processed"]
    no_result(kinesis_event({"a": 1}), None)
    assert [line["message"] for line in read_lines(capfd)] == ["record received"]


def test_failure_lines_are_kept_when_payload_logging_is_off(capfd):
    @sqs_handler(log_event=False, log_result=False)
    def handler(message, context):
        raise ValueError("still reported")

    handler(sqs_event({"a": 1}, trace_id="t-quiet"), None)
    (line,) = read_lines(capfd)
    assert line["level"] == "ERROR" and line["trace_id"] == "t-quiet"


def test_powertools_logger_gets_the_correlation_id_per_record(capfd):
    from aws_lambda_powertools import Logger

    powertools = Logger(service="views")

    @sqs_handler(logger=powertools)
    def handler(message, context):
        powertools.info("from powertools")

    handler(sqs_event({"a": 1}, {"b": 2}, trace_id=["pt-1", "pt-2"]), lambda_context())
    lines = [json.loads(text) for text in capfd.readouterr().out.splitlines()]
    ours = [line for line in lines if "function_name" in line and "service" not in line]
    theirs = [line for line in lines if line.get("message") == "from powertools"]
    assert [line["correlation_id"] for line in theirs] == ["pt-1", "pt-2"]
    assert [line.get("trace_id") for line in theirs] == ["pt-1", "pt-2"]  # and the key our lines use
    assert {line["trace_id"] for line in ours} == {"pt-1", "pt-2"}


@pytest.mark.parametrize("powertools_first", [True, False])
def test_a_powertools_logger_of_the_same_name_writes_each_line_once(capfd, powertools_first):
    """``get_logger(name)`` and ``Logger(service=name)`` are one standard logger: Powertools'
    handler writes its lines (with the record's correlation id), lambda_kit's steps aside."""
    from aws_lambda_powertools import Logger

    name = f"same-name-{powertools_first}"
    if powertools_first:
        powertools = Logger(service=name)
        ours = get_logger(name)
    else:
        ours = get_logger(name)
        powertools = Logger(service=name)

    @sqs_handler(logger=powertools, log_event=False, log_result=False)
    def handler(message, context):
        ours.info("from get_logger", extra={"views": 3})
        powertools.info("from powertools")

    handler(sqs_event({"a": 1}, trace_id="same-1"), lambda_context())
    lines = [json.loads(text) for text in capfd.readouterr().out.splitlines()]
    assert [line["message"] for line in lines] == ["from get_logger", "from powertools"]
    assert [(line["service"], line["correlation_id"]) for line in lines] == [(name, "same-1")] * 2
    assert lines[0]["views"] == 3
    ours.removeHandler(powertools.logger_handler)  # Powertools' handler gone: lambda_kit's writes again
    ours.info("alone")
    (line,) = read_lines(capfd)
    assert (line["message"], line["logger"]) == ("alone", name)


def test_a_line_stays_under_cloudwatchs_limit_in_bytes_not_just_characters(capfd):
    @sqs_handler(log_event=False, log_result=False)
    def handler(message, context):
        log.info("wide", extra={f"field_{i}": "😀" * 8_000 for i in range(12)})
        log.info("wider", extra={f"field_{i}": "é" * 100 for i in range(5_000)})

    handler(sqs_event({"a": 1}, trace_id="t-wide"), None)
    raw = capfd.readouterr().out
    lines = raw.splitlines()
    assert len(lines) == 2
    for text in lines:
        assert len(text.encode("utf-8")) < 128 * 1024  # CloudWatch: 256 KB per event
        line = json.loads(text)
        assert line["trace_id"] == "t-wide" and line["level"] == "INFO"


def nested(levels: int) -> Any:
    """``levels`` dicts one in another, around 1."""
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


def test_the_loops_record_lines_exactly_with_and_without_a_tracers_keys(monkeypatch):
    """``record received``/``record processed``, key for key and in order: a plain record's lines
    and a traced record's (the tracer's keys after ``trace_id``, then ``record_id``)."""
    payload = {"deep": nested(23), "password": "p", "long": "x" * 9_000}  # 24 dicts deep: the limit, kept
    cleaned = {"deep": nested(23), "password": "***", "long": "x" * 8_152 + "...[truncated 848 chars]"}
    # 25 deep (under a str key, and under a key of another type): the innermost dict goes
    result = {
        "deeper": nested(24),
        "token": "t",
        7: nested(24),
        "edge": "e" * 8_192,
        "k" * 9_000: "a long key",
    }
    cut_deep = nested(23)
    inner = cut_deep
    for _ in range(22):
        inner = inner["a"]
    inner["a"] = "[nested too deep]"
    cleaned_result = {
        "deeper": cut_deep,
        "token": "***",
        "7": cut_deep,
        "edge": "e" * 8_192,
        "k" * 8_152 + "...[truncated 848 chars]": "a long key",
    }
    event = sqs_event(payload, payload, trace_id=["t-plain", "t-traced"])
    event["Records"][1]["messageAttributes"]["traceparent"] = {
        "stringValue": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "dataType": "String",
    }
    context = lambda_context("lines-fn")
    with captured() as out:
        sqs_handler(lambda message, ctx: result)(event, context)
    lines = [json.loads(text, object_pairs_hook=list) for text in out]
    assert len(lines) == 4
    for line in lines:
        assert line[0][0] == "timestamp" and line[0][1].endswith("Z")
        del line[0]
    keys = [
        ("otelTraceID", "0af7651916cd43dd8448eb211c80319c"),
        ("otelSpanID", "b7ad6b7169203331"),
        ("dd.trace_id", str(0x8448EB211C80319C)),
        ("dd.span_id", str(0xB7AD6B7169203331)),
        ("xray_trace_id", "1-0af76519-16cd43dd8448eb211c80319c"),
    ]

    def expected(index: int, message: str, tail: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
        trace_id = ["t-plain", "t-traced"][index]
        return [
            ("level", "INFO"),
            ("message", message),
            ("function_name", "lines-fn"),
            ("request_id", context.aws_request_id),
            ("trace_id", trace_id),
            *(keys if index else []),
            ("record_id", event["Records"][index]["messageId"]),
            ("source", "sqs"),
            *tail,
        ]

    def as_pairs(value: Any) -> Any:  # the expected values as object_pairs_hook reads them
        return [(k, as_pairs(v)) for k, v in value.items()] if isinstance(value, dict) else value

    for index in (0, 1):
        received, processed = lines[2 * index : 2 * index + 2]
        assert received == expected(index, "record received", [("payload", as_pairs(cleaned))])
        duration = processed.pop(-2)
        assert duration[0] == "duration_ms" and isinstance(duration[1], float) and duration[1] >= 0
        assert processed == expected(
            index, "record processed", [("outcome", "ok"), ("result", as_pairs(cleaned_result))]
        )


@pytest.mark.parametrize("codec_name", CODECS)
def test_the_payload_and_the_result_are_written_as_clean_makes_them(codec_name):
    """The loop's lines hold the payload and the result as ``clean`` makes them, whatever the values
    and whichever codec writes them."""

    def shape(value: Any) -> dict[str, Any]:
        return {"url": value, "n": 1, "flag": True, "none": None}

    cases = [
        ("short", 7),
        ("x" * 9_000, "r" * 9_000),  # a value to cut, in the payload and as the result
        ("x" * 8_192, "r" * 8_192),  # at the limit: kept whole
        (2**64, 2**64),  # an int orjson refuses
        (-(2**63) - 1, 10**400),
        ("caf\u00e9\u2028", "line\u2029break"),  # line breaks escaped, non-ASCII kept
        (1e-7, float("nan")),
        ({"password": "p", "deep": [{"token": "t"}]}, {"secret": "s"}),  # secrets inside a known key
        ("short", "lone \ud800 surrogate"),  # what the codec refuses to write
        ("short", None),
    ]
    secret = {"url": "u", "n": 1, "flag": True, "none": None, "password": "p"}
    event = sqs_event(*[shape(value) for value, _ in cases], secret, {**secret, "password": None}, secret)
    results = iter([result for _, result in cases] + ["last", "end", "again"])
    with using_codec(codec_name), captured() as out:
        sqs_handler(lambda message, context: next(results))(event, lambda_context("as-is-fn"))
        expected_payloads = [
            json.loads(codec.dumps(lambda_log.clean(codec.loads(raw["body"]))))
            for raw in event["Records"][: len(cases)]
        ]  # as the codec decodes the body
        expected_results = [json.loads(codec.dumps(lambda_log.clean(result))) for _, result in cases]
    lines = [json.loads(text) for text in out]
    received, processed = with_message(lines, "record received"), with_message(lines, "record processed")
    assert [line["payload"] for line in received[: len(cases)]] == expected_payloads
    assert [line["result"] for line in processed[: len(cases)]] == expected_results
    assert received[len(cases)]["payload"]["password"] == "***"  # a secret key after known ones
    assert received[len(cases) + 1]["payload"]["password"] is None  # a secret's None is not masked ...
    assert received[len(cases) + 2]["payload"]["password"] == "***"  # ... and the next value is
    written = "".join(out)
    assert all(secret not in written for secret in ('"secret":"s"', '"password":"p"', '"token":"t"'))
    assert "\u2028" not in written and "\u2029" not in written and "caf\u00e9" in written
    assert all(len(text) < 20_000 for text in out)


def test_a_secret_keys_none_is_kept_its_value_masked_and_a_list_payload_is_cleaned():
    """A secret key whose value is None is written as null (nothing to hide), the same key's value
    is masked on the next record, and a payload that is not a JSON object (a list) is cleaned too."""
    event = sqs_event(
        {"token": None}, {"token": "t-secret"}, [{"password": "p-secret"}], [{"password": "p-secret"}]
    )
    with captured() as out:
        sqs_handler(lambda message, context: None)(event, lambda_context("secrets-fn"))
    payloads = [
        line["payload"] for line in with_message([json.loads(text) for text in out], "record received")
    ]
    assert payloads == [{"token": None}, {"token": "***"}, [{"password": "***"}], [{"password": "***"}]]
    assert "t-secret" not in "".join(out) and "p-secret" not in "".join(out)
