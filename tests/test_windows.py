"""Tumbling windows through ``stream_handler``: the window's state in and out, kept consistent with
the checkpoint Lambda resumes from, and ``on_window_end`` on the window's last invocation."""

from __future__ import annotations

import asyncio
import json
import math
from datetime import UTC, datetime
from pathlib import Path

import pytest
from _hostile import using_codec
from _logs import of_level, read_lines, with_message

from lambda_kit import current_record, current_window, stream_handler
from lambda_kit.sources.window import STATE_LIMIT, WindowStateError
from lambda_kit.testing import (
    dynamodb_record,
    dynamodb_stream_event,
    kinesis_event,
    kinesis_log_record,
    lambda_context,
    tumbling_window,
)


def counting(**options):
    """A windowed handler adding each payload's ``n`` to ``state["sum"]``; ``boom`` raises after
    changing the state, ``poison`` puts a value JSON cannot hold in it."""
    calls = []

    @stream_handler(log_event=False, log_result=False, **options)
    def handler(payload, context):
        calls.append(payload)
        state = current_window().state
        state["sum"] = state.get("sum", 0) + payload.get("n", 0)
        state.setdefault("seen", []).append(payload.get("n"))
        if "poison" in payload:
            state["bad"] = {"a set"} if payload["poison"] == "set" else "x" * STATE_LIMIT
        if payload.get("boom"):
            raise ValueError("boom after changing the state")

    return handler, calls


def seq(event, index):
    return event["Records"][index]["kinesis"]["sequenceNumber"]


# --- the state in and out -------------------------------------------------------------------------


def test_a_handler_that_never_reads_the_window_returns_the_state_unchanged():
    @stream_handler(log_event=False, log_result=False)
    def handler(payload, context):
        return payload

    state = {"1": 282, "2": 715}
    event = tumbling_window(kinesis_event({"n": 1}, {"n": 2}), state)
    response = handler(event, lambda_context())
    assert response == {"state": {"1": 282, "2": 715}, "batchItemFailures": []}
    assert response["state"] is state  # handed back as it came, not re-encoded


def test_the_window_is_current_while_the_batch_runs_and_gone_after():
    seen = []

    @stream_handler(log_event=False, log_result=False)
    def handler(payload, context):
        window = current_window()
        seen.append(
            (
                window.start,
                window.end,
                window.shard_id,
                window.event_source_arn,
                window.is_final,
                window.terminated_early,
                current_record().id,
            )
        )

    event = tumbling_window(
        kinesis_event({"n": 1}, stream="views"), start="2020-12-09T07:04:00Z", seconds=120
    )
    handler(event, None)
    utc = UTC
    assert seen == [
        (
            datetime(2020, 12, 9, 7, 4, tzinfo=utc),
            datetime(2020, 12, 9, 7, 6, tzinfo=utc),
            "shardId-000000000000",
            "arn:aws:kinesis:us-east-1:123456789012:stream/views",
            False,
            False,
            seq(event, 0),
        )
    ]
    assert current_window() is None


def test_no_window_on_a_stream_without_tumbling_window():
    seen = []
    handler = stream_handler(log_event=False, log_result=False)(
        lambda payload, context: seen.append(current_window())
    )
    assert handler(kinesis_event({"n": 1}), None) == {"batchItemFailures": []}  # no state key either
    assert seen == [None]


def test_the_state_aggregates_over_the_batch_and_goes_back():
    handler, _ = counting()
    event = tumbling_window(kinesis_event({"n": 1}, {"n": 2}, {"n": 3}), {"sum": 10, "seen": [0]})
    assert handler(event, None) == {"state": {"sum": 16, "seen": [0, 1, 2, 3]}, "batchItemFailures": []}


def test_an_empty_or_missing_state_starts_empty():
    handler, _ = counting()
    event = tumbling_window(kinesis_event({"n": 4}))
    event["state"] = None
    assert handler(event, None)["state"] == {"sum": 4, "seen": [4]}
    del event["state"]
    assert handler(event, None)["state"] == {"sum": 4, "seen": [4]}


