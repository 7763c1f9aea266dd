"""CloudWatch EMF metrics: the decorators' counts (``metrics="emf"``) and the user's own (``metrics.add``),
each line checked against the EMF specification's JSON schema (tests/emf/schema.json, AWS's) and
against what AWS's own ``aws-embedded-metrics`` library writes for the same metrics."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest
from aws_embedded_metrics.logger.metrics_context import MetricsContext
from aws_embedded_metrics.serializers.log_serializer import LogSerializer
from aws_embedded_metrics.storage_resolution import StorageResolution
from test_metrics import statsd, tags  # noqa: F401  (statsd: the DogStatsD listener fixture)

from lambda_kit import HTTPError, api_handler, log, metrics, sqs_handler
from lambda_kit.metrics import emf
from lambda_kit.testing import api_event, lambda_context, sqs_event, sqs_record

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((Path(__file__).with_name("emf") / "schema.json").read_text())
# The specification's later limit of 30 dimensions (tests/emf/README.md): the schema otherwise as AWS wrote it
SCHEMA_30 = copy.deepcopy(SCHEMA)
_directive = SCHEMA_30["properties"]["_aws"]["properties"]["CloudWatchMetrics"]["items"]
_directive["properties"]["Dimensions"]["items"]["maxItems"] = 30
# Its "$id"s are draft-07's (fragments): the schema is read as draft 7, the draft of its time
AS_COPIED, CURRENT = jsonschema.Draft7Validator(SCHEMA), jsonschema.Draft7Validator(SCHEMA_30)
jsonschema.Draft7Validator.check_schema(SCHEMA)


def valid(document: dict) -> dict:
    """``document`` if it is an EMF document: the schema, and what the schema cannot say (every
    reference a member of the root, metric targets numbers or arrays of at most 100, dimension
    targets text, at most 100 metrics)."""
    CURRENT.validate(document)
    if (
        max(len(dimensions) for d in document["_aws"]["CloudWatchMetrics"] for dimensions in d["Dimensions"])
        <= 9
    ):
        AS_COPIED.validate(document)
    for directive in document["_aws"]["CloudWatchMetrics"]:
        assert len(directive["Metrics"]) <= 100
        for dimension in (name for dimensions in directive["Dimensions"] for name in dimensions):
            assert isinstance(document[dimension], str)
        for metric in directive["Metrics"]:
            value = document[metric["Name"]]
            assert isinstance(value, int | float) or (
                isinstance(value, list)
                and 1 <= len(value) <= 100
                and all(isinstance(v, int | float) for v in value)
            )
    return document


def emf_lines(capfd) -> list[dict]:
    """The EMF documents written to standard output since the last read (each a whole line)."""
    return [
        valid(json.loads(text)) for text in capfd.readouterr().out.splitlines() if text.startswith('{"_aws"')
    ]


def fresh_process(script: str) -> subprocess.CompletedProcess:
    """``script`` run by a fresh interpreter (only ERROR lines besides EMF's)."""
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "LAMBDA_KIT_LOG_LEVEL": "ERROR"},
    )


def without_timestamp(document: dict) -> dict:
    document = copy.deepcopy(document)
    del document["_aws"]["Timestamp"]
    for directive in document["_aws"]["CloudWatchMetrics"]:
        directive["Metrics"].sort(key=lambda metric: metric["Name"])
    return document


def by_aws_library(namespace: str, dimensions: dict, values: list[tuple]) -> list[dict]:
    """What ``aws-embedded-metrics`` writes for the same metrics (``(name, value, unit, high)``)."""
    context = MetricsContext(namespace, {}, [], {})
    if dimensions:
        context.put_dimensions(dimensions)
    for name, value, unit, high in values:
        context.put_metric(name, value, unit, StorageResolution.HIGH if high else StorageResolution.STANDARD)
    return [json.loads(text) for text in LogSerializer.serialize(context)]


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.delenv("LAMBDA_KIT_METRICS", raising=False)
    monkeypatch.delenv("LAMBDA_KIT_METRICS_NAMESPACE", raising=False)
    metrics.flush()


