"""api_handler against AWS's own published sample events, every shape (``tests/events/api/``).

Each request sample must reach the function with its method, path, headers, query (every value,
decoded), cookies and body read the way its shape documents them, and be answered in exactly its
shape's response format; authorizer, WebSocket and VPC Lattice events must be refused; AWS's
sample responses, returned by a function, must reach the client with all their headers and cookies.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _http_shapes import body_bytes, header_values, json_body, kind_of, sent_headers
from _logs import of_level, read_lines

from lambda_kit import HTTPError, UnsupportedEvent, api_handler
from lambda_kit.testing import lambda_context

ROOT = Path(__file__).parent / "events" / "api"
SAMPLES = sorted(
    p.relative_to(ROOT).as_posix()
    for p in ROOT.glob("*/*.json")
    if p.parent.name not in ("not-http", "responses")
)
NOT_HTTP = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "not-http").glob("*/*.json"))
RESPONSES = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "responses").glob("*/*.json"))

BOTH_PARAMETERS = {"parameter1": ["value1", "value2"], "parameter2": ["value"]}
A_IS_1 = {"a": 1}

# What each sample must give the function: shape, method, path, query_all, cookies, path_params,
# some headers (looked up in another case than the event's), and the body (text, or JSON).
EXPECTED: dict[str, dict[str, Any]] = {
    "aws-docs/http-api-payload-2.0.json": dict(
        shape="v2",
        method="POST",
        path="/my/path",
        query_all=BOTH_PARAMETERS,
        cookies={"": "cookie1"},
        path_params={"parameter1": "value1"},
        headers={"HEADER2": "value1,value2"},
        body="Hello from Lambda",
    ),
    "aws-docs/http-api-payload-1.0.json": dict(
        shape="v1",
        method="GET",
        path="/my/path",
        query_all=BOTH_PARAMETERS,
        cookies={},
        headers={"header2": "value1, value2", "HEADER1": "value1"},
        body="Hello from Lambda!",
    ),
    "aws-docs/function-url-request.json": dict(
        shape="url",
        method="POST",
        path="/my/path",
        query_all=BOTH_PARAMETERS,
        cookies={"": "cookie1"},
        headers={"Header2": "value1,value2"},
        body="Hello from client!",
    ),
    "aws-docs/alb-health-check.json": dict(
        shape="alb",
        method="GET",
        path="/",
        query_all={},
        cookies={},
        headers={"User-Agent": "ELB-HealthChecker/2.0"},
        body="",
    ),
    "aws-lambda-go/apigw-request.json": dict(
        shape="v1",
        method="POST",
        path="/hello/world",
        query_all={"name": ["me"]},
        path_params={"proxy": "hello/world"},
        headers={"headername": "headerValue", "x-forwarded-for": "54.240.196.186, 54.182.214.83"},
        json=A_IS_1,
    ),
    "aws-lambda-go/apigw-restapi-openapi-request.json": dict(
        shape="v1",
        method="POST",
        path="/hello/world",
        query_all={"name": ["me"]},
        path_params={"proxy": "hello/world"},
        json=A_IS_1,
    ),
    "aws-lambda-go/apigw-v2-request-no-authorizer.json": dict(
        shape="v2", method="GET", path="/", query_all={}, cookies={}, headers={"Content-Length": "0"}, body=""
    ),
    "aws-lambda-go/apigw-v2-request-iam.json": dict(
        shape="v2",
        method="GET",
        path="/my/path",
        query_all=BOTH_PARAMETERS,
        cookies={"": "cookie1"},
        path_params={"proxy": "hello/world"},
        headers={"header2": "value2"},
        json=A_IS_1,
    ),
    "aws-lambda-go/apigw-v2-request-jwt-authorizer.json": dict(
        shape="v2", method="GET", path="/my/path", query_all=BOTH_PARAMETERS, json=A_IS_1
    ),
    "aws-lambda-go/lambda-urls-request.json": dict(
        shape="url",
        method="POST",
        path="/my/path",
        query_all=BOTH_PARAMETERS,
        cookies={"": "cookie1"},
        body="Hello from client!",
    ),
    # both header forms: multi-value wins, single fills in
    "aws-lambda-go/alb-lambda-target-request.json": dict(
        shape="alb",
        multi=True,
        method="GET",
        path="/",
        query_all={"name": ["me"], "testparam": ["true"]},
        cookies={"": "cookies"},
        headers={"content-type": "application/json", "Accept-Language": "en-US,en;q=0.8"},
        body="Who there?",
    ),
    "aws-lambda-go/alb-lambda-target-request-headers-only.json": dict(
        shape="alb",
        multi=False,
        method="GET",
        path="/",
        query_all={"key": ["hello"]},
        headers={"X-MyHeader": "123"},
        body="",
    ),
    "aws-lambda-go/alb-lambda-target-request-multivalue-headers.json": dict(
        shape="alb",
        multi=True,
        method="GET",
        path="/",
        query_all={"key": ["hello"]},
        headers={"X-MyHeader": "123"},
        body="",
    ),
    "powertools-lambda-python/apiGatewayProxyEvent.json": dict(
        shape="v1",
        method="GET",
        path="/my/path",
        query_all=BOTH_PARAMETERS,
        headers={"header2": "value1, value2", "origin": "https://aws.amazon.com"},
        body="Hello from Lambda!",
    ),
    "powertools-lambda-python/apiGatewayProxyOtherEvent.json": dict(
        shape="v1", method="GET", path="/other/path", query_all=BOTH_PARAMETERS
    ),
    "powertools-lambda-python/apiGatewayProxyV2Event.json": dict(
        shape="v2",
        method="POST",
        path="/my/path",
        query_all=BOTH_PARAMETERS,
        cookies={"": "cookie1"},
        json={"message": "hello world", "username": "tom"},
    ),
    "powertools-lambda-python/apiGatewayProxyV2LambdaAuthorizerEvent.json": dict(
        shape="v2", method="GET", path="/my/path", json=A_IS_1
    ),
    "powertools-lambda-python/lambdaFunctionUrlEvent.json": dict(
        shape="url", method="GET", path="/", query_all={}, cookies={}, body=""
    ),
    # rawQueryString empty: the parameters as given
    "powertools-lambda-python/lambdaFunctionUrlEventWithHeaders.json": dict(
        shape="url",
        method="GET",
        path="/",
        query_all={"parameter1": ["value1,value2"], "parameter2": ["value"]},
        headers={"header1": "value1"},
    ),
    "powertools-lambda-python/albMultiValueHeadersEvent.json": dict(
        shape="alb", multi=True, method="GET", path="/todos", query_all={}, body=""
    ),
    "powertools-lambda-python/albMultiValueQueryStringEvent.json": dict(
        shape="alb",
        multi=True,
        method="GET",
        path="/todos",
        query_all=BOTH_PARAMETERS,
        headers={"User-Agent": "curl/7.79.1"},
    ),
    "powertools-lambda-python/albEventPathTrailingSlash.json": dict(
        shape="alb",
        multi=False,
        method="GET",
        path="/lambda/",
        query_all={"query": ["1234ABCD"]},
        body="Test",
    ),
    "aws-lambda-java-libs/apigw_rest_event.json": dict(  # claims a base64 body that is not base64
        shape="v1",
        method="GET",
        path="/my/path",
        query_all=BOTH_PARAMETERS,
        headers={"header1": "value1", "header2": "value1, value2"},
        bad_body=400,
    ),
    "aws-lambda-java-libs/apigw_http_event.json": dict(
        shape="v2", method="POST", path="/my/path", body="Hello from Lambda!!"
    ),
    "aws-lambda-java-libs/elb_event.json": dict(
        shape="alb",
        multi=False,
        method="GET",
        path="/",
        query_all={},
        cookies={"name": "value"},
        body="Hello from ELB",
    ),
    "aws-lambda-rust-runtime/example-apigw-request-multi-value-parameters.json": dict(
        shape="v1",
        method="POST",
        path="/hello/world",
        query_all={"name": ["me", "me2"]},
        headers={"HeaderName": "headerValue, headerValue2"},
        json=A_IS_1,
    ),
    "aws-lambda-rust-runtime/example-apigw-v2-request-multi-value-parameters.json": dict(
        shape="v2", method="GET", path="/my/path", query_all={"Parameter1": ["value1", "value2"]}, json=A_IS_1
    ),
    "aws-lambda-rust-runtime/example-apigw-request-catch-all.json": dict(
        shape="v1", method="POST", path="/hello/world", json=A_IS_1
    ),
    "aws-lambda-rust-runtime/example-apigw-console-request.json": dict(
        shape="v1",
        method="POST",
        path="/path/to/resource",
        query_all={"foo": ["bar"]},
        path_params={"proxy": "path/to/resource"},
        json={"test": "body"},
    ),
    "aws-lambda-rust-runtime/example-apigw-sam-rest-request.json": dict(
        shape="v1", method="GET", path="/test", query_all={}, body=""
    ),
    "aws-lambda-rust-runtime/example-apigw-sam-http-request.json": dict(
        shape="v2", method="GET", path="/dump", query_all={"foo": ["bar"]}, cookies={}, body=""
    ),
}


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ROOT / name).read_text(encoding="utf-8"))
    return data


def test_every_sample_has_its_expectations():
    assert sorted(EXPECTED) == SAMPLES
    assert len(SAMPLES) == 31 and len(NOT_HTTP) == 4 and len(RESPONSES) == 3
    assert {EXPECTED[name]["shape"] for name in SAMPLES} == {"v1", "v2", "url", "alb"}


@pytest.mark.parametrize("name", SAMPLES)
def test_each_sample_reaches_the_function_as_its_shape_documents(name, capfd):
    event, expected = load(name), EXPECTED[name]
    seen: dict[str, Any] = {}

    @api_handler
    def handler(request, context):
        seen.update(
            shape=request.shape,
            method=request.method,
            path=request.path,
            query_all=request.query_all,
            query=request.query,
            cookies=request.cookies,
            path_params=request.path_params,
            headers={name: request.headers.get(name) for name in expected.get("headers", {})},
        )
        if "json" in expected:
            seen["json"] = request.json
        if "body" in expected:
            seen["body"], seen["body_bytes"] = request.body, request.body_bytes
        if "bad_body" in expected:
            request.body_bytes  # noqa: B018 - the read is what answers 400
        return {"ok": True}

    response = handler(event, lambda_context())
    kind = kind_of(event)
    pairs = sent_headers(response, kind)
    assert seen["shape"] == expected["shape"] == kind.split("-")[0]
    if "multi" in expected:
        assert kind == ("alb-multi" if expected["multi"] else "alb")
    assert (seen["method"], seen["path"]) == (expected["method"], expected["path"])
    for key in ("query_all", "cookies", "path_params", "json", "body"):
        if key in expected:
            assert seen[key] == expected[key], key
    if "body" in expected:
        assert seen["body_bytes"] == expected["body"].encode()
    assert seen["query"] == {key: values[-1] for key, values in seen["query_all"].items()}
    assert seen["headers"] == expected.get("headers", {})
    trace = [value for key, value in pairs if key.lower() == "x-trace-id"]
    assert len(trace) == 1
    if "bad_body" in expected:
        assert response["statusCode"] == expected["bad_body"]
        assert json_body(response) == {"error": "request body is not valid base64", "trace_id": trace[0]}
        assert not of_level(read_lines(capfd), "ERROR")
    else:
        assert response["statusCode"] == 200 and json_body(response) == {"ok": True}
        assert header_values(response, kind, "content-type") == ["application/json"]


@pytest.mark.parametrize("name", SAMPLES)
def test_each_sample_gets_cookies_and_a_binary_body_back_in_its_shape(name):
    event = load(name)
    png = b"\x89PNG\r\n\x1a\n\x00\xff"

    @api_handler
    def handler(request, context):
        return {
            "statusCode": 201,
            "headers": {"X-Kind": request.shape},
            "cookies": ["a=1; Path=/", "b=2; Expires=Wed, 21 Oct 2026 07:28:00 GMT"],
            "body": png,
        }

    response = handler(event, lambda_context())
    kind = kind_of(event)
    pairs = sent_headers(response, kind)
    assert (
        response["statusCode"] == 201 and response["isBase64Encoded"] is True and body_bytes(response) == png
    )
    assert sorted(header_values(response, kind, "set-cookie")) == [
        "a=1; Path=/",
        "b=2; Expires=Wed, 21 Oct 2026 07:28:00 GMT",
    ]
    assert header_values(response, kind, "content-type") == ["application/octet-stream"]
    assert header_values(response, kind, "x-kind") == [EXPECTED[name]["shape"]]
    if kind == "v2" or kind == "url":
        assert response["cookies"] == ["a=1; Path=/", "b=2; Expires=Wed, 21 Oct 2026 07:28:00 GMT"]
    elif kind == "v1" or kind == "alb-multi":
        assert response["multiValueHeaders"]["Set-Cookie"] == [
            "a=1; Path=/",
            "b=2; Expires=Wed, 21 Oct 2026 07:28:00 GMT",
        ]
    else:  # ALB without multi-value headers: one header per cookie, names differing only in case
        names = [key for key, _ in pairs if key.lower() == "set-cookie"]
        assert len(set(names)) == 2
    if kind.startswith("alb"):
        assert response["statusDescription"] == "201 Created"


@pytest.mark.parametrize("name", SAMPLES)
def test_each_sample_gets_errors_in_its_shape(name):
    event = load(name)

    @api_handler
    def handler(request, context):
        if request.method == "GET":
            raise HTTPError(404, "no such page", headers={"Cache-Control": "no-store"})
        raise RuntimeError("secret detail")

    response = handler(event, lambda_context())
    kind = kind_of(event)
    sent_headers(response, kind)
    status = 404 if EXPECTED[name]["method"] == "GET" else 500
    assert response["statusCode"] == status and response["isBase64Encoded"] is False
    [trace_id] = header_values(response, kind, "x-trace-id")
    message = "no such page" if status == 404 else "Internal Server Error"
    assert json_body(response) == {"error": message, "trace_id": trace_id}
    assert "secret detail" not in json.dumps(response)
    if status == 404:
        assert header_values(response, kind, "cache-control") == ["no-store"]
    if kind.startswith("alb"):
        assert (
            response["statusDescription"] == {404: "404 Not Found", 500: "500 Internal Server Error"}[status]
        )


@pytest.mark.parametrize("name", NOT_HTTP)
def test_events_that_are_not_http_requests_are_refused(name, capfd):
    calls: list[Any] = []
    handler = api_handler(lambda request, context: calls.append(request) or {"ok": True})
    with pytest.raises(UnsupportedEvent, match="^api_handler cannot process "):
        handler(load(name), lambda_context())
    assert calls == []
    [line] = read_lines(capfd)
    assert line["level"] == "ERROR" and line["error_type"] == "UnsupportedEvent"


@pytest.mark.parametrize("response_name", RESPONSES)
@pytest.mark.parametrize("name", SAMPLES)
def test_aws_sample_responses_returned_as_they_are_reach_the_client_whole(name, response_name):
    """A function returning AWS's own sample response (of any shape) is answered in the
    request's shape with every header and cookie it holds, and its trace header."""
    returned = load(response_name)
    response = api_handler(lambda request, context: returned)(load(name), lambda_context())
    kind = kind_of(load(name))
    pairs = sent_headers(response, kind)
    wanted = [("set-cookie", c) for c in returned.get("cookies", [])]
    for header, value in (returned.get("headers") or {}).items():
        wanted.append((header.lower(), value))
    for header, values in (returned.get("multiValueHeaders") or {}).items():
        wanted.extend((header.lower(), value) for value in values)
    got = [(key.lower(), value) for key, value in pairs if key.lower() != "x-trace-id"]
    if kind == "v2" or kind == "url":  # repeated headers other than Set-Cookie are joined with commas
        got = [
            (key, part)
            for key, value in got
            for part in ([value] if key == "set-cookie" else value.split(","))
        ]
        wanted = [
            (key, part)
            for key, value in wanted
            for part in ([value] if key == "set-cookie" else value.split(","))
        ]
    elif kind == "alb":
        got = [
            (key, part)
            for key, value in got
            for part in ([value] if key == "set-cookie" else value.split(", "))
        ]
    assert sorted(got) == sorted(wanted)
    assert response["statusCode"] == returned["statusCode"] and response["body"] == returned["body"]
    if kind.startswith("alb"):
        assert response["statusDescription"] == returned.get(
            "statusDescription", "200 OK" if returned["statusCode"] == 200 else "201 Created"
        )
