"""The errors of lambda_kit: those a handler raises on purpose (``HTTPError``), and those a record
fails with when it never reached the function or broke a rule of the decorator."""

from __future__ import annotations


class HTTPError(Exception):
    """Raise in an ``api_handler`` function to answer ``status`` with
    ``{"error": message, "trace_id": ...}``."""

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


class InvalidPayload(ValueError):
    """A payload that does not fit the decorator's ``model=``: its record fails without reaching the
    function. ``problems`` lists ``{"field": "items[0].qty", "problem": "..."}``; no value from the
    payload is ever part of it (a secret-named field shows only the kind of problem)."""

    def __init__(self, model: str, problems: list[dict[str, str]], total: int | None = None) -> None:
        self.model = model
        self.problems = problems
        self.total = len(problems) if total is None else total
        more = f"; and {self.total - len(problems)} more" if self.total > len(problems) else ""
        self.listing = "; ".join(f"{problem['field']}: {problem['problem']}" for problem in problems) + more
        """Each field and its problem, as one line of text."""
        super().__init__(f"payload does not fit {model}: {self.listing}")


class UndecodableRecord(ValueError):
    """A record whose payload could not be read; it fails without reaching the function."""


class CommitFailed(RuntimeError):
    """The batch's ``commit`` reported this record as failed."""


class GroupHeldBack(RuntimeError):
    """Not processed: an earlier record of its ordering group (FIFO message group) failed."""


class DeadlineNear(RuntimeError):
    """Not started: too little of the invocation's time was left (``deadline_margin_ms``); its
    source retries it."""


class BatchResponseReturned(TypeError):
    """The per-record function returned a Lambda batch response (``{"batchItemFailures": ...}``),
    which the decorator builds itself: the record fails rather than pass as processed."""

    def __init__(self) -> None:
        super().__init__(
            'the function returned {"batchItemFailures": ...}: it is called once per record and the '
            "decorator builds the batch response itself; raise to fail this record"
        )
