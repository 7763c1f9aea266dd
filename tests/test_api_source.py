"""api_handler's responses and requests read exactly as a client and a function see them, shape by
shape: the whole response dict (status, description, every header and where it goes, body), the
cookies a function reads, and the headers it can add to. Every assertion compares a whole value,
so a response that gains, loses or misspells anything fails."""

from __future__ import annotations

import json

import pytest
from _logs import read_lines

from lambda_kit import HTTPError, api_handler
from lambda_kit.sources.api.request import Headers
from lambda_kit.testing import api_event, lambda_context

TRACE = "t-exact-1"
SHAPES = ["v1", "http-v1", "v2", "url", "alb", "alb-multi"]


def request(shape, method="GET", path="/", **options):
    headers = {"X-Trace-Id": TRACE, **options.pop("headers", {})}
    if shape == "alb-multi":
        return api_event(method, path, version="alb", multi_value=True, headers=headers, **options)
    return api_event(method, path, version=shape, headers=headers, **options)


def answer(shape, status, headers, body, *, description=None, is_base64=False, cookies=None):
    """The exact response ``shape`` wants: ``headers`` as (name, value) pairs in order."""
    response = {"statusCode": status}
    if shape.startswith("alb"):
        response["statusDescription"] = description
    if shape == "alb-multi":
        multi = {}
        for name, value in headers:
            multi.setdefault(name, []).append(value)
        response["multiValueHeaders"] = multi
    else:
        response["headers"] = dict(headers)
    if cookies:
        response["cookies"] = cookies
    response["body"] = body
    response["isBase64Encoded"] = is_base64
    return response


def with_json_body(response):
    """The response with its body decoded (the codec in use decides the spacing)."""
    return {**response, "body": json.loads(response["body"])}


# --- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
def test_an_http_error_is_its_status_its_headers_and_a_json_error_body_exactly(shape):
    """The function's own Content-Type and trace header are replaced, never sent twice."""

    @api_handler
    def handler(request, context):
        raise HTTPError(
            429,
            "slow down",
            headers={"Retry-After": "3", "content-type": "text/plain", "x-trace-id": "spoof"},
        )

    response = handler(request(shape), None)
    headers = [("Retry-After", "3"), ("Content-Type", "application/json"), ("X-Trace-Id", TRACE)]
    expected = answer(
        shape, 429, headers, {"error": "slow down", "trace_id": TRACE}, description="429 Too Many Requests"
    )
    assert with_json_body(response) == expected


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("headers", [["Retry-After", "3"], "Retry-After: 3", 7])
def test_an_http_error_with_headers_that_are_no_mapping_still_answers_its_status(shape, headers):
    @api_handler
    def handler(request, context):
        raise HTTPError(409, "taken", headers=headers)

    response = handler(request(shape), None)
    expected = answer(
        shape,
        409,
        [("Content-Type", "application/json"), ("X-Trace-Id", TRACE)],
        {"error": "taken", "trace_id": TRACE},
        description="409 Conflict",
    )
    assert with_json_body(response) == expected


@pytest.mark.parametrize(
    ("status", "said"), [(503, "Service Unavailable"), (502, "Bad Gateway"), (499, "Error")]
)
def test_an_error_message_json_cannot_hold_is_replaced_by_the_status_phrase(status, said):
    """Never the object's text: its status's whole reason phrase, or "Error" for a status without one."""

    @api_handler
    def handler(request, context):
        raise HTTPError(status, object())  # type: ignore[arg-type]

    response = handler(request("alb"), None)
    description = f"{status} {'Unknown Status' if said == 'Error' else said}"
    expected = answer(
        "alb",
        status,
        [("Content-Type", "application/json"), ("X-Trace-Id", TRACE)],
        {"error": said, "trace_id": TRACE},
        description=description,
    )
    assert with_json_body(response) == expected


@pytest.mark.parametrize("status", [100, 101, 599])
def test_the_first_and_last_http_statuses_are_answered_as_returned(status):
    response = api_handler(lambda request, context: {"statusCode": status})(request("alb"), None)
    description = {100: "100 Continue", 101: "101 Switching Protocols", 599: "599 Unknown Status"}[status]
    assert response == answer("alb", status, [("X-Trace-Id", TRACE)], "", description=description)


