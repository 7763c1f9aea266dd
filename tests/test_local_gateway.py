"""The local HTTP API: real HTTP requests routed per serverless.yml's httpApi events into HTTP
API (payload 2.0) events and per its http events into REST API (payload 1.0) events; responses
shaped as API Gateway does. As an HTTP server: chunked bodies are read; a repeated or malformed
``Content-Length`` is answered 400 and what follows it is never read as another request; a body
shorter than its ``Content-Length`` never reaches the function; silent connections are closed;
bodies over API Gateway's 10 MB are answered 413; the header lines reach a REST route as sent."""

from __future__ import annotations

import json
import re
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from _local_toys import module_of, toy_stack

from lambda_kit.local.gateway import MAX_BODY, HttpGateway

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
      - httpApi: 'GET /inject'
      - http: 'ANY legacy/{{id}}'
  echo:
    handler: toy_echo.handler
    events:
      - httpApi: 'ANY /echo'
      - http: 'ANY rest'
"""

API = """
import base64
from lambda_kit import api_handler
from toy_state import recorded
events = recorded(__name__, "events")

@api_handler
def decorated(request, context):
    if request.path == "/crash":
        raise RuntimeError("secret internals")
    if request.method == "POST":
        body = {"created": request.json, "query": request.query, "all": request.query_all}
        body["cookies"] = request.cookies
        return {"statusCode": 201, "body": body}
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
    if event["rawPath"] == "/inject":
        return {"statusCode": 200, "headers": {"X-Note": "a\\r\\nSet-Cookie: evil=1"}, "body": "injected"}
    return decorated(event, context)


@api_handler
def legacy(request, context):
    tags = ",".join(request.query_all.get("t", [])).encode()
    body = request.body_bytes[::-1] + b"|" + tags + b"|" + request.shape.encode()
    headers = {"Content-Type": "application/octet-stream"}
    return {"statusCode": 200, "cookies": ["a=1", "b=2"], "headers": headers, "body": body}
"""

ECHO = """
import base64
import json

from toy_state import recorded
events = recorded(__name__, "events")

def handler(event, context):
    events.append(event)
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        body = base64.b64decode(body).decode("latin-1")
    return {"statusCode": 200, "body": json.dumps({"length": len(body), "start": body[:20]})}
"""


def _call(url, method="GET", body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers, response.read()  # names in any case, as HTTP has them
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


@pytest.fixture(scope="module")
def api_stack(tmp_path_factory, aws_endpoint):
    root = tmp_path_factory.mktemp("gateway")
    with toy_stack(
        root,
        CONFIG.format(service=f"gateway-{id(root)}"),
        {"toy_api": API, "toy_echo": ECHO},
        aws_endpoint.url,
        api_port=0,
    ) as stack:
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


def test_a_response_header_cannot_add_another(api_stack):
    status, headers, body = _call(api_stack.api_url + "/inject")
    assert status == 500 and headers.get("Set-Cookie") is None
    assert json.loads(body) == {"message": "Internal Server Error"}  # API Gateway's answer, not the server's


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
    request = urllib.request.Request(
        api_stack.api_url + "/legacy/7?t=x&t=y%20z",
        data=b"\x00\xffab",
        method="PUT",
        headers={"Content-Type": "application/octet-stream"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
        assert response.headers.get_all("Set-Cookie") == ["a=1", "b=2"]
        assert response.read() == b"ba\xff\x00|x,y z|v1"
    event = module_of(api_stack, "api").events[-1]
    assert (event["resource"], event["path"], event["httpMethod"]) == ("/legacy/{id}", "/legacy/7", "PUT")
    assert event["pathParameters"] == {"id": "7"} and event["multiValueQueryStringParameters"] == {
        "t": ["x", "y z"]
    }
    assert event["isBase64Encoded"] is True and event["requestContext"]["resourcePath"] == "/legacy/{id}"


# --- the HTTP server, driven with raw bytes on a socket (a client library would fix the requests) ---


def _events(stack):
    return module_of(stack, "echo").events


def _exchange(gateway, raw: bytes, *, half_close: bool = False, wait: float = 5.0) -> bytes:
    """Send ``raw`` on a new connection; everything the server sends until it closes (or ``wait``)."""
    with socket.create_connection((gateway.host, gateway.port)) as connection:
        connection.settimeout(wait)
        connection.sendall(raw)
        if half_close:
            connection.shutdown(socket.SHUT_WR)
        received = b""
        try:
            while chunk := connection.recv(65536):
                received += chunk
        except TimeoutError:
            pass
    return received


def _statuses(received: bytes) -> list[int]:
    return [int(status) for status in re.findall(rb"HTTP/1\.1 (\d{3}) ", received)]


def _body(received: bytes) -> dict:
    return json.loads(received.split(b"\r\n\r\n", 1)[1])


def test_a_chunked_body_is_read(api_stack):
    raw = (
        b"POST /echo HTTP/1.1\r\nHost: local\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n"
        b"Connection: close\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
    )
    received = _exchange(api_stack.gateway, raw)
    assert _statuses(received) == [200]
    assert _body(received) == {"length": 11, "start": "hello world"}
    assert _events(api_stack)[-1]["body"] == "hello world"


@pytest.mark.parametrize("lengths", [("5", "5"), ("5", "40")])
def test_a_repeated_content_length_is_refused_and_what_follows_is_never_a_request(api_stack, lengths):
    before = len(_events(api_stack))
    smuggled = b"GET /echo?smuggled=1 HTTP/1.1\r\nHost: local\r\n\r\n"
    raw = (
        b"POST /echo HTTP/1.1\r\nHost: local\r\nContent-Length: %s\r\nContent-Length: %s\r\n\r\nhello"
        % (lengths[0].encode(), lengths[1].encode())
    ) + smuggled
    received = _exchange(api_stack.gateway, raw)
    assert _statuses(received) == [400]  # one answer, and the connection closed after it
    assert len(_events(api_stack)) == before


@pytest.mark.parametrize(
    "framing",
    [
        b"Content-Length: 48\r\nTransfer-Encoding: chunked\r\n",  # CL.TE: both framings
        b"Transfer-Encoding: chunked\r\nContent-Length: 48\r\n",  # TE.CL
        b"Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n",  # two encodings
        b"Transfer-Encoding: xchunked\r\n",  # an encoding no server knows
        b"Transfer-Encoding: chunked, identity\r\n",  # chunked not last
    ],
)
def test_a_request_framed_two_ways_never_smuggles_a_second_one(api_stack, framing):
    """The framings request smuggling plays the two ends against: whatever the status, the text
    after the first request's chunked body is never served as a request of its own."""
    before = len(_events(api_stack))
    smuggled = b"GET /echo?smuggled=1 HTTP/1.1\r\nHost: local\r\n\r\n"
    raw = b"POST /echo HTTP/1.1\r\nHost: local\r\nContent-Type: text/plain\r\n" + framing
    raw += b"\r\n0\r\n\r\n" + smuggled
    statuses = _statuses(_exchange(api_stack.gateway, raw, wait=3))
    events = _events(api_stack)[before:]
    assert not [event for event in events if "smuggled" in json.dumps(event)]
    assert statuses[:1] in ([400], [501]) and len(statuses) == 1 and events == [], (statuses, events)


