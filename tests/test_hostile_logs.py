"""Hostile values in log lines, under every codec (orjson, ``LAMBDA_KIT_JSON=ujson`` and ``=json``).

Every line the functions write is one valid JSON object on one line, at most 64 KiB, whatever the
payload, result or ``extra=`` fields hold; secrets are masked, one test per rule.
"""

from __future__ import annotations

import datetime
import json
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import pytest
from _hostile import CODECS, HOSTILE, MAX_LINE_BYTES, captured, of_level, parse_line, parse_lines, using_codec
from hypothesis import given
from hypothesis import strategies as st

from lambda_kit import api_handler, get_logger, sqs_handler
from lambda_kit.log import is_secret_key
from lambda_kit.testing import api_event, lambda_context, sqs_event, sqs_record

log = get_logger("hostile")
MEGABYTE = 1024 * 1024


@pytest.fixture(params=CODECS)
def codec_name(request):
    with using_codec(request.param):
        yield request.param


# --- odd Python values ------------------------------------------------------------------------


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


class NotText:
    def __str__(self) -> Any:
        return 42  # str() raises TypeError


class Loud:
    def __str__(self) -> str:
        return "line one\nline two\r\n\x00"


def is_huge_int(value: Any) -> bool:
    return type(value) is int and abs(value) > 10**4_000


ODD_SCALARS = [
    2**64,
    -(2**63) - 1,
    10**5_000,
    -(10**5_000),
    float("nan"),
    float("inf"),
    float("-inf"),
    -0.0,
    Decimal("sNaN"),
    Decimal("NaN"),
    Decimal("Infinity"),
    Decimal("-Infinity"),
    Decimal("1e100000"),
    Decimal("1.5"),
    Decimal("10"),
    Decimal("-1e-100000"),
    Decimal("123456789012345678901234567890"),
    datetime.datetime(2024, 2, 29, 12, 0, tzinfo=datetime.UTC),
    datetime.date(2024, 1, 1),
    datetime.timedelta(days=1),
    uuid.UUID(int=7),
    b"\xff\xfe bytes \x00",
    bytearray(b"abc"),
    Unprintable(),
    NotText(),
    Loud(),
    object(),
    Ellipsis,
    NotImplemented,
    type,
    print,
    "\ud800",
    "\udfff\ud800",
    "\x00\x01\x1f\x7f",
    "\u2028\u2029\x85",
    '","level":"ERROR',
    "\x1b[2J",
]
odd_keys = st.one_of(
    st.text(max_size=8),
    st.integers(),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False),
    st.tuples(st.integers(), st.text(max_size=3)),
    st.binary(max_size=6),
    st.frozensets(st.integers(), max_size=3),
    st.sampled_from([Unprintable(), "\ud800", "password", b"token", ("api_key",)]),
)
odd_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=20),
    st.text(
        st.characters(min_codepoint=0, max_codepoint=0x20)
        | st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
    ),
    st.binary(max_size=10),
    st.sampled_from([v for v in ODD_SCALARS if not is_huge_int(v)]),
    st.sampled_from([5_000, 10_000]).map(lambda digits: -(10**digits)),  # drawn, as repr() refuses them
)
odd_values = st.recursive(
    odd_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(odd_keys, inner, max_size=4),
        st.frozensets(st.integers() | st.text(max_size=4), max_size=3),
        st.sets(st.sampled_from([Unprintable(), 1, "a", b"b"]), max_size=3),
    ),
    max_leaves=12,
)
RESERVED = {
    "args",
    "msg",
    "message",
    "asctime",
    "exc_info",
    "exc_text",
    "stack_info",
    "levelname",
    "levelno",
    "lineno",
    "module",
    "name",
    "pathname",
    "filename",
    "funcName",
    "created",
    "msecs",
    "relativeCreated",
    "thread",
    "threadName",
    "process",
    "processName",
    "taskName",
}  # logging refuses these in extra
extra_keys = st.one_of(
    st.text(max_size=10),
    st.sampled_from(
        ["level", "timestamp", "trace_id", "function_name", "request_id", "logger", "password", "data"]
    ),
).filter(lambda key: key not in RESERVED)


