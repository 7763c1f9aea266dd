"""eventbridge_handler through the public API, against AWS's published sample events
(``tests/events/eventbridge/``): the detail as payload, the trace id in ``detail.trace_id`` with the
event id as fallback, ``record.id`` the event id, a failure logged and re-raised."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _logs import of_level, read_lines, with_message

from lambda_kit import UnsupportedEvent, current_record, current_trace_id, eventbridge_handler
from lambda_kit.errors import UndecodableRecord
from lambda_kit.testing import eventbridge_event, lambda_context

SAMPLES = Path(__file__).parent / "events" / "eventbridge"


def sample(name: str) -> dict:
    return json.loads((SAMPLES / name).read_text())


def recording():
    seen = []

    @eventbridge_handler
    def handler(detail, context):
        record = current_record()
        seen.append((detail, record.source, record.id, current_trace_id()))
        return "done"

    return handler, seen


@pytest.mark.parametrize("name", sorted(p.name for p in SAMPLES.glob("*.json")))
def test_every_aws_sample_event_reaches_the_function_with_its_detail(name, capfd):
    event = sample(name)
    handler, seen = recording()
    assert handler(event, lambda_context()) is None
    # No trace_id in these details: the event id is the trace id, and the record's id.
    assert seen == [(event["detail"], "eventbridge", event["id"], event["id"])]
    lines = read_lines(capfd)
    assert [line["message"] for line in lines] == ["record received", "record processed"]
    assert {line["trace_id"] for line in lines} == {event["id"]}
    assert lines[0]["payload"] == event["detail"] and lines[0]["source"] == "eventbridge"


def test_the_rds_sample_detail_is_passed_as_is():
    handler, seen = recording()
    handler(sample("rds-db-instance-event.json"), None)
    [(detail, *_)] = seen
    assert detail["Message"] == "Finished DB Instance backup" and detail["EventCategories"] == ["backup"]


def test_the_trace_id_is_read_from_the_detail(capfd):
    handler, seen = recording()
    event = eventbridge_event({"order": 7}, trace_id="T-eb-1")
    handler(event, lambda_context())
    assert seen == [({"order": 7, "trace_id": "T-eb-1"}, "eventbridge", event["id"], "T-eb-1")]
    assert {line["trace_id"] for line in read_lines(capfd)} == {"T-eb-1"}


def test_an_invalid_trace_id_falls_back_to_the_event_id_with_a_warning(capfd):
    handler, seen = recording()
    event = eventbridge_event({"trace_id": "a\nb"})
    handler(event, None)
    assert seen[0][3] == event["id"]
    [warning] = of_level(read_lines(capfd), "WARN")
    assert warning["rejected_trace_id"] == "'a\\nb'"


def test_a_failure_is_logged_once_and_re_raised_for_lambdas_async_retries(capfd):
    @eventbridge_handler
    def handler(detail, context):
        raise RuntimeError("cannot bill")

    event = sample("ec2-instance-state-change.json")
    with pytest.raises(RuntimeError, match="cannot bill"):
        handler(event, lambda_context())
    [error] = of_level(read_lines(capfd), "ERROR")
    assert error["record_id"] == event["id"] and error["trace_id"] == event["id"]
    assert error["error_type"] == "RuntimeError" and "Traceback" in error["traceback"]


def test_a_detail_sent_as_json_text_is_decoded():
    handler, seen = recording()
    event = eventbridge_event()
    event["detail"] = json.dumps({"n": 1, "trace_id": "T-text"})
    handler(event, None)
    assert seen[0][0] == {"n": 1, "trace_id": "T-text"} and seen[0][3] == "T-text"


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"detail": "{not json"}, "detail is not valid JSON"),
        ({"id": ""}, "event has no id"),
        ({"id": None}, "event has no id"),
    ],
)
def test_an_undecodable_event_fails_without_reaching_the_function(change, why, capfd):
    handler, seen = recording()
    event = {**eventbridge_event({"n": 1}), **change}
    with pytest.raises(UndecodableRecord, match=why):
        handler(event, None)
    assert seen == []
    [error] = of_level(read_lines(capfd), "ERROR")
    assert error["message"] == "record could not be decoded" and error["error"].startswith(why)


@pytest.mark.parametrize(
    "event",
    [
        {"detail-type": "x", "source": "y"},  # no detail
        {"Records": []},
        {"version": "0", "id": "1", "detail": {}},  # no detail-type or source
    ],
)
def test_events_that_are_not_eventbridge_events_are_refused(event, capfd):
    handler, seen = recording()
    with pytest.raises(UnsupportedEvent, match="eventbridge_handler cannot process"):
        handler(event, None)
    assert seen == [] and len(read_lines(capfd)) == 1


def test_scheduled_events_have_an_empty_detail(capfd):
    handler, seen = recording()
    handler(sample("scheduled-event.json"), None)
    assert seen[0][0] == {}
    assert with_message(read_lines(capfd), "record processed")[0]["result"] == "done"


# --- the adapter's exact lines (make mutate on sources/eventbridge.py) -----------------------------


def test_an_event_without_an_id_fails_as_eventbridge_with_its_raw_form(capfd):
    event = eventbridge_event({"n": 1})
    del event["id"]
    with pytest.raises(UndecodableRecord, match="^event has no id$"):
        eventbridge_handler(lambda detail, context: None)(event, lambda_context())
    [error] = of_level(read_lines(capfd), "ERROR")
    assert (error["message"], error["source"], error["record_id"], error["error"]) == (
        "record could not be decoded",
        "eventbridge",
        "",
        "event has no id",
    )
    assert error["payload"] == event


def test_a_detail_string_that_is_not_json_fails_with_the_decoders_reason(capfd):
    event = eventbridge_event("{not json")
    with pytest.raises(UndecodableRecord) as raised:
        eventbridge_handler(lambda detail, context: None)(event, lambda_context())
    why = str(raised.value)
    assert why.startswith("detail is not valid JSON (") and why.endswith(")") and "(None)" not in why
    [error] = of_level(read_lines(capfd), "ERROR")
    assert (error["source"], error["error"], error["attempt"]) == ("eventbridge", why, 1)


def test_a_failed_event_is_its_first_attempt_and_carries_the_event_as_it_came(capfd):
    event = eventbridge_event({"n": 1}, trace_id="t-eb")
    seen = []

    def handler(detail, context):
        seen.append(current_record().raw)
        raise ValueError("no")

    with pytest.raises(ValueError):
        eventbridge_handler(handler)(event, lambda_context())
    assert seen == [event]
    [error] = of_level(read_lines(capfd), "ERROR")
    assert (error["source"], error["record_id"], error["attempt"], error["trace_id"]) == (
        "eventbridge",
        event["id"],
        1,
        "t-eb",
    )


def test_a_malformed_traceparent_in_the_detail_is_warned_about_as_eventbridge(capfd):
    event = eventbridge_event({"n": 1, "traceparent": "not-w3c"})
    eventbridge_handler(lambda detail, context: None)(event, lambda_context())
    [warning] = of_level(read_lines(capfd), "WARN")
    assert (
        warning["message"],
        warning["source"],
        warning["rejected_trace_context"],
        warning["trace_id"],
    ) == ("ignored an invalid traceparent; reading the next place", "eventbridge", "'not-w3c'", event["id"])