def test_dynamodb_streams_windows_too():
    calls = []

    @stream_handler(log_event=False, log_result=False)
    def handler(change, context):
        calls.append(change["event_name"])
        state = current_window().state
        state[change["event_name"]] = state.get(change["event_name"], 0) + 1
        if change["event_name"] == "REMOVE":
            raise RuntimeError("cannot count removals")

    event = tumbling_window(
        dynamodb_stream_event(
            dynamodb_record("INSERT", keys={"PK": "a"}, new_image={"PK": "a"}),
            dynamodb_record("MODIFY", keys={"PK": "a"}, new_image={"PK": "a"}),
            dynamodb_record("REMOVE", keys={"PK": "a"}, old_image={"PK": "a"}),
            dynamodb_record("INSERT", keys={"PK": "b"}, new_image={"PK": "b"}),
        ),
        {"INSERT": 5},
    )
    failed = event["Records"][2]["dynamodb"]["SequenceNumber"]
    assert event["shardId"].startswith("shardId-")
    assert handler(event, None) == {
        "state": {"INSERT": 6, "MODIFY": 1},
        "batchItemFailures": [{"itemIdentifier": failed}],
    }
    assert calls == ["INSERT", "MODIFY", "REMOVE"]


# --- failures: the state matches the checkpoint ------------------------------------------------------


def test_a_failed_record_leaves_no_change_in_the_state_and_the_batch_stops_there(capfd):
    handler, calls = counting()
    event = tumbling_window(kinesis_event({"n": 1}, {"n": 2, "boom": True}, {"n": 3}), {"sum": 0})
    assert handler(event, None) == {
        "state": {"sum": 1, "seen": [1]},
        "batchItemFailures": [{"itemIdentifier": seq(event, 1)}],
    }
    assert [c["n"] for c in calls] == [1, 2]  # Lambda resumes from record 2 with this state
    [error] = of_level(read_lines(capfd), "ERROR")
    assert error["error"] == "boom after changing the state"


def test_an_undone_state_is_restored_in_place_for_a_function_keeping_a_reference():
    kept = []

    @stream_handler(log_event=False, log_result=False)
    def handler(payload, context):
        state = current_window().state
        kept.append(state)
        state["n"] = payload["n"]
        if payload["n"] == 2:
            raise ValueError("no")

    response = handler(tumbling_window(kinesis_event({"n": 1}, {"n": 2}), {}), None)
    assert response["state"] == {"n": 1} and kept[0] is kept[1] is response["state"]


@pytest.mark.parametrize("codec_name", ["orjson", "ujson"])
@pytest.mark.parametrize(
    ("poison", "why"),
    [
        ("set", "after this record the window state is not JSON: it holds a set at ['bad']"),
        ("huge", "bytes of JSON, over Lambda's 1048576-byte limit"),
    ],
)
def test_a_record_that_leaves_a_state_lambda_cannot_take_fails_itself(capfd, codec_name, poison, why):
    handler, calls = counting()
    with using_codec(codec_name):
        event = tumbling_window(kinesis_event({"n": 1}, {"n": 2, "poison": poison}, {"n": 3}), {"sum": 0})
        response = handler(event, None)
    assert response == {
        "state": {"sum": 1, "seen": [1]},
        "batchItemFailures": [{"itemIdentifier": seq(event, 1)}],
    }
    assert len(calls) == 2
    [error] = of_level(read_lines(capfd), "ERROR")
    assert (
        error["error_type"] == "WindowStateError"
        and why in error["error"]
        and "its changes are undone" in error["error"]
    )


@pytest.mark.parametrize("codec_name", ["orjson", "ujson"])
@pytest.mark.parametrize(
    ("value", "holds"),
    [
        (math.nan, "nan at ['x'], which JSON cannot hold"),
        (-math.inf, "-inf at ['x'], which JSON cannot hold"),
        ({1: "int key"}, "an int key 1 at ['x']"),
        (2**70, "an integer beyond 64 bits at ['x']"),
        (b"bytes", "a bytes at ['x']"),
    ],
)
def test_a_value_json_cannot_hold_exactly_fails_its_record_under_either_codec(
    capfd, codec_name, value, holds
):
    """orjson writes NaN as null, ujson turns an int key into a string: neither slips through."""

    @stream_handler(log_event=False, log_result=False)
    def handler(payload, context):
        current_window().state["x"] = value

    event = tumbling_window(kinesis_event({"n": 1}), {"kept": True})
    with using_codec(codec_name):
        response = handler(event, None)
    assert response == {"state": {"kept": True}, "batchItemFailures": [{"itemIdentifier": seq(event, 0)}]}
    [line] = of_level(read_lines(capfd), "ERROR")
    assert line["error_type"] == "WindowStateError"
    assert line["error"].startswith(
        f"after this record the window state is not JSON: it holds {holds}; its changes are undone"
    )


