"""Tumbling windows: the state of a Kinesis or DynamoDB Streams window, in and out.

With ``tumblingWindowInSeconds`` on a stream's event source mapping, every invocation carries the
window (``window.start``/``end``), the ``state`` the previous invocation of that window returned,
the shard, and two flags, ``isFinalInvokeForWindow`` and ``isWindowTerminatedEarly``. The response
must carry ``state`` back, next to the failure report: Lambda counts a response without it as a
failed invocation. The state may be at most 1 MB per shard.

While a batch runs, ``current_window()`` is its window. lambda_kit keeps the state it returns
consistent with the checkpoint Lambda resumes from:

- a record whose function raises leaves no change in the state: its changes are undone;
- a record after which the state cannot be returned (not JSON, over 1 MB) fails itself, its changes
  undone, with an error naming the problem;
- with a failure reported, the state returned is the state before the failed record; when that
  cannot be had (a record after it, or ``commit``, changed the state) the invocation raises
  ``WindowStateError`` and Lambda retries the batch with the state it came with;
- on the window's final invocation (or one Lambda ends early), ``on_window_end(window)`` runs after
  the records when none failed. A failure there, or in a record, makes the invocation raise: Lambda
  retries it until it succeeds (it "suspends further processing until a successful invocation").

Adapters take part through ``Windowed`` (the batch's scope and response); the decorator wraps the
function with ``guarded`` (one record's changes kept or undone). The record loop knows none of it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from datetime import UTC, datetime
from time import perf_counter
from typing import TYPE_CHECKING, Any, NoReturn

from .. import codec, log
from ..record import Outcome, Record
from ..trace import current_record, stable_id

if TYPE_CHECKING:
    from ..context import LambdaContext
    from .base import Event

STATE_LIMIT = 1024 * 1024
"""Lambda's limit on a window's state, 1 MB per shard: bytes of the state's JSON."""

_window: ContextVar[Window | None] = ContextVar("lambda_kit_window", default=None)


class WindowStateError(RuntimeError):
    """The window's state cannot go back to Lambda: it is not JSON, it is too big, or it no longer
    matches the records reported as failed."""


def current_window() -> Window | None:
    """The tumbling window of the batch being processed (``.state``, ``.start``, ``.end``,
    ``.is_final`` ...), else None: outside a handler, or on a stream without a tumbling window."""
    return _window.get()