def test_transfer_encoding_on_an_http_1_0_request_is_refused(api_stack):
    """HTTP/1.0 has no Transfer-Encoding: its framing is faulty (RFC 9112 6.1), never an empty body
    served while the client sent one."""
    before = len(_events(api_stack))
    raw = b"POST /echo HTTP/1.0\r\nHost: local\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
    received = _exchange(api_stack.gateway, raw, wait=3)
    assert re.match(rb"HTTP/1\.[01] 400 ", received), received[:80]
    assert len(_events(api_stack)) == before


@pytest.mark.parametrize("length", ["abc", "-1", "+5", "0x5", "5 5", "5,5", "1e1", ""])
def test_a_garbage_content_length_is_refused(api_stack, length):
    before = len(_events(api_stack))
    raw = b"POST /echo HTTP/1.1\r\nHost: local\r\nContent-Length: %s\r\n\r\nhello" % length.encode()
    assert _statuses(_exchange(api_stack.gateway, raw)) == [400]
    assert len(_events(api_stack)) == before


def test_a_body_shorter_than_its_content_length_never_reaches_the_function(api_stack):
    before = len(_events(api_stack))
    raw = b"POST /echo HTTP/1.1\r\nHost: local\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\nhello"
    assert _exchange(api_stack.gateway, raw, half_close=True) == b""  # the client gave up: no answer
    assert len(_events(api_stack)) == before


def test_requests_on_one_connection_are_answered_in_turn_and_head_has_no_body(api_stack):
    raw = (
        b"HEAD /echo HTTP/1.1\r\nHost: local\r\n\r\n"
        b"POST /echo HTTP/1.1\r\nHost: local\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nabc"
        b"GET /nowhere HTTP/1.1\r\nHost: local\r\nConnection: close\r\n\r\n"
    )
    received = _exchange(api_stack.gateway, raw)
    assert _statuses(received) == [200, 200, 404]
    head, rest = received.split(b"\r\n\r\n", 1)
    length = len(json.dumps({"length": 0, "start": ""}))  # what a GET would have had
    assert b"Content-Length: %d" % length in head and rest.startswith(b"HTTP/1.1 200")  # HEAD: no body
    assert b'{"length": 3, "start": "abc"}' in rest