def test_a_tuple_in_the_state_goes_back_as_the_json_array_it_is():
    @stream_handler(log_event=False, log_result=False)
    def handler(payload, context):
        current_window().state["pair"] = (1, "two")

    event = tumbling_window(kinesis_event({"n": 1}), {})
    assert handler(event, None) == {"state": {"pair": (1, "two")}, "batchItemFailures": []}


def test_a_state_changed_outside_any_record_is_checked_before_it_goes_back(capfd):
    """``commit`` (or anything outside the function's calls) may break the state too: then the
    invocation fails, and Lambda retries the batch with the state it came with."""

    def commit(accepted):
        current_window().state["total"] = math.nan

    @stream_handler(log_event=False, log_result=False, commit=commit)
    def handler(payload, context):
        return payload

    with pytest.raises(
        WindowStateError,
        match=(
            r"the window state is not JSON: it holds nan at \['total'\], which JSON cannot hold: "
            r"the invocation fails"
        ),
    ):
        handler(tumbling_window(kinesis_event({"n": 1}), {}), None)
    [line] = of_level(read_lines(capfd), "ERROR")
    assert line["message"] == "window state not returned"


def test_a_commit_failure_after_the_state_changed_fails_the_invocation(capfd):
    """The failed record's change stays in the state and Lambda would resume from it: count it
    twice. lambda_kit raises instead, and Lambda retries the batch with the state it came with."""

    def commit(accepted):
        return [accepted[1][0]]  # the second record fails at commit

    handler, _ = counting(commit=commit)
    event = tumbling_window(kinesis_event({"n": 1}, {"n": 2}, {"n": 3}), {"sum": 0})
    with pytest.raises(
        WindowStateError, match="records after the failed one changed the window state: the invocation fails"
    ):
        handler(event, None)
    lines = read_lines(capfd)
    assert [line["message"] for line in of_level(lines, "ERROR")] == [
        "record failed at commit",
        "window state not returned",
    ]


def test_a_commit_that_succeeds_keeps_the_batch_state():
    handler, _ = counting(commit=lambda accepted: None)
    event = tumbling_window(kinesis_event({"n": 1}, {"n": 2}), {"sum": 0})
    assert handler(event, None) == {"state": {"sum": 3, "seen": [1, 2]}, "batchItemFailures": []}


def test_a_commit_that_changes_the_state_and_fails_a_record_fails_the_invocation():
    def commit(accepted):
        current_window().state["committed"] = len(accepted)
        return [accepted[0][0]]

    @stream_handler(log_event=False, log_result=False, commit=commit)
    def handler(payload, context):
        return payload

    with pytest.raises(WindowStateError):
        handler(tumbling_window(kinesis_event({"n": 1}), {}), None)


def test_a_failure_that_changed_nothing_is_reported_with_the_state():
    @stream_handler(log_event=False, log_result=False)
    def handler(payload, context):
        if payload["n"] == 2:
            raise ValueError("before touching the state")
        current_window().state["last"] = payload["n"]

    event = tumbling_window(kinesis_event({"n": 1}, {"n": 2}), {})
    assert handler(event, None) == {
        "state": {"last": 1},
        "batchItemFailures": [{"itemIdentifier": seq(event, 1)}],
    }


def test_an_undecodable_record_is_reported_with_the_state_before_it():
    handler, calls = counting()
    event = tumbling_window(kinesis_event({"n": 1}, {"n": 2}), {"sum": 0})
    event["Records"][1]["kinesis"]["data"] = "!!"
    assert handler(event, None) == {
        "state": {"sum": 1, "seen": [1]},
        "batchItemFailures": [{"itemIdentifier": seq(event, 1)}],
    }


