"""Trace context on every outgoing hop: AWS calls through botocore's event system, HTTP headers.

``propagate()`` registers ``before-parameter-build`` hooks on boto3's default session, so every
client created afterwards writes the current record's trace context where the next hop reads it
(``propagate(session)`` / ``propagate(client)`` for one session or one client). Inside a decorated
function, each of these calls carries ``trace_id``, ``traceparent`` (the incoming tracer's trace and
parent ids, or ones derived from the trace id when lambda_kit started the trace), ``tracestate``
when one came in, and ``_datadog`` as ddtrace writes it when the incoming context was Datadog's:

- SQS ``SendMessage`` / ``SendMessageBatch``, SNS ``Publish`` / ``PublishBatch``: message
  attributes of those names (``_datadog`` a String on SQS, Binary on SNS, as ddtrace sends them);
- EventBridge ``PutEvents`` (each ``Detail``), Step Functions ``StartExecution`` /
  ``StartSyncExecution`` (``input``), Lambda ``Invoke`` (``Payload``), and with
  ``propagate(kinesis=True)`` Kinesis ``PutRecord`` / ``PutRecords`` (``Data``): one key of the JSON
  object, ``lambda_kit_trace``, holding those fields (and ``_datadog`` at the top too, where ddtrace
  writes it, when the context was Datadog's), which a lambda_kit consumer takes out before the
  function (or its ``model=``) sees the payload; Lambda ``Invoke`` also in
  ``ClientContext.custom``. Kinesis data is written into only when asked: a consumer that is not
  lambda_kit would see the extra key in the producer's records.

A message the caller stamped with its own ``trace_id`` is left as it is, and no value the caller
set is overwritten. A send never fails because of propagation: what would exceed SQS's and SNS's
10 message attributes or a service's size limit is not written, with a WARNING line instead.
``trace_headers()`` gives the same context as HTTP headers for ``requests``, ``urllib3``, ``httpx``.
boto3 (an optional extra) is imported only by ``propagate()`` itself, to reach its default session.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, TypeVar

from .. import codec, log
from . import current_record
from .context import (
    DATADOG,
    STAMP,
    TRACEPARENT,
    TRACESTATE,
    TraceContext,
    datadog_headers,
    fields,
    outgoing,
    traceparent,
)

T = TypeVar("T")
Hook = Callable[..., None]

MAX_MESSAGE_ATTRIBUTES = 10
KIB = 1024
MESSAGE_LIMIT = 256 * KIB  # SQS (the default maximum), SNS, EventBridge entries, Step Functions input
KINESIS_LIMIT = 1024 * KIB
CLIENT_CONTEXT_LIMIT = 3583  # Lambda's ClientContext, base64 characters
INVOKE_LIMIT = {"Event": 256 * KIB}  # asynchronous invocations; synchronous ones take 6 MB
SYNC_INVOKE_LIMIT = 6 * 1024 * KIB


def _current() -> dict[str, Any] | None:
    """What goes on the next hop for the record being processed (None outside one)."""
    record = current_record()
    return None if record is None else fields(record.trace_id, record.context)


def _warn(service: str, operation: str, why: str, names: list[str]) -> None:
    if log.enabled(30):
        record = current_record()
        log.emit(
            "WARN",
            f"trace context not propagated: {why}",
            None if record is None else record.trace_id,
            {"service": service, "operation": operation, "not_written": names},
        )


def _entries(params: dict[str, Any], key: str | None) -> list[dict[str, Any]]:
    """The parameters themselves (``key`` None), or the entries of their batch list ``key``."""
    if key is None:
        return [params]
    entries = params.get(key)
    return (
        [entry for entry in entries if isinstance(entry, dict)] if isinstance(entries, list | tuple) else []
    )


def _utf8_size(data: object) -> int:
    """The size of text (UTF-8) or bytes; 0 for anything else."""
    if isinstance(data, str):
        return len(data.encode("utf-8", "surrogatepass"))
    return len(data) if isinstance(data, bytes | bytearray) else 0


# --- message attributes (SQS, SNS) ------------------------------------------------------------------


def _attributes_hook(entries: str | None, body_key: str, service: str, operation: str) -> Hook:
    """The hook writing the trace context as message attributes of a message (or of each entry)."""

    def hook(params: dict[str, Any], **_: Any) -> None:
        written = _current()
        for entry in _entries(params, entries) if written is not None else ():
            _with_attributes(entry, body_key, written, service, operation)

    return hook


def _with_attributes(
    params: dict[str, Any], body_key: str, written: dict[str, Any], service: str, operation: str
) -> None:
    attributes = params.get("MessageAttributes")
    attributes = {} if attributes is None else attributes
    if not isinstance(attributes, dict) or "trace_id" in attributes:
        return  # the caller's own trace id: their message, left as it is
    added = _fitting(params.get(body_key), attributes, written, service, operation)
    if added:
        attributes.update(added)
        params["MessageAttributes"] = attributes


def _fitting(
    body: object, attributes: dict[str, Any], written: dict[str, Any], service: str, operation: str
) -> dict[str, Any]:
    """The trace fields the message lacks, as attributes, as many as it has room for (SQS and
    SNS take ten, and a size limit): a WARNING names those left out."""
    names = [name for name in written if name not in attributes]
    room = max(MAX_MESSAGE_ATTRIBUTES - len(attributes), 0)
    added = {name: _attribute(name, written[name], service) for name in names[:room]}
    if added and _outgrows(body, attributes, added):
        _warn(service, operation, f"the message would exceed {MESSAGE_LIMIT // KIB} KiB", names)
        return {}
    if len(names) > room:
        _warn(
            service,
            operation,
            f"{service.upper()} allows {MAX_MESSAGE_ATTRIBUTES} message attributes",
            names[room:],
        )
    return added


def _outgrows(body: object, attributes: dict[str, Any], added: dict[str, Any]) -> bool:
    """Whether ``added`` takes a message within the size limit over it."""
    before = (_utf8_size(body) if isinstance(body, str) else 0) + _attribute_size(attributes)
    return before <= MESSAGE_LIMIT < before + _attribute_size(added)


def _attribute(name: str, value: object, service: str) -> dict[str, Any]:
    """A trace field as a message attribute: ``_datadog`` as JSON, Binary on SNS as ddtrace sends
    it (SNS filter policies skip Binary attributes)."""
    if name != DATADOG:
        return {"DataType": "String", "StringValue": value}
    if service == "sns":
        return {"DataType": "Binary", "BinaryValue": codec.dumps(value).encode()}
    return {"DataType": "String", "StringValue": codec.dumps(value)}


def _attribute_size(attributes: dict[str, Any]) -> int:
    """What message attributes count against the message size: names, types and values."""
    return sum(_utf8_size(name) + _attribute_value_size(attribute) for name, attribute in attributes.items())


def _attribute_value_size(attribute: object) -> int:
    if not isinstance(attribute, dict):
        return 0
    return sum(_utf8_size(attribute.get(key)) for key in ("DataType", "StringValue", "BinaryValue"))


# --- JSON payloads (Kinesis, EventBridge, Step Functions, Lambda) -------------------------------------


def _payload_hook(entries: str | None, field: str, limit: int, service: str, operation: str) -> Hook:
    """The hook writing the trace context into the JSON object ``field`` of the call (or of each
    entry)."""

    def hook(params: dict[str, Any], **_: Any) -> None:
        written = _current()
        for entry in _entries(params, entries) if written is not None else ():
            if field in entry:
                entry[field] = _stamped(entry[field], written, limit, service, operation)

    return hook


def _stamped(data: object, written: dict[str, Any], limit: int, service: str, operation: str) -> Any:
    """``data`` (JSON text or bytes) with the trace fields in its ``lambda_kit_trace`` key, in the
    same type; unchanged when it is no JSON object, carries its own ``trace_id`` or stamp, or would
    outgrow ``limit``."""
    doc = _json_object(data)
    if doc is None or "trace_id" in doc or STAMP in doc:
        return data
    added = {STAMP: written}
    if DATADOG in written and DATADOG not in doc:  # where ddtrace writes it, for Datadog's consumers
        added[DATADOG] = written[DATADOG]
    text = codec.dumps({**doc, **added})
    if _utf8_size(data) <= limit < _utf8_size(text):
        _warn(service, operation, f"the payload would exceed {limit // KIB} KiB", list(written))
        return data
    return text if isinstance(data, str) else text.encode()


def _json_object(data: object) -> dict[str, Any] | None:
    """The JSON object in text or bytes ``data``, else None."""
    if not isinstance(data, str | bytes | bytearray):
        return None
    try:
        doc = codec.loads(data)
    except Exception:
        return None
    return doc if type(doc) is dict else None


def _lambda_invoke(params: dict[str, Any], **_: Any) -> None:
    written = _current()
    if written is None:
        return
    if "Payload" in params:
        limit = INVOKE_LIMIT.get(params.get("InvocationType", ""), SYNC_INVOKE_LIMIT)
        params["Payload"] = _stamped(params["Payload"], written, limit, "lambda", "Invoke")
    encoded = _client_context(params.get("ClientContext"), written)
    if encoded is not None:
        params["ClientContext"] = encoded


def _client_context(encoded: object, written: dict[str, Any]) -> str | None:
    """A Lambda ``ClientContext`` whose ``custom`` holds the trace fields (``x-datadog-*``
    directly in it, as ddtrace writes them), or None to leave the caller's as it is: one that is
    not ours to repair (Lambda answers for it), already holds a ``trace_id``, or would be too long."""
    context = _decoded_context(encoded)
    custom = _custom(context)
    if custom is None or "trace_id" in custom:
        return None
    for name, value in written.items():
        for key, item in value.items() if name == DATADOG else ((name, value),):
            custom.setdefault(key, item)
    encoded = base64.b64encode(codec.dumps({**context, "custom": custom}).encode()).decode()
    if len(encoded) > CLIENT_CONTEXT_LIMIT:
        _warn(
            "lambda", "Invoke", f"ClientContext would exceed {CLIENT_CONTEXT_LIMIT} characters", list(written)
        )
        return None
    return encoded


def _custom(context: dict[str, Any] | None) -> dict[str, Any] | None:
    """A copy of the ``custom`` object of a ``ClientContext`` (empty when it has none), or None
    when either is no object."""
    if context is None:
        return None
    custom = context.get("custom")
    if custom is None:
        return {}
    return dict(custom) if isinstance(custom, dict) else None


def _decoded_context(encoded: object) -> dict[str, Any] | None:
    """The caller's ``ClientContext`` (empty when none), or None when it is no base64 JSON object."""
    if not encoded:
        return {}
    try:
        context = codec.loads(base64.b64decode(encoded))
    except Exception:
        return None
    return context if isinstance(context, dict) else None