def test_silent_and_half_sent_connections_are_closed(api_stack):
    gateway = HttpGateway(api_stack.gateway.routes, 0, idle_timeout=1).start()
    try:
        before = len(_events(api_stack))
        started = time.monotonic()
        assert _exchange(gateway, b"", wait=15) == b""
        assert _exchange(gateway, b"POST /echo HTTP/1.1\r\nHost: local\r\n", wait=15) == b""
        assert _exchange(gateway, b"POST /echo HTTP/1.1\r\nContent-Length: 10\r\n\r\nhello", wait=15) == b""
        assert time.monotonic() - started < 15  # each closed by the server, well before the client gave up
        assert len(_events(api_stack)) == before
    finally:
        gateway.stop()


def test_a_body_over_10_mb_is_refused_with_413(api_stack):
    before = len(_events(api_stack))
    too_long = b"POST /echo HTTP/1.1\r\nHost: local\r\nContent-Length: %d\r\n\r\n" % (MAX_BODY + 1)
    assert _statuses(_exchange(api_stack.gateway, too_long)) == [413]  # refused before the body is sent
    # A chunked body is counted as it arrives (its chunks' framing included): the answer comes once
    # the limit is passed. It ends there, so the server has read every byte sent when it answers.
    chunk_header = b"%x\r\n" % MAX_BODY
    chunked = b"POST /echo HTTP/1.1\r\nHost: local\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk_header
    chunked += b"x" * (MAX_BODY + 1 - len(chunk_header))
    assert _statuses(_exchange(api_stack.gateway, chunked, wait=30)) == [413]
    assert len(_events(api_stack)) == before
    at_the_limit = b"POST /echo HTTP/1.1\r\nHost: local\r\nContent-Type: text/plain\r\nConnection: close\r\n"
    at_the_limit += b"Content-Length: %d\r\n\r\n" % MAX_BODY + b"y" * MAX_BODY
    received = _exchange(api_stack.gateway, at_the_limit, wait=60)
    assert _statuses(received) == [200] and _body(received)["length"] == MAX_BODY


def _post(url: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """(status, body) of a POST sent whole before its answer is read, as most clients send one."""
    request = urllib.request.Request(url, data=body, method="POST", headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as answered:
        return answered.code, answered.read()


def _chunks(total: int) -> Iterator[bytes]:
    for _ in range(total // 65536):
        yield b"y" * 65536


def test_a_body_over_10_mb_sent_whole_gets_a_413_the_client_reads(api_stack):
    """The client sends all of its body before it reads: the server answers 413 as soon as the
    body passes 10 MB, then reads and drops the rest (up to a bound) before it closes, so the
    client reads the 413 instead of a connection reset."""
    before = len(_events(api_stack))
    for size in (MAX_BODY + 1, 3 * MAX_BODY):
        status, body = _post(api_stack.api_url + "/echo", b"x" * size, {"Content-Type": "text/plain"})
        assert (status, body.split(b"\r\n", 1)[0]) == (413, b"Request Entity Too Large")
    status, body = _post(  # chunked (urllib sends an iterable so), the limit passed mid-body
        api_stack.api_url + "/echo", _chunks(2 * MAX_BODY), {"Transfer-Encoding": "chunked"}
    )
    assert status == 413
    assert len(_events(api_stack)) == before
    assert _post(api_stack.api_url + "/echo", b"z" * 5, {"Content-Type": "text/plain"})[0] == 200


def test_after_a_413_the_server_stops_sending_and_closes_once_the_client_does(api_stack):
    too_long = b"POST /echo HTTP/1.1\r\nHost: local\r\nContent-Length: %d\r\n\r\n" % (MAX_BODY + 1)
    with socket.create_connection((api_stack.gateway.host, api_stack.gateway.port)) as connection:
        connection.settimeout(10)
        connection.sendall(too_long + b"x" * 1_000_000)
        received = b""
        while chunk := connection.recv(65536):  # the answer, then the server's end of sending
            received += chunk
        assert _statuses(received) == [413]
        connection.sendall(b"x" * 1_000_000)  # read and dropped, never reset: the client may finish
        connection.shutdown(socket.SHUT_WR)


def test_a_rest_route_gets_the_header_lines_as_sent(api_stack):
    raw = (
        b"GET /rest HTTP/1.1\r\nHost: local\r\nX-Tag: a\r\nx-tag: b\r\nX-Tag: c, d\r\nX_Under: u\r\n"
        b"Connection: close\r\n\r\n"
    )
    assert _statuses(_exchange(api_stack.gateway, raw)) == [200]
    event = _events(api_stack)[-1]
    assert event["multiValueHeaders"] == {
        "Host": ["local"],
        "X-Tag": ["a", "c, d"],
        "x-tag": ["b"],
        "X_Under": ["u"],
        "Connection": ["close"],
    }
    assert event["headers"]["X-Tag"] == "c, d"
