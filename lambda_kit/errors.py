"""Errors a handler raises on purpose."""

from __future__ import annotations


class HTTPError(Exception):
    """Raise in an ``api_handler`` function to answer ``status`` with ``{"error": message, "trace_id": ...}``."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = int(status)
        self.message = message
        self.headers = headers or {}


class UnsupportedEvent(ValueError):
    """A decorator was given an event it cannot process (another source's, or no known shape).

    It is raised, never acknowledged: Lambda retries the event and the source's DLQ or on-failure
    destination keeps it. ``found`` says what the event looks like; ``fits`` names the decorator
    that processes it, when one does.
    """

    def __init__(self, decorator: str, expected: str, found: str, fits: str | None = None) -> None:
        hint = f"use {fits}" if fits else f"{decorator} processes {expected}"
        super().__init__(f"{decorator} cannot process {found}: {hint}")
        self.decorator = decorator
        self.found = found
        self.fits = fits
