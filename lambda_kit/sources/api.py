"""HTTP requests, every shape Lambda receives them in: the request object and each shape's response.

One request per invocation: ``request_scope`` runs it, not the record loop. The shapes (what
``Request.shape`` says), after AWS's documented payloads and Mangum's adapters:

- ``"v1"``: payload format 1.0, from an API Gateway REST API or an HTTP API with
  ``payloadFormatVersion: "1.0"``; the response has ``headers`` and, for a name sent more than
  once (two ``Set-Cookie``), ``multiValueHeaders``.
- ``"v2"``: HTTP API payload format 2.0; ``cookies`` in the request, a ``cookies`` list in the
  response, repeated response headers joined with commas.
- ``"url"``: a Lambda Function URL: payload format 2.0, answered as ``"v2"``.
- ``"alb"``: an Application Load Balancer target: query strings arrive percent-encoded (decoded
  here), the response carries ``statusDescription`` and ``isBase64Encoded``, and uses
  ``multiValueHeaders`` exactly when the request did (the target group has multi-value headers
  on), else ``headers``.

Bodies are decoded lazily: ``body_bytes`` is the exact bytes (base64 bodies decoded, never a
lossy text decode), ``body`` the UTF-8 text; a ``bytes`` response body goes back base64-encoded
with ``isBase64Encoded: true``. The trace id comes from the ``X-Trace-Id`` header (name
configurable), then a tracer's context (``traceparent``, ``x-datadog-*``, ``X-Amzn-Trace-Id``), or is
generated; every response carries it. Error bodies are ``{"error": message,
"trace_id": ...}`` and never hold an exception's text or a traceback.
"""

from __future__ import annotations

import os
from typing import Any

from .. import codec
from ..errors import HTTPError
from ..trace import new_id
from ..trace.context import TraceContext, has_context, text
from .base import Source, pick_trace


class ApiSource(Source):
    name = "api"
    label = "an HTTP request event (API Gateway, Function URL or ALB)"
    decorator = "api_handler"
    serverless_events = ("httpApi", "http", "alb", "url")
    arn_service = "execute-api"
    delivery = "gateway"
    """``url`` is no event but the function property ``url:`` (a Function URL); ``lambda-kit
    check`` reads it as one."""

    @classmethod
    def recognizes(cls, event: Any) -> bool:
        if type(event) is not dict:
            return False
        context = event.get("requestContext")
        if type(context) is not dict:
            return False
        if "methodArn" in event or "routeArn" in event or "connectionId" in context:
            return False  # a Lambda authorizer's or a WebSocket API's event: no HTTP response fits
        if isinstance(event.get("httpMethod"), str):  # payload format 1.0, ALB
            return True
        http = context.get("http")  # payload format 2.0, Function URLs
        return type(http) is dict and isinstance(http.get("method"), str)


SOURCE = ApiSource


class Headers(dict[str, str]):
    """Request headers with case-insensitive lookup (keys are stored lower-case)."""

    def __init__(self, items: Any = ()) -> None:
        super().__init__({str(key).lower(): value for key, value in dict(items).items()})

    def __setitem__(self, key: str, value: str) -> None:
        super().__setitem__(str(key).lower(), value)

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and super().__contains__(key.lower())

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        return super().get(key.lower(), default)


def _text(value: Any) -> str:
    return value if type(value) is str else str(value)


def _text_dict(value: Any) -> dict[str, str]:
    if not value or type(value) is not dict:
        return {}
    return {_text(k): _text(v) for k, v in value.items() if v is not None}


def _lowered(single: dict[Any, Any]) -> dict[str, str]:
    """Single-value headers with lower-case names: in one pass when every name and value is a
    string (what AWS sends), else one by one."""
    try:
        lowered = {key.lower(): value for key, value in single.items() if type(value) is str}
    except AttributeError:  # a name that is not a string
        lowered = {}
    if len(lowered) != len(single):
        lowered = {}
        for key, value in single.items():
            if value is not None:
                lowered[_text(key).lower()] = _text(value)
    return lowered


