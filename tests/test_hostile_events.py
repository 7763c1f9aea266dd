"""Hostile input for the batch decorators (sqs_handler, sns_handler, stream_handler).

Whatever the event — not a dict, no ``Records``, records of the wrong type, missing ids, bad
base64, truncated JSON, huge bodies, foreign event sources, empty batches, DynamoDB images with
unknown types — nothing escapes from lambda_kit itself and nothing is acknowledged unprocessed:
an event the decorator does not recognize is refused (``UnsupportedEvent``, one ERROR line, the
function never called); in any other, each record reaches the function or fails with one clear
ERROR line, and the batch response is always well formed.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any
from unittest.mock import MagicMock

import pytest
from _hostile import CODECS, HOSTILE, captured, of_level, parse_line, parse_lines, using_codec
from hypothesis import given
from hypothesis import strategies as st

from lambda_kit import (
    UnsupportedEvent,
    current_record,
    current_trace_id,
    eventbridge_handler,
    kafka_handler,
    s3_handler,
    sns_handler,
    sqs_handler,
    stream_handler,
)
from lambda_kit.errors import UndecodableRecord
from lambda_kit.testing import (
    dynamodb_record,
    eventbridge_event,
    kafka_record,
    kinesis_record,
    lambda_context,
    s3_eventbridge_event,
    s3_record,
    s3_test_message,
    sns_envelope,
    sns_record,
    sqs_record,
)
from lambda_kit.trace import is_valid_id

# --- strategies ---------------------------------------------------------------------------

NASTY_TEXT = [
    "",
    "\x00",
    "\n",
    "\r\n",
    "\t\x0b\x0c",
    '","level":"ERROR',
    '"}\n{"level":"ERROR"}',
    "\ud800",
    "\udfff\ud800",
    "\u2028\u2029\x85",
    "\x1b[31mred",
    "../../etc/passwd",
    "{",
    "[1,",
    '{"a":',
    "null",
    "1e400",
    "NaN",
    "-Infinity",
    "💥" * 3,
    "a" * 200,
    "trace-ok-1",
    "\\",
    "\\u0000",
]
nasty_text = st.one_of(
    st.text(max_size=24),
    st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=3),
    st.sampled_from(NASTY_TEXT),
)
json_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([2**64, -(2**63) - 1, 10**30]),
    st.floats(),
    nasty_text,
)
json_value = st.recursive(
    json_scalar,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(nasty_text, inner, max_size=4),
    max_leaves=10,
)

MEGABYTE = 1024 * 1024
HUGE_BODIES = [
    json.dumps({"blob": "x" * MEGABYTE}),
    json.dumps({"blob": "x" * MEGABYTE})[: MEGABYTE // 2],  # truncated
    json.dumps({"blob": "é" * (MEGABYTE // 2)}, ensure_ascii=False),
    "[" * 5_000 + "]" * 5_000,  # deeper than any decoder takes
    json.dumps([[i, str(i)] for i in range(20_000)]),
]


def _dumps(value: Any) -> str:
    return json.dumps(value)  # escapes lone surrogates as \ud800, as a producer would


body_text = st.one_of(
    json_value.map(_dumps),
    st.tuples(json_value, st.integers(0, 40)).map(lambda t: _dumps(t[0])[: t[1]]),  # truncated JSON
    nasty_text,
    st.sampled_from(HUGE_BODIES),
    json_value.map(lambda v: sns_envelope(_dumps(v))),
    nasty_text.map(lambda s: sns_envelope(s)),  # an SNS envelope whose Message is not JSON
    json_value.map(lambda v: _dumps({"Type": "Notification", "TopicArn": v, "Message": v})),
)
trace_candidates = st.one_of(
    st.sampled_from(["T-1", "abc:def/ghi+jkl=", "x" * 128, "x" * 129, "a b", "a\nb", "é", ""]),
    nasty_text,
)


def b64(data: bytes | str) -> str:
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    return base64.b64encode(raw).decode()


def foreign_records() -> list[Any]:
    """Records of other event sources, and of none."""
    return [
        {"eventSource": "aws:s3", "eventName": "ObjectCreated:Put", "s3": {"object": {"key": "a"}}},
        {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}},
        {"eventSource": "aws:unknown", "messageId": 7, "body": None},
        sns_record({"n": 1}),
        sqs_record({"n": 1}),
        kinesis_record({"n": 1}),
        dynamodb_record("INSERT", new_image={"PK": "a", "n": 1}),
    ]


def mutate(record: Any, operations: list[tuple[tuple[str, ...], Any, bool]]) -> Any:
    """Delete a field, or replace it with junk, at each of the given paths."""
    for path, junk, delete in operations:
        target = record
        for key in path[:-1]:
            target = target.get(key) if isinstance(target, dict) else None
        if isinstance(target, dict):
            if delete:
                target.pop(path[-1], None)
            else:
                target[path[-1]] = junk
    return record


def mutations(paths: list[tuple[str, ...]]) -> st.SearchStrategy[list[tuple[tuple[str, ...], Any, bool]]]:
    return st.lists(st.tuples(st.sampled_from(paths), json_value, st.booleans()), min_size=1, max_size=3)


SQS_PATHS = [
    ("messageId",),
    ("body",),
    ("messageAttributes",),
    ("messageAttributes", "trace_id"),
    ("messageAttributes", "trace_id", "stringValue"),
    ("attributes",),
    ("attributes", "ApproximateReceiveCount"),
    ("eventSource",),
]
SNS_PATHS = [
    ("Sns",),
    ("Sns", "MessageId"),
    ("Sns", "Message"),
    ("Sns", "MessageAttributes"),
    ("Sns", "MessageAttributes", "trace_id"),
    ("Sns", "MessageAttributes", "trace_id", "Value"),
    ("Sns", "Subject"),
    ("EventSource",),
]
KINESIS_PATHS = [
    ("kinesis",),
    ("kinesis", "sequenceNumber"),
    ("kinesis", "data"),
    ("eventID",),
    ("eventSource",),
    ("eventSourceARN",),
]
DYNAMODB_PATHS = [
    ("dynamodb",),
    ("dynamodb", "SequenceNumber"),
    ("dynamodb", "NewImage"),
    ("dynamodb", "OldImage"),
    ("dynamodb", "Keys"),
    ("eventName",),
    ("eventID",),
    ("eventSource",),
]


@st.composite
def sqs_records(draw: Any) -> Any:
    kind = draw(st.sampled_from(["good", "good", "mutated", "junk", "foreign"]))
    if kind == "junk":
        return kind, draw(json_value)
    if kind == "foreign":
        return kind, draw(st.sampled_from(foreign_records()))
    record = sqs_record("{}", trace_id=draw(st.none() | trace_candidates))
    record["body"] = draw(body_text)  # set after: the factory cannot hash lone surrogates
    return kind, mutate(record, draw(mutations(SQS_PATHS))) if kind == "mutated" else record


@st.composite
def sns_records(draw: Any) -> Any:
    kind = draw(st.sampled_from(["good", "good", "mutated", "junk", "foreign"]))
    if kind == "junk":
        return kind, draw(json_value)
    if kind == "foreign":
        return kind, draw(st.sampled_from(foreign_records()))
    record = sns_record(
        "{}", trace_id=draw(st.none() | trace_candidates), subject=draw(st.none() | nasty_text)
    )
    record["Sns"]["Message"] = draw(body_text)
    return kind, mutate(record, draw(mutations(SNS_PATHS))) if kind == "mutated" else record


kinesis_data = st.one_of(
    json_value.map(lambda v: b64(_dumps(v))),
    body_text.map(b64),
    st.binary(max_size=40).map(b64),
    st.sampled_from(["!!!", "abc", "a", "====", "ÿÿÿÿ", "", "e30", " e30= ", "ZXlK\n", "e30=" * 3]),
    nasty_text,
    json_value,
    st.sampled_from([b64(body) for body in HUGE_BODIES[:3]]),
    st.tuples(json_value, json_value, json_value).map(
        lambda t: b64(_dumps({"lambda_kit_requeue": t[0], "data": t[1], "trace_id": t[2]}))
    ),
    st.tuples(st.integers(-3, 5), json_value).map(
        lambda t: b64(
            _dumps({"lambda_kit_requeue": {"attempt": t[0]}, "data": b64(_dumps(t[1])), "trace_id": "T"})
        )
    ),
)


@st.composite
def kinesis_records(draw: Any) -> Any:
    kind = draw(st.sampled_from(["good", "good", "mutated", "junk", "foreign"]))
    if kind == "junk":
        return kind, draw(json_value)
    if kind == "foreign":
        return kind, draw(st.sampled_from(foreign_records()))
    record = kinesis_record(None, raw_data="e30=")
    record["kinesis"]["data"] = draw(kinesis_data)
    return kind, mutate(record, draw(mutations(KINESIS_PATHS))) if kind == "mutated" else record


UNKNOWN_TYPES = ["ZZ", "s", "", "M2", "Bb", "SS ", "NULL\x00"]
number_text = st.one_of(
    st.integers().map(str),
    st.floats().map(str),
    nasty_text,
    st.sampled_from(["1" * 5_000, "1e999999", "-0", "0x10", "1_000", "NaN", "  7  "]),
)
attribute_leaf = st.one_of(
    nasty_text.map(lambda s: {"S": s}),
    number_text.map(lambda n: {"N": n}),
    json_value.map(lambda v: {"BOOL": v}),
    json_value.map(lambda v: {"NULL": v}),
    st.lists(nasty_text, max_size=3).map(lambda v: {"SS": v}),
    st.lists(number_text, max_size=3).map(lambda v: {"NS": v}),
    st.one_of(st.binary(max_size=8).map(b64), nasty_text, st.integers(-5, 10**12), json_value).map(
        lambda v: {"B": v}
    ),
    st.lists(st.binary(max_size=8).map(b64) | st.integers(0, 10**12), max_size=3).map(lambda v: {"BS": v}),
    st.tuples(st.sampled_from(UNKNOWN_TYPES), json_value).map(lambda t: {t[0]: t[1]}),
    json_value,  # not an attribute value at all
    st.just({}),
    st.just({"S": "a", "N": "1"}),
    json_value.map(lambda v: {"M": v}),
    json_value.map(lambda v: {"L": v}),
    json_value.map(lambda v: {"SS": v}),
)
attribute = st.recursive(
    attribute_leaf,
    lambda inner: (
        st.dictionaries(nasty_text, inner, max_size=3).map(lambda d: {"M": d})
        | st.lists(inner, max_size=3).map(lambda items: {"L": items})
    ),
    max_leaves=8,
)
image = st.one_of(
    st.dictionaries(st.sampled_from(["PK", "SK", "trace_id", "n"]) | nasty_text, attribute, max_size=4),
    st.fixed_dictionaries({"trace_id": nasty_text.map(lambda s: {"S": s})}),
    json_value,
)


@st.composite
def dynamodb_records(draw: Any) -> Any:
    kind = draw(st.sampled_from(["good", "good", "mutated", "junk", "foreign"]))
    if kind == "junk":
        return kind, draw(json_value)
    if kind == "foreign":
        return kind, draw(st.sampled_from(foreign_records()))
    record = dynamodb_record(draw(st.sampled_from(["INSERT", "MODIFY", "REMOVE"])), keys={"PK": "a"})
    change = record["dynamodb"]
    for name in ("NewImage", "OldImage", "Keys"):
        if draw(st.booleans()):
            change[name] = draw(image)
    return kind, mutate(record, draw(mutations(DYNAMODB_PATHS))) if kind == "mutated" else record


def events(records: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[Any, bool]]:
    """(event, whether it is a clean batch of the source, which must never be refused)."""
    batch = st.lists(records, max_size=6).map(
        lambda items: ({"Records": [record for _, record in items]}, all(kind == "good" for kind, _ in items))
    )
    return st.one_of(
        batch,
        batch,
        batch,
        json_value.map(lambda v: (v, False)),  # not a dict, or a dict with no Records
        json_value.filter(lambda v: not isinstance(v, list)).map(lambda v: ({"Records": v}, False)),
        st.just(({"Records": []}, True)),
    )


contexts = st.sampled_from([None, "ctx", "mock", "object"])


def make_context(kind: str | None) -> Any:
    return {None: None, "ctx": lambda_context(), "mock": MagicMock(), "object": object()}[kind]


# --- the function under the decorators -------------------------------------------------------

SECRET_TEXT = "boom at /var/task/app.py with password=hunter2"


class Recorder:
    """Stands for the user's function: notes each call, fails every ``fail_every``-th one."""

    def __init__(self, fail_every: int = 0) -> None:
        self.fail_every = fail_every
        self.calls: list[tuple[Any, Any]] = []
        self.raised: list[BaseException] = []

    def __call__(self, payload: Any, context: Any) -> Any:
        self.calls.append((current_record().id, current_trace_id()))
        if self.fail_every and len(self.calls) % self.fail_every == 0:
            error = RuntimeError(SECRET_TEXT)
            self.raised.append(error)
            raise error
        return payload