@contextmanager
def only_lambda_kit_handler() -> Iterator[None]:
    """pytest attaches its own capture handlers to non-propagating loggers for each test phase;
    those raise on a message they cannot format, and a lone surrogate in their captured text
    breaks pytest-xdist's report: take them off ``log``, put them back after."""
    from lambda_kit.log.logger import JsonLogHandler

    others = [handler for handler in log.handlers if not isinstance(handler, JsonLogHandler)]
    for handler in others:
        log.removeHandler(handler)
    try:
        yield
    finally:
        for handler in others:
            log.addHandler(handler)


def run_sqs(fn: Any, *bodies: Any) -> tuple[Any, list[str]]:
    with captured() as out:
        response = sqs_handler(fn)(sqs_event(*bodies), lambda_context())
    return response, out


# --- properties ---------------------------------------------------------------------------------


@HOSTILE
@given(result=odd_values, codec=st.sampled_from(CODECS))
def test_any_result_is_logged_as_valid_json(result, codec):
    with using_codec(codec):
        response, out = run_sqs(lambda message, context: result, {"n": 1})
    assert response == {"batchItemFailures": []}
    lines = parse_lines(out)
    assert [line["message"] for line in lines] == ["record received", "record processed"]


@HOSTILE
@given(
    message=st.text(max_size=50) | st.sampled_from([v for v in ODD_SCALARS if isinstance(v, str)]),
    fields=st.dictionaries(extra_keys, odd_values, max_size=5),
    codec=st.sampled_from(CODECS),
)
def test_any_extra_fields_make_one_valid_line(message, fields, codec):
    def fn(payload: Any, context: Any) -> None:
        log.warning(message, extra=fields)

    with using_codec(codec), only_lambda_kit_handler():  # pytest-xdist cannot ship lone surrogates
        response, out = run_sqs(fn, {"n": 1})
    assert response == {"batchItemFailures": []}
    lines = parse_lines(out)
    [line] = [line for line in lines if line.get("logger") == "hostile"]
    trace_id = lines[0]["trace_id"]
    assert line["level"] == "WARN" and line["trace_id"] == trace_id  # never replaced by extra=
    for key in ("level", "timestamp", "trace_id", "function_name", "request_id", "logger"):
        if key in fields:
            assert f"extra_{key}" in line


json_text = st.recursive(
    # 64-bit integers: beyond them orjson decodes a float (a codec property, not a logging one)
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=15,
)


def has_secret_key(value: Any) -> bool:
    if isinstance(value, dict):
        return any(is_secret_key(key) or has_secret_key(item) for key, item in value.items())
    return isinstance(value, list) and any(has_secret_key(item) for item in value)


@HOSTILE
@given(payload=json_text, codec=st.sampled_from(CODECS))
def test_any_json_payload_is_logged_as_it_came(payload, codec):
    """Control characters, surrogates (as \\ud800 escapes), U+2028: escaped, never lost or raw."""
    with using_codec(codec):
        response, out = run_sqs(lambda message, context: None, json.dumps(payload))
    lines = parse_lines(out)
    if response == {"batchItemFailures": []}:
        [received] = [line for line in lines if line["message"] == "record received"]
        if "\\ud" not in json.dumps(payload) and not has_secret_key(payload):
            assert received["payload"] == payload or len(json.dumps(payload)) > 8_000
    else:  # orjson refuses lone surrogate escapes in a body: the record fails, clearly
        [error] = of_level(lines, "ERROR")
        assert error["message"] == "record could not be decoded"


# --- named cases --------------------------------------------------------------------------------


def the_line(out: list[str], message: str) -> dict[str, Any]:
    [line] = [line for line in parse_lines(out) if line["message"] == message]
    return line


def test_control_characters_are_escaped_and_kept(codec_name):
    text = "".join(chr(c) for c in range(32)) + "\x7f\x1b[31m"
    _, out = run_sqs(lambda message, context: message, {"t": text})
    assert the_line(out, "record processed")["result"] == {"t": text}
    assert all("\x1b" not in raw and "\x00" not in raw for raw in out)


def test_unicode_line_breaks_are_escaped(codec_name):
    text = "a\u2028b\u2029c\x85d"
    _, out = run_sqs(lambda message, context: message, {"t": text})
    assert the_line(out, "record processed")["result"] == {"t": text}
    assert all(len(raw.splitlines()) == 1 for raw in out)


