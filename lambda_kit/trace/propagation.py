"""Trace context on every outgoing hop: AWS calls through botocore's event system, HTTP headers.

``propagate()`` registers ``before-parameter-build`` hooks on boto3's default session, so every
client created afterwards writes the current record's trace context where the next hop reads it
(``propagate(session)`` / ``propagate(client)`` for one session or one client). Inside a decorated
function, each of these calls carries ``trace_id``, ``traceparent`` (the incoming tracer's trace and
parent ids, or ones derived from the trace id when lambda_kit started the trace), ``tracestate``
when one came in, and ``_datadog`` as ddtrace writes it when the incoming context was Datadog's:

- SQS ``SendMessage`` / ``SendMessageBatch``, SNS ``Publish`` / ``PublishBatch``: message
  attributes of those names (``_datadog`` a String on SQS, Binary on SNS, as ddtrace sends them);
- Kinesis ``PutRecord`` / ``PutRecords`` (``Data``), EventBridge ``PutEvents`` (each ``Detail``),
  Step Functions ``StartExecution`` / ``StartSyncExecution`` (``input``), Lambda ``Invoke``
  (``Payload``): fields of the JSON object; Lambda ``Invoke`` also in ``ClientContext.custom``.

A message the caller stamped with its own ``trace_id`` is left as it is, and no value the caller
set is overwritten. A send never fails because of propagation: what would exceed SQS's and SNS's
10 message attributes or a service's size limit is not written, with a WARNING line instead.
``trace_headers()`` gives the same context as HTTP headers for ``requests``, ``urllib3``, ``httpx``.
botocore is imported only by ``propagate()`` itself.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, TypeVar

from .. import codec, log
from . import current_record
from .context import DATADOG, TRACEPARENT, TRACESTATE, datadog_headers, fields, outgoing, traceparent

T = TypeVar("T")

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
        log.emit("WARNING", f"trace context not propagated: {why}", None if record is None else record.trace_id,
                 {"service": service, "operation": operation, "not_written": names})


# --- message attributes (SQS, SNS) ------------------------------------------------------------------

def _attribute_size(attributes: dict[str, Any]) -> int:
    size = 0
    for name, attribute in attributes.items():
        size += len(name.encode())
        if isinstance(attribute, dict):
            for key in ("DataType", "StringValue", "BinaryValue"):
                value = attribute.get(key)
                if isinstance(value, str):
                    size += len(value.encode("utf-8", "surrogatepass"))
                elif isinstance(value, bytes | bytearray):
                    size += len(value)
    return size


def _with_attributes(params: dict[str, Any], body_key: str, written: dict[str, Any], service: str, operation: str) -> None:
    attributes = params.get("MessageAttributes")
    if attributes is None:
        attributes = {}
    elif not isinstance(attributes, dict) or "trace_id" in attributes:
        return  # the caller's own trace id: their message, left as it is
    added: dict[str, Any] = {}
    left_out = []
    for name, value in written.items():
        if name in attributes:
            continue
        if len(attributes) + len(added) >= MAX_MESSAGE_ATTRIBUTES:
            left_out.append(name)
        elif name == DATADOG and service == "sns":  # Binary, as ddtrace sends it (filter policies skip it)
            added[name] = {"DataType": "Binary", "BinaryValue": codec.dumps(value).encode()}
        elif name == DATADOG:
            added[name] = {"DataType": "String", "StringValue": codec.dumps(value)}
        else:
            added[name] = {"DataType": "String", "StringValue": value}
    body = params.get(body_key)
    size = len(body.encode("utf-8", "surrogatepass")) if isinstance(body, str) else 0
    before = size + _attribute_size(attributes)
    if added and before <= MESSAGE_LIMIT < before + _attribute_size(added):
        left_out, added = [*added, *left_out], {}
        _warn(service, operation, f"the message would exceed {MESSAGE_LIMIT // KIB} KiB", left_out)
    elif left_out:
        _warn(service, operation, f"{service.upper()} allows {MAX_MESSAGE_ATTRIBUTES} message attributes", left_out)
    if added:
        attributes.update(added)
        params["MessageAttributes"] = attributes


def _sqs_send(params: dict[str, Any], **_: Any) -> None:
    written = _current()
    if written is not None:
        _with_attributes(params, "MessageBody", written, "sqs", "SendMessage")


def _sqs_send_batch(params: dict[str, Any], **_: Any) -> None:
    written = _current()
    if written is not None:
        for entry in params.get("Entries") or ():
            if isinstance(entry, dict):
                _with_attributes(entry, "MessageBody", written, "sqs", "SendMessageBatch")


def _sns_publish(params: dict[str, Any], **_: Any) -> None:
    written = _current()
    if written is not None:
        _with_attributes(params, "Message", written, "sns", "Publish")


def _sns_publish_batch(params: dict[str, Any], **_: Any) -> None:
    written = _current()
    if written is not None:
        for entry in params.get("PublishBatchRequestEntries") or ():
            if isinstance(entry, dict):
                _with_attributes(entry, "Message", written, "sns", "PublishBatch")


# --- JSON payloads (Kinesis, EventBridge, Step Functions, Lambda) -------------------------------------

def _stamped(data: Any, written: dict[str, Any], limit: int, service: str, operation: str) -> Any:
    """``data`` (JSON text or bytes) with the trace fields it lacks, in the same type; unchanged
    when it is no JSON object, carries its own ``trace_id``, or would outgrow ``limit``."""
    if not isinstance(data, str | bytes | bytearray):
        return data
    try:
        doc = codec.loads(data)
    except Exception:
        return data
    if type(doc) is not dict or "trace_id" in doc:
        return data
    added = {name: value for name, value in written.items() if name not in doc}
    if not added:
        return data
    doc.update(added)
    text = codec.dumps(doc)
    before = len(data) if not isinstance(data, str) else len(data.encode("utf-8", "surrogatepass"))
    if before <= limit < len(text.encode("utf-8", "surrogatepass")):
        _warn(service, operation, f"the payload would exceed {limit // KIB} KiB", list(added))
        return data
    return text if isinstance(data, str) else text.encode()


def _kinesis_put(params: dict[str, Any], **_: Any) -> None:
    written = _current()
    if written is not None and "Data" in params:
        params["Data"] = _stamped(params["Data"], written, KINESIS_LIMIT, "kinesis", "PutRecord")


def _kinesis_put_batch(params: dict[str, Any], **_: Any) -> None:
    written = _current()
    if written is not None:
        for entry in params.get("Records") or ():
            if isinstance(entry, dict) and "Data" in entry:
                entry["Data"] = _stamped(entry["Data"], written, KINESIS_LIMIT, "kinesis", "PutRecords")


def _events_put(params: dict[str, Any], **_: Any) -> None:
    written = _current()
    if written is not None:
        for entry in params.get("Entries") or ():
            if isinstance(entry, dict) and "Detail" in entry:
                entry["Detail"] = _stamped(entry["Detail"], written, MESSAGE_LIMIT, "eventbridge", "PutEvents")


def _sfn_start(params: dict[str, Any], **_: Any) -> None:
    written = _current()
    if written is not None and "input" in params:
        params["input"] = _stamped(params["input"], written, MESSAGE_LIMIT, "sfn", "StartExecution")


def _lambda_invoke(params: dict[str, Any], **_: Any) -> None:
    written = _current()
    if written is None:
        return
    if "Payload" in params:
        limit = INVOKE_LIMIT.get(params.get("InvocationType", ""), SYNC_INVOKE_LIMIT)
        params["Payload"] = _stamped(params["Payload"], written, limit, "lambda", "Invoke")
    context: Any = {}
    if params.get("ClientContext"):
        try:
            context = codec.loads(base64.b64decode(params["ClientContext"]))
        except Exception:
            return  # not ours to repair: Lambda answers for it
    custom = context.get("custom") if isinstance(context, dict) else None
    if not isinstance(context, dict) or (custom is not None and not isinstance(custom, dict)):
        return
    custom = dict(custom or {})
    if "trace_id" in custom:
        return
    for name, value in written.items():  # x-datadog-* directly in custom, as ddtrace writes them
        for key, item in (value.items() if name == DATADOG else ((name, value),)):
            custom.setdefault(key, item)
    encoded = base64.b64encode(codec.dumps({**context, "custom": custom}).encode()).decode()
    if len(encoded) > CLIENT_CONTEXT_LIMIT:
        _warn("lambda", "Invoke", f"ClientContext would exceed {CLIENT_CONTEXT_LIMIT} characters", list(written))
        return
    params["ClientContext"] = encoded


HOOKS: dict[str, dict[str, Callable[..., None]]] = {
    "sqs": {"SendMessage": _sqs_send, "SendMessageBatch": _sqs_send_batch},
    "sns": {"Publish": _sns_publish, "PublishBatch": _sns_publish_batch},
    "kinesis": {"PutRecord": _kinesis_put, "PutRecords": _kinesis_put_batch},
    "eventbridge": {"PutEvents": _events_put},
    "sfn": {"StartExecution": _sfn_start, "StartSyncExecution": _sfn_start},
    "lambda": {"Invoke": _lambda_invoke},
}
"""botocore's service name in event names (the hyphenated service id) -> operation -> hook."""


