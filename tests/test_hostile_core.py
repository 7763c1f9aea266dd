"""Hostile input at the record path, through every decorator (issue 28): whatever a function
returns or a producer sends, a record fails or succeeds alone, each line is valid, and the one
masking rule holds on every path.

Each case runs through every source's decorator (``lambda_kit.testing.event`` builds one event of
each source around a payload), so what was found through one source cannot come back through
another.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from _hostile import DECORATORS, captured, parse_lines

from lambda_kit import (
    api_handler,
    cloudwatch_logs_handler,
    log,
    sqs_handler,
    stream_handler,
)
from lambda_kit import sources as registry
from lambda_kit.testing import cloudwatch_logs_event, event, kinesis_event, lambda_context, sqs_event

REQUEST_SOURCES = ("api", "authorizer", "websocket")  # one request per invocation, answered, never raised
SOURCES = [
    name for name in registry.NAMES if name not in REQUEST_SOURCES
]  # the batch sources: one record each
ANSWERED = {  # the sources whose response answers each record: what a failed record's answer says
    "firehose": lambda response: [record["result"] for record in response["records"]] == ["ProcessingFailed"],
    "s3_batch": lambda response: (
        [result["resultCode"] for result in response["results"]] == ["PermanentFailure"]
    ),
}
PAYLOADS = {"s3": "n/1.txt"}  # an S3 event's payload names an object; the others carry {"n": 1}


def decorator_of(source: str) -> Any:
    return DECORATORS[registry.get(source).decorator]


def run(
    source: str, fn: Any, payload: Any = None, **options: Any
) -> tuple[Any, list[dict[str, Any]], BaseException | None]:
    """One event of ``source`` through its decorator: (response, lines, what it raised)."""
    handler = decorator_of(source)(**options)(fn) if options else decorator_of(source)(fn)
    raised = response = None
    with captured() as out:
        try:
            response = handler(
                event(
                    source,
                    PAYLOADS.get(source, {"n": 1}) if payload is None else payload,
                    trace_id="t-hostile",
                ),
                lambda_context("hostile-fn"),
            )
        except Exception as exc:
            raised = exc
    return response, parse_lines(out), raised


def failed_alone(source: str, response: Any, raised: BaseException | None) -> bool:
    """Whether the one record failed the way its source retries: reported, or raised."""
    source_class = registry.get(source)
    if source in ANSWERED:
        return raised is None and ANSWERED[source](response)
    if source_class.reports_batch_failures and source != "kafka":
        return raised is None and len(response["batchItemFailures"]) == 1
    return raised is not None


class BrokenMapping(dict):
    """A result whose items cannot be read, and whose text cannot be made either."""

    def items(self):  # noqa: D102
        raise RuntimeError("no items")

    def keys(self):  # noqa: D102
        raise RuntimeError("no keys")

    def __iter__(self):
        raise RuntimeError("no iteration")

    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    __str__ = __repr__


class Opaque:
    def __str__(self) -> str:
        raise RuntimeError("no text")


@pytest.mark.parametrize(
    "result",
    [BrokenMapping(a=1), Opaque(), {Opaque(): Opaque()}, [BrokenMapping()] * 3],
    ids=["broken mapping", "no text", "opaque key", "list of broken"],
)
@pytest.mark.parametrize("source", SOURCES)
def test_a_result_that_cannot_be_read_is_logged_as_text_and_the_record_is_processed(source, result):
    """Issue 28.1: a return value whose ``items()`` raises crashed the whole batch. Where the
    response carries the result (Firehose's data, S3 Batch Operations' result string), a result that
    cannot be written fails its record alone instead."""
    response, lines, raised = run(source, lambda payload, context: result)
    if source in ANSWERED:
        assert failed_alone(source, response, raised)
        [error] = [line for line in lines if line["level"] == "ERROR"]
        assert error["message"] == "record failed" and error["error_type"] in ("TypeError", "RuntimeError")
        return
    assert raised is None
    assert not [line for line in lines if line["level"] == "ERROR"]
    [processed] = [line for line in lines if line["message"] == "record processed"]
    assert "<unprintable" in json.dumps(processed["result"])


def test_an_api_result_that_cannot_be_read_answers_500_and_says_nothing_of_it():
    handler = api_handler(lambda request, context: BrokenMapping(a=1))
    with captured() as out:
        response = handler(event("api", {"n": 1}, trace_id="t-hostile"), lambda_context())
    assert response["statusCode"] == 500 and "no items" not in response["body"]
    [error] = [line for line in parse_lines(out) if line["level"] == "ERROR"]
    assert error["message"] == "request failed"


BATCH_RESPONSE = {"batchItemFailures": [{"itemIdentifier": "whatever"}]}


@pytest.mark.parametrize("source", SOURCES)
def test_a_returned_batch_response_fails_its_record_and_names_the_fix(source):
    """Issue 27.6: a per-record function returning ``{"batchItemFailures": [...]}`` was taken as a
    success and its message deleted."""
    response, lines, raised = run(source, lambda payload, context: BATCH_RESPONSE)
    assert failed_alone(source, response, raised)
    [error] = [line for line in lines if line["level"] == "ERROR"]
    assert error["error_type"] == "BatchResponseReturned"
    assert "raise to fail this record" in error["error"]
    assert not [line for line in lines if line["message"] == "record processed"]


def test_a_returned_batch_response_fails_only_its_own_record():
    def fn(message: Any, context: Any) -> Any:
        return BATCH_RESPONSE if message["n"] == 2 else message["n"]

    batch = sqs_event({"n": 1}, {"n": 2}, {"n": 3})
    with captured():
        response = sqs_handler(fn)(batch, lambda_context())
    assert response == {"batchItemFailures": [{"itemIdentifier": batch["Records"][1]["messageId"]}]}


SECRETS = {
    key: f"hidden-{index}"
    for index, key in enumerate(
        (
            "pwd",
            "passwd",
            "privateKey",
            "private_key",
            "passphrase",
            "client_secret",
            "sessionToken",
            "credentials",
            "X-Api-Key",
            "apiKey",
            "Authorization",
            "refresh_token",
        )
    )
}


def assert_masked(lines: list[dict[str, Any]]) -> None:
    written = json.dumps(lines)
    leaked = [value for value in SECRETS.values() if f'"{value}"' in written or f'\\"{value}\\"' in written]
    assert leaked == [], written[:600]


@pytest.mark.parametrize("source", SOURCES)
def test_the_secret_key_names_are_masked_in_payloads_results_and_extra_fields(source):
    payload = PAYLOADS.get(source, {"n": 1, "nested": [dict(SECRETS)]})
    user = log.get_logger("hostile.secrets")

    def fn(message: Any, context: Any) -> Any:
        user.info("secrets", extra=dict(SECRETS))
        return {"deep": {"list": [dict(SECRETS)]}}

    response, lines, raised = run(source, fn, payload)
    assert raised is None
    assert_masked(lines)
    [line] = [line for line in lines if line["message"] == "secrets"]
    assert all(line[key] == "***" for key in SECRETS)


@pytest.mark.parametrize("leading", ["", " ", "\n\t ", "\ufeff"], ids=["none", "space", "whitespace", "bom"])
@pytest.mark.parametrize("source", ["sqs", "sns", "kinesis", "kafka"])
def test_a_json_false_payload_that_is_json_is_masked_as_the_json_it_holds(source, leading):
    """Issue 28.2: ``json=False`` hands the function the text, and the log masks it as JSON."""
    text = leading + json.dumps({"user": "u", "password": "hunter2", "deep": [{"token": "t0k"}]})
    seen = []
    response, lines, raised = run(source, lambda payload, context: seen.append(payload), text, json=False)
    assert raised is None and len(seen) == 1
    written = json.dumps(lines)
    assert "hunter2" not in written and "t0k" not in written and '\\"user\\": \\"u\\"' not in written
    [received] = [line for line in lines if line["message"] == "record received"]
    logged = received["payload"]["value"] if source == "kafka" else received["payload"]
    assert json.loads(logged) == {"user": "u", "password": "***", "deep": [{"token": "***"}]}


def test_a_cloudwatch_logs_record_is_masked_in_its_message_and_its_json():
    """Issue 28.2: 90 of 90 cases printed the ``message`` raw beside a masked ``json``."""
    message = json.dumps({"level": "INFO", "message": "login", "password": "hunter2", "token": "t0k"})
    with captured() as out:
        cloudwatch_logs_handler(lambda log_event, context: None)(
            cloudwatch_logs_event(message), lambda_context()
        )
    lines = parse_lines(out)
    written = json.dumps(lines)
    assert "hunter2" not in written and "t0k" not in written
    [received] = [line for line in lines if line["message"] == "record received"]
    assert received["payload"]["json"]["password"] == "***"
    assert json.loads(received["payload"]["message"])["password"] == "***"


def test_text_that_only_looks_like_json_is_written_as_it_is():
    for text in ("{not json", "[1, 2", " { ", "\ufeffplain"):
        assert log.clean(text) == text
    assert log.clean('{"a": 1}') == '{"a": 1}'  # nothing to mask: the text as it came


@pytest.mark.parametrize(
    "key", [["a", "list"], {"a": 1}, 7, None, True], ids=["list", "dict", "int", "none", "bool"]
)
def test_a_partition_key_of_any_type_never_costs_the_batch_under_max_concurrency(key):
    """Issue 28.1: non-string Kinesis partition keys raised out of an ``async def``'s batch."""
    batch = kinesis_event({"n": 1}, {"n": 2})
    batch["Records"][0]["kinesis"]["partitionKey"] = key
    seen = []

    async def fn(payload: Any, context: Any) -> None:
        seen.append(payload["n"])

    with captured():
        response = stream_handler(max_concurrency=4)(fn)(batch, lambda_context())
    assert response == {"batchItemFailures": []} and sorted(seen) == [1, 2]


def test_a_deeply_nested_rejected_trace_id_is_described_briefly():
    nested: Any = "x"
    for _ in range(5_000):
        nested = [nested]
    text = log.brief(nested)
    assert len(text) <= 256 and text.startswith("[[[")
    assert log.brief("\n" * 1_000) == ascii("\n" * 1_000)[:256]
