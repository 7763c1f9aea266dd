"""firehose_handler: every record of a Firehose transformation comes back, with its ``recordId``,
its ``result`` and its data; a record that fails is ``ProcessingFailed`` alone; the response stays
within Lambda's 6 MB, and what does not fit is said, never cut."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest
from _hostile import captured, parse_lines

from lambda_kit import DROP, Transformed, UnsupportedEvent, current_record, current_trace_id, firehose_handler
from lambda_kit.sources.firehose import MAX_RESPONSE
from lambda_kit.testing import firehose_event, kinesis_event, lambda_context, s3_batch_event


def run(handler: Any, event: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    with captured() as out:
        response = handler(event, lambda_context())
    return response, parse_lines(out)


def decoded(entry: dict[str, Any]) -> bytes:
    return base64.b64decode(entry.get("data", entry.get("kafkaRecordValue")))


def test_every_record_comes_back_with_its_transformed_data():
    event = firehose_event({"n": 1}, {"n": 2}, {"n": 3})

    @firehose_handler
    def enrich(record, context):
        return {**record, "double": record["n"] * 2}

    response, _ = run(enrich, event)
    ids = [record["recordId"] for record in event["records"]]
    assert [(entry["recordId"], entry["result"]) for entry in response["records"]] == [(i, "Ok") for i in ids]
    assert [json.loads(decoded(entry)) for entry in response["records"]] == [
        {"n": n, "double": 2 * n} for n in (1, 2, 3)
    ]


@pytest.mark.parametrize(
    ("returned", "data"),
    [(b"\x00raw", b"\x00raw"), ("text\n", b"text\n"), ([1, "a"], b'[1,"a"]'), (0, b"0")],
    ids=["bytes", "text", "json", "zero"],
)
def test_bytes_go_as_they_are_text_as_utf8_and_anything_else_as_json(returned, data):
    response, _ = run(firehose_handler(lambda record, context: returned), firehose_event({"n": 1}))
    assert decoded(response["records"][0]) == data


def test_drop_drops_and_transformed_carries_partition_keys():
    @firehose_handler
    def route(record, context):
        if record["kind"] == "noise":
            return DROP
        return Transformed(record, partition_keys={"customer": record["customer"]})

    event = firehose_event({"kind": "noise"}, {"kind": "order", "customer": "c-9"})
    response, _ = run(route, event)
    dropped, kept = response["records"]
    assert dropped == {"recordId": event["records"][0]["recordId"], "result": "Dropped", "data": ""}
    assert kept["result"] == "Ok" and kept["metadata"] == {"partitionKeys": {"customer": "c-9"}}


def test_a_record_that_raises_is_processing_failed_with_its_data_and_the_others_go_through():
    @firehose_handler
    def strict(record, context):
        if record["n"] == 2:
            raise ValueError("n=2 is not allowed")
        return record

    event = firehose_event({"n": 1}, {"n": 2}, {"n": 3})
    response, lines = run(strict, event)
    assert [entry["result"] for entry in response["records"]] == ["Ok", "ProcessingFailed", "Ok"]
    assert response["records"][1]["data"] == event["records"][1]["data"]  # what came, for the error output
    [error] = [line for line in lines if line["level"] == "ERROR"]
    assert error["record_id"] == event["records"][1]["recordId"] and error["error_type"] == "ValueError"


@pytest.mark.parametrize(
    ("returned", "why"),
    [
        (None, "returned None"),
        (Transformed({"a": 1}, partition_keys={"k": 1}), "partition_keys must map text to text"),
        (Transformed({"a": 1}, partition_keys=["k"]), "partition_keys must map text to text"),
        ({"batchItemFailures": []}, "batchItemFailures"),
        (object(), "not JSON serializable"),
    ],
    ids=["none", "number key", "list keys", "batch response", "no json"],
)
def test_a_result_firehose_cannot_take_fails_its_record_alone(returned, why):
    response, lines = run(firehose_handler(lambda record, context: returned), firehose_event({"n": 1}))
    assert [entry["result"] for entry in response["records"]] == ["ProcessingFailed"]
    [error] = [line for line in lines if line["level"] == "ERROR"]
    assert why in error["error"]


def test_data_that_is_not_json_fails_with_json_and_arrives_as_bytes_without():
    event = firehose_event(b"\xffnot json")
    response, lines = run(firehose_handler(lambda record, context: record), event)
    assert response["records"][0]["result"] == "ProcessingFailed"
    assert [line["message"] for line in lines if line["level"] == "ERROR"] == ["record could not be decoded"]
    response, _ = run(firehose_handler(json=False)(lambda record, context: record[1:]), event)
    assert decoded(response["records"][0]) == b"not json"


def test_an_msk_source_is_answered_in_kafka_record_value():
    event = firehose_event({"n": 1}, source="msk")
    response, _ = run(firehose_handler(lambda record, context: {"seen": record["n"]}), event)
    [entry] = response["records"]
    assert set(entry) == {"recordId", "result", "kafkaRecordValue"}
    assert json.loads(decoded(entry)) == {"seen": 1}


def test_the_trace_id_is_the_data_s_then_the_record_id():
    seen = []
    handler = firehose_handler(
        lambda record, context: seen.append((current_trace_id(), current_record().id)) or 1
    )
    event = firehose_event({"n": 1}, {"n": 2}, trace_id=["T-fh", None])
    run(handler, event)
    assert seen == [("T-fh", event["records"][0]["recordId"]), (event["records"][1]["recordId"],) * 2]


def test_an_async_transformation_runs_records_at_once_and_answers_each():
    async def slow(record, context):
        await asyncio.sleep(0.01 * (3 - record["n"]))
        return record["n"]

    response, _ = run(firehose_handler(max_concurrency=3)(slow), firehose_event({"n": 0}, {"n": 1}, {"n": 2}))
    assert [decoded(entry) for entry in response["records"]] == [b"0", b"1", b"2"]


def test_model_validates_the_data():
    from pydantic import BaseModel

    class View(BaseModel):
        url: str

    handler = firehose_handler(model=View)(lambda view, context: view.url)
    response, lines = run(handler, firehose_event({"url": "/a"}, {"url": 7}))
    assert [entry["result"] for entry in response["records"]] == ["Ok", "ProcessingFailed"]
    assert [line["message"] for line in lines if line["level"] == "ERROR"] == ["record failed validation"]


# --- the 6 MB response bound -----------------------------------------------------------------------


def test_records_over_the_response_bound_go_back_as_they_came_each_with_an_error_line():
    """Three small records made 2 MB each: 8 MB of base64, over the bound. The last goes back
    ProcessingFailed with its own data (to the error output), said in an ERROR line; never cut."""
    event = firehose_event({"n": 1}, {"n": 2}, {"n": 3})
    response, lines = run(firehose_handler(lambda record, context: b"x" * (2 * 1024 * 1024)), event)
    assert len(json.dumps(response, separators=(",", ":"))) <= MAX_RESPONSE
    assert [entry["result"] for entry in response["records"]] == ["Ok", "Ok", "ProcessingFailed"]
    assert response["records"][2]["data"] == event["records"][2]["data"]
    assert all(len(decoded(entry)) == 2 * 1024 * 1024 for entry in response["records"][:2])
    [error] = [line for line in lines if line["level"] == "ERROR"]
    assert error["record_id"] == event["records"][2]["recordId"] and "response bound" in error["message"]


def test_a_response_that_cannot_fit_even_as_it_came_raises_so_firehose_retries_the_buffer():
    event = firehose_event(*["y" * (1024 * 1024)] * 7)  # 9 MB of base64: more than Lambda could even send
    with captured(), pytest.raises(ValueError, match="over Lambda's 6291456"):
        firehose_handler(json=False)(lambda record, context: record)(event, None)


# --- recognition --------------------------------------------------------------------------------------


def test_other_events_are_refused_naming_their_decorator():
    handler = firehose_handler(lambda record, context: record)
    for event, fits in ((kinesis_event({"n": 1}), "stream_handler"), (s3_batch_event(), "s3_batch_handler")):
        with captured(), pytest.raises(UnsupportedEvent, match=f"use {fits}"):
            handler(event, None)
    analytics = {
        "invocationId": "i",
        "applicationArn": "arn:aws:kinesisanalytics:::application/a",
        "records": [],
    }
    with captured(), pytest.raises(UnsupportedEvent):
        handler(analytics, None)
