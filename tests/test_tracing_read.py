"""Reading tracers' context on every source, checked against the vendors' own code.

The producer side of each test is the vendor's library: OpenTelemetry's W3C propagator writes the
``traceparent``, ddtrace's propagator the Datadog headers, the AWS X-Ray SDK the X-Ray header; the
keys lambda_kit logs are compared with what those libraries (and OpenTelemetry's X-Ray
propagator) extract from the same carrier. No expected id is written by hand.
"""

from __future__ import annotations

import json
import os
import random

import pytest

os.environ.setdefault("DD_INSTRUMENTATION_TELEMETRY_ENABLED", "false")
os.environ.setdefault("DD_TRACE_ENABLED", "false")

from aws_xray_sdk.core.models.trace_header import TraceHeader  # noqa: E402
from ddtrace.propagation.http import HTTPPropagator  # noqa: E402
from ddtrace.trace import Context as DatadogContext  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from opentelemetry import trace as otel_trace  # noqa: E402
from opentelemetry.propagators.aws import AwsXRayPropagator  # noqa: E402
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator  # noqa: E402

from lambda_kit import (  # noqa: E402
    api_handler,
    eventbridge_handler,
    get_logger,
    kafka_handler,
    sns_handler,
    sqs_handler,
    stream_handler,
    trace_headers,
)
from lambda_kit.testing import (  # noqa: E402
    api_event,
    dynamodb_record,
    eventbridge_event,
    kafka_event,
    kinesis_record,
    sns_envelope,
    sns_record,
    sqs_record,
)
from lambda_kit.trace.context import parse_traceparent, parse_xray  # noqa: E402
from tests._logs import of_level, read_lines  # noqa: E402

W3C = TraceContextTextMapPropagator()
LOW_64 = 2**64 - 1
VENDOR_KEYS = {"otelTraceID", "otelSpanID", "dd.trace_id", "dd.span_id", "xray_trace_id"}
log = get_logger("tests.tracing")


# --- producers: the vendors write the context ----------------------------------------------------


def otel_carrier(rng: random.Random) -> tuple[dict[str, str], otel_trace.SpanContext]:
    context = otel_trace.SpanContext(
        rng.getrandbits(128) or 1,
        rng.getrandbits(64) or 1,
        is_remote=False,
        trace_flags=otel_trace.TraceFlags(1),
    )
    carrier: dict[str, str] = {}
    W3C.inject(carrier, context=otel_trace.set_span_in_context(otel_trace.NonRecordingSpan(context)))
    return carrier, context


def datadog_headers(rng: random.Random, bits: int = 128) -> tuple[dict[str, str], DatadogContext]:
    context = DatadogContext(
        trace_id=rng.getrandbits(bits) or 1, span_id=rng.getrandbits(64) or 1, sampling_priority=1
    )
    headers: dict[str, str] = {}
    HTTPPropagator.inject(context, headers)
    return {k: v for k, v in headers.items() if k.startswith("x-datadog-")}, context


def xray_header(rng: random.Random) -> str:
    root = f"1-{rng.getrandbits(32):08x}-{rng.getrandbits(96):024x}"
    return TraceHeader(root=root, parent=f"{rng.getrandbits(64) or 1:016x}", sampled=1).to_header_str()


# --- consumers: one event per source with the context where its producers put it ---------------


def sqs_event_with(carrier, xray=None):
    record = sqs_record({"n": 1})
    record["messageAttributes"] = {
        name: {"stringValue": value if isinstance(value, str) else json.dumps(value), "dataType": "String"}
        for name, value in carrier.items()
    }
    if xray is not None:
        record["attributes"]["AWSTraceHeader"] = xray
    return {"Records": [record]}


def sns_in_sqs_event_with(carrier, xray=None):
    envelope = json.loads(sns_envelope({"n": 1}))
    envelope["MessageAttributes"] = {
        name: {"Type": "String", "Value": value if isinstance(value, str) else json.dumps(value)}
        for name, value in carrier.items()
    }
    return {"Records": [sqs_record(json.dumps(envelope))]}


