"""OpenTelemetry spans per record, with the SDK's in-memory exporter; and nothing without a provider.

The SDK's tracer provider can be set once per process, so the traced checks run in a fresh
interpreter each (as a function does under the ADOT layer)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SETUP = """
import json, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
from lambda_kit import sqs_handler, trace_headers
from lambda_kit.testing import sqs_record
PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
sent = []

@sqs_handler
def handler(message, context):
    sent.append(trace_headers()["traceparent"])
    if message.get("fail"):
        raise ValueError("boom")

def record(body, traceparent=PARENT):
    found = sqs_record(body)
    found["messageAttributes"]["traceparent"] = {"stringValue": traceparent, "dataType": "String"}
    return found

def spans():
    return [{"name": s.name, "trace": f"{s.context.trace_id:032x}", "span": f"{s.context.span_id:016x}",
             "parent": s.parent and f"{s.parent.span_id:016x}", \
"links": [f"{l.context.trace_id:032x}" for l in s.links],
             "attributes": dict(s.attributes), "status": s.status.status_code.name} \
for s in exporter.get_finished_spans()]
"""


def run(code: str) -> tuple[list[dict], list[dict], list[str]]:
    script = (
        SETUP
        + textwrap.dedent(code)
        + "\nprint('SPANS ' + json.dumps(spans()))\nprint('SENT ' + json.dumps(sent))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    lines, spans, sent = [], [], []
    for text in done.stdout.splitlines():
        if text.startswith("SPANS "):
            spans = json.loads(text[6:])
        elif text.startswith("SENT "):
            sent = json.loads(text[5:])
        else:
            lines.append(json.loads(text))
    return lines, spans, sent


def test_one_record_is_a_child_of_its_producer_and_its_lines_carry_the_span():
    lines, spans, sent = run('handler({"Records": [record({"n": 1})]}, None)')
    (span,) = spans
    assert span["name"] == "sqs process" and span["trace"] == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert span["parent"] == "00f067aa0ba902b7" and span["links"] == []
    assert (
        span["attributes"]["lambda_kit.source"] == "sqs" and span["attributes"]["lambda_kit.outcome"] == "ok"
    )
    for line in lines:
        assert (line["otelTraceID"], line["otelSpanID"]) == (span["trace"], span["span"])
        assert line["dd.span_id"] == str(int(span["span"], 16))
    assert sent == [f"00-{span['trace']}-{span['span']}-01"]  # the next hop's parent is this span


def test_a_batch_links_each_record_to_its_producer_and_a_failure_is_an_error_span():
    other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    _, spans, _ = run(f'handler({{"Records": [record({{"n": 1}}), record({{"fail": 1}}, {other!r})]}}, None)')
    first, second = spans
    assert first["links"] == ["4bf92f3577b34da6a3ce929d0e0e4736"] and first["parent"] is None
    assert second["links"] == ["0af7651916cd43dd8448eb211c80319c"]
    assert second["status"] == "ERROR" and second["attributes"]["lambda_kit.outcome"] == "failed"


def test_without_a_tracer_provider_nothing_of_opentelemetry_is_imported():
    script = (
        "import sys\nfrom lambda_kit import sqs_handler\nfrom lambda_kit.testing import sqs_event\n"
        "sqs_handler(lambda m, c: None)(sqs_event({'n': 1}, trace_id='t'), None)\n"
        "print('LOADED', [m for m in sys.modules if m.startswith('opentelemetry')])"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.splitlines()[-1] == "LOADED []"


def test_concurrent_async_records_each_get_their_own_span_and_lines():
    """An ``async def`` under ``max_concurrency``: every record's span and log lines are its own,
    although the records overlap on one event loop."""
    other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    lines, spans, sent = run(f"""
import asyncio

@sqs_handler(max_concurrency=3)
async def concurrent(message, context):
    await asyncio.sleep(0.01)
    sent.append(trace_headers()["traceparent"])
    if message.get("fail"):
        raise ValueError("boom")

concurrent({{"Records": [record({{"n": 1}}), record({{"fail": 1}}, {other!r}), record({{"n": 3}})]}}, None)
""")
    assert len(spans) == 3 and {s["name"] for s in spans} == {"sqs process"}
    assert sorted(s["links"][0] for s in spans) == sorted(
        ["4bf92f3577b34da6a3ce929d0e0e4736"] * 2 + ["0af7651916cd43dd8448eb211c80319c"]
    )
    assert sorted(s["status"] for s in spans) == ["ERROR", "UNSET", "UNSET"]
    by_span = {s["span"]: s for s in spans}
    for line in lines:  # each line names the span of the record it is about
        if "record_id" in line:
            assert line["otelSpanID"] in by_span
    assert sorted(h.split("-")[2] for h in sent) == sorted(by_span)  # each hop's parent is its record's span


def test_a_requests_span_says_how_it_was_answered():
    """An API request's span carries how it was answered: ``ok``, ``client_error`` (an
    ``HTTPError`` 4xx) or ``server_error`` (an error span)."""
    _, spans, _ = run("""
        from lambda_kit import HTTPError, api_handler
        from lambda_kit.testing import api_event

        @api_handler
        def api(request, context):
            if request.path == "/missing":
                raise HTTPError(404, "no such order")
            if request.path == "/broken":
                raise ValueError("boom")
            return {"ok": True}

        for path in ("/", "/missing", "/broken"):
            api(api_event("GET", path), None)
    """)
    outcomes = [span["attributes"]["lambda_kit.outcome"] for span in spans]
    assert outcomes == ["ok", "client_error", "server_error"]
    assert [span["status"] for span in spans][::2] == ["UNSET", "ERROR"]
