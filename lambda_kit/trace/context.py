"""Tracers' context: W3C ``traceparent``, Datadog and AWS X-Ray, read from a record and written on.

A record can carry, besides lambda_kit's own ``trace_id``, the context of a tracer its producer
ran (OpenTelemetry, Datadog, X-Ray). ``read`` looks for one in the documented order, the same for
every source: ``traceparent`` (with ``tracestate``), then Datadog (a ``_datadog`` object or the
``x-datadog-trace-id`` / ``x-datadog-parent-id`` pair), then the X-Ray header the source found.
A source adapter only says where its producers put things: a *carrier*, a mapping from those
names to values, with a ``read`` that turns one of its values into text, bytes or a dict
(``sources.base.pick_trace`` is the one call an adapter makes). A value that is present and
malformed is never used: it gets one WARNING line, with the value escaped, and the next place in
the order is tried.

Every context becomes one 128-bit trace id and a 64-bit parent (span) id, the way the vendors map
them onto each other: a W3C trace-id is the 32 hex digits; an X-Ray ``Root=1-5759e988-bd86...``
is ``5759e988bd86...``; a Datadog trace id is the low 64 bits (``_dd.p.tid`` holds the high 64).
From it come the vendors' log correlation keys (``LOG_KEYS``) and what is written on the next
hop: ``traceparent`` with the incoming parent id (lambda_kit records no span of its own, so the
consumer's span hangs under the producer's), ``tracestate`` as received, and ``_datadog`` as
ddtrace writes it when the context was Datadog's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .. import codec
from . import digest

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
DATADOG = "_datadog"
STAMP = "lambda_kit_trace"
"""The one key ``propagate()`` adds to a JSON payload (Kinesis data, EventBridge detail, Step
Functions input, a Lambda payload): an object of the trace fields, which a lambda_kit consumer takes
out before the function sees the payload."""
DD_TRACE_ID = "x-datadog-trace-id"
DD_PARENT_ID = "x-datadog-parent-id"
DD_PRIORITY = "x-datadog-sampling-priority"
DD_ORIGIN = "x-datadog-origin"
DD_TAGS = "x-datadog-tags"
DD_HEADERS = (DD_TRACE_ID, DD_PARENT_ID, DD_PRIORITY, DD_ORIGIN, DD_TAGS)

LOG_KEYS = ("otelTraceID", "otelSpanID", "dd.trace_id", "dd.span_id", "xray_trace_id")
"""The keys a log line gets when its record carries a tracer's context: OpenTelemetry's (the
names its Python logging instrumentation injects; ``trace_id`` is lambda_kit's own), Datadog's
log-trace correlation (decimal, the low 64 bits) and X-Ray's (as Powertools Logger names it)."""

LOW_64 = 2**64 - 1
# The patterns of the formats read below, compiled on first use (re caches them): most processes
# read no tracer's context.
# OpenTelemetry's traceparent: version ff, and all-zero trace or parent ids, are invalid
_TRACEPARENT = (
    r"^[ \t]*(?!ff)([0-9a-f]{2})-(?!0{32})([0-9a-f]{32})-(?!0{16})([0-9a-f]{16})-([0-9a-f]{2})(-.*)?[ \t]*$"
)
_XRAY_ROOT = r"1-([0-9a-f]{8})-([0-9a-f]{24})"
_HEX64 = r"(?!0{16})[0-9a-f]{16}"  # a span id, the high bits of a trace id: not all zeros
_TRACE_ID = r"(?!0{32})[0-9a-f]{32}"
_U64 = r"[0-9]{1,20}"
_PRIORITY = r"-?[0-9]{1,9}"
_TRACESTATE = r"[\x20-\x7e]{0,512}"

if TYPE_CHECKING:
    Read = Callable[[Any], Any]
"""How a carrier's value reads: into text, bytes, a dict (a ``_datadog`` object) or None."""


class TraceContext:
    """A tracer's context: ``trace_id`` (128-bit int), ``span_id`` (the parent's 64-bit id, or
    None when the carrier gave none), ``sampled`` (None: not said), ``vendor`` (``"w3c"``,
    ``"datadog"`` or ``"xray"``: where it was read), ``tracestate`` (W3C, passed on as received)
    and ``datadog`` (the incoming ``x-datadog-*`` priority, origin and tags, passed on)."""

    __slots__ = ("vendor", "trace_id", "span_id", "sampled", "tracestate", "datadog")

    def __init__(
        self,
        vendor: str,
        trace_id: int,
        span_id: int | None = None,
        sampled: bool | None = None,
        tracestate: str | None = None,
        datadog: dict[str, str] | None = None,
    ) -> None:
        self.vendor = vendor
        self.trace_id = trace_id
        self.span_id = span_id
        self.sampled = sampled
        self.tracestate = tracestate
        self.datadog = datadog

    @property
    def w3c_trace_id(self) -> str:
        return f"{self.trace_id:032x}"

    @property
    def xray_trace_id(self) -> str:
        text = self.w3c_trace_id
        return f"1-{text[:8]}-{text[8:]}"

    @property
    def datadog_trace_id(self) -> str:
        return str(self.trace_id & LOW_64)

    def display_id(self) -> str:
        """The trace id as its own vendor prints it: what a user pastes from their tracer."""
        if self.vendor == "datadog":
            return self.datadog_trace_id
        if self.vendor == "xray":
            return self.xray_trace_id
        return self.w3c_trace_id

    def log_keys(self) -> dict[str, str]:
        """The vendors' log correlation keys (``LOG_KEYS``) for this context."""
        keys = {"otelTraceID": self.w3c_trace_id}
        if self.span_id is not None:
            keys["otelSpanID"] = f"{self.span_id:016x}"
        keys["dd.trace_id"] = self.datadog_trace_id
        if self.span_id is not None:
            keys["dd.span_id"] = str(self.span_id)
        keys["xray_trace_id"] = self.xray_trace_id
        return keys

    def __repr__(self) -> str:
        span = "-" if self.span_id is None else f"{self.span_id:016x}"
        return f"TraceContext({self.vendor}, {self.w3c_trace_id}, {span}, sampled={self.sampled})"


# --- reading -----------------------------------------------------------------------------------


def text(value: object) -> Any:
    """The plain ``Read``: a value as it is (payload fields, HTTP headers)."""
    return value


def has_context(carrier: Mapping[str, Any] | None, xray: object = None) -> bool:
    """Whether ``carrier`` (or the X-Ray header) holds any tracer's context: the cheap check that
    keeps records without one (most) from paying for ``read``."""
    if xray is not None:
        return True
    if not carrier:
        return False
    return TRACEPARENT in carrier or DATADOG in carrier or DD_TRACE_ID in carrier


def read(
    carrier: Mapping[str, Any] | None, value: Read = text, xray: object = None
) -> tuple[TraceContext | None, list[tuple[str, Any]]]:
    """(the first valid context in ``carrier``, in the documented order: ``traceparent``, Datadog,
    then the ``xray`` header; else None) and the values present and malformed before it, skipped
    (where, value as it reads or, unreadable, as it came)."""
    refused: list[tuple[str, Any]] = []
    carrier = carrier or {}
    for where, place in _PLACES:
        found = place(carrier, value, xray)
        if found is None:
            continue
        context, shown = found
        if context is not None:
            return context, refused
        refused.append((where, _text_of(shown) or shown))
    return None, refused


if TYPE_CHECKING:
    Found = tuple[TraceContext | None, Any] | None
    """What a place holds: None when nothing is there, else (its context or None, what it holds)."""


def _traceparent(carrier: Mapping[str, Any], value: Read, xray: object) -> Found:
    found = carrier.get(TRACEPARENT)
    if found is None:
        return None
    read_value = value(found)
    context = parse_traceparent(_text_of(read_value), _text_of(value(carrier.get(TRACESTATE))))
    return context, found if read_value is None else read_value


def _datadog_object(carrier: Mapping[str, Any], value: Read, xray: object) -> Found:
    found = carrier.get(DATADOG)
    if found is None:
        return None
    read_value = value(found)
    return parse_datadog_object(read_value), found if read_value is None else read_value


def _datadog_headers(carrier: Mapping[str, Any], value: Read, xray: object) -> Found:
    if carrier.get(DD_TRACE_ID) is None:
        return None
    headers = {name: _text_of(value(carrier.get(name))) for name in DD_HEADERS}
    return parse_datadog(headers), {name: item for name, item in headers.items() if item is not None}


def _xray(carrier: Mapping[str, Any], value: Read, xray: object) -> Found:
    return None if xray is None else (parse_xray(_text_of(xray)), xray)


_PLACES = (
    (TRACEPARENT, _traceparent),
    (DATADOG, _datadog_object),
    ("x-datadog-* headers", _datadog_headers),
    ("X-Ray trace header", _xray),
)


def _text_of(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return None


def parse_traceparent(value: str | None, tracestate: str | None = None) -> TraceContext | None:
    """A W3C ``traceparent`` (``00-<32 hex>-<16 hex>-<2 hex>``), as OpenTelemetry's propagator
    takes it: lowercase hex, trace-id and parent-id not all zeros, version ``ff`` refused, and
    version ``00`` with nothing after the flags."""
    match = re.search(_TRACEPARENT, value) if value is not None and len(value) <= 512 else None
    if match is None or (match[1] == "00" and match[5]):
        return None
    state = tracestate if tracestate and re.fullmatch(_TRACESTATE, tracestate) else None
    return TraceContext("w3c", int(match[2], 16), int(match[3], 16), bool(int(match[4], 16) & 1), state)


def parse_xray(value: str | None) -> TraceContext | None:
    """An X-Ray trace header (``Root=1-<8 hex>-<24 hex>;Parent=<16 hex>;Sampled=1``, fields in
    any order, ``Self=`` and others ignored): the root is required, the parent optional."""
    fields = _xray_fields(value) if value is not None and len(value) <= 1024 else {}
    root = re.fullmatch(_XRAY_ROOT, fields.get("Root", ""))
    parent = fields.get("Parent")
    if root is None or (parent is not None and re.fullmatch(_HEX64, parent) is None):
        return None
    sampled = {"1": True, "0": False}.get(fields.get("Sampled", ""))
    return TraceContext(
        "xray", int(root[1] + root[2], 16), None if parent is None else int(parent, 16), sampled
    )


def _xray_fields(value: str) -> dict[str, str]:
    """The ``key=value`` fields of an X-Ray header; the first of a repeated key counts."""
    fields: dict[str, str] = {}
    for part in value.strip().split(";"):
        key, sep, item = part.strip().partition("=")
        if sep:
            fields.setdefault(key, item.strip())
    return fields


def parse_datadog(headers: Mapping[str, str | None]) -> TraceContext | None:
    """Datadog's ``x-datadog-*`` headers, as ddtrace extracts them: a decimal trace id in
    1..2**64-1 (``_dd.p.tid`` in ``x-datadog-tags`` adds the high 64 bits), a decimal parent id
    (0: none), an integer sampling priority."""
    try:
        trace_id = _u64(headers.get(DD_TRACE_ID), low=1)
        parent = headers.get(DD_PARENT_ID)
        span_id = 0 if parent is None else _u64(parent)
        priority = headers.get(DD_PRIORITY)
        sampled = None if priority is None else _priority(priority) > 0
        high = _high_bits(headers.get(DD_TAGS) or "")
    except ValueError:
        return None
    passed = {name: headers[name] for name in (DD_PRIORITY, DD_ORIGIN, DD_TAGS) if headers.get(name)}
    return TraceContext("datadog", high << 64 | trace_id, span_id or None, sampled, None, passed)


def _u64(value: str | None, low: int = 0) -> int:
    """A decimal 64-bit id, at least ``low``, else ``ValueError``."""
    number = int(value) if value is not None and re.fullmatch(_U64, value) else -1
    if not low <= number <= LOW_64:
        raise ValueError("not a 64-bit decimal id")
    return number


def _priority(value: str) -> int:
    if re.fullmatch(_PRIORITY, value) is None:
        raise ValueError("not a sampling priority")
    return int(value)


def _high_bits(tags: str) -> int:
    """The ``_dd.p.tid`` tag's 64 high bits (0 when absent); ``ValueError`` when it is malformed."""
    for tag in tags.split(","):
        key, _, item = tag.partition("=")
        if key.strip() == "_dd.p.tid":
            if re.fullmatch(_HEX64, item.strip()) is None:
                raise ValueError("_dd.p.tid is not 16 hex digits")
            return int(item.strip(), 16)
    return 0


def parse_datadog_object(value: object) -> TraceContext | None:
    """A ``_datadog`` value (ddtrace writes it on SQS, SNS, Kinesis, EventBridge, Step Functions):
    its ``x-datadog-*`` headers as an object, or that object as JSON text."""
    if isinstance(value, str | bytes | bytearray):
        value = _json_object(value)
    if type(value) is not dict:
        return None
    headers = {
        name: item if isinstance(item, str) else None for name, item in value.items() if isinstance(name, str)
    }
    if DD_TRACE_ID in headers:
        return parse_datadog(headers)
    return parse_traceparent(headers.get(TRACEPARENT), headers.get(TRACESTATE))


def _json_object(text: str | bytes | bytearray) -> Any:
    try:
        return codec.loads(text)
    except Exception:
        return None


# --- writing -----------------------------------------------------------------------------------


def outgoing(context: TraceContext | None, trace_id: str) -> TraceContext:
    """The context to write on the next hop: the incoming one, or (lambda_kit started the trace)
    one derived from ``trace_id`` alone, stable across retries of the record: a trace id that is
    already 32 hex digits or an X-Ray id is that trace id; any other is digested."""
    if context is not None and context.span_id is not None:
        return context
    derived = derived_ids(trace_id if context is None else context.w3c_trace_id)
    if context is not None:  # a context without a parent id (an X-Ray Root alone): give it one
        return TraceContext(
            context.vendor, context.trace_id, derived[1], context.sampled, context.tracestate, context.datadog
        )
    return TraceContext("lambda_kit", derived[0], derived[1], True)


def derived_ids(trace_id: str) -> tuple[int, int]:
    """(128-bit trace id, 64-bit span id) for a lambda_kit trace id, never zero: a W3C trace id
    (32 hex digits) or an X-Ray one is itself; any other is digested."""
    hashed = digest("blake2b", trace_id.encode("utf-8", "surrogatepass"), 24)
    span = int.from_bytes(hashed[16:], "big") or 1
    if re.fullmatch(_TRACE_ID, trace_id):
        return int(trace_id, 16), span
    root = re.fullmatch(_XRAY_ROOT, trace_id)
    if root is not None:
        return int(root[1] + root[2], 16) or 1, span
    return int.from_bytes(hashed[:16], "big") or 1, span


def traceparent(context: TraceContext) -> str:
    """``context`` as a W3C ``traceparent`` (its span id must be set: see ``outgoing``)."""
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{'00' if context.sampled is False else '01'}"


def datadog_headers(context: TraceContext) -> dict[str, str]:
    """``context`` as ddtrace writes Datadog's headers (and the ``_datadog`` object): the low 64
    bits in ``x-datadog-trace-id``, the parent id, and the incoming priority, origin and tags
    (``_dd.p.tid`` included, so the 128-bit id survives)."""
    passed = context.datadog or {}
    headers = {DD_TRACE_ID: str(context.trace_id & LOW_64), DD_PARENT_ID: str(context.span_id or 0), **passed}
    tags = _with_high_bits(passed.get(DD_TAGS) or "", context.trace_id >> 64)
    if tags:
        headers[DD_TAGS] = tags
    if DD_PRIORITY not in headers and context.sampled is not None:
        headers[DD_PRIORITY] = "1" if context.sampled else "0"
    return headers


def _with_high_bits(tags: str, high: int) -> str:
    """``x-datadog-tags`` holding the trace id's high 64 bits (``_dd.p.tid``) when it has any."""
    if not high or "_dd.p.tid=" in tags:
        return tags
    return f"{tags},_dd.p.tid={high:016x}" if tags else f"_dd.p.tid={high:016x}"


def fields(trace_id: str, context: TraceContext | None) -> dict[str, Any]:
    """What goes on the next hop for a record with ``trace_id`` and ``context``: ``trace_id``,
    ``traceparent``, ``tracestate`` when one came in, and ``_datadog`` (an object) when the
    context was Datadog's. Names and values as message attributes and JSON fields take them."""
    out = outgoing(context, trace_id)
    written: dict[str, Any] = {"trace_id": trace_id, TRACEPARENT: traceparent(out)}
    if out.tracestate:
        written[TRACESTATE] = out.tracestate
    if out.vendor == "datadog":
        written[DATADOG] = datadog_headers(out)
    return written