def records_of(event: Any) -> list[Any] | None:
    records = event.get("Records") if isinstance(event, dict) else None
    return records if isinstance(records, list) else None


def check_batch_response(response: Any) -> list[str]:
    assert isinstance(response, dict) and list(response) == ["batchItemFailures"], response
    failures = response["batchItemFailures"]
    assert isinstance(failures, list)
    for item in failures:
        assert isinstance(item, dict) and list(item) == ["itemIdentifier"], item
        assert isinstance(item["itemIdentifier"], str)
    return [item["itemIdentifier"] for item in failures]


def as_logged(text: str) -> str:
    """A string as a log line holds it: lone surrogates written as their escape text."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def check_error_lines(errors: list[dict[str, Any]]) -> None:
    """Each failed record: one ERROR line with its trace id, record id, a type and a clear reason."""
    for line in errors:
        assert line["message"] in ("record failed", "record could not be decoded"), line
        assert "trace_id" in line and "record_id" in line, line
        assert line["error_type"] in ("RuntimeError", "UndecodableRecord"), line
        assert isinstance(line["error"], str) and line["error"].strip(), line
        if line["error_type"] == "UndecodableRecord":
            assert line["message"] == "record could not be decoded"
            assert "traceback" not in line
        else:
            assert line["error"] == SECRET_TEXT and "Traceback" in line["traceback"]


def check_calls(fn: Recorder, lines: list[dict[str, Any]]) -> None:
    """Each call ran in the scope of the record the loop announced just before it: the record
    and trace id the function sees are those of its ``record received`` line, in order."""
    received = [line for line in lines if line["message"] == "record received"]
    assert [(as_logged(record_id), trace_id) for record_id, trace_id in fn.calls] == [
        (line["record_id"], line["trace_id"]) for line in received
    ]
    for record_id, trace_id in fn.calls:
        assert isinstance(record_id, str) and record_id
        assert is_valid_id(trace_id), trace_id


def check_refused(
    clean: bool, refused: BaseException | None, lines: list[dict[str, Any]], fn: Recorder
) -> None:
    """A refused event: never a clean batch of the source; one ERROR line, the function not called."""
    assert isinstance(refused, UnsupportedEvent) and not clean
    assert fn.calls == []
    [error] = lines
    assert (
        error["level"] == "ERROR"
        and error["error_type"] == "UnsupportedEvent"
        and error["error"] == as_logged(str(refused))
    )


# --- the properties ---------------------------------------------------------------------------


@HOSTILE
@given(
    event=events(sqs_records()),
    fail_every=st.sampled_from([0, 1, 2, 3]),
    json_flag=st.booleans(),
    context=contexts,
    codec_name=st.sampled_from(CODECS),
)
def test_sqs_handler_survives_any_event(event, fail_every, json_flag, context, codec_name):
    event, clean = event
    fn = Recorder(fail_every)
    handler = sqs_handler(json=json_flag)(fn)
    refused = None
    with using_codec(codec_name), captured() as out:
        try:
            response = handler(event, make_context(context))
        except UnsupportedEvent as error:
            refused = error
    lines = parse_lines(out)
    if refused is not None:
        return check_refused(clean, refused, lines, fn)
    records = records_of(event)
    assert records is not None
    failed_ids = check_batch_response(response)
    errors = of_level(lines, "ERROR")
    check_error_lines(errors)
    check_calls(fn, lines)
    undecodable = [line for line in errors if line["error_type"] == "UndecodableRecord"]
    # Every record reached the function or failed undecoded; the batch never stops.
    assert len(fn.calls) + len(undecodable) == len(records)
    assert len(errors) - len(undecodable) == len(fn.raised)
    assert [as_logged(item) for item in failed_ids] == [line["record_id"] for line in errors]
    message_ids = {
        r.get("messageId") for r in records if isinstance(r, dict) and isinstance(r.get("messageId"), str)
    }
    assert all(item in message_ids or item == "" for item in failed_ids)


@HOSTILE
@given(
    event=events(sns_records()),
    fail_every=st.sampled_from([0, 1, 2]),
    json_flag=st.booleans(),
    context=contexts,
    codec_name=st.sampled_from(CODECS),
)
def test_sns_handler_raises_only_the_functions_error_or_a_decode_error(
    event, fail_every, json_flag, context, codec_name
):
    event, clean = event
    fn = Recorder(fail_every)
    handler = sns_handler(json=json_flag)(fn)
    raised: BaseException | None = None
    with using_codec(codec_name), captured() as out:
        try:
            response = handler(event, make_context(context))
        except UnsupportedEvent as error:
            return check_refused(clean, error, parse_lines(out), fn)
        except UndecodableRecord as error:
            raised = error
        except RuntimeError as error:
            assert fn.raised and error is fn.raised[0]
            raised = error
        else:
            assert response is None
    lines = parse_lines(out)
    records = records_of(event)
    assert records is not None
    errors = of_level(lines, "ERROR")
    check_error_lines(errors)
    check_calls(fn, lines)
    undecodable = [line for line in errors if line["error_type"] == "UndecodableRecord"]
    assert len(fn.calls) + len(undecodable) == len(records)
    assert (raised is None) == (not errors)
    if raised is not None:  # the first failure is the one re-raised, with the reason it logged
        assert type(raised).__name__ == errors[0]["error_type"]
        assert str(raised) == errors[0]["error"]


def run_stream(handler: Any, event: tuple[Any, bool], fn: Recorder, context: Any, codec_name: str) -> None:
    event, clean = event
    with using_codec(codec_name), captured() as out:
        try:
            response = handler(event, make_context(context))
        except UnsupportedEvent as error:
            return check_refused(clean, error, parse_lines(out), fn)
    check_stream(event, fn, response, parse_lines(out))


def check_stream(event: Any, fn: Recorder, response: Any, lines: list[dict[str, Any]]) -> None:
    records = records_of(event)
    assert records is not None
    failed_ids = check_batch_response(response)
    errors = of_level(lines, "ERROR")
    check_error_lines(errors)
    check_calls(fn, lines)
    assert len(failed_ids) <= 1 and len(errors) == len(failed_ids)
    stopped = [line for line in lines if line["message"].startswith("stopped the batch")]
    if not failed_ids:
        assert len(fn.calls) == len(records) and not stopped
        return
    [error] = errors
    assert [as_logged(item) for item in failed_ids] == [error["record_id"]]
    index = len(fn.calls) - (1 if error["error_type"] == "RuntimeError" else 0)
    not_processed = len(records) - index - 1  # records after the failed one never reach the function
    assert [line["not_processed"] for line in stopped] == ([not_processed] if not_processed else [])


@HOSTILE
@given(
    event=events(kinesis_records()),
    fail_every=st.sampled_from([0, 2, 3]),
    json_flag=st.booleans(),
    context=contexts,
    codec_name=st.sampled_from(CODECS),
)
def test_stream_handler_survives_any_kinesis_event(event, fail_every, json_flag, context, codec_name):
    fn = Recorder(fail_every)
    run_stream(stream_handler(json=json_flag)(fn), event, fn, context, codec_name)


@HOSTILE
@given(
    event=events(dynamodb_records()),
    fail_every=st.sampled_from([0, 2, 3]),
    context=contexts,
    codec_name=st.sampled_from(CODECS),
)
def test_stream_handler_survives_any_dynamodb_event(event, fail_every, context, codec_name):
    fn = Recorder(fail_every)
    run_stream(stream_handler(fn), event, fn, context, codec_name)


# --- named cases: each failure says what is wrong ---------------------------------------------


def run(handler: Any, event: Any) -> tuple[Any, list[dict[str, Any]]]:
    with captured() as out:
        response = handler(event, lambda_context())
    return response, parse_lines(out)


@pytest.mark.parametrize("codec_name", CODECS)
@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ("not a record", "record is not a JSON object"),
        ({"body": "{}"}, "record has no messageId"),
        ({"messageId": "", "body": "{}"}, "record has no messageId"),
        ({"messageId": 42, "body": "{}"}, "record has no messageId"),
        ({"messageId": "m-1"}, "message body is missing or not a string"),
        ({"messageId": "m-1", "body": {"a": 1}}, "message body is missing or not a string"),
        ({"messageId": "m-1", "body": '{"url": "/a", '}, "message body is not valid JSON"),
        ({"messageId": "m-1", "body": "not json"}, "message body is not valid JSON"),
        ({"messageId": "m-1", "body": ""}, "message body is not valid JSON"),
        ({"messageId": "m-1", "body": sns_envelope("{trunc")}, "SNS message in the body is not valid JSON"),
    ],
)
def test_sqs_undecodable_record_fails_with_its_reason(record, reason, codec_name):
    fn = Recorder()
    good = sqs_record({"ok": 1})
    with using_codec(codec_name):
        response, lines = run(sqs_handler(fn), {"Records": [record, good]})
    [error] = of_level(lines, "ERROR")
    assert error["message"] == "record could not be decoded" and error["error"].startswith(reason)
    expected_id = (
        record.get("messageId")
        if isinstance(record, dict) and isinstance(record.get("messageId"), str)
        else ""
    )
    assert response == {"batchItemFailures": [{"itemIdentifier": expected_id}]}
    assert [call[0] for call in fn.calls] == [good["messageId"]]  # the good record still ran


@pytest.mark.parametrize("decorator", [sqs_handler, sns_handler, stream_handler])
@pytest.mark.parametrize(
    ("event", "looks_like"),
    [
        (None, "an empty event (null)"),
        ("Records", "a str, not a JSON object"),
        (42, "a int, not a JSON object"),
        ([], "an empty top-level list"),
        ([{"a": 1}], "a top-level list, as EventBridge Pipes sends"),
        ({}, "an empty JSON object"),
        ({"records": []}, "a JSON object with keys records"),
        ({"Records": None}, "an event whose Records is not a list"),
        ({"Records": {"0": {}}}, "an event whose Records is not a list"),
        ({"Records": "[]"}, "an event whose Records is not a list"),
        ({"Records": [{"a": 1}]}, "an event whose Records no source recognizes"),
    ],
)
def test_event_without_a_records_list_is_refused_with_one_clear_error(decorator, event, looks_like):
    fn = Recorder()
    with captured() as out, pytest.raises(UnsupportedEvent) as refused:
        decorator(fn)(event, lambda_context())
    check_refused(False, refused.value, parse_lines(out), fn)
    assert str(refused.value).startswith(
        f"{decorator.__name__} cannot process {looks_like}: {decorator.__name__} processes "
    )


@pytest.mark.parametrize("decorator", [sqs_handler, sns_handler, stream_handler])
def test_empty_batch_is_a_quiet_success(decorator):
    fn = Recorder()
    response, lines = run(decorator(fn), {"Records": []})
    assert response == (None if decorator is sns_handler else {"batchItemFailures": []})
    assert lines == [] and fn.calls == []


def test_sns_undecodable_message_raises_a_clear_decode_error():
    fn = Recorder()
    record = sns_record("{}")
    record["Sns"]["Message"] = '{"url": '
    with captured() as out, pytest.raises(UndecodableRecord, match="Sns.Message is not valid JSON"):
        sns_handler(fn)({"Records": [record]}, None)
    [error] = of_level(parse_lines(out), "ERROR")
    assert error["record_id"] == record["Sns"]["MessageId"] and fn.calls == []


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ("!!!not base64", "kinesis.data is not valid base64"),
        ("abc", "kinesis.data is not valid base64"),
        ("ÿÿÿÿ", "kinesis.data is not valid base64"),
        (None, "kinesis.data is not valid base64"),
        (12, "kinesis.data is not valid base64"),
        (b64('{"url": "/a"'), "kinesis.data is not valid JSON"),
        (b64(b"\xff\xfe\x00"), "kinesis.data is not valid JSON"),
    ],
)
def test_kinesis_undecodable_record_stops_the_batch_with_its_reason(data, reason):
    fn = Recorder()
    first, bad, after = kinesis_record({"n": 1}), kinesis_record({"n": 2}), kinesis_record({"n": 3})
    bad["kinesis"]["data"] = data
    response, lines = run(stream_handler(fn), {"Records": [first, bad, after]})
    [error] = of_level(lines, "ERROR")
    assert error["error"].startswith(reason) and error["record_id"] == bad["kinesis"]["sequenceNumber"]
    assert response == {"batchItemFailures": [{"itemIdentifier": bad["kinesis"]["sequenceNumber"]}]}
    assert [call[0] for call in fn.calls] == [first["kinesis"]["sequenceNumber"]]


@pytest.mark.parametrize(
    "new_image",
    [
        {"x": {"ZZ": "1"}},
        {"x": {"S": "a", "N": "1"}},
        {"x": {}},
        {"x": "plain"},
        {"x": {"N": "twelve"}},
        {"x": {"M": [1, 2]}},
        {"x": {"L": {"a": 1}}},
        {"x": {"NS": ["1", "x"]}},
        {"x": {"B": "abc"}},  # bad base64 padding
        {"x": {"SS": [["unhashable"]]}},
        {"x": {"M": {"y": {"L": [{"QQ": 1}]}}}},
    ],
)
def test_dynamodb_image_with_unknown_or_malformed_types_fails_with_its_reason(new_image):
    fn = Recorder()
    bad = dynamodb_record("INSERT", keys={"PK": "a"})
    bad["dynamodb"]["NewImage"] = new_image
    response, lines = run(stream_handler(fn), {"Records": [bad]})
    [error] = of_level(lines, "ERROR")
    assert error["error"].startswith("stream image is malformed (")
    assert response == {"batchItemFailures": [{"itemIdentifier": bad["dynamodb"]["SequenceNumber"]}]}
    assert fn.calls == []


def test_dynamodb_unknown_type_names_the_type():
    bad = dynamodb_record("INSERT", keys={"PK": "a"})
    bad["dynamodb"]["NewImage"] = {"x": {"ZZ": "1"}}
    _, lines = run(stream_handler(Recorder()), {"Records": [bad]})
    assert "unknown DynamoDB attribute type 'ZZ'" in of_level(lines, "ERROR")[0]["error"]


@pytest.mark.parametrize("binary", [{"B": 10**12}, {"BS": [10**12]}, {"B": 10**9}])
def test_dynamodb_binary_holding_a_number_fails_without_allocating_it(binary):
    """{"B": 10**9} once meant bytes(10**9): a gigabyte of zeros (and 10**12 killed the process)."""
    bad = dynamodb_record("INSERT", keys={"PK": "a"})
    bad["dynamodb"]["NewImage"] = {"x": binary}
    started = time.perf_counter()
    response, lines = run(stream_handler(Recorder()), {"Records": [bad]})
    assert time.perf_counter() - started < 1.0  # a bound against a gigabyte, not a speed claim
    [error] = of_level(lines, "ERROR")
    assert "not base64 text" in error["error"]
    assert response == {"batchItemFailures": [{"itemIdentifier": bad["dynamodb"]["SequenceNumber"]}]}


def test_dynamodb_deeply_nested_image_fails_cleanly():
    value: Any = {"S": "leaf"}
    for _ in range(5_000):
        value = {"M": {"a": value}}
    bad = dynamodb_record("INSERT", keys={"PK": "a"})
    bad["dynamodb"]["NewImage"] = {"x": value}
    response, lines = run(stream_handler(Recorder()), {"Records": [bad]})
    assert response == {"batchItemFailures": [{"itemIdentifier": bad["dynamodb"]["SequenceNumber"]}]}
    assert of_level(lines, "ERROR")[0]["error"].startswith("stream image is malformed")


@pytest.mark.parametrize("codec_name", CODECS)
def test_huge_sqs_body_reaches_the_function_and_its_log_line_is_cut(codec_name):
    body = {"blob": "x" * MEGABYTE, "url": "/a"}
    fn = Recorder()
    with using_codec(codec_name):
        response, lines = run(sqs_handler(fn), {"Records": [sqs_record(body)]})
    assert response == {"batchItemFailures": []} and len(fn.calls) == 1
    [received] = [line for line in lines if line["message"] == "record received"]
    assert received["payload"]["url"] == "/a" and "...[truncated" in received["payload"]["blob"]


@pytest.mark.parametrize("decorator", [sqs_handler, sns_handler, stream_handler])
@pytest.mark.parametrize(
    ("records", "looks_like"),
    [
        (
            [
                {"eventSource": "aws:codecommit", "codecommit": {"references": []}},
                {"eventSource": "aws:unknown"},
            ],
            "an event mixing records of aws:codecommit, aws:unknown",
        ),
        (
            [{"eventSource": "aws:codecommit", "codecommit": {"references": []}}],
            "an event with aws:codecommit records",
        ),
    ],
)
def test_records_of_a_source_no_decorator_handles_are_refused(decorator, records, looks_like):
    fn = Recorder()
    with captured() as out, pytest.raises(UnsupportedEvent, match=f"cannot process {looks_like}"):
        decorator(fn)({"Records": records}, None)
    assert fn.calls == [] and len(of_level(parse_lines(out), "ERROR")) == 1


@pytest.mark.parametrize(
    ("decorator", "other", "fits"),
    [
        (sqs_handler, sns_record({"n": 1}), "sns_handler"),
        (sns_handler, sqs_record({"n": 1}), "sqs_handler"),
        (stream_handler, sqs_record({"n": 1}), "sqs_handler"),
        (sqs_handler, kinesis_record({"n": 1}), "stream_handler"),
        (sqs_handler, dynamodb_record("INSERT", new_image={"PK": "a"}), "stream_handler"),
    ],
)
def test_another_sources_batch_is_refused_naming_the_decorator_that_fits(decorator, other, fits):
    """Not one failure with an empty id (which SNS ignores): the whole event is refused."""
    fn = Recorder()
    good = {sqs_handler: sqs_record, sns_handler: sns_record, stream_handler: kinesis_record}[decorator](
        {"n": 2}
    )
    for records, says in (
        ([other], f": use {fits}$"),
        ([good, other], "mixing records of"),
        ([other, good], "mixing records of"),
    ):
        with captured() as out, pytest.raises(UnsupportedEvent, match=says):
            decorator(fn)({"Records": records}, None)
        assert fn.calls == [] and len(parse_lines(out)) == 1


# --- EventBridge and S3 -----------------------------------------------------------------------------

EVENTBRIDGE_PATHS = [("id",), ("detail",), ("detail", "trace_id"), ("detail-type",), ("source",), ("time",)]
S3_RECORD_PATHS = [
    ("eventSource",),
    ("eventName",),
    ("eventTime",),
    ("s3",),
    ("s3", "bucket"),
    ("s3", "bucket", "name"),
    ("s3", "object"),
    ("s3", "object", "key"),
    ("s3", "object", "size"),
    ("responseElements",),
    ("responseElements", "x-amz-request-id"),
]
S3_EVENTBRIDGE_PATHS = [
    ("id",),
    ("detail",),
    ("detail", "bucket"),
    ("detail", "bucket", "name"),
    ("detail", "object"),
    ("detail", "object", "key"),
    ("detail", "request-id"),
    ("detail", "reason"),
    ("detail", "deletion-type"),
    ("detail-type",),
]
key_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)


@st.composite
def eventbridge_events(draw: Any) -> tuple[Any, bool]:
    kind = draw(st.sampled_from(["good", "good", "mutated", "junk"]))
    if kind == "junk":
        return draw(json_value), False
    event = eventbridge_event(draw(st.dictionaries(nasty_text, json_value, max_size=3)))
    event["detail"]["trace_id"] = draw(st.none() | trace_candidates)
    if draw(st.booleans()):
        event["detail"] = draw(body_text)  # JSON text, or not
    return (mutate(event, draw(mutations(EVENTBRIDGE_PATHS))) if kind == "mutated" else event), kind == "good"


@st.composite
def s3_object_records(draw: Any) -> Any:
    kind = draw(st.sampled_from(["good", "good", "mutated", "junk", "foreign"]))
    if kind == "junk":
        return draw(json_value)
    if kind == "foreign":
        return draw(st.sampled_from(foreign_records()))
    record = s3_record(
        draw(key_text), event_name=draw(st.sampled_from(["ObjectCreated:Put", "ObjectRemoved:Delete"]))
    )
    if draw(st.booleans()):
        record["s3"]["object"]["key"] = draw(nasty_text)  # anything, encoded or not
    return mutate(record, draw(mutations(S3_RECORD_PATHS))) if kind == "mutated" else record


notification_text = st.one_of(
    st.lists(s3_object_records(), max_size=3).map(lambda records: _dumps({"Records": records})),
    st.just(_dumps(s3_test_message())),
    st.lists(s3_object_records(), min_size=1, max_size=2).map(
        lambda records: sns_envelope(_dumps({"Records": records}))
    ),
    body_text,
)


@st.composite
def s3_events(draw: Any) -> tuple[Any, str]:
    """(event, its envelope): S3 records delivered directly, SQS and SNS messages carrying S3
    notifications (or not), S3's EventBridge events; each possibly broken."""
    envelope = draw(st.sampled_from(["direct", "sqs", "sns", "eventbridge"]))
    if envelope == "direct":
        return {"Records": draw(st.lists(s3_object_records(), max_size=4))}, envelope
    if envelope == "eventbridge":
        event = s3_eventbridge_event(
            draw(key_text), detail_type=draw(st.sampled_from(["Object Created", "Object Deleted"]))
        )
        return (
            mutate(event, draw(mutations(S3_EVENTBRIDGE_PATHS))) if draw(st.booleans()) else event
        ), envelope
    messages = []
    for text in draw(st.lists(notification_text, min_size=1, max_size=4)):
        message = sqs_record("{}") if envelope == "sqs" else sns_record("{}")
        if envelope == "sqs":
            message["body"] = text
        else:
            message["Sns"]["Message"] = text
        messages.append(
            mutate(message, draw(mutations(SQS_PATHS if envelope == "sqs" else SNS_PATHS)))
            if draw(st.integers(0, 4)) == 0
            else message
        )
    return {"Records": messages}, envelope


