"""An idempotency table for tests, the counter table's sibling: on AWS's DynamoDB Local where Java
can run it, on moto's server otherwise.

    with IdempotencyTable("Idempotency") as table:
        charge = idempotent(key="order_id", table=table.name)(charge_card)
        charge({"order_id": "o-1"}, None)  # boto3 reaches the table: AWS_ENDPOINT_URL_DYNAMODB is set
        assert table.entries()[0]["status"] == "COMPLETED"

Inside, ``AWS_ENDPOINT_URL_DYNAMODB`` points at its DynamoDB (as for :class:`CounterTable`), so an
``@idempotent(table=name)`` function's own client reaches it unchanged.
"""

from __future__ import annotations

from typing import Any

from ..idempotency.table import ENTRY_SK
from ._counter_table import CounterTable, create_counter_table


def create_idempotency_table(client: Any, name: str) -> str:
    """Create table ``name`` as ``lambda_kit.idempotency`` wants it, with ``client`` (a boto3
    DynamoDB client): the counters' layout (``PK`` and ``SK`` strings, on-demand, TTL on ``ttl``)
    without a stream, which nothing reads. Returns ``name``."""
    return create_counter_table(client, name, stream=False)


def _plain(value: dict[str, Any]) -> Any:
    ((kind, data),) = value.items()
    return int(data) if kind == "N" else data


class IdempotencyTable(CounterTable):
    """A fresh, empty idempotency table ``name`` for a test, as a context manager (see
    :class:`CounterTable` for ``dynamodb``, ``url``, ``backend`` and ``client``). :meth:`entries`
    lists what the table holds."""

    create = staticmethod(create_idempotency_table)

    def __init__(self, name: str = "idempotency", **options: Any) -> None:
        super().__init__(name, **options)

    def entries(self) -> list[dict[str, Any]]:
        """Every idempotency entry, read consistently, as plain values (``status``, ``until``,
        ``ttl``, ``result`` ...)."""
        items: list[dict[str, Any]] = []
        for page in self.client.get_paginator("scan").paginate(TableName=self.name, ConsistentRead=True):
            items += [
                {name: _plain(value) for name, value in item.items()}
                for item in page["Items"]
                if item["SK"]["S"] == ENTRY_SK
            ]
        return sorted(items, key=lambda entry: entry["PK"])

    def __repr__(self) -> str:
        return f"IdempotencyTable({self.name!r}, url={self.url!r}, backend={self.backend!r})"
