"""Event factories for every source and a fake Lambda context, for your tests and ours.

Shapes follow AWS's documented sample events; every record gets a unique id. Payloads that are
not ``str``/``bytes`` are JSON-encoded for you.

    from lambda_kit.testing import sqs_event, lambda_context
    response = handler(sqs_event({"url": "a"}, {"url": "b"}, trace_id="T"), lambda_context())
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import itertools
import json as _json
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import quote_plus

from .. import sources
from ..extras import import_optional

REGION = "us-east-1"
ACCOUNT = "123456789012"
SOURCE_IP = "192.0.2.1"
SNS_HOST = "https://sns.us-east-1.amazonaws.com"
SNS_CERTIFICATE = f"{SNS_HOST}/SimpleNotificationService-0000000000000000000000.pem"
SNS_UNSUBSCRIBE = f"{SNS_HOST}/?Action=Unsubscribe"
KINESIS_SEQUENCE_PREFIX = "49590338271490256608559692538361571095921575989136588"
_sequence = itertools.count(1)


def payload_text(payload: Any) -> str:
    """``payload`` as the text an event carries: ``str`` as is, ``bytes`` decoded, anything else JSON."""
    if isinstance(payload, bytes):
        return payload.decode("utf-8")
    return payload if isinstance(payload, str) else _json.dumps(payload)


def _payload_bytes(payload: Any) -> bytes:
    return payload if isinstance(payload, bytes) else payload_text(payload).encode()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8", "surrogatepass")).hexdigest()


def _iso_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


def _per_record(value: Any, count: int) -> list[Any]:
    """A single value for every record, or one value per record."""
    if isinstance(value, list | tuple):
        if len(value) != count:
            raise ValueError(f"expected {count} values, one per record, got {len(value)}")
        return list(value)
    return [value] * count


def _present(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` without those that are None (an event leaves a field out rather than send null)."""
    return {name: value for name, value in fields.items() if value is not None}


def _object(payload: Any) -> Any:
    """An example's payload: ``{}`` when none is given."""
    return {} if payload is None else payload


def _from_source(target: dict[str, Any], field: str, source_arn: str | None) -> None:
    """Put an example event's ``source_arn``, when given, in ``target[field]``."""
    if source_arn:
        target[field] = source_arn


class LambdaContext:
    """A stand-in for the Lambda context object (``function_name``, ``aws_request_id``, ...)."""

    def __init__(
        self, function_name: str = "test-function", timeout: float = 30.0, memory_mb: int = 128
    ) -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{function_name}"
        self.memory_limit_in_mb = memory_mb
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = time.strftime("%Y/%m/%d/[$LATEST]") + uuid.uuid4().hex
        self._deadline = time.monotonic() + timeout

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def lambda_context(function_name: str = "test-function", timeout: float = 30.0) -> LambdaContext:
    """A context as Lambda gives one invocation: its deadline is ``timeout`` seconds after it is
    made. Make one per invocation, as Lambda does: a context kept across a test session runs out,
    and a batch handler then starts only the first record of each batch (the others are reported
    unstarted, ``deadline_margin_ms``)."""
    return LambdaContext(function_name, timeout)


# --- any registered source ----------------------------------------------------------------------

Example = Callable[..., dict[str, Any]]
EXAMPLES: dict[str, Example] = {}
"""Source name -> how to build one event of it around a payload (every registered source has one)."""


def example(source: str) -> Callable[[Example], Example]:
    def register(build: Example) -> Example:
        EXAMPLES[source] = build
        return build

    return register


def event(
    source: str,
    payload: Any = None,
    *,
    trace_id: str | None = None,
    source_arn: str | None = None,
    **options: Any,
) -> dict[str, Any]:
    """One event of ``source`` (a name of ``lambda_kit.sources.NAMES``: ``"sqs"``, ``"api"`` ...)
    carrying ``payload`` with ``trace_id`` where that source's producers put it, from
    ``source_arn`` when given (a queue, stream, topic or table ARN). ``options`` go to the source's
    factory (``method``/``path``/``query`` for ``"api"``). What ``lambda-kit invoke`` sends."""
    sources.get(source)  # an unknown name: one error naming the known ones
    build = EXAMPLES.get(source)
    if build is None:
        raise KeyError(f"lambda_kit.testing has no example event for source {source!r}")
    return build(payload, trace_id=trace_id, source_arn=source_arn, **options)


# --- SQS ------------------------------------------------------------------------------------