def _headers(event: dict[str, Any], shape: str) -> Headers:
    """One value per name: repeated headers joined with ``", "`` (cookies with ``"; "``)."""
    single = event.get("headers")
    single = single if single and type(single) is dict else None
    multi = event.get("multiValueHeaders") if shape != "v2" and shape != "url" else None
    if multi and type(multi) is dict:  # every value; where both forms are sent, it wins
        found: dict[str, str] = {}
        for key, values in multi.items():
            if type(values) is list and values:
                name = key.lower() if type(key) is str else str(key).lower()
                if len(values) == 1 and type(values[0]) is str:
                    found[name] = values[0]
                else:
                    found[name] = ("; " if name == "cookie" else ", ").join([_text(v) for v in values if v is not None])
        if single:
            for key, value in single.items():
                if value is not None:
                    found.setdefault(key.lower() if type(key) is str else str(key).lower(), _text(value))
    else:
        found = _lowered(single) if single else {}
        if shape == "v2" or shape == "url":
            cookies = event.get("cookies")
            if cookies and type(cookies) is list and "cookie" not in found:
                found["cookie"] = "; ".join(_text(c) for c in cookies)
    headers = Headers.__new__(Headers)  # the names are lower-case already
    dict.update(headers, found)
    return headers


def _shape(event: dict[str, Any]) -> str:
    """The request's shape; ``event`` is one ``ApiSource`` recognizes (``httpMethod`` or
    ``requestContext.http.method`` is a string)."""
    context = event["requestContext"]
    if isinstance(event.get("httpMethod"), str):
        return "alb" if "elb" in context else "v1"
    domain = context.get("domainName")
    return "url" if type(domain) is str and ".lambda-url." in domain else "v2"


def _query_all(event: dict[str, Any], shape: str) -> dict[str, list[str]]:
    """Every value of every query parameter, decoded, in request order."""
    single = event.get("queryStringParameters")
    single = single if single and type(single) is dict else {}
    if shape == "v2" or shape == "url":
        raw = event.get("rawQueryString")
        if type(raw) is str and raw and any(type(v) is str and "," in v for v in single.values()):
            # repeated names come comma-joined in queryStringParameters: the raw string tells them apart
            from urllib.parse import parse_qsl

            found: dict[str, list[str]] = {}
            for key, value in parse_qsl(raw, keep_blank_values=True):
                found.setdefault(key, []).append(value)
            return found
        return {_text(key): [_text(value)] for key, value in single.items() if value is not None}
    found = {}
    multi = event.get("multiValueQueryStringParameters")
    if multi and type(multi) is dict:
        for key, values in multi.items():
            if type(values) is list:
                found[_text(key)] = list(values) if all(type(v) is str for v in values) else [_text(v) for v in values if v is not None]
    for key, value in single.items():
        if value is not None:
            found.setdefault(_text(key), [_text(value)])
    if shape == "alb" and found:  # the load balancer passes the query string as the client sent it
        return {_unquoted(key): [_unquoted(v) for v in values] for key, values in found.items()}
    return found


def _unquoted(text: str) -> str:
    """``text`` percent-decoded (``+`` is a space), as a query string is."""
    if "%" not in text and "+" not in text:
        return text
    from urllib.parse import unquote_plus

    return unquote_plus(text)


def _cookies(header: str | None) -> dict[str, str]:
    """``name=value; ...`` as a dict, leniently, as browsers send it (the first of a repeated
    name wins: per RFC 6265 it is the one with the longest path)."""
    cookies: dict[str, str] = {}
    if not header:
        return cookies
    for part in header.split(";"):
        name, sep, value = part.partition("=")
        name, value = (name.strip(), value.strip()) if sep else ("", name.strip())
        if not name and not value:
            continue
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        cookies.setdefault(name, value)
    return cookies


_UNSET: Any = object()