def test_lone_surrogates_are_written_escaped(codec_name):
    result = {"s": "\ud800", "pair": "\udfff\ud800", "\udc80key": "v"}
    _, out = run_sqs(lambda message, context: result, {"n": 1})
    logged = the_line(out, "record processed")["result"]
    assert logged == {"s": "\\ud800", "pair": "\\udfff\\ud800", "\\udc80key": "v"}


def test_deeply_nested_objects_are_bounded(codec_name):
    nested: Any = "bottom"
    for _ in range(1_000):
        nested = {"d": nested}
    deep_list: Any = []
    for _ in range(1_000):
        deep_list = [deep_list]

    def fn(payload: Any, context: Any) -> Any:
        log.info("deep", extra={"nested": nested, "list": deep_list})
        return nested

    response, out = run_sqs(fn, {"n": 1})
    assert response == {"batchItemFailures": []}
    assert "[nested too deep]" in json.dumps(the_line(out, "record processed")["result"])
    assert "[nested too deep]" in json.dumps(the_line(out, "deep"))


def test_non_str_dict_keys_become_text(codec_name):
    result = {
        1: "int",
        None: "none",
        (1, "a"): "tuple",
        b"raw": "bytes",
        frozenset({2}): "set",
        1.5: "float",
        Unprintable(): "unprintable",
    }
    _, out = run_sqs(lambda message, context: result, {"n": 1})
    logged = the_line(out, "record processed")["result"]
    assert (
        logged["1"] == "int"
        and logged["null"] == "none"
        and logged["raw"] == "bytes"
        and logged["1.5"] == "float"
    )
    # keys JSON has no text for: their own text
    assert logged["(1, 'a')"] == "tuple" and logged["frozenset({2})"] == "set"
    assert logged["<unprintable Unprintable>"] == "unprintable"


def test_non_str_extra_keys_are_logged_not_lost(codec_name):
    def fn(payload: Any, context: Any) -> None:
        log.info("odd keys", extra={1: "one", ("t",): "tuple"})

    _, out = run_sqs(fn, {"n": 1})
    line = the_line(out, "odd keys")
    assert line["1"] == "one"


@pytest.mark.parametrize(
    "value", ODD_SCALARS, ids=[f"{type(v).__name__}-{i}" for i, v in enumerate(ODD_SCALARS)]
)
def test_odd_values_in_results_and_extra_make_valid_lines(value, codec_name):
    def fn(payload: Any, context: Any) -> Any:
        log.info("odd", extra={"value": value, "in_list": [value], "in_set": {1, 2}, "in_dict": {"k": value}})
        return {"value": value}

    response, out = run_sqs(fn, {"n": 1})
    assert response == {"batchItemFailures": []}
    assert len(parse_lines(out)) == 3


def test_sets_bytes_decimals_dates_and_objects_are_readable(codec_name):
    result = {
        "set": {3, 1, 2},
        "bytes": b"abc",
        "decimal": Decimal("2.50"),
        "int_decimal": Decimal("7"),
        "when": datetime.datetime(2024, 2, 29, 12, 0, tzinfo=datetime.UTC),
        "unprintable": Unprintable(),
        "not_text": NotText(),
        "loud": Loud(),
    }
    _, out = run_sqs(lambda message, context: result, {"n": 1})
    logged = the_line(out, "record processed")["result"]
    assert sorted(logged["set"]) == [1, 2, 3] and logged["bytes"] == "abc"
    assert logged["decimal"] == 2.5 and logged["int_decimal"] == 7
    assert logged["when"] == "2024-02-29T12:00:00+00:00"
    assert (
        logged["unprintable"] == "<unprintable Unprintable>" and logged["not_text"] == "<unprintable NotText>"
    )
    assert logged["loud"] == "line one\nline two\r\n\x00"  # escaped in the line, kept in the value


class Opaque:
    """Neither str() nor repr() works."""

    def __str__(self) -> str:
        raise RuntimeError("no str")

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


class BrokenMapping(Mapping):
    def __getitem__(self, key: Any) -> Any:
        raise RuntimeError("no item")

    def __iter__(self) -> Iterator[Any]:
        raise RuntimeError("no iteration")

    def __len__(self) -> int:
        return 1


