"""Aggregator: site-wide aggregates and milestones from the table's own DynamoDB stream.

Two kinds of change reach it (the event source's ``filterPatterns`` let nothing else through, and
the code below checks again, so its own ``AGG#`` and ``MILESTONE`` writes never feed back):

- a new **view marker** (``INSERT``, ``PK`` ``URL#...``, ``SK`` ``EVENT#...``): on an article's total
  it adds to the site's views, on an article's day bucket to the site's views that day. The stream
  record's ``eventID`` is the event id, so a redelivered record is counted once.
- a change of an **article's total** (``PK`` ``URL#<url>``, ``SK`` ``COUNT``): its old and new images
  say exactly which milestones (10, 100, 1,000, ...) this one change crossed, so each milestone is
  seen by exactly one change, however counts were batched or raced. Each crossing is published to
  ``MILESTONES_TOPIC_ARN`` (a redelivery publishes again; the milestones handler records it once).
  The change from 0 views is the article's first: it counts once, by url, in the distinct articles.

Each record is read on its own; the batch's aggregates are then counted together in one
``increment_many`` (``commit=``), so a stream batch of 100 markers costs about two transactions.
"""

from __future__ import annotations

import json
from typing import Any

from handlers import clients
from handlers.aggregates import (
    ARTICLE_MARKER_TTL,
    DISTINCT_ARTICLES,
    SITE_VIEWS,
    article_event_id,
    milestones_crossed,
    site_day_key,
)
from handlers.views import day_of_day_key, url_of_article_key
from lambda_kit import current_record, get_logger, stream_handler
from lambda_kit.counters import COUNT_ATTRIBUTE, COUNTER_SK, MARKER_PREFIX, Increment

log = get_logger(__name__)


def count_aggregates(results: list[tuple[Any, dict[str, Any]]]) -> None:
    """Once per batch: the site aggregates of every view marker in it in one ``increment_many``,
    and the articles seen for the first time in another (their markers never expire)."""
    site = [
        Increment(result["aggregate"], result["event_id"], result["amount"], record.trace_id)
        for record, result in results
        if "aggregate" in result
    ]
    first_views = [
        Increment(DISTINCT_ARTICLES, result["first_view"], 1, record.trace_id)
        for record, result in results
        if "first_view" in result
    ]
    if site:
        clients.counter().increment_many(site)
    if first_views:
        clients.counter(ARTICLE_MARKER_TTL).increment_many(first_views)


@stream_handler(commit=count_aggregates)
def handler(change: dict[str, Any], context: Any) -> dict[str, Any]:
    keys = change["keys"]
    pk, sk = keys.get("PK"), keys.get("SK")
    if not isinstance(pk, str) or not isinstance(sk, str):
        return {"ignored": "not a PK/SK item"}
    if change["event_name"] == "INSERT" and sk.startswith(MARKER_PREFIX):
        return _view_marker(pk, change["new_image"] or {})
    if change["event_name"] in ("INSERT", "MODIFY") and sk == COUNTER_SK:
        url = url_of_article_key(pk)
        if url is not None:
            return _article_total(url, _count(change["old_image"]), _count(change["new_image"]))
    return {"ignored": pk}


def _view_marker(pk: str, marker: dict[str, Any]) -> dict[str, Any]:
    amount = int(marker.get("amount", 1))
    if url_of_article_key(pk) is not None:
        key = SITE_VIEWS
    else:
        day = day_of_day_key(pk)
        if day is None:
            return {"ignored": pk}
        key = site_day_key(day[1])
    return {"aggregate": key, "event_id": _stream_event_id(), "amount": amount}


def _article_total(url: str, old: int, new: int) -> dict[str, Any]:
    result: dict[str, Any] = {"url": url, "views": new}
    if old == 0 < new:
        result["first_view"] = article_event_id(url)
    crossed = milestones_crossed(old, new)
    if crossed:
        sns = clients.client("sns")
        topic = clients.setting("MILESTONES_TOPIC_ARN")
        for milestone in crossed:
            message = {"url": url, "views": new, "milestone": milestone}
            log.info("milestone crossed", extra=message)
            sns.publish(TopicArn=topic, Message=json.dumps(message, ensure_ascii=False))
        result["milestones"] = crossed
    return result


def _count(image: dict[str, Any] | None) -> int:
    return int((image or {}).get(COUNT_ATTRIBUTE, 0))


def _stream_event_id() -> str:
    record = current_record()
    return record.raw.get("eventID") or record.id
