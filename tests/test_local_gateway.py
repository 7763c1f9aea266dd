"""The local HTTP API: real HTTP requests routed per serverless.yml's httpApi events into HTTP
API (payload 2.0) events and per its http events into REST API (payload 1.0) events; responses
shaped as API Gateway does."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from _local_toys import module_of, toy_stack

CONFIG = """
service: {service}
provider:
  name: aws
functions:
  api:
    handler: toy_api.handler
    events:
      - httpApi: 'GET /items/{{id}}'
      - httpApi:
          method: POST
          path: /items
      - httpApi: 'GET /files/{{proxy+}}'
      - httpApi: 'GET /crash'
      - httpApi: 'GET /plain'
      - httpApi: 'GET /items/special'
      - http: 'ANY legacy/{{id}}'
"""

API = """
import base64
from lambda_kit import api_handler
events = []

@api_handler
def decorated(request, context):
    if request.path == "/crash":
        raise RuntimeError("secret internals")
    if request.method == "POST":
        return {"statusCode": 201, "body": {"created": request.json, "query": request.query, "all": request.query_all,
                                            "cookies": request.cookies}}
    return {"id": request.path_params.get("id"), "trace": request.trace_id}

def handler(event, context):
    events.append(event)
    if event.get("resource", "").startswith("/legacy"):
        return legacy(event, context)
    if event["rawPath"] == "/plain":
        return {"plain": True}
    if event["rawPath"].startswith("/files/"):
        return {"statusCode": 200, "headers": {"content-type": "image/png"}, "isBase64Encoded": True,
                "body": base64.b64encode(b"\\x89PNG").decode(), "cookies": ["a=1"]}
    if event["rawPath"] == "/items/special":
        return {"statusCode": 200, "body": "special"}
    return decorated(event, context)


@api_handler
def legacy(request, context):
    return {"statusCode": 200, "cookies": ["a=1", "b=2"], "headers": {"Content-Type": "application/octet-stream"},
            "body": request.body_bytes[::-1] + b"|" + ",".join(request.query_all.get("t", [])).encode() + b"|" + request.shape.encode()}
"""


def _call(url, method="GET", body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


@pytest.fixture(scope="module")
def api_stack(tmp_path_factory, aws_endpoint):
    root = tmp_path_factory.mktemp("gateway")
    with toy_stack(root, CONFIG.format(service=f"gateway-{id(root)}"), {"toy_api": API}, aws_endpoint.url, api_port=0) as stack:
        yield stack


def test_path_parameters_and_the_trace_header(api_stack):
    status, headers, body = _call(api_stack.api_url + "/items/42", headers={"X-Trace-Id": "T-gw-1"})
    assert status == 200
    assert json.loads(body) == {"id": "42", "trace": "T-gw-1"}
    assert headers["X-Trace-Id"] == "T-gw-1"
    event = module_of(api_stack, "api").events[-1]
    assert event["version"] == "2.0" and event["routeKey"] == "GET /items/{id}"
    assert event["pathParameters"] == {"id": "42"} and event["requestContext"]["http"]["method"] == "GET"


def test_literal_routes_win_over_parameters(api_stack):
    status, _, body = _call(api_stack.api_url + "/items/special")
    assert (status, body) == (200, b"special")


def test_post_body_query_and_cookies(api_stack):
    url = api_stack.api_url + "/items?tag=a&tag=b%2Cc&x=1&sp=a+b%20c"
    status, _, body = _call(url, "POST", {"name": "n"}, headers={"Cookie": "s=1; theme=dark"})
    assert status == 201
    assert json.loads(body) == {
        "created": {"name": "n"},
        "query": {"tag": "b,c", "x": "1", "sp": "a b c"},  # the last value of each
        "all": {"tag": ["a", "b,c"], "x": ["1"], "sp": ["a b c"]},  # a comma inside a value stays one value
        "cookies": {"s": "1", "theme": "dark"},
    }


def test_unknown_route_and_wrong_method_are_404(api_stack):
    assert _call(api_stack.api_url + "/nothing")[::2] == (404, b'{"message": "Not Found"}')
    assert _call(api_stack.api_url + "/items", "DELETE")[0] == 404


def test_greedy_path_and_base64_response(api_stack):
    status, headers, body = _call(api_stack.api_url + "/files/a/b/c.png")
    assert (status, body) == (200, b"\x89PNG")
    assert headers["content-type"] == "image/png" and headers["Set-Cookie"] == "a=1"
    assert module_of(api_stack, "api").events[-1]["pathParameters"] == {"proxy": "a/b/c.png"}


def test_function_errors_never_leak(api_stack):
    status, _, body = _call(api_stack.api_url + "/crash")
    assert status == 500 and b"secret" not in body


def test_a_plain_return_value_is_a_200_json_body(api_stack):
    status, headers, body = _call(api_stack.api_url + "/plain")
    assert status == 200 and json.loads(body) == {"plain": True}
    assert headers["Content-Type"] == "application/json"


def test_rest_routes_get_rest_api_events(api_stack):
    """An ``http`` event's route: a payload 1.0 event with every header and query value, binary
    bodies base64-encoded, the response's multi-value headers sent as repeated headers."""
    request = urllib.request.Request(api_stack.api_url + "/legacy/7?t=x&t=y%20z", data=b"\x00\xffab", method="PUT",
                                     headers={"Content-Type": "application/octet-stream"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
        assert response.headers.get_all("Set-Cookie") == ["a=1", "b=2"]
        assert response.read() == b"ba\xff\x00|x,y z|v1"
    event = module_of(api_stack, "api").events[-1]
    assert (event["resource"], event["path"], event["httpMethod"]) == ("/legacy/{id}", "/legacy/7", "PUT")
    assert event["pathParameters"] == {"id": "7"} and event["multiValueQueryStringParameters"] == {"t": ["x", "y z"]}
    assert event["isBase64Encoded"] is True and event["requestContext"]["resourcePath"] == "/legacy/{id}"
