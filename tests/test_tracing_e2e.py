"""End to end on the local stack with the real view-stats service: views that enter with a W3C
``traceparent`` (written by OpenTelemetry's propagator) are found by that trace id on every line
of every hop: API -> SQS -> counter -> DynamoDB stream -> aggregator -> SNS -> milestones, and
clickstream (Kinesis) -> aggregator; ``lambda-kit trace`` finds them by the W3C, X-Ray and
Datadog forms of the id."""

from __future__ import annotations

import json
import random
import urllib.request
from pathlib import Path

from opentelemetry import trace as otel_trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from lambda_kit.cli import main
from lambda_kit.local.stack import LocalStack
from lambda_kit.local.timeline import id_forms
from tests._local_toys import fast_timing

ROOT = Path(__file__).resolve().parent.parent


def traceparent(trace_id: int, rng: random.Random) -> str:
    carrier: dict[str, str] = {}
    context = otel_trace.SpanContext(
        trace_id, rng.getrandbits(64) or 1, is_remote=False, trace_flags=otel_trace.TraceFlags(1)
    )
    TraceContextTextMapPropagator().inject(
        carrier, context=otel_trace.set_span_in_context(otel_trace.NonRecordingSpan(context))
    )
    return carrier["traceparent"]


def test_a_traceparent_trace_is_found_on_every_line_of_every_hop(aws_endpoint, tmp_path, capsys):
    rng = random.Random(11)
    api_trace, kinesis_trace = rng.getrandbits(128), rng.getrandbits(128)
    logs = tmp_path / "logs.jsonl"
    stack = LocalStack(
        ROOT / "serverless.yml",
        stage=f"tr{rng.randrange(10**6)}",
        endpoint_url=aws_endpoint.url,
        log_path=logs,
        timing=fast_timing(sqs_concurrency=2),
    )
    with stack:
        for n in range(10):  # ten views of one article: it crosses its first milestone
            body = json.dumps(
                {"url": "blog.example/traced", "time": f"2024-05-01T10:00:{n:02d}Z", "clientId": f"c{n}"}
            )
            request = urllib.request.Request(
                stack.api_url + "/views",
                data=body.encode(),
                method="POST",
                headers={"Content-Type": "application/json", "traceparent": traceparent(api_trace, rng)},
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                assert response.status == 202
        kinesis = stack.clients("kinesis")
        stream = f"view-stats-{stack.config.stage}-clickstream"
        view = {
            "url": "blog.example/streamed",
            "time": "2024-05-01T11:00:00Z",
            "clientId": "k1",
            "traceparent": traceparent(kinesis_trace, rng),
        }
        kinesis.put_record(StreamName=stream, Data=json.dumps(view).encode(), PartitionKey="k1")
        assert stack.wait_drained(timeout=120)
    lines = [json.loads(text) for text in logs.read_text(encoding="utf-8").splitlines()]

    w3c = f"{api_trace:032x}"
    traced = [line for line in lines if line.get("trace_id") == w3c]
    committed = [line for line in lines if w3c in (line.get("trace_ids") or ())]  # its batches' commits
    invocations = {line.get("request_id") for line in traced + committed}
    untraced = [  # the invocations' lines of no trace: Lambda's START / END / REPORT, the runtime's own
        line
        for line in lines
        if line.get("request_id") in invocations and "trace_id" not in line and not line.get("trace_ids")
    ]
    assert any(str(line.get("type", "")).startswith("platform.") for line in untraced)
    hops = {line["function_name"].rsplit("-", 1)[-1] for line in traced}
    assert hops == {"ingest", "counter", "aggregator", "milestones"}, hops
    # every line of the request's hops: the views' records and their counts carry no other id
    for line in lines:
        if "blog.example/traced" in json.dumps(line):
            assert line["trace_id"] == w3c, line
    streamed = f"{kinesis_trace:032x}"
    assert {
        line["function_name"].rsplit("-", 1)[-1] for line in lines if line.get("trace_id") == streamed
    } == {"clickstream", "aggregator"}

    for form in (
        "otelTraceID",
        "xray_trace_id",
        "dd.trace_id",
    ):  # the CLI finds the lines by any form of the id
        capsys.readouterr()
        assert (
            main(["trace", id_forms(w3c)[form], "--logs", str(logs), "-c", str(ROOT / "serverless.yml")]) == 0
        )
        out = capsys.readouterr().out
        assert f"{len(traced) + len(committed) + len(untraced)} log lines" in out and "milestones" in out
        assert "X-Ray: https://" in out and "Datadog Logs: " in out