def sqs_record(
    body: Any,
    *,
    trace_id: str | None = None,
    message_id: str | None = None,
    queue: str = "views-queue",
    receive_count: int = 1,
    message_attributes: dict[str, str] | None = None,
) -> dict[str, Any]:
    text = payload_text(body)
    attributes = {**(message_attributes or {}), **_present({"trace_id": trace_id})}
    now = str(int(time.time() * 1000))
    return {
        "messageId": message_id or str(uuid.uuid4()),
        "receiptHandle": _b64(uuid.uuid4().bytes * 4),
        "body": text,
        "attributes": {
            "ApproximateReceiveCount": str(receive_count),
            "SentTimestamp": now,
            "SenderId": "AIDAIENQZJOLO23YVJ4VO",
            "ApproximateFirstReceiveTimestamp": now,
        },
        "messageAttributes": {
            name: {"stringValue": value, "stringListValues": [], "binaryListValues": [], "dataType": "String"}
            for name, value in attributes.items()
        },
        "md5OfBody": hashlib.md5(text.encode()).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": f"arn:aws:sqs:{REGION}:{ACCOUNT}:{queue}",
        "awsRegion": REGION,
    }


TraceIds = str | Sequence[str | None] | None
"""One trace id for every record, or one per record (None: no trace id)."""


def sqs_event(*bodies: Any, trace_id: TraceIds = None, **options: Any) -> dict[str, Any]:
    """An SQS event with one record per body. ``trace_id``: one for all, or one per record."""
    trace_ids = _per_record(trace_id, len(bodies))
    return {"Records": [sqs_record(b, trace_id=t, **options) for b, t in zip(bodies, trace_ids, strict=True)]}


@example("sqs")
def _sqs_example(
    payload: Any, *, trace_id: str | None, source_arn: str | None, **options: Any
) -> dict[str, Any]:
    built = sqs_event(_object(payload), trace_id=trace_id, **options)
    _from_source(built["Records"][0], "eventSourceARN", source_arn)
    return built


def sns_envelope(
    message: Any, *, trace_id: str | None = None, topic: str = "milestones", subject: str | None = None
) -> str:
    """The SQS body of an SNS notification delivered without raw message delivery."""
    envelope: dict[str, Any] = {
        "Type": "Notification",
        "MessageId": str(uuid.uuid4()),
        "TopicArn": f"arn:aws:sns:{REGION}:{ACCOUNT}:{topic}",
        "Subject": subject,
        "Message": payload_text(message),
        "Timestamp": _iso_now(),
        "SignatureVersion": "1",
        "Signature": "EXAMPLE",
        "SigningCertURL": SNS_CERTIFICATE,
        "UnsubscribeURL": SNS_UNSUBSCRIBE,
    }
    if trace_id is not None:
        envelope["MessageAttributes"] = {"trace_id": {"Type": "String", "Value": trace_id}}
    return _json.dumps(envelope)


# --- SNS ------------------------------------------------------------------------------------


def sns_record(
    message: Any,
    *,
    trace_id: str | None = None,
    subject: str | None = None,
    topic: str = "milestones",
    message_id: str | None = None,
) -> dict[str, Any]:
    topic_arn = f"arn:aws:sns:{REGION}:{ACCOUNT}:{topic}"
    attributes = {} if trace_id is None else {"trace_id": {"Type": "String", "Value": trace_id}}
    return {
        "EventVersion": "1.0",
        "EventSubscriptionArn": f"{topic_arn}:{uuid.uuid4()}",
        "EventSource": "aws:sns",
        "Sns": {
            "SignatureVersion": "1",
            "Timestamp": _iso_now(),
            "Signature": "EXAMPLE",
            "SigningCertUrl": SNS_CERTIFICATE,
            "MessageId": message_id or str(uuid.uuid4()),
            "Message": payload_text(message),
            "MessageAttributes": attributes,
            "Type": "Notification",
            "UnsubscribeUrl": SNS_UNSUBSCRIBE,
            "TopicArn": topic_arn,
            "Subject": subject,
        },
    }


def sns_event(*messages: Any, trace_id: TraceIds = None, **options: Any) -> dict[str, Any]:
    """An SNS event (Lambda delivers one record per invocation; more are allowed here)."""
    trace_ids = _per_record(trace_id, len(messages))
    pairs = zip(messages, trace_ids, strict=True)
    return {"Records": [sns_record(message, trace_id=t, **options) for message, t in pairs]}


