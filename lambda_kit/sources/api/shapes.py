"""The front doors an HTTP request reaches Lambda through, one small class each, as Mangum's handlers.

Each class makes the same three moves: ``matches(event)`` recognizes its shape; ``method``,
``path``, ``headers`` and ``query_all`` read the request out of the event; ``render`` writes the
response that front door documents. ``shape_of(event)`` picks the class.

- ``RestV1`` (``"v1"``): payload format 1.0, from a REST API or an HTTP API with
  ``payloadFormatVersion: "1.0"``. The response has ``headers``, and ``multiValueHeaders`` for a
  name sent more than once (two ``Set-Cookie``).
- ``HttpV2`` (``"v2"``): HTTP API payload format 2.0. The request has a ``cookies`` list; the
  response a ``cookies`` list, and repeated headers joined with commas.
- ``FunctionUrl`` (``"url"``): a Lambda Function URL, payload format 2.0, answered as ``"v2"``.
- ``Alb`` and ``AlbMultiValue`` (``"alb"``): an Application Load Balancer target. Query strings
  arrive as the client sent them (decoded here). The response carries ``statusDescription``, and
  uses ``multiValueHeaders`` exactly when the request did (the target group has multi-value
  headers on), else ``headers``.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any, ClassVar
from urllib.parse import parse_qsl, unquote_plus

from ..._data import mapping
from .._gateway import lowered as lowered_headers
from .._gateway import multi_valued
from ..base import as_text

UNKNOWN_PHRASE = "Unknown Status"
_PHRASES = {status.value: status.phrase for status in HTTPStatus}


def status_description(status: int) -> str:
    """ALB's ``statusDescription``: the status code and its reason phrase, one space apart."""
    return f"{status} {_PHRASES.get(status, UNKNOWN_PHRASE)}"


# --- reading requests -----------------------------------------------------------------------------


def _with_cookies(event: dict[str, Any]) -> dict[str, str]:
    """Payload 2.0 headers: ``headers``, and the ``cookies`` list as one ``cookie`` header."""
    found = lowered_headers(event.get("headers"))
    cookies = event.get("cookies")
    if cookies and type(cookies) is list and "cookie" not in found:
        found["cookie"] = "; ".join(str(cookie) for cookie in cookies)
    return found


def _query_v1(event: dict[str, Any]) -> dict[str, list[str]]:
    """Every value of ``multiValueQueryStringParameters``, then the names only
    ``queryStringParameters`` has."""
    found: dict[str, list[str]] = {}
    for key, values in mapping(event.get("multiValueQueryStringParameters")).items():
        if type(values) is list:
            found[as_text(key)] = [as_text(value) for value in values if value is not None]
    for key, value in mapping(event.get("queryStringParameters")).items():
        if value is not None:
            found.setdefault(as_text(key), [as_text(value)])
    return found


def _query_v2(event: dict[str, Any]) -> dict[str, list[str]]:
    """``queryStringParameters``, as API Gateway decoded them; a repeated name comes comma-joined
    there, so then the raw query string tells the values apart."""
    single = mapping(event.get("queryStringParameters"))
    raw = event.get("rawQueryString")
    if type(raw) is str and raw and any(type(value) is str and "," in value for value in single.values()):
        found: dict[str, list[str]] = {}
        for key, value in parse_qsl(raw, keep_blank_values=True):
            found.setdefault(key, []).append(value)
        return found
    return {as_text(key): [as_text(value)] for key, value in single.items() if value is not None}


def _query_alb(event: dict[str, Any]) -> dict[str, list[str]]:
    """As payload 1.0, percent-decoded (``+`` is a space): the load balancer passes the query
    string as the client sent it."""
    found = _query_v1(event)
    return {unquote_plus(key): [unquote_plus(value) for value in values] for key, values in found.items()}


# --- writing responses ----------------------------------------------------------------------------

Grouped = dict[str, tuple[str, list[str]]]
"""A response's headers: by lower-case name, (the name as first spelled, its values)."""


def grouped(pairs: list[tuple[str, str]]) -> Grouped:
    """(name, value) pairs by header name, names compared case-insensitively (the first spelling kept)."""
    found: Grouped = {}
    for name, value in pairs:
        lowered = name.lower()
        if lowered in found:
            found[lowered][1].append(value)
        else:
            found[lowered] = (name, [value])
    return found


def _case_variants(name: str, count: int) -> list[str]:
    """``count`` spellings of ``name`` that differ only in case (``Set-Cookie``, ``set-Cookie``,
    ...): how one response sends a header twice through ALB without multi-value headers, as Mangum
    does."""
    letters = [index for index, char in enumerate(name) if char.lower() != char.upper()]
    if count > 2 ** len(letters):  # a 500 that says why, never headers dropped
        raise ValueError(
            f"{count} {name} headers in one response, but an ALB target group without multi-value headers "
            f"can carry at most {2 ** len(letters)} (one per case spelling of the name): turn on multi-value "
            "headers for the target group"
        )
    return [_spelling(name, letters, number) for number in range(count)]


def _spelling(name: str, letters: list[int], number: int) -> str:
    """``name`` with the case of the letters at ``letters`` swapped where ``number`` has a 1 bit."""
    chars = list(name)
    for bit, index in enumerate(letters):
        if number >> bit & 1:
            chars[index] = chars[index].swapcase()
    return "".join(chars)


# --- the shapes -----------------------------------------------------------------------------------