# --- cookies ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "cookies"),
    [
        ("a=; ;b=2", {"a": "", "b": "2"}),  # an empty value is a cookie; an empty part is nothing
        ("a=1;;b=2", {"a": "1", "b": "2"}),  # an empty part does not end the header
        ('a=""; b="x y"; c="', {"a": "", "b": "x y", "c": '"'}),  # quotes around a value are not part of it
    ],
)
def test_the_cookie_header_reads_as_browsers_send_it(header, cookies):
    seen = []
    api_handler(lambda request, context: seen.append(request.cookies))(
        request("v1", headers={"Cookie": header}), None
    )
    assert seen == [cookies]


def test_every_cookie_set_reaches_an_alb_client_without_multi_value_headers():
    """ALB without multi-value headers takes one value per name: each Set-Cookie goes under its own
    spelling of the name (Set-Cookie, set-Cookie, ...), however many a response sets."""
    cookies = [f"c{n}={n}" for n in range(2 ** len("SetCookie"))]  # as many as there are spellings
    response = api_handler(lambda request, context: {"statusCode": 200, "cookies": cookies})(
        request("alb"), None
    )
    sent = {name: value for name, value in response["headers"].items() if name.lower() == "set-cookie"}
    assert sorted(sent.values()) == sorted(cookies) and len(sent) == len(cookies)


def test_more_cookies_than_alb_can_carry_without_multi_value_headers_is_a_500_that_says_why(capfd):
    cookies = [f"c{n}={n}" for n in range(2 ** len("SetCookie") + 1)]
    response = api_handler(lambda request, context: {"statusCode": 200, "cookies": cookies})(
        request("alb"), None
    )
    assert response["statusCode"] == 500
    assert not any(name.lower() == "set-cookie" for name in response["headers"])
    (error,) = [
        line for line in map(json.loads, capfd.readouterr().out.splitlines()) if line["level"] == "ERROR"
    ]
    assert error["error"] == (
        "513 Set-Cookie headers in one response, but an ALB target group without multi-value headers "
        "can carry at most 512 (one per case spelling of the name): turn on multi-value headers for "
        "the target group"
    )


# --- request headers ----------------------------------------------------------------------------


def test_request_headers_are_case_insensitive_however_they_are_made_or_added():
    made = Headers({"Content-Type": "text/plain", "X-N": "1"})
    assert dict(made) == {"content-type": "text/plain", "x-n": "1"}
    made["X-Added"] = "yes"
    assert dict(made) == {"content-type": "text/plain", "x-n": "1", "x-added": "yes"}
    seen = []

    @api_handler
    def handler(request, context):
        request.headers["X-Forwarded-User"] = "ada"  # as a wrapping decorator may add one
        seen.append(
            (
                request.headers.get("x-forwarded-user"),
                request.headers["X-FORWARDED-USER"],
                "x-forwarded-user" in dict(request.headers),
            )
        )

    handler(request("v2"), None)
    assert seen == [("ada", "ada", True)]


# --- responses a function shapes itself ---------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
def test_a_response_given_loosely_reaches_the_client_exactly(shape):
    """One value where a list is expected (``multiValueHeaders``, ``cookies``), numbers as header
    values and ``None`` (left out) are taken as a client would mean them."""

    @api_handler
    def handler(request, context):
        return {
            "statusCode": 201,
            "headers": {"X-Count": 2, "X-None": None},
            "multiValueHeaders": {"Vary": "Accept", "X-Dropped": [None]},
            "cookies": "id=42; Path=/",
            "body": "made",
        }

    response = handler(request(shape), None)
    cookie = [("Set-Cookie", "id=42; Path=/")]
    headers = [("X-Count", "2"), ("Vary", "Accept"), ("X-Trace-Id", TRACE)]
    if shape in ("v2", "url"):
        expected = answer(shape, 201, headers, "made", cookies=["id=42; Path=/"])
    else:
        expected = answer(shape, 201, headers[:2] + cookie + headers[2:], "made", description="201 Created")
    assert response == expected


@pytest.mark.parametrize("shape", SHAPES)
def test_a_plain_return_value_is_a_200_exactly(shape):
    """Anything but a response dict: JSON, or bytes base64-encoded."""

    @api_handler
    def handler(request, context):
        return b"\x00\x01" if request.path == "/bytes" else {"ok": True}

    as_json = handler(request(shape), None)
    assert with_json_body(as_json) == answer(
        shape,
        200,
        [("Content-Type", "application/json"), ("X-Trace-Id", TRACE)],
        {"ok": True},
        description="200 OK",
    )
    as_bytes = handler(request(shape, path="/bytes"), None)
    assert as_bytes == answer(
        shape,
        200,
        [("Content-Type", "application/octet-stream"), ("X-Trace-Id", TRACE)],
        "AAE=",
        description="200 OK",
        is_base64=True,
    )