@example("sns")
def _sns_example(
    payload: Any, *, trace_id: str | None, source_arn: str | None, **options: Any
) -> dict[str, Any]:
    built = sns_event(_object(payload), trace_id=trace_id, **options)
    _from_source(built["Records"][0]["Sns"], "TopicArn", source_arn)
    return built


# --- Kinesis --------------------------------------------------------------------------------


def kinesis_record(
    payload: Any,
    *,
    stream: str = "clickstream",
    partition_key: str | None = None,
    sequence_number: str | None = None,
    raw_data: str | None = None,
) -> dict[str, Any]:
    """``raw_data`` (already base64 or deliberately broken) overrides the encoded payload."""
    sequence_number = sequence_number or f"{KINESIS_SEQUENCE_PREFIX}{next(_sequence):04d}"
    return {
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": partition_key or uuid.uuid4().hex,
            "sequenceNumber": sequence_number,
            "data": _b64(_payload_bytes(payload)) if raw_data is None else raw_data,
            "approximateArrivalTimestamp": time.time(),
        },
        "eventSource": "aws:kinesis",
        "eventVersion": "1.0",
        "eventID": f"shardId-000000000000:{sequence_number}",
        "eventName": "aws:kinesis:record",
        "invokeIdentityArn": f"arn:aws:iam::{ACCOUNT}:role/lambda-role",
        "awsRegion": REGION,
        "eventSourceARN": f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/{stream}",
    }


def kinesis_event(*payloads: Any, **options: Any) -> dict[str, Any]:
    """A Kinesis event; the trace id travels in each payload's ``trace_id`` field."""
    return {"Records": [kinesis_record(payload, **options) for payload in payloads]}


@example("kinesis")
def _kinesis_example(
    payload: Any, *, trace_id: str | None, source_arn: str | None, **options: Any
) -> dict[str, Any]:
    body = _object(payload)
    if trace_id and isinstance(body, dict):
        body = {**body, "trace_id": trace_id}  # Kinesis producers put the trace id in the payload
    built = kinesis_event(body, **options)
    _from_source(built["Records"][0], "eventSourceARN", source_arn)
    return built


# --- DynamoDB Streams -----------------------------------------------------------------------


_SETS: tuple[tuple[type, str, Callable[[Any], Any]], ...] = (
    (str, "SS", lambda item: item),
    (bytes, "BS", _b64),
    (object, "NS", str),
)
"""How a set is written: of strings, of bytes, else of numbers (the first kind all members are)."""


def _set_attribute(value: set[Any] | frozenset[Any]) -> dict[str, Any]:
    items = list(value)
    _kind, tag, write = next(entry for entry in _SETS if all(isinstance(i, entry[0]) for i in items))
    return {tag: [write(i) for i in items]}


_ATTRIBUTES: tuple[tuple[Any, Callable[[Any], dict[str, Any]]], ...] = (
    (type(None), lambda _value: {"NULL": True}),
    (bool, lambda value: {"BOOL": value}),
    (int | float | Decimal, lambda value: {"N": str(value)}),
    (str, lambda value: {"S": value}),
    (bytes, lambda value: {"B": _b64(value)}),
    (set | frozenset, _set_attribute),
    (dict, lambda value: {"M": _image(value)}),
    (Iterable, lambda value: {"L": [to_dynamodb(v) for v in value]}),
)
"""How each kind of value is written; the first kind that matches wins (a bool is an int, a str iterable)."""


def to_dynamodb(value: Any) -> dict[str, Any]:
    """A plain Python value as a DynamoDB attribute value (``{"S": ...}``, ``{"N": ...}``, ...)."""
    for kind, write in _ATTRIBUTES:
        if isinstance(value, kind):
            return write(value)
    raise TypeError(f"cannot represent {type(value).__name__} as a DynamoDB attribute")


def _image(values: dict[str, Any]) -> dict[str, Any]:
    return {name: to_dynamodb(value) for name, value in values.items()}


def _record_keys(
    keys: dict[str, Any] | None, new_image: dict[str, Any] | None, old_image: dict[str, Any] | None
) -> dict[str, Any]:
    """The keys given, else the ``PK`` and ``SK`` of the record's image."""
    if keys is not None:
        return keys
    image = new_image or old_image or {}
    return {name: value for name, value in image.items() if name in ("PK", "SK")}


