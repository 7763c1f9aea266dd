"""Clickstream: bulk view events from a Kinesis stream, counted like the views queue's.

Same validation, same event id, same counter keys and the same batch commit as
``handlers.counter``: a view that arrives both here and through ``POST /views`` is counted once.
A record that is not a view is put back on the stream and, after its last attempt, sent to
``CLICKSTREAM_DLQ_URL``; the batch goes on.
"""

from __future__ import annotations

import os
from typing import Any

from handlers.counting import accepted, count_views
from handlers.views import parse_view
from lambda_kit import stream_handler


def _dead_letter() -> str | None:
    return os.environ.get("CLICKSTREAM_DLQ_URL")


@stream_handler(on_failure="requeue", dead_letter=_dead_letter, commit=count_views)
def handler(payload: Any, context: Any) -> dict[str, Any]:
    return accepted(parse_view(payload))
