"""Metrics: DogStatsD counters on a real UDP listener on loopback; nothing sent or imported when off."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap

import pytest

from lambda_kit import HTTPError, api_handler, sqs_handler, stream_handler
from lambda_kit.errors import UnsupportedEvent
from lambda_kit.testing import (
    api_event,
    dynamodb_record,
    dynamodb_stream_event,
    kinesis_event,
    lambda_context,
    sqs_event,
    sqs_record,
)


@pytest.fixture
def statsd(monkeypatch):
    """A UDP socket on 127.0.0.1 that DogStatsD sends to; ``read()`` returns the metrics received."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(("127.0.0.1", 0))
    monkeypatch.setenv("DD_AGENT_HOST", "127.0.0.1")
    monkeypatch.setenv("DD_DOGSTATSD_PORT", str(listener.getsockname()[1]))
    monkeypatch.delenv("LAMBDA_KIT_METRICS", raising=False)

    def read(timeout=2.0):
        """{(metric, tags): value} of every datagram, waiting ``timeout`` for the first."""
        metrics = {}
        listener.settimeout(timeout)
        while True:
            try:
                data = listener.recv(65536)
            except TimeoutError:
                return metrics
            listener.settimeout(0.2)
            for line in data.decode().splitlines():
                name_value, kind, *rest = line.split("|")
                name, value = name_value.split(":")
                assert kind == "c"
                tags = next((part[1:] for part in rest if part.startswith("#")), "")
                key = (name, tuple(sorted(tags.split(","))))
                metrics[key] = metrics.get(key, 0) + int(value)

    yield read
    listener.close()


def tags(function, source):
    return tuple(sorted([f"function:{function}", f"source:{source}"]))


def test_sqs_counts_processed_failed_and_retried(statsd):
    @sqs_handler(metrics=True)
    def handler(message, context):
        if message.get("bad"):
            raise ValueError("bad")

    event = {
        "Records": [
            sqs_record({"n": 1}),
            sqs_record({"n": 2}, receive_count=3),
            sqs_record({"n": 3}, receive_count=2),
            sqs_record({"bad": True}),
        ]
    }
    handler(event, lambda_context("count-views"))
    metrics = statsd()
    t = tags("count-views", "sqs")
    assert metrics[("lambda_kit.records.processed", t)] == 3
    assert metrics[("lambda_kit.records.failed", t)] == 1
    assert metrics[("lambda_kit.records.retried", t)] == 2  # one count per retried record


def test_records_refused_at_commit_count_as_failed_the_others_as_processed(statsd):
    handler = sqs_handler(metrics=True, commit=lambda items: [items[1][0]])(lambda message, context: message)
    handler(sqs_event({"n": 1}, {"n": 2}, {"n": 3}), lambda_context("commit-views"))
    metrics = statsd()
    t = tags("commit-views", "sqs")
    assert metrics[("lambda_kit.records.processed", t)] == 2
    assert metrics[("lambda_kit.records.failed", t)] == 1


def test_stream_sources_and_api_are_tagged_by_source(statsd):
    @stream_handler(metrics=True)
    def stream(payload, context):
        pass

    @api_handler(metrics=True)
    def api(request, context):
        if request.path == "/fail":
            raise RuntimeError("x")
        if request.path == "/missing":  # a client's error: the request was answered as it should be
            raise HTTPError(404, "no such thing")

    stream(kinesis_event({"a": 1}, {"b": 2}), lambda_context("archive"))
    stream(dynamodb_stream_event(dynamodb_record("INSERT", new_image={"PK": "a"})), lambda_context("archive"))
    api(api_event(path="/ok"), lambda_context("web"))
    api(api_event(path="/ok"), lambda_context("web"))
    api(api_event(path="/fail"), lambda_context("web-fail"))
    assert api(api_event(path="/missing"), lambda_context("web-missing"))["statusCode"] == 404
    metrics = statsd()
    assert metrics[("lambda_kit.records.processed", tags("archive", "kinesis"))] == 2
    assert metrics[("lambda_kit.records.processed", tags("archive", "dynamodb"))] == 1
    counted = {
        name: (
            metrics[("lambda_kit.records.processed", tags(name, "api"))],
            metrics[("lambda_kit.records.failed", tags(name, "api"))],
        )
        for name in ("web", "web-fail", "web-missing")
    }
    assert counted == {"web": (2, 0), "web-fail": (0, 1), "web-missing": (1, 0)}