class Window:
    """One invocation's view of a tumbling window (what ``current_window()`` returns).

    ``state`` is the dict your function may change: what Lambda sends back in the window's next
    invocation. ``start`` and ``end`` are the window's bounds (aware UTC ``datetime``); ``is_final``
    is set on the window's last invocation, after which Lambda drops the state; ``terminated_early``
    when Lambda ended the window early (AWS: when its state grows over 1 MB): the next invocation
    continues the same window with an empty state. ``shard_id`` and ``event_source_arn``
    say where the records come from.
    """

    __slots__ = (
        "start",
        "end",
        "shard_id",
        "event_source_arn",
        "is_final",
        "terminated_early",
        "trace_id",
        "_state",
        "_saved",
        "_calling",
        "_opened",
        "_changed_by",
        "_changed_outside",
    )

    def __init__(self, event: dict[str, Any]) -> None:
        bounds = event.get("window")
        if type(bounds) is not dict:
            raise WindowStateError("the event's window is not an object with start and end")
        self.start = _time(bounds.get("start"), "window.start")
        self.end = _time(bounds.get("end"), "window.end")
        state = event.get("state")
        if state is None:
            state = {}
        elif type(state) is not dict:
            raise WindowStateError(f"the event's state is a {type(state).__name__}, not a JSON object")
        self.shard_id = _text(event, "shardId")
        self.event_source_arn = _text(event, "eventSourceARN")
        self.is_final = _flag(event, "isFinalInvokeForWindow")
        self.terminated_early = _flag(event, "isWindowTerminatedEarly")
        self.trace_id = stable_id(f"{self.shard_id}:{bounds['start']}")
        self._state: dict[str, Any] = state
        self._saved: str | None = None  # the state's JSON when last known good (None: not read yet)
        self._calling: Record | None = None  # the record whose call is running
        self._opened = False  # the running call read the state
        self._changed_by: list[Record] = []  # records whose successful calls read the state
        self._changed_outside = False  # read outside any record's call (``commit`` ...)

    @property
    def state(self) -> dict[str, Any]:
        """The window's state, returned to Lambda after the batch (read it in each call)."""
        if self._saved is None:
            try:
                self._saved = _json_text(self._state)
            except ValueError as exc:
                raise WindowStateError(
                    f"the window state Lambda sent cannot be encoded: it holds {exc}"
                ) from None
        if self._calling is not None:
            self._opened = True
        else:
            self._changed_outside = True
        return self._state

    @property
    def ends(self) -> bool:
        """This invocation is the last with this state: the window's final one, or ended early."""
        return self.is_final or self.terminated_early

    def __repr__(self) -> str:
        return (
            f"Window(shard_id={self.shard_id!r}, start={_utc_text(self.start)}, end={_utc_text(self.end)}, "
            f"is_final={self.is_final})"
        )

    # --- one record's call ---------------------------------------------------------------------

    def run(self, function: Callable[[Any, Any], Any], payload: Any, context: LambdaContext | None) -> Any:
        """Call ``function`` for the current record: its changes to the state are kept when it
        returns and leaves a state Lambda can take back, else undone (and the record fails). An
        awaitable it returns is run to its end here, inside the record's call."""
        record = self._enter()
        try:
            result = _finished(function(payload, context))
        except BaseException:
            self._abandon()
            raise
        self._leave(record)
        return result

    async def run_async(
        self, function: Callable[[Any, Any], Any], payload: Any, context: LambdaContext | None
    ) -> Any:
        """``run`` for an ``async def``, awaited. The records of a windowed batch run one at a time
        (``Windowed.serial``), so each record's changes are its own."""
        record = self._enter()
        try:
            result = await function(payload, context)
        except BaseException:
            self._abandon()
            raise
        self._leave(record)
        return result

    def _enter(self) -> Any:
        record = current_record()
        self._calling, self._opened = record, False
        return record

    def _abandon(self) -> None:
        """The call raised: its changes to the state are undone."""
        self._calling = None
        if self._opened:
            self._restore()

    def _leave(self, record: Record) -> None:
        """The call returned: its changes are kept when the state can go back to Lambda."""
        self._calling = None
        if self._opened:
            self._settle(record)

    def _settle(self, record: Record) -> None:
        try:
            text = _json_text(self._state)
        except ValueError as exc:
            self._restore()
            raise WindowStateError(
                f"after this record the window state is not JSON: it holds {exc}; its changes are undone "
                "(keep only dicts with string keys, lists, strings, numbers, booleans and None in the state)"
            ) from None
        size = _utf8_size(text)
        if size > STATE_LIMIT:
            self._restore()
            raise WindowStateError(
                f"after this record the window state is {size} bytes of JSON, over Lambda's "
                f"{STATE_LIMIT}-byte limit: its changes are undone; keep less in the state"
            )
        self._saved = text
        self._changed_by.append(record)

    def _restore(self) -> None:
        """Put the state back as it was before the running call (in place: a reference your
        function kept still sees the window's state)."""
        assert self._saved is not None
        before = codec.loads(self._saved)
        self._state.clear()
        self._state.update(before)

    # --- the response ----------------------------------------------------------------------------

    def respond(
        self,
        event: Event,
        outcome: Outcome,
        reported: dict[str, Any],
        on_window_end: Callable[[Window], Any] | None,
    ) -> dict[str, Any]:
        """The response with the state (``reported`` is the failure report), or raise when the
        state cannot go back consistent with it; runs ``on_window_end`` when the window ends."""
        if outcome.failures:
            self._check_failed(event, outcome)
        if self._changed_by or self._changed_outside:
            self._check_returnable()
        if self.ends and on_window_end is not None:
            self._end(on_window_end)
        return {"state": self._state, **reported}

    def _check_failed(self, event: Event, outcome: Outcome) -> None:
        """With failures: the window's last invocation raises the first (Lambda retries it, and
        ``on_window_end`` does not run); any other fails when the state counts a failed record."""
        if self.ends:
            self._emit(
                "WARN",
                "window end not run: a record of the window's last invocation failed; "
                "Lambda retries the invocation",
            )
            raise outcome.failures[0][1]
        if not self._consistent(event, outcome):
            self._fail("records after the failed one changed the window state")

    def _consistent(self, event: Event, outcome: Outcome) -> bool:
        """Whether every change to the state comes from a record before the first reported
        failure: Lambda resumes from that record, so the state must not count it or later ones."""
        if self._changed_outside:
            return False
        positions: dict[Any, int] = {}
        for index, raw in enumerate(event.get("Records") or ()):
            positions.setdefault(id(raw), index)
            positions.setdefault(_sequence_number(raw), index)
        positions.pop(None, None)

        def position(record: Record, unknown: int) -> int:
            """Where the record's stream record is in the batch: its raw itself, or (a KPL user
            record, a copy of its aggregate's) the same sequence number."""
            found = positions.get(id(record.raw))
            return found if found is not None else positions.get(_sequence_number(record.raw), unknown)

        first_failed = min(position(record, -1) for record, _ in outcome.failures)
        return all(position(record, first_failed) < first_failed for record in self._changed_by)

    def _check_returnable(self) -> None:
        """The state as it goes back: JSON and within Lambda's limit, else the invocation fails."""
        try:
            size = _utf8_size(_json_text(self._state))
        except ValueError as exc:
            self._fail(f"the window state is not JSON: it holds {exc}")
        if size > STATE_LIMIT:
            self._fail(f"the window state is {size} bytes of JSON, over Lambda's {STATE_LIMIT}-byte limit")

    def _fail(self, why: str) -> NoReturn:
        """Fail the invocation: Lambda retries the batch with the state it came with."""
        error = WindowStateError(
            f"{why}: the invocation fails, and Lambda retries the batch with the window state it came with"
        )
        self._emit(
            "ERROR",
            "window state not returned",
            {"error_type": "WindowStateError", "error": log.clean(str(error))},
        )
        raise error

    def _end(self, on_window_end: Callable[[Window], Any]) -> None:
        started = perf_counter()
        try:
            result = _finished(on_window_end(self))  # an async def's too
        except Exception as exc:
            self._emit(
                "ERROR",
                "window end failed; Lambda retries the invocation",
                {"duration_ms": _since(started), **log.error_fields(exc)},
            )
            raise
        self._emit("INFO", "window ended", {"duration_ms": _since(started), "result": log.clean(result)})

    def _emit(self, level: str, message: str, fields: dict[str, Any] | None = None) -> None:
        log.emit(
            level,
            message,
            self.trace_id,
            {
                "shard_id": log.clean(self.shard_id),
                "window_start": _utc_text(self.start),
                "window_end": _utc_text(self.end),
                "is_final": self.is_final,
                "terminated_early": self.terminated_early,
                **(fields or {}),
            },
        )