@pytest.mark.parametrize("shape", ["v2", "url", "alb"])
@pytest.mark.parametrize(
    ("sent", "seen"),
    [
        ({"X-Num": 5, "X-Flag": True}, {"x-num": "5", "x-flag": "True"}),  # no string at all
        ({"X-Text": "a", "X-Num": 5, "X-None": None}, {"x-text": "a", "x-num": "5"}),  # some strings
        ({7: "seven", "X-Text": "a"}, {"7": "seven", "x-text": "a"}),  # a name that is no string
    ],
)
def test_request_headers_of_any_json_type_are_read_as_text(shape, sent, seen):
    """What a test or a proxy may send: every header a function reads is a lower-case name and a text."""
    event = request(shape)
    event["headers"] = sent
    got = []
    api_handler(lambda request, context: got.append(dict(request.headers)))(event, None)
    assert got == [seen]


@pytest.mark.parametrize("shape", SHAPES)
def test_a_response_with_a_bytes_body_goes_base64_with_its_default_type_exactly(shape):
    @api_handler
    def handler(request, context):
        return {"statusCode": 202, "body": b"\xff\x00"}

    expected = answer(
        shape,
        202,
        [("Content-Type", "application/octet-stream"), ("X-Trace-Id", TRACE)],
        "/wA=",
        description="202 Accepted",
        is_base64=True,
    )
    assert handler(request(shape), None) == expected


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("sent", [["n", "5"], "n=5", 5], ids=["list", "text", "number"])
def test_query_parameters_that_are_no_mapping_are_no_parameters(shape, sent):
    """What a test or a proxy may send in ``queryStringParameters``: not an object, so none."""
    event = request(shape)
    event["queryStringParameters"] = sent
    event.pop("multiValueQueryStringParameters", None)
    event.pop("rawQueryString", None)
    got = []
    response = api_handler(lambda request, context: got.append(request.query_all))(event, None)
    assert got == [{}] and response["statusCode"] == 200


@pytest.mark.parametrize("shape", ["v2", "url"])
def test_query_values_of_any_json_type_are_read_as_text_beside_the_raw_query_string(shape):
    event = request(shape, query={"n": "5", "tag": "a,b"})
    event["queryStringParameters"] = {"n": 5, "flag": True, "tag": "a,b"}
    got = []
    api_handler(lambda request, context: got.append(request.query_all))(event, None)
    assert got == [{"n": ["5"], "tag": ["a,b"]}]  # a comma in a value: the raw string tells the values apart
    event["queryStringParameters"] = {"n": 5, "flag": True}
    api_handler(lambda request, context: got.append(request.query_all))(event, None)
    assert got[1] == {"n": ["5"], "flag": ["True"]}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("sent", [["id", "7"], "id=7"], ids=["list", "text"])
def test_path_parameters_that_are_no_mapping_are_none(shape, sent):
    event = request(shape)
    event["pathParameters"] = sent
    got = []
    response = api_handler(lambda request, context: got.append(request.path_params))(event, None)
    assert got == [{}] and response["statusCode"] == 200


@pytest.mark.parametrize("shape", ["v1", "http-v1", "alb-multi"])
@pytest.mark.parametrize("sent", [["n", "5"], "n=5"], ids=["list", "text"])
def test_multi_value_query_parameters_that_are_no_mapping_are_none(shape, sent):
    event = request(shape)
    event["multiValueQueryStringParameters"] = sent
    event["queryStringParameters"] = {"q": "1"}
    got = []
    api_handler(lambda request, context: got.append(request.query_all))(event, None)
    assert got == [{"q": ["1"]}]


@pytest.mark.parametrize("shape", ["v1", "http-v1", "alb-multi"])
def test_multi_value_query_values_of_any_json_type_are_read_as_text_and_nulls_dropped(shape):
    event = request(shape)
    event["multiValueQueryStringParameters"] = {"n": [5, None, "x"], "m": [7], "s": ["a", "b"]}
    event["queryStringParameters"] = {"n": "x", "m": 7, "s": "b"}
    got = []
    api_handler(lambda request, context: got.append(request.query_all))(event, None)
    assert got == [{"n": ["5", "x"], "m": ["7"], "s": ["a", "b"]}]