HOOKS: dict[str, dict[str, Hook]] = {
    "sqs": {
        "SendMessage": _attributes_hook(None, "MessageBody", "sqs", "SendMessage"),
        "SendMessageBatch": _attributes_hook("Entries", "MessageBody", "sqs", "SendMessageBatch"),
    },
    "sns": {
        "Publish": _attributes_hook(None, "Message", "sns", "Publish"),
        "PublishBatch": _attributes_hook("PublishBatchRequestEntries", "Message", "sns", "PublishBatch"),
    },
    "eventbridge": {
        "PutEvents": _payload_hook("Entries", "Detail", MESSAGE_LIMIT, "eventbridge", "PutEvents")
    },
    "sfn": {
        "StartExecution": _payload_hook(None, "input", MESSAGE_LIMIT, "sfn", "StartExecution"),
        "StartSyncExecution": _payload_hook(None, "input", MESSAGE_LIMIT, "sfn", "StartSyncExecution"),
    },
    "lambda": {"Invoke": _lambda_invoke},
}
"""botocore's service name in event names (the hyphenated service id) -> operation -> hook."""
KINESIS_HOOKS: dict[str, dict[str, Hook]] = {
    "kinesis": {
        "PutRecord": _payload_hook(None, "Data", KINESIS_LIMIT, "kinesis", "PutRecord"),
        "PutRecords": _payload_hook("Records", "Data", KINESIS_LIMIT, "kinesis", "PutRecords"),
    },
}
"""Kinesis's, registered only with ``propagate(kinesis=True)``."""


