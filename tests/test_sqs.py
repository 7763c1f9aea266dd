"""sqs_handler through the public API: decoding, SNS envelopes, trace ids, partial batch failures."""

from __future__ import annotations

import pytest
from _logs import of_level, read_lines, with_message

from lambda_kit import UnsupportedEvent, codec, current_record, current_trace_id, sqs_handler
from lambda_kit.testing import lambda_context, sns_envelope, sqs_event, sqs_record

MALICIOUS = {
    "newline": "abc\ninjected",
    "quotes": 'abc"}{"level":"ERROR',
    "too long": "a" * 200,
    "non-ascii": "trace-é",
    "control": "abc\x00def",
    "space": "abc def",
}


def test_success_decodes_each_body_and_reports_no_failures(capfd):
    seen = []
    context = lambda_context("views")

    @sqs_handler
    def handler(message, ctx):
        seen.append((message, ctx))

    event = sqs_event({"url": "/a"}, {"url": "/b"}, [1, 2])
    assert handler(event, context) == {"batchItemFailures": []}
    assert seen == [({"url": "/a"}, context), ({"url": "/b"}, context), ([1, 2], context)]
    lines = read_lines(capfd)
    assert {line["function_name"] for line in lines} == {"views"}
    assert {line["request_id"] for line in lines} == {context.aws_request_id}
    assert not of_level(lines, "ERROR")


def test_partial_failure_reports_only_the_failed_message_and_processes_the_rest(capfd):
    calls = []

    @sqs_handler
    def handler(message, context):
        calls.append(message["n"])
        if message["n"] == 2:
            raise ValueError("bad view 2")

    event = sqs_event({"n": 1}, {"n": 2}, {"n": 3}, trace_id=["t-1", "t-2", "t-3"])
    failed_id = event["Records"][1]["messageId"]
    assert handler(event, lambda_context()) == {"batchItemFailures": [{"itemIdentifier": failed_id}]}
    assert calls == [1, 2, 3]
    errors = of_level(read_lines(capfd), "ERROR")
    assert len(errors) == 1
    error = errors[0]
    assert error["trace_id"] == "t-2"
    assert error["record_id"] == failed_id
    assert error["error_type"] == "ValueError"
    assert error["error"] == "bad view 2"
    assert "Traceback" in error["traceback"] and "bad view 2" in error["traceback"]
    # exactly these fields: no requeue_error on a source that does not requeue
    assert list(error) == [
        "timestamp",
        "level",
        "message",
        "function_name",
        "request_id",
        "trace_id",
        "record_id",
        "source",
        "outcome",
        "attempt",
        "duration_ms",
        "error_type",
        "error",
        "traceback",
    ]
    assert (error["message"], error["source"], error["outcome"], error["attempt"]) == (
        "record failed",
        "sqs",
        "failed",
        1,
    )


def test_all_failing_returns_every_id_and_does_not_raise(capfd):
    @sqs_handler
    def handler(message, context):
        raise RuntimeError("down")

    event = sqs_event({"n": 1}, {"n": 2}, {"n": 3})
    response = handler(event, lambda_context())
    assert response == {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]}
    assert len(of_level(read_lines(capfd), "ERROR")) == 3


def test_undecodable_body_fails_that_record_with_one_clear_error_line(capfd):
    calls = []

    @sqs_handler
    def handler(message, context):
        calls.append(message)

    event = sqs_event({"ok": 1}, "{not json", {"ok": 2}, trace_id=[None, "bad-body", None])
    bad_id = event["Records"][1]["messageId"]
    assert handler(event, None) == {"batchItemFailures": [{"itemIdentifier": bad_id}]}
    assert calls == [{"ok": 1}, {"ok": 2}]
    errors = of_level(read_lines(capfd), "ERROR")
    assert len(errors) == 1
    assert errors[0]["trace_id"] == "bad-body"
    assert errors[0]["message"] == "record could not be decoded"
    assert "not valid JSON" in errors[0]["error"]
    assert errors[0]["payload"] == "{not json"


def test_json_false_passes_the_raw_body():
    seen = []

    @sqs_handler(json=False)
    def handler(message, context):
        seen.append(message)

    assert handler(sqs_event("plain text", "{not json", {"a": 1}), None) == {"batchItemFailures": []}
    assert seen == ["plain text", "{not json", '{"a": 1}']