# --- how adapters and decorators take part ----------------------------------------------------------


class Scope:
    """The batch's window made current while the batch runs (``Windowed.scope``)."""

    __slots__ = ("event", "token")

    def __init__(self, event: dict[str, Any]) -> None:
        self.event = event

    def __enter__(self) -> Window:
        try:
            window = Window(self.event)
        except WindowStateError as exc:
            log.emit(
                "ERROR",
                "event not processed: malformed tumbling window",
                None,
                {
                    "error_type": "WindowStateError",
                    "error": log.clean(str(exc)),
                    "window": log.clean(
                        {key: self.event.get(key) for key in WINDOW_KEYS if key in self.event}
                    ),
                },
            )
            raise
        self.token = _window.set(window)
        return window

    def __exit__(self, *exc_info: Any) -> None:
        _window.reset(self.token)


WINDOW_KEYS = (
    "window",
    "state",
    "shardId",
    "eventSourceARN",
    "isFinalInvokeForWindow",
    "isWindowTerminatedEarly",
)


class Windowed:
    """For stream adapters (Kinesis, DynamoDB Streams): an event with a ``window`` is read as a
    tumbling window; the response carries its state back. Put it before ``Source`` in the bases."""

    on_window_end: Callable[[Window], Any] | None = None

    def scope(self, event: Event) -> Any:
        if "window" in event:
            return Scope(event)
        return super().scope(event)  # type: ignore[misc]

    def serial(self) -> bool:
        """A windowed batch runs one record at a time, whatever ``max_concurrency``: its state is
        kept or undone record by record."""
        return _window.get() is not None

    def wrap(self, function: Callable[[Any, Any], Any], asynchronous: bool) -> Callable[[Any, Any], Any]:
        """``function`` as the decorator calls it: each record's changes to the window state kept
        or undone (``guarded``)."""
        return guarded(function, asynchronous)

    def response(self, event: Event, outcome: Outcome) -> Any:
        reported = super().response(event, outcome)  # type: ignore[misc]
        window = _window.get()
        if window is None:
            return reported
        return window.respond(event, outcome, reported, self.on_window_end)


def guarded(function: Callable[[Any, Any], Any], asynchronous: bool = False) -> Callable[[Any, Any], Any]:
    """``function`` with each record's changes to the window state kept or undone (``Window.run``,
    ``Window.run_async`` for an ``async def``); a plain call when the batch has no window."""

    if asynchronous:

        async def call_async(payload: Any, context: LambdaContext | None) -> Any:
            window = _window.get()
            if window is None:
                return await function(payload, context)
            return await window.run_async(function, payload, context)

        return call_async

    def call(payload: Any, context: LambdaContext | None) -> Any:
        window = _window.get()
        if window is None:
            return function(payload, context)
        return window.run(function, payload, context)

    return call


