"""Amazon Data Firehose (Kinesis Data Firehose) data transformation: the ``firehose`` source.

Firehose invokes the function synchronously with a buffer of records (``records``, each with
``recordId`` and base64 ``data``; ``kafkaRecordValue`` when the stream reads from Amazon MSK) and
needs every record back: its ``recordId``, a ``result`` (``Ok``, ``Dropped``, ``ProcessingFailed``)
and its base64 ``data``. The function is called once per record with the data decoded (JSON, or
with ``json=False`` the bytes) and returns the transformed data:

- a value: ``Ok``, its data bytes as they are, text as UTF-8, anything else as JSON;
- ``Transformed(data, partition_keys={...})``: ``Ok`` with ``metadata.partitionKeys``, for dynamic
  partitioning (the delivery stream's S3 prefix reads them as ``!{partitionKeyFromLambda:key}``);
- ``DROP``: ``Dropped`` (Firehose counts it as processed and delivers nothing);
- ``None`` is no answer: the record fails (a function that forgot its ``return`` must not send empty
  records on).

A record that raises, or that cannot be decoded, is ``ProcessingFailed`` with its original data
(Firehose writes it to the ``processing-failed/`` prefix of its S3 error output) and the others
still go through. The response must stay within Lambda's 6 MB: when the transformed records would
not fit, records are turned ``ProcessingFailed`` (their original data back, from the last one, each
with an ERROR line) until they do; never cut, never dropped unsaid.

The trace id is the data's ``trace_id`` field (a JSON object's; then a tracer's context in its
``traceparent`` / ``_datadog`` fields), else the record id: Firehose carries no attributes.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import codec, log
from .._data import dig, is_text, mapping
from ..errors import UndecodableRecord
from ..record import Outcome, Record
from ._results import converting
from .base import Source, base64_bytes, loaded, malformed, pick_trace, read_alone

MAX_RESPONSE = 6 * 1024 * 1024
"""Lambda's bound on a synchronous invocation's response, in bytes."""
DATA_FIELDS = ("data", "kafkaRecordValue")
"""Where a record's data is: ``kafkaRecordValue`` for a stream whose source is Amazon MSK."""


class Dropped:
    """``DROP``: the record is dropped on purpose (``Dropped``)."""

    def __repr__(self) -> str:
        return "DROP"


DROP = Dropped()


@dataclass(frozen=True)
class Transformed:
    """A record's transformed ``data`` (bytes, text, or a value sent as JSON) with the
    ``partition_keys`` Firehose's dynamic partitioning reads (text to text)."""

    data: Any
    partition_keys: dict[str, str] | None = None


def transformed(result: Any) -> Transformed | Dropped:
    """What the function returned, checked and encoded (``data`` as bytes): ``TypeError`` (the
    record fails) for ``None`` and for partition keys that are not text."""
    if isinstance(result, Dropped):
        return result
    if result is None:
        raise TypeError(
            "the function returned None: return the transformed data, Transformed(data, partition_keys=...), "
            "or lambda_kit.DROP to drop the record"
        )
    found = result if isinstance(result, Transformed) else Transformed(result)
    keys = found.partition_keys
    if keys is not None and (
        type(keys) is not dict or not all(isinstance(k, str) and isinstance(v, str) for k, v in keys.items())
    ):
        raise TypeError(
            "partition_keys must map text to text (the values of the prefix's partitionKeyFromLambda)"
        )
    return Transformed(data_bytes(found.data), keys)


def data_bytes(data: Any) -> bytes:
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    return (data if isinstance(data, str) else codec.dumps(data)).encode("utf-8")


def _b64(data: bytes) -> str:
    return binascii.b2a_base64(data, newline=False).decode("ascii")