class Ran:
    """What one invocation did: the response or the exception raised, and the lines written."""

    def __init__(self, handler: Any, event: Any, fn: Recorder, context: Any, codec_name: str) -> None:
        self.response: Any = None
        self.raised: BaseException | None = None
        with using_codec(codec_name), captured() as out:
            try:
                self.response = handler(event, make_context(context))
            except (UnsupportedEvent, UndecodableRecord) as error:
                self.raised = error
            except RuntimeError as error:
                assert fn.raised and error is fn.raised[0]  # only the function's own error
                self.raised = error
        self.lines = parse_lines(out)
        self.errors = of_level(self.lines, "ERROR")
        if not isinstance(self.raised, UnsupportedEvent):
            check_error_lines(self.errors)
            check_calls(fn, self.lines)


@HOSTILE
@given(
    event=eventbridge_events(),
    fail_every=st.sampled_from([0, 1]),
    context=contexts,
    codec_name=st.sampled_from(CODECS),
)
def test_eventbridge_handler_raises_only_the_functions_error_a_decode_error_or_a_refusal(
    event, fail_every, context, codec_name
):
    event, clean = event
    fn = Recorder(fail_every)
    ran = Ran(eventbridge_handler(fn), event, fn, context, codec_name)
    if isinstance(ran.raised, UnsupportedEvent):
        return check_refused(clean, ran.raised, ran.lines, fn)
    undecodable = [line for line in ran.errors if line["error_type"] == "UndecodableRecord"]
    assert len(fn.calls) + len(undecodable) == 1  # one event, one record
    assert ran.response is None and (ran.raised is None) == (not ran.errors) and len(ran.errors) <= 1
    if fn.calls:
        assert fn.calls[0][0] == event["id"]