# --- reading the event and checking the state ----------------------------------------------------------


def _finished(result: Any) -> Any:
    """``result``, or when it is an awaitable (an ``async def``'s), what it gives, run to its end."""
    if result is None or not hasattr(result, "__await__"):
        return result
    from ..loop.event_loop import awaited  # asyncio, only for functions that return awaitables (cold start)

    return awaited(result)


def _time(value: object, field: str) -> Any:
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
            return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
        except (ValueError, OverflowError):  # not a time, or one UTC cannot hold (year 1 at +14:00)
            pass
    raise WindowStateError(f"the event's {field} is {log.brief(value, 80)}, not an ISO 8601 time")


def _text(event: dict[str, Any], key: str) -> str | None:
    value = event.get(key)
    if value is None or isinstance(value, str):
        return value
    raise WindowStateError(f"the event's {key} is a {type(value).__name__}, not text")


def _sequence_number(raw: object) -> str | None:
    """A stream record's sequence number (Kinesis, flattened Kinesis, DynamoDB Streams), else None."""
    if type(raw) is not dict:
        return None
    fields = raw.get("kinesis", raw.get("dynamodb", raw))
    found = fields.get("sequenceNumber", fields.get("SequenceNumber")) if type(fields) is dict else None
    return found if isinstance(found, str) else None


def _utc_text(moment: object) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _flag(event: dict[str, Any], key: str) -> bool:
    value = event.get(key)
    if value is None or type(value) is bool:
        return bool(value)
    raise WindowStateError(f"the event's {key} is {log.brief(value, 80)}, not true or false")


def _json_text(state: object) -> str:
    """``state`` as JSON text exactly as it is, else ``ValueError`` naming what JSON cannot hold.

    The codec writes what a log line can hold (sets as lists, ``Decimal`` as numbers, bytes as
    text, non-string keys as text: ``lambda_kit.codec``), which would come back from Lambda as
    something else: the state is walked first, so only JSON's own types go back."""
    problem = _json_problem(state)
    if problem is not None:
        raise ValueError(problem)
    try:
        return codec.dumps(state)
    except Exception as exc:
        raise ValueError(f"a value the JSON codec refuses ({log.safe_str(exc)[:200]})") from None


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _since(started: float) -> float:
    return round((perf_counter() - started) * 1000, 3)


_JSON_SCALARS = (str, bool, type(None))


def _json_problem(state: object) -> str | None:
    """What in ``state`` JSON cannot hold as it is (``"a set at ['tags']"``), else None: keys that
    are not strings, numbers that are not finite or beyond 64-bit integers, and any other type."""
    stack: list[tuple[Any, str]] = [(state, "")]
    while stack:
        value, path = stack.pop()
        check = _CHECKS.get(type(value), _other)
        problem = check(value, path, stack)
        if problem is not None:
            return problem
    return None


def _dict_problem(value: dict[Any, Any], path: str, stack: list[tuple[Any, str]]) -> str | None:
    for key, item in value.items():
        if type(key) is not str:
            return f"{_a(type(key).__name__)} key {log.brief(key, 40)} at {path or 'the top'}"
        stack.append((item, f"{path}[{key[:40]!r}]"))
    return None


def _list_problem(value: object, path: str, stack: list[tuple[Any, str]]) -> str | None:
    stack.extend((item, f"{path}[{index}]") for index, item in enumerate(value))
    return None


def _float_problem(value: float, path: str, stack: list[tuple[Any, str]]) -> str | None:
    return None if value - value == 0 else f"{value!r} at {path}, which JSON cannot hold"


def _int_problem(value: int, path: str, stack: list[tuple[Any, str]]) -> str | None:
    return None if -(2**63) <= value < 2**64 else f"an integer beyond 64 bits at {path}"


def _other(value: object, path: str, stack: list[tuple[Any, str]]) -> str | None:
    kind = type(value)
    return None if kind in _JSON_SCALARS else f"{_a(kind.__name__)} at {path or 'the top'}"


_CHECKS: dict[type, Callable[[Any, str, list[tuple[Any, str]]], str | None]] = {
    dict: _dict_problem,
    list: _list_problem,
    tuple: _list_problem,
    float: _float_problem,
    int: _int_problem,
}


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"
