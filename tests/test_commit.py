"""A decorator's ``commit=``: what each answer of the batch commit does to each record it was given.

The records the function accepted wait for the commit; after it, each one is logged as processed
or failed, and reported, by what the commit answered (nothing, the records or ids it refuses, or
an error)."""

from __future__ import annotations

import time

import pytest
from _logs import of_level, read_lines, with_message

from lambda_kit import sqs_handler, stream_handler
from lambda_kit.testing import kinesis_event, lambda_context, sqs_event, sqs_record

TRACE_IDS = ["t-1", "t-2", "t-3"]


def committed_by(commit):
    """An ``sqs_handler`` whose function returns the message's ``n`` times ten, with ``commit``."""
    given = []

    def record_and_answer(items):
        given.append([(record.id, result) for record, result in items])
        return commit(items)

    handler = sqs_handler(commit=record_and_answer)(lambda message, context: message["n"] * 10)
    return handler, given


def run(handler, event, capfd):
    response = handler(event, lambda_context())
    return response, read_lines(capfd)


def ids(event):
    return [raw["messageId"] for raw in event["Records"]]


def assert_processed(lines, event, expected_results):
    """One ``record processed`` line per accepted record, after the commit, in batch order."""
    processed = with_message(lines, "record processed")
    assert [line["record_id"] for line in processed] == [ids(event)[index] for index in expected_results]
    for line, index in zip(processed, expected_results, strict=True):
        assert line["level"] == "INFO" and line["source"] == "sqs" and line["outcome"] == "ok"
        assert line["trace_id"] == TRACE_IDS[index]
        assert line["result"] == (index + 1) * 10
        assert isinstance(line["duration_ms"], float | int) and line["duration_ms"] >= 0


def assert_failed_at_commit(lines, event, failed, error_type, error):
    errors = of_level(lines, "ERROR")
    assert [line["record_id"] for line in errors] == [ids(event)[index] for index in failed]
    for line, index in zip(errors, failed, strict=True):
        assert line["message"] == "record failed at commit"
        assert line["source"] == "sqs" and line["outcome"] == "failed" and line["attempt"] == 1
        assert line["trace_id"] == TRACE_IDS[index]
        assert line["error_type"] == error_type and line["error"] == error
        assert error in line["traceback"]
        assert line["duration_ms"] >= 0


@pytest.mark.parametrize("answer", [None, [], ()], ids=["None", "empty list", "empty tuple"])
def test_a_commit_that_refuses_nothing_processes_every_record(capfd, answer):
    handler, given = committed_by(lambda items: answer)
    event = sqs_event({"n": 1}, {"n": 2}, {"n": 3}, trace_id=TRACE_IDS)
    response, lines = run(handler, event, capfd)
    assert response == {"batchItemFailures": []}
    assert given == [list(zip(ids(event), [10, 20, 30], strict=True))]
    assert_processed(lines, event, [0, 1, 2])
    assert not of_level(lines, "ERROR")


@pytest.mark.parametrize("by", ["record", "id"])
def test_a_commit_that_returns_records_or_ids_fails_just_those(capfd, by):
    def commit(items):
        record = items[1][0]
        return [record if by == "record" else record.id]

    handler, _ = committed_by(commit)
    event = sqs_event({"n": 1}, {"n": 2}, {"n": 3}, trace_id=TRACE_IDS)
    response, lines = run(handler, event, capfd)
    assert response == {"batchItemFailures": [{"itemIdentifier": ids(event)[1]}]}
    assert_processed(lines, event, [0, 2])
    assert_failed_at_commit(
        lines, event, [1], "CommitFailed", "the batch commit reported this record as failed"
    )


def test_a_commit_that_raises_fails_every_record_it_was_given(capfd):
    def commit(items):
        raise ConnectionError("table unreachable")

    handler, _ = committed_by(commit)
    event = sqs_event({"n": 1}, {"n": 2}, {"n": 3}, trace_id=TRACE_IDS)
    response, lines = run(handler, event, capfd)
    assert response == {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in ids(event)]}
    assert not with_message(lines, "record processed")
    assert_failed_at_commit(lines, event, [0, 1, 2], "ConnectionError", "table unreachable")