# -- the decorators' counts --------------------------------------------------------------------------


def test_a_batch_writes_one_document_of_its_counts(capfd):
    @sqs_handler(metrics="emf", json=True)
    def handler(message, context):
        if message.get("bad"):
            raise ValueError("bad")

    event = {
        "Records": [sqs_record({"n": 1}), sqs_record({"n": 2}, receive_count=3), sqs_record({"bad": True})]
    }
    handler(event, lambda_context("count-views"))
    [document] = emf_lines(capfd)
    directive = document["_aws"]["CloudWatchMetrics"]
    assert directive[0]["Namespace"] == "lambda_kit" and directive[0]["Dimensions"] == [
        ["function_name", "source"]
    ]
    assert {m["Name"]: m["Unit"] for m in directive[0]["Metrics"]}.items() >= dict.fromkeys(
        ["RecordsProcessed", "RecordsFailed", "RecordsRetried", "RecordsHeldBack"], "Count"
    ).items()
    assert (document["function_name"], document["source"]) == ("count-views", "sqs")
    counts = {name: document[name] for name in ("RecordsProcessed", "RecordsFailed", "RecordsRetried")}
    assert counts == {"RecordsProcessed": 2, "RecordsFailed": 1, "RecordsRetried": 1}
    assert document["RecordsHeldBack"] == 0


def test_held_back_records_are_counted_among_the_failed(capfd):
    @sqs_handler(metrics="emf")
    def handler(message, context):
        if message["fail"]:
            raise ValueError("fails its group")

    fifo = [sqs_record({"fail": fail}) for fail in (False, True, False, False)]
    for record in fifo:
        record["attributes"]["MessageGroupId"] = "g"
    handler({"Records": fifo}, lambda_context("fifo"))
    [document] = emf_lines(capfd)
    assert (document["RecordsProcessed"], document["RecordsFailed"], document["RecordsHeldBack"]) == (1, 3, 2)


def test_requests_are_counted_by_status_class(capfd):
    @api_handler(metrics="emf")
    def api(request, context):
        if request.path == "/fail":
            raise RuntimeError("x")
        if request.path == "/missing":
            raise HTTPError(404, "no such thing")
        return {"ok": True}

    for path in ("/ok", "/missing", "/fail"):
        api(api_event(path=path), lambda_context("web"))
    documents = emf_lines(capfd)
    assert [(d["Requests2xx"], d["Requests4xx"], d["Requests5xx"]) for d in documents] == [
        (1, 0, 0),
        (0, 1, 0),
        (0, 0, 1),
    ]
    assert {(d["function_name"], d["source"]) for d in documents} == {("web", "api")}


def test_a_refused_event_is_counted(capfd):
    handler = sqs_handler(metrics="emf")(lambda message, context: None)
    with pytest.raises(ValueError):
        handler({"detail-type": "x"}, lambda_context("refusing"))
    [document] = emf_lines(capfd)
    assert (document["source"], document["EventsRefused"]) == ("unsupported", 1)


def test_the_first_invocation_of_a_process_counts_its_cold_start():
    script = textwrap.dedent(
        """
        from lambda_kit import sqs_handler
        from lambda_kit.testing import lambda_context, sqs_event
        handler = sqs_handler(metrics="emf")(lambda message, context: None)
        handler(sqs_event({"n": 1}), lambda_context("cold"))
        handler(sqs_event({"n": 2}), lambda_context("cold"))
        """
    )
    run = fresh_process(script)
    first, second = (valid(json.loads(text)) for text in run.stdout.splitlines())
    assert first["ColdStart"] == 1 and "ColdStart" not in second
    assert "ColdStart" in {m["Name"] for m in first["_aws"]["CloudWatchMetrics"][0]["Metrics"]}