@pytest.mark.parametrize("shape", ["v2", "url"])
def test_payload_2_0_reads_its_headers_only_never_a_multi_value_form(shape):
    """Payload format 2.0 has no multiValueHeaders: one a test or a proxy adds is not read."""
    event = request(shape, headers={"X-A": "3"})
    event["multiValueHeaders"] = {"X-A": ["1", "2"], "X-B": ["4"]}
    got = []
    api_handler(lambda request, context: got.append(dict(request.headers)))(event, None)
    assert "x-b" not in got[0] and got[0]["x-a"] == "3"


@pytest.mark.parametrize("shape", ["v2", "url"])
def test_a_payload_2_0_path_is_the_raw_path_else_the_contexts_else_the_root(shape):
    def path_of(raw_path, context_path):
        event = request(shape)
        for where, key, value in (
            (event, "rawPath", raw_path),
            (event["requestContext"]["http"], "path", context_path),
        ):
            if value is None:
                where.pop(key, None)
            else:
                where[key] = value
        got = []
        api_handler(lambda request, context: got.append(request.path))(event, None)
        return got[0]

    assert path_of("/from-raw", "/from-context") == "/from-raw"
    assert path_of(None, "/from-context") == "/from-context"
    assert path_of("", "/from-context") == "/from-context"
    assert path_of(None, None) == "/"


@pytest.mark.parametrize("shape", ["v1", "http-v1", "alb"])
@pytest.mark.parametrize("path", [None, ""], ids=["none", "empty"])
def test_a_request_without_a_path_is_for_the_root(shape, path):
    event = request(shape)
    event["path"] = path
    got = []
    api_handler(lambda request, context: got.append(request.path))(event, None)
    assert got == ["/"]


@pytest.mark.parametrize("found", [123, "", None], ids=["number", "empty", "none"])
def test_a_request_without_a_text_request_id_is_named_by_the_invocations(found, capfd):
    event = request("v2")
    event["requestContext"]["requestId"] = found
    context = lambda_context()
    api_handler(lambda request, context: "ok")(event, context)
    assert {line["record_id"] for line in read_lines(capfd)} == {context.aws_request_id}
    event["requestContext"]["requestId"] = "req-7"
    api_handler(lambda request, context: "ok")(event, None)  # no context: the event's own id
    assert {line["record_id"] for line in read_lines(capfd)} == {"req-7"}


def headers_seen(event) -> dict:
    got = []
    api_handler(lambda request, context: got.append(dict(request.headers)))(event, None)
    return got[0]


@pytest.mark.parametrize("shape", ["v1", "http-v1", "alb-multi"])
def test_multi_value_headers_of_any_json_type_are_read_as_text_and_the_single_form_fills_in(shape):
    event = request(shape)
    event["multiValueHeaders"] = {
        "X-Empty": [],
        "X-Text": "abc",
        "X-N": [5],
        7: ["seven"],
        True: ["yes"],
        "X-Both": ["1", None, 2],
    }
    event["headers"] = {"X-Empty": "e", "X-Text": "t", "X-N": "n", 8: "eight", False: "no", "X-Only": "o"}
    assert headers_seen(event) == {
        "x-empty": "e",
        "x-text": "t",
        "x-n": "5",
        "7": "seven",
        "true": "yes",
        "x-both": "1, 2",
        "8": "eight",
        "false": "no",
        "x-only": "o",
    }


@pytest.mark.parametrize("shape", ["v2", "url"])
def test_payload_2_0_cookies_make_the_cookie_header_only_when_none_was_sent(shape):
    event = request(shape)
    event["headers"]["cookie"] = "h=1"
    event["cookies"] = ["c=2"]
    assert headers_seen(event)["cookie"] == "h=1"
    del event["headers"]["cookie"]
    assert headers_seen(event)["cookie"] == "c=2"
    event["cookies"] = "c=2"  # not a list: no cookies
    assert "cookie" not in headers_seen(event)


def test_a_request_with_no_id_of_its_own_nor_an_invocation_id_has_an_empty_record_id(capfd):
    class Context:
        aws_request_id = ""

    event = request("v2")
    del event["requestContext"]["requestId"]
    for context in (None, Context()):
        api_handler(lambda request, context: "ok")(event, context)
        assert {line["record_id"] for line in read_lines(capfd)} == {""}


def test_a_malformed_traceparent_header_is_warned_about_as_api(capfd):
    event = request("v2", headers={"traceparent": "not-w3c"})
    del event["headers"]["x-trace-id"]
    api_handler(lambda request, context: "ok")(event, lambda_context())
    [warning] = [line for line in read_lines(capfd) if line["level"] == "WARN"]
    assert (warning["source"], warning["rejected_trace_context"]) == ("api", "'not-w3c'")