class Request:
    """What an ``api_handler`` function receives, whatever the shape of the event."""

    __slots__ = ("method", "path", "headers", "path_params", "trace_id", "event", "model", "shape", "_multi",
                 "_raw_body", "_base64", "_body", "_body_bytes", "_query", "_query_all", "_cookies", "_json")

    def __init__(self, event: dict[str, Any]) -> None:
        self.event = event
        self.shape = shape = _shape(event)
        self._multi = shape == "alb" and type(event.get("multiValueHeaders")) is dict
        if shape == "v2" or shape == "url":
            http = event["requestContext"]["http"]
            self.method = _text(http["method"]).upper()
            path = event.get("rawPath") or http.get("path")
        else:
            self.method = _text(event["httpMethod"]).upper()
            path = event.get("path")
        self.path = _text(path) if path else "/"
        self.headers = _headers(event, shape)
        self.path_params = _text_dict(event.get("pathParameters"))
        body = event.get("body")
        self._raw_body = "" if body is None else _text(body)
        self._base64 = event.get("isBase64Encoded") is True and bool(self._raw_body)
        self._body = self._body_bytes = self._query = self._query_all = self._cookies = self._json = _UNSET
        self.trace_id = ""
        self.model: Any = None  # the body validated, when api_handler has a model=

    @property
    def body_bytes(self) -> bytes:
        """The body's exact bytes (a base64 body decoded); a body that claims base64 and is not
        answers 400."""
        if self._body_bytes is _UNSET:
            if self._base64:
                import binascii  # base64's functions, loaded for a base64 body only (cold start)

                try:
                    self._body_bytes = binascii.a2b_base64(self._raw_body, strict_mode=True)
                except (binascii.Error, ValueError):
                    raise HTTPError(400, "request body is not valid base64") from None
            else:
                self._body_bytes = self._raw_body.encode("utf-8", "surrogatepass")
        return self._body_bytes  # type: ignore[no-any-return]

    @property
    def body(self) -> str:
        """The body as text; a binary body that is not UTF-8 answers 400 (read ``body_bytes``)."""
        if self._body is _UNSET:
            if self._base64:
                try:
                    self._body = self.body_bytes.decode("utf-8")
                except UnicodeDecodeError:
                    raise HTTPError(400, "request body is not UTF-8 text") from None
            else:
                self._body = self._raw_body
        return self._body  # type: ignore[no-any-return]

    @property
    def body_size(self) -> int:
        """The body's length in bytes, without decoding it."""
        raw = self._raw_body
        if self._base64:
            return len(raw) // 4 * 3 - (raw[-2:].count("=") if len(raw) % 4 == 0 else 0)
        return len(raw) if raw.isascii() else len(raw.encode("utf-8", "surrogatepass"))

    @property
    def query_all(self) -> dict[str, list[str]]:
        """Every value of each query parameter (``?tag=a&tag=b`` gives ``{"tag": ["a", "b"]}``)."""
        if self._query_all is _UNSET:
            self._query_all = _query_all(self.event, self.shape)
        return self._query_all  # type: ignore[no-any-return]

    @property
    def query(self) -> dict[str, str]:
        """One value per query parameter: the last one sent."""
        if self._query is _UNSET:
            single = self.event.get("queryStringParameters")
            if (self.shape == "v2" or self.shape == "url") and self._query_all is _UNSET and not (
                single and type(single) is dict and any(type(v) is not str or "," in v for v in single.values())
            ):  # payload 2.0 without a repeated name: the parameters as API Gateway decoded them
                self._query = _text_dict(single)
            else:
                self._query = {key: values[-1] for key, values in self.query_all.items() if values}
        return self._query  # type: ignore[no-any-return]

    @property
    def cookies(self) -> dict[str, str]:
        """The request's cookies, by name."""
        if self._cookies is _UNSET:
            self._cookies = _cookies(self.headers.get("cookie"))
        return self._cookies  # type: ignore[no-any-return]

    @property
    def json(self) -> Any:
        """The decoded JSON body; a body that is not JSON answers 400 (415 for another content type)."""
        if self._json is _UNSET:
            content_type = self.headers.get("content-type", "")
            media = content_type.split(";", 1)[0].strip().lower()
            if media and media != "application/json" and not media.endswith("+json"):
                raise HTTPError(415, "Content-Type must be application/json")
            body = self.body_bytes if self._base64 else self._raw_body
            try:
                self._json = codec.loads(body)
            except Exception:
                raise HTTPError(400, "request body is not valid JSON") from None
        return self._json

    def __repr__(self) -> str:
        return f"Request({self.method} {self.path}, shape={self.shape!r}, trace_id={self.trace_id!r})"


def request_id(event: Any, context: Any) -> str:
    found = event["requestContext"].get("requestId")
    if isinstance(found, str) and found:
        return found
    return str(getattr(context, "aws_request_id", "") or "")


