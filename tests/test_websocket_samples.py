"""websocket_handler against AWS's own published sample events (``tests/events/websocket/``).

Each route event must reach the function with what Powertools reads of it, field by field
(``APIGatewayWebSocketEvent``'s request context; the headers, query string and body as
``APIGatewayProxyEvent`` reads them), be answered with an integration response, and be refused by
every other decorator with ``websocket_handler`` named.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _hostile import DECORATORS, captured, refused
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent
from aws_lambda_powertools.utilities.data_classes.api_gateway_websocket_event import APIGatewayWebSocketEvent

from lambda_kit import websocket_handler

ROOT = Path(__file__).parent / "events" / "websocket"
SAMPLES = sorted(path.name for path in ROOT.glob("*.json"))
CONTEXT_FIELDS = {  # WebSocketMessage attribute (and Powertools' request context property): the event's key
    "route_key": "routeKey",
    "event_type": "eventType",
    "connection_id": "connectionId",
    "message_id": "messageId",
    "request_id": "requestId",
    "domain_name": "domainName",
    "stage": "stage",
    "api_id": "apiId",
    "connected_at": "connectedAt",
    "request_time_epoch": "requestTimeEpoch",
    "disconnect_status_code": "disconnectStatusCode",
    "disconnect_reason": "disconnectReason",
}


def sample(name: str) -> dict[str, Any]:
    return json.loads((ROOT / name).read_text())


def received(name: str) -> tuple[Any, dict[str, Any]]:
    seen = []
    with captured():
        response = websocket_handler(lambda message, context: seen.append(message) or {"ok": True})(
            sample(name), None
        )
    return seen[0], response


def test_the_samples_are_all_here():
    assert len(SAMPLES) == 7


@pytest.mark.parametrize("name", SAMPLES)
def test_each_sample_matches_powertools_field_by_field(name):
    message, response = received(name)
    event = sample(name)
    websocket = APIGatewayWebSocketEvent(event)
    context = websocket.request_context
    for attribute, key in CONTEXT_FIELDS.items():
        if key in event["requestContext"]:
            assert getattr(message, attribute) == getattr(context, attribute), attribute
    assert message.source_ip == context.identity.source_ip
    proxy = APIGatewayProxyEvent(event)
    # every header, in any case; where both forms are sent, multiValueHeaders wins (as for api_handler:
    # aws-lambda-go's $connect sample has a Host in headers that its multiValueHeaders does not)
    for header, values in (proxy.multi_value_headers or {}).items():
        assert message.headers[header.upper()] == ", ".join(values), header
    for header, value in (proxy.headers or {}).items():
        if header not in (proxy.multi_value_headers or {}):
            assert message.headers[header.upper()] == value, header
    assert message.query == (proxy.query_string_parameters or {})
    assert message.is_base64_encoded == websocket.is_base64_encoded
    assert message.body == (websocket.decoded_body or "")
    if event.get("body", "").lstrip().startswith("{"):
        assert message.json == websocket.json_body
    assert response["statusCode"] == 200 and json.loads(response["body"]) == {"ok": True}


@pytest.mark.parametrize("decorator", sorted(set(DECORATORS) - {"websocket_handler"}))
@pytest.mark.parametrize("name", SAMPLES)
def test_every_other_decorator_refuses_the_samples_naming_websocket_handler(name, decorator):
    assert refused(decorator, sample(name)).endswith(": use websocket_handler")
