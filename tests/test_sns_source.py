"""The SNS adapter (``lambda_kit.sources.sns``) through ``sns_handler``: where the trace id comes
from (the ``trace_id`` attribute, a valid ``Subject``, the message id), what a message that cannot
be read fails with, and what a failing record's ERROR line says before it is raised."""

from __future__ import annotations

import pytest
from _logs import of_level, read_lines

from lambda_kit import current_record, current_trace_id, sns_handler
from lambda_kit.testing import lambda_context, sns_record


def traced(record: dict) -> list[str]:
    seen = []
    sns_handler(lambda message, context: seen.append(current_trace_id()))(
        {"Records": [record]}, lambda_context()
    )
    return seen


def test_without_a_trace_id_attribute_the_trace_id_is_a_valid_subject_else_the_message_id(capfd):
    assert traced(sns_record({"n": 1}, subject="order-42")) == ["order-42"]
    plain = sns_record({"n": 1}, subject="a subject with spaces")  # not an id: not used
    assert traced(plain) == [plain["Sns"]["MessageId"]]
    bare = sns_record({"n": 1})
    del bare["Sns"]["MessageAttributes"]  # SNS sends none when the publisher set none
    assert traced(bare) == [bare["Sns"]["MessageId"]]
    assert not of_level(read_lines(capfd), "WARN")  # nothing was rejected: nothing to warn about


def test_a_trace_id_attribute_comes_before_the_subject():
    assert traced(sns_record({"n": 1}, trace_id="t-1", subject="order-42")) == ["t-1"]


@pytest.mark.parametrize(
    ("message", "why"),
    [
        (None, "Sns.Message is missing or not a string"),
        (7, "Sns.Message is missing or not a string"),
        ("{not json", "Sns.Message is not valid JSON ("),
    ],
)
def test_a_message_that_cannot_be_read_is_raised_after_its_error_line(message, why, capfd):
    calls = []
    record = sns_record({"n": 1}, trace_id="t-2")
    record["Sns"]["Message"] = message
    with pytest.raises(ValueError) as raised:
        sns_handler(lambda message, context: calls.append(message))({"Records": [record]}, lambda_context())
    assert calls == []
    [error] = of_level(read_lines(capfd), "ERROR")
    assert error["message"] == "record could not be decoded" and error["error"] == str(raised.value)
    assert error["error"].startswith(why) and error["error"] != why + ")" and "(None)" not in error["error"]
    assert (error["source"], error["record_id"], error["trace_id"], error["attempt"]) == (
        "sns",
        record["Sns"]["MessageId"],
        "t-2",
        1,
    )


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ({"EventSource": "aws:sns", "EventVersion": "1.0"}, "record has no Sns object"),
        ({"EventSource": "aws:sns", "Sns": {"Message": "{}"}}, "record has no Sns.MessageId"),
    ],
)
def test_a_record_without_its_sns_fields_fails_as_sns_with_its_raw_form_and_the_reason(raw, why, capfd):
    calls = []
    with pytest.raises(ValueError) as raised:
        sns_handler(lambda message, context: calls.append(message))({"Records": [raw]}, lambda_context())
    assert calls == [] and str(raised.value) == why
    [error] = of_level(read_lines(capfd), "ERROR")
    assert (error["message"], error["source"], error["record_id"], error["error"]) == (
        "record could not be decoded",
        "sns",
        "",
        why,
    )
    assert error["payload"] == raw and error["trace_id"].startswith("h-")


def test_a_malformed_traceparent_attribute_is_warned_about_as_sns_and_the_message_id_is_used(capfd):
    record = sns_record({"n": 1})
    record["Sns"]["MessageAttributes"]["traceparent"] = {"Type": "String", "Value": "not-w3c"}
    assert traced(record) == [record["Sns"]["MessageId"]]
    [warning] = of_level(read_lines(capfd), "WARN")
    assert {key: warning[key] for key in ("message", "source", "rejected_trace_context", "trace_id")} == {
        "message": "ignored an invalid traceparent; reading the next place",
        "source": "sns",
        "rejected_trace_context": "'not-w3c'",
        "trace_id": record["Sns"]["MessageId"],
    }


def test_the_current_record_carries_the_sns_record_as_it_came():
    record = sns_record({"n": 1}, trace_id="t-raw")
    seen = []
    sns_handler(lambda message, context: seen.append(current_record().raw))(
        {"Records": [record]}, lambda_context()
    )
    assert seen == [record]


def test_json_false_passes_the_message_text_as_it_came():
    seen = []
    sns_handler(json=False)(lambda message, context: seen.append(message))(
        {"Records": [sns_record("{not json")]}, lambda_context()
    )
    assert seen == ["{not json"]


def test_a_binary_datadog_attribute_that_is_not_base64_is_warned_about_as_it_came(capfd):
    record = sns_record({"n": 1})
    attribute = {"Type": "Binary", "Value": "not base64!"}
    record["Sns"]["MessageAttributes"]["_datadog"] = attribute
    assert traced(record) == [record["Sns"]["MessageId"]]
    [warning] = of_level(read_lines(capfd), "WARN")
    assert (warning["source"], warning["rejected_trace_context"]) == ("sns", ascii(attribute))