def dynamodb_record(
    event_name: str = "INSERT",
    keys: dict[str, Any] | None = None,
    new_image: dict[str, Any] | None = None,
    old_image: dict[str, Any] | None = None,
    *,
    table: str = "ViewStats",
    sequence_number: str | None = None,
) -> dict[str, Any]:
    images = {"NewImage": new_image, "OldImage": old_image}
    change: dict[str, Any] = {
        "ApproximateCreationDateTime": int(time.time()),
        "Keys": _image(_record_keys(keys, new_image, old_image)),
        "SequenceNumber": sequence_number or f"{next(_sequence):021d}",
        "SizeBytes": 26,
        "StreamViewType": "NEW_AND_OLD_IMAGES",
        **{field: _image(image) for field, image in images.items() if image is not None},
    }
    return {
        "eventID": uuid.uuid4().hex,
        "eventName": event_name,
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": REGION,
        "dynamodb": change,
        "eventSourceARN": f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{table}/stream/2022-03-28T13:17:23.000",
    }


def dynamodb_stream_event(*records: dict[str, Any]) -> dict[str, Any]:
    """A DynamoDB Streams event from ``dynamodb_record(...)`` records (or dicts of its arguments)."""
    built = [r if "dynamodb" in r else dynamodb_record(**r) for r in records]
    return {"Records": built}


_STREAM_FIELDS = ("event_name", "keys", "new_image", "old_image")


@example("dynamodb")
def _dynamodb_example(
    payload: Any, *, trace_id: str | None, source_arn: str | None, **options: Any
) -> dict[str, Any]:
    """``payload``: the new image of an INSERT, or ``{event_name, keys, new_image, old_image}``."""
    payload = _object(payload)
    if not isinstance(payload, dict):
        raise ValueError(
            "a DynamoDB Streams payload is a JSON object: the new image, or"
            " {event_name, keys, new_image, old_image}"
        )
    if not set(payload) & set(_STREAM_FIELDS):  # the new image of an INSERT
        payload = {"new_image": {**payload, "trace_id": trace_id} if trace_id else payload}
    fields = [payload.get("event_name", "INSERT"), *(payload.get(field) for field in _STREAM_FIELDS[1:])]
    record = dynamodb_record(*fields, **options)
    _from_source(record, "eventSourceARN", source_arn)
    return dynamodb_stream_event(record)


# --- Kafka (Amazon MSK, self-managed) ---------------------------------------------------------


def _b64_or_none(value: Any) -> str | None:
    return None if value is None else _b64(_payload_bytes(value))


def kafka_record(
    value: Any,
    *,
    topic: str = "orders",
    partition: int = 0,
    offset: int | None = None,
    key: str | bytes | None = None,
    headers: dict[str, str | bytes] | None = None,
    trace_id: str | None = None,
) -> dict[str, Any]:
    """One Kafka record as Lambda delivers it: ``key``/``value`` base64, headers as byte lists."""
    found = {**(headers or {}), **_present({"trace_id": trace_id})}
    return {
        "topic": topic,
        "partition": partition,
        "offset": next(_sequence) if offset is None else offset,
        "timestamp": int(time.time() * 1000),
        "timestampType": "CREATE_TIME",
        "key": _b64_or_none(key),
        "value": _b64_or_none(value),
        "headers": [{name: list(_payload_bytes(v))} for name, v in found.items()],
    }


def kafka_event(
    *values: Any,
    trace_id: str | Sequence[str | None] | None = None,
    self_managed: bool = False,
    cluster: str = "demo-cluster",
    **options: Any,
) -> dict[str, Any]:
    """An MSK event (``self_managed=True``: self-managed Kafka) with one record per value, all in
    one topic-partition in offset order; build ``records`` yourself for several partitions."""
    trace_ids = _per_record(trace_id, len(values))
    records: dict[str, list[dict[str, Any]]] = {}
    for value, tid in zip(values, trace_ids, strict=True):
        record = kafka_record(value, trace_id=tid, **options)
        records.setdefault(f"{record['topic']}-{record['partition']}", []).append(record)
    servers = f"b-1.{cluster}.a1bcde.c1.kafka.{REGION}.amazonaws.com:9092"
    if self_managed:
        return {"eventSource": "SelfManagedKafka", "bootstrapServers": servers, "records": records}
    return {
        "eventSource": "aws:kafka",
        "eventSourceArn": f"arn:aws:kafka:{REGION}:{ACCOUNT}:cluster/{cluster}/{uuid.uuid4()}-1",
        "bootstrapServers": servers,
        "records": records,
    }


