"""Hostile input for the CloudWatch Logs subscription shapes and tumbling windows (the suite of
``test_hostile_events.py``, extended): whatever ``awslogs.data``, its log events, the Kinesis
records carrying them, or a window's fields hold, nothing escapes from lambda_kit itself, nothing is
acknowledged unprocessed, every failure has one clear ERROR line; and for any run of records, the
window state that goes back is exactly the fold of the records before the reported failure."""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from typing import Any

import pytest
from _hostile import CODECS, HOSTILE, captured, of_level, parse_lines, using_codec
from hypothesis import given
from hypothesis import strategies as st
from test_hostile_events import (
    Recorder,
    check_calls,
    check_error_lines,
    check_refused,
    contexts,
    json_value,
    make_context,
    nasty_text,
)

from lambda_kit import UnsupportedEvent, cloudwatch_logs_handler, current_window, stream_handler
from lambda_kit.errors import UndecodableRecord
from lambda_kit.sources.awslogs import unpack
from lambda_kit.sources.window import STATE_LIMIT, WindowStateError
from lambda_kit.testing import (
    dynamodb_record,
    kinesis_record,
    log_line,
    log_subscription_message,
    tumbling_window,
)

# --- strategies: subscription messages and their data ------------------------------------------------


def packed(value: Any, how: str = "gzip") -> str:
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return base64.b64encode(gzip.compress(raw, mtime=0) if how == "gzip" else zlib.compress(raw)).decode()


trace_ids = st.one_of(st.none(), st.sampled_from(["T-1", "x" * 129, "a b", "", "é"]), nasty_text)
log_message = st.one_of(
    nasty_text,
    st.builds(
        lambda t, extra: log_line(trace_id=t, **extra),
        trace_ids,
        st.dictionaries(st.sampled_from(["url", "n", "blob"]), json_value, max_size=2),
    ),
    json_value.map(json.dumps),
    st.builds(
        lambda t: json.dumps({"trace_id": t, "level": 1, "message": None, "timestamp": []}), json_value
    ),
)
good_event = st.builds(
    lambda i, ts, m: {"id": f"e-{i}", "timestamp": ts, "message": m},
    st.integers(0, 10**6),
    st.integers(0, 2**45),
    log_message,
)
log_event = st.one_of(
    good_event,
    good_event,
    good_event,
    json_value,  # not a log event at all
    st.builds(
        lambda e, key, junk: {**e, key: junk},
        good_event,
        st.sampled_from(["id", "timestamp", "message"]),
        json_value,
    ),
    st.builds(
        lambda e, key: {k: v for k, v in e.items() if k != key},
        good_event,
        st.sampled_from(["id", "timestamp", "message"]),
    ),
)


@st.composite
def subscription_messages(draw: Any) -> Any:
    message = log_subscription_message(control=draw(st.booleans()) and draw(st.booleans()))
    if message["messageType"] == "DATA_MESSAGE":
        message["logEvents"] = draw(st.lists(log_event, max_size=5))
    for key in draw(
        st.lists(st.sampled_from(["messageType", "logEvents", "logGroup", "subscriptionFilters"]), max_size=1)
    ):
        message[key] = draw(json_value)
    return message


awslogs_data = st.one_of(
    subscription_messages().map(packed),
    subscription_messages().map(packed),
    subscription_messages().map(lambda m: packed(m, "zlib")),
    json_value.map(packed),  # gzip JSON of any shape
    st.binary(max_size=60).map(lambda b: packed(b)),  # gzip of bytes that are not JSON
    st.binary(max_size=60).map(lambda b: base64.b64encode(b).decode()),
    subscription_messages().map(lambda m: packed(m)[:-8]),  # cut short
    nasty_text,
    json_value,
)


def expected_events(data: Any) -> list[Any] | None:
    """The log events a subscription message in ``data`` holds, when it unpacks to a data message."""
    try:
        message = unpack(data)
    except ValueError:
        return None
    if message["messageType"] != "DATA_MESSAGE" or not isinstance(message.get("logEvents"), list):
        return None
    return message["logEvents"]


# --- cloudwatch_logs_handler ----------------------------------------------------------------------------

subscription_events = st.one_of(
    awslogs_data.map(lambda d: ({"awslogs": {"data": d}}, True)),
    awslogs_data.map(lambda d: ({"awslogs": {"data": d}, "extra": 1}, True)),
    json_value.map(lambda v: ({"awslogs": v}, False)),
    json_value.map(lambda v: (v, False)),
)