@HOSTILE
@given(
    event=s3_events(),
    fail_every=st.sampled_from([0, 1, 2]),
    context=contexts,
    codec_name=st.sampled_from(CODECS),
)
def test_s3_handler_routes_every_failure_the_way_its_envelope_retries(event, fail_every, context, codec_name):
    event, envelope = event
    fn = Recorder(fail_every)
    ran = Ran(s3_handler(fn), event, fn, context, codec_name)
    if isinstance(ran.raised, UnsupportedEvent):
        return check_refused(False, ran.raised, ran.lines, fn)
    response, raised, lines, errors = ran.response, ran.raised, ran.lines, ran.errors
    skipped = [line for line in lines if line["message"] == "skipped an S3 test event"]
    assert all(line["level"] == "INFO" for line in skipped)
    if envelope == "sqs":
        assert raised is None
        failed_ids = check_batch_response(response)
        assert len(failed_ids) == len(set(failed_ids))  # each failed message once
        assert {as_logged(item) for item in failed_ids} == {line["record_id"] for line in errors}
        message_ids = {
            r["messageId"]
            for r in event["Records"]
            if isinstance(r, dict) and isinstance(r.get("messageId"), str)
        }
        assert all(item in message_ids or item == "" for item in failed_ids)
        assert not {call[0] for call in fn.calls} - message_ids  # objects report under their message
        return
    assert response is None
    assert (raised is None) == (not errors)
    if raised is not None:  # the first failure is the one re-raised, with the reason it logged
        assert type(raised).__name__ == errors[0]["error_type"] and str(raised) == errors[0]["error"]
    if envelope == "eventbridge":
        assert len(fn.calls) + len(errors) - len(fn.raised) == 1


