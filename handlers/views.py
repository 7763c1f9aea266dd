"""View events: validation, the event id, and the counter keys one view increments.

A view event is ``{"url": ..., "time": ..., "clientId": ...}``; ``(url, time, clientId)`` identifies
it. The same rules serve every way in (the API, the SQS counter, the Kinesis clickstream), so one
view arriving twice, by any path, has one event id and is counted once.

Normalization (what the event id is computed from):

- ``url``: surrounding whitespace and any ``#fragment`` removed (a fragment is a place in the page,
  not another article; it also keeps ``#`` out of the url, so keys split unambiguously).
- ``time``: ISO 8601 date and time; an offset is converted to UTC, no offset means UTC.
- ``clientId``: surrounding whitespace removed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lambda_kit.counters import MAX_KEY_BYTES, bucket_keys, to_utc

ARTICLE_PREFIX = "URL#"
DAY_INFIX = "#DAY#"
MAX_URL_CHARS = 2048
# The counter's own key limit is the one truth: a url the counter would refuse in a batch commit
# (failing every record of that batch) is refused here, for its own record alone.
MAX_URL_BYTES = MAX_KEY_BYTES - len(ARTICLE_PREFIX) - len(DAY_INFIX + "2022-03-28")
MAX_CLIENT_ID_CHARS = 256


class InvalidView(ValueError):
    """A payload that is not a view event; the message names the field to fix."""

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, slots=True)
class View:
    url: str
    time: datetime  # aware, UTC
    client_id: str

    @property
    def time_iso(self) -> str:
        return self.time.isoformat()

    @property
    def event_id(self) -> str:
        """A stable digest of the normalized ``(url, time, clientId)``: 32 hex characters."""
        triple = json.dumps(
            [self.url, self.time_iso, self.client_id], ensure_ascii=False, separators=(",", ":")
        )
        return hashlib.sha256(triple.encode("utf-8")).hexdigest()[:32]

    @property
    def day(self) -> str:
        """The UTC day of the view, ``YYYY-MM-DD``."""
        return self.time.strftime("%Y-%m-%d")

    def to_json(self) -> dict[str, str]:
        """The normalized event, as sent on to the queue."""
        return {"url": self.url, "time": self.time_iso, "clientId": self.client_id}


def _text(doc: dict[str, Any], field: str) -> str:
    if field not in doc or doc[field] is None:
        raise InvalidView(field, f"{field} is missing")
    value = doc[field]
    if not isinstance(value, str):
        raise InvalidView(field, f"{field} must be a string, not {type(value).__name__}")
    value = value.strip()
    if not value:
        raise InvalidView(field, f"{field} is blank")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise InvalidView(field, f"{field} contains control characters")
    return value


def normalize_url(value: Any) -> str:
    """The url as it is counted; :class:`InvalidView` naming ``url`` when it cannot be one."""
    url = _text({"url": value}, "url").split("#", 1)[0].strip()
    if not url:
        raise InvalidView("url", "url is blank")
    if len(url) > MAX_URL_CHARS:
        raise InvalidView("url", f"url is longer than {MAX_URL_CHARS:,} characters")
    if len(url.encode("utf-8")) > MAX_URL_BYTES:
        raise InvalidView(
            "url", f"url is longer than {MAX_URL_BYTES:,} bytes in UTF-8 (the most a key can hold)"
        )
    return url


def parse_view(doc: Any) -> View:
    """``doc`` as a :class:`View`, or :class:`InvalidView` naming the field to fix."""
    if not isinstance(doc, dict):
        raise InvalidView(None, "a view event must be a JSON object with url, time and clientId")
    url = normalize_url(doc.get("url"))
    time_text = _text(doc, "time")
    try:
        if len(time_text) <= 10:  # a date alone is not the time of a view
            raise ValueError(time_text)
        moment = to_utc(time_text)
    except (ValueError, TypeError):
        raise InvalidView(
            "time", "time must be an ISO 8601 date and time, e.g. 2022-03-28T13:17:23+00:00"
        ) from None
    client_id = _text(doc, "clientId")
    if len(client_id) > MAX_CLIENT_ID_CHARS:
        raise InvalidView("clientId", f"clientId is longer than {MAX_CLIENT_ID_CHARS} characters")
    return View(url, moment, client_id)


# --- keys ------------------------------------------------------------------------------------


def article_key(url: str) -> str:
    """Counter key of an article's total views: ``URL#myblog.com/article1``."""
    return ARTICLE_PREFIX + url


def day_key(url: str, day: str | datetime) -> str:
    """Counter key of an article's views on one UTC day: ``URL#myblog.com/article1#DAY#2022-03-28``."""
    return bucket_keys(article_key(url), day, ("DAY",))[0]


def increments(view: View) -> list[tuple[str, str]]:
    """What counting ``view`` increments: the article total and its day bucket, under one event id."""
    event_id = view.event_id
    return [(article_key(view.url), event_id), (day_key(view.url, view.time), event_id)]


def url_of_article_key(key: str) -> str | None:
    """The url when ``key`` is an article total key (``URL#<url>``), else None."""
    if key.startswith(ARTICLE_PREFIX) and "#" not in key[len(ARTICLE_PREFIX) :]:
        return key[len(ARTICLE_PREFIX) :]
    return None


def day_of_day_key(key: str) -> tuple[str, str] | None:
    """``(url, "YYYY-MM-DD")`` when ``key`` is an article day key, else None."""
    if not key.startswith(ARTICLE_PREFIX) or DAY_INFIX not in key:
        return None
    url, day = key[len(ARTICLE_PREFIX) :].rsplit(DAY_INFIX, 1)
    if "#" in url or len(day) != 10:
        return None
    return url, day