def trace_of(request: Request, trace_header: str) -> tuple[str, Any, TraceContext | None]:
    """(trace id, rejected header value, tracer's context): the ``trace_header``, then a tracer's
    context in the headers (``traceparent``, ``x-datadog-*``, ``X-Amzn-Trace-Id``, and for this
    one request the invocation's ``_X_AMZN_TRACE_ID``), else a new id."""
    headers = request.headers
    found = headers.get(trace_header)
    xray = headers.get("x-amzn-trace-id") or os.environ.get("_X_AMZN_TRACE_ID")
    if found is None and not has_context(headers, xray):
        return new_id(), None, None
    return pick_trace("api", found, new_id(), headers, text, xray)


# --- responses ----------------------------------------------------------------------------------

_PHRASES: dict[int, str] = {}
UNKNOWN_PHRASE = "Unknown Status"


def status_description(status: int) -> str:
    """ALB's ``statusDescription``: the status code and its reason phrase, one space apart."""
    if not _PHRASES:
        from http import HTTPStatus

        _PHRASES.update((s.value, s.phrase) for s in HTTPStatus)
    return f"{status} {_PHRASES.get(status, UNKNOWN_PHRASE)}"


def _status(value: Any) -> int:
    if type(value) is str and value.isascii() and value.isdigit():
        value = int(value)
    if type(value) is not int or not 100 <= value <= 599:
        raise TypeError(f"the function returned statusCode {value!r}, which is not an HTTP status (100-599)")
    return value


def _header_pairs(response: dict[str, Any]) -> list[tuple[str, str]]:
    """Every header of a returned response dict, whichever way it was given (``headers``,
    ``multiValueHeaders``, ``cookies``), as (name, value) pairs."""
    pairs: list[tuple[str, str]] = []
    headers = response.get("headers")
    if headers:
        pairs.extend((_text(name), _text(value)) for name, value in dict(headers).items() if value is not None)
    multi = response.get("multiValueHeaders")
    if multi:
        for name, values in dict(multi).items():
            for value in values if isinstance(values, list | tuple) else [values]:
                if value is not None:
                    pairs.append((_text(name), _text(value)))
    cookies = response.get("cookies")
    if cookies:
        pairs.extend(("Set-Cookie", _text(cookie)) for cookie in (cookies if isinstance(cookies, list | tuple) else [cookies]))
    return pairs


