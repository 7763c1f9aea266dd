"""Milestones: records each milestone an article reaches, once, so ``GET /stats`` can list them.

The aggregator publishes ``{"url", "views", "milestone"}``; SNS may deliver it more than once and
the aggregator may publish it again after a retry, so the write is a conditional put of the
milestone's own item (``PK`` ``MILESTONES``, ``SK`` ``<url>#<milestone>``): the first one wins.
"""

from __future__ import annotations

from typing import Any

from handlers import clients
from handlers.aggregates import milestone_item
from handlers.views import normalize_url
from lambda_kit import current_trace_id, sns_handler


@sns_handler
def handler(message: Any, context: Any) -> dict[str, Any]:
    url, milestone, views = _parse(message)
    try:
        clients.client("dynamodb").put_item(
            TableName=clients.setting("TABLE_NAME"),
            Item=milestone_item(url, milestone, views, current_trace_id()),
            ConditionExpression="attribute_not_exists(PK)",
        )
    except Exception as error:
        if getattr(error, "response", {}).get("Error", {}).get("Code") != "ConditionalCheckFailedException":
            raise
        return {"url": url, "milestone": milestone, "recorded": False}
    return {"url": url, "milestone": milestone, "recorded": True}


def _parse(message: Any) -> tuple[str, int, int]:
    if not isinstance(message, dict):
        raise ValueError("a milestone message must be a JSON object with url, milestone and views")
    url = normalize_url(message.get("url"))
    numbers = []
    for field in ("milestone", "views"):
        value = message.get(field)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"milestone message: {field} must be a positive integer, not {value!r}")
        numbers.append(value)
    return url, numbers[0], numbers[1]