def sns_event_with(carrier, xray=None):
    record = sns_record({"n": 1})
    record["Sns"]["MessageAttributes"] = {
        # _datadog as ddtrace publishes it on SNS: a Binary attribute, base64 in the event
        name: {"Type": "String", "Value": value}
        if isinstance(value, str)
        else {"Type": "Binary", "Value": __import__("base64").b64encode(json.dumps(value).encode()).decode()}
        for name, value in carrier.items()
    }
    return {"Records": [record]}


def kinesis_event_with(carrier, xray=None):
    return {"Records": [kinesis_record({"n": 1, **carrier})]}


def dynamodb_event_with(carrier, xray=None):
    return {"Records": [dynamodb_record("INSERT", new_image={"PK": "a", "SK": "b", **carrier})]}


def kafka_event_with(carrier, xray=None):
    headers = {
        name: value if isinstance(value, str) else json.dumps(value) for name, value in carrier.items()
    }
    return kafka_event({"n": 1}, headers=headers)


def eventbridge_event_with(carrier, xray=None):
    return eventbridge_event({"n": 1, **carrier})


def api_event_with(carrier, xray=None):
    headers = {
        name: value if isinstance(value, str) else json.dumps(value) for name, value in carrier.items()
    }
    if xray is not None:
        headers["X-Amzn-Trace-Id"] = xray
    return api_event("POST", "/x", body={"n": 1}, headers=headers)


def _logged(payload, context):
    log.info("inside the function")


SOURCES = {
    "sqs": (sqs_event_with, sqs_handler(_logged)),
    "sns->sqs": (sns_in_sqs_event_with, sqs_handler(_logged)),
    "sns": (sns_event_with, sns_handler(_logged)),
    "kinesis": (kinesis_event_with, stream_handler(_logged)),
    "dynamodb": (dynamodb_event_with, stream_handler(_logged)),
    "kafka": (kafka_event_with, kafka_handler(_logged)),
    "eventbridge": (eventbridge_event_with, eventbridge_handler(_logged)),
    "api": (api_event_with, api_handler(_logged)),
}
# Where each source's producers put Datadog's context: a _datadog object, or x-datadog-* headers.
DATADOG_AS_HEADERS = {"kafka", "api"}


def run(source, carrier, capfd, xray=None):
    build, handler = SOURCES[source]
    capfd.readouterr()
    handler(build(carrier, xray), None)
    lines = read_lines(capfd)
    assert lines and not of_level(lines, "ERROR"), lines
    assert any(line.get("logger") == "tests.tracing" for line in lines)  # get_logger lines too
    return lines


@pytest.mark.parametrize("source", SOURCES)
def test_w3c_traceparent_written_by_opentelemetry_is_read_on_every_source(source, capfd):
    rng = random.Random(f"w3c-{source}")
    carrier, produced = otel_carrier(rng)
    lines = run(source, carrier, capfd)
    extracted = otel_trace.get_current_span(W3C.extract(carrier)).get_span_context()
    assert extracted.trace_id == produced.trace_id
    for line in lines:
        assert line["trace_id"] == line["otelTraceID"] == otel_trace.format_trace_id(extracted.trace_id)
        assert line["otelSpanID"] == otel_trace.format_span_id(extracted.span_id)
        assert line["dd.trace_id"] == str(extracted.trace_id & LOW_64) and line["dd.span_id"] == str(
            extracted.span_id
        )
        # OpenTelemetry's X-Ray propagator reads the logged X-Ray id as the same trace
        xray = AwsXRayPropagator().extract(
            {"X-Amzn-Trace-Id": f"Root={line['xray_trace_id']};Parent={line['otelSpanID']};Sampled=1"}
        )
        assert otel_trace.get_current_span(xray).get_span_context().trace_id == produced.trace_id


