"""Idempotency for any side effect: ``@idempotent`` runs a function once per key, on DynamoDB.

    from lambda_kit import sqs_handler
    from lambda_kit.idempotency import idempotent

    @sqs_handler
    @idempotent(key="order_id", table="Idempotency")
    def charge(order, context):
        ...  # runs once per order_id; a redelivery gets the stored result

``import lambda_kit.idempotency`` does not import boto3: the client is created on first use.
See docs/idempotency.md.
"""

from lambda_kit.idempotency.batch import complete_batch
from lambda_kit.idempotency.decorator import idempotent
from lambda_kit.idempotency.errors import AlreadyInProgress, IdempotencyError, MissingKey, PayloadMismatch
from lambda_kit.idempotency.keys import IDEMPOTENCY_KEY_HEADER, header
from lambda_kit.idempotency.table import ENTRY_SK, PK_PREFIX, ClaimLost
from lambda_kit.idempotency.writes import MAX_WRITES, Writes, current_writes

__all__ = [
    "ENTRY_SK",
    "IDEMPOTENCY_KEY_HEADER",
    "MAX_WRITES",
    "PK_PREFIX",
    "AlreadyInProgress",
    "ClaimLost",
    "IdempotencyError",
    "MissingKey",
    "PayloadMismatch",
    "Writes",
    "complete_batch",
    "current_writes",
    "header",
    "idempotent",
]
