"""What ``api_handler`` does around the function for one request, as plain functions the loop calls:
the checks before it runs (``check_request``), the answer to a failure (``failure_response``), and
the fields of the ``request received``, ``request processed`` and ``request failed`` lines.

A body is logged as its JSON value exactly when it parses as JSON (``parse_json``, the rule of
``request.json``: whitespace and a byte order mark allowed), so ``log.clean`` masks its secrets; a
form-encoded request body as its fields, for the same reason; any other body as its text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from ... import log
from ...errors import HTTPError
from .request import NOT_JSON, Request, parse_json, validated
from .response import error_response, is_response_dict


def check_request(request: Request, max_body: int | None, validate: Callable[[Any], Any] | None) -> None:
    """Raise the ``HTTPError`` a request gets before the function runs: 413 for a body over
    ``max_body`` bytes; with a model (``validate``), 400/415 for a body that is not JSON, 422 for
    one that does not fit (else ``request.model`` is the body validated)."""
    if max_body is not None and request.body_size > max_body:
        raise HTTPError(413, f"request body is larger than {max_body} bytes")
    if validate is not None:
        request.model = validated(validate, request)


def failure_response(request: Request, exc: BaseException, trace_header: str) -> dict[str, Any]:
    """The answer to a function that raised: an ``HTTPError``'s status (a server error for a status
    that is no error status), its message and headers; anything else a 500 that says nothing of it."""
    if isinstance(exc, HTTPError):
        status = exc.status if 400 <= exc.status <= 599 else 500
        return error_response(request, status, exc.message, request.trace_id, trace_header, exc.headers)
    return error_response(request, 500, "Internal Server Error", request.trace_id, trace_header)


def failure_level(response: dict[str, Any]) -> str:
    """A failed request's line: ERROR for a server error, WARNING for the client's."""
    return "ERROR" if response["statusCode"] >= 500 else "WARN"


def outcome_of(status: object) -> str:
    if not isinstance(status, int) or status >= 500:
        return "server_error"
    return "ok" if status < 400 else "client_error"


# --- log lines --------------------------------------------------------------------------------------


def request_fields(request: Request) -> dict[str, Any]:
    """The ``request received`` line's fields (its ``record_id``, the request id, is on every line
    of the request)."""
    return {
        "source": "api",
        "shape": request.shape,
        "method": log.clean(request.method),
        "path": log.clean(request.path),
        "query": log.clean(request.query),
        "headers": log.clean(dict(request.headers)),  # a plain dict: cleaned as one, with no conversion
        "body": log.clean(request_body(request)),
    }


def request_body(request: Request) -> Any:
    """The request body as the log shows it (before ``log.clean``)."""
    try:
        body = request.body
    except HTTPError:  # binary, or base64 that is not: said, not written out
        return f"<{request.body_size} bytes, not UTF-8 text>"
    if not body:
        return body
    try:
        return request.json  # decoded once, for the function too
    except HTTPError:  # not JSON, or JSON of another content type (the same rule: parse_json)
        found = parse_json(body)
    if found is not NOT_JSON:
        return found
    if "x-www-form-urlencoded" in dict.get(request.headers, "content-type", ""):
        return dict(parse_qsl(body, keep_blank_values=True))
    return body


def result_fields(response: dict[str, Any], duration: float) -> dict[str, Any]:
    """The fields every ``request processed`` and ``request failed`` line has (the response's
    status is an ``int``: ``shape_response`` and ``error_response`` make it one)."""
    status = response.get("statusCode")
    return {"source": "api", "status": status, "outcome": outcome_of(status), "duration_ms": duration}


def failure_fields(response: dict[str, Any], duration: float, exc: BaseException) -> dict[str, Any]:
    """The ``request failed`` line's fields: an ``HTTPError``'s message, or the exception's type,
    text and traceback (which never reach the client)."""
    fields = result_fields(response, duration)
    if isinstance(exc, HTTPError):
        fields["error"] = log.clean(exc.message)
    else:
        fields.update(log.error_fields(exc))
    return fields


def result_for_log(result: Any) -> Any:
    """What the response body was made from (before ``log.clean``): the value the function returned
    (not its JSON decoded again: a codec may not give it back exactly), or the body of a response it
    shaped itself, decoded when it is JSON; pydantic models as the body has them."""
    if isinstance(result, tuple):  # (body, status[, headers]): the body as a response dict's
        return body_value(result[0])
    if is_response_dict(result):
        return body_value(result.get("body"))
    return result


def body_value(body: object) -> Any:
    """A response body as the log shows it: its JSON value when it is JSON text or bytes, else as it is."""
    if isinstance(body, bytearray | memoryview):
        body = bytes(body)
    if not body or not isinstance(body, str | bytes):
        return body
    found = parse_json(body)
    return body if found is NOT_JSON else found
