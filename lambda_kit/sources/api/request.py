"""What an ``api_handler`` function receives, whatever the shape of the event: ``Request``.

Bodies are decoded lazily: ``body_bytes`` is the exact bytes (base64 bodies decoded, never a lossy
text decode), ``body`` the UTF-8 text, ``json`` the decoded JSON (``parse_json``: whitespace around
it and a leading byte order mark allowed, under every codec). The trace id comes from the
``X-Trace-Id`` header (name configurable), then a tracer's context (``traceparent``,
``x-datadog-*``, ``X-Amzn-Trace-Id``), or is generated.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ... import codec
from ...errors import HTTPError, InvalidPayload
from ...trace.context import TraceContext
from .._gateway import Headers, header_trace
from ..base import as_text
from .shapes import shape_of

if TYPE_CHECKING:
    pass

NOT_JSON: Any = object()
"""What ``parse_json`` returns for text that is not JSON."""

_UNSET: Any = object()


def parse_json(data: str | bytes) -> Any:
    """JSON text (``str``, or UTF-8 ``bytes``) decoded by the codec, or ``NOT_JSON``. A leading
    byte order mark is ignored (RFC 8259 lets a parser do so), whatever the codec: the one rule for
    ``request.json`` and for what the log shows of a body."""
    bom: Any = "\ufeff" if isinstance(data, str) else b"\xef\xbb\xbf"
    if data.startswith(bom):
        data = data[len(bom) :]
    try:
        return codec.loads(data)
    except Exception:
        return NOT_JSON


def _text_dict(value: object) -> dict[str, str]:
    if not value or type(value) is not dict:
        return {}
    return {as_text(key): as_text(item) for key, item in value.items() if item is not None}


def _cookie(part: str) -> tuple[str, str] | None:
    """One ``name=value`` of a ``Cookie`` header (a part without ``=`` is a value without a name),
    the quotes around a value taken off; None for an empty part."""
    name, sep, value = part.partition("=")
    name, value = (name.strip(), value.strip()) if sep else ("", name.strip())
    if not name and not value:
        return None
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    return name, value


def _cookies(header: str | None) -> dict[str, str]:
    """``name=value; ...`` as a dict, leniently, as browsers send it (the first of a repeated
    name wins: per RFC 6265 it is the one with the longest path)."""
    cookies: dict[str, str] = {}
    for found in map(_cookie, header.split(";") if header else ()):
        if found is not None:
            cookies.setdefault(*found)
    return cookies


class Request:
    """What an ``api_handler`` function receives, whatever the shape of the event.

    ``shape`` names the front door (``"v1"``, ``"v2"``, ``"url"``, ``"alb"``) and ``front_door``
    is its class (``lambda_kit.sources.api.shapes``). ``path_params`` holds the event's path
    parameters, and a ``Router``'s, from its route template.
    """

    __slots__ = (
        "method",
        "path",
        "headers",
        "path_params",
        "trace_id",
        "event",
        "model",
        "shape",
        "front_door",
        "_raw_body",
        "_base64",
        "_body",
        "_body_bytes",
        "_query",
        "_query_all",
        "_cookies",
        "_json",
    )

    def __init__(self, event: dict[str, Any]) -> None:
        self.event = event
        self.front_door = door = shape_of(event)
        self.shape = door.name
        self.method = door.method(event)
        self.path = door.path(event)
        self.headers = Headers.of_lowered(door.headers(event))
        self.path_params = _text_dict(event.get("pathParameters"))
        body = event.get("body")
        self._raw_body = "" if body is None else str(body)
        self._base64 = event.get("isBase64Encoded") is True and bool(self._raw_body)
        self._body = self._body_bytes = self._query = self._query_all = self._cookies = self._json = _UNSET
        self.trace_id = ""
        self.model: Any = None  # the body validated, when api_handler (or the route) has a model=

    @property
    def body_bytes(self) -> bytes:
        """The body's exact bytes (a base64 body decoded); a body that claims base64 and is not
        answers 400."""
        if self._body_bytes is _UNSET:
            raw = self._raw_body
            self._body_bytes = self._decoded() if self._base64 else raw.encode("utf-8", "surrogatepass")
        return self._body_bytes  # type: ignore[no-any-return]

    def _decoded(self) -> bytes:
        try:
            return binascii.a2b_base64(self._raw_body, strict_mode=True)
        except (binascii.Error, ValueError):
            raise HTTPError(400, "request body is not valid base64") from None

    @property
    def body(self) -> str:
        """The body as text; a binary body that is not UTF-8 answers 400 (read ``body_bytes``)."""
        if self._body is _UNSET:
            self._body = self._utf8() if self._base64 else self._raw_body
        return self._body  # type: ignore[no-any-return]

    def _utf8(self) -> str:
        try:
            return self.body_bytes.decode("utf-8")
        except UnicodeDecodeError:
            raise HTTPError(400, "request body is not UTF-8 text") from None

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
            self._query_all = self.front_door.query_all(self.event)
        return self._query_all  # type: ignore[no-any-return]

    @property
    def query(self) -> dict[str, str]:
        """One value per query parameter: the last one sent."""
        if self._query is _UNSET:
            self._query = {key: values[-1] for key, values in self.query_all.items() if values}
        return self._query  # type: ignore[no-any-return]

    @property
    def cookies(self) -> dict[str, str]:
        """The request's cookies, by name."""
        if self._cookies is _UNSET:
            self._cookies = _cookies(dict.get(self.headers, "cookie"))
        return self._cookies  # type: ignore[no-any-return]

    @property
    def json(self) -> Any:
        """The decoded JSON body (``parse_json``); a body that is not JSON answers 400 (415 for
        another content type)."""
        if self._json is _UNSET:
            media = dict.get(self.headers, "content-type", "").split(";", 1)[0].strip().lower()
            if media and media != "application/json" and not media.endswith("+json"):
                raise HTTPError(415, "Content-Type must be application/json")
            value = parse_json(self.body_bytes if self._base64 else self._raw_body)
            if value is NOT_JSON:
                raise HTTPError(400, "request body is not valid JSON")
            self._json = value
        return self._json

    def __repr__(self) -> str:
        return f"Request({self.method} {self.path}, shape={self.shape!r}, trace_id={self.trace_id!r})"


def trace_of(request: Request, trace_header: str) -> tuple[str, Any, TraceContext | None]:
    """(trace id, rejected header value, tracer's context): the ``trace_header``, then a tracer's
    context in the headers (``traceparent``, ``x-datadog-*``, ``X-Amzn-Trace-Id``, and for this
    one request the invocation's ``_X_AMZN_TRACE_ID``), else a new id."""
    return header_trace("api", request.headers, trace_header)


def validated(validate: Callable[[Any], Any], request: Request) -> Any:
    """The JSON body (400/415 when it is not JSON) validated; 422 naming the fields when it does not fit."""
    try:
        return validate(request.json)
    except InvalidPayload as exc:
        raise HTTPError(422, f"request body does not fit {exc.model}: {exc.listing}") from None
