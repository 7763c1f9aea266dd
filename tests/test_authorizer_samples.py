"""authorizer_handler against AWS's own published sample events (``tests/events/authorizer/``).

Each request must reach the function with what Powertools' data classes read of it, field by field
(``APIGatewayAuthorizerTokenEvent``, ``APIGatewayAuthorizerRequestEvent``,
``APIGatewayAuthorizerEventV2``), be answered in its shape's form, and be refused by every other
decorator with ``authorizer_handler`` named.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _hostile import DECORATORS, captured, refused
from aws_lambda_powertools.utilities.data_classes.api_gateway_authorizer_event import (
    APIGatewayAuthorizerEventV2,
    APIGatewayAuthorizerRequestEvent,
    APIGatewayAuthorizerTokenEvent,
    parse_api_gateway_arn,
)

from lambda_kit import Allow, authorizer_handler

ROOT = Path(__file__).parent / "events" / "authorizer"
REQUESTS = sorted(path.name for path in ROOT.glob("*.json") if "-response" not in path.name)
SHAPES = {
    "ApiGatewayAuthorizer.sam-cli.json": "rest-token",
    "ApiGatewayRestRequestAuthorizer.sam-cli.json": "rest-request",
    "apiGatewayAuthorizerRequestEvent.powertools.json": "http-1.0",
    "apiGatewayAuthorizerTokenEvent.powertools.json": "rest-token",
    "apiGatewayAuthorizerV2Event.powertools.json": "http-2.0",
    "apiGatewayAuthorizerWebSocketEvent.powertools.json": "websocket",
    "apigw-custom-auth-request-type-request.aws-lambda-go.json": "rest-request",
    "apigw-custom-auth-request.aws-lambda-go.json": "rest-token",
    "apigw-v2-custom-authorizer-v1-request.aws-lambda-go.json": "http-1.0",
    "apigw-v2-custom-authorizer-v2-request.aws-lambda-go.json": "http-2.0",
    "apigw_auth.aws-lambda-java.json": "http-1.0",
    "apigw_auth_v2.aws-lambda-java.json": "http-2.0",
}


def sample(name: str) -> dict[str, Any]:
    return json.loads((ROOT / name).read_text())


def received(name: str, **options: Any) -> tuple[Any, Any]:
    """(what the function received, the answer) for the sample ``name``."""
    seen = []
    handler = authorizer_handler(**options)(
        lambda request, context: seen.append(request) or Allow("sample-user", context={"plan": "pro"})
    )
    with captured():
        answer = handler(sample(name), None)
    return seen[0], answer


def test_every_sample_has_its_shape_here():
    assert sorted(SHAPES) == REQUESTS


def assert_headers(request: Any, headers: Any) -> None:
    """Every header Powertools reads, found in any case with the same value."""
    for name, value in (headers or {}).items():
        assert request.headers[name.upper()] == value, name


def assert_arn(request: Any, arn: str, websocket: bool = False) -> None:
    parsed = parse_api_gateway_arn(arn, is_websocket_authorizer=websocket)
    assert (request.partition, request.region, request.account_id, request.api_id, request.stage) == (
        parsed.partition,
        parsed.region,
        parsed.aws_account_id,
        parsed.api_id,
        parsed.stage,
    )
    assert request.arn_for(parsed.http_method or "", parsed.resource) == parsed.arn


@pytest.mark.parametrize("name", [name for name in REQUESTS if SHAPES[name] == "rest-token"])
def test_token_samples_match_powertools(name):
    request, _ = received(name)
    powertools = APIGatewayAuthorizerTokenEvent(sample(name))
    assert request.shape == "rest-token"
    assert (request.type, request.token, request.arn) == (
        powertools.get_type,
        powertools.authorization_token,
        powertools.method_arn,
    )
    assert_arn(request, powertools.method_arn)
    assert request.method == powertools.parsed_arn.http_method
    assert request.resource.lstrip("/") == powertools.parsed_arn.resource


@pytest.mark.parametrize(
    "name", [name for name in REQUESTS if SHAPES[name] in ("rest-request", "http-1.0", "websocket")]
)
def test_request_samples_match_powertools(name):
    request, _ = received(name)
    event = sample(name)
    powertools = APIGatewayAuthorizerRequestEvent(event)
    assert request.shape == SHAPES[name]
    assert (request.type, request.arn) == (powertools.get_type, powertools.method_arn)
    if "version" in event:
        assert request.version == powertools.version
    if "authorizationToken" in event:
        assert (request.token, request.identity_source) == (
            powertools.authorization_token,
            powertools.identity_source,
        )
    assert_headers(request, powertools.headers)
    assert request.query == (powertools.query_string_parameters or {})
    assert request.stage_variables == (powertools.stage_variables or {})
    assert request.path_params == (event.get("pathParameters") or {})
    context = powertools.request_context
    assert (request.request_context["accountId"] if "accountId" in event["requestContext"] else None) == (
        context.account_id if "accountId" in event["requestContext"] else None
    )
    assert (request.request_context["apiId"], request.request_context["requestId"]) == (
        context.api_id,
        context.request_id,
    )
    websocket = request.shape == "websocket"
    assert_arn(request, powertools.method_arn, websocket)
    if websocket:
        assert request.route_key == parse_api_gateway_arn(powertools.method_arn, True).resource
        return
    assert (request.resource, request.path, request.method) == (
        powertools.resource,
        powertools.path,
        powertools.http_method,
    )


@pytest.mark.parametrize("name", [name for name in REQUESTS if SHAPES[name] == "http-2.0"])
def test_v2_samples_match_powertools(name):
    request, _ = received(name)
    powertools = APIGatewayAuthorizerEventV2(sample(name))
    assert request.shape == "http-2.0"
    assert (request.version, request.type, request.arn, request.identity_source) == (
        powertools.version,
        powertools.get_type,
        powertools.route_arn,
        powertools.identity_source,
    )
    assert (request.route_key, request.path, request.cookies) == (
        powertools.route_key,
        powertools.raw_path,
        powertools.cookies,
    )
    assert_headers(request, powertools.headers)
    assert request.query == powertools.query_string_parameters
    assert request.path_params == powertools.path_parameters
    assert request.stage_variables == powertools.stage_variables
    assert request.method == powertools.request_context.http.method
    assert request.request_context["requestId"] == powertools.request_context.request_id
    assert_arn(request, powertools.route_arn)


@pytest.mark.parametrize("name", REQUESTS)
def test_each_sample_is_answered_in_its_shape(name):
    request, answer = received(name)
    assert answer == {
        "principalId": "sample-user",
        "policyDocument": {
            "Version": "2012-10-17",
            "Statement": [{"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": [request.arn]}],
        },
        "context": {"plan": "pro"},
    }
    if SHAPES[name] == "http-2.0":
        _, simple = received(name, simple_responses=True)
        assert simple == {"isAuthorized": True, "context": {"plan": "pro"}}


@pytest.mark.parametrize("decorator", sorted(set(DECORATORS) - {"authorizer_handler"}))
@pytest.mark.parametrize("name", REQUESTS)
def test_every_other_decorator_refuses_the_samples_naming_authorizer_handler(name, decorator):
    assert refused(decorator, sample(name)).endswith(": use authorizer_handler")
