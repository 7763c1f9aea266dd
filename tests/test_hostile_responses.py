"""What an ``api_handler`` function returns that HTTP, Lambda or a front door would refuse, every shape
(REST v1, HTTP API v2, Function URL, ALB with and without multi-value headers).

Header names are HTTP tokens and header values (cookies and ALB's ``statusDescription`` included)
hold no control character, or the answer is a 500 with an ERROR line naming the header, and
nothing of it is sent on. A response over Lambda's 6 MB limit, as its runtime encodes it, is a 500
with an ERROR line, never "ok". A tuple is a tuple and a dict a dict whatever their class (a named
tuple, an ``OrderedDict``), on the response and in the log alike; ``HEAD`` never carries a body,
errors included; a ``None`` cookie is dropped as a ``None`` header is; a pydantic model is written
as its JSON dump, as a dataclass is.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import json
import string
import subprocess
import sys
import typing
from collections import namedtuple
from typing import Any

import pytest
from _hostile import HOSTILE, captured, parse_lines
from _http_shapes import body_bytes, header_values, json_body, kind_of, sent_headers
from hypothesis import example, given
from hypothesis import strategies as st

from lambda_kit import HTTPError, Router, api_handler
from lambda_kit.testing import API_VERSIONS, api_event

SHAPES = [*API_VERSIONS, "alb-multi"]
LAMBDA_LIMIT = 6_291_556  # "Response payload size exceeded maximum allowed payload size (6291556 bytes)"
OURS = {"content-type", "x-trace-id"}  # the headers every answer here carries besides the function's


def request(shape: str, method: str = "GET", path: str = "/p", **options: Any) -> dict[str, Any]:
    options.setdefault("headers", {"X-Trace-Id": "t-resp"})
    if shape == "alb-multi":
        return api_event(method, path, version="alb", multi_value=True, **options)
    return api_event(method, path, version=shape, **options)


def answered(shape: str, function: Any, method: str = "GET", **options: Any) -> tuple[dict, list[dict]]:
    """(the response, the log lines) of one request to ``api_handler(function)``."""
    event = request(shape, method, **options)
    with captured() as out:
        response = api_handler(function)(event, None)
    sent_headers(response, kind_of(event))  # the shape the front door documents, whatever happened
    return response, parse_lines(out)


def refused(response: dict, lines: list[dict], named: str) -> None:
    """A 500 that says nothing of what was refused, and one ERROR line that names it."""
    assert response["statusCode"] == 500
    assert json.loads(body_bytes(response)) == {"error": "Internal Server Error", "trace_id": "t-resp"}
    [error] = [line for line in lines if line["level"] == "ERROR"]
    assert (error["message"], error["error_type"], error["status"]) == ("request failed", "ValueError", 500)
    assert named in error["error"] and "\n" not in error["error"]
    assert not [line for line in lines if line["message"] == "request processed"]


# --- header names and values ----------------------------------------------------------------------

TCHARS = set(string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~")  # RFC 9110 5.6.2


def is_token(name: str) -> bool:
    return bool(name) and set(name) <= TCHARS


def is_field_value(value: str) -> bool:
    """RFC 9110 5.5: visible characters, spaces and tabs (no control character but the tab); and text
    UTF-8 can carry (no lone surrogate)."""
    return not any(
        (ord(char) < 32 and char != "\t") or char == "\x7f" or 0xD800 <= ord(char) <= 0xDFFF for char in value
    )


# Names and values made mostly of what HTTP allows, with what it forbids mixed in.
NAME = st.one_of(
    st.text(st.sampled_from(sorted(TCHARS)), min_size=1, max_size=12),
    st.text(st.sampled_from(sorted(TCHARS) + [" ", ":", "\r", "\n", "\x00", "é", "(", "\t"]), max_size=12),
)
VALUE = st.text(
    st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(["\r", "\n", "\x00", "\t", " ", "\x7f", "\x1b", "\ud800", "\x85"]),
    ),
    max_size=20,
)


def headers_returned(way: str, name: str, value: str) -> Any:
    """A function that sends header ``name: value`` the way ``way`` says."""
    if way == "headers":
        return lambda request, context: {"statusCode": 201, "headers": {name: value}, "body": "ok"}
    if way == "multiValueHeaders":
        return lambda request, context: {"statusCode": 201, "multiValueHeaders": {name: [value]}}
    if way == "tuple-dict":
        return lambda request, context: ("ok", 201, {name: value})
    if way == "tuple-pairs":
        return lambda request, context: ("ok", 201, [(name, value), ("X-Other", "1")])

    def raising(request: Any, context: Any) -> Any:
        raise HTTPError(409, "taken", headers={name: value})

    return raising


WAYS = ["headers", "multiValueHeaders", "tuple-dict", "tuple-pairs", "http-error"]


@HOSTILE
@given(shape=st.sampled_from(SHAPES), way=st.sampled_from(WAYS), name=NAME, value=VALUE)
@example(shape="v2", way="headers", name="Location", value="/next\r\nSet-Cookie: session=attacker")
@example(shape="v1", way="tuple-pairs", name="X A", value="1")
@example(shape="alb", way="http-error", name="X:B", value="1")
@example(shape="url", way="multiValueHeaders", name="", value="1")
@example(shape="alb-multi", way="tuple-dict", name="X-Id", value="a\x00b")
def test_a_header_http_forbids_is_a_500_naming_it_and_never_sent_on(shape, way, name, value):
    if name.lower() in OURS:  # set by lambda_kit itself, whatever the function says
        return
    response, lines = answered(shape, headers_returned(way, name, value))
    kind = kind_of(request(shape))
    if is_token(name) and is_field_value(value):
        assert response["statusCode"] == (409 if way == "http-error" else 201)
        assert value in header_values(response, kind, name)
        return
    refused(response, lines, ascii(name[:60]))
    assert {sent.lower() for sent, _ in sent_headers(response, kind)} == OURS


@HOSTILE
@given(shape=st.sampled_from(SHAPES), cookies=st.lists(VALUE, min_size=1, max_size=3))
@example(shape="v2", cookies=["a=1", "session=x\r\nX-Evil: 1"])
@example(shape="alb", cookies=["a=1\x00"])
def test_a_cookie_http_forbids_is_a_500_naming_set_cookie(shape, cookies):
    response, lines = answered(shape, lambda request, context: {"statusCode": 200, "cookies": cookies})
    kind = kind_of(request(shape))
    if all(is_field_value(cookie) for cookie in cookies):
        assert response["statusCode"] == 200
        assert sorted(header_values(response, kind, "Set-Cookie")) == sorted(cookies)
        return
    refused(response, lines, "'Set-Cookie'")
    assert header_values(response, kind, "Set-Cookie") == []


@HOSTILE
@given(shape=st.sampled_from(["alb", "alb-multi"]), description=st.builds("200 OK{}".format, VALUE))
@example(shape="alb", description="200 OK\r\nSet-Cookie: session=attacker")
def test_an_alb_status_description_http_forbids_is_a_500(shape, description):
    returned = {"statusCode": 200, "statusDescription": description, "body": "ok"}
    response, lines = answered(shape, lambda request, context: returned)
    if is_field_value(description):
        assert (response["statusCode"], response["statusDescription"]) == (200, description)
        return
    refused(response, lines, "statusDescription")
    assert response["statusDescription"] == "500 Internal Server Error"


@pytest.mark.parametrize("shape", SHAPES)
def test_a_header_lambda_kit_sets_itself_is_never_refused_for_what_the_function_gave(shape):
    """The trace header a function or an ``HTTPError`` gives is replaced by the request's, so a bad
    value there is never sent, and the answer stands."""
    forged = {"X-Trace-Id": "forged\r\nX-Evil: 1"}
    response, _ = answered(shape, lambda request, context: ("ok", 201, forged))
    kind = kind_of(request(shape))
    assert response["statusCode"] == 201 and header_values(response, kind, "X-Trace-Id") == ["t-resp"]

    def raising(request: Any, context: Any) -> Any:
        raise HTTPError(404, "no such thing", headers=forged)

    response, _ = answered(shape, raising)
    assert response["statusCode"] == 404


def test_a_trace_header_that_is_no_header_name_is_never_sent():
    """A ``trace_header`` that is no HTTP token (configuration, not a response) is refused when the
    function is decorated, with the one line that names the option: it never reaches a request."""
    with pytest.raises(ValueError, match=r"trace_header='X Trace' is not an HTTP header name"):
        api_handler(trace_header="X Trace")
    with pytest.raises(ValueError, match=r"is not an HTTP header name"):
        api_handler(trace_header=7)


# --- HEAD -----------------------------------------------------------------------------------------


def a_router() -> Router:
    router = Router()

    @router.get("/missing")
    def missing(request: Any, context: Any) -> Any:
        raise HTTPError(404, "no such thing", headers={"X-Why": "gone"})

    @router.get("/broken")
    def broken(request: Any, context: Any) -> Any:
        raise RuntimeError("boom")

    @router.post("/only-post")
    def only_post(request: Any, context: Any) -> Any:
        return "posted"

    @router.head("/own-head")
    def own_head(request: Any, context: Any) -> Any:
        return {"statusCode": 200, "body": {"a body": "a HEAD route gave"}}

    @router.get("/huge")
    def huge(request: Any, context: Any) -> Any:
        return "x" * (LAMBDA_LIMIT + 1)

    @router.get("/bad-header")
    def bad_header(request: Any, context: Any) -> Any:
        return {"statusCode": 200, "headers": {"X-Bad": "a\nb"}, "body": "ok"}

    return router


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/missing", 404),  # the GET route's HTTPError
        ("/broken", 500),  # the GET route raised
        ("/only-post", 405),  # no GET to answer HEAD as
        ("/nowhere", 404),  # no route at all
        ("/own-head", 200),  # a HEAD route that returned a body
        ("/huge", 200),  # a GET body over Lambda's limit: HEAD sends none
        ("/bad-header", 500),  # a header HTTP forbids: refused for HEAD as for GET
    ],
)
def test_head_never_carries_a_body_errors_included(shape, path, status):
    event = request(shape, "HEAD", path)
    with captured():
        response = api_handler(a_router())(event, None)
    kind = kind_of(event)
    sent_headers(response, kind)
    assert (response["statusCode"], response["body"], response["isBase64Encoded"]) == (status, "", False)
    if status >= 400:  # the Content-Type the error body would have had, as for any HEAD
        assert header_values(response, kind, "Content-Type") == ["application/json"]


@pytest.mark.parametrize("shape", SHAPES)
def test_head_on_a_plain_function_that_fails_carries_no_body(shape):
    def failing(request: Any, context: Any) -> Any:
        raise HTTPError(403, "not yours")

    response, lines = answered(shape, failing, "HEAD")
    assert (response["statusCode"], response["body"]) == (403, "")
    assert [line["message"] for line in lines if line["level"] == "WARN"] == ["request failed"]


@pytest.mark.parametrize("shape", SHAPES)
def test_a_head_requests_processed_line_logs_no_result_where_a_get_logs_it(shape):
    def article(request: Any, context: Any) -> Any:
        return {"title": "a", "views": 3}

    lines = {method: answered(shape, article, method)[1] for method in ("GET", "HEAD")}
    [get] = [line for line in lines["GET"] if line["message"] == "request processed"]
    [head] = [line for line in lines["HEAD"] if line["message"] == "request processed"]
    assert (get["result"], head["result"]) == ({"title": "a", "views": 3}, None)


# --- tuples and dicts by what they are, on the response and in the log ---------------------------


class Created(typing.NamedTuple):
    body: Any
    status: int


class Response(dict):  # type: ignore[type-arg]
    """A dict subclass, as a framework's response class may be."""


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(
    "returned",
    [
        Created({"id": "o-1"}, 201),
        namedtuple("Pair", "body status")({"id": "o-1"}, 201),
        collections.OrderedDict(statusCode=201, body={"id": "o-1"}),
        collections.defaultdict(list, statusCode=201, body={"id": "o-1"}),
        Response(statusCode=201, body={"id": "o-1"}),
    ],
    ids=["NamedTuple", "namedtuple", "OrderedDict", "defaultdict", "dict_subclass"],
)
def test_a_tuple_or_a_dict_of_any_class_is_that_response_and_logged_as_one(shape, returned):
    response, lines = answered(shape, lambda request, context: returned)
    assert response["statusCode"] == 201 and json_body(response) == {"id": "o-1"}
    [processed] = [line for line in lines if line["message"] == "request processed"]
    assert (processed["status"], processed["result"]) == (201, {"id": "o-1"})


