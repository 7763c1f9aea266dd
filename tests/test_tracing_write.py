"""Writing the trace context on every hop, read back by the vendors' own extraction code.

Calls go to moto's server on loopback (SQS, SNS, Kinesis, EventBridge, Step Functions) and what
arrived is handed to OpenTelemetry's W3C propagator and to ddtrace's (``extract_DD_json`` is how
ddtrace's botocore integration finds ``_datadog`` in a received message); outgoing HTTP goes to a
real HTTP server. Lambda ``Invoke`` needs Docker under moto: its request is checked as botocore
serialized it, before it would leave.
"""

from __future__ import annotations

import base64
import json
import os
import random
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

os.environ.setdefault("DD_INSTRUMENTATION_TELEMETRY_ENABLED", "false")
os.environ.setdefault("DD_TRACE_ENABLED", "false")

from ddtrace.contrib.internal.botocore.utils import extract_DD_json  # noqa: E402
from ddtrace.propagation.http import HTTPPropagator  # noqa: E402
from ddtrace.trace import Context as DatadogContext  # noqa: E402
from opentelemetry import trace as otel_trace  # noqa: E402
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator  # noqa: E402

from lambda_kit import propagate, sqs_handler, trace_headers  # noqa: E402
from lambda_kit.testing import sqs_record  # noqa: E402
from tests._logs import of_level, read_lines  # noqa: E402

W3C = TraceContextTextMapPropagator()


def w3c_of(carrier):
    return otel_trace.get_current_span(W3C.extract(carrier)).get_span_context()


def incoming_datadog(seed):
    rng = random.Random(seed)
    context = DatadogContext(
        trace_id=rng.getrandbits(128),
        span_id=rng.getrandbits(64) or 1,
        sampling_priority=2,
        dd_origin="lambda",
    )
    headers: dict[str, str] = {}
    HTTPPropagator.inject(context, headers)
    return {k: v for k, v in headers.items() if k.startswith("x-datadog-")}, context


def record_with(attributes):
    record = sqs_record({"go": 1})
    record["messageAttributes"] = {
        k: {"stringValue": v if isinstance(v, str) else json.dumps(v), "dataType": "String"}
        for k, v in attributes.items()
    }
    return {"Records": [record]}


@pytest.fixture
def session(aws_endpoint):
    """A boto3 session whose clients created afterwards propagate (``propagate(session)``)."""
    import boto3

    return propagate(boto3.Session(), kinesis=True)


def receive(sqs, url, count=1):
    messages = []
    for _ in range(20):
        got = sqs.receive_message(
            QueueUrl=url, MessageAttributeNames=["All"], MaxNumberOfMessages=10, WaitTimeSeconds=1
        )
        messages += got.get("Messages", [])
        if len(messages) >= count:
            return messages
    raise AssertionError(f"expected {count} messages, got {len(messages)}")


def queue_with_arn(sqs, name):
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    return url, sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


def test_propagate_with_no_argument_covers_clients_created_afterwards(aws_endpoint, unique_name, monkeypatch):
    import boto3

    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)  # this test's own default session
    before = boto3.client("sqs")
    assert propagate() is None
    after = boto3.client("sqs")
    url = after.create_queue(QueueName=unique_name("default"))["QueueUrl"]

    @sqs_handler
    def handler(message, context):
        before.send_message(QueueUrl=url, MessageBody="before")
        after.send_message(QueueUrl=url, MessageBody="after")

    handler(record_with({"trace_id": "t-default"}), None)
    attributes = {m["Body"]: m.get("MessageAttributes", {}) for m in receive(after, url, 2)}
    assert attributes["before"] == {}
    assert attributes["after"]["trace_id"]["StringValue"] == "t-default"


