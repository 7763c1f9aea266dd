"""Ingest API (HTTP API): accepts view events and serves the statistics.

- ``POST /views``: a view event, validated (400 naming the field) and sent to the views queue with
  the trace id; ``202 {"accepted": true, "trace_id": ..., "event_id": ...}``. Counting happens later.
- ``GET /views?url=...``: ``{"url", "views", "daily": {"YYYY-MM-DD": n}}`` over the last 30 UTC
  days, read with one ``BatchGetItem``.
- ``GET /stats``: ``{"views", "articles", "daily", "milestones"}`` for the whole site.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from handlers import clients
from handlers.aggregates import (
    DISTINCT_ARTICLES,
    MILESTONES_PK,
    SITE_VIEWS,
    last_days,
    milestone_from_item,
    site_day_key,
)
from handlers.views import InvalidView, article_key, day_key, normalize_url, parse_view
from lambda_kit import HTTPError, api_handler

MAX_MILESTONES_LISTED = 1000


def post_views(request: Any) -> dict[str, Any]:
    body = request.json
    try:
        view = parse_view(body)
    except InvalidView as error:
        raise HTTPError(400, str(error)) from None
    clients.client("sqs").send_message(
        QueueUrl=clients.setting("VIEWS_QUEUE_URL"),
        MessageBody=json.dumps(view.to_json(), ensure_ascii=False),
    )
    return {
        "statusCode": 202,
        "body": {"accepted": True, "trace_id": request.trace_id, "event_id": view.event_id},
    }


def get_views(request: Any) -> dict[str, Any]:
    if not request.query.get("url"):
        raise HTTPError(400, "query parameter url is missing, e.g. /views?url=myblog.com/article1")
    try:
        url = normalize_url(request.query["url"])
    except InvalidView as error:
        raise HTTPError(400, str(error)) from None
    days = last_days()
    total = article_key(url)
    counts = clients.counter().get_many([total, *(day_key(url, day) for day in days)])
    return {
        "url": url,
        "views": counts[total],
        "daily": {day: counts[day_key(url, day)] for day in days},
    }


def get_stats(request: Any) -> dict[str, Any]:
    days = last_days()
    counts = clients.counter().get_many([SITE_VIEWS, DISTINCT_ARTICLES, *(site_day_key(day) for day in days)])
    milestones = _milestones(clients.client("dynamodb"), clients.setting("TABLE_NAME"))
    milestones.sort(key=lambda m: (m["reached_at"] or "", m["url"], m["milestone"]), reverse=True)
    return {
        "views": counts[SITE_VIEWS],
        "articles": counts[DISTINCT_ARTICLES],
        "daily": {day: counts[site_day_key(day)] for day in days},
        "milestones": milestones,
    }


def _milestones(dynamodb: Any, table: str) -> list[dict[str, Any]]:
    """Stored milestones (at most :data:`MAX_MILESTONES_LISTED`), from their one partition."""
    request: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "PK = :pk",
        "ExpressionAttributeValues": {":pk": {"S": MILESTONES_PK}},
    }
    found: list[dict[str, Any]] = []
    while len(found) < MAX_MILESTONES_LISTED:
        page = dynamodb.query(**request, Limit=MAX_MILESTONES_LISTED - len(found))
        found.extend(milestone_from_item(item) for item in page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            break
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return found


ROUTES: dict[tuple[str, str], Callable[[Any], Any]] = {
    ("POST", "/views"): post_views,
    ("GET", "/views"): get_views,
    ("GET", "/stats"): get_stats,
}


@api_handler
def handler(request: Any, context: Any) -> Any:
    path = (
        "/" + request.path.strip("/").rsplit("/", 1)[-1]
    )  # a stage prefix (/dev/views) is not part of the route
    route = ROUTES.get((request.method, path))
    if route is None:
        allowed = sorted(method for method, known in ROUTES if known == path)
        if allowed:
            raise HTTPError(
                405,
                f"{request.method} {path} is not supported; use {' or '.join(allowed)}",
                {"Allow": ", ".join(allowed)},
            )
        raise HTTPError(
            404,
            f"no route for {request.method} {request.path}; try POST /views, GET /views?url=..., GET /stats",
        )
    return route(request)
