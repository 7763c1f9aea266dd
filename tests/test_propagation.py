"""propagate(client) against moto's server: one trace id crossing API -> SQS -> SNS -> Kinesis."""

from __future__ import annotations

import base64
import json

import pytest
from _streams import new_stream

from lambda_kit import (
    api_handler,
    current_record,
    current_trace_id,
    propagate,
    sns_handler,
    sqs_handler,
    stream_handler,
)
from lambda_kit.testing import api_event, kinesis_record, lambda_context, sns_record, sqs_record


@pytest.fixture
def aws(aws_endpoint):
    import boto3

    return {name: propagate(boto3.client(name), kinesis=True) for name in ("sqs", "sns", "kinesis")}


@pytest.fixture
def stream(aws, unique_name):
    """A one-shard Kinesis stream and a reader of what was put on it since."""
    name = unique_name("hops")
    return name, new_stream(aws["kinesis"], name)


def receive(sqs, queue_url, count=1):
    messages = []
    for _ in range(10):
        got = sqs.receive_message(
            QueueUrl=queue_url, MessageAttributeNames=["All"], MaxNumberOfMessages=10, WaitTimeSeconds=1
        )
        messages.extend(got.get("Messages", []))
        if len(messages) >= count:
            return messages
    raise AssertionError(f"expected {count} messages, got {len(messages)}")


def as_lambda_sqs_record(message):
    """A received message in the shape Lambda's SQS event source mapping delivers it."""
    record = sqs_record(message["Body"], message_id=message["MessageId"])
    record["messageAttributes"] = {
        name: {
            "stringValue": value.get("StringValue"),
            "stringListValues": [],
            "binaryListValues": [],
            "dataType": value["DataType"],
        }
        for name, value in message.get("MessageAttributes", {}).items()
    }
    return record


def as_lambda_sns_record(envelope):
    """An SNS notification (as SQS received it without raw delivery) as Lambda's SNS event record."""
    record = sns_record(
        envelope["Message"], message_id=envelope["MessageId"], subject=envelope.get("Subject")
    )
    record["Sns"]["MessageAttributes"] = envelope.get("MessageAttributes", {})
    return record


def as_lambda_kinesis_record(read, stream_name):
    return kinesis_record(
        None,
        stream=stream_name,
        raw_data=base64.b64encode(read["Data"]).decode(),
        partition_key=read["PartitionKey"],
        sequence_number=read["SequenceNumber"],
    )


def test_one_trace_id_crosses_api_sqs_sns_kinesis(aws, stream, unique_name):
    sqs, sns = aws["sqs"], aws["sns"]
    views_queue = sqs.create_queue(QueueName=unique_name("views"))["QueueUrl"]
    topic = sns.create_topic(Name=unique_name("milestones"))["TopicArn"]
    fanout_queue = sqs.create_queue(QueueName=unique_name("fanout"))["QueueUrl"]
    fanout_arn = sqs.get_queue_attributes(QueueUrl=fanout_queue, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=fanout_arn)  # raw delivery off: SNS envelopes
    stream_name, read_stream = stream
    seen = {}

    @api_handler
    def api(request, context):
        seen["api"] = current_trace_id()
        sqs.send_message(QueueUrl=views_queue, MessageBody=json.dumps(request.json))
        return {"queued": True}

    @sqs_handler
    def count_view(message, context):
        seen["sqs"] = current_trace_id()
        sns.publish(TopicArn=topic, Message=json.dumps({"milestone": message["url"]}))

    @sqs_handler
    def fanout(message, context):  # SNS -> SQS without raw delivery: the envelope is unwrapped
        seen["sns->sqs"] = (message, current_trace_id())

    @sns_handler
    def notify(message, context):
        seen["sns"] = current_trace_id()
        aws["kinesis"].put_record(StreamName=stream_name, Data=json.dumps(message), PartitionKey="p")

    @stream_handler
    def archive(payload, context):
        seen["kinesis"] = (payload, current_trace_id())

    response = api(
        api_event("POST", "/views", body={"url": "/home"}, headers={"X-Trace-Id": "req-42"}), lambda_context()
    )
    assert response["statusCode"] == 200 and response["headers"]["X-Trace-Id"] == "req-42"

    (sent,) = receive(sqs, views_queue)
    assert sent["MessageAttributes"]["trace_id"] == {"StringValue": "req-42", "DataType": "String"}
    assert count_view({"Records": [as_lambda_sqs_record(sent)]}, lambda_context()) == {
        "batchItemFailures": []
    }

    (notification,) = receive(sqs, fanout_queue)
    envelope = json.loads(notification["Body"])
    assert (
        envelope["Type"] == "Notification" and envelope["MessageAttributes"]["trace_id"]["Value"] == "req-42"
    )
    assert fanout({"Records": [as_lambda_sqs_record(notification)]}, None) == {"batchItemFailures": []}
    notify({"Records": [as_lambda_sns_record(envelope)]}, lambda_context())

    (put,) = read_stream()
    data = json.loads(put["Data"])
    # lambda_kit started this trace: every hop writes the one traceparent derived from its id.
    traceparent = sent["MessageAttributes"]["traceparent"]["StringValue"]
    assert data == {
        "milestone": "/home",
        "lambda_kit_trace": {"trace_id": "req-42", "traceparent": traceparent},
    }
    assert envelope["MessageAttributes"]["traceparent"]["Value"] == traceparent
    assert archive({"Records": [as_lambda_kinesis_record(put, stream_name)]}, None) == {
        "batchItemFailures": []
    }

    assert seen == {
        "api": "req-42",
        "sqs": "req-42",
        "sns->sqs": ({"milestone": "/home"}, "req-42"),
        "sns": "req-42",
        "kinesis": ({"milestone": "/home"}, "req-42"),  # the payload as its producer wrote it
    }