def test_the_environment_turns_emf_on_and_datadog_and_emf_can_both_be_on(capfd, monkeypatch, statsd):  # noqa: F811
    handler = sqs_handler(lambda message, context: None)
    monkeypatch.setenv("LAMBDA_KIT_METRICS", "emf")
    handler(sqs_event({"n": 1}), lambda_context("env-emf"))
    assert [d["RecordsProcessed"] for d in emf_lines(capfd)] == [1]
    assert statsd(timeout=0.3) == {}
    monkeypatch.setenv("LAMBDA_KIT_METRICS", "datadog,emf")
    handler(sqs_event({"n": 1}, {"n": 2}), lambda_context("both"))
    assert [d["RecordsProcessed"] for d in emf_lines(capfd)] == [2]
    assert statsd()[("lambda_kit.records.processed", tags("both", "sqs"))] == 2
    both = sqs_handler(metrics=["datadog", "emf"])(lambda message, context: None)
    monkeypatch.delenv("LAMBDA_KIT_METRICS")
    both(sqs_event({"n": 1}), lambda_context("option"))
    assert [d["RecordsProcessed"] for d in emf_lines(capfd)] == [1]
    assert statsd()[("lambda_kit.records.processed", tags("option", "sqs"))] == 1


def test_the_namespace_comes_from_the_environment(capfd, monkeypatch):
    monkeypatch.setenv("LAMBDA_KIT_METRICS_NAMESPACE", "Shop/Orders")
    sqs_handler(metrics="emf")(lambda message, context: None)(sqs_event({"n": 1}), lambda_context())
    [document] = emf_lines(capfd)
    assert document["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "Shop/Orders"


def test_a_metrics_failure_never_fails_the_function(capfd, monkeypatch):
    monkeypatch.setenv("LAMBDA_KIT_METRICS_NAMESPACE", "no spaces allowed")
    handler = sqs_handler(metrics="emf")(lambda message, context: None)
    assert handler(sqs_event({"n": 1}), lambda_context()) == {"batchItemFailures": []}
    [warning] = [json.loads(t) for t in capfd.readouterr().out.splitlines() if "could not send metrics" in t]
    assert "metrics namespace 'no spaces allowed' must be" in warning["error"]


def test_a_metrics_option_that_names_no_backend_is_refused_when_decorating():
    with pytest.raises(ValueError, match="sqs_handler: metrics must be True, False, None, 'datadog', 'emf'"):
        sqs_handler(metrics="cloudwatch")(lambda message, context: None)


# -- the user's metrics -----------------------------------------------------------------------------


def test_user_metrics_of_an_invocation_go_in_one_document_per_dimension_set(capfd):
    @sqs_handler
    def handler(order, context):
        metrics.add("OrdersPlaced", 1, unit="Count", dimensions={"Country": order["country"]})
        metrics.add("OrderTotal", order["total"], unit="None", dimensions={"Country": order["country"]})
        metrics.add("Latency", 1.5, unit="Milliseconds", resolution="high", namespace="Shop")

    handler(sqs_event(*({"country": c, "total": t} for c, t in (("FR", 3), ("FR", 4), ("DE", 5)))), None)
    documents = emf_lines(capfd)
    assert len(documents) == 3  # FR, DE, and Shop's Latency: one document each, written at the end
    fr, shop, de = documents  # in the order each was first added to
    assert (fr["Country"], fr["OrdersPlaced"], fr["OrderTotal"]) == ("FR", [1, 1], [3, 4])
    assert (de["Country"], de["OrdersPlaced"], de["OrderTotal"]) == ("DE", 1, 5)
    assert shop["_aws"]["CloudWatchMetrics"][0] == {
        "Namespace": "Shop",
        "Dimensions": [[]],
        "Metrics": [{"Name": "Latency", "Unit": "Milliseconds", "StorageResolution": 1}],
    }
    assert shop["Latency"] == [1.5, 1.5, 1.5]


def test_flush_writes_the_metrics_added_outside_a_decorator(capfd):
    metrics.add("Jobs", 2, unit="Count", dimensions={"queue": "q"})
    assert emf_lines(capfd) == []
    metrics.flush()
    [document] = emf_lines(capfd)
    assert document["Jobs"] == 2
    metrics.flush()
    assert emf_lines(capfd) == []  # written once


def test_the_line_goes_through_lambda_kits_writer_to_its_sink():
    written: list[str] = []
    previous = log.set_sink(written.append)
    try:
        metrics.add("Jobs", 1, unit="Count")
        metrics.flush()
    finally:
        log.set_sink(previous)
    [text] = written
    assert text.endswith("\n") and json.loads(text)["Jobs"] == 1


def test_beyond_100_metrics_or_100_values_the_documents_are_split(capfd):
    for index in range(250):
        metrics.add(f"M{index}", index, unit="Count", dimensions={"d": "x"})
    for value in range(250):
        metrics.add("Many", value, unit="Count", dimensions={"d": "y"})
    metrics.flush()
    documents = emf_lines(capfd)
    sizes = [len(d["_aws"]["CloudWatchMetrics"][0]["Metrics"]) for d in documents]
    assert sizes == [100, 100, 50, 1, 1, 1]
    assert sorted(name for d in documents[:3] for name in d if name.startswith("M")) == sorted(
        f"M{i}" for i in range(250)
    )
    assert [d["Many"] for d in documents[3:]] == [
        list(range(100)),
        list(range(100, 200)),
        list(range(200, 250)),
    ]


def test_every_document_stays_within_the_line_bound(capfd):
    for index in range(100):
        for value in range(100):
            metrics.add(
                f"Metric{index:03d}", 1234567.891 + value / 7, unit="Milliseconds", dimensions={"d": "z"}
            )
    metrics.flush()
    out = capfd.readouterr().out.splitlines()
    documents = [valid(json.loads(text)) for text in out]
    assert all(len(text.encode()) <= log.MAX_LINE_CHARS for text in out)
    assert len(documents) > 1 and "fields_dropped" not in out[0]
    values = {name: [] for name in (f"Metric{index:03d}" for index in range(100))}
    for document in documents:
        for metric in document["_aws"]["CloudWatchMetrics"][0]["Metrics"]:
            values[metric["Name"]] += (
                document[metric["Name"]]
                if isinstance(document[metric["Name"]], list)
                else [document[metric["Name"]]]
            )
    assert all(len(found) == 100 for found in values.values())  # nothing lost in the split


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: metrics.add("x", 1, unit="Counts"), "unit 'Counts' is not a CloudWatch unit"),
        (lambda: metrics.add("x", float("nan")), "must be a finite int or float"),
        (lambda: metrics.add("x", True), "must be a finite int or float"),
        (lambda: metrics.add("", 1), "metric name '' must be a str"),
        (
            lambda: metrics.add("x", 1, resolution=5),
            "resolution 5 must be 'standard' \\(60\\) or 'high' \\(1\\)",
        ),
        (lambda: metrics.add("x", 1, dimensions={f"d{i}": "v" for i in range(31)}), "at most 30 dimensions"),
        (lambda: metrics.add("x", 1, dimensions={"d": 3}), "dimension 'd': value 3 must be a str"),
        (lambda: metrics.add("x", 1, dimensions={"x": "v"}), "cannot also be one of its dimensions"),
        (lambda: metrics.add("x", 1, namespace="has space"), "metrics namespace 'has space' must be"),
    ],
    ids=["unit", "nan", "bool", "name", "resolution", "dimensions", "dimension_value", "clash", "namespace"],
)
def test_a_mistake_in_a_metric_is_one_clear_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_one_metric_keeps_one_unit_in_an_invocation():
    metrics.add("x", 1, unit="Count")
    with pytest.raises(ValueError, match="was added with unit Count and resolution 60 s in this invocation"):
        metrics.add("x", 1, unit="Seconds")