def propagate(target: T | None = None, *, kinesis: bool = False) -> T | None:
    """Write the current trace context on outgoing SQS, SNS, EventBridge, Step Functions and
    Lambda calls, and with ``kinesis=True`` into Kinesis records' data too.

    With no argument: every client created afterwards from boto3's default session (``boto3.client``,
    ``boto3.resource``); with a boto3 or botocore ``Session``: that session's clients created
    afterwards; with a client: that client (returned, so ``propagate(boto3.client("sqs"))`` reads
    well). Safe to call more than once.
    """
    hooks = {**HOOKS, **(KINESIS_HOOKS if kinesis else {})}
    meta = getattr(target, "meta", None)
    if hasattr(meta, "events") and hasattr(meta, "service_model"):  # a client
        service = meta.service_model.service_id.hyphenize()
        _register(meta.events, {name: found for name, found in hooks.items() if name == service})
    else:
        _register(_session_events(target), hooks)
    return target


def _session_events(session: object) -> Any:
    """The event system of a boto3 or botocore session (boto3's default one for None)."""
    if session is None:
        import boto3  # an optional extra, loaded by the one call that needs its default session

        if boto3.DEFAULT_SESSION is None:
            boto3.setup_default_session()
        return boto3.DEFAULT_SESSION.events  # type: ignore[union-attr]
    if hasattr(session, "events"):  # a boto3 Session
        return session.events
    if hasattr(session, "get_component"):  # a botocore Session
        return session.get_component("event_emitter")
    raise TypeError(f"propagate() takes a boto3 client or session, or nothing, not {type(session).__name__}")


