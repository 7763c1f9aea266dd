"""`lambda-kit check` for the sources no event of their own feeds (``lambda_kit/cli/check_sources.py``):
Lambda authorizers named by ``http``, ``httpApi`` and ``websocket`` events, WebSocket routes, and
Firehose delivery streams' Lambda processors; each mistake on a small service, and the clean service
packaged by the real `serverless package`, which makes the resources check reads."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import test_check
from _packaging import package_service
from test_check import findings, getatt, run

ROOT = Path(__file__).resolve().parent.parent
service = test_check.service  # the fixture writing a service to tmp_path


def handler(decorator: str, options: str = "") -> str:
    source = f"from lambda_kit import {decorator}\n\n\n@{decorator}{options}\n"
    return source + "def handler(event, context):\n    return None\n"


HANDLERS = {
    "api": handler("api_handler"),
    "auth": handler("authorizer_handler"),
    "simple_auth": handler("authorizer_handler", "(simple_responses=True)"),
    "chat": handler("websocket_handler"),
    "transform": handler("firehose_handler"),
    "batch": handler("s3_batch_handler"),
    "worker": handler("sqs_handler"),
}

CLEAN = {
    "service": "demo",
    "provider": {
        "name": "aws",
        "runtime": "python3.12",
        "region": "us-east-1",
        "httpApi": {
            "authorizers": {
                "tenant": {
                    "type": "request",
                    "functionName": "simpleAuth",
                    "enableSimpleResponses": True,
                    "identitySource": ["$request.header.Authorization"],
                }
            }
        },
    },
    "package": {"patterns": ["handlers/**"]},
    "functions": {
        "orders": {
            "handler": "handlers/api.handler",
            "events": [
                {
                    "http": {
                        "method": "get",
                        "path": "orders",
                        "authorizer": {"name": "auth", "type": "token"},
                    }
                },
                {"httpApi": {"method": "GET", "path": "/tenants", "authorizer": {"name": "tenant"}}},
            ],
        },
        "auth": {"handler": "handlers/auth.handler"},
        "simpleAuth": {"handler": "handlers/simple_auth.handler"},
        "wsAuth": {"handler": "handlers/auth.handler"},
        "chat": {
            "handler": "handlers/chat.handler",
            "events": [
                {
                    "websocket": {
                        "route": "$connect",
                        "authorizer": {
                            "name": "wsAuth",
                            "identitySource": ["route.request.header.Authorization"],
                        },
                    }
                },
                {"websocket": "$disconnect"},
                {"websocket": {"route": "sendMessage"}},
            ],
        },
        "transform": {"handler": "handlers/transform.handler"},
        "batch": {"handler": "handlers/batch.handler"},
    },
    "resources": {
        "Resources": {
            "Deliveries": {
                "Type": "AWS::KinesisFirehose::DeliveryStream",
                "Properties": {
                    "DeliveryStreamType": "DirectPut",
                    "ExtendedS3DestinationConfiguration": {
                        "BucketARN": "arn:aws:s3:::demo-archive",
                        "RoleARN": "arn:aws:iam::123456789012:role/firehose",
                        "ProcessingConfiguration": {
                            "Enabled": True,
                            "Processors": [
                                {
                                    "Type": "Lambda",
                                    "Parameters": [
                                        {
                                            "ParameterName": "LambdaArn",
                                            "ParameterValue": getatt("TransformLambdaFunction"),
                                        }
                                    ],
                                }
                            ],
                        },
                    },
                },
            }
        }
    },
}


def variant() -> dict:
    return copy.deepcopy(CLEAN)


def test_the_clean_service_passes(service, capsys):
    status, lines = run(service(CLEAN, HANDLERS), capsys)
    assert findings(lines) == [] and status == 0


def test_an_authorizer_that_is_no_function_of_the_service(service, capsys):
    config = variant()
    config["functions"]["orders"]["events"][0]["http"]["authorizer"] = "missing"
    status, lines = run(service(config, HANDLERS), capsys)
    assert status == 1
    assert findings(lines) == [
        "error: orders: its http event names the authorizer 'missing', which is no function of this service: "
        "declare it under functions, or give its arn",
        "warning: auth: handler is an authorizer_handler, but no http, httpApi or websocket event of this "
        "service names it as its authorizer: API Gateway never calls it (unless another service's API "
        "does, by ARN)",
    ]


def test_an_authorizer_by_arn_or_iam_is_not_ours_to_check(service, capsys):
    config = variant()
    config["functions"]["orders"]["events"][0]["http"]["authorizer"] = "arn:aws:lambda:us-east-1:1:function:x"
    config["functions"]["orders"]["events"].append(
        {"http": {"method": "get", "path": "x", "authorizer": "aws_iam"}}
    )
    del config["functions"]["auth"]
    status, lines = run(service(config, HANDLERS), capsys)
    assert findings(lines) == [] and status == 0


def test_an_authorizer_whose_handler_is_another_decorator(service, capsys):
    config = variant()
    config["functions"]["auth"]["handler"] = "handlers/api.handler"
    status, lines = run(service(config, HANDLERS), capsys)
    assert status == 1
    assert findings(lines) == [
        "error: auth: it is the authorizer of orders's http event, but its handler is a api_handler: "
        "use authorizer_handler"
    ]


def test_simple_responses_must_match_enable_simple_responses_both_ways(service, capsys):
    config = variant()
    config["provider"]["httpApi"]["authorizers"]["tenant"]["enableSimpleResponses"] = False
    status, lines = run(service(config, HANDLERS), capsys)
    [line] = findings(lines)
    assert status == 1 and line.startswith(
        "error: simpleAuth: the handler is authorizer_handler(simple_responses=True)"
    )
    config = variant()
    config["functions"]["simpleAuth"]["handler"] = "handlers/auth.handler"
    status, lines = run(service(config, HANDLERS), capsys)
    [line] = findings(lines)
    assert (
        status == 1 and "has enableSimpleResponses: true, but the handler answers with IAM policies" in line
    )


def test_a_jwt_authorizer_names_no_function(service, capsys):
    config = variant()
    config["provider"]["httpApi"]["authorizers"]["tenant"] = {
        "type": "jwt",
        "issuerUrl": "https://x",
        "audience": ["a"],
    }
    del config["functions"]["simpleAuth"]
    status, lines = run(service(config, HANDLERS), capsys)
    assert findings(lines) == [] and status == 0


def test_a_websocket_authorizer_goes_on_connect_only(service, capsys):
    config = variant()
    config["functions"]["chat"]["events"][2]["websocket"]["authorizer"] = "wsAuth"
    status, lines = run(service(config, HANDLERS), capsys)
    [line] = findings(lines)
    assert status == 1 and line.startswith(
        "error: chat: its websocket event (route 'sendMessage') has an authorizer: API Gateway runs a "
        "WebSocket API's authorizer on $connect only"
    )


def test_websocket_routes_need_a_websocket_handler(service, capsys):
    config = variant()
    config["functions"]["chat"]["handler"] = "handlers/worker.handler"
    status, lines = run(service(config, HANDLERS), capsys)
    assert status == 1
    assert findings(lines) == [
        "error: chat: handler is a sqs_handler but the function has websocket events: use websocket_handler "
        "or move the event"
    ]


def test_a_firehose_processor_needs_a_firehose_handler(service, capsys):
    config = variant()
    config["functions"]["transform"]["handler"] = "handlers/worker.handler"
    status, lines = run(service(config, HANDLERS), capsys)
    assert status == 1
    assert findings(lines) == [
        "error: transform: the delivery stream Deliveries transforms its records with it, but its handler "
        "is a sqs_handler: use firehose_handler (Firehose needs every record back, with its recordId and "
        "result)"
    ]


def test_a_firehose_handler_no_delivery_stream_uses_is_a_warning(service, capsys):
    config = variant()
    config["resources"]["Resources"]["Deliveries"]["Properties"]["ExtendedS3DestinationConfiguration"][
        "ProcessingConfiguration"
    ]["Enabled"] = False
    status, lines = run(service(config, HANDLERS), capsys)
    [line] = findings(lines)
    assert status == 0 and line.startswith(
        "warning: transform: handler is a firehose_handler, but no Firehose"
    )


def test_a_processor_named_by_arn_or_deployed_name_is_found(service, capsys):
    config = variant()
    processor = config["resources"]["Resources"]["Deliveries"]["Properties"][
        "ExtendedS3DestinationConfiguration"
    ]["ProcessingConfiguration"]["Processors"][0]
    processor["Parameters"][0]["ParameterValue"] = (
        "arn:aws:lambda:us-east-1:123456789012:function:demo-dev-transform"
    )
    config["functions"]["transform"]["name"] = "demo-dev-transform"
    config["functions"]["transform"]["handler"] = "handlers/worker.handler"
    status, lines = run(service(config, HANDLERS), capsys)
    [line] = findings(lines)
    assert line.startswith("error: transform: the delivery stream Deliveries transforms its records with it")


# --- what the framework makes of these events ---------------------------------------------------------


def test_serverless_package_makes_the_authorizers_routes_and_processor_check_reads(service, capsys, tmp_path):
    """The real `serverless package` (osls) accepts the clean service and makes what check reads: a
    TOKEN authorizer of the REST API, a simple-response REQUEST authorizer of the HTTP API, the
    WebSocket routes with the $connect authorizer, and the processor's logical id is the function's."""
    path = service(CLEAN, HANDLERS)
    template = package_service(path.parent)
    resources = template["Resources"]
    of_type = lambda kind: [r["Properties"] for r in resources.values() if r["Type"] == kind]  # noqa: E731
    [rest] = of_type("AWS::ApiGateway::Authorizer")
    assert rest["Type"] == "TOKEN" and "AuthLambdaFunction" in json.dumps(rest["AuthorizerUri"])
    v2 = of_type("AWS::ApiGatewayV2::Authorizer")
    http = [a for a in v2 if a.get("EnableSimpleResponses")]
    assert len(http) == 1 and "SimpleAuthLambdaFunction" in json.dumps(http[0]["AuthorizerUri"])
    assert any("WsAuthLambdaFunction" in json.dumps(a["AuthorizerUri"]) for a in v2 if a not in http)
    routes = {route["RouteKey"]: route for route in of_type("AWS::ApiGatewayV2::Route")}
    assert {"$connect", "$disconnect", "sendMessage"} <= set(routes)
    assert (
        routes["$connect"]["AuthorizationType"],
        routes["sendMessage"]["AuthorizationType"],
    ) == ("CUSTOM", "NONE")
    assert (
        "TransformLambdaFunction" in resources
        and resources["Deliveries"]["Type"] == "AWS::KinesisFirehose::DeliveryStream"
    )
