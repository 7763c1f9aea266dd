"""firehose_handler against AWS's own published sample events (``tests/events/firehose/``).

Each record must reach the function with what Powertools' ``KinesisFirehoseEvent`` reads of it
(``data_as_bytes``, ``data_as_json``; its ``record_id`` as the record's id and the metadata of a
Kinesis source in its raw record), and the response must be what Powertools'
``KinesisFirehoseDataTransformationResponse`` builds for the same results, field by field.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from _hostile import DECORATORS, captured, refused
from aws_lambda_powertools.utilities.data_classes import KinesisFirehoseEvent
from aws_lambda_powertools.utilities.data_classes.kinesis_firehose_event import (
    KinesisFirehoseDataTransformationRecordMetadata,
    KinesisFirehoseDataTransformationResponse,
)

from lambda_kit import DROP, Transformed, current_record, firehose_handler

ROOT = Path(__file__).parent / "events" / "firehose"
EVENTS = sorted(path.name for path in ROOT.glob("*.json") if "response" not in path.name)
MSK = "msk_firehose_event.aws-lambda-java.json"  # kafkaRecordValue: Powertools reads no such event
PADDED = "KinesisFirehoseApachelog.sam-cli.json"
"""Its data has padding after the padding (``...YyOTE==`` for ``...YyOTE=``): Firehose never writes
that, Powertools' lenient decoder reads past it, lambda_kit's strict one refuses it (a corrupted
value must not be read as something else): the record fails alone, ``ProcessingFailed``."""


def sample(name: str) -> dict[str, Any]:
    return json.loads((ROOT / name).read_text())


def test_the_samples_are_all_here():
    assert len(EVENTS) == 11


def seen_by(name: str, **options: Any) -> tuple[list[tuple[Any, Any]], dict[str, Any]]:
    seen = []

    def keep(data, context):
        record = current_record()
        seen.append((data, record))
        return data

    with captured():
        response = firehose_handler(**options)(keep)(sample(name), None)
    return seen, response


@pytest.mark.parametrize("name", [name for name in EVENTS if name not in (MSK, PADDED)])
def test_each_record_matches_powertools_field_by_field(name):
    seen, _ = seen_by(name, json=False)
    powertools = KinesisFirehoseEvent(sample(name))
    records = list(powertools.records)
    assert len(seen) == len(records)
    for (data, record), theirs in zip(seen, records, strict=True):
        assert data == theirs.data_as_bytes
        assert record.id == theirs.record_id
        assert record.raw["approximateArrivalTimestamp"] == theirs.approximate_arrival_timestamp
        metadata = theirs.metadata
        if metadata is not None:
            ours = record.raw["kinesisRecordMetadata"]
            assert (ours["shardId"], ours["partitionKey"], ours["sequenceNumber"]) == (
                metadata.shard_id,
                metadata.partition_key,
                metadata.sequence_number,
            )
            assert ours["subsequenceNumber"] == metadata.subsequence_number
        if data.startswith(b"{"):
            assert json.loads(data) == theirs.data_as_json


def test_an_msk_sourced_record_is_read_from_kafka_record_value():
    seen, response = seen_by(MSK)
    [(data, record)] = seen
    assert data == {"Name": "Hello World"} and record.id == sample(MSK)["records"][0]["recordId"]
    assert set(response["records"][0]) == {"recordId", "result", "kafkaRecordValue"}


def test_data_padded_twice_is_refused_not_read_leniently():
    seen, response = seen_by(PADDED, json=False)
    assert seen == [] and [entry["result"] for entry in response["records"]] == ["ProcessingFailed"]
    assert response["records"][0]["data"] == sample(PADDED)["records"][0]["data"]


@pytest.mark.parametrize("name", [name for name in EVENTS if name not in (MSK, PADDED)])
def test_the_response_is_what_powertools_builds_for_the_same_results(name):
    """Every record back: the first ones transformed (one with partition keys), one dropped (by
    position: the SAM CLI's syslog sample gives two records one recordId)."""
    event = sample(name)

    def transform(data, context):
        index = next(i for i, raw in enumerate(event["records"]) if raw is current_record().raw)
        if index == 1:
            return DROP
        if index == 2:
            return Transformed(data.upper(), partition_keys={"index": "2"})
        return data[::-1]

    with captured():
        ours = firehose_handler(json=False)(transform)(event, None)
    expected = KinesisFirehoseDataTransformationResponse()
    for index, record in enumerate(KinesisFirehoseEvent(event).records):
        data = record.data_as_bytes
        if index == 1:
            expected.add_record(record.build_data_transformation_response(result="Dropped"))
            continue
        metadata = KinesisFirehoseDataTransformationRecordMetadata({"index": "2"}) if index == 2 else None
        encoded = base64.b64encode(data.upper() if index == 2 else data[::-1]).decode()
        expected.add_record(record.build_data_transformation_response(data=encoded, metadata=metadata))
    assert ours == expected.asdict()


@pytest.mark.parametrize("decorator", sorted(set(DECORATORS) - {"firehose_handler"}))
@pytest.mark.parametrize("name", EVENTS)
def test_every_other_decorator_refuses_the_samples_naming_firehose_handler(name, decorator):
    assert refused(decorator, sample(name)).endswith(": use firehose_handler")