def test_objects_whose_str_and_repr_fail(codec_name):
    result = {
        "set": {Opaque(), Opaque()},
        "key": {Opaque(): 1},
        "mapping": BrokenMapping(),
        "plain": Opaque(),
    }

    def fn(payload: Any, context: Any) -> Any:
        log.info("opaque", extra={"o": Opaque(), "m": BrokenMapping(), "s": frozenset({Opaque()})})
        return result

    response, out = run_sqs(fn, {"n": 1})
    assert response == {"batchItemFailures": []}
    logged = the_line(out, "record processed")["result"]
    assert logged["set"] == ["<unprintable Opaque>"] * 2 and logged["plain"] == "<unprintable Opaque>"
    assert "BrokenMapping" in logged["mapping"]
    assert the_line(out, "opaque")["o"] == "<unprintable Opaque>"


@pytest.mark.parametrize(
    ("number", "logged"),
    [
        (2**64, 2**64),
        (-(2**63) - 1, -(2**63) - 1),
        (Decimal("-1e30"), -(10**30)),  # exact numbers
        (10**400, 10**400),
        (Decimal("1e100000"), "1E+100000"),  # ints of any size exact; a Decimal beyond: text
        (10**5_000, "<int of 16610 bits>"),  # more digits than Python writes
    ],
    ids=["2**64", "-2**63-1", "-1e30", "10**400", "1e100000", "10**5000"],
)
def test_big_numbers_are_exact_up_to_what_python_writes(number, logged, codec_name):
    def fn(payload: Any, context: Any) -> Any:
        log.info("big", extra={"n": number})
        return number

    response, out = run_sqs(fn, {"n": 1})
    assert response == {"batchItemFailures": []}
    assert the_line(out, "record processed")["result"] == logged
    assert the_line(out, "big")["n"] == logged


@pytest.mark.parametrize("where", ["payload", "result", "extra", "message"])
@pytest.mark.parametrize("char", ["x", "é", "💥", "\x00"])
def test_megabyte_strings_are_cut_with_a_marker(where, char, codec_name):
    big = char * MEGABYTE

    def fn(payload: Any, context: Any) -> Any:
        if where == "extra":
            log.info("big extra", extra={"big": big})
        if where == "message":
            log.info(big)
        return {"big": big} if where == "result" else None

    response, out = run_sqs(fn, {"big": big} if where == "payload" else {"n": 1})
    assert response == {"batchItemFailures": []}
    lines = parse_lines(out)  # each at most 64 KiB
    assert any("...[truncated" in json.dumps(line) for line in lines)
    assert all(len(raw.encode()) <= MAX_LINE_BYTES + 1 for raw in out)


def test_many_large_fields_still_fit_one_line(codec_name):
    fields = {f"field_{i}": "z" * 8_000 for i in range(40)}
    fields.update({f"wide_{i}": "中" * 8_000 for i in range(10)})

    def fn(payload: Any, context: Any) -> None:
        log.info("wide", extra=fields)

    _, out = run_sqs(fn, {"n": 1})
    line = the_line(out, "wide")
    assert line["trace_id"] and "...[truncated" in json.dumps(line)


def test_ten_thousand_fields_keep_the_line_own_keys(codec_name):
    def fn(payload: Any, context: Any) -> None:
        log.info("many", extra={f"k{i}": "v" * 10 for i in range(10_000)})

    _, out = run_sqs(fn, {"n": 1})
    line = the_line(out, "many")
    assert line["level"] == "INFO" and line["trace_id"] and line["fields_dropped"] > 0


@pytest.mark.parametrize(
    ("msg", "args", "expected"),
    [
        (-(10**5_000), (), "<int of 16610 bits>"),
        (Unprintable(), (), "<unprintable Unprintable>"),
        ("%s and %s", ("only one",), "%s and %s"),
        ("%d", ("not a number",), "%d"),
        ("line\nbreak\u2028", (), "line\nbreak\u2028"),
    ],
    ids=["huge-int", "unprintable", "missing-arg", "bad-arg", "line-breaks"],
)
def test_unformattable_messages_still_make_a_line(msg, args, expected, codec_name):
    def fn(payload: Any, context: Any) -> None:
        log.error(msg, *args)

    with only_lambda_kit_handler():
        response, out = run_sqs(fn, {"n": 1})
    assert response == {"batchItemFailures": []}
    [line] = [line for line in parse_lines(out) if line.get("logger") == "hostile"]
    assert line["message"] == expected and line["level"] == "ERROR"