def _register(events: object, hooks: dict[str, dict[str, Hook]]) -> None:
    for service, operations in hooks.items():
        for operation, hook in operations.items():
            event = f"before-parameter-build.{service}.{operation}"
            events.register(event, hook, unique_id=f"lambda_kit.{event}")


# --- HTTP ------------------------------------------------------------------------------------------


def trace_headers(header: str = "X-Trace-Id") -> dict[str, str]:
    """The current trace context as HTTP headers, to add to an outgoing request
    (``requests.get(url, headers=trace_headers())``, ``urllib3``, ``httpx`` alike): lambda_kit's id
    in ``header``, ``traceparent`` (and ``tracestate``), Datadog's ``x-datadog-*`` when the incoming
    context was Datadog's, ``X-Amzn-Trace-Id`` when it was X-Ray's. Empty outside a record."""
    record = current_record()
    if record is None:
        return {}
    context = outgoing(record.context, record.trace_id)
    headers = {header: record.trace_id, TRACEPARENT: traceparent(context)}
    if context.tracestate:
        headers[TRACESTATE] = context.tracestate
    headers.update(VENDOR_HEADERS.get(context.vendor, _no_headers)(context))
    return headers


def _xray_header(context: TraceContext) -> dict[str, str]:
    sampled = "" if context.sampled is None else f";Sampled={int(context.sampled)}"
    return {"X-Amzn-Trace-Id": f"Root={context.xray_trace_id};Parent={context.span_id:016x}{sampled}"}


def _no_headers(context: TraceContext) -> dict[str, str]:
    return {}


VENDOR_HEADERS: dict[str, Callable[[TraceContext], dict[str, str]]] = {
    "datadog": datadog_headers,
    "xray": _xray_header,
}
"""The headers of the incoming context's own vendor, besides ``traceparent``."""
