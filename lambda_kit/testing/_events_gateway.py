"""API Gateway events beside HTTP requests: Lambda authorizers' and WebSocket routes', in the
fields AWS documents (and its sample events carry) for each shape."""

from __future__ import annotations

import time
import uuid
from typing import Any

from ._events import ACCOUNT, REGION, example, payload_text

API_ID = "abcdef123"
WEBSOCKET_API_ID = "ws0api0id1"
STAGE = "test"
SOURCE_IP = "192.0.2.1"
USER_AGENT = "lambda-kit-tests"
AUTHORIZER_SHAPES = ("rest-token", "rest-request", "websocket", "http-1.0", "http-2.0")


def _request_id() -> str:
    return uuid.uuid4().hex[:20]


def _clock(now: float) -> str:
    return time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now))


def _multi(values: dict[str, str]) -> dict[str, list[str]]:
    return {name: [value] for name, value in values.items()}


def _method_arn(api_id: str, stage: str, route: str) -> str:
    return f"arn:aws:execute-api:{REGION}:{ACCOUNT}:{api_id}/{stage}/{route}"


def authorizer_event(
    shape: str = "http-2.0",
    *,
    token: str | None = None,
    headers: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    method: str = "GET",
    path: str = "/request",
    route_key: str | None = None,
    trace_id: str | None = None,
    api_id: str = API_ID,
    stage: str = STAGE,
    connection_id: str | None = None,
) -> dict[str, Any]:
    """The event API Gateway sends a Lambda authorizer, in one of ``AUTHORIZER_SHAPES``:
    ``"rest-token"`` (``token`` is the ``authorizationToken``), ``"rest-request"``,
    ``"websocket"`` (``$connect``), ``"http-1.0"``, ``"http-2.0"`` (``token`` is sent as the
    ``Authorization`` header, the identity source). ``trace_id`` goes in the ``X-Trace-Id`` header
    (a TOKEN event has no headers: it is not sent)."""
    if shape not in AUTHORIZER_SHAPES:
        raise ValueError(f"shape must be one of {', '.join(AUTHORIZER_SHAPES)}, not {shape!r}")
    token = "allow" if token is None else token
    if shape == "rest-token":
        resource = path.lstrip("/")
        return {
            "type": "TOKEN",
            "authorizationToken": token,
            "methodArn": _method_arn(api_id, stage, f"{method}/{resource}"),
        }
    sent = {"Authorization": token, "User-Agent": USER_AGENT, **(headers or {})}
    if trace_id is not None:
        sent["X-Trace-Id"] = trace_id
    asked, now = dict(query or {}), time.time()
    if shape == "http-2.0":
        return _http_v2_authorizer(sent, asked, method, path, route_key, api_id, stage, token, now)
    if shape == "websocket":
        return _websocket_authorizer(sent, asked, api_id, stage, connection_id, now)
    built = _rest_authorizer(sent, asked, method, path, api_id, stage, now)
    if shape == "http-1.0":
        return {"version": "1.0", **built, "identitySource": token, "authorizationToken": token}
    return built


def _rest_authorizer(
    headers: dict[str, str],
    query: dict[str, str],
    method: str,
    path: str,
    api_id: str,
    stage: str,
    now: float,
) -> dict[str, Any]:
    return {
        "type": "REQUEST",
        "methodArn": _method_arn(api_id, stage, f"{method}{path}"),
        "resource": path,
        "path": path,
        "httpMethod": method,
        "headers": headers,
        "multiValueHeaders": _multi(headers),
        "queryStringParameters": query,
        "multiValueQueryStringParameters": _multi(query),
        "pathParameters": {},
        "stageVariables": {},
        "requestContext": {
            "path": f"/{stage}{path}",
            "accountId": ACCOUNT,
            "resourceId": "05c7jb",
            "stage": stage,
            "requestId": str(uuid.uuid4()),
            "identity": {"sourceIp": SOURCE_IP, "userAgent": headers.get("User-Agent", USER_AGENT)},
            "resourcePath": path,
            "httpMethod": method,
            "apiId": api_id,
            "requestTime": _clock(now),
            "requestTimeEpoch": int(now * 1000),
        },
    }


def _http_v2_authorizer(
    headers: dict[str, str],
    query: dict[str, str],
    method: str,
    path: str,
    route_key: str | None,
    api_id: str,
    stage: str,
    token: str,
    now: float,
) -> dict[str, Any]:
    lowered = {name.lower(): value for name, value in headers.items()}
    key = route_key or f"{method} {path}"
    return {
        "version": "2.0",
        "type": "REQUEST",
        "routeArn": _method_arn(api_id, stage, f"{method}{path}"),
        "identitySource": [token],
        "routeKey": key,
        "rawPath": path,
        "rawQueryString": "&".join(f"{name}={value}" for name, value in query.items()),
        "cookies": [],
        "headers": lowered,
        "queryStringParameters": query,
        "requestContext": {
            "accountId": ACCOUNT,
            "apiId": api_id,
            "domainName": f"{api_id}.execute-api.{REGION}.amazonaws.com",
            "domainPrefix": api_id,
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": SOURCE_IP,
                "userAgent": lowered.get("user-agent", USER_AGENT),
            },
            "requestId": _request_id(),
            "routeKey": key,
            "stage": stage,
            "time": _clock(now),
            "timeEpoch": int(now * 1000),
        },
        "pathParameters": {},
        "stageVariables": {},
    }


