"""A function's return value as the response its request's front door wants, and error responses.

What a function may return (``as_response`` reads each as a response dict):

- a dict with ``statusCode``: a response (``headers``, ``multiValueHeaders``, ``cookies``,
  ``body``, ``isBase64Encoded``, ``statusDescription``, in any shape);
- a tuple ``(body, status)`` or ``(body, status, headers)``, as Flask takes it: the response dict
  ``{"statusCode": status, "headers": headers, "body": body}``. ``headers`` is a dict or a list of
  (name, value) pairs. Flask's ``(body, headers)`` is not taken: ``return 201, {...}`` would read as
  a body 201, so any other tuple is refused (a 500 whose ERROR line names the fix);
- anything else: a 200 body, as JSON (``bytes`` base64-encoded, ``application/octet-stream``).

A body that is ``bytes`` goes base64-encoded, a ``str`` as it is, anything else as JSON. Every
response carries the trace header. Error bodies are ``{"error": message, "trace_id": ...}`` and
never hold an exception's text or a traceback.
"""

from __future__ import annotations

import binascii
from collections.abc import Mapping
from typing import Any

from ... import codec
from .request import Request
from .shapes import UNKNOWN_PHRASE, Grouped, grouped, status_description

JSON_TYPE = "application/json"
BINARY_TYPE = "application/octet-stream"
TUPLE_FORMS = "return (body, status) or (body, status, headers), as Flask takes them"

BINARY = (bytes, bytearray, memoryview)
Pairs = list[tuple[str, str]]


# --- what a function returned, as a response dict ---------------------------------------------------


def as_response(result: Any) -> dict[str, Any]:
    """``result`` as a response dict with ``statusCode``; a tuple of another form raises ``TypeError``."""
    if type(result) is dict and "statusCode" in result:
        return result
    if type(result) is tuple:
        return _from_tuple(result)
    if type(result) is str or result is None:  # alone, a str is a JSON string, as any other value
        return {"statusCode": 200, "headers": {"Content-Type": JSON_TYPE}, "body": codec.dumps(result)}
    return {"statusCode": 200, "body": result}


def _from_tuple(result: tuple[Any, ...]) -> dict[str, Any]:
    kinds = ", ".join(type(item).__name__ for item in result)
    if len(result) not in (2, 3):
        raise TypeError(f"the function returned a tuple of {len(result)} items ({kinds}): {TUPLE_FORMS}")
    if _http_status(result[1]) is None:
        first = " (the status goes second)" if _http_status(result[0]) is not None else ""
        raise TypeError(
            f"the function returned a tuple ({kinds}) whose second item is no HTTP status "
            f"(100-599){first}: {TUPLE_FORMS}"
        )
    response = {"statusCode": result[1], "body": result[0]}
    if len(result) == 3:
        response["multiValueHeaders"] = _tuple_headers(result[2], kinds)
    return response


def _tuple_headers(headers: Any, kinds: str) -> dict[str, list[str]]:
    if isinstance(headers, Mapping):
        return dict(grouped(_single_pairs(headers)).values())
    if isinstance(headers, list | tuple) and all(_is_pair(pair) for pair in headers):
        pairs = [(str(name), str(value)) for name, value in headers if value is not None]
        return dict(grouped(pairs).values())
    raise TypeError(
        f"the function returned a tuple ({kinds}) whose headers are neither a dict nor a list of "
        f"(name, value) pairs: {TUPLE_FORMS}"
    )


def _is_pair(item: Any) -> bool:
    return isinstance(item, list | tuple) and len(item) == 2


def _http_status(value: Any) -> int | None:
    if type(value) is str and value.isascii() and value.isdigit():
        value = int(value)
    return value if type(value) is int and 100 <= value <= 599 else None


def _status(value: Any) -> int:
    if type(value) is int and 100 <= value <= 599:  # as most functions give it
        return value
    status = _http_status(value)
    if status is None:
        raise TypeError(f"the function returned statusCode {value!r}, which is not an HTTP status (100-599)")
    return status


# --- headers ----------------------------------------------------------------------------------------


def _listed(values: Any) -> Any:
    return values if isinstance(values, list | tuple) else [values]