def test_log_events_of_one_kinesis_record_share_its_checkpoint(capfd):
    """A failed log event is reported by its Kinesis record, whose earlier log events changed the
    state: Lambda resumes from that record, so the state cannot go back; the invocation fails."""

    @stream_handler(log_event=False, log_result=False)
    def handler(log_event, context):
        current_window().state[log_event["id"]] = 1
        if "fail" in log_event["message"]:
            raise ValueError("bad line")

    event = tumbling_window({"Records": [kinesis_log_record("ok", "fail")]}, {})
    with pytest.raises(WindowStateError):
        handler(event, None)
    apart = tumbling_window({"Records": [kinesis_log_record("ok"), kinesis_log_record("fail")]}, {})
    response = handler(apart, None)  # in records of their own, the failed one is reported alone
    assert len(response["state"]) == 1
    assert response["batchItemFailures"] == [
        {"itemIdentifier": apart["Records"][1]["kinesis"]["sequenceNumber"]}
    ]


# --- on_window_end: the window's last invocation ------------------------------------------------------


def test_on_window_end_runs_once_after_the_records_of_the_last_invocation(capfd):
    ended = []
    handler, calls = counting(
        on_window_end=lambda window: ended.append((dict(window.state), window.is_final)) or "published"
    )
    event = tumbling_window(kinesis_event({"n": 2}), {"sum": 40, "seen": []}, final=True)
    assert handler(event, None) == {"state": {"sum": 42, "seen": [2]}, "batchItemFailures": []}
    assert ended == [({"sum": 42, "seen": [2]}, True)]
    [line] = with_message(read_lines(capfd), "window ended")
    assert (
        line["result"] == "published"
        and line["is_final"] is True
        and line["window_start"] == "2024-05-21T10:00:00Z"
    )


def test_on_window_end_runs_on_a_last_invocation_without_records():
    ended = []
    handler, calls = counting(on_window_end=ended.append)
    event = tumbling_window({"Records": []}, {"sum": 42}, final=True, shard_id="shardId-000000000006")
    assert handler(event, None) == {"state": {"sum": 42}, "batchItemFailures": []}
    assert calls == [] and len(ended) == 1 and ended[0].shard_id == "shardId-000000000006"


def test_on_window_end_runs_when_lambda_ends_the_window_early():
    ended = []
    handler, _ = counting(on_window_end=lambda window: ended.append(window.terminated_early))
    handler(tumbling_window(kinesis_event({"n": 1}), {}, terminated_early=True), None)
    handler(tumbling_window(kinesis_event({"n": 1}), {}), None)  # an ordinary invocation
    assert ended == [True]


def test_on_window_end_that_fails_makes_the_invocation_fail(capfd):
    def publish(window):
        raise ConnectionError("table unreachable")

    handler, _ = counting(on_window_end=publish)
    with pytest.raises(ConnectionError):
        handler(tumbling_window(kinesis_event({"n": 1}), {}, final=True), None)
    [line] = of_level(read_lines(capfd), "ERROR")
    assert (
        line["message"] == "window end failed; Lambda retries the invocation"
        and line["error_type"] == "ConnectionError"
    )
    assert line["trace_id"] == "shardId-000000000000:2024-05-21T10:00:00Z"


def test_a_failed_record_in_the_last_invocation_fails_it_without_ending_the_window(capfd):
    ended = []
    handler, _ = counting(on_window_end=ended.append)
    with pytest.raises(ValueError, match="boom"):
        handler(tumbling_window(kinesis_event({"n": 1}, {"n": 2, "boom": True}), {}, final=True), None)
    assert ended == []
    assert with_message(
        read_lines(capfd),
        "window end not run: a record of the window's last invocation failed; Lambda retries the invocation",
    )