def test_sqs_sns_kinesis_carry_a_w3c_context_opentelemetry_extracts(session, unique_name):
    sqs, sns, kinesis = session.client("sqs"), session.client("sns"), session.client("kinesis")
    url, _ = queue_with_arn(sqs, unique_name("w3c"))
    raw_url, raw_arn = queue_with_arn(sqs, unique_name("w3c-raw"))
    topic = sns.create_topic(Name=unique_name("w3c-topic"))["TopicArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=raw_arn, Attributes={"RawMessageDelivery": "true"})
    stream = unique_name("w3c-stream")
    kinesis.create_stream(StreamName=stream, ShardCount=1)
    kinesis.get_waiter("stream_exists").wait(
        StreamName=stream, WaiterConfig={"Delay": 0.1, "MaxAttempts": 50}
    )
    shard = kinesis.describe_stream(StreamName=stream)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = kinesis.get_shard_iterator(StreamName=stream, ShardId=shard, ShardIteratorType="LATEST")[
        "ShardIterator"
    ]
    traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    state = "congo=t61rcWkgMzE"

    @sqs_handler
    def handler(message, context):
        sqs.send_message(QueueUrl=url, MessageBody="sqs")
        sns.publish(TopicArn=topic, Message="sns")
        kinesis.put_record(StreamName=stream, Data=b'{"n": 1}', PartitionKey="p")

    handler(record_with({"traceparent": traceparent, "tracestate": state}), None)
    incoming = w3c_of({"traceparent": traceparent})
    for message in [*receive(sqs, url), *receive(sqs, raw_url)]:
        carrier = {name: value["StringValue"] for name, value in message["MessageAttributes"].items()}
        sent = w3c_of(carrier)
        assert (sent.trace_id, sent.span_id) == (
            incoming.trace_id,
            incoming.span_id,
        )  # the producer's span stays the parent
        assert (
            carrier["trace_id"] == otel_trace.format_trace_id(incoming.trace_id)
            and carrier["tracestate"] == state
        )
        assert "_datadog" not in carrier  # the incoming context was not Datadog's
    (put,) = kinesis.get_records(ShardIterator=iterator)["Records"]
    data = json.loads(put["Data"])
    assert w3c_of(data["lambda_kit_trace"]).trace_id == incoming.trace_id and data["n"] == 1


def test_a_datadog_context_is_written_as_ddtrace_writes_it_and_ddtrace_reads_it_back(session, unique_name):
    sqs, sns = session.client("sqs"), session.client("sns")
    url, _ = queue_with_arn(sqs, unique_name("dd"))
    envelope_url, envelope_arn = queue_with_arn(sqs, unique_name("dd-envelope"))
    topic = sns.create_topic(Name=unique_name("dd-topic"))["TopicArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=envelope_arn)
    headers, produced = incoming_datadog("dd-write")

    @sqs_handler
    def handler(message, context):
        sqs.send_message(QueueUrl=url, MessageBody="sqs")
        sns.publish(TopicArn=topic, Message="sns")

    handler(record_with({"_datadog": headers}), None)
    (direct,) = receive(sqs, url)
    (notification,) = receive(sqs, envelope_url)
    assert direct["MessageAttributes"]["_datadog"]["DataType"] == "String"
    assert json.loads(notification["Body"])["MessageAttributes"]["_datadog"]["Type"] == "Binary"
    for message in (direct, notification):
        extracted = HTTPPropagator.extract(extract_DD_json(message))  # ddtrace's own reading
        assert extracted.trace_id == produced.trace_id and extracted.span_id == produced.span_id
        assert extracted.sampling_priority == 2 and extracted.dd_origin == "lambda"


def test_eventbridge_and_step_functions_carry_the_context_in_their_json(session, unique_name):
    events, sfn, sqs = session.client("events"), session.client("stepfunctions"), session.client("sqs")
    url, arn = queue_with_arn(sqs, unique_name("eb-target"))
    rule = unique_name("rule")
    events.put_rule(Name=rule, EventPattern=json.dumps({"source": ["tests"]}))
    events.put_targets(Rule=rule, Targets=[{"Id": "q", "Arn": arn}])
    machine = sfn.create_state_machine(
        name=unique_name("machine"),
        roleArn="arn:aws:iam::123456789012:role/sfn",
        definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
    )["stateMachineArn"]
    headers, produced = incoming_datadog("eb")

    @sqs_handler
    def handler(message, context):
        events.put_events(Entries=[{"Source": "tests", "DetailType": "t", "Detail": json.dumps({"n": 1})}])
        return sfn.start_execution(stateMachineArn=machine, input=json.dumps({"n": 2}))["executionArn"]

    handler(record_with({"_datadog": headers}), None)
    (delivered,) = receive(sqs, url)
    detail = json.loads(delivered["Body"])["detail"]
    execution = sfn.list_executions(stateMachineArn=machine)["executions"][0]["executionArn"]
    sfn_input = json.loads(sfn.describe_execution(executionArn=execution)["input"])
    for doc in (detail, sfn_input):
        assert HTTPPropagator.extract(doc["_datadog"]).trace_id == produced.trace_id  # where ddtrace reads
        stamp = doc["lambda_kit_trace"]
        assert w3c_of(stamp).trace_id == produced.trace_id and stamp["_datadog"] == doc["_datadog"]
        assert stamp["trace_id"] == str(produced.trace_id & (2**64 - 1))
    assert detail["n"] == 1 and sfn_input["n"] == 2


def test_lambda_invoke_carries_the_context_in_client_context_and_payload(session):
    lam = session.client("lambda")
    sent = {}

    def capture(request, **_):
        sent["headers"], sent["body"] = dict(request.headers), request.body
        raise RuntimeError("stop before sending: moto runs functions only in Docker")

    lam.meta.events.register("before-send.lambda.Invoke", capture)
    traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    @sqs_handler
    def handler(message, context):
        with pytest.raises(RuntimeError):
            lam.invoke(FunctionName="f", Payload=json.dumps({"n": 1}))

    handler(record_with({"traceparent": traceparent}), None)
    custom = json.loads(base64.b64decode(sent["headers"]["X-Amz-Client-Context"]))["custom"]
    payload = json.loads(sent["body"])
    for carrier in (custom, payload["lambda_kit_trace"]):
        assert w3c_of(carrier).trace_id == w3c_of({"traceparent": traceparent}).trace_id
    assert payload["n"] == 1


def test_a_send_never_fails_for_propagation_a_warning_says_what_was_left_out(session, unique_name, capfd):
    sqs = session.client("sqs")
    url, _ = queue_with_arn(sqs, unique_name("full"))
    nine = {f"a{i}": {"DataType": "String", "StringValue": "x"} for i in range(9)}

    @sqs_handler
    def handler(message, context):
        sqs.send_message(QueueUrl=url, MessageBody="nine", MessageAttributes=dict(nine))

    capfd.readouterr()
    event = record_with({"trace_id": "t-full"})
    handler(event, None)
    (message,) = receive(sqs, url)
    assert set(message["MessageAttributes"]) == {*nine, "trace_id"}  # 10: what fits, in order
    (warning,) = of_level(read_lines(capfd), "WARN")
    assert warning["not_written"] == ["traceparent"] and warning["trace_id"] == "t-full"
    assert warning["record_id"] == event["Records"][0]["messageId"]  # a line of the record's own
    assert "10 message attributes" in warning["message"]


class Recorder(BaseHTTPRequestHandler):
    seen: list[dict[str, str]] = []

    def do_GET(self):  # noqa: N802
        Recorder.seen.append({k.lower(): v for k, v in self.headers.items()})
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def http_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Recorder.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def test_trace_headers_for_requests_urllib3_and_httpx(http_server):
    import httpx
    import requests
    import urllib3

    headers, produced = incoming_datadog("http")
    assert trace_headers() == {}  # outside a record: nothing

    @sqs_handler
    def handler(message, context):
        requests.get(http_server, headers=trace_headers(), timeout=5)
        urllib3.PoolManager().request("GET", http_server, headers=trace_headers())
        httpx.get(http_server, headers=trace_headers())

    handler(record_with({"_datadog": headers}), None)
    assert len(Recorder.seen) == 3
    for received in Recorder.seen:
        assert HTTPPropagator.extract(received).trace_id == produced.trace_id
        assert w3c_of(received).trace_id == produced.trace_id
        assert received["x-trace-id"] == str(produced.trace_id & (2**64 - 1))


# --- under OpenTelemetry: the record's own span, with the incoming vendor's headers ---------------------

OTEL_BATCH = """
import json, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON
trace.set_tracer_provider(TracerProvider(sampler=ALWAYS_ON if sys.argv[1] == "on" else ALWAYS_OFF))
from lambda_kit import log, sqs_handler, trace_headers
from lambda_kit.testing import sqs_record
log.set_sink(lambda line: None)
sent = []
handler = sqs_handler(lambda message, context: sent.append(trace_headers()))
records = [sqs_record({"n": n}) for n in (1, 2)]
for record in records:  # a 64-bit Datadog context, with tags and no sampling priority
    record["messageAttributes"] = {name: {"stringValue": value, "dataType": "String"} for name, value in {
        "x-datadog-trace-id": "5", "x-datadog-parent-id": "7", "x-datadog-tags": "_dd.p.dm=-0"}.items()}
handler({"Records": records}, None)
print(json.dumps(sent))
"""


@pytest.mark.parametrize(("sampler", "priority"), [("on", "1"), ("off", "0")])
def test_a_datadog_context_goes_on_with_the_spans_128_bit_id_and_sampling(sampler, priority):
    # in a batch each record's span starts a trace of its own (linked to the producer's): a 128-bit
    # id, whose high bits Datadog carries in _dd.p.tid, beside the tags that came in
    done = subprocess.run(
        [sys.executable, "-c", OTEL_BATCH, sampler],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert done.returncode == 0, done.stderr
    for headers in json.loads(done.stdout):
        trace_id = int(headers["traceparent"].split("-")[1], 16)
        assert headers["x-datadog-trace-id"] == str(trace_id & (2**64 - 1))
        assert headers["x-datadog-tags"] == f"_dd.p.dm=-0,_dd.p.tid={trace_id >> 64:016x}"
        assert headers["x-datadog-sampling-priority"] == priority


# --- what fits: SQS's ten attributes and 256 KiB, counted as SQS counts them ----------------------------


def sent_attributes(
    session, capfd, attributes: dict, body: str = "b", trace_id: str = "t-1"
) -> tuple[dict, list[dict]]:
    """(the message attributes a send inside the handler put on the wire, the WARNING lines)."""
    sqs = session.client("sqs")
    sent = {}

    def capture(params, **_):
        sent.update(params.get("MessageAttributes") or {})
        raise RuntimeError("stop before sending")

    sqs.meta.events.register("before-parameter-build.sqs.SendMessage", capture)  # after the trace hook

    @sqs_handler
    def handler(message, context):
        with pytest.raises(RuntimeError):
            sqs.send_message(
                QueueUrl="https://sqs.us-east-1.amazonaws.com/1/q",
                MessageBody=body,
                MessageAttributes=dict(attributes),
            )

    capfd.readouterr()
    handler(record_with({"trace_id": trace_id}), None)
    return sent, of_level(read_lines(capfd), "WARN")


def attributes(count: int) -> dict:
    return {f"a{i}": {"DataType": "String", "StringValue": "x"} for i in range(count)}


def test_the_trace_attributes_are_written_when_they_just_fit(session, capfd):
    sent, warnings = sent_attributes(session, capfd, attributes(8))  # 8 + trace_id + traceparent = 10
    assert set(sent) == {*attributes(8), "trace_id", "traceparent"} and warnings == []


def test_a_message_already_over_ten_attributes_gets_none_of_ours(session, capfd):
    sent, [warning] = sent_attributes(session, capfd, attributes(11))  # SQS refuses it: its sender's to mend
    assert set(sent) == set(attributes(11)) and warning["not_written"] == ["trace_id", "traceparent"]


@pytest.mark.parametrize(("room", "written"), [(89, True), (88, False)])
def test_the_size_limit_counts_the_body_and_each_attributes_name_type_and_value(
    session, capfd, room, written
):
    # ours: trace_id (8 + "String" 6 + "t-1" 3) and traceparent (11 + 6 + 55): 89 bytes
    sent, warnings = sent_attributes(session, capfd, {}, body="x" * (256 * 1024 - room))
    assert ("traceparent" in sent) == written
    assert [warning["not_written"] for warning in warnings] == (
        [] if written else [["trace_id", "traceparent"]]
    )


def test_a_client_context_keeps_what_the_caller_put_in_custom(session):
    lam = session.client("lambda")
    sent = {}

    def capture(request, **_):
        sent["headers"] = dict(request.headers)
        raise RuntimeError("stop before sending")

    lam.meta.events.register("before-send.lambda.Invoke", capture)
    mine = base64.b64encode(json.dumps({"custom": {"traceparent": "the caller's", "k": 1}}).encode()).decode()

    @sqs_handler
    def handler(message, context):
        with pytest.raises(RuntimeError):
            lam.invoke(FunctionName="f", Payload=b"{}", ClientContext=mine)

    handler(record_with({"trace_id": "t-2"}), None)
    custom = json.loads(base64.b64decode(sent["headers"]["X-Amz-Client-Context"]))["custom"]
    assert custom == {"traceparent": "the caller's", "k": 1, "trace_id": "t-2"}