class FirehoseSource(Source):
    name = "firehose"
    label = "a Firehose data transformation event"
    decorator = "firehose_handler"
    arn_service = "firehose"
    resource_types = ("AWS::KinesisFirehose::DeliveryStream",)
    keeps_results = True

    def __init__(self, json: bool = True) -> None:
        self.json = json

    @classmethod
    def recognizes(cls, event: object) -> bool:
        """An ``invocationId`` and ``records``, with the delivery stream's ARN (``deliverySteamArn``,
        as the AWS SAM CLI's sample spells it, too) or records with a ``recordId`` (the SAM CLI's
        samples without an ARN); not Kinesis Data Analytics' preprocessing (``applicationArn``)."""
        if type(event) is not dict or not isinstance(event.get("invocationId"), str):
            return False
        records = event.get("records")
        if type(records) is not list or "applicationArn" in event:
            return False
        if "deliveryStreamArn" in event or "deliverySteamArn" in event:
            return True
        return any(type(raw) is dict and "recordId" in raw for raw in records)

    def records(self, event: Mapping[str, Any]) -> list[Record]:
        return [record for raw in event["records"] for record in read_alone(self.name, raw, self.read)]

    def read(self, raw: Any) -> list[Record]:
        record_id = dig(raw, "recordId")
        if not is_text(record_id):
            return [malformed("firehose", raw, "record has no recordId")]
        field = "kafkaRecordValue" if "kafkaRecordValue" in raw else "data"
        data, error = base64_bytes(raw.get(field), field)
        doc = None
        if error is None and (self.json or data.startswith(b"{")):  # type: ignore[union-attr]
            doc, error = loaded(data, field)
            error = error if self.json else None
        carrier = mapping(doc)
        trace_id, rejected, context = pick_trace("firehose", carrier.get("trace_id"), record_id, carrier)
        payload = raw.get(field) if error else doc if self.json else data
        return [
            Record(
                source="firehose",
                id=record_id,
                trace_id=trace_id,
                payload=payload,
                raw=raw,
                error=error,
                rejected_trace_id=rejected,
                context=context,
            )
        ]

    def wrap(self, function: Callable[[Any, Any], Any], is_async: bool) -> Callable[[Any, Any], Any]:
        """The function, its result checked and encoded (``transformed``) in the record's own path,
        so a result Firehose cannot take fails that record, with its ERROR line."""
        return converting(function, is_async, transformed)

    def response(self, event: Mapping[str, Any], outcome: Outcome) -> dict[str, Any]:
        """Every record back, in the event's order, within ``MAX_RESPONSE`` (``fitted``)."""
        done = {id(record.raw): (record, result) for record, result in outcome.results}
        for record, error in outcome.failures:
            if not record.id:  # no recordId to answer it by: the whole buffer comes back
                raise UndecodableRecord(f"a Firehose record cannot be answered: {log.safe_str(error)}")
        entries = [entry(raw, done.get(id(raw), (None, None))[1]) for raw in event["records"]]
        return {"records": fitted(entries, event["records"], done, outcome)}


def entry(raw: dict[str, Any], result: Any) -> dict[str, Any]:
    """A record's answer: ``Ok`` with its transformed data, ``Dropped``, or (no result: it failed)
    ``ProcessingFailed`` with the data it came with."""
    field = "kafkaRecordValue" if "kafkaRecordValue" in raw else "data"
    if isinstance(result, Transformed):
        found = {"recordId": raw["recordId"], "result": "Ok", field: _b64(result.data)}
        if result.partition_keys is not None:
            found["metadata"] = {"partitionKeys": result.partition_keys}
        return found
    if isinstance(result, Dropped):
        return {"recordId": raw["recordId"], "result": "Dropped", field: ""}
    return {"recordId": raw["recordId"], "result": "ProcessingFailed", field: raw.get(field, "")}


def fitted(
    entries: list[dict[str, Any]],
    raws: list[dict[str, Any]],
    done: dict[int, tuple[Record, Any]],
    outcome: Outcome,
) -> list[dict[str, Any]]:
    """``entries`` within ``MAX_RESPONSE``: while they are over it, the last ``Ok`` record is sent
    back ``ProcessingFailed`` with its original data (an ERROR line each; counted as failed). A
    response that still cannot fit raises: Firehose retries the whole buffer."""
    sizes = [len(codec.dumps(found)) + 1 for found in entries]
    total = sum(sizes) + len('{"records":[]}')
    for index in range(len(entries) - 1, -1, -1):
        if total <= MAX_RESPONSE:
            return entries
        if entries[index]["result"] != "Ok":
            continue
        record = done[id(raws[index])][0]
        entries[index] = entry(raws[index], None)
        new_size = len(codec.dumps(entries[index])) + 1
        total += new_size - sizes[index]
        over_bound(record, outcome)
    if total > MAX_RESPONSE:
        raise ValueError(
            f"the Firehose response is {total} bytes even with every record sent back as it came: over "
            f"Lambda's {MAX_RESPONSE}; lower the delivery stream's processor BufferSizeInMBs"
        )
    return entries


def over_bound(record: Record, outcome: Outcome) -> None:
    """A transformed record that did not fit in the response: failed, with its ERROR line."""
    outcome.processed -= 1
    error = ValueError(f"the transformed records are over Lambda's {MAX_RESPONSE}-byte response bound")
    outcome.failures.append((record, error))
    log.emit(
        "ERROR",
        "record failed: over the response bound, sent back as ProcessingFailed",
        record.trace_id,
        {
            "source": "firehose",
            "record_id": log.clean(record.id),
            "outcome": "failed",
            **log.error_fields(error),
        },
    )


SOURCE = FirehoseSource
