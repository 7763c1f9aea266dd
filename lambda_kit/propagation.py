"""Trace id propagation into outgoing SQS, SNS and Kinesis calls of a boto3 client.

``propagate(client)`` registers botocore ``before-parameter-build`` hooks, so that inside a
decorated function the current trace id lands where the next hop reads it: a ``trace_id``
String message attribute (SQS, SNS) or a ``trace_id`` field of a JSON-object payload (Kinesis).
A value the caller set is never overwritten.
"""

from __future__ import annotations

from typing import Any, TypeVar

from . import codec
from .trace import current_trace_id

C = TypeVar("C")

MAX_MESSAGE_ATTRIBUTES = 10


def _with_attribute(params: dict[str, Any], key: str, trace_id: str) -> None:
    attributes = params.get(key)
    if attributes is None:
        attributes = params[key] = {}
    if "trace_id" in attributes or len(attributes) >= MAX_MESSAGE_ATTRIBUTES:
        return
    attributes["trace_id"] = {"DataType": "String", "StringValue": trace_id}


def _sqs_send(params: dict[str, Any], **_: Any) -> None:
    trace_id = current_trace_id()
    if trace_id is not None:
        _with_attribute(params, "MessageAttributes", trace_id)


def _sqs_send_batch(params: dict[str, Any], **_: Any) -> None:
    trace_id = current_trace_id()
    if trace_id is not None:
        for entry in params.get("Entries") or ():
            _with_attribute(entry, "MessageAttributes", trace_id)


def _sns_publish_batch(params: dict[str, Any], **_: Any) -> None:
    trace_id = current_trace_id()
    if trace_id is not None:
        for entry in params.get("PublishBatchRequestEntries") or ():
            _with_attribute(entry, "MessageAttributes", trace_id)


def _stamped(data: Any, trace_id: str) -> Any:
    """``data`` with a ``trace_id`` field when it is a JSON object without one; else unchanged."""
    try:
        doc = codec.loads(data)
    except Exception:
        return data
    if type(doc) is not dict or "trace_id" in doc:
        return data
    doc["trace_id"] = trace_id
    return codec.dumps(doc).encode()


def _kinesis_put(params: dict[str, Any], **_: Any) -> None:
    trace_id = current_trace_id()
    if trace_id is not None and "Data" in params:
        params["Data"] = _stamped(params["Data"], trace_id)


def _kinesis_put_batch(params: dict[str, Any], **_: Any) -> None:
    trace_id = current_trace_id()
    if trace_id is not None:
        for entry in params.get("Records") or ():
            if "Data" in entry:
                entry["Data"] = _stamped(entry["Data"], trace_id)


HOOKS = {
    "sqs": {"SendMessage": _sqs_send, "SendMessageBatch": _sqs_send_batch},
    "sns": {"Publish": _sqs_send, "PublishBatch": _sns_publish_batch},
    "kinesis": {"PutRecord": _kinesis_put, "PutRecords": _kinesis_put_batch},
}


def propagate(client: C) -> C:
    """Stamp the current trace id on this client's SQS/SNS/Kinesis sends; returns the client.

    Safe to call more than once and on clients of other services (then it does nothing).
    """
    meta = client.meta  # type: ignore[attr-defined]
    service = meta.service_model.service_name
    hooks = HOOKS.get(service)
    if hooks and not getattr(client, "_lambda_kit_propagates", False):
        for operation, hook in hooks.items():
            meta.events.register(f"before-parameter-build.{service}.{operation}", hook)
        client._lambda_kit_propagates = True  # type: ignore[attr-defined]
    return client