@pytest.mark.parametrize("source", SOURCES)
def test_datadog_context_written_by_ddtrace_is_read_on_every_source(source, capfd):
    rng = random.Random(f"dd-{source}")
    headers, produced = datadog_headers(rng)
    carrier = headers if source in DATADOG_AS_HEADERS else {"_datadog": headers}
    lines = run(source, carrier, capfd)
    extracted = HTTPPropagator.extract(headers)
    assert extracted.trace_id == produced.trace_id  # 128 bits, through _dd.p.tid
    for line in lines:
        assert (
            line["trace_id"] == line["dd.trace_id"] == str(extracted.trace_id & LOW_64)
        )  # as Datadog prints it
        assert line["dd.span_id"] == str(extracted.span_id)
        assert line["otelTraceID"] == f"{extracted.trace_id:032x}"


@pytest.mark.parametrize("source", ["sqs", "api"])
def test_xray_header_written_by_the_xray_sdk_is_read(source, capfd):
    header = xray_header(random.Random(f"xray-{source}"))
    lines = run(source, {}, capfd, xray=header)
    parsed = TraceHeader.from_header_str(header)
    otel = otel_trace.get_current_span(
        AwsXRayPropagator().extract({"X-Amzn-Trace-Id": header})
    ).get_span_context()
    for line in lines:
        assert line["trace_id"] == line["xray_trace_id"] == parsed.root
        assert line["otelTraceID"] == otel_trace.format_trace_id(otel.trace_id)
        assert line["otelSpanID"] == parsed.parent == otel_trace.format_span_id(otel.span_id)


def test_api_reads_the_invocations_xray_id_and_lambda_kits_own_id_wins(capfd, monkeypatch):
    header = xray_header(random.Random("env"))
    monkeypatch.setenv("_X_AMZN_TRACE_ID", header)
    _, handler = SOURCES["api"]
    capfd.readouterr()
    handler(api_event("GET", "/x", headers={"X-Trace-Id": "mine-1"}), None)
    for line in read_lines(capfd):
        assert line["trace_id"] == "mine-1"  # lambda_kit's id wins; the tracer's keys come along
        assert line["xray_trace_id"] == TraceHeader.from_header_str(header).root


def test_the_order_is_traceparent_then_datadog_then_xray(capfd):
    rng = random.Random("order")
    w3c, otel = otel_carrier(rng)
    dd, _ = datadog_headers(rng)
    xray = xray_header(rng)
    (line, *_) = run("sqs", {**w3c, "_datadog": dd}, capfd, xray=xray)
    assert line["otelTraceID"] == otel_trace.format_trace_id(otel.trace_id)
    (line, *_) = run("sqs", {"_datadog": dd}, capfd, xray=xray)
    assert line["dd.trace_id"] == dd["x-datadog-trace-id"]
    warning, line, *_ = run("sqs", {"trace_id": "own-7", "traceparent": "garbage"}, capfd, xray=xray)
    assert warning["level"] == "WARN" and warning["rejected_trace_context"] == "'garbage'"
    assert line["trace_id"] == "own-7" and line["xray_trace_id"] == TraceHeader.from_header_str(xray).root


@pytest.mark.parametrize("source", SOURCES)
def test_malformed_context_is_never_used_and_gets_a_warning_line(source, capfd):
    bad = {"traceparent": "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01\u2028"}
    bad |= (
        {"x-datadog-trace-id": "0"}
        if source in DATADOG_AS_HEADERS
        else {"_datadog": {"x-datadog-trace-id": "-5"}}
    )
    lines = run(source, bad, capfd)
    warnings = of_level(lines, "WARN")
    assert len(warnings) == 2, warnings
    assert "\\u2028" in warnings[0]["rejected_trace_context"]  # the value, escaped
    assert all(VENDOR_KEYS.isdisjoint(line) for line in lines)
    assert len({line["trace_id"] for line in lines}) == 1  # the source's fallback, on every line


