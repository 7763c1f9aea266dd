"""Site-wide aggregates and milestones: their keys, the milestone rule, the milestone item.

=========================  ==============================  ===========================================
item                       PK                              SK / attributes
=========================  ==============================  ===========================================
site views                 ``AGG#VIEWS``                   ``COUNT`` (counter) + ``EVENT#<stream eventID>``
site views on a day        ``AGG#VIEWS#DAY#2022-03-28``    ``COUNT`` + ``EVENT#<stream eventID>``
distinct articles          ``AGG#ARTICLES``                ``COUNT`` + ``EVENT#<url>`` (kept ~100 years)
milestone                  ``MILESTONES``                  ``<url>#<milestone>``: url, milestone, views,
                                                           reached_at, trace_id
=========================  ==============================  ===========================================

Milestones share one partition so ``GET /stats`` lists them with one ``Query``: an article reaches a
milestone at most once per power of ten, so the partition stays small and cold.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, date, datetime, timedelta
from typing import Any

from lambda_kit.counters import bucket_keys

SITE_VIEWS = "AGG#VIEWS"
DISTINCT_ARTICLES = "AGG#ARTICLES"
MILESTONES_PK = "MILESTONES"
FIRST_MILESTONE = 10
DAYS_SHOWN = 30
ARTICLE_MARKER_TTL = timedelta(days=36500)  # "once per url" must outlive the default 7-day markers
MAX_EVENT_ID_BYTES = 1018  # a marker's sort key holds at most 1,024 bytes, "EVENT#" included


def site_day_key(day: str | datetime) -> str:
    """``AGG#VIEWS#DAY#2022-03-28``: views across the site on one UTC day."""
    return bucket_keys(SITE_VIEWS, day, ("DAY",))[0]


def article_event_id(url: str) -> str:
    """The event id that counts ``url`` once in :data:`DISTINCT_ARTICLES`: the url, or its digest
    when it is too long for a marker's sort key."""
    if len(url.encode("utf-8")) <= MAX_EVENT_ID_BYTES:
        return url
    return "sha256:" + hashlib.sha256(url.encode("utf-8")).hexdigest()


def milestones_crossed(old: int, new: int) -> list[int]:
    """The milestones (10, 100, 1,000, ...) a count passes going from ``old`` to ``new``:
    every ``m`` with ``old < m <= new``. A count only grows, so each is crossed by one change."""
    crossed = []
    milestone = FIRST_MILESTONE
    while milestone <= new:
        if milestone > old:
            crossed.append(milestone)
        milestone *= 10
    return crossed


def last_days(count: int = DAYS_SHOWN, today: date | None = None) -> list[str]:
    """The ``count`` UTC days ending today, oldest first, as ``YYYY-MM-DD``."""
    today = today or datetime.now(UTC).date()
    return [(today - timedelta(days=back)).isoformat() for back in range(count - 1, -1, -1)]


# --- milestones ------------------------------------------------------------------------------


def milestone_sk(url: str, milestone: int) -> str:
    return f"{url}#{milestone}"


def milestone_item(url: str, milestone: int, views: int, trace_id: str | None) -> dict[str, Any]:
    """The milestone as a DynamoDB item (attribute-value form), stamped with now."""
    item: dict[str, Any] = {
        "PK": {"S": MILESTONES_PK},
        "SK": {"S": milestone_sk(url, milestone)},
        "url": {"S": url},
        "milestone": {"N": str(milestone)},
        "views": {"N": str(views)},
        "reached_at": {"S": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")},
    }
    if trace_id:
        item["trace_id"] = {"S": trace_id}
    return item


def milestone_from_item(item: dict[str, Any]) -> dict[str, Any]:
    """A stored milestone as ``GET /stats`` shows it."""
    return {
        "url": item["url"]["S"],
        "milestone": int(item["milestone"]["N"]),
        "views": int(item["views"]["N"]),
        "reached_at": item.get("reached_at", {}).get("S"),
    }