@example("kafka")
def _kafka_example(
    payload: Any, *, trace_id: str | None, source_arn: str | None, **options: Any
) -> dict[str, Any]:
    built = kafka_event(_object(payload), trace_id=trace_id, **options)
    _from_source(built, "eventSourceArn", source_arn)
    return built


# --- EventBridge Pipes --------------------------------------------------------------------------


def pipes_batch(event: dict[str, Any]) -> list[dict[str, Any]]:
    """What an EventBridge Pipe with a Lambda target sends for the records of an SQS, Kinesis or
    DynamoDB Streams ``event`` (from ``sqs_event``, ``kinesis_event``, ``dynamodb_stream_event``):
    a top-level list; Kinesis records flattened (their ``kinesis`` fields beside the others)."""
    batch = []
    for record in event["Records"]:
        if isinstance(record.get("kinesis"), dict):
            record = {**record["kinesis"], **{k: v for k, v in record.items() if k != "kinesis"}}
        batch.append(record)
    return batch


# --- KPL-aggregated Kinesis records -------------------------------------------------------------


def kinesis_kpl_record(
    *payloads: Any, partition_keys: Sequence[str] | None = None, **options: Any
) -> dict[str, Any]:
    """One Kinesis record holding ``payloads`` aggregated as the KPL does, built with
    aws-kinesis-agg's own aggregator (``pip install 'lambda-event-kit[kpl]'``); ``options`` as for
    ``kinesis_record``."""
    aggregation = import_optional("aws_kinesis_agg.aggregator", "kinesis_kpl_record")
    keys = list(partition_keys) if partition_keys is not None else [uuid.uuid4().hex for _ in payloads]
    aggregator = aggregation.RecordAggregator()
    for payload, key in zip(payloads, keys, strict=True):
        if aggregator.add_user_record(key, _payload_bytes(payload)) is not None:
            raise ValueError("these payloads do not fit in one aggregated record (1 MB)")
    partition_key, _, data = aggregator.clear_and_get().get_contents()
    return kinesis_record(None, partition_key=partition_key, raw_data=_b64(data), **options)


# --- EventBridge ----------------------------------------------------------------------------


def eventbridge_event(
    detail: Any = None,
    *,
    trace_id: str | None = None,
    detail_type: str = "lambda-kit test event",
    source: str = "lambda-kit.tests",
    event_id: str | None = None,
    resources: Sequence[str] = (),
    time_: str | None = None,
) -> dict[str, Any]:
    """An EventBridge event as a rule delivers it to Lambda; ``trace_id`` goes in the detail's
    ``trace_id`` field (the detail must then be an object)."""
    detail = {} if detail is None else detail
    if trace_id is not None:
        if not isinstance(detail, dict):
            raise ValueError("an EventBridge detail that carries a trace_id must be a JSON object")
        detail = {**detail, "trace_id": trace_id}
    return {
        "version": "0",
        "id": event_id or str(uuid.uuid4()),
        "detail-type": detail_type,
        "source": source,
        "account": ACCOUNT,
        "time": time_ or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "region": REGION,
        "resources": list(resources),
        "detail": detail,
    }


@example("eventbridge")
def _eventbridge_example(
    payload: Any, *, trace_id: str | None, source_arn: str | None, **options: Any
) -> dict[str, Any]:
    resources = [source_arn] if source_arn else ()
    return eventbridge_event(payload, trace_id=trace_id, resources=resources, **options)


# --- S3 -------------------------------------------------------------------------------------

_S3_FIELDS = ("bucket", "key", "size", "etag", "version_id", "event_name")


def _s3_object(
    key: str, size: int | None, etag: str | None, version_id: str | None, sequencer: str | None
) -> dict[str, Any]:
    """The ``object`` of an S3 notification record; the key URL-encoded as S3 encodes it."""
    return {
        "key": quote_plus(key),
        **_present({"size": size}),
        "eTag": etag or _md5(key),
        **_present({"versionId": version_id}),
        "sequencer": sequencer or f"{next(_sequence):018X}",
    }


