"""HTTP requests (API Gateway REST API v1, HTTP API v2, Function URLs, ALB): the request object
and the response shapes. One request per invocation: ``request_scope`` runs it, not the record loop.

The trace id comes from the ``X-Trace-Id`` header (name configurable) or is generated; every
response carries it. Error bodies are ``{"error": message, "trace_id": ...}`` and never hold an
exception's text or a traceback.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from .. import codec
from ..errors import HTTPError
from ..trace import is_valid_id, new_id
from .base import Source


class ApiSource(Source):
    name = "api"
    label = "an HTTP request event (API Gateway, Function URL or ALB)"
    decorator = "api_handler"
    serverless_events = ("httpApi", "http")

    @classmethod
    def recognizes(cls, event: Any) -> bool:
        if type(event) is not dict or type(event.get("requestContext")) is not dict:
            return False
        if isinstance(event.get("httpMethod"), str):  # REST API, HTTP API payload 1.0, ALB
            return True
        http = event["requestContext"].get("http")  # HTTP API payload 2.0, Function URLs
        return type(http) is dict and isinstance(http.get("method"), str)


SOURCE = ApiSource


class Headers(dict[str, str]):
    """Request headers with case-insensitive lookup (keys are stored lower-case)."""

    def __init__(self, items: Any = ()) -> None:
        super().__init__()
        for key, value in dict(items).items():
            self[key] = value

    def __setitem__(self, key: str, value: str) -> None:
        super().__setitem__(str(key).lower(), value)

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and super().__contains__(key.lower())

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        return super().get(key.lower(), default)


def _text_dict(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): v if isinstance(v, str) else str(v) for k, v in value.items() if v is not None}


def _headers(event: dict[str, Any]) -> Headers:
    headers = Headers()
    multi = event.get("multiValueHeaders")
    if isinstance(multi, dict):
        for key, values in multi.items():
            if isinstance(values, list) and values:
                headers[key] = ", ".join(str(v) for v in values)
    headers.update(Headers(_text_dict(event.get("headers"))))
    cookies = event.get("cookies")
    if isinstance(cookies, list) and cookies and "cookie" not in headers:
        headers["cookie"] = "; ".join(str(c) for c in cookies)
    return headers


def _query(event: dict[str, Any]) -> dict[str, str]:
    query: dict[str, str] = {}
    multi = event.get("multiValueQueryStringParameters")
    if isinstance(multi, dict):
        for key, values in multi.items():
            if isinstance(values, list) and values:
                query[str(key)] = str(values[-1])
    query.update(_text_dict(event.get("queryStringParameters")))
    return query


class Request:
    """What an ``api_handler`` function receives."""

    __slots__ = ("method", "path", "headers", "query", "path_params", "body", "trace_id", "event", "_json")

    def __init__(self, event: Any, trace_header: str) -> None:
        event = event if isinstance(event, dict) else {}
        self.event = event
        context = event.get("requestContext") if isinstance(event.get("requestContext"), dict) else {}
        http = context.get("http") if isinstance(context.get("http"), dict) else {}
        self.method = str(event.get("httpMethod") or http.get("method") or "GET").upper()
        self.path = str(event.get("rawPath") or event.get("path") or http.get("path") or "/")
        self.headers = _headers(event)
        self.query = _query(event)
        self.path_params = _text_dict(event.get("pathParameters"))
        body = event.get("body")
        if not isinstance(body, str):
            body = "" if body is None else str(body)
        if event.get("isBase64Encoded") and body:
            try:
                body = base64.b64decode(body, validate=True).decode("utf-8", "replace")
            except (binascii.Error, ValueError):
                body = ""
        self.body: str = body
        self.trace_id = ""
        self._json: Any = _UNSET

    @property
    def json(self) -> Any:
        """The decoded JSON body; a body that is not JSON answers 400 (415 for another content type)."""
        if self._json is _UNSET:
            content_type = self.headers.get("content-type", "")
            media = content_type.split(";", 1)[0].strip().lower()
            if media and media != "application/json" and not media.endswith("+json"):
                raise HTTPError(415, "Content-Type must be application/json")
            try:
                self._json = codec.loads(self.body)
            except Exception:
                raise HTTPError(400, "request body is not valid JSON") from None
        return self._json

    def __repr__(self) -> str:
        return f"Request({self.method} {self.path}, trace_id={self.trace_id!r})"


_UNSET = object()


def request_id(event: Any, context: Any) -> str:
    if isinstance(event, dict) and isinstance(event.get("requestContext"), dict):
        found = event["requestContext"].get("requestId")
        if isinstance(found, str) and found:
            return found
    return str(getattr(context, "aws_request_id", "") or "")


def trace_of(request: Request, trace_header: str) -> tuple[str, Any]:
    """(trace id, rejected header value)."""
    found = request.headers.get(trace_header)
    if found is None:
        return new_id(), None
    if is_valid_id(found):
        return found, None
    return new_id(), found


def _set_header(headers: dict[str, Any], name: str, value: str) -> None:
    """Set ``name`` replacing any spelling of it, so a response never holds it twice."""
    lowered = name.lower()
    for key in [k for k in headers if isinstance(k, str) and k.lower() == lowered]:
        del headers[key]
    headers[name] = value


def error_response(status: int, message: str, trace_id: str, trace_header: str, headers: Any = None) -> dict[str, Any]:
    try:
        merged = dict(headers or {})
    except (TypeError, ValueError):
        merged = {}
    _set_header(merged, "Content-Type", "application/json")
    _set_header(merged, trace_header, trace_id)
    try:
        body = codec.dumps({"error": message, "trace_id": trace_id})
    except Exception:  # a message JSON cannot hold (an object, lone surrogates): say it safely
        if isinstance(message, str):
            text = message.encode("utf-8", "replace").decode("utf-8")
        else:
            from http import HTTPStatus

            text = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Error"
        body = codec.dumps({"error": text, "trace_id": trace_id})
    return {"statusCode": status, "headers": merged, "body": body}


def shape_response(result: Any, trace_id: str, trace_header: str) -> dict[str, Any]:
    """A handler's return value as an API Gateway response carrying the trace header."""
    if isinstance(result, dict) and "statusCode" in result:
        response = dict(result)
        headers = dict(response.get("headers") or {})
        body = response.get("body")
        if body is not None and not isinstance(body, str):
            response["body"] = codec.dumps(body)
            if not any(k.lower() == "content-type" for k in headers):
                headers["Content-Type"] = "application/json"
        _set_header(headers, trace_header, trace_id)
        response["headers"] = headers
        return response
    return {
        "statusCode": 200,
        "headers": {"Content-Type": "application/json", trace_header: trace_id},
        "body": codec.dumps(result),
    }