class Shape:
    """One front door: how to read its requests and write its responses."""

    name: ClassVar[str] = ""
    """What ``Request.shape`` says: ``"v1"``, ``"v2"``, ``"url"`` or ``"alb"``."""

    headers = staticmethod(multi_valued)
    """The request's headers, one value per lower-case name."""

    query_all = staticmethod(_query_v1)
    """Every value of every query parameter, decoded, in request order."""

    @staticmethod
    def matches(event: dict[str, Any]) -> bool:
        """Whether ``event`` (one ``ApiSource`` recognizes) came through this front door."""
        raise NotImplementedError

    @staticmethod
    def method(event: dict[str, Any]) -> str:
        return str(event["httpMethod"]).upper()

    @staticmethod
    def path(event: dict[str, Any]) -> str:
        path = event.get("path")
        return str(path) if path else "/"

    @classmethod
    def render(
        cls, status: int, headers: Grouped, body: str, is_base64: bool, description: Any = None
    ) -> dict[str, Any]:
        """The response, with ``headers`` (``grouped``)."""
        raise NotImplementedError


class RestV1(Shape):
    """API Gateway payload format 1.0; API Gateway merges ``headers`` and ``multiValueHeaders``."""

    name = "v1"

    @staticmethod
    def matches(event: dict[str, Any]) -> bool:
        return isinstance(event.get("httpMethod"), str) and "elb" not in event["requestContext"]

    @classmethod
    def render(
        cls, status: int, headers: Grouped, body: str, is_base64: bool, description: Any = None
    ) -> dict[str, Any]:
        single = {name: values[0] for name, values in headers.values() if len(values) == 1}
        response: dict[str, Any] = {"statusCode": status, "headers": single}
        multi = {name: values for name, values in headers.values() if len(values) > 1}
        if multi:
            response["multiValueHeaders"] = multi
        response["body"], response["isBase64Encoded"] = body, is_base64
        return response


class Alb(Shape):
    """An ALB target group without multi-value headers: one value per name, several ``Set-Cookie``
    under case spellings of the name."""

    name = "alb"
    query_all = staticmethod(_query_alb)

    @staticmethod
    def matches(event: dict[str, Any]) -> bool:
        return (
            isinstance(event.get("httpMethod"), str)
            and "elb" in event["requestContext"]
            and type(event.get("multiValueHeaders")) is not dict
        )

    @classmethod
    def render(
        cls, status: int, headers: Grouped, body: str, is_base64: bool, description: Any = None
    ) -> dict[str, Any]:
        response = {"statusCode": status, "statusDescription": _description(status, description)}
        response.update(cls.header_fields(headers))
        response["body"], response["isBase64Encoded"] = body, is_base64
        return response

    @staticmethod
    def header_fields(headers: Grouped) -> dict[str, Any]:
        single: dict[str, str] = {}
        for lowered, (name, values) in headers.items():
            if len(values) > 1 and lowered == "set-cookie":
                single.update(zip(_case_variants(name, len(values)), values, strict=True))
            else:
                single[name] = ", ".join(values)
        return {"headers": single}


class AlbMultiValue(Alb):
    """An ALB target group with multi-value headers on (the request came with ``multiValueHeaders``)."""

    @staticmethod
    def matches(event: dict[str, Any]) -> bool:
        return (
            isinstance(event.get("httpMethod"), str)
            and "elb" in event["requestContext"]
            and type(event.get("multiValueHeaders")) is dict
        )

    @staticmethod
    def header_fields(headers: Grouped) -> dict[str, Any]:
        return {"multiValueHeaders": dict(headers.values())}


class HttpV2(Shape):
    """HTTP API payload format 2.0: cookies in their own list, both ways."""

    name = "v2"
    headers = staticmethod(_with_cookies)
    query_all = staticmethod(_query_v2)

    @staticmethod
    def matches(event: dict[str, Any]) -> bool:
        domain = event["requestContext"].get("domainName")
        on_function_url = type(domain) is str and ".lambda-url." in domain
        return not isinstance(event.get("httpMethod"), str) and not on_function_url

    @staticmethod
    def method(event: dict[str, Any]) -> str:
        return str(event["requestContext"]["http"]["method"]).upper()

    @staticmethod
    def path(event: dict[str, Any]) -> str:
        path = event.get("rawPath") or event["requestContext"]["http"].get("path")
        return str(path) if path else "/"

    @classmethod
    def render(
        cls, status: int, headers: Grouped, body: str, is_base64: bool, description: Any = None
    ) -> dict[str, Any]:
        single = {
            name: ",".join(values) for lowered, (name, values) in headers.items() if lowered != "set-cookie"
        }
        response: dict[str, Any] = {"statusCode": status, "headers": single}
        if "set-cookie" in headers:
            response["cookies"] = headers["set-cookie"][1]
        response["body"], response["isBase64Encoded"] = body, is_base64
        return response


class FunctionUrl(HttpV2):
    """A Lambda Function URL: payload format 2.0 on a ``*.lambda-url.*`` domain."""

    name = "url"

    @staticmethod
    def matches(event: dict[str, Any]) -> bool:
        domain = event["requestContext"].get("domainName")
        on_function_url = type(domain) is str and ".lambda-url." in domain
        return not isinstance(event.get("httpMethod"), str) and on_function_url


def _description(status: int, description: Any) -> str:
    return description if type(description) is str else status_description(status)


SHAPES: tuple[type[Shape], ...] = (HttpV2, RestV1, FunctionUrl, Alb, AlbMultiValue)
"""Every shape, the most common first; an event matches exactly one."""


def shape_of(event: dict[str, Any]) -> type[Shape]:
    """The shape of ``event``, one ``ApiSource`` recognizes."""
    for shape in SHAPES:
        if shape.matches(event):
            return shape
    raise ValueError("not an HTTP request event")  # ApiSource.recognizes refuses it before