# --- fd 1 itself: what a real process writes ------------------------------------------------------


@pytest.mark.parametrize("codec_name", CODECS)
def test_hostile_batch_writes_only_valid_lines_to_fd_1(codec_name):
    """In a fresh process with a strict UTF-8 pipe: a lone surrogate once crashed the batch
    under ujson (written raw, it cannot be encoded)."""
    script = textwrap.dedent(
        """
        import json
        from lambda_kit import sqs_handler
        from lambda_kit.testing import sqs_record

        bodies = ['"\\\\ud800"', '{"k\\\\udfff": "\\\\ud800x"}', '"\\\\u2028\\\\u0085"', '{"a": 1', "\\u0000"]
        records = []
        for body in bodies:
            record = sqs_record("{}")
            record["body"] = body
            records.append(record)
        response = sqs_handler(lambda message, context: message)({"Records": records}, None)
        print(json.dumps({"level": "INFO", "response": response}), flush=True)
        """
    )
    env = {"LAMBDA_KIT_JSON": codec_name, "PYTHONIOENCODING": "utf-8:strict", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        env=env,
        timeout=60,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    texts = done.stdout.decode("utf-8").splitlines(keepends=True)
    response = json.loads(texts.pop())["response"]
    lines = [parse_line(text) for text in texts]
    assert {line["message"] for line in lines} >= {"record received", "record processed"}
    assert len(response["batchItemFailures"]) == len(of_level(lines, "ERROR")) >= 1


# --- Kafka ---------------------------------------------------------------------------------------

KAFKA_PATHS = [("topic",), ("partition",), ("offset",), ("key",), ("value",), ("headers",), ("timestamp",)]
header_lists = st.one_of(
    st.lists(
        st.dictionaries(nasty_text, st.lists(st.integers(-300, 300), max_size=4), max_size=2), max_size=3
    ),
    st.lists(
        st.fixed_dictionaries(
            {"trace_id": trace_candidates.map(lambda t: list(t.encode("utf-8", "surrogatepass")))}
        ),
        max_size=1,
    ),
    json_value,
)


@st.composite
def kafka_records(draw: Any) -> Any:
    kind = draw(st.sampled_from(["good", "good", "mutated", "junk", "foreign"]))
    if kind == "junk":
        return kind, draw(json_value)
    if kind == "foreign":
        return kind, draw(st.sampled_from(foreign_records()))
    record = kafka_record(
        None, topic="t", partition=draw(st.integers(0, 2)), offset=draw(st.integers(0, 10**12))
    )
    record["value"] = draw(kinesis_data)
    record["headers"] = draw(header_lists)
    return kind, mutate(record, draw(mutations(KAFKA_PATHS))) if kind == "mutated" else record


@st.composite
def kafka_events(draw: Any) -> Any:
    """(event, clean): an event whose records map holds lists of Kafka records, or junk."""
    if draw(st.integers(0, 4)) == 0:
        return draw(json_value), False
    partitions = draw(
        st.dictionaries(
            st.sampled_from(["t-0", "t-1", "t-2", "x"]), st.lists(kafka_records(), max_size=4), max_size=3
        )
    )
    source = draw(
        st.sampled_from(["aws:kafka", "SelfManagedKafka", "aws:SelfManagedKafka", "aws:kinesis", None])
    )
    event = {
        "eventSource": source,
        "records": {key: [record for _, record in batch] for key, batch in partitions.items()},
    }
    if draw(st.integers(0, 5)) == 0:
        event["records"] = draw(json_value)
    return event, source is not None and source != "aws:kinesis"


@HOSTILE
@given(
    event=kafka_events(),
    fail_every=st.sampled_from([0, 1, 2, 3]),
    json_flag=st.booleans(),
    on_failure=st.sampled_from(["raise", "report"]),
    context=contexts,
    codec_name=st.sampled_from(CODECS),
)
def test_kafka_handler_survives_any_event(event, fail_every, json_flag, on_failure, context, codec_name):
    event, kafka_shaped = event
    fn = Recorder(fail_every)
    handler = kafka_handler(json=json_flag, on_failure=on_failure)(fn)
    raised: BaseException | None = None
    response: Any = None
    with using_codec(codec_name), captured() as out:
        try:
            response = handler(event, make_context(context))
        except UnsupportedEvent as error:
            return check_refused(False, error, parse_lines(out), fn)
        except (UndecodableRecord, RuntimeError) as error:
            raised = error
    assert kafka_shaped
    lines = parse_lines(out)
    errors = of_level(lines, "ERROR")
    check_error_lines(errors)
    check_calls(fn, lines)
    if raised is not None:  # the first failure, raised: Lambda retries the whole batch
        assert errors and type(raised).__name__ == errors[0]["error_type"]
        assert isinstance(raised, UndecodableRecord) or raised is fn.raised[0]
        return
    assert not errors or on_failure == "report"
    if on_failure == "raise":
        assert response is None
        return
    assert isinstance(response, dict) and list(response) == ["batchItemFailures"]
    named = [item["itemIdentifier"] for item in response["batchItemFailures"]]
    assert all(set(name) == {"partition", "offset"} and type(name["offset"]) is int for name in named)
    assert len(named) >= len(errors)  # every failure, and the records held back behind them
    failed = {(name["partition"], name["offset"]) for name in named}
    for record_id, _, _ in fn.calls:  # a record held back behind a failure never ran
        partition, _, offset = record_id.rpartition(":")
        earlier = [o for p, o in failed if p == partition and o < int(offset)]
        assert not earlier or record_id in {line["record_id"] for line in errors}


# --- EventBridge Pipes batches ------------------------------------------------------------------


def pipes_of(records: st.SearchStrategy[Any], flatten: bool = False) -> st.SearchStrategy[tuple[Any, bool]]:
    def as_list(items: list[Any]) -> tuple[Any, bool]:
        batch = []
        for _, record in items:
            if flatten and isinstance(record, dict) and isinstance(record.get("kinesis"), dict):
                record = {**record["kinesis"], **{k: v for k, v in record.items() if k != "kinesis"}}
            batch.append(record)
        return batch, bool(items) and all(kind == "good" for kind, _ in items)

    return st.lists(records, max_size=6).map(as_list)


@HOSTILE
@given(
    event=pipes_of(sqs_records()),
    fail_every=st.sampled_from([0, 1, 2]),
    json_flag=st.booleans(),
    codec_name=st.sampled_from(CODECS),
)
def test_sqs_handler_survives_any_pipes_batch(event, fail_every, json_flag, codec_name):
    batch, clean = event
    fn = Recorder(fail_every)
    with using_codec(codec_name), captured() as out:
        try:
            response = sqs_handler(json=json_flag)(fn)(batch, None)
        except UnsupportedEvent as error:
            return check_refused(clean, error, parse_lines(out), fn)
    errors = of_level(parse_lines(out), "ERROR")
    check_error_lines(errors)
    failed_ids = check_batch_response(response)
    undecodable = [line for line in errors if line["error_type"] == "UndecodableRecord"]
    assert len(fn.calls) + len(undecodable) == len(batch)
    # each failed record named once (Pipes fails the whole batch on an empty name)
    assert [as_logged(item) for item in failed_ids] == list(
        dict.fromkeys(line["record_id"] for line in errors)
    )


@HOSTILE
@given(
    event=st.one_of(pipes_of(kinesis_records(), flatten=True), pipes_of(dynamodb_records())),
    fail_every=st.sampled_from([0, 2, 3]),
    codec_name=st.sampled_from(CODECS),
)
def test_stream_handler_survives_any_pipes_batch(event, fail_every, codec_name):
    batch, clean = event
    fn = Recorder(fail_every)
    with using_codec(codec_name), captured() as out:
        try:
            response = stream_handler(fn)(batch, None)
        except UnsupportedEvent as error:
            return check_refused(clean, error, parse_lines(out), fn)
    lines = parse_lines(out)
    errors = of_level(lines, "ERROR")
    check_error_lines(errors)
    check_calls(fn, lines)
    named = check_batch_response(response)
    assert len(errors) <= 1
    if not errors:
        assert named == [] and len(fn.calls) == len(batch)
        return
    # the failed record and every record after it are named, each by its eventID ("" when it has none)
    event_ids = [
        r.get("eventID") if isinstance(r, dict) and isinstance(r.get("eventID"), str) else "" for r in batch
    ]
    failed_at = len(fn.calls) - (1 if errors[0]["error_type"] == "RuntimeError" else 0)
    assert 1 <= len(named) <= len(batch) - failed_at  # nothing before the failure is named
    assert all(name in event_ids[failed_at:] or name == "" for name in named)
    if len(batch) - failed_at > 1 and all(event_ids) and "" not in named:  # the records it stopped before are
        # named too (an empty name fails the whole batch at Pipes: every record comes back)
        assert len(named) > 1 or len(set(event_ids[failed_at:])) == 1
