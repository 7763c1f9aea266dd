"""View counter: counts each view from the views queue exactly once (article total + day bucket).

Each message is validated on its own: one that is not a view event fails alone
(``batchItemFailures``). The views the batch accepted are then counted together, with one
``increment_many`` (see ``handlers.counting``), so a batch of 100 costs about two transactions and a
redelivered message is a duplicate, never a second count.
"""

from __future__ import annotations

from typing import Any

from handlers.counting import accepted, count_views
from handlers.views import parse_view
from lambda_kit import sqs_handler


@sqs_handler(commit=count_views)
def handler(message: Any, context: Any) -> dict[str, Any]:
    return accepted(parse_view(message))
