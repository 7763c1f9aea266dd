"""A tuple returned by an ``api_handler`` function, every shape: ``(body, status)`` and ``(body,
status, headers)`` are honoured as Flask takes them; any other tuple is a 500 whose ERROR line
names the fix. Never a 200 with the tuple as its body."""

from __future__ import annotations

import json

import pytest
from _hostile import captured, parse_lines
from _http_shapes import body_bytes, header_values, kind_of, sent_headers

from lambda_kit import api_handler
from lambda_kit.testing import API_VERSIONS, api_event

SHAPES = [*API_VERSIONS, "alb-multi"]
FORMS = "return (body, status) or (body, status, headers), as Flask takes them"


def request(shape):
    traced = {"X-Trace-Id": "t-tuple"}
    if shape == "alb-multi":
        return api_event("POST", "/orders", version="alb", multi_value=True, headers=traced)
    return api_event("POST", "/orders", version=shape, headers=traced)


def returning(value):
    return api_handler(lambda request, context: value)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(
    ("returned", "status", "body", "content_type"),
    [
        (({"id": "o-1"}, 201), 201, b'{"id":"o-1"}', "application/json"),
        (([1, 2], "202"), 202, b"[1,2]", "application/json"),  # a status as digits, as in statusCode
        (("created", 201), 201, b"created", None),  # a str body goes as it is, as in a response dict
        ((b"\x00\xff", 200), 200, b"\x00\xff", "application/octet-stream"),
        ((None, 204), 204, b"", None),
    ],
)
def test_body_and_status_is_that_response(shape, returned, status, body, content_type):
    event = request(shape)
    with captured() as out:
        response = returning(returned)(event, None)
    assert response["statusCode"] == status and body_bytes(response).replace(b" ", b"") == body
    assert header_values(response, kind_of(event), "Content-Type") == ([content_type] if content_type else [])
    assert header_values(response, kind_of(event), "X-Trace-Id") == ["t-tuple"]
    processed = [line for line in parse_lines(out) if line["message"] == "request processed"]
    assert processed and processed[0]["status"] == status


@pytest.mark.parametrize("shape", SHAPES)
def test_body_status_and_headers_is_that_response_with_those_headers(shape):
    event = request(shape)
    headers = {"Location": "/orders/o-1", "X-Trace-Id": "spoof", "X-None": None}
    as_dict = returning(({"id": "o-1"}, 201, headers))
    response = as_dict(event, None)
    kind = kind_of(event)
    assert response["statusCode"] == 201 and json.loads(body_bytes(response)) == {"id": "o-1"}
    assert header_values(response, kind, "Location") == ["/orders/o-1"]
    assert header_values(response, kind, "X-Trace-Id") == ["t-tuple"]
    assert header_values(response, kind, "X-None") == []

    pairs = [("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"), ["Content-Type", "text/plain"]]
    as_pairs = returning(("", 200, pairs))
    response = as_pairs(event, None)
    assert header_values(response, kind, "Set-Cookie") == ["a=1", "b=2"]
    assert header_values(response, kind, "Content-Type") == ["text/plain"]
    sent = {name.lower() for name, _ in sent_headers(response, kind)}
    assert sent == {"set-cookie", "content-type", "x-trace-id"}


NO_STATUS = "whose second item is no HTTP status (100-599)"
NO_HEADERS = "whose headers are neither a dict nor a list of (name, value) pairs"


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(
    ("returned", "said"),
    [
        (
            (201, {"id": "o-1"}),
            f"the function returned a tuple (int, dict) {NO_STATUS} (the status goes second): {FORMS}",
        ),
        (
            ({"id": "o-1"}, {"Location": "/x"}),
            f"the function returned a tuple (dict, dict) {NO_STATUS}: {FORMS}",
        ),
        (({"id": 1}, 700), f"the function returned a tuple (dict, int) {NO_STATUS}: {FORMS}"),
        (({"id": 1}, True), f"the function returned a tuple (dict, bool) {NO_STATUS}: {FORMS}"),
        ((({"id": 1},)), f"the function returned a tuple of 1 items (dict): {FORMS}"),
        (("a", 200, {}, "x"), f"the function returned a tuple of 4 items (str, int, dict, str): {FORMS}"),
        ((), f"the function returned a tuple of 0 items (): {FORMS}"),
        (("a", 200, "Location: /x"), f"the function returned a tuple (str, int, str) {NO_HEADERS}: {FORMS}"),
        (
            ("a", 200, [("Location",)]),
            f"the function returned a tuple (str, int, list) {NO_HEADERS}: {FORMS}",
        ),
    ],
)
def test_any_other_tuple_is_a_500_whose_error_line_names_the_fix(shape, returned, said):
    event = request(shape)
    with captured() as out:
        response = returning(returned)(event, None)
    assert response["statusCode"] == 500
    assert json.loads(body_bytes(response)) == {"error": "Internal Server Error", "trace_id": "t-tuple"}
    [error] = [line for line in parse_lines(out) if line["level"] == "ERROR"]
    assert (error["message"], error["error_type"], error["error"]) == ("request failed", "TypeError", said)
    assert "o-1" not in error["error"]  # the values are never written, only their types
