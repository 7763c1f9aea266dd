"""The decorators' common contract: bare and with options, wraps, any context, the trace scope."""

from __future__ import annotations

import dataclasses
import inspect
from types import SimpleNamespace

import pytest
from _logs import read_lines

import lambda_kit
from lambda_kit import (
    HTTPError,
    UnsupportedEvent,
    api_handler,
    current_record,
    current_trace_id,
    get_logger,
    sns_handler,
    sqs_handler,
    stream_handler,
)
from lambda_kit.testing import (
    api_event,
    dynamodb_record,
    dynamodb_stream_event,
    kinesis_event,
    sns_event,
    sqs_event,
)

EVENTS = {
    sqs_handler: lambda: sqs_event({"a": 1}, trace_id="t-dec"),
    sns_handler: lambda: sns_event({"a": 1}, trace_id="t-dec"),
    stream_handler: lambda: kinesis_event({"a": 1, "trace_id": "t-dec"}),
    api_handler: lambda: api_event("POST", body={"a": 1}, headers={"X-Trace-Id": "t-dec"}),
}
DECORATORS = list(EVENTS)
IDS = [d.__name__ for d in DECORATORS]


def test_public_names():
    expected = {
        "sqs_handler",
        "sns_handler",
        "stream_handler",
        "api_handler",
        "get_logger",
        "current_trace_id",
        "current_record",
        "HTTPError",
        "propagate",
        "UnsupportedEvent",
    }
    assert expected <= set(lambda_kit.__all__)
    assert issubclass(HTTPError, Exception)
    with pytest.raises(AttributeError):
        lambda_kit.no_such_name  # noqa: B018


@pytest.mark.parametrize("decorator", DECORATORS, ids=IDS)
@pytest.mark.parametrize("form", ["bare", "called", "options"])
def test_bare_and_with_options_keep_metadata_and_run(decorator, form):
    seen = []

    def count_views(payload, context):
        """Count one view."""
        seen.append((current_trace_id(), context))
        return {"ok": True}

    if form == "bare":
        handler = decorator(count_views)
    elif form == "called":
        handler = decorator()(count_views)
    else:
        handler = decorator(log_event=False, log_result=False, metrics=False)(count_views)

    assert handler.__name__ == "count_views"
    assert handler.__doc__ == "Count one view."
    assert handler.__module__ == __name__
    assert handler.__wrapped__ is count_views
    assert list(inspect.signature(handler).parameters) == ["payload", "context"]  # follows __wrapped__
    handler(EVENTS[decorator](), None)
    assert seen == [("t-dec", None)]


@pytest.mark.parametrize("decorator", DECORATORS, ids=IDS)
def test_context_may_be_none_missing_or_any_object(decorator, capfd, monkeypatch):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "from-env")

    @decorator
    def handler(payload, context):
        return None

    handler(EVENTS[decorator]())  # context left out
    handler(EVENTS[decorator](), None)
    handler(EVENTS[decorator](), object())
    handler(EVENTS[decorator](), SimpleNamespace(function_name="partial"))
    lines = read_lines(capfd)
    assert {line["function_name"] for line in lines} == {"from-env", "partial"}
    assert {line["request_id"] for line in lines} == {None}
    assert {line["trace_id"] for line in lines} == {"t-dec"}


@pytest.mark.parametrize("decorator", DECORATORS, ids=IDS)
def test_current_record_is_none_outside_and_after_a_handler_even_when_it_raises(decorator):
    assert current_record() is None and current_trace_id() is None
    inside = []

    @decorator
    def handler(payload, context):
        inside.append((current_record().source, current_trace_id()))
        raise RuntimeError("boom")

    try:
        handler(EVENTS[decorator](), None)
    except RuntimeError:
        assert decorator is sns_handler  # SNS re-raises; the others report the failure
    assert inside and inside[0][1] == "t-dec"
    assert current_record() is None and current_trace_id() is None


def test_current_record_sources():
    sources = []

    def note(payload, context):
        sources.append(current_record().source)

    sqs_handler(note)(sqs_event({}), None)
    sns_handler(note)(sns_event({}), None)
    stream_handler(note)(kinesis_event({}), None)
    stream_handler(note)(dynamodb_stream_event(dynamodb_record("INSERT", new_image={"PK": "a"})), None)
    api_handler(note)(api_event(), None)
    assert sources == ["sqs", "sns", "kinesis", "dynamodb", "api"]


def test_a_handler_called_inside_another_restores_the_outer_scope():
    log = get_logger("tests.nested")
    seen = []

    @sqs_handler
    def inner(message, context):
        seen.append(("inner", current_trace_id()))

    @sqs_handler
    def outer(message, context):
        seen.append(("outer", current_trace_id()))
        inner(sqs_event({}, trace_id="t-inner"), context)
        seen.append(("outer", current_trace_id()))
        log.info("after inner")

    outer(sqs_event({}, trace_id="t-outer"), None)
    assert seen == [("outer", "t-outer"), ("inner", "t-inner"), ("outer", "t-outer")]


def test_wrong_event_shape_is_refused_with_one_clear_error_line(capfd):
    @stream_handler
    def handler(payload, context):
        raise AssertionError("not called")

    with pytest.raises(UnsupportedEvent) as refused:
        handler({"httpMethod": "GET"}, None)
    (line,) = read_lines(capfd)
    assert line["level"] == "ERROR" and line["error"] == str(refused.value)
    assert "a Kinesis event or a DynamoDB Streams event" in line["error"]


def test_a_commit_that_is_not_a_function_is_refused_at_decoration_naming_both():
    with pytest.raises(TypeError) as refused:
        lambda_kit.sqs_handler(commit="not callable")
    assert str(refused.value) == "sqs_handler: commit must be a function of the batch, not str"


def test_the_handler_says_which_model_it_validates_with():
    @dataclasses.dataclass
    class Order:
        id: int

    assert lambda_kit.sqs_handler(model=Order)(lambda order, context: None).__lambda_kit__["model"] == "Order"
    assert lambda_kit.sqs_handler(lambda message, context: None).__lambda_kit__["model"] is None