def test_sns_envelope_body_passes_the_inner_message_with_the_envelope_trace_id():
    seen = []

    @sqs_handler
    def handler(message, context):
        seen.append((message, current_trace_id()))

    event = sqs_event(sns_envelope({"milestone": 1000}, trace_id="from-sns"), sns_envelope({"m": 2}))
    assert handler(event, None) == {"batchItemFailures": []}
    assert seen[0] == ({"milestone": 1000}, "from-sns")
    assert seen[1] == ({"m": 2}, event["Records"][1]["messageId"])


def test_sns_envelope_with_json_false_passes_the_inner_message_text():
    seen = []

    @sqs_handler(json=False)
    def handler(message, context):
        seen.append((message, current_trace_id()))

    handler(sqs_event(sns_envelope("hello", trace_id="env-1")), None)
    assert seen == [("hello", "env-1")]


def test_sns_envelope_with_undecodable_inner_message_fails(capfd):
    @sqs_handler
    def handler(message, context):
        raise AssertionError("not called")

    event = sqs_event(sns_envelope("{oops", trace_id="env-2"))
    assert handler(event, None) == {
        "batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]
    }
    errors = of_level(read_lines(capfd), "ERROR")
    assert len(errors) == 1 and errors[0]["trace_id"] == "env-2"


def test_trace_id_from_the_message_attribute_is_on_every_line(capfd):
    @sqs_handler
    def handler(message, context):
        assert current_trace_id() == "abc-123"

    handler(sqs_event({"x": 1}, trace_id="abc-123"), None)
    lines = read_lines(capfd)
    assert lines and {line["trace_id"] for line in lines} == {"abc-123"}


def test_missing_trace_id_falls_back_to_the_message_id_stable_across_retries(capfd):
    seen = []

    @sqs_handler
    def handler(message, context):
        seen.append(current_trace_id())

    first = sqs_record({"x": 1}, message_id="11111111-2222-3333-4444-555555555555")
    retry = sqs_record({"x": 1}, message_id="11111111-2222-3333-4444-555555555555", receive_count=2)
    handler({"Records": [first]}, None)
    handler({"Records": [retry]}, None)
    assert seen == ["11111111-2222-3333-4444-555555555555"] * 2
    lines = read_lines(capfd)
    assert {line["trace_id"] for line in lines} == {"11111111-2222-3333-4444-555555555555"}


@pytest.mark.parametrize("bad", list(MALICIOUS.values()), ids=list(MALICIOUS))
def test_malicious_trace_id_is_not_used_and_is_logged_escaped(capfd, bad):
    seen = []

    @sqs_handler
    def handler(message, context):
        seen.append(current_trace_id())

    event = sqs_event({"x": 1}, trace_id=bad)
    message_id = event["Records"][0]["messageId"]
    handler(event, None)
    assert seen == [message_id]
    lines = read_lines(capfd)
    assert {line["trace_id"] for line in lines} == {message_id}
    warnings = of_level(lines, "WARN")
    assert len(warnings) == 1
    assert warnings[0]["source"] == "sqs"
    assert warnings[0]["message"] == "ignored an invalid trace id; using the fallback id"
    assert_escaped(warnings[0]["rejected_trace_id"], bad)


def assert_escaped(rejected, bad):
    """The rejected value is logged visibly escaped: printable ASCII that still shows what came."""
    assert rejected.isascii() and rejected.isprintable(), rejected
    assert rejected == ascii(bad)


def test_a_huge_rejected_trace_id_is_logged_cut_to_256_characters(capfd):
    handler = sqs_handler(lambda message, context: None)
    handler(sqs_event({"x": 1}, trace_id="\n" * 1000), None)
    [warning] = of_level(read_lines(capfd), "WARN")
    assert warning["rejected_trace_id"] == ascii("\n" * 1000)[:256]
    assert len(warning["rejected_trace_id"]) == 256


def test_current_record_exposes_the_source_record_and_is_none_outside():
    captured = []

    @sqs_handler
    def handler(message, context):
        record = current_record()
        captured.append((record.source, record.id, record.trace_id, record.payload, record.raw))

    event = sqs_event({"x": 1}, trace_id="t-9")
    handler(event, None)
    raw = event["Records"][0]
    assert captured == [("sqs", raw["messageId"], "t-9", {"x": 1}, raw)]
    assert current_record() is None and current_trace_id() is None


def test_payload_and_result_are_logged_and_can_be_turned_off(capfd):
    @sqs_handler
    def loud(message, context):
        return {"stored": message["url"]}

    @sqs_handler(log_event=False, log_result=False)
    def quiet(message, context):
        return {"stored": message["url"]}

    loud(sqs_event({"url": "/a"}), None)
    lines = read_lines(capfd)
    assert with_message(lines, "record received")[0]["payload"] == {"url": "/a"}
    assert with_message(lines, "record processed")[0]["result"] == {"stored": "/a"}
    quiet(sqs_event({"url": "/a"}), None)
    assert read_lines(capfd) == []


