"""What lambda_kit reads of the context Lambda passes a handler: a Protocol for type checkers only."""

from __future__ import annotations

from typing import Protocol


class LambdaContext(Protocol):
    """What Lambda passes as ``context`` (awslambdaric's ``LambdaContext``), as far as lambda_kit
    reads it; every attribute is read defensively, so a test may pass None or a partial object."""

    function_name: str
    aws_request_id: str

    def get_remaining_time_in_millis(self) -> int: ...