def test_batch_calls_are_stamped_and_the_callers_own_trace_id_is_never_overwritten(aws, stream, unique_name):
    sqs, sns, kinesis = aws["sqs"], aws["sns"], aws["kinesis"]
    queue = sqs.create_queue(QueueName=unique_name("batch"))["QueueUrl"]
    topic = sns.create_topic(Name=unique_name("batch-topic"))["TopicArn"]
    raw_queue = sqs.create_queue(QueueName=unique_name("raw"))["QueueUrl"]
    raw_arn = sqs.get_queue_attributes(QueueUrl=raw_queue, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=raw_arn, Attributes={"RawMessageDelivery": "true"})
    stream_name, read_stream = stream
    own = {"trace_id": {"DataType": "String", "StringValue": "caller-own"}}

    @sqs_handler
    def handler(message, context):
        sqs.send_message(QueueUrl=queue, MessageBody="own", MessageAttributes=dict(own))
        sqs.send_message_batch(
            QueueUrl=queue,
            Entries=[
                {"Id": "a", "MessageBody": "batch-a"},
                {"Id": "b", "MessageBody": "batch-b", "MessageAttributes": dict(own)},
            ],
        )
        sns.publish_batch(
            TopicArn=topic,
            PublishBatchRequestEntries=[
                {"Id": "a", "Message": "sns-a"},
                {"Id": "b", "Message": "sns-b", "MessageAttributes": dict(own)},
            ],
        )
        kinesis.put_records(
            StreamName=stream_name,
            Records=[
                {"Data": b'{"n": 1}', "PartitionKey": "p"},
                {"Data": b'{"n": 2, "trace_id": "caller-own"}', "PartitionKey": "p"},
                {"Data": b"not json", "PartitionKey": "p"},
                {"Data": b"[1, 2]", "PartitionKey": "p"},
            ],
        )

    handler({"Records": [sqs_record({"go": 1}, trace_id="hop-7")]}, None)

    by_body = {m["Body"]: m["MessageAttributes"]["trace_id"]["StringValue"] for m in receive(sqs, queue, 3)}
    assert by_body == {"own": "caller-own", "batch-a": "hop-7", "batch-b": "caller-own"}
    by_message = {
        m["Body"]: m["MessageAttributes"]["trace_id"]["StringValue"] for m in receive(sqs, raw_queue, 2)
    }
    assert by_message == {"sns-a": "hop-7", "sns-b": "caller-own"}
    first, *rest = [r["Data"] for r in read_stream()]
    assert json.loads(first)["lambda_kit_trace"]["trace_id"] == "hop-7" and json.loads(first)["n"] == 1
    assert rest == [b'{"n": 2, "trace_id": "caller-own"}', b"not json", b"[1, 2]"]