def _single_pairs(headers: Any) -> Pairs:
    if not headers:
        return []
    return [(str(name), str(value)) for name, value in dict(headers).items() if value is not None]


def _multi_pairs(multi: Any) -> Pairs:
    return [
        (str(name), str(value))
        for name, values in dict(multi).items()
        for value in _listed(values)
        if value is not None
    ]


def header_pairs(response: dict[str, Any]) -> Pairs:
    """Every header of a response dict, whichever way it was given (``headers``,
    ``multiValueHeaders``, ``cookies``), as (name, value) pairs."""
    headers, cookies = response.get("headers"), response.get("cookies")
    pairs = _single_pairs(headers) if headers else []
    multi = response.get("multiValueHeaders")
    if multi:
        pairs += _multi_pairs(multi)
    if cookies:
        pairs += [("Set-Cookie", str(cookie)) for cookie in _listed(cookies)]
    return pairs


def _set(headers: Grouped, name: str, value: str) -> None:
    """Header ``name`` set to ``value`` alone, however the response spelled it, after the others."""
    lowered = name.lower()
    headers.pop(lowered, None)
    headers[lowered] = (name, [value])


def _headers(response: dict[str, Any], content_type: str | None) -> Grouped:
    """The response's headers (``grouped``), with a ``Content-Type`` of ``content_type`` unless it has one."""
    pairs = header_pairs(response)
    headers = grouped(pairs) if pairs else {}
    if content_type is not None and "content-type" not in headers:
        headers["content-type"] = ("Content-Type", [content_type])
    return headers


# --- bodies ------------------------------------------------------------------------------------------


def _base64(data: bytes | bytearray | memoryview) -> str:
    """A binary body as the base64 text API Gateway decodes."""
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def _body(body: Any, is_base64: bool) -> tuple[str, bool, str | None]:
    """(the body's text, isBase64Encoded, its default Content-Type)."""
    if body is None:
        return "", is_base64, None
    if type(body) is str:
        return body, is_base64, None
    if isinstance(body, BINARY):
        return _base64(body), True, BINARY_TYPE
    return codec.dumps(body), is_base64, JSON_TYPE


# --- responses ------------------------------------------------------------------------------------


def shape_response(request: Request, result: Any, trace_id: str, trace_header: str) -> dict[str, Any]:
    """What the function returned as the response ``request``'s front door wants, with the trace header."""
    response = as_response(result)
    status = _status(response["statusCode"])
    body, is_base64, content_type = _body(response.get("body"), response.get("isBase64Encoded") is True)
    headers = _headers(response, content_type)
    _set(headers, trace_header, trace_id)
    return request.front_door.render(status, headers, body, is_base64, response.get("statusDescription"))


def headless(result: Any) -> dict[str, Any]:
    """The response dict of ``result`` without its body (the answer to a HEAD request): the status
    and headers, Content-Type included, that the body would have had."""
    response = as_response(result)
    headers = _headers(response, _body(response.get("body"), False)[2])
    return {
        "statusCode": response["statusCode"],
        "multiValueHeaders": dict(headers.values()),
        "statusDescription": response.get("statusDescription"),
    }


def error_response(
    request: Request, status: int, message: str, trace_id: str, trace_header: str, headers: Any = None
) -> dict[str, Any]:
    """``{"error": message, "trace_id": ...}`` with ``status``, in the request's shape."""
    try:
        found = grouped(_single_pairs(headers))
    except (TypeError, ValueError):
        found: Grouped = {}
    _set(found, "Content-Type", JSON_TYPE)
    _set(found, trace_header, trace_id)
    return request.front_door.render(status, found, _error_body(status, message, trace_id), False)


def _error_body(status: int, message: Any, trace_id: str) -> str:
    try:
        return codec.dumps({"error": message, "trace_id": trace_id})
    except Exception:  # a message JSON cannot hold (an object, lone surrogates): said safely
        return codec.dumps({"error": _safe_message(status, message), "trace_id": trace_id})


def _safe_message(status: int, message: Any) -> str:
    if isinstance(message, str):
        return message.encode("utf-8", "replace").decode("utf-8")
    phrase = status_description(status).partition(" ")[2]
    return "Error" if phrase == UNKNOWN_PHRASE else phrase
