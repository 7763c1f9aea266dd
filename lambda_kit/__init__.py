"""lambda_kit: one decorator per event source, trace ids, JSON logs, failure routing.

Light at import (cold start matters): names are loaded on first access, and boto3, botocore,
datadog, Powertools and orjson only when a feature that needs them is first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

_EXPORTS = {
    "sqs_handler": "decorators",
    "sns_handler": "decorators",
    "stream_handler": "decorators",
    "api_handler": "decorators",
    "Router": "sources.api.router",
    "kafka_handler": "decorators",
    "eventbridge_handler": "decorators",
    "s3_handler": "decorators",
    "S3Object": "sources.s3",
    "HTTPError": "errors",
    "UnsupportedEvent": "errors",
    "InvalidPayload": "errors",
    "get_logger": "log",
    "propagate": "trace.propagation",
    "trace_headers": "trace.propagation",
    "current_record": "trace",
    "current_trace_id": "trace",
    # CloudWatch Logs subscriptions, tumbling windows
    "cloudwatch_logs_handler": "decorators",
    "current_window": "sources.window",
    # Lambda authorizers, WebSocket APIs, Firehose transformation, S3 Batch Operations
    "authorizer_handler": "decorators",
    "Allow": "sources.authorizer.answer",
    "Deny": "sources.authorizer.answer",
    "Unauthorized": "sources.authorizer.answer",
    "websocket_handler": "decorators",
    "WebSocketRouter": "sources.websocket.router",
    "firehose_handler": "decorators",
    "DROP": "sources.firehose",
    "Transformed": "sources.firehose",
    "s3_batch_handler": "decorators",
    "S3BatchTask": "sources.s3_batch",
    "TemporaryFailure": "sources.s3_batch",
    "PermanentFailure": "sources.s3_batch",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lambda_kit' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*_EXPORTS, "__version__"])


if TYPE_CHECKING:
    from .decorators import (  # noqa: F401
        api_handler,
        eventbridge_handler,
        kafka_handler,
        s3_handler,
        sns_handler,
        sqs_handler,
        stream_handler,
    )
    from .errors import HTTPError, InvalidPayload, UnsupportedEvent  # noqa: F401
    from .log import get_logger  # noqa: F401
    from .sources.api.router import Router  # noqa: F401
    from .sources.s3 import S3Object  # noqa: F401
    from .trace import current_record, current_trace_id  # noqa: F401
    from .trace.propagation import propagate, trace_headers  # noqa: F401

if TYPE_CHECKING:  # CloudWatch Logs subscriptions, tumbling windows
    from .decorators import cloudwatch_logs_handler  # noqa: F401
    from .sources.window import current_window  # noqa: F401

if TYPE_CHECKING:  # Lambda authorizers, WebSocket APIs, Firehose transformation, S3 Batch Operations
    from .decorators import (  # noqa: F401
        authorizer_handler,
        firehose_handler,
        s3_batch_handler,
        websocket_handler,
    )
    from .sources.authorizer.answer import Allow, Deny, Unauthorized  # noqa: F401
    from .sources.firehose import DROP, Transformed  # noqa: F401
    from .sources.s3_batch import PermanentFailure, S3BatchTask, TemporaryFailure  # noqa: F401
    from .sources.websocket.router import WebSocketRouter  # noqa: F401
