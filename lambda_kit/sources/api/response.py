"""A function's return value as the response its request's front door wants, and error responses.

What a function may return (``as_response`` reads each as a response dict):

- a dict with ``statusCode``: a response (``headers``, ``multiValueHeaders``, ``cookies``,
  ``body``, ``isBase64Encoded``, ``statusDescription``, in any shape);
- a tuple ``(body, status)`` or ``(body, status, headers)``, as Flask takes it: the response dict
  ``{"statusCode": status, "headers": headers, "body": body}``. ``headers`` is a dict or a list of
  (name, value) pairs. Flask's ``(body, headers)`` is not taken: ``return 201, {...}`` would read as
  a body 201, so any other tuple is refused (a 500 whose ERROR line names the fix);
- anything else: a 200 body, as JSON (``bytes`` base64-encoded, ``application/octet-stream``).

A body that is ``bytes`` goes base64-encoded, a ``str`` as it is, anything else as JSON (a pydantic
model as its JSON-mode dump, as a dataclass as its fields). A tuple and a dict are read by what
they are, so a named tuple is a tuple and an ``OrderedDict`` with ``statusCode`` a response dict.
Every response carries the trace header; the answer to ``HEAD`` never carries a body (its
Content-Type is the one the body would have had).

What goes out is checked as HTTP and Lambda require, else ``ValueError`` naming the fix (the
request path answers 500 with an ERROR line; nothing invalid is ever sent on): each header name is
an HTTP token, no header value (cookies and ALB's ``statusDescription`` included) holds a control
character (CR, LF and NUL among them), and the response as Lambda's runtime encodes it is within
Lambda's limit for a synchronous response (``MAX_RESPONSE_BYTES``). Error bodies are ``{"error":
message, "trace_id": ...}`` and never hold an exception's text or a traceback.
"""

from __future__ import annotations

import binascii
import json
import os
import re
import sys
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

TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
"""A header name: an HTTP token (RFC 9110 5.1 and 5.6.2)."""
NOT_IN_A_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\ud800-\udfff]")
"""What no header value holds (RFC 9110 5.5: visible characters, spaces and tabs): the control
characters but the tab, CR, LF and NUL among them; and lone surrogates, which no UTF-8 carries."""

MAX_RESPONSE_BYTES = 6_291_556
"""Lambda's limit for a synchronous invocation's response, in bytes of the JSON its runtime sends
(``Function.ResponseSizeTooLarge``: "exceeded maximum allowed payload size (6291556 bytes)")."""


# --- what a function returned, as a response dict ---------------------------------------------------


def as_response(result: Any) -> dict[str, Any]:
    """``result`` as a response dict with ``statusCode``; a tuple of another form raises ``TypeError``."""
    if is_response_dict(result):
        return result  # type: ignore[no-any-return]
    if isinstance(result, tuple):  # a named tuple too
        return _from_tuple(result)
    if type(result) is str or result is None:  # alone, a str is a JSON string, as any other value
        return {"statusCode": 200, "headers": {"Content-Type": JSON_TYPE}, "body": codec.dumps(result)}
    return {"statusCode": 200, "body": result}


def is_response_dict(result: Any) -> bool:
    """Whether ``result`` is a response dict: a dict (of any dict class) with ``statusCode``."""
    return isinstance(result, dict) and "statusCode" in result


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
        pairs += [("Set-Cookie", str(cookie)) for cookie in _listed(cookies) if cookie is not None]
    return pairs


def _shown(name: str) -> str:
    """A header's name as an error message shows it: quoted, escaped, cut short."""
    return ascii(name[:60]) + ("..." if len(name) > 60 else "")


def _checked(pairs: Pairs, replaced: tuple[str, ...]) -> int:
    """The characters of the function's headers, with room for the JSON around each; raises
    ``ValueError`` naming the first header (never its value, which may be a secret) whose name is
    no HTTP token or whose value holds what HTTP forbids in one. A header lambda_kit replaces with
    its own (``replaced``, lower-case) is never sent, so never refused."""
    found = 0
    for name, value in pairs:
        if replaced and name.lower() in replaced:
            continue
        if TOKEN.fullmatch(name) is None:
            raise ValueError(
                f"the response header name {_shown(name)} is not an HTTP token (RFC 9110: letters, digits "
                "and !#$%&'*+-.^_`|~ only, at least one): fix the header's name"
            )
        if not value.isprintable():  # printable text is valid; other text is looked at closely
            _check_text(value, f"the value of response header {_shown(name)}")
        found += len(name) + len(value) + 8
    return found


def checked_trace_header(name: object) -> str:
    """``api_handler``'s ``trace_header``, checked when the function is decorated: an HTTP token."""
    if type(name) is not str or TOKEN.fullmatch(name) is None:
        shown = _shown(name) if type(name) is str else repr(name)[:60]
        raise ValueError(
            f"trace_header={shown} is not an HTTP header name (RFC 9110: letters, digits and "
            "!#$%&'*+-.^_`|~ only): give api_handler another trace_header"
        )
    return name