def _grouped(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
    """Values per header name, names compared case-insensitively (the first spelling kept)."""
    spelling: dict[str, str] = {}
    grouped: dict[str, list[str]] = {}
    for name, value in pairs:
        key = spelling.setdefault(name.lower(), name)
        grouped.setdefault(key, []).append(value)
    return grouped


def _case_variants(name: str, count: int) -> list[str]:
    """``count`` spellings of ``name`` that differ only in case (``Set-Cookie``, ``set-Cookie``,
    ...): how one response sends a header twice through ALB without multi-value headers, as Mangum
    does."""
    letters = [i for i, char in enumerate(name) if char.lower() != char.upper()]
    if count > 2 ** len(letters):  # a 500 that says why, never headers dropped
        raise ValueError(
            f"{count} {name} headers in one response, but an ALB target group without multi-value headers can carry "
            f"at most {2 ** len(letters)} (one per case spelling of the name): turn on multi-value headers for the "
            "target group")
    variants = [name]
    for number in range(1, count):
        chars = list(name)
        for bit, index in enumerate(letters):
            if number >> bit & 1:
                chars[index] = chars[index].swapcase()
        variants.append("".join(chars))
    return variants


def render(request: Request, status: int, pairs: list[tuple[str, str]], body: str, is_base64: bool,
           description: str | None = None) -> dict[str, Any]:
    """The response in the request's shape."""
    shape = request.shape
    grouped = _grouped(pairs)
    response: dict[str, Any] = {"statusCode": status}
    if shape == "alb":
        response["statusDescription"] = description if type(description) is str else status_description(status)
    if shape == "v2" or shape == "url":
        headers: dict[str, str] = {}
        cookies: list[str] = []
        for name, values in grouped.items():
            if name.lower() == "set-cookie":
                cookies.extend(values)
            else:
                headers[name] = ",".join(values)
        response["headers"] = headers
        if cookies:
            response["cookies"] = cookies
    elif shape == "alb" and request._multi:
        response["multiValueHeaders"] = grouped
    elif shape == "alb":
        headers = {}
        for name, values in grouped.items():
            if len(values) == 1:
                headers[name] = values[0]
            elif name.lower() == "set-cookie":
                headers.update(zip(_case_variants(name, len(values)), values, strict=True))
            else:
                headers[name] = ", ".join(values)
        response["headers"] = headers
    else:  # payload format 1.0: API Gateway merges headers and multiValueHeaders
        response["headers"] = {name: values[0] for name, values in grouped.items() if len(values) == 1}
        multi = {name: values for name, values in grouped.items() if len(values) > 1}
        if multi:
            response["multiValueHeaders"] = multi
    response["body"] = body
    response["isBase64Encoded"] = is_base64
    return response


def _ok(request: Request, content_type: str, trace_header: str, trace_id: str, body: str, is_base64: bool) -> dict[str, Any]:
    """A 200 with two headers, in the request's shape (``render``'s result, without its work)."""
    shape = request.shape
    if shape == "alb":
        if request._multi:
            return {"statusCode": 200, "statusDescription": "200 OK", "multiValueHeaders":
                    {"Content-Type": [content_type], trace_header: [trace_id]}, "body": body, "isBase64Encoded": is_base64}
        return {"statusCode": 200, "statusDescription": "200 OK", "headers": {"Content-Type": content_type, trace_header: trace_id},
                "body": body, "isBase64Encoded": is_base64}
    return {"statusCode": 200, "headers": {"Content-Type": content_type, trace_header: trace_id}, "body": body, "isBase64Encoded": is_base64}


def _without(pairs: list[tuple[str, str]], name: str) -> list[tuple[str, str]]:
    lowered = name.lower()
    return [pair for pair in pairs if pair[0].lower() != lowered]


def _base64(data: bytes | bytearray | memoryview) -> str:
    """A binary body as the base64 text API Gateway decodes."""
    import binascii  # base64's functions, loaded for a binary body only (cold start)

    return binascii.b2a_base64(data, newline=False).decode("ascii")


def shape_response(request: Request, result: Any, trace_id: str, trace_header: str) -> dict[str, Any]:
    """A function's return value as the response the request's shape wants, with the trace header.

    A dict with ``statusCode`` is a response (``headers``, ``multiValueHeaders``, ``cookies``,
    ``body``, ``isBase64Encoded``, ``statusDescription``, in any shape); anything else is a 200
    body. A body that is ``bytes`` goes base64-encoded, a ``str`` as it is, anything else as JSON.
    """
    if type(result) is not dict or "statusCode" not in result:
        if isinstance(result, bytes | bytearray | memoryview):
            return _ok(request, "application/octet-stream", trace_header, trace_id, _base64(result), True)
        return _ok(request, "application/json", trace_header, trace_id, codec.dumps(result), False)
    status = _status(result["statusCode"])
    pairs = _without(_header_pairs(result), trace_header)
    body = result.get("body")
    is_base64 = result.get("isBase64Encoded") is True
    default_type = None
    if body is None:
        body = ""
    elif isinstance(body, bytes | bytearray | memoryview):
        body, is_base64, default_type = _base64(body), True, "application/octet-stream"
    elif type(body) is not str:
        body, default_type = codec.dumps(body), "application/json"
    if default_type is not None and not any(name.lower() == "content-type" for name, _ in pairs):
        pairs.append(("Content-Type", default_type))
    pairs.append((trace_header, trace_id))
    return render(request, status, pairs, body, is_base64, result.get("statusDescription"))


def error_response(request: Request, status: int, message: str, trace_id: str, trace_header: str,
                   headers: Any = None) -> dict[str, Any]:
    """``{"error": message, "trace_id": ...}`` with ``status``, in the request's shape."""
    try:
        pairs = _header_pairs({"headers": headers})
    except (TypeError, ValueError):
        pairs = []
    pairs = _without(_without(pairs, "Content-Type"), trace_header)
    pairs += [("Content-Type", "application/json"), (trace_header, trace_id)]
    try:
        body = codec.dumps({"error": message, "trace_id": trace_id})
    except Exception:  # a message JSON cannot hold (an object, lone surrogates): say it safely
        if isinstance(message, str):
            text = message.encode("utf-8", "replace").decode("utf-8")
        else:
            phrase = status_description(status).partition(" ")[2]
            text = "Error" if phrase == UNKNOWN_PHRASE else phrase
        body = codec.dumps({"error": text, "trace_id": trace_id})
    return render(request, status, pairs, body, False)
