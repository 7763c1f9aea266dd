"""DynamoDB Time to Live, emulated (moto stores the setting but never expires items).

Every ``Timing.ttl_interval`` seconds each table with TTL enabled is scanned for items whose TTL
attribute is a number (epoch seconds) in the past; each is deleted with a condition that its TTL
is unchanged, so an item refreshed meanwhile survives. The deletion appears on the table's
stream as a REMOVE, which the stream poller marks with DynamoDB's
``userIdentity: {type: Service, principalId: dynamodb.amazonaws.com}``. As on DynamoDB, items
whose TTL is more than five years in the past are ignored, and a non-number TTL is ignored.
"""

from __future__ import annotations

import time
from typing import Any

from .clients import Clients
from .poller import Journal, Poller, Timing
from .stream_source import TtlDeletions

FIVE_YEARS = 5 * 365 * 24 * 3600


class TtlSweeper(Poller):
    name = "ttl"

    def __init__(
        self,
        tables: dict[str, str],
        clients: Clients,
        deletions: TtlDeletions,
        timing: Timing,
        journal: Journal,
    ) -> None:
        super().__init__(timing, journal)
        self.tables = tables  # table name -> TTL attribute
        self.clients = clients
        self.deletions = deletions
        self._key_names: dict[str, list[str]] = {}

    def _keys_of(self, table: str) -> list[str]:
        if table not in self._key_names:
            schema = self.clients("dynamodb").describe_table(TableName=table)["Table"]["KeySchema"]
            self._key_names[table] = [k["AttributeName"] for k in schema]
        return self._key_names[table]

    def sweep(self) -> int:
        """One pass over every table; returns the number of items deleted."""
        deleted = 0
        for table, attribute in self.tables.items():
            deleted += self._sweep_table(table, attribute)
        return deleted

    def _sweep_table(self, table: str, attribute: str) -> int:
        now = int(time.time())
        request: dict[str, Any] = {
            "TableName": table,
            "FilterExpression": "#ttl < :now AND #ttl > :oldest",
            "ExpressionAttributeNames": {"#ttl": attribute},
            "ExpressionAttributeValues": {":now": {"N": str(now)}, ":oldest": {"N": str(now - FIVE_YEARS)}},
        }
        deleted = 0
        while True:
            page = self.clients("dynamodb").scan(**request)
            deleted += sum(self._expire(table, attribute, item) for item in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return deleted
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _expire(self, table: str, attribute: str, item: dict[str, Any]) -> bool:
        """Delete ``item`` unless its TTL changed meanwhile (or is not a number); whether it was."""
        expires = item.get(attribute)
        if not expires or "N" not in expires:
            return False
        dynamodb = self.clients("dynamodb")
        key = {name: item[name] for name in self._keys_of(table)}
        # Register first: the stream poller may read the REMOVE before delete_item returns.
        self.deletions.add(table, key)
        try:
            dynamodb.delete_item(
                TableName=table,
                Key=key,
                ConditionExpression="#ttl = :expires",
                ExpressionAttributeNames={"#ttl": attribute},
                ExpressionAttributeValues={":expires": expires},
            )
        except dynamodb.exceptions.ConditionalCheckFailedException:
            self.deletions.take(table, key)
            return False
        self.journal.record("ttl.deleted", table=table, key=key)
        return True

    def poll_once(self) -> bool:
        self.sweep()
        self.sleep(self.timing.ttl_interval)
        return True

    def idle(self, quiet: float) -> bool:  # never holds up draining
        return True
