"""The local HTTP API runs Lambda authorizers in front of the routes that name them, as API Gateway
does: real HTTP requests; the identity source read (missing: 401, the authorizer never called); the
authorizer's answer read (``Unauthorized`` 401, deny 403, failure 500); its context in the route's
event; and its answers cached by identity source for ``resultTtlInSeconds``, a cached policy matched
against each request's own ARN."""

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
  httpApi:
    authorizers:
      simple: {{type: request, functionName: simpleAuth, enableSimpleResponses: true,
                identitySource: [$request.header.Authorization]}}
functions:
  api:
    handler: toy_routes.handler
    events:
      - http: {{method: get, path: orders, authorizer: {{name: tokenAuth, type: token}}}}
      - http: {{method: delete, path: orders, authorizer: {{name: tokenAuth, type: token}}}}
      - http: {{method: get, path: open}}
      - httpApi: {{method: GET, path: /tenants, authorizer: {{name: simple}}}}
  tokenAuth:
    handler: toy_auth.token_auth
  simpleAuth:
    handler: toy_auth.simple_auth
"""

ROUTES = """
from lambda_kit import api_handler
from toy_state import recorded
events = recorded(__name__, "events")

@api_handler
def handler(request, context):
    events.append(request.event)
    return {"path": request.path}
"""

AUTH = """
from lambda_kit import Allow, Unauthorized, authorizer_handler
from toy_state import recorded
calls = recorded(__name__, "calls")

@authorizer_handler
def token_auth(request, context):
    calls.append((request.shape, request.token, request.method))
    if request.token == "broken":
        raise RuntimeError("the key store is down")
    if request.token != "Bearer good":
        raise Unauthorized()
    return Allow("alice", context={"plan": "pro"}, resources=[request.arn_for("GET", "orders")])

@authorizer_handler(simple_responses=True)
def simple_auth(request, context):
    calls.append((request.shape, request.headers.get("authorization"), request.method))
    return request.headers.get("authorization") == "yes"
"""


def call(url, method="GET", headers=None):
    request = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


@pytest.fixture(scope="module")
def stack(tmp_path_factory, aws_endpoint):
    root = tmp_path_factory.mktemp("authorizers")
    with toy_stack(
        root,
        CONFIG.format(service=f"auth-{id(root)}"),
        {"toy_routes": ROUTES, "toy_auth": AUTH},
        aws_endpoint.url,
        api_port=0,
    ) as running:
        yield running


def test_an_allowed_request_reaches_the_route_with_the_authorizers_context(stack):
    status, body = call(stack.api_url + "/orders", headers={"Authorization": "Bearer good"})
    assert (status, body) == (200, {"path": "/orders"})
    event = module_of(stack, "api").events[-1]
    assert event["requestContext"]["authorizer"] == {"principalId": "alice", "plan": "pro"}
    assert module_of(stack, "tokenAuth").calls[-1] == ("rest-token", "Bearer good", "GET")


def test_no_identity_source_is_a_401_without_calling_the_authorizer(stack):
    calls = module_of(stack, "tokenAuth").calls
    before = len(calls)
    assert call(stack.api_url + "/orders") == (401, {"message": "Unauthorized"})
    assert len(calls) == before


def test_unauthorized_is_a_401_and_a_failing_authorizer_a_500(stack):
    assert call(stack.api_url + "/orders", headers={"Authorization": "Bearer nope"}) == (
        401,
        {"message": "Unauthorized"},
    )
    status, body = call(stack.api_url + "/orders", headers={"Authorization": "broken"})
    assert (
        status == 401
    )  # lambda_kit denies a failing authorizer with "Unauthorized": never a 500, never an allow


def test_a_cached_policy_is_matched_against_each_request(stack):
    """The token's answer allows GET /orders only: cached, it denies DELETE /orders without a call."""
    calls = module_of(stack, "tokenAuth").calls
    headers = {"Authorization": "Bearer good"}
    assert call(stack.api_url + "/orders", headers=headers)[0] == 200
    before = len(calls)
    status, body = call(stack.api_url + "/orders", method="DELETE", headers=headers)
    assert status == 403 and body == {"message": "User is not authorized to access this resource"}
    assert call(stack.api_url + "/orders", headers=headers)[0] == 200
    assert len(calls) == before  # both answered from the cache (300 s, the framework's default)


def test_a_route_without_an_authorizer_is_open(stack):
    assert call(stack.api_url + "/open") == (200, {"path": "/open"})


def test_an_http_api_simple_response(stack):
    status, _ = call(stack.api_url + "/tenants", headers={"Authorization": "yes"})
    assert status == 200
    assert module_of(stack, "api").events[-1]["requestContext"]["authorizer"] == {"lambda": {}}
    assert call(stack.api_url + "/tenants", headers={"Authorization": "no"}) == (
        403,
        {"message": "Forbidden"},
    )
    assert module_of(stack, "simpleAuth").calls[-1] == ("http-2.0", "no", "GET")