@pytest.mark.parametrize("source", SOURCES)
def test_without_a_tracers_context_lines_carry_no_vendor_keys(source, capfd):
    lines = run(source, {"trace_id": "plain-1"} if source != "api" else {"X-Trace-Id": "plain-1"}, capfd)
    for line in lines:
        assert line["trace_id"] == "plain-1" and VENDOR_KEYS.isdisjoint(line)


# --- parsing, compared with the vendors' parsers --------------------------------------------------

TRACEPARENTS = [
    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00",
    " \t00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 ",
    "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01",
    "00-00000000000000000000000000000000-b7ad6b7169203331-01",
    "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
    "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
    "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
    "cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-09",
    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333-01",
    "0-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    "00_0af7651916cd43dd8448eb211c80319c_b7ad6b7169203331_01",
    "",
]


def otel_extracts(value):
    context = otel_trace.get_current_span(W3C.extract({"traceparent": value})).get_span_context()
    return (context.trace_id, context.span_id, context.trace_flags.sampled) if context.is_valid else None


def ours(value):
    context = parse_traceparent(value)
    return None if context is None else (context.trace_id, context.span_id, context.sampled)


@pytest.mark.parametrize("value", TRACEPARENTS)
def test_traceparent_parsing_agrees_with_opentelemetry(value):
    assert ours(value) == otel_extracts(value)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(TRACEPARENTS[:3]), st.integers(0, 60), st.sampled_from("0af-Z 9\t\nx"))
def test_traceparent_parsing_agrees_with_opentelemetry_on_mutations(value, index, char):
    mutated = value[:index] + char + value[index + 1 :]
    assert ours(mutated) == otel_extracts(mutated)


XRAY_HEADERS = [
    "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
    "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0;Lineage=a87bd80c:1",
    "Parent=53995c3f42cd8ad8;Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1",
    "Self=1-67891234-12456789abcdef012345678;Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
]


@pytest.mark.parametrize("header", XRAY_HEADERS)
def test_xray_parsing_agrees_with_the_xray_sdk_and_opentelemetry(header):
    context = parse_xray(header)
    sdk = TraceHeader.from_header_str(header)
    otel = otel_trace.get_current_span(
        AwsXRayPropagator().extract({"X-Amzn-Trace-Id": header})
    ).get_span_context()
    assert context is not None and context.xray_trace_id == sdk.root
    assert f"{context.span_id:016x}" == sdk.parent and int(context.sampled) == sdk.sampled
    assert (context.trace_id, context.span_id) == (otel.trace_id, otel.span_id)


@pytest.mark.parametrize(
    "header",
    [
        "Root=1-5759e988-bd862e3fe1be46a99427279;Parent=53995c3f42cd8ad8",  # 23 hex digits
        "Root=1-5e66d96f-7491f09xmpl79d18acf3d050",  # AWS's documentation samples: not hex
        "Root=2-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8",
        "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad",
        "Parent=53995c3f42cd8ad8;Sampled=1",
    ],
)
def test_malformed_xray_headers_are_refused_as_opentelemetry_refuses_them(header):
    otel = otel_trace.get_current_span(
        AwsXRayPropagator().extract({"X-Amzn-Trace-Id": header})
    ).get_span_context()
    assert parse_xray(header) is None and not otel.is_valid


# --- the bounds of each format, read and passed on ----------------------------------------------------
# What a record with these message attributes is traced by, and what goes on its next hop
# (trace_headers()): the limits ddtrace and W3C set, on both sides of each.


def traced_by(carrier: dict[str, str], capfd) -> tuple[dict, dict[str, str], list[dict]]:
    """(the function's log line, its outgoing trace headers, the WARNING lines), for an SQS message
    with ``carrier``."""
    sent = []

    @sqs_handler
    def handler(payload, context):
        log.info("inside the function")
        sent.append(trace_headers())

    capfd.readouterr()
    handler(sqs_event_with(carrier), None)
    lines = read_lines(capfd)
    [line] = [line for line in lines if line["message"] == "inside the function"]
    return line, sent[0], of_level(lines, "WARN")