def s3_record(
    key: str = "object.txt",
    *,
    bucket: str = "uploads",
    size: int | None = 1024,
    event_name: str = "ObjectCreated:Put",
    etag: str | None = None,
    version_id: str | None = None,
    request_id: str | None = None,
    sequencer: str | None = None,
) -> dict[str, Any]:
    """One record of an S3 event notification (event structure 2.1); the key is URL-encoded as S3
    encodes it (``"red flower.jpg"`` -> ``"red+flower.jpg"``)."""
    obj = _s3_object(key, size, etag, version_id, sequencer)
    return {
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "awsRegion": REGION,
        "eventTime": _iso_now(),
        "eventName": event_name,
        "userIdentity": {"principalId": "AWS:AIDAINPONIXQXHT3IKHL2"},
        "requestParameters": {"sourceIPAddress": SOURCE_IP},
        "responseElements": {
            "x-amz-request-id": request_id or uuid.uuid4().hex[:16].upper(),
            "x-amz-id-2": _b64(uuid.uuid4().bytes * 3),
        },
        "s3": {
            "s3SchemaVersion": "1.0",
            "configurationId": "lambda-kit-tests",
            "bucket": {
                "name": bucket,
                "ownerIdentity": {"principalId": "A3I5XTEXAMAI3E"},
                "arn": f"arn:aws:s3:::{bucket}",
            },
            "object": obj,
        },
    }


def s3_notification(*keys: str, **options: Any) -> dict[str, Any]:
    """The message S3 sends: ``{"Records": [...]}``, one record per key (``s3_record`` options).
    The Lambda event when the bucket notifies the function; the SQS body or SNS message otherwise."""
    return {"Records": [s3_record(key, **options) for key in (keys or ("object.txt",))]}


def s3_test_message(bucket: str = "uploads") -> dict[str, Any]:
    """The ``s3:TestEvent`` message S3 sends to a queue or topic when a notification is set up."""
    return {
        "Service": "Amazon S3",
        "Event": "s3:TestEvent",
        "Time": _iso_now(),
        "Bucket": bucket,
        "RequestId": uuid.uuid4().hex[:16].upper(),
        "HostId": _b64(uuid.uuid4().bytes * 3),
    }


# What EventBridge's S3 events of each detail type carry by default
_S3_DETAIL_TYPES: dict[str, dict[str, str]] = {
    "Object Created": {"reason": "PutObject"},
    "Object Deleted": {"reason": "DeleteObject", "deletion-type": "Permanently Deleted"},
}


def _s3_eventbridge_object(
    key: str, size: int | None, etag: str | None, version_id: str | None
) -> dict[str, Any]:
    """The ``object`` of an EventBridge S3 event (``size`` only where the object was created)."""
    return {
        "key": key,
        **_present({"size": size}),
        "etag": etag or _md5(key),
        **_present({"version-id": version_id}),
        "sequencer": f"{next(_sequence):016X}",
    }


def s3_eventbridge_event(
    key: str = "object.txt",
    *,
    bucket: str = "uploads",
    detail_type: str = "Object Created",
    reason: str | None = None,
    size: int | None = 1024,
    etag: str | None = None,
    version_id: str | None = None,
    deletion_type: str | None = None,
    request_id: str | None = None,
    event_id: str | None = None,
) -> dict[str, Any]:
    """An S3 ``Object Created`` / ``Object Deleted`` event as EventBridge delivers it (the key is
    not URL-encoded there). ``reason`` defaults to ``PutObject`` / ``DeleteObject``."""
    defaults = _S3_DETAIL_TYPES.get(detail_type)
    if defaults is None:
        raise ValueError("detail_type must be 'Object Created' or 'Object Deleted'")
    given = {"reason": reason, "deletion-type": deletion_type}
    created_size = None if "deletion-type" in defaults else size
    detail = {
        "version": "0",
        "bucket": {"name": bucket},
        "object": _s3_eventbridge_object(key, created_size, etag, version_id),
        "request-id": request_id or uuid.uuid4().hex[:16].upper(),
        "requester": ACCOUNT,
        "source-ip-address": SOURCE_IP,
        **{name: given[name] or default for name, default in defaults.items()},
    }
    resources = [f"arn:aws:s3:::{bucket}"]
    return eventbridge_event(
        detail, detail_type=detail_type, source="aws.s3", event_id=event_id, resources=resources
    )


def _s3_direct(keys: tuple[str, ...], options: dict[str, Any]) -> dict[str, Any]:
    return s3_notification(*keys, **options)


def _s3_via_sqs(keys: tuple[str, ...], options: dict[str, Any]) -> dict[str, Any]:
    return sqs_event(*[s3_notification(key, **options) for key in keys])


def _s3_via_sns(keys: tuple[str, ...], options: dict[str, Any]) -> dict[str, Any]:
    return sns_event(*[s3_notification(key, **options) for key in keys], subject="Amazon S3 Notification")


