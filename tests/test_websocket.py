"""websocket_handler: route events in, integration responses out, and answers to clients through
the API's ``@connections`` endpoint, carrying the trace id.

The ``@connections`` calls go to a real HTTP server on loopback that records what it is sent (the
path boto3 signs and sends, the headers, the body) and answers as API Gateway does (200, or 410 for
a gone connection): boto3 and botocore run for real.
"""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

import pytest
from _hostile import captured, parse_lines

from lambda_kit import HTTPError, UnsupportedEvent, WebSocketRouter, current_trace_id, websocket_handler
from lambda_kit.sources.websocket.connections import endpoint_of
from lambda_kit.testing import api_event, authorizer_event, lambda_context, websocket_event


def run(handler: Any, event: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    with captured() as out:
        response = handler(event, lambda_context())
    return response, parse_lines(out)


# --- routes and responses ---------------------------------------------------------------------------


def test_each_route_reaches_its_function_through_the_router():
    router = WebSocketRouter()
    seen = []

    @router.route("$connect")
    def connect(message, context):
        seen.append(("connect", message.headers.get("sec-websocket-version"), message.query))
        return None

    @router.route("sendMessage")
    def send(message, context):
        seen.append(("send", message.json["text"], message.connection_id))
        return {"ok": True}

    @router.route("$default")
    def default(message, context):
        seen.append(("default", message.route_key, message.body))

    @router.route("$disconnect")
    def disconnect(message, context):
        seen.append(("disconnect", message.disconnect_status_code, message.event_type))

    handler = websocket_handler(router)
    assert handler(websocket_event(route_key="$connect", query={"room": "r1"}), None)["statusCode"] == 200
    sent = handler(websocket_event({"text": "hi"}, route_key="sendMessage", connection_id="c-1="), None)
    assert (sent["statusCode"], json.loads(sent["body"])) == (200, {"ok": True})
    handler(websocket_event("plain text", route_key="unknownKey"), None)
    handler(websocket_event(route_key="$disconnect"), None)
    assert seen == [
        ("connect", "13", {"room": "r1"}),
        ("send", "hi", "c-1="),
        ("default", "unknownKey", "plain text"),
        ("disconnect", 1005, "DISCONNECT"),
    ]


def test_a_route_key_without_a_function_fails_with_a_500_naming_the_route_keys():
    router = WebSocketRouter()
    router.route("chat")(lambda message, context: None)
    response, lines = run(websocket_handler(router), websocket_event(route_key="$connect"))
    assert response["statusCode"] == 500 and "chat" not in response["body"]
    [error] = [line for line in lines if line["level"] == "ERROR"]
    assert error["error_type"] == "LookupError" and "route keys: chat" in error["error"]


def test_a_router_takes_one_function_per_route_key_and_no_generators():
    router = WebSocketRouter()
    router.route("a")(lambda message, context: None)
    with pytest.raises(ValueError, match="has a function already"):
        router.route("a")(lambda message, context: None)

    def stream(message, context):
        yield message

    with pytest.raises(TypeError, match="generator"):
        router.route("b")(stream)


@pytest.mark.parametrize(
    ("returned", "expected"),
    [
        (None, {"statusCode": 200}),
        ("text", {"statusCode": 200, "body": "text"}),
        ({"a": 1}, {"statusCode": 200, "body": '{"a":1}'}),
        (b"\x00\xff", {"statusCode": 200, "body": "AP8=", "isBase64Encoded": True}),
        ({"statusCode": 201, "body": {"b": 2}}, {"statusCode": 201, "body": '{"b":2}'}),
    ],
    ids=["none", "text", "value", "bytes", "response"],
)
def test_what_the_function_returns_is_the_integration_response(returned, expected):
    response = websocket_handler(lambda message, context: returned)(
        websocket_event({"trace_id": "T-1"}), None
    )
    assert response == {**expected, "headers": {"X-Trace-Id": "T-1"}}


def test_http_error_refuses_a_connection_and_any_other_error_is_a_500_without_its_text():
    def refuse(message, context):
        raise HTTPError(403, "no ticket")

    response, lines = run(websocket_handler(refuse), websocket_event(route_key="$connect"))
    assert response["statusCode"] == 403 and json.loads(response["body"])["error"] == "no ticket"
    assert [line["level"] for line in lines if line["message"] == "request failed"] == ["WARN"]

    def broken(message, context):
        raise RuntimeError("db password is hunter2")

    response, lines = run(websocket_handler(broken), websocket_event({"a": 1}))
    assert response["statusCode"] == 500 and "hunter2" not in response["body"]
    [error] = [line for line in lines if line["level"] == "ERROR"]
    assert error["error_type"] == "RuntimeError" and "traceback" in error


def test_a_status_that_is_no_http_status_is_a_500():
    response, _ = run(websocket_handler(lambda m, c: {"statusCode": 99}), websocket_event({"a": 1}))
    assert response["statusCode"] == 500


def test_the_trace_id_is_the_connect_header_then_the_body_s_then_the_connection_id():
    seen = []
    handler = websocket_handler(lambda message, context: seen.append(current_trace_id()))
    handler(websocket_event(route_key="$connect", headers={"X-Trace-Id": "T-conn"}), None)
    handler(websocket_event({"text": "x"}, trace_id="T-body"), None)
    handler(websocket_event("not json", connection_id="conn-7="), None)
    traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    handler(websocket_event(route_key="$connect", headers={"traceparent": traceparent}), None)
    assert seen == ["T-conn", "T-body", "conn-7=", "4bf92f3577b34da6a3ce929d0e0e4736"]


def test_model_validates_the_json_body_and_a_mismatch_answers_422():
    from pydantic import BaseModel

    class Chat(BaseModel):
        text: str

    handler = websocket_handler(model=Chat)(lambda message, context: message.model.text.upper())
    assert handler(websocket_event({"text": "hi"}), None)["body"] == "HI"
    response, _ = run(handler, websocket_event({"text": 7}))
    assert response["statusCode"] == 422 and "text" in json.loads(response["body"])["error"]
    response, _ = run(handler, websocket_event("not json"))
    assert response["statusCode"] == 400


def test_an_async_route_is_awaited():
    async def echo(message, context):
        await asyncio.sleep(0)
        return message.json

    assert websocket_handler(echo)(websocket_event({"a": 1}), None)["body"] == '{"a":1}'


def test_a_binary_frame_arrives_as_its_bytes():
    event = websocket_event("ignored")
    event.update(body="AP8=", isBase64Encoded=True)
    seen = []
    websocket_handler(lambda message, context: seen.append(message.body_bytes))(event, None)
    assert seen == [b"\x00\xff"]


def test_other_events_are_refused_and_websocket_events_refused_by_the_others():
    from lambda_kit import api_handler

    handler = websocket_handler(lambda message, context: None)
    for event in (api_event("GET", "/"), authorizer_event("websocket")):
        with captured(), pytest.raises(UnsupportedEvent):
            handler(event, None)
    with captured(), pytest.raises(UnsupportedEvent, match="use websocket_handler"):
        api_handler(lambda request, context: None)(websocket_event({"a": 1}), None)


# --- answering clients: @connections ----------------------------------------------------------------


class Connections(ThreadingHTTPServer):
    """An ``@connections`` endpoint on loopback: records every call; ``gone`` connections get 410."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.gone: set[str] = set()
        super().__init__(("127.0.0.1", 0), ConnectionsHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class ConnectionsHandler(BaseHTTPRequestHandler):
    server: Connections

    def answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.calls.append(
            {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
        )
        connection = unquote(self.path.rsplit("/", 1)[-1])
        gone = connection in self.server.gone
        payload = b'{"message": "gone"}' if gone else b"{}"
        self.send_response(410 if gone else 200)
        if gone:
            self.send_header("x-amzn-ErrorType", "GoneException")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_POST = do_DELETE = do_GET = answer

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def connections(aws_endpoint, monkeypatch):
    server = Connections()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("AWS_ENDPOINT_URL_APIGATEWAYMANAGEMENTAPI", server.url + "/test")
    yield server
    server.shutdown()
    server.server_close()


def test_reply_and_send_post_to_connection_with_the_trace_id(connections):
    def chat(message, context):
        assert message.reply({"echo": message.json["text"]}) is True
        assert message.send("other-conn=", "plain text") is True
        assert message.send("gone-conn=", b"\x00bytes") is False  # 410: the connection is gone
        return None

    connections.gone.add("gone-conn=")
    event = websocket_event({"text": "hi"}, connection_id="mine=", trace_id="T-ws-1")
    response, lines = run(websocket_handler(chat), event)
    assert response["statusCode"] == 200
    assert [(call["method"], call["path"], call["body"]) for call in connections.calls] == [
        ("POST", "/test/@connections/mine%3D", b'{"echo":"hi"}'),
        ("POST", "/test/@connections/other-conn%3D", b"plain text"),
        ("POST", "/test/@connections/gone-conn%3D", b"\x00bytes"),
    ]
    for call in connections.calls:
        assert call["headers"]["X-Trace-Id"] == "T-ws-1" and call["headers"]["traceparent"].startswith("00-")
        assert call["headers"]["Authorization"].startswith("AWS4-HMAC-SHA256")  # signed, as AWS wants it


def test_another_error_of_a_post_is_the_message_s_failure(connections, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL_APIGATEWAYMANAGEMENTAPI", "http://127.0.0.1:9/test")  # nothing there
    response, lines = run(
        websocket_handler(lambda message, context: message.reply("x")), websocket_event({"a": 1})
    )
    assert response["statusCode"] == 500
    assert [line["level"] for line in lines].count("ERROR") == 1


def test_the_endpoint_is_the_api_stage_s_own():
    assert endpoint_of("abc.execute-api.eu-west-1.amazonaws.com", "abc", "prod") == (
        "https://abc.execute-api.eu-west-1.amazonaws.com/prod"
    )
    # behind a custom domain (whose base path need not be the stage): the API's own domain
    assert endpoint_of("chat.example.com", "abc", "prod").endswith(
        ".execute-api.us-east-1.amazonaws.com/prod"
    )
