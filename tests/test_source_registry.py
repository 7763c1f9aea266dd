"""The source registry (``lambda_kit.sources``): how a refusal names the event it was given (the
``UnsupportedEvent`` message and its ERROR line), the decorator it names, which sources a
``serverless.yml`` event key delivers or carries, and an unknown source's name."""

from __future__ import annotations

import pytest
from _logs import read_lines

from lambda_kit import UnsupportedEvent, sns_handler
from lambda_kit import sources as registry
from lambda_kit.testing import event, lambda_context, s3_event

NINE = {f"key{n}": n for n in range(9)}


@pytest.mark.parametrize(
    ("given", "found"),
    [
        (None, "an empty event (null)"),
        ([], "an empty top-level list"),
        (["x"], "a top-level list, as EventBridge Pipes sends"),
        ("text", "a str, not a JSON object"),
        ({"Records": "x"}, "an event whose Records is not a list"),
        (
            {"Records": [{"eventSource": "aws:b"}, {"EventSource": "aws:a"}, {"eventSource": "aws:b"}]},
            "an event mixing records of aws:a, aws:b",
        ),
        ({"Records": [{"EventSource": "aws:mq"}, {"n": 1}, "x"]}, "an event with aws:mq records"),
        ({"Records": [{"n": 1}]}, "an event whose Records no source recognizes"),
        ({}, "an empty JSON object"),
        ({key: 1 for key in list(NINE)[:8]}, "a JSON object with keys " + ", ".join(list(NINE)[:8])),
        (NINE, "a JSON object with keys " + ", ".join(list(NINE)[:8]) + ", ..."),
        ({"k" * 50: 1}, "a JSON object with keys " + "k" * 40),
    ],
)
def test_a_refused_event_no_source_recognizes_is_named_by_its_shape(given, found, capfd):
    with pytest.raises(UnsupportedEvent) as refused:
        sns_handler(lambda message, context: None)(given, lambda_context())
    assert str(refused.value) == f"sns_handler cannot process {found}: sns_handler processes an SNS event"
    assert refused.value.fits is None
    [line] = read_lines(capfd)
    assert line["error"] == str(refused.value)


@pytest.mark.parametrize(
    ("given", "found", "fits"),
    [
        (event("sqs", {"n": 1}), "an SQS event", "sqs_handler"),
        (
            s3_event("a.txt", envelope="sqs"),
            "an SQS event carrying S3 notifications",
            "s3_handler",
        ),  # the carried source first
    ],
)
def test_a_refused_event_a_source_recognizes_names_its_decorator(given, found, fits):
    with pytest.raises(UnsupportedEvent) as refused:
        sns_handler(lambda message, context: None)(given, lambda_context())
    assert str(refused.value) == f"sns_handler cannot process {found}: use {fits}"


def test_the_sources_a_serverless_event_key_delivers_or_carries():
    assert [source.name for source in registry.for_serverless_event("stream")] == ["kinesis", "dynamodb"]
    assert [source.name for source in registry.for_serverless_event("sqs")] == ["sqs"]
    assert [source.name for source in registry.for_serverless_event("websocket")] == ["websocket"]
    assert registry.for_serverless_event("authorizer") == []  # an http/httpApi event's setting: no event
    assert [source.name for source in registry.carried_by("sns")] == ["s3"]
    assert registry.carried_by("stream") == []


def test_an_unknown_source_is_one_error_naming_the_known_ones():
    with pytest.raises(KeyError) as unknown:
        registry.get("nope")
    assert unknown.value.args[0] == f"unknown event source 'nope'; known: {', '.join(registry.NAMES)}"


# --- what check, invoke and the local stack read of each source -----------------------------------


@pytest.mark.parametrize(
    ("spec", "resource_type", "found"),
    [
        ({"type": "dynamodb", "arn": "arn:aws:kinesis:us-east-1:1:stream/s"}, "", ["dynamodb"]),  # type first
        ({"arn": "arn:aws:dynamodb:us-east-1:1:table/t/stream/2024"}, "", ["dynamodb"]),
        ({"arn": "arn:aws:kinesis:us-east-1:1:stream/s"}, "", ["kinesis"]),
        ({"arn": {"Fn::GetAtt": ["Table", "StreamArn"]}}, "AWS::DynamoDB::Table", ["dynamodb"]),
        ({"arn": {"Fn::GetAtt": ["Clicks", "Arn"]}}, "AWS::Kinesis::Stream", ["kinesis"]),
        ({"arn": {"Fn::ImportValue": "elsewhere"}}, "", ["kinesis", "dynamodb"]),  # nothing tells
    ],
)
def test_a_stream_is_told_kinesis_or_dynamodb_in_one_place(spec, resource_type, found):
    assert [source.name for source in registry.delivered_by("stream", spec, resource_type)] == found


def test_a_key_one_source_delivers_needs_no_telling():
    assert [source.name for source in registry.delivered_by("sqs", {"arn": "arn:aws:kinesis:x"})] == ["sqs"]
    assert registry.delivered_by("schedule", {}) == []


def test_every_source_says_what_its_arns_look_like_and_how_the_local_stack_delivers_it():
    from lambda_kit.local.stack import DELIVERIES

    for source in registry.all_sources():
        assert source.arn_service, source.name
        assert source.delivery == "" or source.delivery in DELIVERIES, source.name
    assert {source.name for source in registry.all_sources() if not source.delivery} == {
        "kafka",
        "cloudwatch_logs",
        "authorizer",  # served in front of the gateway's routes that name it, not by an event
        "firehose",
        "s3_batch",
    }