def test_a_commit_that_returns_no_collection_of_records_fails_every_record(capfd):
    """An answer that cannot be read as records (here a number) means nothing can be trusted as
    done: every record fails, with the error of reading it."""
    handler, _ = committed_by(lambda items: 3)
    event = sqs_event({"n": 1}, {"n": 2}, {"n": 3}, trace_id=TRACE_IDS)
    response, lines = run(handler, event, capfd)
    assert response == {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in ids(event)]}
    assert_failed_at_commit(
        lines,
        event,
        [0, 1, 2],
        "TypeError",
        (
            "the commit returned a value of type int: return the records (or record ids) that failed, "
            "or None, or raise to fail them all"
        ),
    )


@pytest.mark.parametrize("answer", [{"batchItemFailures": []}, "id-1", b"id-1"], ids=["dict", "str", "bytes"])
def test_a_commit_answer_that_only_looks_like_records_fails_every_record(capfd, answer):
    """A mapping (a Lambda batch response, say) or a text is no collection of records: iterating
    it would fail none, so every record fails, saying what to return."""
    handler, _ = committed_by(lambda items: answer)
    event = sqs_event({"n": 1}, {"n": 2}, trace_id=TRACE_IDS[:2])
    response, lines = run(handler, event, capfd)
    assert response == {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in ids(event)]}
    assert not with_message(lines, "record processed")


def test_a_record_that_failed_in_the_function_never_reaches_the_commit(capfd):
    def fn(message, context):
        if message["n"] == 2:
            raise ValueError("bad record")
        return message["n"]

    given = []
    handler = sqs_handler(commit=lambda items: given.extend(record.id for record, _ in items))(fn)
    event = sqs_event({"n": 1}, {"n": 2}, {"n": 3}, trace_id=TRACE_IDS)
    response, lines = run(handler, event, capfd)
    assert response == {"batchItemFailures": [{"itemIdentifier": ids(event)[1]}]}
    assert given == [ids(event)[0], ids(event)[2]]
    assert [line["message"] for line in of_level(lines, "ERROR")] == ["record failed"]
    assert [line["record_id"] for line in with_message(lines, "record processed")] == [
        ids(event)[0],
        ids(event)[2],
    ]


def test_a_commit_is_not_called_when_no_record_was_accepted(capfd):
    calls = []

    def fn(message, context):
        raise ValueError("every record fails")

    handler = sqs_handler(commit=lambda items: calls.append(items))(fn)
    event = sqs_event({"n": 1}, {"n": 2})
    response, _ = run(handler, event, capfd)
    assert response == {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in ids(event)]}
    assert calls == []


def test_log_result_false_still_counts_records_after_the_commit(capfd):
    handler = sqs_handler(log_result=False, commit=lambda items: [items[0][0]])(lambda message, context: 1)
    event = sqs_event({"n": 1}, {"n": 2}, trace_id=TRACE_IDS[:2])
    response, lines = run(handler, event, capfd)
    assert response == {"batchItemFailures": [{"itemIdentifier": ids(event)[0]}]}
    assert not with_message(lines, "record processed")
    assert [line["record_id"] for line in with_message(lines, "record failed at commit")] == [ids(event)[0]]


def test_the_lines_after_the_commit_carry_each_records_tracer_keys(capfd):
    """Each line written after the commit is its own record's: it carries that record's tracer
    keys (here a W3C ``traceparent`` per message), not another record's or none."""
    trace_ids = [f"{n:032x}" for n in (0xA1, 0xB2)]
    event = {
        "Records": [
            sqs_record({"n": n}, message_attributes={"traceparent": f"00-{trace_id}-{n:016x}-01"})
            for n, trace_id in zip((1, 2), trace_ids, strict=True)
        ]
    }
    handler = sqs_handler(commit=lambda items: [items[1][0]])(lambda message, context: message["n"])
    response, lines = run(handler, event, capfd)
    assert response == {"batchItemFailures": [{"itemIdentifier": ids(event)[1]}]}
    [processed] = with_message(lines, "record processed")
    [failed] = with_message(lines, "record failed at commit")
    assert processed["otelTraceID"] == trace_ids[0] and failed["otelTraceID"] == trace_ids[1]


