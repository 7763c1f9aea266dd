"""Hostile input for api_handler, every shape (REST, HTTP API 2.0 and 1.0, Function URLs, ALB with
and without multi-value headers).

Whatever the request and whatever the function raises, the response is exactly the shape the event
asks for, with an int ``statusCode``, a str body (JSON ``{"error", "trace_id"}`` on errors) and the
trace header; no response holds an exception's message, a traceback or an internal path. A hostile
trace header never becomes the trace id and never reaches a log line unescaped. Reading the request
(query, cookies, body, bytes, JSON) never fails but with an ``HTTPError``; binary bodies, repeated
query parameters and cookies come through whole.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any
from unittest.mock import MagicMock

import pytest
from _hostile import CODECS, HOSTILE, captured, of_level, parse_lines, using_codec
from _http_shapes import body_bytes, header_values, kind_of, sent_headers
from hypothesis import given
from hypothesis import strategies as st

from lambda_kit import HTTPError, UnsupportedEvent, api_handler, current_trace_id
from lambda_kit.testing import API_VERSIONS, api_event, lambda_context
from lambda_kit.trace import is_valid_id

SHAPES = [*API_VERSIONS, "alb-multi"]


def request_for(version: str, method: str = "GET", path: str = "/p", **options: Any) -> dict[str, Any]:
    if version == "alb-multi":
        return api_event(method, path, version="alb", multi_value=True, **options)
    return api_event(method, path, version=version, **options)


FRESH_ID = re.compile(r"[0-9a-f]{32}")


def xray_root(event):
    """The X-Ray trace id of the request's ``X-Amzn-Trace-Id`` (as the AWS X-Ray SDK parses it),
    else None: lambda_kit reads it after its own header and before making a fresh id."""
    from aws_xray_sdk.core.models.trace_header import TraceHeader

    for headers in (
        event.get("headers") or {},
        {k: v[-1] for k, v in (event.get("multiValueHeaders") or {}).items() if v},
    ):
        for name, value in headers.items():
            if name.lower() == "x-amzn-trace-id":
                return TraceHeader.from_header_str(value).root
    return None


SECRET = "S3CR3T-7f1c"
LEAKS = (SECRET, "/var/task", "/opt/python", "site-packages", "lambda_kit/", "Traceback", 'File "', "hunter2")


# --- functions that misbehave in every way ----------------------------------------------------


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError(f"{SECRET} in __str__")


def _raise(error: BaseException) -> Any:
    raise error


BEHAVIOURS: dict[str, Any] = {
    "ok": lambda request, context: {"ok": True, "trace_id": current_trace_id()},
    "echo_json": lambda request, context: {"got": request.json},
    "runtime_error": lambda r, c: _raise(RuntimeError(f"db at /var/task/app.py password=hunter2 {SECRET}")),
    "key_error": lambda r, c: _raise(KeyError(f"/opt/python/lib/{SECRET}")),
    "os_error": lambda r, c: _raise(FileNotFoundError(2, "No such file", f"/var/task/{SECRET}.json")),
    "chained": lambda r, c: _raise_chained(),
    "unprintable": lambda r, c: _raise(Unprintable()),
    "http_400": lambda r, c: _raise(HTTPError(400, "bad input")),
    "http_404_headers": lambda r, c: _raise(
        HTTPError(404, "no such thing", {"X-Trace-Id": "forged\n", "Retry": "1"})
    ),
    "http_503": lambda r, c: _raise(HTTPError(503, "try later")),
    "http_out_of_range": lambda r, c: _raise(HTTPError(200, "not an error status")),
    "http_surrogate": lambda r, c: _raise(HTTPError(422, "bad \ud800 value")),
    "http_object_message": lambda r, c: _raise(HTTPError(409, object())),  # type: ignore[arg-type]
    "unserializable": lambda request, context: {"when": object()},
    "surrogate_result": lambda request, context: {"text": "\ud800"},
    "status_dict": lambda r, c: {
        "statusCode": 201,
        "headers": {"x-trace-id": "forged\r\nX: 1"},
        "body": {"a": 1},
    },
    "status_dict_bad_headers": lambda r, c: {"statusCode": 201, "headers": {1: "x"}, "body": "ok"},
    "none": lambda request, context: None,
    "read_everything": lambda r, c: {
        "n": [
            len(r.query_all),
            len(r.query),
            len(r.cookies),
            len(r.path_params),
            len(r.body_bytes),
            len(r.body),
            type(r.json).__name__,
            len(r.headers),
            r.shape,
        ]
    },
    "bytes_body": lambda r, c: {
        "statusCode": 200,
        "body": r.body_bytes,
        "cookies": ["k=v"],
        "multiValueHeaders": {"X": ["1", "2"]},
    },
    "bad_status": lambda r, c: {"statusCode": "teapot"},
}
SERVER_ERRORS = {
    "runtime_error",
    "key_error",
    "os_error",
    "chained",
    "unprintable",
    "unserializable",
    "surrogate_result",
    "bad_status",
}


def _raise_chained() -> Any:
    try:
        raise OSError(f"/var/task/{SECRET}")
    except OSError as cause:
        raise ValueError(f"wrapped {SECRET}") from cause


def check_response(response: Any, event: Any, trace_header: str = "X-Trace-Id") -> tuple[int, str, Any]:
    """The response's shape, exactly the one ``event`` asks for; returns (status, trace id,
    decoded body or None)."""
    assert isinstance(response, dict)
    status = response["statusCode"]
    assert type(status) is int and 100 <= status <= 599, status
    [trace_id] = header_values(response, kind_of(event), trace_header)
    assert is_valid_id(trace_id), trace_id
    body = response.get("body")
    assert isinstance(body, str)
    body.encode("utf-8")  # no lone surrogates: API Gateway must be able to send it
    text = json.dumps(response, ensure_ascii=False)
    for leak in LEAKS:
        assert leak not in text, f"{leak!r} leaked into the response: {text[:500]}"
    decoded = None
    if status >= 400:
        decoded = json.loads(body)
        assert isinstance(decoded, dict) and set(decoded) == {"error", "trace_id"}, decoded
        assert isinstance(decoded["error"], str) and decoded["error"]
        assert decoded["trace_id"] == trace_id
    return status, trace_id, decoded


# --- strategies --------------------------------------------------------------------------------

NASTY = [
    "",
    "\x00",
    "\n",
    "\r\n",
    '","level":"ERROR',
    "\ud800",
    "\u2028",
    "é",
    "x" * 300,
    "{",
    '{"a":',
    "[1,]",
]
nasty_text = st.one_of(st.text(max_size=20), st.sampled_from(NASTY))
json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | nasty_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(nasty_text, inner, max_size=3),
    max_leaves=8,
)
HOSTILE_TRACE_IDS = [
    "abc\ndef",
    "abc\r\nX-Injected: 1",
    '","level":"ERROR","trace_id":"forged',
    '{"trace_id": "x"}',
    "x" * 10_240,
    "ünïcødé-ïd",
    "a\x00b",
    "\x1b[31m",
    "id with spaces",
    "",
    " ",
    "x" * 129,
    "<script>",
    "\ud800",
    "a\u2028b",
    "tab\there",
    "semi;ok;but\nnot",
]
trace_values = st.one_of(
    st.sampled_from(HOSTILE_TRACE_IDS), st.text(max_size=40), st.sampled_from(["T-1", "a:b/c"])
)
bodies = st.one_of(
    st.none(),
    json_value.map(json.dumps),
    nasty_text,
    st.tuples(json_value, st.integers(0, 30)).map(lambda t: json.dumps(t[0])[: t[1]]),
    st.sampled_from(["x" * (1024 * 1024 + 1), json.dumps({"big": "é" * 600_000}, ensure_ascii=False)]),
    json_value,  # not even a string
)
content_types = st.sampled_from(
    [
        None,
        "application/json",
        "application/json; charset=utf-8",
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/problem+json",
        "APPLICATION/JSON",
        "multipart/form-data; boundary=x",
        "",
    ]
)
API_PATHS = [
    ("headers",),
    ("multiValueHeaders",),
    ("body",),
    ("isBase64Encoded",),
    ("requestContext",),
    ("requestContext", "requestId"),
    ("requestContext", "http"),
    ("httpMethod",),
    ("rawPath",),
    ("path",),
    ("queryStringParameters",),
    ("multiValueQueryStringParameters",),
    ("pathParameters",),
    ("cookies",),
    ("rawQueryString",),
    ("requestContext", "elb"),
    ("requestContext", "domainName"),
    ("version",),
]
query_text = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
    st.sampled_from([t for t in NASTY if "\ud800" not in t]),
)  # a URL holds no lone surrogate
queries = st.none() | st.dictionaries(
    query_text.filter(bool), st.one_of(query_text, st.lists(query_text, min_size=1, max_size=3)), max_size=4
)


@st.composite
def api_events(draw: Any) -> Any:
    kind = draw(st.sampled_from(["good", "good", "mutated", "junk"]))
    if kind == "junk":
        return kind, draw(json_value)
    headers = {}
    if draw(st.booleans()):
        headers[draw(st.sampled_from(["X-Trace-Id", "x-trace-id", "X-TRACE-ID"]))] = draw(trace_values)
    content_type = draw(content_types)
    if content_type is not None:
        headers["Content-Type"] = content_type
    if draw(st.booleans()):
        headers["Cookie"] = draw(nasty_text)
    shape = draw(st.sampled_from(SHAPES))
    event = request_for(
        shape, draw(st.sampled_from(["GET", "POST", "put"])), headers=headers, query=draw(queries)
    )
    event["body"] = draw(bodies)
    if draw(st.booleans()) and isinstance(event["body"], str):
        if draw(st.booleans()):
            event["body"] = base64.b64encode(event["body"].encode("utf-8", "surrogatepass")).decode()
        event["isBase64Encoded"] = True
    if kind == "mutated":
        for path, junk, delete in draw(
            st.lists(st.tuples(st.sampled_from(API_PATHS), json_value, st.booleans()), min_size=1, max_size=3)
        ):
            target = event
            for key in path[:-1]:
                target = target.get(key) if isinstance(target, dict) else None
            if isinstance(target, dict):
                if delete:
                    target.pop(path[-1], None)
                else:
                    target[path[-1]] = junk
    return kind, event


# --- the property -------------------------------------------------------------------------------


@HOSTILE
@given(
    event=api_events(),
    behaviour=st.sampled_from(sorted(BEHAVIOURS)),
    context=st.sampled_from([None, "ctx", "mock"]),
    codec_name=st.sampled_from(CODECS),
)
def test_api_handler_answers_any_request_without_leaking(event, behaviour, context, codec_name):
    """Any HTTP request gets a well-formed answer in its shape; anything else is refused, never
    answered 200."""
    kind, event = event
    calls = []
    handler = api_handler(
        lambda request, context: calls.append(request) or BEHAVIOURS[behaviour](request, context)
    )
    ctx = {None: None, "ctx": lambda_context(), "mock": MagicMock()}[context]
    with using_codec(codec_name), captured() as out:
        try:
            response = handler(event, ctx)
        except UnsupportedEvent as refused:
            assert kind != "good" and calls == []
            [line] = parse_lines(out)
            assert line["level"] == "ERROR" and line["error_type"] == "UnsupportedEvent"
            assert str(refused).startswith("api_handler cannot process ")
            return
    status, trace_id, body = check_response(response, event)
    lines = parse_lines(out)
    assert lines and all(line["trace_id"] == trace_id for line in lines)
    errors = of_level(lines, "ERROR")
    if status >= 500:
        [error] = errors  # exactly one ERROR line, with the details the response does not carry
        assert error["status"] == status and "error" in error
    else:
        assert errors == []
    if status == 413:
        assert body["error"].startswith("request body is larger than")
    if behaviour in SERVER_ERRORS and status != 413:
        assert status == 500 and body["error"] == "Internal Server Error"
    if behaviour == "read_everything":  # reading the request fails only as a client error
        assert status in (200, 400, 413, 415), (status, body)
    if behaviour == "bytes_body" and status == 200:
        raw = event["body"]
        text = "" if raw is None else raw if isinstance(raw, str) else str(raw)
        sent = (
            base64.b64decode(text)
            if event.get("isBase64Encoded") is True and text
            else text.encode("utf-8", "surrogatepass")
        )
        shape = kind_of(event)
        assert response["isBase64Encoded"] is True and body_bytes(response) == sent
        assert header_values(response, shape, "set-cookie") == ["k=v"]
        assert sorted(
            v for value in header_values(response, shape, "x") for v in value.replace(", ", ",").split(",")
        ) == ["1", "2"]


# --- no internals in any response ---------------------------------------------------------------


@pytest.mark.parametrize("codec_name", CODECS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("behaviour", sorted(SERVER_ERRORS))
def test_server_errors_say_nothing_of_the_exception(behaviour, codec_name, shape):
    event = request_for(shape, "POST", body={"a": 1})
    with using_codec(codec_name), captured() as out:
        response = api_handler(BEHAVIOURS[behaviour])(event, lambda_context())
    status, trace_id, body = check_response(response, event)
    assert (status, body) == (500, {"error": "Internal Server Error", "trace_id": trace_id})
    [error] = of_level(parse_lines(out), "ERROR")  # the details go to the log, with the trace id
    assert error["trace_id"] == trace_id and error["error_type"]


@pytest.mark.parametrize(
    ("behaviour", "status", "message"),
    [
        ("http_400", 400, "bad input"),
        ("http_404_headers", 404, "no such thing"),
        ("http_503", 503, "try later"),
        ("http_surrogate", 422, "bad ? value"),
        ("http_object_message", 409, "Conflict"),
        ("http_out_of_range", 500, "not an error status"),  # not an error status: a server error
    ],
)
@pytest.mark.parametrize("codec_name", CODECS)
@pytest.mark.parametrize("shape", SHAPES)
def test_http_errors_answer_their_status_and_message(behaviour, status, message, codec_name, shape):
    event = request_for(shape)
    with using_codec(codec_name), captured():
        response = api_handler(BEHAVIOURS[behaviour])(event, None)
    got_status, trace_id, body = check_response(response, event)
    assert (got_status, body["error"]) == (status, message)


# --- 413, 415, 400 --------------------------------------------------------------------------------


def called_with(calls: list[Any]) -> Any:
    def handler(request: Any, context: Any) -> Any:
        calls.append(request)
        return {"got": request.json}

    return handler


@pytest.mark.parametrize("version", SHAPES)
@pytest.mark.parametrize(
    ("body", "base64_body", "max_body"),
    [
        ("x" * (1024 * 1024 + 1), False, None),
        ("x" * (1024 * 1024 + 1), True, None),
        ("é" * (512 * 1024 + 1), False, None),  # counted in bytes: 1 MiB + 2 bytes of UTF-8
        ('{"a": "' + "y" * 20 + '"}', False, 16),
    ],
)
def test_oversized_body_is_413_and_never_reaches_the_function(version, body, base64_body, max_body):
    calls: list[Any] = []
    options = {} if max_body is None else {"max_body": max_body}
    event = request_for(version, "POST", body=body, base64_body=base64_body)
    with captured() as out:
        response = api_handler(**options)(called_with(calls))(event, lambda_context())
    status, trace_id, decoded = check_response(response, event)
    assert status == 413 and calls == []
    assert decoded["error"].startswith("request body is larger than")
    lines = parse_lines(out)
    assert of_level(lines, "ERROR") == [] and of_level(lines, "WARN")[0]["status"] == 413
    assert all(len(text.encode()) <= 64 * 1024 for text in out)


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "application/xml",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=b",
        "application/jsonp",
        "text/json-ish",
        "application/json-patch",
    ],
)
@pytest.mark.parametrize("version", SHAPES)
def test_wrong_content_type_is_415_on_json(content_type, version):
    event = request_for(version, "POST", body={"a": 1}, headers={"Content-Type": content_type})
    with captured():
        response = api_handler(called_with([]))(event, None)
    status, trace_id, decoded = check_response(response, event)
    assert status == 415 and decoded["error"] == "Content-Type must be application/json"


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json",
        "application/json; charset=utf-8",
        "APPLICATION/JSON",
        "application/problem+json",
    ],
)
def test_json_content_types_are_accepted(content_type):
    event = api_event("POST", body={"a": 1}, headers={"content-type": content_type})
    with captured():
        response = api_handler(called_with([]))(event, None)
    assert check_response(response, event)[0] == 200 and json.loads(response["body"]) == {"got": {"a": 1}}


@pytest.mark.parametrize("codec_name", CODECS)
@pytest.mark.parametrize(
    "body", ["{", '{"a": ', "", "not json", "[1,]", "NaN-ish", '{"a": 1} trailing', "\x00", "[" * 5_000]
)
def test_bad_json_is_400_and_not_a_server_error(body, codec_name):
    event = api_event("POST", body=body)
    with using_codec(codec_name), captured() as out:
        response = api_handler(called_with([]))(event, lambda_context())
    status, trace_id, decoded = check_response(response, event)
    assert status == 400 and decoded == {"error": "request body is not valid JSON", "trace_id": trace_id}
    assert of_level(parse_lines(out), "ERROR") == []


def test_bad_base64_body_is_400_not_a_crash():
    event = api_event("POST", body="{}")
    event.update(body="!!not base64!!", isBase64Encoded=True)
    with captured():
        response = api_handler(called_with([]))(event, None)
    assert check_response(response, event)[0] == 400


# --- trace-id header injection ------------------------------------------------------------------


@pytest.mark.parametrize("codec_name", CODECS)
@pytest.mark.parametrize("version", SHAPES)
# ids of letters, digits and "_" only: a repr() of these strings comes out escaped differently in a second
# pytest session of one process (make mutate's fork server), where the test would not be found
@pytest.mark.parametrize(
    "value", HOSTILE_TRACE_IDS, ids=lambda v: re.sub(r"[^A-Za-z0-9]+", "_", v[:24]) or "empty"
)
def test_hostile_trace_header_never_becomes_the_trace_id_nor_a_raw_log_line(value, version, codec_name):
    event = request_for(version, "GET", "/p", headers={"X-Trace-Id": value})
    handler = api_handler(lambda request, context: {"seen": current_trace_id()})
    with using_codec(codec_name), captured() as out:
        first = handler(event, lambda_context())
        second = handler(event, lambda_context())
    status, trace_id, _ = check_response(first, event)
    xray = xray_root(event)
    assert status == 200 and trace_id != value
    assert json.loads(first["body"]) == {"seen": trace_id}  # the function saw the same id
    if xray is None:
        assert FRESH_ID.fullmatch(trace_id)
        assert check_response(second, event)[1] != trace_id  # fresh each time, not derived from the value
    else:  # the next place in order: the request's X-Ray trace (ALB sends one)
        assert trace_id == xray == check_response(second, event)[1]
    lines = parse_lines(out)
    assert [line["level"] for line in lines] == ["WARN", "INFO", "INFO"] * 2
    assert {line["trace_id"] for line in lines[:3]} == {trace_id}
    warning = lines[0]
    assert warning["rejected_trace_id"] == ascii(value)[:256]  # escaped, bounded
    for text in out:
        if any(char in value for char in '\n\r"\x00\x1b\u2028\ud800'):
            assert value not in text  # never written unescaped


@HOSTILE
@given(
    value=st.text(min_size=1, max_size=200),
    header=st.sampled_from(["X-Trace-Id", "x-trace-id", "X-TRACE-ID"]),
    version=st.sampled_from(SHAPES),
    codec_name=st.sampled_from(CODECS),
)
def test_any_trace_header_is_used_only_when_valid(value, header, version, codec_name):
    event = request_for(version, "GET", "/p", headers={header: value})
    with using_codec(codec_name), captured() as out:
        response = api_handler(lambda request, context: None)(event, None)
    status, trace_id, _ = check_response(response, event)
    xray = xray_root(event)
    assert (
        trace_id == value
        if is_valid_id(value)
        else (trace_id == xray if xray else FRESH_ID.fullmatch(trace_id))
    )
    lines = parse_lines(out)
    assert all(line["trace_id"] == trace_id for line in lines)
    assert len(lines) == (2 if is_valid_id(value) else 3)


def test_custom_trace_header_is_the_one_read_and_answered():
    event = api_event(headers={"X-Request-Trace": "evil\nvalue", "X-Trace-Id": "T-1"})
    with captured():
        response = api_handler(trace_header="X-Request-Trace")(lambda r, c: None)(event, None)
    status, trace_id, _ = check_response(response, event, "X-Request-Trace")
    assert FRESH_ID.fullmatch(trace_id)


def test_multi_value_trace_header_is_not_a_trace_id():
    event = api_event(version="v1", multi_value_headers={"X-Trace-Id": ["T-1", "T-2"]})
    with captured():
        response = api_handler(lambda r, c: None)(event, None)
    assert FRESH_ID.fullmatch(check_response(response, event)[1])


# --- what every shape must carry through whole ---------------------------------------------------------


@HOSTILE
@given(
    shape=st.sampled_from(SHAPES),
    query=st.dictionaries(
        st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8),
        st.lists(query_text, min_size=1, max_size=3),
        max_size=4,
    ),
)
def test_every_value_of_every_query_parameter_arrives_decoded(shape, query):
    """``query_all`` is what the client sent, whatever it holds (``&``, ``=``, ``+``, ``%``, non-ASCII)."""
    seen = []
    event = request_for(shape, query=query)
    with captured():
        response = api_handler(lambda request, context: seen.append((request.query_all, request.query)))(
            event, None
        )
    assert check_response(response, event)[0] == 200
    expected = {name: values[-1:] if shape == "alb" else values for name, values in query.items()}
    assert seen == [(expected, {name: values[-1] for name, values in query.items()})]


cookie_part = st.text(
    st.characters(min_codepoint=0x21, max_codepoint=0x7E, blacklist_characters=';="\\,'),
    min_size=1,
    max_size=10,
)


@HOSTILE
@given(shape=st.sampled_from(SHAPES), cookies=st.dictionaries(cookie_part, cookie_part, max_size=5))
def test_cookies_arrive_whole_on_every_shape(shape, cookies):
    seen = []
    event = request_for(shape, cookies=cookies)
    with captured():
        api_handler(lambda request, context: seen.append(request.cookies))(event, None)
    assert seen == [cookies]


@HOSTILE
@given(
    shape=st.sampled_from(SHAPES),
    data=st.binary(max_size=300),
    content_type=st.sampled_from(["image/png", "application/octet-stream", None]),
)
def test_binary_bodies_go_through_both_ways_byte_for_byte(shape, data, content_type):
    headers = {"Content-Type": content_type} if content_type else None
    event = request_for(shape, "PUT", body=data, headers=headers)
    with captured():
        response = api_handler(lambda request, context: request.body_bytes[::-1])(event, None)
    status, _, _ = check_response(response, event)
    assert status == 200 and response["isBase64Encoded"] is True and body_bytes(response) == data[::-1]
    assert header_values(response, kind_of(event), "content-type") == ["application/octet-stream"]


@HOSTILE
@given(
    shape=st.sampled_from(SHAPES),
    # what HTTP takes in a header (a cookie HTTP forbids: tests/test_hostile_responses.py)
    cookies=st.lists(
        st.text(st.characters(codec="utf-8", exclude_categories=["Cc"]), min_size=1, max_size=30),
        min_size=1,
        max_size=4,
    ),
    status=st.integers(100, 599),
)
def test_every_cookie_a_function_sets_reaches_the_client_in_its_shape(shape, cookies, status):
    event = request_for(shape)
    with captured():
        response = api_handler(lambda request, context: {"statusCode": status, "cookies": cookies})(
            event, None
        )
    sent_headers(response, kind_of(event))
    assert response["statusCode"] == status
    assert sorted(header_values(response, kind_of(event), "set-cookie")) == sorted(cookies)


# --- bodies in the log: masked exactly when they parse as JSON ---------------------------------------

DEEP = {
    "user": "ann",
    "profile": {"items": [{"name": "n", "password": "pw-S3CR3T-1"}], "nested": {"token": "tk-S3CR3T-2"}},
}
MASKED = {"user": "ann", "profile": {"items": [{"name": "n", "password": "***"}], "nested": {"token": "***"}}}
PREFIXES = {
    "none": "",
    "spaces": "   ",
    "newline": "\n",
    "crlf": "\r\n",
    "tab": "\t",
    "bom": "\ufeff",
    "bom-then-space": "\ufeff \n",
}


def logged(out: list[str], message: str) -> dict[str, Any]:
    lines = parse_lines(out)
    assert not any("S3CR3T" in text for text in out), [text for text in out if "S3CR3T" in text]
    [line] = [line for line in lines if line["message"] == message]
    return line


@pytest.mark.parametrize("codec_name", CODECS)
@pytest.mark.parametrize("prefix", sorted(PREFIXES))
@pytest.mark.parametrize("shape", SHAPES)
def test_a_json_request_body_is_masked_and_read_whatever_leads_it(shape, prefix, codec_name):
    """The ``request received`` line shows the body's JSON value, masked, exactly when ``request.json``
    parses it: the same rule, under every codec, text or base64."""
    text = PREFIXES[prefix] + json.dumps(DEEP) + " \n"
    for options in ({"body": text}, {"body": text.encode(), "headers": {"content-type": "application/json"}}):
        event = request_for(shape, "POST", **options)
        with using_codec(codec_name), captured() as out:
            response = api_handler(lambda request, context: request.json["user"])(event, lambda_context())
        assert (response["statusCode"], json.loads(body_bytes(response))) == (200, "ann")
        assert logged(out, "request received")["body"] == MASKED


@pytest.mark.parametrize("codec_name", CODECS)
@pytest.mark.parametrize("prefix", sorted(PREFIXES))
@pytest.mark.parametrize("shape", SHAPES)
def test_a_json_response_body_is_masked_whatever_its_leading_whitespace_or_bom(shape, prefix, codec_name):
    text = PREFIXES[prefix] + json.dumps(DEEP)
    for returned in (
        {"statusCode": 200, "body": text},
        {"statusCode": 200, "body": text.encode()},
        (text, 201),
    ):
        handler = api_handler(lambda request, context, r=returned: r)
        with using_codec(codec_name), captured() as out:
            response = handler(request_for(shape), lambda_context())
        assert response["statusCode"] in (200, 201)
        assert "S3CR3T" in body_bytes(response).decode()  # sent as the function gave it
        assert logged(out, "request processed")["result"] == MASKED


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml"]
)
def test_a_json_body_of_another_content_type_is_masked_too(content_type):
    """``request.json`` refuses it (415), but it parses as JSON by the same rule: the log masks it."""
    event = api_event("POST", body="\ufeff " + json.dumps(DEEP), headers={"content-type": content_type})
    with captured() as out:
        response = api_handler(lambda request, context: request.json)(event, None)
    assert response["statusCode"] == 415
    assert logged(out, "request received")["body"] == MASKED


@pytest.mark.parametrize(
    "body", ["password=S3CR3T", "not json {", "{'password': 'S3CR3T'}", "[1, 2", "\ufeff\ufeff[]"]
)
def test_a_body_that_is_not_json_is_logged_as_its_text(body):
    """Not JSON, and no form: the text as sent (a reader sees what came), and ``request.json`` answers 400."""
    event = api_event("POST", body=body)
    with captured() as out:
        response = api_handler(lambda request, context: request.json)(event, None)
    assert response["statusCode"] == 400
    [received] = [line for line in parse_lines(out) if line["message"] == "request received"]
    assert received["body"] == body


def test_a_form_body_with_leading_whitespace_is_masked_as_fields():
    form = {"content-type": "application/x-www-form-urlencoded"}
    event = api_event("POST", body="  user=ann&password=S3CR3T", headers=form)
    with captured() as out:
        api_handler(lambda request, context: None)(event, None)
    assert logged(out, "request received")["body"] == {"  user": "ann", "password": "***"}