def is_subscription(event: Any) -> bool:
    return type(event) is dict and type(event.get("awslogs")) is dict and "data" in event["awslogs"]


@HOSTILE
@given(
    event=subscription_events,
    fail_every=st.sampled_from([0, 1, 2]),
    context=contexts,
    codec_name=st.sampled_from(CODECS),
)
def test_cloudwatch_logs_handler_survives_any_event(event, fail_every, context, codec_name):
    event, _ = event
    fn = Recorder(fail_every)
    raised: BaseException | None = None
    with using_codec(codec_name), captured() as out:
        events = (
            expected_events(event["awslogs"]["data"]) if is_subscription(event) else None
        )  # what this codec reads
        try:
            cloudwatch_logs_handler(fn)(event, make_context(context))
        except UnsupportedEvent as error:
            return check_refused(is_subscription(event), error, parse_lines(out), fn)
        except UndecodableRecord as error:
            raised = error
        except RuntimeError as error:
            assert fn.raised and error is fn.raised[0]
            raised = error
    assert is_subscription(event)
    lines = parse_lines(out)
    errors = of_level(lines, "ERROR")
    check_error_lines(errors)
    check_calls(fn, lines)
    assert (raised is None) == (not errors)  # a failure is raised, never acknowledged
    if raised is not None:
        assert type(raised).__name__ == errors[0]["error_type"] and str(raised) == errors[0]["error"]
    undecodable = [line for line in errors if line["error_type"] == "UndecodableRecord"]
    if events is None:  # a control message is skipped; anything else fails as one record
        assert fn.calls == [] and len(undecodable) <= 1
    else:
        assert len(fn.calls) + len(undecodable) == len(events)  # every log event ran, or failed alone


# --- stream_handler: subscription messages in Kinesis records -----------------------------------------------


@st.composite
def log_records(draw: Any) -> Any:
    kind = draw(st.sampled_from(["logs", "logs", "plain", "junk data"]))
    if kind == "plain":
        return kinesis_record({"n": draw(st.integers())})
    record = kinesis_record(None, raw_data="e30=")
    record["kinesis"]["data"] = draw(awslogs_data) if kind == "logs" else "H4sI" + draw(nasty_text)
    return record


@HOSTILE
@given(
    records=st.lists(log_records(), max_size=5),
    fail_every=st.sampled_from([0, 2, 3]),
    codec_name=st.sampled_from(CODECS),
)
def test_stream_handler_survives_any_kinesis_record_of_log_events(records, fail_every, codec_name):
    fn = Recorder(fail_every)
    with using_codec(codec_name), captured() as out:
        response = stream_handler(fn)({"Records": records}, None)
        unpacked = {r["kinesis"]["sequenceNumber"]: expected_events(r["kinesis"]["data"]) for r in records}
    lines = parse_lines(out)
    errors = of_level(lines, "ERROR")
    check_error_lines(errors)
    check_calls(fn, lines)
    failures = response["batchItemFailures"]
    assert list(response) == ["batchItemFailures"] and len(failures) <= 1 and len(errors) == len(failures)
    sequence_numbers = [r["kinesis"]["sequenceNumber"] for r in records]
    assert {call[0] for call in fn.calls} <= set(sequence_numbers)  # every log event reports its record
    if failures:
        failed = sequence_numbers.index(failures[0]["itemIdentifier"])
        assert all(
            sequence_numbers.index(call[0]) <= failed for call in fn.calls
        )  # none after the failed record
    else:  # every record ran: one call per plain record, per log event of a data message, none for control
        assert len(fn.calls) == sum(
            len(unpacked[r["kinesis"]["sequenceNumber"]] or ())
            if r["kinesis"]["data"].startswith("H4sI")
            else 1
            for r in records
        )


# --- tumbling windows: the state that goes back -------------------------------------------------------------

actions = st.fixed_dictionaries(
    {
        "n": st.integers(-5, 5),
        "then": st.sampled_from(["ok", "ok", "ok", "raise", "raise before", "set", "huge", "nan"]),
    }
)