def _websocket_authorizer(
    headers: dict[str, str],
    query: dict[str, str],
    api_id: str,
    stage: str,
    connection_id: str | None,
    now: float,
) -> dict[str, Any]:
    return {
        "type": "REQUEST",
        "methodArn": _method_arn(api_id, stage, "$connect"),
        "headers": headers,
        "multiValueHeaders": _multi(headers),
        "queryStringParameters": query,
        "multiValueQueryStringParameters": _multi(query),
        "stageVariables": {},
        "requestContext": _websocket_context("$connect", "CONNECT", connection_id, api_id, stage, now),
    }


def _websocket_context(
    route_key: str, event_type: str, connection_id: str | None, api_id: str, stage: str, now: float
) -> dict[str, Any]:
    request_id = _request_id()
    return {
        "routeKey": route_key,
        "eventType": event_type,
        "extendedRequestId": request_id,
        "requestTime": _clock(now),
        "messageDirection": "IN",
        "stage": stage,
        "connectedAt": int(now * 1000),
        "requestTimeEpoch": int(now * 1000),
        "identity": {"sourceIp": SOURCE_IP, "userAgent": USER_AGENT},
        "requestId": request_id,
        "domainName": f"{api_id}.execute-api.{REGION}.amazonaws.com",
        "connectionId": connection_id or uuid.uuid4().hex[:16] + "=",
        "apiId": api_id,
    }


@example("authorizer")
def _authorizer_example(
    payload: Any, *, trace_id: str | None, source_arn: str | None, **options: Any
) -> dict[str, Any]:
    """``payload``: the token (anything else is sent as its JSON text)."""
    return authorizer_event(
        token=None if payload is None else payload_text(payload), trace_id=trace_id, **options
    )


# --- WebSocket routes ---------------------------------------------------------------------------

EVENT_TYPES = {"$connect": "CONNECT", "$disconnect": "DISCONNECT"}


def websocket_event(
    body: Any = None,
    *,
    route_key: str = "$default",
    connection_id: str | None = None,
    headers: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    trace_id: str | None = None,
    authorizer: dict[str, Any] | None = None,
    api_id: str = WEBSOCKET_API_ID,
    stage: str = STAGE,
) -> dict[str, Any]:
    """A WebSocket API route's event: ``$connect`` (with ``headers`` and ``query``: the handshake's),
    ``$disconnect``, or a message of ``route_key`` carrying ``body`` (JSON unless text).
    ``trace_id`` goes in the ``X-Trace-Id`` header of a ``$connect``, in a message body's
    ``trace_id`` field (the body must then be an object); ``authorizer`` is what a ``$connect``
    authorizer's context gave the connection."""
    now = time.time()
    event_type = EVENT_TYPES.get(route_key, "MESSAGE")
    context = _websocket_context(route_key, event_type, connection_id, api_id, stage, now)
    if authorizer is not None:
        context["authorizer"] = authorizer
    if event_type == "DISCONNECT":
        context.update(disconnectStatusCode=1005, disconnectReason="Client-side close frame status not set")
    event: dict[str, Any] = {"requestContext": context, "isBase64Encoded": False}
    if event_type == "CONNECT":
        return {**event, **_handshake(context["domainName"], headers, query, trace_id)}
    if event_type == "MESSAGE":
        context["messageId"] = _request_id()
        if trace_id is not None:
            if not isinstance(body, dict):
                raise ValueError("a WebSocket message that carries a trace_id must have a JSON object body")
            body = {**body, "trace_id": trace_id}
        event["body"] = payload_text(body if body is not None else "")
    return event


def _handshake(
    host: str, headers: dict[str, str] | None, query: dict[str, str] | None, trace_id: str | None
) -> dict[str, Any]:
    """What a ``$connect`` event holds of the client's handshake: its headers and query string."""
    sent = {"Host": host, "Sec-WebSocket-Version": "13", **(headers or {})}
    if trace_id is not None:
        sent["X-Trace-Id"] = trace_id
    found: dict[str, Any] = {"headers": sent, "multiValueHeaders": _multi(sent)}
    if query:
        found.update(queryStringParameters=query, multiValueQueryStringParameters=_multi(query))
    return found


@example("websocket")
def _websocket_example(
    payload: Any, *, trace_id: str | None, source_arn: str | None, **options: Any
) -> dict[str, Any]:
    """``payload``: the message body (``route_key`` ``$default`` unless given)."""
    if (
        trace_id is not None
        and not isinstance(payload, dict)
        and options.get("route_key", "$default") != "$connect"
    ):
        payload = {"message": payload}
    return websocket_event({} if payload is None else payload, trace_id=trace_id, **options)