def test_a_stream_commit_that_refuses_a_record_reports_it_by_sequence_number(capfd):
    event = kinesis_event({"n": 1}, {"n": 2})
    numbers = [raw["kinesis"]["sequenceNumber"] for raw in event["Records"]]
    handler = stream_handler(
        commit=lambda items: [record.id for record, _ in items if record.payload["n"] == 2]
    )(lambda payload, context: payload["n"])
    assert handler(event, lambda_context()) == {"batchItemFailures": [{"itemIdentifier": numbers[1]}]}
    lines = read_lines(capfd)
    assert [line["source"] for line in with_message(lines, "record failed at commit")] == ["kinesis"]
    assert [line["record_id"] for line in with_message(lines, "record processed")] == [numbers[0]]


@pytest.mark.parametrize(
    "commit",
    [None, lambda items: None, lambda items: [items[0][0]]],
    ids=["no commit", "commit accepts", "commit refuses"],
)
@pytest.mark.parametrize("fails", [False, True], ids=["returns", "raises"])
@pytest.mark.parametrize("kind", ["def", "async def"])
def test_each_records_line_gives_its_duration_in_milliseconds(capfd, commit, fails, kind):
    """``duration_ms``: from the record's start to its line, in milliseconds to the microsecond (a
    function that sleeps 20 ms takes at least 20; no invocation runs over Lambda's 15 minutes)."""

    def fn(message, context):
        time.sleep(0.02)
        if fails:
            raise ValueError("failed after 20 ms")
        return message

    async def async_fn(message, context):
        return fn(message, context)

    handler = sqs_handler(commit=commit)(fn if kind == "def" else async_fn)
    handler(sqs_event({"n": 1}), lambda_context())
    [line] = [line for line in read_lines(capfd) if "duration_ms" in line and "record_id" in line]
    duration = line["duration_ms"]
    assert type(duration) is float and round(duration, 3) == duration
    assert 20 <= duration <= 15 * 60 * 1000


@pytest.mark.parametrize("kind", ["def", "async def"])
def test_the_commit_is_its_own_line_and_not_in_each_records_duration(capfd, kind):
    """A batch's commit writes one ``batch committed`` line with its own duration; each record's
    ``record processed`` line gives the record's own time, not the commit's."""

    def commit(items):
        time.sleep(0.06)

    def fn(message, context):
        return message["n"]

    async def async_fn(message, context):
        return fn(message, context)

    handler = sqs_handler(commit=commit)(fn if kind == "def" else async_fn)
    event = sqs_event({"n": 1}, {"n": 2}, trace_id=TRACE_IDS[:2])
    handler(event, lambda_context())
    lines = read_lines(capfd)
    [committed] = with_message(lines, "batch committed")
    assert committed["level"] == "INFO" and (committed["records"], committed["failed"]) == (2, 0)
    assert 60 <= committed["duration_ms"] and "trace_id" not in committed and "record_id" not in committed
    assert committed["trace_ids"] == TRACE_IDS[:2]  # the row of each record's trace
    processed = with_message(lines, "record processed")
    assert [line["record_id"] for line in processed] == ids(event)
    assert all(line["duration_ms"] < 60 for line in processed)
    assert lines.index(committed) < lines.index(processed[0])


def test_a_commit_that_fails_records_says_so_on_its_own_line(capfd):
    handler, _ = committed_by(lambda items: [items[1][0]])
    event = sqs_event({"n": 1}, {"n": 2}, {"n": 3}, trace_id=TRACE_IDS)
    _, lines = run(handler, event, capfd)
    [committed] = with_message(lines, "batch committed")
    assert committed["level"] == "WARN" and (committed["records"], committed["failed"]) == (3, 1)


def test_a_commit_that_raises_says_so_and_why_on_its_own_line(capfd):
    """The ``batch committed`` line of a commit that raised counts every record it was given as
    failed and names the error; a commit that returned has no error fields."""

    def commit(items):
        raise ConnectionError("table unreachable")

    handler, _ = committed_by(commit)
    _, lines = run(handler, sqs_event({"n": 1}, {"n": 2}, {"n": 3}, trace_id=TRACE_IDS), capfd)
    [committed] = with_message(lines, "batch committed")
    assert committed["level"] == "WARN" and (committed["records"], committed["failed"]) == (3, 3)
    assert (committed["error_type"], committed["error"]) == ("ConnectionError", "table unreachable")

    handler, _ = committed_by(lambda items: None)
    _, lines = run(handler, sqs_event({"n": 1}), capfd)
    [committed] = with_message(lines, "batch committed")
    assert committed["level"] == "INFO" and committed["failed"] == 0
    assert "error_type" not in committed and "error" not in committed