def test_event_without_records_is_refused_with_one_error_line(capfd):
    @sqs_handler
    def handler(message, context):
        raise AssertionError("not called")

    with pytest.raises(
        UnsupportedEvent,
        match="sqs_handler cannot process a JSON object with keys not: sqs_handler processes an SQS event",
    ):
        handler({"not": "sqs"}, None)
    errors = of_level(read_lines(capfd), "ERROR")
    assert len(errors) == 1 and errors[0]["error_type"] == "UnsupportedEvent"


def test_fifo_failure_holds_back_the_rest_of_its_group_and_other_groups_go_on(capfd):
    seen = []

    @sqs_handler(log_event=False, log_result=False)
    def handler(message, context):
        seen.append(message["n"])
        if message["n"] == "A1":
            raise ValueError("A1 is bad")

    names = ["A1", "B1", "A2", "B2", "A3"]
    event = sqs_event(*[{"n": n} for n in names], queue="views.fifo")
    for record, name in zip(event["Records"], names, strict=True):
        record["attributes"]["MessageGroupId"] = name[0]
    response = handler(event, None)

    assert seen == ["A1", "B1", "B2"]  # A2, A3 not processed: they must not overtake A1
    by_id = {r["messageId"]: n for r, n in zip(event["Records"], names, strict=True)}
    assert [by_id[f["itemIdentifier"]] for f in response["batchItemFailures"]] == ["A1", "A2", "A3"]
    lines = read_lines(capfd)
    assert len(of_level(lines, "ERROR")) == 1  # only A1 failed by itself
    held = of_level(lines, "WARN")
    assert len(held) == 2 and all(line["group"] == "A" for line in held)


def test_a_held_back_message_gets_one_warning_naming_it_and_its_group(capfd):
    @sqs_handler(log_event=False, log_result=False)
    def handler(message, context):
        raise ValueError("the first of the group fails")

    event = sqs_event({"n": 1}, {"n": 2}, queue="views.fifo", trace_id=["t-1", "t-2"])
    for record in event["Records"]:
        record["attributes"]["MessageGroupId"] = "g-1"
    ids = [record["messageId"] for record in event["Records"]]
    assert handler(event, None) == {
        "batchItemFailures": [{"itemIdentifier": message_id} for message_id in ids]
    }
    [held] = of_level(read_lines(capfd), "WARN")
    assert held["message"] == "not processed: an earlier record of its group failed; it is retried in order"
    assert (held["source"], held["record_id"], held["trace_id"], held["group"]) == (
        "sqs",
        ids[1],
        "t-2",
        "g-1",
    )


# --- what each record says about itself (the attempt, an unreadable record, an SNS envelope) -------


@pytest.mark.parametrize(
    ("receive_count", "attempt"),
    [
        (1, 1),
        (2, 2),
        (5, 5),
        (12, 12),
        ("x", 1),
        ("0", 1),
        ("-3", 1),
        ("2.0", 1),
        ("²", 1),  # "²" is a digit int() refuses
        ("9" * 18, 10**18 - 1),
        ("1" * 19, 1),
        ("1" * 5000, 1),  # beyond 18 digits no count: int() raises past 4,300
    ],
)
def test_a_failed_messages_error_line_says_which_attempt_it_was(capfd, receive_count, attempt):
    @sqs_handler(metrics=False)
    def handler(message, context):
        raise ValueError("no")

    event = sqs_event({"n": 1}, trace_id="t-attempt")
    event["Records"][0]["attributes"]["ApproximateReceiveCount"] = str(receive_count)
    handler(event, lambda_context())
    (error,) = of_level(read_lines(capfd), "ERROR")
    assert (
        error["message"] == "record failed" and error["attempt"] == attempt
    )  # the message ran, whatever its count


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("not a record", "record is not a JSON object"),
        ({"body": "{}"}, "record has no messageId"),
    ],
)
def test_an_unreadable_record_fails_as_sqs_with_its_raw_form_and_the_reason(capfd, raw, why):
    seen = []

    @sqs_handler
    def handler(message, context):
        seen.append(message)

    good = sqs_record({"n": 1})
    assert handler({"Records": [good, raw]}, lambda_context()) == {
        "batchItemFailures": [{"itemIdentifier": ""}]
    }
    assert seen == [{"n": 1}]
    (error,) = of_level(read_lines(capfd), "ERROR")
    assert (error["source"], error["payload"], error["error"]) == ("sqs", raw, why)


