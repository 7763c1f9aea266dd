"""Event factories for every source and a fake Lambda context, for your tests and ours.

Shapes follow AWS's documented sample events; every record gets a unique id. Payloads that are
not ``str``/``bytes`` are JSON-encoded for you.

    from lambda_kit.testing import sqs_event, lambda_context
    response = handler(sqs_event({"url": "a"}, {"url": "b"}, trace_id="T"), lambda_context())
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json as _json
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from typing import Any

from .. import sources

REGION = "us-east-1"
ACCOUNT = "123456789012"
_sequence = itertools.count(1)


def _text(payload: Any) -> str:
    if isinstance(payload, bytes):
        return payload.decode("utf-8")
    return payload if isinstance(payload, str) else _json.dumps(payload)


def _per_record(value: Any, count: int) -> list[Any]:
    """A single value for every record, or one value per record."""
    if isinstance(value, list | tuple):
        if len(value) != count:
            raise ValueError(f"expected {count} values, one per record, got {len(value)}")
        return list(value)
    return [value] * count


class LambdaContext:
    """A stand-in for the Lambda context object (``function_name``, ``aws_request_id``, ...)."""

    def __init__(self, function_name: str = "test-function", timeout: float = 30.0, memory_mb: int = 128) -> None:
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
    source: str, payload: Any = None, *, trace_id: str | None = None, source_arn: str | None = None, **options: Any
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
    text = _text(body)
    attributes = dict(message_attributes or {})
    if trace_id is not None:
        attributes["trace_id"] = trace_id
    now = str(int(time.time() * 1000))
    return {
        "messageId": message_id or str(uuid.uuid4()),
        "receiptHandle": base64.b64encode(uuid.uuid4().bytes * 4).decode(),
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


def sqs_event(*bodies: Any, trace_id: str | Sequence[str | None] | None = None, **options: Any) -> dict[str, Any]:
    """An SQS event with one record per body. ``trace_id``: one for all, or one per record."""
    trace_ids = _per_record(trace_id, len(bodies))
    return {"Records": [sqs_record(body, trace_id=tid, **options) for body, tid in zip(bodies, trace_ids, strict=True)]}


@example("sqs")
def _sqs_example(payload: Any, *, trace_id: str | None, source_arn: str | None, **options: Any) -> dict[str, Any]:
    built = sqs_event({} if payload is None else payload, trace_id=trace_id, **options)
    if source_arn:
        built["Records"][0]["eventSourceARN"] = source_arn
    return built


def sns_envelope(message: Any, *, trace_id: str | None = None, topic: str = "milestones", subject: str | None = None) -> str:
    """The SQS body of an SNS notification delivered without raw message delivery."""
    envelope: dict[str, Any] = {
        "Type": "Notification",
        "MessageId": str(uuid.uuid4()),
        "TopicArn": f"arn:aws:sns:{REGION}:{ACCOUNT}:{topic}",
        "Subject": subject,
        "Message": _text(message),
        "Timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
        "SignatureVersion": "1",
        "Signature": "EXAMPLE",
        "SigningCertURL": "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0000000000000000000000.pem",
        "UnsubscribeURL": "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe",
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
            "Timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
            "Signature": "EXAMPLE",
            "SigningCertUrl": "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0000000000000000000000.pem",
            "MessageId": message_id or str(uuid.uuid4()),
            "Message": _text(message),
            "MessageAttributes": attributes,
            "Type": "Notification",
            "UnsubscribeUrl": "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe",
            "TopicArn": topic_arn,
            "Subject": subject,
        },
    }


def sns_event(*messages: Any, trace_id: str | Sequence[str | None] | None = None, **options: Any) -> dict[str, Any]:
    """An SNS event (Lambda delivers one record per invocation; more are allowed here)."""
    trace_ids = _per_record(trace_id, len(messages))
    return {"Records": [sns_record(m, trace_id=t, **options) for m, t in zip(messages, trace_ids, strict=True)]}


@example("sns")
def _sns_example(payload: Any, *, trace_id: str | None, source_arn: str | None, **options: Any) -> dict[str, Any]:
    built = sns_event({} if payload is None else payload, trace_id=trace_id, **options)
    if source_arn:
        built["Records"][0]["Sns"]["TopicArn"] = source_arn
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
    sequence_number = sequence_number or f"49590338271490256608559692538361571095921575989136588{next(_sequence):04d}"
    data = raw_data if raw_data is not None else base64.b64encode(
        payload if isinstance(payload, bytes) else _text(payload).encode()
    ).decode()
    return {
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": partition_key or uuid.uuid4().hex,
            "sequenceNumber": sequence_number,
            "data": data,
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
def _kinesis_example(payload: Any, *, trace_id: str | None, source_arn: str | None, **options: Any) -> dict[str, Any]:
    body = {} if payload is None else payload
    if trace_id and isinstance(body, dict):
        body = {**body, "trace_id": trace_id}  # Kinesis producers put the trace id in the payload
    built = kinesis_event(body, **options)
    if source_arn:
        built["Records"][0]["eventSourceARN"] = source_arn
    return built


# --- DynamoDB Streams -----------------------------------------------------------------------

def to_dynamodb(value: Any) -> dict[str, Any]:
    """A plain Python value as a DynamoDB attribute value (``{"S": ...}``, ``{"N": ...}``, ...)."""
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, int | float | Decimal):
        return {"N": str(value)}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, bytes):
        return {"B": base64.b64encode(value).decode()}
    if isinstance(value, set | frozenset):
        items = list(value)
        if all(isinstance(i, str) for i in items):
            return {"SS": items}
        if all(isinstance(i, bytes) for i in items):
            return {"BS": [base64.b64encode(i).decode() for i in items]}
        return {"NS": [str(i) for i in items]}
    if isinstance(value, dict):
        return {"M": {k: to_dynamodb(v) for k, v in value.items()}}
    if isinstance(value, Iterable):
        return {"L": [to_dynamodb(v) for v in value]}
    raise TypeError(f"cannot represent {type(value).__name__} as a DynamoDB attribute")


def dynamodb_record(
    event_name: str = "INSERT",
    keys: dict[str, Any] | None = None,
    new_image: dict[str, Any] | None = None,
    old_image: dict[str, Any] | None = None,
    *,
    table: str = "ViewStats",
    sequence_number: str | None = None,
) -> dict[str, Any]:
    keys = keys if keys is not None else {k: v for k, v in (new_image or old_image or {}).items() if k in ("PK", "SK")}
    change: dict[str, Any] = {
        "ApproximateCreationDateTime": int(time.time()),
        "Keys": {k: to_dynamodb(v) for k, v in keys.items()},
        "SequenceNumber": sequence_number or f"{next(_sequence):021d}",
        "SizeBytes": 26,
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    }
    if new_image is not None:
        change["NewImage"] = {k: to_dynamodb(v) for k, v in new_image.items()}
    if old_image is not None:
        change["OldImage"] = {k: to_dynamodb(v) for k, v in old_image.items()}
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


@example("dynamodb")
def _dynamodb_example(payload: Any, *, trace_id: str | None, source_arn: str | None, **options: Any) -> dict[str, Any]:
    """``payload``: the new image of an INSERT, or ``{event_name, keys, new_image, old_image}``."""
    payload = {} if payload is None else payload
    if not isinstance(payload, dict):
        raise ValueError("a DynamoDB Streams payload is a JSON object: the new image, or {event_name, keys, new_image, old_image}")
    if set(payload) & {"event_name", "keys", "new_image", "old_image"}:
        record = dynamodb_record(
            payload.get("event_name", "INSERT"), payload.get("keys"), payload.get("new_image"), payload.get("old_image"), **options
        )
    else:
        record = dynamodb_record("INSERT", None, {**payload, "trace_id": trace_id} if trace_id else payload, **options)
    if source_arn:
        record["eventSourceARN"] = source_arn
    return dynamodb_stream_event(record)


# --- HTTP: API Gateway REST and HTTP APIs, Function URLs, ALB --------------------------------

API_VERSIONS = ("v2", "v1", "http-v1", "url", "alb")
"""``api_event`` shapes: HTTP API payload 2.0, REST API, HTTP API payload 1.0, Function URL, ALB."""


def _query_pairs(query: dict[str, Any] | None) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for name, value in (query or {}).items():
        values = value if isinstance(value, list | tuple) else [value]
        pairs.extend((str(name), str(v)) for v in values)
    return pairs


def _grouped_values(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for name, value in pairs:
        grouped.setdefault(name, []).append(value)
    return grouped


def api_event(
    method: str = "GET",
    path: str = "/",
    *,
    body: Any = None,
    headers: dict[str, str] | None = None,
    query: dict[str, str | list[str]] | None = None,
    path_params: dict[str, str] | None = None,
    version: str = "v2",
    base64_body: bool = False,
    multi_value_headers: dict[str, list[str]] | None = None,
    route: str | None = None,
    cookies: dict[str, str] | None = None,
    multi_value: bool = False,
) -> dict[str, Any]:
    """An HTTP request event as Lambda receives it, in the fields AWS documents for ``version``:

    ``"v2"`` an HTTP API (payload format 2.0), ``"v1"`` a REST API, ``"http-v1"`` an HTTP API with
    payload format 1.0, ``"url"`` a Function URL, ``"alb"`` an Application Load Balancer target
    (``multi_value=True``: its target group has multi-value headers on). ``query`` values may be
    lists (a repeated parameter); a ``bytes`` body (or ``base64_body=True``) is sent base64-encoded.
    """
    from urllib.parse import quote, urlencode

    if version not in API_VERSIONS:
        raise ValueError(f"version must be one of {', '.join(API_VERSIONS)}, not {version!r}")
    method = method.upper()
    is_base64 = base64_body or isinstance(body, bytes)
    text = None
    if body is not None:
        raw = body if isinstance(body, bytes) else _text(body).encode("utf-8", "surrogatepass")
        text = base64.b64encode(raw).decode() if is_base64 else _text(body)
    pairs = _query_pairs(query)
    grouped = _grouped_values(pairs)
    raw_query = urlencode(pairs, quote_via=quote)
    request_id = uuid.uuid4().hex[:20]
    now = time.time()
    clock = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now))
    cookie_list = [f"{name}={value}" for name, value in (cookies or {}).items()]

    if version in ("v2", "url"):
        header_map = {"content-type": "application/json", "user-agent": "lambda-kit-tests",
                      **{k.lower(): v for k, v in (headers or {}).items()}}
        url = version == "url"
        route_key = "$default" if url else route or f"{method} {path}"
        domain_prefix = "a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6" if url else "api-id"
        built: dict[str, Any] = {
            "version": "2.0",
            "routeKey": route_key,
            "rawPath": path,
            "rawQueryString": raw_query,
        }
        if cookie_list:
            built["cookies"] = cookie_list
        built["headers"] = header_map
        if grouped:  # repeated names are joined with commas, as API Gateway and Function URLs do
            built["queryStringParameters"] = {name: ",".join(values) for name, values in grouped.items()}
        built["requestContext"] = {
            "accountId": ACCOUNT,
            "apiId": domain_prefix,
            **({"authentication": None, "authorizer": None} if url else {}),
            "domainName": f"{domain_prefix}.lambda-url.{REGION}.on.aws" if url else f"api-id.execute-api.{REGION}.amazonaws.com",
            "domainPrefix": domain_prefix,
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "192.0.2.1",
                "userAgent": header_map.get("user-agent", ""),
            },
            "requestId": request_id,
            "routeKey": route_key,
            "stage": "$default",
            "time": clock,
            "timeEpoch": int(now * 1000),
        }
        if text is not None:
            built["body"] = text
        built["pathParameters"] = None if url else path_params
        built["isBase64Encoded"] = is_base64
        built["stageVariables"] = None
        return built

    if version == "alb":
        header_map = {"host": "lambda-kit-alb-123456789.us-east-1.elb.amazonaws.com", "user-agent": "lambda-kit-tests",
                      "x-amzn-trace-id": f"Root=1-{int(now):08x}-{uuid.uuid4().hex[:24]}",
                      "x-forwarded-for": "192.0.2.1", "x-forwarded-port": "443", "x-forwarded-proto": "https",
                      **{k.lower(): v for k, v in (headers or {}).items()}}
        if cookie_list:
            header_map.setdefault("cookie", "; ".join(cookie_list))
        if text is not None:
            header_map.setdefault("content-type", "application/json")
        sent = {quote(name): [quote(v) for v in values] for name, values in grouped.items()}  # not decoded by the ALB
        multi = multi_value or multi_value_headers is not None
        built = {
            "requestContext": {"elb": {"targetGroupArn": f"arn:aws:elasticloadbalancing:{REGION}:{ACCOUNT}:targetgroup/lambda-kit/6d0ecf831eec9f09"}},
            "httpMethod": method,
            "path": path,
        }
        if multi:
            built["multiValueQueryStringParameters"] = sent
            built["multiValueHeaders"] = multi_value_headers if multi_value_headers is not None else {k: [v] for k, v in header_map.items()}
        else:
            built["queryStringParameters"] = {name: values[-1] for name, values in sent.items()}
            built["headers"] = header_map
        built["body"] = "" if text is None else text
        built["isBase64Encoded"] = is_base64
        return built

    header_map = {"Content-Type": "application/json", "User-Agent": "lambda-kit-tests", **(headers or {})}
    if cookie_list:
        header_map.setdefault("Cookie", "; ".join(cookie_list))
    http_api = version == "http-v1"
    stage = "$default" if http_api else "prod"
    built = {}
    if http_api:
        built["version"] = "1.0"
    built.update({
        "resource": route or path,
        "path": path,
        "httpMethod": method,
        "headers": header_map if multi_value_headers is None else None,
        "multiValueHeaders": multi_value_headers or {k: [v] for k, v in header_map.items()},
        "queryStringParameters": {name: values[-1] for name, values in grouped.items()} if grouped else None,
        "multiValueQueryStringParameters": grouped or None,
        "requestContext": {
            "accountId": ACCOUNT,
            "apiId": "api-id",
            "domainName": f"api-id.execute-api.{REGION}.amazonaws.com",
            "domainPrefix": "api-id",
            "extendedRequestId": uuid.uuid4().hex[:16],
            "httpMethod": method,
            "identity": {"sourceIp": "192.0.2.1", "userAgent": "lambda-kit-tests"},
            "path": path if http_api else f"/{stage}{path}",
            "protocol": "HTTP/1.1",
            "requestId": request_id,
            "requestTime": clock,
            "requestTimeEpoch": int(now * 1000),
            "resourceId": None if http_api else "abc123",
            "resourcePath": route or path,
            "stage": stage,
        },
        "pathParameters": path_params,
        "stageVariables": None,
        "body": text,
        "isBase64Encoded": is_base64,
    })
    return built


@example("api")
def _api_example(
    payload: Any, *, trace_id: str | None, source_arn: str | None, method: str = "GET", path: str = "/", **options: Any
) -> dict[str, Any]:
    headers = {**options.pop("headers", {}), **({"X-Trace-Id": trace_id} if trace_id else {})}
    return api_event(method, path, body=payload, headers=headers or None, **options)


# --- Kafka (Amazon MSK, self-managed) ---------------------------------------------------------

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
    found = dict(headers or {})
    if trace_id is not None:
        found["trace_id"] = trace_id
    return {
        "topic": topic,
        "partition": partition,
        "offset": next(_sequence) if offset is None else offset,
        "timestamp": int(time.time() * 1000),
        "timestampType": "CREATE_TIME",
        "key": None if key is None else base64.b64encode(key if isinstance(key, bytes) else key.encode()).decode(),
        "value": None if value is None else base64.b64encode(
            value if isinstance(value, bytes) else _text(value).encode()
        ).decode(),
        "headers": [{name: list(v if isinstance(v, bytes) else v.encode())} for name, v in found.items()],
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
def _kafka_example(payload: Any, *, trace_id: str | None, source_arn: str | None, **options: Any) -> dict[str, Any]:
    built = kafka_event({} if payload is None else payload, trace_id=trace_id, **options)
    if source_arn:
        built["eventSourceArn"] = source_arn
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

def kinesis_kpl_record(*payloads: Any, partition_keys: Sequence[str] | None = None, **options: Any) -> dict[str, Any]:
    """One Kinesis record holding ``payloads`` aggregated as the KPL does, built with
    aws-kinesis-agg's own aggregator (``pip install 'lambda-event-kit[kpl]'``); ``options`` as for
    ``kinesis_record``."""
    from aws_kinesis_agg.aggregator import RecordAggregator

    keys = list(partition_keys) if partition_keys is not None else [uuid.uuid4().hex for _ in payloads]
    aggregator = RecordAggregator()
    for payload, key in zip(payloads, keys, strict=True):
        if aggregator.add_user_record(key, payload if isinstance(payload, bytes) else _text(payload).encode()) is not None:
            raise ValueError("these payloads do not fit in one aggregated record (1 MB)")
    partition_key, _, data = aggregator.clear_and_get().get_contents()
    return kinesis_record(None, partition_key=partition_key, raw_data=base64.b64encode(data).decode(), **options)


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
def _eventbridge_example(payload: Any, *, trace_id: str | None, source_arn: str | None, **options: Any) -> dict[str, Any]:
    return eventbridge_event(payload, trace_id=trace_id, resources=[source_arn] if source_arn else (), **options)


# --- S3 -------------------------------------------------------------------------------------

S3_ENVELOPES = ("direct", "sqs", "sns", "eventbridge")
_S3_FIELDS = ("bucket", "key", "size", "etag", "version_id", "event_name")


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
    from urllib.parse import quote_plus

    obj: dict[str, Any] = {"key": quote_plus(key)}
    if size is not None:
        obj["size"] = size
    obj["eTag"] = etag or hashlib.md5(key.encode("utf-8", "surrogatepass")).hexdigest()
    if version_id is not None:
        obj["versionId"] = version_id
    obj["sequencer"] = sequencer or f"{next(_sequence):018X}"
    return {
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "awsRegion": REGION,
        "eventTime": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
        "eventName": event_name,
        "userIdentity": {"principalId": "AWS:AIDAINPONIXQXHT3IKHL2"},
        "requestParameters": {"sourceIPAddress": "192.0.2.1"},
        "responseElements": {
            "x-amz-request-id": request_id or uuid.uuid4().hex[:16].upper(),
            "x-amz-id-2": base64.b64encode(uuid.uuid4().bytes * 3).decode(),
        },
        "s3": {
            "s3SchemaVersion": "1.0",
            "configurationId": "lambda-kit-tests",
            "bucket": {"name": bucket, "ownerIdentity": {"principalId": "A3I5XTEXAMAI3E"}, "arn": f"arn:aws:s3:::{bucket}"},
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
        "Time": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
        "Bucket": bucket,
        "RequestId": uuid.uuid4().hex[:16].upper(),
        "HostId": base64.b64encode(uuid.uuid4().bytes * 3).decode(),
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
    if detail_type not in ("Object Created", "Object Deleted"):
        raise ValueError("detail_type must be 'Object Created' or 'Object Deleted'")
    created = detail_type == "Object Created"
    obj: dict[str, Any] = {"key": key}
    if size is not None and created:
        obj["size"] = size
    obj["etag"] = etag or hashlib.md5(key.encode("utf-8", "surrogatepass")).hexdigest()
    if version_id is not None:
        obj["version-id"] = version_id
    obj["sequencer"] = f"{next(_sequence):016X}"
    detail: dict[str, Any] = {
        "version": "0",
        "bucket": {"name": bucket},
        "object": obj,
        "request-id": request_id or uuid.uuid4().hex[:16].upper(),
        "requester": ACCOUNT,
        "source-ip-address": "192.0.2.1",
        "reason": reason or ("PutObject" if created else "DeleteObject"),
    }
    if not created:
        detail["deletion-type"] = deletion_type or "Permanently Deleted"
    return {
        "version": "0",
        "id": event_id or str(uuid.uuid4()),
        "detail-type": detail_type,
        "source": "aws.s3",
        "account": ACCOUNT,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "region": REGION,
        "resources": [f"arn:aws:s3:::{bucket}"],
        "detail": detail,
    }


def s3_event(*keys: str, envelope: str = "direct", **options: Any) -> dict[str, Any]:
    """An event carrying S3 notifications of ``keys`` the way ``envelope`` delivers them:
    ``"direct"`` (one event, a record per key), ``"sqs"`` / ``"sns"`` (a message per key, as S3
    sends them) or ``"eventbridge"`` (one key). ``options`` go to ``s3_record``."""
    keys = keys or ("object.txt",)
    if envelope == "direct":
        return s3_notification(*keys, **options)
    if envelope == "sqs":
        return sqs_event(*[s3_notification(key, **options) for key in keys])
    if envelope == "sns":
        return sns_event(*[s3_notification(key, **options) for key in keys], subject="Amazon S3 Notification")
    if envelope == "eventbridge":
        if len(keys) != 1:
            raise ValueError("an EventBridge event carries one object: give one key")
        translated = {"ObjectCreated:Put": {}, "ObjectRemoved:Delete": {"detail_type": "Object Deleted"}}
        event_name = options.pop("event_name", "ObjectCreated:Put")
        if event_name not in translated:
            raise ValueError(f"event_name {event_name!r}: with envelope='eventbridge' use ObjectCreated:Put or ObjectRemoved:Delete")
        options.pop("sequencer", None)
        return s3_eventbridge_event(keys[0], **translated[event_name], **options)
    raise ValueError(f"envelope must be one of {', '.join(S3_ENVELOPES)}, not {envelope!r}")


@example("s3")
def _s3_example(payload: Any, *, trace_id: str | None, source_arn: str | None, envelope: str = "direct", **options: Any) -> dict[str, Any]:
    """``payload``: the object's key, or ``{bucket, key, size, etag, version_id, event_name}``;
    ``trace_id`` becomes S3's request id (where lambda_kit reads an S3 event's trace id)."""
    fields: dict[str, Any] = {"key": payload} if isinstance(payload, str) else dict(payload or {})
    unknown = sorted(set(map(str, fields)) - set(_S3_FIELDS))
    if unknown:
        raise ValueError(f"an S3 payload names the object ({', '.join(_S3_FIELDS)}), not {', '.join(unknown)}")
    if source_arn and source_arn.startswith("arn:aws:s3:::"):
        fields.setdefault("bucket", source_arn.split(":::", 1)[1])
    key = str(fields.pop("key", "object.txt"))
    return s3_event(key, envelope=envelope, request_id=trace_id, **fields, **options)


# --- Tumbling windows -----------------------------------------------------------------------

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
    from datetime import datetime, timedelta

    begin = datetime.fromisoformat(start)
    first = event["Records"][0] if event.get("Records") else {}
    source_arn = first.get("eventSourceARN", f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/clickstream")
    if shard_id is None:
        event_id = first.get("eventID", "")
        shard_id = event_id.split(":", 1)[0] if event_id.startswith("shardId-") else "shardId-00000001716285600000-8a7b6c5d"
    return {
        **event,
        "window": {"start": start, "end": (begin + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")},
        "state": {} if state is None else state,
        "shardId": shard_id,
        "eventSourceARN": source_arn,
        "isFinalInvokeForWindow": final,
        "isWindowTerminatedEarly": terminated_early,
    }


# --- CloudWatch Logs subscriptions ----------------------------------------------------------

_log_event_ids = itertools.count(1)


def log_line(message: str = "record processed", *, trace_id: str | None = None, level: str = "INFO", **fields: Any) -> str:
    """A log line as lambda_kit writes it (one JSON object): what a subscription to the log group
    of a lambda_kit function delivers, with ``trace_id`` where the consumer reads it."""
    line: dict[str, Any] = {
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
        "level": level,
        "message": message,
        "function_name": "producer",
        "request_id": str(uuid.uuid4()),
    }
    if trace_id is not None:
        line["trace_id"] = trace_id
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
        messages = messages or ("CWL CONTROL MESSAGE: Checking health of destination Lambda function.",)
    now = int(time.time() * 1000)
    return {
        "messageType": "CONTROL_MESSAGE" if control else "DATA_MESSAGE",
        "owner": "CloudwatchLogs" if control else owner,
        "logGroup": "" if control else log_group,
        "logStream": "" if control else log_stream,
        "subscriptionFilters": [] if control else list(subscription_filters),
        "logEvents": [
            {"id": f"{37199717562907174288355125807040114704837640994633613312 + next(_log_event_ids)}", "timestamp": now, "message": _text(m)}
            for m in messages
        ],
    }


def awslogs_data(message: dict[str, Any]) -> str:
    """A subscription message as CloudWatch Logs sends it: base64 text of gzip-compressed JSON."""
    import gzip

    return base64.b64encode(gzip.compress(_json.dumps(message).encode(), mtime=0)).decode()


def cloudwatch_logs_event(*messages: Any, **options: Any) -> dict[str, Any]:
    """The event a subscription filter invokes a function with: ``{"awslogs": {"data": ...}}``,
    one log event per message (options as for ``log_subscription_message``)."""
    return {"awslogs": {"data": awslogs_data(log_subscription_message(*messages, **options))}}


def kinesis_log_record(*messages: Any, stream: str = "log-events", **options: Any) -> dict[str, Any]:
    """A Kinesis record as a subscription filter to a stream puts it: the subscription message in
    ``data`` (options as for ``log_subscription_message``)."""
    return kinesis_record(None, stream=stream, raw_data=awslogs_data(log_subscription_message(*messages, **options)))


@example("cloudwatch_logs")
def _cloudwatch_logs_example(payload: Any, *, trace_id: str | None, source_arn: str | None, **options: Any) -> dict[str, Any]:
    """``payload``: one log event's message (a dict: the fields of a lambda_kit line when
    ``trace_id`` is given, else JSON-encoded); ``source_arn``: the log group's ARN."""
    payload = {} if payload is None else payload
    message = log_line(trace_id=trace_id, **payload) if trace_id and isinstance(payload, dict) else payload
    if source_arn and ":log-group:" in source_arn:
        options.setdefault("log_group", source_arn.split(":log-group:", 1)[1].removesuffix(":*"))
    return cloudwatch_logs_event(message, **options)