def test_thirty_dimensions_are_one_document_valid_under_the_current_limit(capfd):
    metrics.add("Wide", 1, unit="Count", dimensions={f"d{i:02d}": "v" for i in range(30)})
    metrics.flush()
    [document] = emf_lines(capfd)
    assert len(document["_aws"]["CloudWatchMetrics"][0]["Dimensions"][0]) == 30
    with pytest.raises(
        jsonschema.ValidationError
    ):  # the copied schema's older limit of 9 (tests/emf/README.md)
        AS_COPIED.validate(document)


# -- beside AWS's own library ------------------------------------------------------------------------

CASES = {
    "counts": (
        "lambda_kit",
        {"function_name": "f", "source": "sqs"},
        [("RecordsProcessed", 3, "Count", False)],
    ),
    "values": (
        "Shop",
        {"Country": "FR"},
        [("A", 1, "Count", False), ("A", 2, "Count", False), ("B", 3.5, "Milliseconds", True)],
    ),
    "many_metrics": ("Shop", {"d": "x"}, [(f"M{i}", i, "Count", False) for i in range(250)]),
    "many_values": ("Shop", {"d": "y"}, [("V", i, "Bytes", False) for i in range(250)]),
    "mixed": (
        "Shop",
        {"d": "z"},
        [("A", i, "Count", False) for i in range(150)] + [("B", 9, "Percent", False)],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_documents_are_those_aws_embedded_metrics_writes(case, capfd):
    space, dimensions, values = CASES[case]
    for name, value, unit, high in values:
        metrics.add(
            name, value, unit=unit, dimensions=dimensions, namespace=space, resolution="high" if high else 60
        )
    metrics.flush()
    ours = [without_timestamp(d) for d in emf_lines(capfd)]
    theirs = [without_timestamp(valid(d)) for d in by_aws_library(space, dimensions, values)]
    assert ours == theirs


def test_without_dimensions_ours_is_the_specifications_empty_set_and_the_librarys_fails_the_schema(capfd):
    metrics.add("Plain", 1, unit="Count", namespace="Shop")
    metrics.flush()
    [ours] = emf_lines(capfd)
    assert ours["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [[]]
    [theirs] = by_aws_library("Shop", {}, [("Plain", 1, "Count", False)])
    assert theirs["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == []
    with pytest.raises(jsonschema.ValidationError, match="should be non-empty"):
        AS_COPIED.validate(theirs)


# -- cold start ----------------------------------------------------------------------------------------


def test_the_decorators_import_no_metrics_backend_until_a_metric_is_written():
    script = textwrap.dedent(
        """
        import json, sys
        from lambda_kit import api_handler, metrics, sqs_handler
        from lambda_kit.testing import sqs_event
        handler = sqs_handler(metrics="emf")(lambda m, c: None)
        api = api_handler(metrics=["datadog", "emf"])(lambda r, c: None)
        backends = ("lambda_kit.metrics.emf", "lambda_kit.metrics.datadog", "datadog")
        loaded = lambda: sorted(m for m in backends if m in sys.modules)
        print(json.dumps(loaded()))
        metrics.add("x", 1)
        print(json.dumps(loaded()))
        handler(sqs_event({"n": 1}), None)
        print(json.dumps(loaded()))
        """
    )
    run = fresh_process(script)
    lines = [json.loads(text) for text in run.stdout.splitlines() if text.startswith("[")]
    assert lines == [[], ["lambda_kit.metrics.emf"], ["lambda_kit.metrics.emf"]]


def test_the_counts_document_is_the_emf_module_s(capfd):
    document = emf.counts_document("f", "sqs", metrics.Counts(processed=1), cold=False)
    assert valid(document)["RecordsProcessed"] == 1 and "ColdStart" not in document