def _check_text(text: str, what: str) -> None:
    """``ValueError`` when ``text`` holds a character HTTP forbids in a header value or a status line."""
    found = NOT_IN_A_VALUE.search(text)
    if found is not None:
        raise ValueError(
            f"{what} holds {ascii(found.group())} at character {found.start()}: HTTP forbids control "
            "characters (CR, LF, NUL ...) there, as they would end or split the header; remove them"
        )


def _set(headers: Grouped, name: str, value: str) -> None:
    """Header ``name`` set to ``value`` alone, however the response spelled it, after the others."""
    lowered = name.lower()
    headers.pop(lowered, None)
    headers[lowered] = (name, [value])


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
    try:
        return codec.dumps(body), is_base64, JSON_TYPE
    except TypeError:  # a type JSON has no form for: pydantic models are written as their dump
        if "pydantic" not in sys.modules:
            raise
    return codec.dumps(body), is_base64, JSON_TYPE


# --- responses ------------------------------------------------------------------------------------


def shape_response(request: Request, result: Any, trace_id: str, trace_header: str) -> dict[str, Any]:
    """What the function returned as the response ``request``'s front door wants, with the trace header."""
    response = as_response(result)
    status = _status(response["statusCode"])
    body, is_base64, content_type = _body(response.get("body"), response.get("isBase64Encoded") is True)
    pairs = header_pairs(response)
    characters = len(body) + (_checked(pairs, (trace_header.lower(),)) if pairs else 0)
    headers = grouped(pairs) if pairs else {}
    if content_type is not None and "content-type" not in headers:
        headers["content-type"] = ("Content-Type", [content_type])
    _set(headers, trace_header, trace_id)
    description = response.get("statusDescription")
    if type(description) is str:  # ALB's; any other is replaced by the status's own
        _check_text(description, "the response's statusDescription")
        characters += len(description)
    return _sent(request, status, headers, body, is_base64, description, characters)


def error_response(
    request: Request, status: int, message: str, trace_id: str, trace_header: str, headers: Any = None
) -> dict[str, Any]:
    """``{"error": message, "trace_id": ...}`` with ``status``, in the request's shape, with
    ``headers`` (an ``HTTPError``'s), checked as a response's are."""
    try:
        pairs = _single_pairs(headers)
    except (TypeError, ValueError):  # no mapping of headers: none sent
        pairs = []
    body = _error_body(status, message, trace_id)
    characters = len(body) + (_checked(pairs, ("content-type", trace_header.lower())) if pairs else 0)
    found = grouped(pairs) if pairs else {}
    _set(found, "Content-Type", JSON_TYPE)
    _set(found, trace_header, trace_id)
    return _sent(request, status, found, body, False, None, characters)


def _sent(
    request: Request,
    status: int,
    headers: Grouped,
    body: str,
    is_base64: bool,
    description: Any,
    characters: int,
) -> dict[str, Any]:
    """The response in the request's shape: without a body for ``HEAD``, and within Lambda's limit
    (``characters``: those of its body, description and the function's headers)."""
    if request.method == "HEAD":
        body, is_base64 = "", False
    response = request.front_door.render(status, headers, body, is_base64, description)
    if characters > _CERTAINLY_WITHIN:
        _check_size(response)
    return response


_CERTAINLY_WITHIN = (MAX_RESPONSE_BYTES - 1024) // 12
"""A response of fewer characters (its body, statusDescription and the function's headers, as
``_checked`` counts them) is within Lambda's limit however they encode: a character is at most 12
bytes of JSON (an escaped surrogate pair), and 1 KiB is room for the status, the keys and
lambda_kit's own headers (a Content-Type, a trace id of at most 128 characters). Only a larger
one is encoded to be measured."""


def _check_size(response: dict[str, Any]) -> None:
    """``ValueError`` for a response over ``MAX_RESPONSE_BYTES`` as Lambda's runtime encodes it:
    awslambdaric writes JSON as text (non-ASCII as UTF-8) on the Python 3.12 and later runtimes,
    escaped to ASCII on the others."""
    runtime = re.fullmatch(r"AWS_Lambda_python3\.(\d+)", os.environ.get("AWS_EXECUTION_ENV", ""))
    as_text = runtime is not None and int(runtime.group(1)) >= 12
    size = len(json.dumps(response, ensure_ascii=not as_text).encode("utf-8", "surrogatepass"))
    if size > MAX_RESPONSE_BYTES:
        raise ValueError(
            f"the response is {size:,} bytes as Lambda encodes it, over Lambda's limit of "
            f"{MAX_RESPONSE_BYTES:,} bytes for a synchronous response (it would refuse it, and the "
            "client get a 502): return less, or put the content in S3 and return a link to it"
        )


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
