"""Events of the sources that answer with each record's result: Amazon Data Firehose's data
transformation and S3 Batch Operations' ``LambdaInvoke`` tasks."""

from __future__ import annotations

import base64
import itertools
import time
import uuid
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote_plus

from ._events import ACCOUNT, REGION, TraceIds, example, payload_text

FIREHOSE_SOURCES = ("direct", "kinesis", "msk")
_record_numbers = itertools.count(1)


def _bytes(payload: Any) -> bytes:
    return payload if isinstance(payload, bytes) else payload_text(payload).encode()


def _stamped(payload: Any, trace_id: str | None) -> Any:
    if trace_id is None:
        return payload
    if not isinstance(payload, dict):
        raise ValueError("a Firehose record that carries a trace_id must hold a JSON object")
    return {**payload, "trace_id": trace_id}


def firehose_record(
    payload: Any,
    *,
    trace_id: str | None = None,
    source: str = "direct",
    record_id: str | None = None,
    partition_key: str = "partition-1",
) -> dict[str, Any]:
    """One record of a Firehose transformation event: ``payload`` as its base64 ``data`` (JSON
    unless ``str``/``bytes``; ``trace_id`` in its ``trace_id`` field). ``source``: ``"direct"``
    (Direct PUT), ``"kinesis"`` (a Kinesis stream: ``kinesisRecordMetadata``) or ``"msk"`` (an MSK
    topic: ``kafkaRecordValue`` and ``mskRecordMetadata``)."""
    if source not in FIREHOSE_SOURCES:
        raise ValueError(f"source must be one of {', '.join(FIREHOSE_SOURCES)}, not {source!r}")
    number = next(_record_numbers)
    now = int(time.time() * 1000)
    data = base64.b64encode(_bytes(_stamped(payload, trace_id))).decode()
    record: dict[str, Any] = {
        "recordId": record_id or f"{number:056d}",
        "approximateArrivalTimestamp": now,
    }
    if source == "msk":
        record["mskRecordMetadata"] = {
            "offset": str(number),
            "partitionId": "0",
            "approximateArrivalTimestamp": now,
        }
        record["kafkaRecordValue"] = data
        return record
    record["data"] = data
    if source == "kinesis":
        record["kinesisRecordMetadata"] = {
            "shardId": "shardId-000000000000",
            "partitionKey": partition_key,
            "approximateArrivalTimestamp": now,
            "sequenceNumber": f"4954698668313554428650745793632162567570019247115678{number:04d}",
            "subsequenceNumber": 0,
        }
    return record


def firehose_event(
    *payloads: Any,
    trace_id: TraceIds = None,
    source: str = "direct",
    delivery_stream: str = "views-to-s3",
    record_ids: Sequence[str] | None = None,
) -> dict[str, Any]:
    """A Firehose data transformation event, one record per payload (``trace_id``: one for all,
    or one per record)."""
    trace_ids = trace_id if isinstance(trace_id, list | tuple) else [trace_id] * len(payloads)
    ids = list(record_ids) if record_ids is not None else [None] * len(payloads)
    event: dict[str, Any] = {
        "invocationId": str(uuid.uuid4()),
        "deliveryStreamArn": f"arn:aws:firehose:{REGION}:{ACCOUNT}:deliverystream/{delivery_stream}",
        "region": REGION,
    }
    if source == "kinesis":
        event["sourceKinesisStreamArn"] = (
            f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/{delivery_stream}-source"
        )
    if source == "msk":
        event["sourceMSKArn"] = f"arn:aws:kafka:{REGION}:{ACCOUNT}:cluster/{delivery_stream}-source/1"
    event["records"] = [
        firehose_record(payload, trace_id=trace, source=source, record_id=record_id)
        for payload, trace, record_id in zip(payloads, trace_ids, ids, strict=True)
    ]
    return event


@example("firehose")
def _firehose_example(
    payload: Any, *, trace_id: str | None, source_arn: str | None, **options: Any
) -> dict[str, Any]:
    built = firehose_event({} if payload is None else payload, trace_id=trace_id, **options)
    if source_arn:
        built["deliveryStreamArn"] = source_arn
    return built


# --- S3 Batch Operations ---------------------------------------------------------------------------


def s3_batch_event(
    key: str = "reports/2024/01.csv",
    *,
    bucket: str = "uploads",
    schema: str = "1.0",
    version_id: str | None = None,
    user_arguments: dict[str, str] | None = None,
    trace_id: str | None = None,
    job_id: str | None = None,
    task_id: str | None = None,
) -> dict[str, Any]:
    """An S3 Batch Operations invocation of one task, schema ``"1.0"`` (``s3BucketArn``) or
    ``"2.0"`` (``s3Bucket`` and the job's ``userArguments``); ``key`` is sent URL-encoded, as S3 Batch
    Operations sends it. ``trace_id`` goes in ``userArguments`` (schema 2.0 only: 1.0 has no place
    for it)."""
    if schema not in ("1.0", "2.0"):
        raise ValueError(f"schema must be '1.0' or '2.0', not {schema!r}")
    arguments = dict(user_arguments or {})
    if trace_id is not None:
        if schema != "2.0":
            raise ValueError(
                "an S3 Batch Operations task carries a trace_id in userArguments: use schema='2.0'"
            )
        arguments["trace_id"] = trace_id
    task: dict[str, Any] = {
        "taskId": task_id or base64.b64encode(uuid.uuid4().bytes).decode().rstrip("="),
        "s3Key": quote_plus(key, safe="/"),
        "s3VersionId": version_id,
    }
    job: dict[str, Any] = {"id": job_id or str(uuid.uuid4())}
    if schema == "2.0":
        task["s3Bucket"] = bucket
        job["userArguments"] = arguments
    else:
        task["s3BucketArn"] = f"arn:aws:s3:::{bucket}"
    return {
        "invocationSchemaVersion": schema,
        "invocationId": base64.b64encode(uuid.uuid4().bytes * 2).decode().rstrip("="),
        "job": job,
        "tasks": [task],
    }


@example("s3_batch")
def _s3_batch_example(
    payload: Any, *, trace_id: str | None, source_arn: str | None, **options: Any
) -> dict[str, Any]:
    """``payload``: the object key (anything else as its JSON text: a manifest may hold JSON
    keys); a ``trace_id`` makes it schema 2.0; ``source_arn``: the bucket's ARN."""
    if payload is not None and not isinstance(payload, str):
        payload = payload_text(payload)
    if trace_id is not None:
        options.setdefault("schema", "2.0")
    if source_arn and source_arn.startswith("arn:aws:s3:::"):
        options.setdefault("bucket", source_arn.removeprefix("arn:aws:s3:::"))
    return s3_batch_event(payload or "reports/2024/01.csv", trace_id=trace_id, **options)
