"""Errors a handler raises on purpose."""

from __future__ import annotations


class HTTPError(Exception):
    """Raise in an ``api_handler`` function to answer ``status`` with ``{"error": message, "trace_id": ...}``."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = int(status)
        self.message = message
        self.headers = headers or {}
