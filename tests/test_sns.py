"""sns_handler through the public API: decoding, trace ids (attribute, Subject), failures re-raised."""

from __future__ import annotations

import pytest
from _logs import of_level, read_lines

from lambda_kit import current_record, current_trace_id, sns_handler
from lambda_kit.testing import lambda_context, sns_event, sns_record


def test_success_decodes_the_message_and_returns_none(capfd):
    seen = []

    @sns_handler
    def handler(message, context):
        record = current_record()
        seen.append((message, record.source, record.id, current_trace_id()))

    event = sns_event({"milestone": 1000}, trace_id="t-sns")
    assert handler(event, lambda_context()) is None
    assert seen == [({"milestone": 1000}, "sns", event["Records"][0]["Sns"]["MessageId"], "t-sns")]
    lines = read_lines(capfd)
    assert {line["trace_id"] for line in lines} == {"t-sns"}
    assert not of_level(lines, "ERROR")


def test_failure_is_logged_once_with_the_trace_id_and_re_raised(capfd):
    class Boom(Exception):
        pass

    @sns_handler
    def handler(message, context):
        raise Boom("cannot notify")

    with pytest.raises(Boom, match="cannot notify"):
        handler(sns_event({"m": 1}, trace_id="t-fail"), lambda_context())
    errors = of_level(read_lines(capfd), "ERROR")
    assert len(errors) == 1
    assert errors[0]["trace_id"] == "t-fail"
    assert errors[0]["error_type"] == "Boom"
    assert errors[0]["error"] == "cannot notify"
    assert "Traceback" in errors[0]["traceback"]


def test_partial_failure_processes_every_record_then_raises(capfd):
    calls = []

    @sns_handler
    def handler(message, context):
        calls.append(message["n"])
        if message["n"] == 1:
            raise KeyError("n")

    with pytest.raises(KeyError):
        handler(sns_event({"n": 1}, {"n": 2}), None)
    assert calls == [1, 2]
    assert len(of_level(read_lines(capfd), "ERROR")) == 1


def test_undecodable_message_raises_with_one_clear_error_line(capfd):
    @sns_handler
    def handler(message, context):
        raise AssertionError("not called")

    with pytest.raises(ValueError, match="not valid JSON"):
        handler(sns_event("{not json", trace_id="t-undecodable"), None)
    errors = of_level(read_lines(capfd), "ERROR")
    assert len(errors) == 1
    assert errors[0]["trace_id"] == "t-undecodable"
    assert errors[0]["message"] == "record could not be decoded"


def test_json_false_passes_the_raw_message():
    seen = []

    @sns_handler(json=False)
    def handler(message, context):
        seen.append(message)

    handler(sns_event("plain text", "{not json"), None)
    assert seen == ["plain text", "{not json"]


def test_subject_is_the_trace_id_only_when_valid_and_no_attribute_is_set():
    seen = []

    @sns_handler
    def handler(message, context):
        seen.append(current_trace_id())

    by_subject = sns_record({"a": 1}, subject="subject-trace-1")
    prose = sns_record({"a": 1}, subject="Milestone reached!\n")
    attribute_wins = sns_record({"a": 1}, subject="subject-trace-2", trace_id="attr-trace")
    handler({"Records": [by_subject, prose, attribute_wins]}, None)
    assert seen == ["subject-trace-1", prose["Sns"]["MessageId"], "attr-trace"]


def test_missing_trace_id_falls_back_to_the_message_id_stable_across_retries():
    seen = []

    @sns_handler
    def handler(message, context):
        seen.append(current_trace_id())

    record = sns_record({"a": 1}, message_id="95df01b4-ee98-5cb9-9903-4c221d41eb5e")
    handler({"Records": [record]}, None)
    handler({"Records": [record]}, None)  # Lambda's asynchronous retry delivers the same message
    assert seen == ["95df01b4-ee98-5cb9-9903-4c221d41eb5e"] * 2


@pytest.mark.parametrize("bad", ["a\nb", 'x"y', "z" * 200, "ünïcode", "tab\there"])
def test_malicious_attribute_is_not_used_and_is_logged_escaped(capfd, bad):
    seen = []

    @sns_handler
    def handler(message, context):
        seen.append(current_trace_id())

    # the attribute is rejected; the next place in order, a valid Subject, is used
    handler(sns_event({"a": 1}, trace_id=bad, subject="valid-subject"), None)
    assert seen == ["valid-subject"]
    capfd.readouterr()
    # no valid Subject either: the stable MessageId
    event = sns_event({"a": 1}, trace_id=bad, subject="Milestone reached!")
    handler(event, None)
    message_id = event["Records"][0]["Sns"]["MessageId"]
    assert seen[-1] == message_id
    lines = read_lines(capfd)
    assert {line["trace_id"] for line in lines} == {message_id}
    warnings = of_level(lines, "WARN")
    assert len(warnings) == 1
    assert warnings[0]["rejected_trace_id"] == ascii(bad)
    assert warnings[0]["rejected_trace_id"].isprintable()
