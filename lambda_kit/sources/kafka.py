"""Kafka: Amazon MSK (``aws:kafka``) and self-managed Apache Kafka (``SelfManagedKafka``) events.

Records come grouped by topic-partition (``{"records": {"orders-0": [...]}}``) and run in order
within each. The payload is a dict: ``topic``, ``partition``, ``offset``, ``timestamp``,
``timestamp_type``, ``key`` (bytes or None), ``value`` (base64-decoded, then JSON unless
``json=False``; None for a tombstone) and ``headers`` (name -> bytes; a repeated name keeps its
last value, as Kafka's ``lastHeader``). The trace id is the ``trace_id`` header (a tracer's context
in the ``traceparent`` or ``x-datadog-*`` headers); the fallback and
``record.id`` are ``<topic>-<partition>:<offset>``.

Failures, as Lambda's Kafka event source mapping handles them:

- ``on_failure="raise"`` (default): the batch stops at the first failure and it is raised. Lambda
  retries the whole batch (in order, within each partition) until it succeeds, the retry limit or
  record age is reached (then the on-failure destination gets it) or the records expire. Works
  in every mode of the event source mapping.
- ``on_failure="report"``: the partition of a failed record stops there (its later records are
  not processed), other partitions go on, and the response names every record not done as
  ``{"itemIdentifier": {"partition": "<topic>-<partition>", "offset": n}}``. Lambda reads it only
  with ``FunctionResponseTypes: [ReportBatchItemFailures]``, which Kafka event source mappings
  accept in provisioned mode; without it Lambda would take the batch as processed. A failure that
  cannot be named (a record without topic-partition or offset) is raised instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from .._data import is_text
from ..record import Outcome, Record
from .base import (
    Source,
    base64_bytes,
    failure_report,
    loaded,
    malformed,
    pick_trace,
    raise_first_failure,
    read_alone,
    reason,
)

if TYPE_CHECKING:
    from ..validation import Validator

EVENT_SOURCES = ("aws:kafka", "SelfManagedKafka", "aws:SelfManagedKafka")
TRACE_HEADER = "trace_id"
_WHOLE = re.compile(r"[0-9]{1,20}")


class KafkaSource(Source):
    name = "kafka"
    label = "a Kafka event"
    decorator = "kafka_handler"
    serverless_events = ("msk", "kafka")
    arn_service = "kafka"
    resource_types = ("AWS::MSK::Cluster",)
    ordered = True

    def __init__(self, json: bool = True, on_failure: str = "raise") -> None:
        self.json = json
        self.reporting = on_failure == "report"
        self.stop_at_first_failure = not self.reporting

    @classmethod
    def recognizes(cls, event: object) -> bool:
        return type(event) is dict and event.get("eventSource") in EVENT_SOURCES and "records" in event

    def records(self, event: Mapping[str, Any]) -> list[Record]:
        partitions = event["records"]
        if type(partitions) is not dict:
            return [malformed("kafka", partitions, "records is not an object of topic-partition lists")]
        records = []
        for key, batch in partitions.items():
            if type(batch) is not list:
                records.append(malformed("kafka", batch, f"records[{key!r}] is not a list"))
                continue
            for raw in batch:
                records += read_alone("kafka", raw, partial(self.read_of, key))
        return records

    def read_of(self, key: str, raw: object) -> list[Record]:
        """``read`` for a raw record of topic-partition ``key``."""
        return [self.record_of(key, raw)]

    def record_of(self, key: str, raw: object) -> Record:
        """The record ``raw`` of topic-partition ``key``: its payload is the message."""
        if type(raw) is not dict:
            return malformed("kafka", raw, "record is not a JSON object")
        topic, partition, offset = raw.get("topic"), whole(raw.get("partition")), whole(raw.get("offset"))
        if None in (partition, offset) or not is_text(topic):
            return malformed("kafka", raw, "record has no topic, partition or offset")
        record_id = f"{key}:{offset}"
        message, error = self.message(raw, topic, partition, offset)
        found = message["headers"].get(TRACE_HEADER)
        trace_id, rejected, context = pick_trace(
            "kafka",
            None if found is None else found.decode("utf-8", "replace"),
            record_id,
            message["headers"],
        )
        return Record(
            source="kafka",
            id=record_id,
            trace_id=trace_id,
            payload=raw if error else message,
            raw=raw,
            error=error,
            rejected_trace_id=rejected,
            group=key,
            report_id={"partition": key, "offset": offset},
            context=context,
        )

    def message(
        self, raw: dict[str, Any], topic: str, partition: int, offset: int
    ) -> tuple[dict[str, Any], str | None]:
        """(the message, the error that keeps it from the function, else None)."""
        message: dict[str, Any] = {
            "topic": topic,
            "partition": partition,
            "offset": offset,
            "timestamp": raw.get("timestamp"),
            "timestamp_type": raw.get("timestampType"),
            "key": None,
            "value": None,
            "headers": {},
        }
        try:
            message["headers"] = headers(raw.get("headers"))
            message["key"] = base64_field(raw, "key")
            value = base64_field(raw, "value")
        except ValueError as exc:
            return message, reason(exc)
        message["value"], error = loaded(value, "value") if self.json and value is not None else (value, None)
        return message, error

    def typed(self, payload: Any, validate: Validator) -> Any:
        """With ``model=`` the message's ``value`` is validated; the rest of the message stays."""
        return {**payload, "value": validate(payload["value"])}

    def response(self, event: Mapping[str, Any], outcome: Outcome) -> Any:
        if not self.reporting or any(not record.id for record, _ in outcome.failures):
            raise_first_failure(outcome)
            return None
        return failure_report([record for record, _ in outcome.failures])


def whole(value: object) -> int | None:
    """A partition or offset: an int (AWS's samples also show digit strings), else None."""
    if type(value) is int and value >= 0:
        return value
    return int(value) if type(value) is str and _WHOLE.fullmatch(value) else None


def base64_field(raw: dict[str, Any], name: str) -> bytes | None:
    """The bytes of the base64 field ``name`` (None when absent: a tombstone has no value)."""
    text = raw.get(name)
    if text is None:
        return None
    if type(text) is not str:
        raise ValueError(f"{name} is not base64 text")
    data, error = base64_bytes(text, name)
    if error is not None:
        raise ValueError(error)
    return data


def headers(found: object) -> dict[str, bytes]:
    """Kafka headers, ``[{"name": [byte, ...]}, ...]`` (bytes as 0..255, or -128..127 as Java
    sends them), as ``{name: bytes}``."""
    if found is None:
        return {}
    if type(found) is not list:
        raise ValueError("headers is not a list")
    decoded = {}
    for index, header in enumerate(found):
        if type(header) is not dict:
            raise ValueError(f"headers[{index}] is not an object")
        decoded.update((name, header_bytes(name, values)) for name, values in header.items())
    return decoded


def header_bytes(name: str, values: object) -> bytes:
    if type(values) is not list or not all(type(b) is int and -128 <= b <= 255 for b in values):
        raise ValueError(f"header {name[:64]!r} is not a list of byte values")
    return bytes(b & 0xFF for b in values)


SOURCE = KafkaSource
