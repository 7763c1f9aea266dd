"""Event factories for every source, a fake Lambda context and a counter table, for your tests and ours.

Shapes follow AWS's documented sample events; every record gets a unique id. Payloads that are
not ``str``/``bytes`` are JSON-encoded for you.

    from lambda_kit.testing import sqs_event, lambda_context
    response = handler(sqs_event({"url": "a"}, {"url": "b"}, trace_id="T"), lambda_context())

A counter table: ``CounterTable`` (a context manager) or the pytest fixture ``counter_table``
(``from lambda_kit.testing import counter_table`` in ``conftest.py``), on DynamoDB Local where Java
can run it and on moto's DynamoDB otherwise; an idempotency table the same way
(``IdempotencyTable``, ``idempotency_table``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._counter_table import CounterTable, DynamoDBForTests, create_counter_table
from ._events import (
    ACCOUNT,
    EXAMPLES,
    REGION,
    S3_ENVELOPES,
    Example,
    LambdaContext,
    awslogs_data,
    cloudwatch_logs_event,
    dynamodb_record,
    dynamodb_stream_event,
    event,
    eventbridge_event,
    example,
    kafka_event,
    kafka_record,
    kinesis_event,
    kinesis_kpl_record,
    kinesis_log_record,
    kinesis_record,
    lambda_context,
    log_line,
    log_subscription_message,
    pipes_batch,
    s3_event,
    s3_eventbridge_event,
    s3_notification,
    s3_record,
    s3_test_message,
    sns_envelope,
    sns_event,
    sns_record,
    sqs_event,
    sqs_record,
    to_dynamodb,
    tumbling_window,
)
from ._events_batch import firehose_event, firehose_record, s3_batch_event
from ._events_gateway import AUTHORIZER_SHAPES, authorizer_event, websocket_event
from ._http import API_VERSIONS, api_event
from ._idempotency_table import IdempotencyTable, create_idempotency_table

__all__ = [
    "CounterTable",
    "DynamoDBForTests",
    "IdempotencyTable",
    "counter_table",
    "create_counter_table",
    "create_idempotency_table",
    "idempotency_table",
    "ACCOUNT",
    "API_VERSIONS",
    "AUTHORIZER_SHAPES",
    "EXAMPLES",
    "Example",
    "LambdaContext",
    "REGION",
    "S3_ENVELOPES",
    "api_event",
    "authorizer_event",
    "awslogs_data",
    "cloudwatch_logs_event",
    "dynamodb_record",
    "dynamodb_stream_event",
    "event",
    "eventbridge_event",
    "example",
    "firehose_event",
    "firehose_record",
    "kafka_event",
    "kafka_record",
    "kinesis_event",
    "kinesis_kpl_record",
    "kinesis_log_record",
    "kinesis_record",
    "lambda_context",
    "log_line",
    "log_subscription_message",
    "pipes_batch",
    "s3_batch_event",
    "s3_event",
    "s3_eventbridge_event",
    "s3_notification",
    "s3_record",
    "s3_test_message",
    "sns_envelope",
    "sns_event",
    "sns_record",
    "sqs_event",
    "sqs_record",
    "to_dynamodb",
    "tumbling_window",
    "websocket_event",
]


if TYPE_CHECKING:
    from ._fixture import counter_table, idempotency_table


def __getattr__(name: str) -> object:
    if name in ("counter_table", "idempotency_table"):
        from . import _fixture  # imports pytest: only when a conftest.py asks for a fixture

        return getattr(_fixture, name)
    raise AttributeError(f"module 'lambda_kit.testing' has no attribute {name!r}")
