"""What the API Gateway sources share (``api``, ``authorizer``, ``websocket``): request headers read
the way API Gateway sends them, and the trace id read from them.

Payload 1.0 events (REST APIs, WebSocket APIs, REST authorizers) carry ``headers`` and
``multiValueHeaders``; payload 2.0 ones ``headers`` only, repeats joined with commas. ``Headers``
looks names up in any case. The trace id is lambda_kit's header (``X-Trace-Id`` unless the
decorator names another), then a tracer's context in the headers (``traceparent``,
``x-datadog-*``, ``X-Amzn-Trace-Id``, and for the one request of an invocation its
``_X_AMZN_TRACE_ID``), then the fallback.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .._data import dig, is_text, mapping
from ..trace import is_valid_id, new_id, stable_id
from ..trace.context import TraceContext, has_context, text
from .base import as_text, pick_trace

if TYPE_CHECKING:
    from ..context import LambdaContext


class Headers(dict[str, str]):
    """Request headers with case-insensitive lookup (keys are stored lower-case). lambda_kit's own
    lookups name headers in lower case: they use ``dict``'s, which folds no case."""

    def __init__(self, items: Any = ()) -> None:
        super().__init__({str(key).lower(): value for key, value in dict(items).items()})

    @classmethod
    def of_lowered(cls, found: dict[str, str]) -> Headers:
        """Headers whose names are lower-case already."""
        headers = cls.__new__(cls)
        dict.update(headers, found)
        return headers

    def __setitem__(self, key: str, value: str) -> None:
        super().__setitem__(str(key).lower(), value)

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and super().__contains__(key.lower())

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        return super().get(key.lower(), default)


def lowered(single: Any) -> dict[str, str]:
    """Single-value headers with lower-case names, as text; ``None`` values left out."""
    if not single or type(single) is not dict:
        return {}
    return {as_text(key).lower(): as_text(value) for key, value in single.items() if value is not None}


def joined(name: str, values: list[Any]) -> str:
    """One header's values as one: joined with ``", "`` (cookies with ``"; "``)."""
    if len(values) == 1 and type(values[0]) is str:
        return values[0]
    separator = "; " if name == "cookie" else ", "
    return separator.join([as_text(value) for value in values if value is not None])


def multi_valued(event: dict[str, Any]) -> dict[str, str]:
    """Payload 1.0 and ALB headers: every value of ``multiValueHeaders`` (where both forms are
    sent, it wins), then the names only ``headers`` has."""
    multi = event.get("multiValueHeaders")
    if not multi or type(multi) is not dict:
        return lowered(event.get("headers"))
    found: dict[str, str] = {}
    for key, values in multi.items():
        if type(values) is list and values:
            name = as_text(key).lower()
            found[name] = joined(name, values)
    for key, value in mapping(event.get("headers")).items():
        if value is not None:
            found.setdefault(as_text(key).lower(), as_text(value))
    return found


def header_trace(
    source: str, headers: dict[str, str], trace_header: str, fallback: Any = None, found: Any = None
) -> tuple[str, Any, TraceContext | None]:
    """(trace id, rejected header value, tracer's context) of a request whose lower-cased
    ``headers`` are these: ``trace_header`` (else ``found``, an id the request carries elsewhere),
    then a tracer's context, then ``fallback`` (a stable id made of it), or with none a new id."""
    found = dict.get(headers, trace_header.lower(), found)
    xray = dict.get(headers, "x-amzn-trace-id") or os.environ.get("_X_AMZN_TRACE_ID")
    if has_context(headers.keys(), xray):  # the names, lower-case: looked up with no case folding
        return pick_trace(source, found, new_id() if fallback is None else fallback, headers, text, xray)
    if is_valid_id(found):  # pick_trace's answer without a context, with no new id made for nothing
        return found, None, None
    return (new_id() if fallback is None else stable_id(fallback)), found, None


def request_id(event: object, context: LambdaContext | None) -> str:
    """The request's id: API Gateway's ``requestContext.requestId``, else Lambda's request id."""
    found = dig(event, "requestContext", "requestId")
    if is_text(found):
        return found  # type: ignore[no-any-return]
    return str(getattr(context, "aws_request_id", "") or "")
