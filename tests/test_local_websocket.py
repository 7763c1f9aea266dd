"""The local WebSocket API: real WebSocket connections (the ``websockets`` client) to the gateway
the local stack serves for ``websocket`` events: ``$connect`` (refused by the function, or by its
authorizer), messages routed by ``$request.body.action``, ``$default``, a route response, answers
through ``@connections`` (``message.reply``, ``message.send``: ``post_to_connection``, boto3, with
the trace id), and ``$disconnect``."""

from __future__ import annotations

import json

import pytest
from _local_toys import module_of, toy_stack, wait_for
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from lambda_kit.local.websocket_gateway import WebSocketGateway

CONFIG = """
service: {service}
provider:
  name: aws
functions:
  chat:
    handler: toy_chat.chat
    events:
      - websocket:
          route: $connect
          authorizer: {{name: auth, identitySource: [route.request.querystring.token]}}
      - websocket: $disconnect
      - websocket: {{route: echo, routeResponseSelectionExpression: $default}}
      - websocket: shout
      - websocket: $default
  auth:
    handler: toy_chat.auth
"""

CHAT = """
from lambda_kit import Allow, HTTPError, Unauthorized, WebSocketRouter, authorizer_handler, websocket_handler
from toy_state import recorded

events = recorded(__name__, "events")
router = WebSocketRouter()


@authorizer_handler
def auth(request, context):
    if request.query.get("token") != "good":
        raise Unauthorized()
    return Allow("alice", context={"user": "alice"})


@router.route("$connect")
def connect(message, context):
    events.append(("connect", message.query.get("room"), message.authorizer))
    if "room" not in message.query:
        raise HTTPError(400, "name a room")


@router.route("$disconnect")
def disconnect(message, context):
    events.append(("disconnect", message.connection_id))


@router.route("echo")
def echo(message, context):
    return {"echo": message.json["text"]}


@router.route("shout")
def shout(message, context):
    delivered = message.reply({"shout": message.json["text"].upper()})
    gone = message.send("no-such-connection", "x")
    events.append(("shout", delivered, gone))


@router.route("$default")
def default(message, context):
    events.append(("default", message.body))


chat = websocket_handler(router)
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory, aws_endpoint):
    root = tmp_path_factory.mktemp("websocket")
    with toy_stack(
        root, CONFIG.format(service=f"ws-{id(root)}"), {"toy_chat": CHAT}, aws_endpoint.url, api_port=0
    ) as running:
        yield running


def url_of(stack) -> str:
    return next(part for part in stack.deliveries if isinstance(part, WebSocketGateway)).url


def test_connect_is_refused_by_the_authorizer_and_by_the_function(stack):
    with pytest.raises(InvalidStatus) as refused:
        connect(url_of(stack) + "/?room=r1&token=bad", open_timeout=10)
    assert refused.value.response.status_code == 401
    with pytest.raises(InvalidStatus) as refused:
        connect(url_of(stack) + "/?token=good", open_timeout=10)
    assert refused.value.response.status_code == 400


def test_messages_are_routed_answered_and_disconnect_is_an_event(stack):
    def events():  # what the function's worker recorded so far
        return module_of(stack, "chat").events

    with connect(url_of(stack) + "/?room=r1&token=good", open_timeout=10) as client:
        assert events()[-1] == ("connect", "r1", {"principalId": "alice", "user": "alice"})
        client.send(json.dumps({"action": "echo", "text": "hi"}))
        assert json.loads(client.recv(timeout=10)) == {"echo": "hi"}  # the route response
        client.send(json.dumps({"action": "shout", "text": "hi", "trace_id": "T-ws"}))
        assert json.loads(client.recv(timeout=10)) == {"shout": "HI"}  # post_to_connection, through boto3
        wait_for(lambda: events()[-1][0] == "shout")
        assert events()[-1] == ("shout", True, False)  # the other connection is gone: 410
        client.send("not json at all")
        wait_for(lambda: events()[-1] == ("default", "not json at all"))
    wait_for(lambda: events()[-1][0] == "disconnect")
    posts = [entry for entry in stack.journal.events() if entry["kind"] == "websocket.post"]
    assert posts and posts[-1]["trace_id"] == "T-ws"