def propagate(target: T | None = None) -> T | None:
    """Write the current trace context on outgoing SQS, SNS, Kinesis, EventBridge, Step Functions
    and Lambda calls.

    With no argument: every client created afterwards from boto3's default session (``boto3.client``,
    ``boto3.resource``); with a boto3 or botocore ``Session``: that session's clients created
    afterwards; with a client: that client (returned, so ``propagate(boto3.client("sqs"))`` reads
    well). Safe to call more than once.
    """
    meta = getattr(target, "meta", None)
    if meta is not None and hasattr(meta, "events") and hasattr(meta, "service_model"):
        service = meta.service_model.service_id.hyphenize()
        _register(meta.events, {service: HOOKS[service]} if service in HOOKS else {})
        return target
    if target is None:
        import boto3

        if boto3.DEFAULT_SESSION is None:
            boto3.setup_default_session()
        events = boto3.DEFAULT_SESSION.events  # type: ignore[union-attr]
    elif hasattr(target, "events"):  # a boto3 Session
        events = target.events
    elif hasattr(target, "get_component"):  # a botocore Session
        events = target.get_component("event_emitter")
    else:
        raise TypeError(f"propagate() takes a boto3 client or session, or nothing, not {type(target).__name__}")
    _register(events, HOOKS)
    return target


def _register(events: Any, hooks: dict[str, dict[str, Callable[..., None]]]) -> None:
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
    if context.vendor == "datadog":
        headers.update(datadog_headers(context))
    elif context.vendor == "xray":
        sampled = "" if context.sampled is None else f";Sampled={int(context.sampled)}"
        headers["X-Amzn-Trace-Id"] = f"Root={context.xray_trace_id};Parent={context.span_id:016x}{sampled}"
    return headers