# The S3 notification's event names an EventBridge event can stand for, as its options
_S3_EVENTBRIDGE_NAMES: dict[str, dict[str, str]] = {
    "ObjectCreated:Put": {},
    "ObjectRemoved:Delete": {"detail_type": "Object Deleted"},
}


def _s3_via_eventbridge(keys: tuple[str, ...], options: dict[str, Any]) -> dict[str, Any]:
    if len(keys) != 1:
        raise ValueError("an EventBridge event carries one object: give one key")
    event_name = options.pop("event_name", "ObjectCreated:Put")
    if event_name not in _S3_EVENTBRIDGE_NAMES:
        raise ValueError(
            f"event_name {event_name!r}: with envelope='eventbridge' use {' or '.join(_S3_EVENTBRIDGE_NAMES)}"
        )
    options.pop("sequencer", None)
    return s3_eventbridge_event(keys[0], **_S3_EVENTBRIDGE_NAMES[event_name], **options)


_S3_DELIVERIES: dict[str, Callable[[tuple[str, ...], dict[str, Any]], dict[str, Any]]] = {
    "direct": _s3_direct,
    "sqs": _s3_via_sqs,
    "sns": _s3_via_sns,
    "eventbridge": _s3_via_eventbridge,
}

S3_ENVELOPES = tuple(_S3_DELIVERIES)
"""How ``s3_event`` can deliver S3's notifications: ``direct``, ``sqs``, ``sns``, ``eventbridge``."""


def s3_event(*keys: str, envelope: str = "direct", **options: Any) -> dict[str, Any]:
    """An event carrying S3 notifications of ``keys`` the way ``envelope`` delivers them:
    ``"direct"`` (one event, a record per key), ``"sqs"`` / ``"sns"`` (a message per key, as S3
    sends them) or ``"eventbridge"`` (one key). ``options`` go to ``s3_record``."""
    deliver = _S3_DELIVERIES.get(envelope)
    if deliver is None:
        raise ValueError(f"envelope must be one of {', '.join(S3_ENVELOPES)}, not {envelope!r}")
    return deliver(keys or ("object.txt",), options)


@example("s3")
def _s3_example(
    payload: Any, *, trace_id: str | None, source_arn: str | None, envelope: str = "direct", **options: Any
) -> dict[str, Any]:
    """``payload``: the object's key, or ``{bucket, key, size, etag, version_id, event_name}``;
    ``trace_id`` becomes S3's request id (where lambda_kit reads an S3 event's trace id)."""
    fields: dict[str, Any] = {"key": payload} if isinstance(payload, str) else dict(payload or {})
    unknown = sorted(set(map(str, fields)) - set(_S3_FIELDS))
    if unknown:
        names = ", ".join(_S3_FIELDS)
        raise ValueError(f"an S3 payload names the object ({names}), not {', '.join(unknown)}")
    if source_arn and source_arn.startswith("arn:aws:s3:::"):
        fields.setdefault("bucket", source_arn.split(":::", 1)[1])
    key = str(fields.pop("key", "object.txt"))
    return s3_event(key, envelope=envelope, request_id=trace_id, **fields, **options)


# --- Tumbling windows -----------------------------------------------------------------------

_SHARD_ID = "shardId-00000001716285600000-8a7b6c5d"
KINESIS_STREAM_ARN = f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/clickstream"


def _shard_of(record: dict[str, Any]) -> str:
    """The shard a stream record came from (its ``eventID`` names it), or a made-up one."""
    event_id = record.get("eventID", "")
    return event_id.split(":", 1)[0] if event_id.startswith("shardId-") else _SHARD_ID


def tumbling_window(
    event: dict[str, Any],
    state: dict[str, Any] | None = None,
    *,
    start: str = "2024-05-21T10:00:00Z",
    seconds: int = 120,
    final: bool = False,
    terminated_early: bool = False,
    shard_id: str | None = None,
) -> dict[str, Any]:
    """``event`` (a Kinesis or DynamoDB Streams event) as Lambda delivers it with
    ``tumblingWindowInSeconds``: the window ``[start, start + seconds)``, the ``state`` the previous
    invocation returned, the shard, and the window's flags (``final``: its last invocation)."""
    end = datetime.fromisoformat(start) + timedelta(seconds=seconds)
    first = event["Records"][0] if event.get("Records") else {}
    return {
        **event,
        "window": {"start": start, "end": end.strftime("%Y-%m-%dT%H:%M:%SZ")},
        "state": {} if state is None else state,
        "shardId": _shard_of(first) if shard_id is None else shard_id,
        "eventSourceARN": first.get("eventSourceARN", KINESIS_STREAM_ARN),
        "isFinalInvokeForWindow": final,
        "isWindowTerminatedEarly": terminated_early,
    }