@HOSTILE
@given(
    steps=st.lists(actions, max_size=8),
    start=st.dictionaries(
        st.just("other"),
        st.recursive(
            st.none()
            | st.booleans()
            | st.integers(-(2**63), 2**63 - 1)
            | st.floats(allow_nan=False, allow_infinity=False)
            | st.text(st.characters(exclude_categories=("Cs",)), max_size=8),
            lambda inner: (
                st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
            ),
            max_leaves=6,
        ),
        max_size=1,
    ),
    source=st.sampled_from(["kinesis", "dynamodb"]),
    codec_name=st.sampled_from(CODECS),
)
def test_the_state_that_goes_back_is_the_fold_of_the_records_before_the_failure(
    steps, start, source, codec_name
):
    """Each record adds ``n`` to ``sum`` and appends to ``seen``, then succeeds, raises, or leaves a
    value Lambda cannot take (a set, over 1 MB, NaN). The response must be exactly: the state after
    the records before the first failing one, and that record reported."""
    calls = []

    @stream_handler(log_event=False, log_result=False)
    def handler(payload, context):
        step = payload if source == "kinesis" else payload["new_image"]
        calls.append(step["n"])
        if step["then"] == "raise before":
            raise ValueError("before")
        state = current_window().state
        state["sum"] = state.get("sum", 0) + step["n"]
        state.setdefault("seen", []).append(step["n"])
        bad = {"set": {1}, "huge": "x" * STATE_LIMIT, "nan": float("nan")}.get(step["then"])
        if bad is not None:
            state["bad"] = bad
        if step["then"] == "raise":
            raise ValueError("after")

    if source == "kinesis":
        batch = {"Records": [kinesis_record(step) for step in steps]}
        ids = [r["kinesis"]["sequenceNumber"] for r in batch["Records"]]
    else:
        batch = {
            "Records": [
                dynamodb_record("INSERT", keys={"PK": str(i)}, new_image={"PK": str(i), **s})
                for i, s in enumerate(steps)
            ]
        }
        ids = [r["dynamodb"]["SequenceNumber"] for r in batch["Records"]]
    event = tumbling_window(batch, json.loads(json.dumps(start)))
    with using_codec(codec_name), captured():
        response = handler(event, None)

    expected = json.loads(json.dumps(start))
    for index, step in enumerate(steps):
        if step["then"] != "ok":
            assert response == {"state": expected, "batchItemFailures": [{"itemIdentifier": ids[index]}]}
            assert len(calls) == index + 1
            return
        expected["sum"] = expected.get("sum", 0) + step["n"]
        expected.setdefault("seen", []).append(step["n"])
    assert response == {"state": expected, "batchItemFailures": []}


window_fields = st.fixed_dictionaries(
    {},
    optional={
        "window": st.one_of(
            json_value,
            st.fixed_dictionaries({"start": json_value | nasty_text, "end": json_value | nasty_text}),
        ),
        "state": json_value,
        "shardId": json_value,
        "eventSourceARN": json_value,
        "isFinalInvokeForWindow": json_value,
        "isWindowTerminatedEarly": json_value,
    },
)


@HOSTILE
@given(fields=window_fields, codec_name=st.sampled_from(CODECS))
def test_any_window_fields_give_a_state_back_or_one_clear_failure(fields, codec_name):
    fn = Recorder()

    @stream_handler
    def handler(payload, context):
        fn(payload, context)
        state = current_window().state
        state["count"] = state["count"] + 1 if type(state.get("count")) is int else 1

    event = {**tumbling_window({"Records": [kinesis_record({"n": 1})]}, {}), **fields}
    with using_codec(codec_name), captured() as out:
        try:
            response = handler(event, None)
        except WindowStateError as error:
            [line] = parse_lines(out)
            assert line["level"] == "ERROR" and line["error"] == str(error) and fn.calls == []
            return
    assert list(response) == ["state", "batchItemFailures"] and isinstance(response["state"], dict)
    if response["state"] is not event.get(
        "state"
    ):  # a state lambda_kit changed is JSON; the rest is Lambda's own
        json.dumps(response["state"], allow_nan=False)
    errors = of_level(parse_lines(out), "ERROR")
    assert len(errors) == len(response["batchItemFailures"]) <= 1


@pytest.mark.parametrize("codec_name", CODECS)
def test_a_gzip_bomb_in_a_kinesis_record_fails_without_taking_the_memory(codec_name):
    bomb = base64.b64encode(gzip.compress(b"{" + b" " * (64 * 1024 * 1024), mtime=0)).decode()
    record = kinesis_record(None, raw_data=bomb)
    fn = Recorder()
    with using_codec(codec_name), captured() as out:
        response = stream_handler(fn)({"Records": [record]}, None)
    assert (
        response == {"batchItemFailures": [{"itemIdentifier": record["kinesis"]["sequenceNumber"]}]}
        and fn.calls == []
    )
    [error] = of_level(parse_lines(out), "ERROR")
    assert error["error"] == "kinesis.data unpacks to more than 16777216 bytes"
