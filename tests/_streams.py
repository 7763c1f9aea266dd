"""Kinesis streams on moto's server for the tests that put records on them or read them back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def new_stream(kinesis: Any, name: str) -> Callable[[], list[dict[str, Any]]]:
    """Create the one-shard stream ``name`` with ``kinesis`` (a boto3 client) and return a reader
    of what is put on it from now on: each call gives one ``get_records`` page of new records."""
    kinesis.create_stream(StreamName=name, ShardCount=1)
    kinesis.get_waiter("stream_exists").wait(StreamName=name, WaiterConfig={"Delay": 0.1, "MaxAttempts": 50})
    shard = kinesis.describe_stream(StreamName=name)["StreamDescription"]["Shards"][0]["ShardId"]
    reader = {
        "iterator": kinesis.get_shard_iterator(StreamName=name, ShardId=shard, ShardIteratorType="LATEST")[
            "ShardIterator"
        ]
    }

    def read() -> list[dict[str, Any]]:
        page = kinesis.get_records(ShardIterator=reader["iterator"])
        reader["iterator"] = page["NextShardIterator"]
        return page["Records"]

    return read