def test_on_window_end_may_be_async_but_nothing_but_a_function(capfd):
    ended = []

    async def publish(window):
        await asyncio.sleep(0)
        ended.append(dict(window.state))
        return "published"

    handler, _ = counting(on_window_end=publish)
    handler(tumbling_window(kinesis_event({"n": 1}, {"n": 2}), {}, final=True), None)
    assert ended == [{"sum": 3, "seen": [1, 2]}]
    assert [line["result"] for line in with_message(read_lines(capfd), "window ended")] == ["published"]

    def generator(window):
        yield window

    with pytest.raises(TypeError, match="cannot wrap generator function"):
        stream_handler(on_window_end=generator)
    with pytest.raises(TypeError, match="on_window_end must be a function of the window"):
        stream_handler(on_window_end="publish")


# --- malformed windows ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"window": "2020"}, "the event's window is not an object with start and end"),
        (
            {"window": {"start": "yesterday", "end": "2020-12-09T07:06:00Z"}},
            "the event's window.start is 'yesterday', not an ISO 8601 time",
        ),
        (
            {"window": {"start": "2020-12-09T07:04:00Z"}},
            "the event's window.end is None, not an ISO 8601 time",
        ),
        ({"state": ["a"]}, "the event's state is a list, not a JSON object"),
        (
            {"isFinalInvokeForWindow": "true"},
            "the event's isFinalInvokeForWindow is 'true', not true or false",
        ),
        ({"shardId": 6}, "the event's shardId is a int, not text"),
    ],
)
def test_a_malformed_window_fails_the_invocation_with_one_clear_line(capfd, change, why):
    handler, calls = counting()
    event = {**tumbling_window(kinesis_event({"n": 1}), {}), **change}
    with pytest.raises(WindowStateError) as failed:
        handler(event, None)
    assert str(failed.value) == why and calls == []
    [line] = read_lines(capfd)
    assert (
        line["level"] == "ERROR"
        and line["message"] == "event not processed: malformed tumbling window"
        and line["error"] == why
    )


def test_a_received_state_that_cannot_be_encoded_fails_the_records_that_read_it(capfd):
    handler, calls = counting()
    event = tumbling_window(kinesis_event({"n": 1}), {"huge": 2**70})
    with using_codec("orjson"):
        response = handler(event, None)
    assert response == {"state": {"huge": 2**70}, "batchItemFailures": [{"itemIdentifier": seq(event, 0)}]}
    [line] = of_level(read_lines(capfd), "ERROR")
    assert (
        "the window state Lambda sent cannot be encoded: it holds an integer beyond 64 bits at ['huge']"
        in line["error"]
    )


# --- AWS's sample response shape ---------------------------------------------------------------------------


def test_the_response_is_awss_time_window_event_response():
    sample = json.loads(
        (
            Path(__file__).parent / "events" / "kinesis" / "time-window-response.aws-lambda-java.json"
        ).read_text()
    )

    @stream_handler(log_event=False, log_result=False)
    def handler(payload, context):
        if payload.get("retry"):
            raise ValueError("retry me")
        current_window().state["totalAmount"] = str(payload["amount"])

    failed = sample["batchItemFailures"][0]["itemIdentifier"]
    event = tumbling_window(kinesis_event({"amount": 500}), {})
    event["Records"].append(kinesis_event({"retry": True}, sequence_number=failed)["Records"][0])
    assert handler(event, None) == sample


def test_kpl_user_records_are_checkpointed_by_their_aggregate():
    """A KPL aggregate's user records report its sequence number: the state may count the
    aggregates before the failed one, not the failed one's earlier user records."""
    pytest.importorskip("aws_kinesis_agg")
    from lambda_kit.testing import kinesis_kpl_record

    handler, calls = counting()
    first, second = (
        kinesis_kpl_record({"n": 1}, {"n": 2}),
        kinesis_kpl_record({"n": 3, "boom": True}, {"n": 4}),
    )
    response = handler(tumbling_window({"Records": [first, second]}, {}), None)
    assert response == {
        "state": {"sum": 3, "seen": [1, 2]},
        "batchItemFailures": [{"itemIdentifier": second["kinesis"]["sequenceNumber"]}],
    }
    late = kinesis_kpl_record(
        {"n": 5}, {"n": 6, "boom": True}
    )  # the failed one's aggregate already counted 5
    with pytest.raises(WindowStateError, match="records after the failed one changed the window state"):
        handler(tumbling_window({"Records": [first, late]}, {}), None)