def test_extra_fields_never_replace_the_line_own_keys(codec_name):
    forged = {
        "level": "ERROR",
        "timestamp": "yesterday",
        "trace_id": "forged",
        "function_name": "other",
        "request_id": "r",
        "logger": "someone.else",
    }

    def fn(payload: Any, context: Any) -> None:
        log.info("forging", extra=forged)

    _, out = run_sqs(fn, {"n": 1})
    lines = parse_lines(out)
    line = the_line(out, "forging")
    assert line["level"] == "INFO" and line["trace_id"] == lines[0]["trace_id"]
    assert line["function_name"] == "test-function"
    assert {key: line[f"extra_{key}"] for key in forged} == forged


def test_lines_reach_fd_1_one_per_line(capfd, codec_name):
    nasty = {"t": "a\nb\r\n\u2028\x85\x00", "s": "\ud800"}
    sqs_handler(lambda message, context: nasty)(sqs_event({"n": 1}), lambda_context())
    out = capfd.readouterr().out
    texts = out.splitlines(keepends=True)
    assert len(texts) == 2
    for text in texts:
        parse_line(text)


# --- masking, one test per rule -------------------------------------------------------------------


def secret() -> str:
    return f"V4LU3-{uuid.uuid4().hex}"  # holds no key word itself


def assert_masked(keys: list[str]) -> None:
    """Each key holds a secret in the payload (event), the result and extra fields: none is written."""
    values = {key: secret() for key in keys}
    payload = dict(values, visible="shown")

    def fn(message: Any, context: Any) -> Any:
        log.info("extra", extra=dict(values, inside={"d": dict(values)}))
        return dict(values)

    response, out = run_sqs(fn, payload)
    assert response == {"batchItemFailures": []}
    text = "".join(out)
    for value in values.values():
        assert value not in text
    received = the_line(out, "record received")["payload"]
    assert received["visible"] == "shown" and all(received[key] == "***" for key in keys)
    assert all(the_line(out, "record processed")["result"][key] == "***" for key in keys)
    extra = the_line(out, "extra")
    assert all(extra[key] == "***" and extra["inside"]["d"][key] == "***" for key in keys)


def test_masks_authorization(codec_name):
    assert_masked(["authorization", "Authorization", "AUTHORIZATION", "Proxy-Authorization"])


def test_masks_cookie_and_set_cookie(codec_name):
    assert_masked(["cookie", "Cookie", "set-cookie", "Set-Cookie", "cookies"])


def test_masks_api_keys(codec_name):
    assert_masked(["x-api-key", "X-Api-Key", "api_key", "apiKey", "apikey", "API-KEY"])


def test_masks_passwords(codec_name):
    assert_masked(["password", "Password", "passwd", "db_password", "PASSWORD"])


def test_masks_tokens(codec_name):
    assert_masked(["token", "access_token", "idToken", "refresh_token", "X-Amz-Security-Token"])


def test_masks_secrets(codec_name):
    assert_masked(["secret", "client_secret", "ClientSecret", "aws_secret_access_key"])


def test_masks_secrets_nested_in_lists_and_dicts(codec_name):
    values = [secret() for _ in range(5)]
    payload = {
        "users": [{"name": "ann", "password": values[0]}, [{"token": values[1]}]],
        "deep": {"a": {"b": {"c": [{"authorization": values[2]}]}}},
        "tuple_like": [[{"api_key": values[3]}]],
        "set_cookie_list": [{"Set-Cookie": values[4]}],
    }

    def fn(message: Any, context: Any) -> Any:
        log.info("nested", extra={"copy": message, "as_tuple": (message,)})
        return message

    response, out = run_sqs(fn, payload)
    assert response == {"batchItemFailures": []}
    text = "".join(out)
    assert not any(value in text for value in values)
    masked = {
        "users": [{"name": "ann", "password": "***"}, [{"token": "***"}]],
        "deep": {"a": {"b": {"c": [{"authorization": "***"}]}}},
        "tuple_like": [[{"api_key": "***"}]],
        "set_cookie_list": "***",  # its own key names a cookie
    }
    assert the_line(out, "record received")["payload"] == masked
    assert the_line(out, "record processed")["result"] == masked
    nested = the_line(out, "nested")
    assert nested["copy"] == masked and nested["as_tuple"] == [masked]