@pytest.mark.parametrize(
    ("carrier", "trace_id"),
    [
        ({"x-datadog-trace-id": str(2**64 - 1), "x-datadog-parent-id": "1"}, str(2**64 - 1)),  # the largest
        ({"x-datadog-trace-id": "5"}, "5"),  # no parent id: none, and the context is still read
        ({"x-datadog-trace-id": "5", "x-datadog-parent-id": "7", "x-datadog-sampling-priority": "-1"}, "5"),
    ],
)
def test_datadog_headers_at_their_bounds_are_read(carrier, trace_id, capfd):
    line, sent, warnings = traced_by(carrier, capfd)
    assert line["trace_id"] == line["dd.trace_id"] == trace_id and warnings == []
    assert ("dd.span_id" in line) == ("x-datadog-parent-id" in carrier)
    assert sent["x-datadog-trace-id"] == trace_id
    if "x-datadog-sampling-priority" in carrier:  # passed on as it came, and "not sampled" in W3C's flags
        assert sent["x-datadog-sampling-priority"] == "-1" and sent["traceparent"].endswith("-00")


@pytest.mark.parametrize(
    "carrier",
    [
        {"x-datadog-trace-id": str(2**64)},  # beyond 64 bits
        {"x-datadog-trace-id": "0"},
        {"x-datadog-trace-id": "5", "x-datadog-parent-id": ""},  # present and empty: not "no parent"
        {"x-datadog-trace-id": "5", "x-datadog-sampling-priority": "1.5"},
        {"x-datadog-trace-id": "5", "x-datadog-tags": "_dd.p.tid=0000000000000000"},
        {"x-datadog-trace-id": "5", "x-datadog-tags": "_dd.p.tid=ABC"},
    ],
)
def test_datadog_headers_past_their_bounds_are_refused_with_a_warning(carrier, capfd):
    line, _, [warning] = traced_by(carrier, capfd)
    assert warning["message"] == "ignored an invalid x-datadog-* headers; reading the next place"
    assert "dd.trace_id" not in line


def test_a_128_bit_datadog_trace_id_goes_on_with_its_tags_once(capfd):
    tags = "_dd.p.dm=-0,_dd.p.tid=00000000000000ab"
    line, sent, _ = traced_by(
        {"x-datadog-trace-id": "5", "x-datadog-parent-id": "7", "x-datadog-tags": tags}, capfd
    )
    assert line["otelTraceID"] == f"{0xAB:016x}{5:016x}"
    assert sent["x-datadog-tags"] == tags


@pytest.mark.parametrize(
    ("tracestate", "passed_on"),
    [
        ("dd=s:1,vendor=x", True),
        ("v" * 512, True),
        ("v" * 513, False),  # longer than W3C allows
        ("a=b\x01", False),  # a control character
    ],
)
def test_a_tracestate_goes_on_only_when_it_is_valid(tracestate, passed_on, capfd):
    carrier = {
        "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "tracestate": tracestate,
    }
    _, sent, _ = traced_by(carrier, capfd)
    assert sent.get("tracestate") == (tracestate if passed_on else None)


@pytest.mark.parametrize(("priority", "flags"), [("-1", "00"), ("0", "00"), ("1", "01"), ("2", "01")])
def test_a_datadog_sampling_priority_above_0_is_sampled(priority, flags, capfd):
    carrier = {"x-datadog-trace-id": "5", "x-datadog-parent-id": "7", "x-datadog-sampling-priority": priority}
    _, sent, _ = traced_by(carrier, capfd)
    assert sent["traceparent"].endswith(f"-{flags}") and sent["x-datadog-sampling-priority"] == priority