def test_a_body_that_is_not_json_fails_with_the_decoders_reason(capfd):
    @sqs_handler
    def handler(message, context):
        raise AssertionError("never called")

    event = sqs_event("{not json", trace_id="t-bad")
    assert handler(event, lambda_context()) == {
        "batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]
    }
    (error,) = of_level(read_lines(capfd), "ERROR")
    with pytest.raises(Exception) as decoding:
        codec.loads("{not json")
    assert error["error"] == f"message body is not valid JSON ({decoding.value})"
    assert error["payload"] == "{not json"


@pytest.mark.parametrize(
    ("doc", "unwrapped"),
    [
        ({"Type": "Notification", "TopicArn": "arn:aws:sns:us-east-1:1:t", "Message": '{"a": 1}'}, True),
        ({"Type": "Notification", "Message": '{"a": 1}'}, False),  # no TopicArn: a plain body
        ({"Type": "Notification", "TopicArn": "arn:aws:sns:us-east-1:1:t"}, False),  # no Message
        ({"Type": "Other", "TopicArn": "arn:aws:sns:us-east-1:1:t", "Message": '{"a": 1}'}, False),
        ({"TopicArn": "arn:aws:sns:us-east-1:1:t", "Message": '{"a": 1}'}, False),
    ],
)
def test_only_an_sns_notification_envelope_is_unwrapped(doc, unwrapped):
    seen = []

    @sqs_handler
    def handler(message, context):
        seen.append(message)

    handler(sqs_event(doc), lambda_context())
    assert seen == [{"a": 1} if unwrapped else doc]


def test_an_sns_message_that_is_not_json_fails_with_the_decoders_reason(capfd):
    @sqs_handler
    def handler(message, context):
        raise AssertionError("never called")

    body = {"Type": "Notification", "TopicArn": "arn:aws:sns:us-east-1:1:t", "Message": "{not json"}
    event = sqs_event(body, body, trace_id=[None, "t-sns"])  # the fallback id, and a trace id
    handler(event, lambda_context())
    errors = of_level(read_lines(capfd), "ERROR")
    assert [line["payload"] for line in errors] == [
        record["body"] for record in event["Records"]
    ]  # the body as received
    error = errors[0]
    with pytest.raises(Exception) as decoding:
        codec.loads("{not json")
    assert error["error"] == f"SNS message in the body is not valid JSON ({decoding.value})"


def test_json_false_passes_an_undecodable_body_through_as_text():
    seen = []

    @sqs_handler(json=False)
    def handler(message, context):
        seen.append(message)

    bodies = ["{not json", "plain", '{"TopicArn": "arn:aws:sns:us-east-1:1:t"}', '"TopicArn" {not json']
    assert handler(sqs_event(*bodies), lambda_context()) == {"batchItemFailures": []}
    assert (
        seen == bodies
    )  # only an SNS envelope's Message is taken out of a body; the rest is the text as sent


def test_the_queues_own_traceparent_wins_over_the_one_in_an_sns_envelope():
    seen = []

    @sqs_handler
    def handler(message, context):
        seen.append(current_trace_id())

    own, enveloped = "4bf92f3577b34da6a3ce929d0e0e4736", "0af7651916cd43dd8448eb211c80319c"
    envelope = {
        "Type": "Notification",
        "TopicArn": "arn:aws:sns:us-east-1:1:t",
        "Message": '{"a": 1}',
        "MessageAttributes": {
            "traceparent": {"Type": "String", "Value": f"00-{enveloped}-b7ad6b7169203331-01"}
        },
    }
    event = sqs_event(envelope, message_attributes={"traceparent": f"00-{own}-00f067aa0ba902b7-01"})
    handler(event, lambda_context())
    del event["Records"][0]["messageAttributes"]["traceparent"]
    handler(event, lambda_context())
    assert len(seen) == 2 and own in seen[0] and enveloped in seen[1]


def test_each_record_carries_its_raw_message_and_a_malformed_traceparent_is_warned_about_as_sqs(capfd):
    raws = []

    @sqs_handler
    def handler(message, context):
        raws.append(current_record().raw)

    event = sqs_event(
        {"n": 1}, {"n": 2}, trace_id=[None, "t-2"], message_attributes={"traceparent": "00-not-a-context"}
    )
    handler(event, lambda_context())
    assert raws == event["Records"]
    warnings = of_level(read_lines(capfd), "WARN")
    assert [line["source"] for line in warnings] == ["sqs", "sqs"]