def test_nothing_is_added_outside_a_handler_and_propagate_is_idempotent(aws, unique_name):
    import boto3

    sqs = aws["sqs"]
    assert propagate(sqs) is sqs
    dynamodb = boto3.client("dynamodb")
    assert propagate(dynamodb) is dynamodb  # other services: a harmless no-op
    queue = sqs.create_queue(QueueName=unique_name("outside"))["QueueUrl"]
    sqs.send_message(QueueUrl=queue, MessageBody="outside")
    (message,) = receive(sqs, queue)
    assert "MessageAttributes" not in message


def test_kinesis_data_is_written_into_only_when_asked(aws_endpoint, unique_name):
    import boto3

    kinesis = propagate(boto3.client("kinesis"))  # kinesis=False: the producer's bytes untouched
    name = unique_name("plain")
    _, read_stream = name, new_stream(kinesis, name)

    @sqs_handler
    def handler(message, context):
        kinesis.put_record(StreamName=name, Data=b'{"n": 1}', PartitionKey="p")

    handler({"Records": [sqs_record({"go": 1}, trace_id="hop-8")]}, None)
    assert [record["Data"] for record in read_stream()] == [b'{"n": 1}']


def test_a_consumer_gets_the_producers_payload_and_the_sdks_trace_headers_pass_through():
    from pydantic import BaseModel, ConfigDict

    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid")
        n: int

    seen = []

    @stream_handler(model=Strict)
    def strict(order, context):
        seen.append((order.n, current_trace_id()))

    stamped = {
        "n": 3,
        "lambda_kit_trace": {"trace_id": "hop-9", "traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"},
    }
    assert strict({"Records": [kinesis_record(stamped)]}, None) == {"batchItemFailures": []}
    assert seen == [(3, "hop-9")]

    @sqs_handler
    def relay(message, context):
        seen.append(current_record().raw["attributes"]["AWSTraceHeader"])

    header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
    record = sqs_record({"n": 1})
    record["attributes"]["AWSTraceHeader"] = header
    assert relay({"Records": [record]}, None) == {"batchItemFailures": []}
    assert seen[-1] == header


def test_the_sdks_own_trace_header_for_recursion_detection_goes_out_unchanged(aws_endpoint, monkeypatch):
    import boto3

    header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "relay-fn")  # botocore adds the header inside Lambda
    monkeypatch.setenv("_X_AMZN_TRACE_ID", header)
    sqs = propagate(boto3.client("sqs"))
    sent = []
    sqs.meta.events.register("before-send.sqs.SendMessage", lambda request, **_: sent.append(request.headers))
    queue = sqs.create_queue(QueueName="recursion-header")["QueueUrl"]

    @sqs_handler
    def relay(message, context):
        sqs.send_message(QueueUrl=queue, MessageBody="onward")

    relay({"Records": [sqs_record({"go": 1}, trace_id="hop-10")]}, None)
    assert sent[0]["X-Amzn-Trace-Id"] in (header, header.encode())


def test_an_eventbridge_consumer_gets_the_detail_without_what_propagate_added():
    from lambda_kit import eventbridge_handler
    from lambda_kit.testing import eventbridge_event

    datadog = {"x-datadog-trace-id": "1234", "x-datadog-parent-id": "5678"}
    own = {"n": 4, "_datadog": {"x-datadog-trace-id": "9"}}  # the producer's own: kept
    seen = []

    @eventbridge_handler
    def handler(detail, context):
        seen.append((detail, current_trace_id()))

    handler(
        eventbridge_event(
            {"n": 4, "_datadog": datadog, "lambda_kit_trace": {"trace_id": "eb-1", "_datadog": datadog}}
        ),
        None,
    )
    handler(eventbridge_event({**own, "lambda_kit_trace": {"trace_id": "eb-2", "_datadog": datadog}}), None)
    assert seen == [({"n": 4}, "eb-1"), (own, "eb-2")]