def test_environment_turns_metrics_on(statsd, monkeypatch):
    monkeypatch.setenv("LAMBDA_KIT_METRICS", "1")

    @sqs_handler
    def handler(message, context):
        pass

    handler(sqs_event({"a": 1}), lambda_context("env-on"))
    assert statsd()[("lambda_kit.records.processed", tags("env-on", "sqs"))] == 1


def test_metrics_off_sends_nothing(statsd):
    @sqs_handler
    def handler(message, context):
        raise ValueError("failures are not counted either")

    handler(sqs_event({"a": 1}), lambda_context("quiet"))
    assert statsd(timeout=0.3) == {}


def test_an_api_without_metrics_sends_nothing(statsd):
    handler = api_handler(lambda request, context: {"ok": True})
    assert handler(api_event("GET", "/"), lambda_context("quiet-api"))["statusCode"] == 200
    assert handler(api_event("GET", "/", version="v1"), lambda_context("quiet-api"))["statusCode"] == 200
    assert statsd(timeout=0.3) == {}


def test_an_event_an_api_cannot_take_is_counted_as_unsupported_and_raised(statsd):
    """Refused before a request exists: the refusal is what is counted, never a crash of the count."""
    handler = api_handler(lambda request, context: {"ok": True}, metrics=True)
    with pytest.raises(UnsupportedEvent):
        handler(sqs_event({"a": 1}), lambda_context("refusing-api"))
    received = statsd()
    assert received[("lambda_kit.records.failed", tags("refusing-api", "unsupported"))] == 1
    assert received.get(("lambda_kit.records.processed", tags("refusing-api", "unsupported")), 0) == 0


def test_an_api_request_counts_one_and_nothing_retried(statsd):
    handler = api_handler(lambda request, context: {"ok": True}, metrics=True)
    handler(api_event("GET", "/"), lambda_context("counted-api"))
    received = statsd()
    assert received[("lambda_kit.records.processed", tags("counted-api", "api"))] == 1
    assert received.get(("lambda_kit.records.retried", tags("counted-api", "api")), 0) == 0
    assert received.get(("lambda_kit.records.failed", tags("counted-api", "api")), 0) == 0


def test_unreachable_agent_never_fails_the_function(monkeypatch, capfd):
    monkeypatch.setenv("DD_AGENT_HOST", "host.invalid")

    @sqs_handler(metrics=True)
    def handler(message, context):
        pass

    assert handler(sqs_event({"a": 1}), None) == {"batchItemFailures": []}


def test_a_handler_without_metrics_imports_no_heavy_package():
    script = textwrap.dedent(
        """
        import sys
        import lambda_kit
        from lambda_kit import api_handler, get_logger, sns_handler, sqs_handler, stream_handler
        from lambda_kit.testing import (
            api_event, dynamodb_record, dynamodb_stream_event, kinesis_event, sns_event, sqs_event,
        )

        log = get_logger("app")

        @sqs_handler
        def on_sqs(message, context):
            log.info("hello", extra={"m": message})

        @sns_handler
        def on_sns(message, context):
            pass

        @stream_handler
        def on_stream(payload, context):
            pass

        @api_handler
        def on_api(request, context):
            return request.json

        on_sqs(sqs_event({"a": 1}), None)
        on_sns(sns_event({"a": 1}), None)
        on_stream(kinesis_event({"a": 1}), None)
        on_stream(dynamodb_stream_event(dynamodb_record("INSERT", new_image={"PK": "a"})), None)
        on_api(api_event("POST", body={"a": 1}), None)
        heavy = ("datadog", "boto3", "botocore", "aws_lambda_powertools")
        print("LOADED", sorted(m for m in sys.modules if m.split(".")[0] in heavy))
        """
    )
    env = {"PATH": "/usr/bin:/bin", "LAMBDA_KIT_METRICS": ""}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "LOADED []"


def test_without_datadog_the_warning_names_the_extra_and_the_records_are_processed(monkeypatch, capfd):
    """Metrics are best-effort: a missing ``datadog`` package never fails a record, and the one
    WARNING line says which extra installs it."""
    import lambda_kit.metrics.datadog as metrics_datadog

    monkeypatch.setattr(metrics_datadog, "_statsd", None)
    monkeypatch.setitem(sys.modules, "datadog", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "datadog.dogstatsd", None)
    monkeypatch.setitem(sys.modules, "datadog.dogstatsd.base", None)
    handler = sqs_handler(metrics=True)(lambda message, context: None)
    assert handler(sqs_event({"n": 1}), lambda_context()) == {"batchItemFailures": []}
    lines = [line for line in capfd.readouterr().out.splitlines() if "could not send metrics" in line]
    assert len(lines) == 1
    assert "metrics needs datadog: pip install 'lambda-event-kit[datadog]'" in lines[0]