def test_masks_secret_keys_that_are_not_plain_str(codec_name):
    class Key(str):
        pass

    values = [secret() for _ in range(3)]

    def fn(message: Any, context: Any) -> Any:
        return {Key("password"): values[0], b"token": values[1], ("api_key",): values[2]}

    _, out = run_sqs(fn, {"n": 1})
    assert not any(value in "".join(out) for value in values)
    assert the_line(out, "record processed")["result"] == {
        "password": "***",
        "token": "***",
        "('api_key',)": "***",
    }


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_masks_api_request_headers(version, codec_name):
    values = {name: secret() for name in ("Authorization", "Cookie", "X-Api-Key", "X-Amz-Security-Token")}
    event = api_event("GET", "/me", headers=values, query={"api_key": secret()}, version=version)
    if version == "v2":
        event["cookies"] = ["session=" + values["Cookie"]]
    with captured() as out:
        response = api_handler(
            lambda request, context: {"ok": request.headers.get("authorization") is not None}
        )(event, lambda_context())
    assert json.loads(response["body"]) == {"ok": True}  # the function still sees them
    text = "".join(out)
    assert not any(value in text for value in values.values())
    assert event["queryStringParameters"]["api_key"] not in text
    received = the_line(out, "request received")
    headers = received["headers"]
    assert headers["authorization"] == headers["cookie"] == headers["x-api-key"] == "***"
    assert headers["x-amz-security-token"] == "***" and received["query"] == {"api_key": "***"}


def test_masks_api_multi_value_headers(codec_name):
    value = secret()
    event = api_event(
        version="v1", multi_value_headers={"Cookie": ["a=" + value, "b=" + value], "Accept": ["*/*"]}
    )
    with captured() as out:
        api_handler(lambda request, context: None)(event, None)
    assert value not in "".join(out)
    headers = the_line(out, "request received")["headers"]
    assert headers["cookie"] == "***" and headers["accept"] == "*/*"


def test_masks_api_json_bodies(codec_name):
    values = [secret() for _ in range(4)]
    body = {
        "user": "ann",
        "password": values[0],
        "nested": {"access_token": values[1]},
        "list": [{"secret": values[2]}],
    }

    def fn(request: Any, context: Any) -> Any:
        return {"statusCode": 201, "body": {"id": 1, "idToken": values[3]}}

    with captured() as out:
        response = api_handler(fn)(api_event("POST", "/login", body=body), lambda_context())
    assert response["statusCode"] == 201
    text = "".join(out)
    assert not any(value in text for value in values)
    received = the_line(out, "request received")["body"]
    assert received == {
        "user": "ann",
        "password": "***",
        "nested": {"access_token": "***"},
        "list": [{"secret": "***"}],
    }
    assert the_line(out, "request processed")["result"] == {"id": 1, "idToken": "***"}


def test_masks_api_json_bodies_sent_as_base64(codec_name):
    value = secret()
    event = api_event("POST", body={"password": value}, base64_body=True)
    with captured() as out:
        response = api_handler(lambda request, context: request.json)(event, None)
    assert json.loads(response["body"]) == {"password": value}  # the function still sees it
    assert value not in "".join(out)
    assert the_line(out, "request received")["body"] == {"password": "***"}
    assert the_line(out, "request processed")["result"] == {"password": "***"}


def test_masks_in_sns_envelope_bodies(codec_name):
    """SNS -> SQS without raw delivery: the inner message is what gets logged, masked."""
    from lambda_kit.testing import sns_envelope

    value = secret()
    record = sqs_record(sns_envelope({"token": value}))
    with captured() as out:
        sqs_handler(lambda message, context: message)({"Records": [record]}, None)
    assert value not in "".join(out)
    assert the_line(out, "record received")["payload"] == {"token": "***"}
    assert the_line(out, "record processed")["result"] == {"token": "***"}
