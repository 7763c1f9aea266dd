"""Clickstream: bulk view events from a Kinesis stream, counted like the views queue's.

Same validation, same event id, same counter keys as ``handlers.counter``: a view that arrives both
here and through ``POST /views`` is counted once. A failing record is put back on the stream and,
after its last attempt, sent to ``CLICKSTREAM_DLQ_URL``; the batch goes on.
"""

from __future__ import annotations

import os
from typing import Any

from handlers import clients
from handlers.views import increments, parse_view
from lambda_kit import stream_handler


def _dead_letter() -> str | None:
    return os.environ.get("CLICKSTREAM_DLQ_URL")


@stream_handler(on_failure="requeue", dead_letter=_dead_letter)
def handler(payload: Any, context: Any) -> dict[str, Any]:
    view = parse_view(payload)
    result = clients.counter().increment_many(increments(view))
    return {"url": view.url, "event_id": view.event_id, "counted": bool(result.counted)}