# --- CloudWatch Logs subscriptions ----------------------------------------------------------

_log_event_ids = itertools.count(1)
_FIRST_LOG_EVENT_ID = 37199717562907174288355125807040114704837640994633613312
CONTROL_MESSAGE = "CWL CONTROL MESSAGE: Checking health of destination Lambda function."


def log_line(
    message: str = "record processed", *, trace_id: str | None = None, level: str = "INFO", **fields: Any
) -> str:
    """A log line as lambda_kit writes it (one JSON object): what a subscription to the log group
    of a lambda_kit function delivers, with ``trace_id`` where the consumer reads it."""
    line: dict[str, Any] = {
        "timestamp": _iso_now(),
        "level": level,
        "message": message,
        "function_name": "producer",
        "request_id": str(uuid.uuid4()),
        **_present({"trace_id": trace_id}),
    }
    return _json.dumps({**line, **fields})


def log_subscription_message(
    *messages: Any,
    log_group: str = "/aws/lambda/producer",
    log_stream: str = "2024/05/21/[$LATEST]0123456789abcdef0123456789abcdef",
    subscription_filters: Sequence[str] = ("lambda-kit-tests",),
    owner: str = ACCOUNT,
    control: bool = False,
) -> dict[str, Any]:
    """A subscription message (before gzip and base64) with one log event per message (a ``str``
    as written, anything else JSON-encoded). ``control``: the message CloudWatch Logs sends to
    check that the destination is reachable."""
    if control:
        messages = messages or (CONTROL_MESSAGE,)
        origin: dict[str, Any] = {
            "messageType": "CONTROL_MESSAGE",
            "owner": "CloudwatchLogs",
            "logGroup": "",
            "logStream": "",
            "subscriptionFilters": [],
        }
    else:
        origin = {
            "messageType": "DATA_MESSAGE",
            "owner": owner,
            "logGroup": log_group,
            "logStream": log_stream,
            "subscriptionFilters": list(subscription_filters),
        }
    now = int(time.time() * 1000)
    return {**origin, "logEvents": [_log_event(message, now) for message in messages]}


def _log_event(message: Any, timestamp: int) -> dict[str, Any]:
    event_id = _FIRST_LOG_EVENT_ID + next(_log_event_ids)
    return {"id": str(event_id), "timestamp": timestamp, "message": payload_text(message)}


def awslogs_data(message: dict[str, Any]) -> str:
    """A subscription message as CloudWatch Logs sends it: base64 text of gzip-compressed JSON."""
    return _b64(gzip.compress(_json.dumps(message).encode(), mtime=0))


def cloudwatch_logs_event(*messages: Any, **options: Any) -> dict[str, Any]:
    """The event a subscription filter invokes a function with: ``{"awslogs": {"data": ...}}``,
    one log event per message (options as for ``log_subscription_message``)."""
    return {"awslogs": {"data": awslogs_data(log_subscription_message(*messages, **options))}}


def kinesis_log_record(*messages: Any, stream: str = "log-events", **options: Any) -> dict[str, Any]:
    """A Kinesis record as a subscription filter to a stream puts it: the subscription message in
    ``data`` (options as for ``log_subscription_message``)."""
    data = awslogs_data(log_subscription_message(*messages, **options))
    return kinesis_record(None, stream=stream, raw_data=data)


@example("cloudwatch_logs")
def _cloudwatch_logs_example(
    payload: Any, *, trace_id: str | None, source_arn: str | None, **options: Any
) -> dict[str, Any]:
    """``payload``: one log event's message (a dict: the fields of a lambda_kit line when
    ``trace_id`` is given, else JSON-encoded); ``source_arn``: the log group's ARN."""
    payload = _object(payload)
    message = log_line(trace_id=trace_id, **payload) if trace_id and isinstance(payload, dict) else payload
    if source_arn and ":log-group:" in source_arn:
        options.setdefault("log_group", source_arn.split(":log-group:", 1)[1].removesuffix(":*"))
    return cloudwatch_logs_event(message, **options)