@pytest.mark.parametrize("shape", SHAPES)
def test_a_named_tuple_of_another_form_is_refused_as_any_tuple(shape):
    point = namedtuple("Point", "x y")(1, 2)
    response, lines = answered(shape, lambda request, context: point)
    assert response["statusCode"] == 500
    [error] = [line for line in lines if line["level"] == "ERROR"]
    assert error["error_type"] == "TypeError"
    assert "return (body, status) or (body, status, headers)" in error["error"]


@pytest.mark.parametrize("shape", SHAPES)
def test_none_cookies_are_dropped_as_none_headers_are(shape):
    returned = {"statusCode": 200, "cookies": ["a=1", None, "b=2"], "headers": {"X-None": None}}
    response, _ = answered(shape, lambda request, context: returned)
    kind = kind_of(request(shape))
    assert response["statusCode"] == 200 and header_values(response, kind, "Set-Cookie") == ["a=1", "b=2"]
    assert header_values(response, kind, "X-None") == [] and "None" not in json.dumps(response)
    response, _ = answered(shape, lambda request, context: {"statusCode": 200, "cookies": [None]})
    assert header_values(response, kind, "Set-Cookie") == []


# --- Lambda's 6 MB --------------------------------------------------------------------------------


def lambda_encoded_size(response: dict, runtime: str | None) -> int:
    """The bytes of ``response`` as awslambdaric sends it to Lambda: JSON with non-ASCII as UTF-8
    on the python3.12 and later runtimes, escaped to ASCII on the others."""
    as_text = runtime is not None and int(runtime.rpartition(".")[2]) >= 12
    return len(json.dumps(response, ensure_ascii=not as_text).encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(
    "returned",
    [
        "x" * 7_000_000,  # a 7 MB string
        b"x" * 5_000_000,  # 5 MB of bytes: 6.7 MB as base64
        [{"n": 1}] * 700_000,  # 700,000 small objects
        {"statusCode": 200, "headers": {f"X-H{n}": "v" * 1000 for n in range(7_000)}},  # 7 MB of headers
        ("ok", 200, [("Set-Cookie", f"c{n}={'v' * 13_000}") for n in range(512)]),  # 6.7 MB of cookies
    ],
    ids=["string", "bytes", "objects", "headers", "cookies"],
)
def test_a_response_over_lambdas_limit_is_a_500_with_an_error_line_never_ok(shape, returned):
    response, lines = answered(shape, lambda request, context: returned)
    refused(response, lines, "over Lambda's limit of 6,291,556 bytes")
    assert len(json.dumps(response)) < 1_000


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(
    "runtime", [None, "AWS_Lambda_python3.11", "AWS_Lambda_python3.12", "AWS_Lambda_python3.13"]
)
def test_the_limit_is_the_size_lambda_encodes_to_the_byte(shape, runtime, monkeypatch):
    if runtime is None:
        monkeypatch.delenv("AWS_EXECUTION_ENV", raising=False)
    else:
        monkeypatch.setenv("AWS_EXECUTION_ENV", runtime)
    text = "é" * 10 + "\x01"  # two bytes of UTF-8, six escaped; a control character six either way
    probe, _ = answered(shape, lambda request, context: {"statusCode": 200, "body": text})
    spare = LAMBDA_LIMIT - lambda_encoded_size(probe, runtime)
    fits = text + "x" * spare
    response, _ = answered(shape, lambda request, context: {"statusCode": 200, "body": fits})
    assert response["statusCode"] == 200 and lambda_encoded_size(response, runtime) == LAMBDA_LIMIT
    response, lines = answered(shape, lambda request, context: {"statusCode": 200, "body": fits + "x"})
    refused(response, lines, f"the response is {LAMBDA_LIMIT + 1:,} bytes")
    # what only the python3.12+ runtimes' UTF-8 fits: 2.5 MB of "é", 5 MB as text, 15 MB escaped
    response, lines = answered(shape, lambda request, context: {"statusCode": 200, "body": "é" * 2_500_000})
    assert response["statusCode"] == (200 if runtime not in (None, "AWS_Lambda_python3.11") else 500)


@pytest.mark.parametrize("shape", SHAPES)
def test_an_http_error_whose_answer_is_over_the_limit_is_a_500(shape):
    def raising(request: Any, context: Any) -> Any:
        raise HTTPError(400, "x" * 7_000_000)

    response, lines = answered(shape, raising)
    refused(response, lines, "over Lambda's limit")


# --- pydantic models, as dataclasses -------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
def test_a_pydantic_model_returned_is_written_as_its_json_dump_as_a_dataclass_is(shape):
    pydantic = pytest.importorskip("pydantic")

    class Order(pydantic.BaseModel):
        id: str
        total: decimal.Decimal
        at: datetime.datetime

    @dataclasses.dataclass
    class Line:
        id: str

    order = Order(id="o-1", total=decimal.Decimal("12.50"), at=datetime.datetime(2026, 1, 2, 3, 4, 5))
    dumped = order.model_dump(mode="json")
    assert dumped == {"id": "o-1", "total": "12.50", "at": "2026-01-02T03:04:05"}
    router = Router()
    router.get("/one")(lambda request, context: order)
    router.get("/many")(lambda request, context: [order, order])
    router.post("/created")(lambda request, context: (order, 201))
    router.get("/shaped")(lambda request, context: {"statusCode": 200, "body": {"orders": [order]}})
    router.get("/dataclass")(lambda request, context: [Line("l-1")])
    for method, path, status, body in [
        ("GET", "/one", 200, dumped),
        ("GET", "/many", 200, [dumped, dumped]),
        ("POST", "/created", 201, dumped),
        ("GET", "/shaped", 200, {"orders": [dumped]}),
        ("GET", "/dataclass", 200, [{"id": "l-1"}]),
    ]:
        event = request(shape, method, path)
        with captured() as out:
            response = api_handler(router)(event, None)
        assert (response["statusCode"], json_body(response)) == (status, body)
        [processed] = [line for line in parse_lines(out) if line["message"] == "request processed"]
        assert processed["result"] == body


def test_returning_a_dataclass_or_an_unknown_type_loads_no_pydantic():
    script = """
import dataclasses, sys
from lambda_kit import api_handler
from lambda_kit.testing import api_event

@dataclasses.dataclass
class Line:
    id: str

said = [
    api_handler(lambda request, context: Line("l-1"))(api_event(), None)["statusCode"],
    api_handler(lambda request, context: object())(api_event(), None)["statusCode"],
    "pydantic" in sys.modules,
]
print(said, file=sys.stderr)
"""
    found = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert found.stderr.strip() == "[200, 500, False]"


def test_a_pydantic_result_of_a_batch_source_is_logged_as_its_dump_with_its_secrets_masked():
    from pydantic import BaseModel

    from lambda_kit import sqs_handler
    from lambda_kit.testing import sqs_event

    class Charged(BaseModel):
        order: int
        api_token: str

    with captured() as out:
        sqs_handler(lambda message, context: Charged(order=7, api_token="s3cret"))(sqs_event({"n": 1}), None)
    [processed] = [line for line in parse_lines(out) if line["message"] == "record processed"]
    assert processed["result"] == {"order": 7, "api_token": "***"}
