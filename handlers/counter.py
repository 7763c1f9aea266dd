"""View counter: counts each view from the views queue exactly once (article total + day bucket).

Each message is one view; its two increments share one event id and go in one transaction, so a
redelivered message is a duplicate, never a second count. A message that is not a view event fails
alone (``batchItemFailures``); the rest of the batch is counted.
"""

from __future__ import annotations

from typing import Any

from handlers import clients
from handlers.views import increments, parse_view
from lambda_kit import sqs_handler


@sqs_handler
def handler(message: Any, context: Any) -> dict[str, Any]:
    view = parse_view(message)
    result = clients.counter().increment_many(increments(view))
    return {"url": view.url, "event_id": view.event_id, "counted": bool(result.counted)}
