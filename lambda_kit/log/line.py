"""The one log-line builder (``emit``) and its one writer (``write``).

Every line lambda_kit writes, the decorators' own and those of ``get_logger`` loggers, is made by
``emit``: the base fields (``timestamp``, ``level``, ``message``, ``function_name``,
``request_id``; inside a record's scope its ``trace_id``, its tracer's keys and its ``record_id``),
then the line's own fields, then the caller's ``extra`` (a key the line already has is written as
``extra_<key>``). What comes from outside goes through ``mask.clean``, the one masking rule: the
line's own fields hold it already cleaned (a payload, a result, an error's text), every ``extra``
value is cleaned here. ``write`` encodes the line (``encode``: the codec's JSON of what
``clean`` already made plain, the Unicode line breaks a reader would split on escaped, the largest
fields of a line over ``MAX_LINE_CHARS`` bytes cut) and hands it to the sink (standard output
unless ``set_sink``). Adding a field to every line is one edit, in ``emit``.

Writes are what a line costs under Lambda's runtime (its standard output is unbuffered: every
``write`` is a system call), so a line may be *held* (``emit(..., hold=True)``: a record's
``processed`` line) and goes out with the next line written, or at ``flush`` (the end of the
invocation): at the defaults one write per record, and the record in flight always has its
``received`` line out. A record that is *buffered* (``Record.buffered``, the decorators'
``log_buffer=True``) keeps its lines below WARN until it ends: written before its ERROR line if it
fails, dropped if it succeeds.

Levels are Lambda's (TRACE, DEBUG, INFO, WARN, ERROR, FATAL; ``WARNING`` and ``CRITICAL`` are read
as WARN and FATAL), and the ``level`` a line carries is Lambda's name, which Lambda's log-level
filtering reads. The function's logging configuration (``AWS_LAMBDA_LOG_LEVEL``) is a floor:
``LAMBDA_KIT_LOG_LEVEL`` or ``LOG_LEVEL`` may raise the level, never lower it.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any

from .. import codec
from ..trace import is_valid_id, record_in_scope
from .mask import clean, clean_fields, cut, text_of

if TYPE_CHECKING:
    from ..context import LambdaContext
    from ..record import Record

MAX_LINE_CHARS = 64 * 1024  # bytes of UTF-8, newline not counted
LEVELS = {
    "TRACE": 5,
    "DEBUG": 10,
    "INFO": 20,
    "WARN": 30,
    "WARNING": 30,
    "ERROR": 40,
    "FATAL": 50,
    "CRITICAL": 50,
}
"""Lambda's level names (and ``logging``'s for the same levels), by number."""
NAMES = {5: "TRACE", 10: "DEBUG", 20: "INFO", 30: "WARN", 40: "ERROR", 50: "FATAL"}
"""The name a line of each level carries: Lambda's."""
LAMBDA_NAMES = {"WARNING": "WARN", "CRITICAL": "FATAL"}
"""``logging``'s names Lambda does not read, as a line writes them."""
WARN = LEVELS["WARN"]
BASE_KEYS = ("timestamp", "level", "message", "function_name", "request_id", "trace_id", "record_id")
_UNCUT = ("timestamp", "level", "trace_id")
_UNICODE_LINE_BREAKS = (("\x85", "\\u0085"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))
MAX_BUFFERED_BYTES = 256 * 1024
"""What a buffered record may hold (``log_buffer``); beyond it its oldest lines are dropped."""


# --- levels ----------------------------------------------------------------------------------------


def levels_from_environment() -> tuple[int, str | None]:
    """(the level, the WARN line to write at init if the environment's levels disagree or one is
    no level). ``AWS_LAMBDA_LOG_LEVEL`` (the function's logging config) is a floor;
    ``LAMBDA_KIT_LOG_LEVEL``, else ``LOG_LEVEL``, may raise it; INFO when none is set."""
    problems = []
    floor = own = None
    for variable in ("AWS_LAMBDA_LOG_LEVEL", "LAMBDA_KIT_LOG_LEVEL", "LOG_LEVEL"):
        raw = os.environ.get(variable, "")
        if not raw:
            continue
        level = LEVELS.get(raw.strip().upper())
        if level is None:
            problems.append(
                f"{variable}={raw[:40]!r} is no log level (TRACE, DEBUG, INFO, WARN, ERROR, FATAL)"
            )
        elif variable == "AWS_LAMBDA_LOG_LEVEL":
            floor = level
        elif own is None:
            own = (variable, level)
    if own is None:
        level = LEVELS["INFO"] if floor is None else floor
    elif floor is not None and own[1] < floor:
        problems.append(
            f"{own[0]}={NAMES[own[1]]} is below the function's log level (AWS_LAMBDA_LOG_LEVEL="
            f"{NAMES[floor]}), which wins: raise it in the function's logging configuration"
        )
        level = floor
    else:
        level = own[1]
    return level, "; ".join(problems) or None


def level_from_environment() -> int:
    """The level the environment sets (``levels_from_environment``)."""
    return levels_from_environment()[0]


_threshold, _level_problem = levels_from_environment()
_on_level_change: list[Callable[[int], None]] = []


def set_level(level: str | int) -> None:
    """Set the level below which lambda_kit's own lines (and ``get_logger`` loggers') are dropped:
    a level name (Lambda's or ``logging``'s) or number."""
    global _threshold
    _threshold = LEVELS[level.strip().upper()] if isinstance(level, str) else int(level)
    for listener in _on_level_change:
        listener(_threshold)


def on_level_change(listener: Callable[[int], None]) -> None:
    """Call ``listener(level)`` whenever ``set_level`` changes the level (``get_logger``'s loggers)."""
    _on_level_change.append(listener)


def enabled(levelno: int) -> bool:
    return levelno >= _threshold


def threshold() -> int:
    """The level below which lines are dropped (``set_level``, else the environment's)."""
    return _threshold


# --- the invocation being served -------------------------------------------------------------------

_invocation: ContextVar[tuple[str | None, str | None]] = ContextVar(
    "lambda_kit_invocation", default=(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"), None)
)


def enter_invocation(
    context: LambdaContext | None,
) -> tuple[Token[tuple[str | None, str | None]], str | None]:
    """Stamp the lines written until ``leave_invocation`` with this invocation's function name and
    request id; returns (token, function name)."""
    name = _text_attribute(context, "function_name") or os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
    return _invocation.set((name, _text_attribute(context, "aws_request_id"))), name


def _text_attribute(context: object, name: str) -> str | None:
    """A context attribute that is text (Lambda's are); anything else is not written."""
    value = getattr(context, name, None)
    return clean(value) if isinstance(value, str) else None


def leave_invocation(token: Token[tuple[str | None, str | None]]) -> None:
    _invocation.reset(token)


def current_function_name() -> str | None:
    return _invocation.get()[0]


# --- the sink --------------------------------------------------------------------------------------

_sink: Callable[[str], None] | None = None  # None: standard output (the one Lambda ships)


def set_sink(write_text: Callable[[str], None] | None) -> Callable[[str], None] | None:
    """Send every line to ``write_text`` instead of standard output (the local stack's log file);
    ``None``: standard output again. Returns the sink it replaces (None for standard output)."""
    global _sink
    previous, _sink = _sink, write_text
    return previous


_held = threading.local()  # .text: lines held for this thread's next write (``hold``)


def flush() -> None:
    """Write the held lines and flush standard output (the end of an invocation)."""
    held = getattr(_held, "text", "")
    if held:
        _held.text = ""
        _out(held)
    if _sink is None:
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            pass


# --- building a line -------------------------------------------------------------------------------

_stamp: tuple[int, str] = (-1, "")  # the last millisecond written and its text: the lines of one share it


def timestamp(now: float) -> str:
    """``now`` as ISO 8601 UTC text, to the millisecond."""
    global _stamp
    millisecond = int(now * 1000)
    if millisecond != _stamp[0]:
        second, fraction = divmod(millisecond, 1000)
        _stamp = (millisecond, f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(second))}.{fraction:03d}Z")
    return _stamp[1]


_NO_KEYS: dict[str, Any] = {}


def record_keys(record: Record) -> dict[str, Any]:
    """What every line of ``record`` carries after the base fields, made once per record: its
    trace id, its tracer's keys (``Record.log_keys``), its id."""
    record.line_keys = {"trace_id": record.trace_id, **(record.log_keys or {}), "record_id": clean(record.id)}
    return record.line_keys


def emit(
    level: str,
    message: object,
    trace_id: str | None = None,
    fields: Mapping[str, Any] | None = None,
    extra: Mapping[str, object] | None = None,
    now: float | None = None,
    hold: bool = False,
) -> None:
    """Write one line: the base fields (``timestamp``, ``level`` as Lambda names it, ``message``,
    ``function_name``, ``request_id``; inside a record's scope the record's keys,
    ``record_keys``; else the ``trace_id`` given, if any), then ``fields`` (the line's own:
    JSON-ready, what came from outside already ``clean``), then ``extra`` (a caller's, cleaned
    here: renamed ``extra_<key>`` where the line already has the key, or for a ``trace_id`` that
    is no valid id). ``message`` is the caller's text (a user's is cleaned by ``get_logger``'s
    loggers); ``trace_id`` defaults to the current record's. ``hold``: the line may wait for the
    next write (module docstring). Every line of lambda_kit is made here: this is its hot path,
    written with as few calls as it takes."""
    if now is None:
        now = time.time()
    stamp = _stamp[1] if int(now * 1000) == _stamp[0] else timestamp(now)
    function_name, request_id = _invocation.get()
    record = record_in_scope()
    if record is not None and (trace_id is None or trace_id == record.trace_id):
        keys = record.line_keys or record_keys(record)
    else:
        keys = _NO_KEYS if trace_id is None else {"trace_id": trace_id}
    line = {
        "timestamp": stamp,
        "level": LAMBDA_NAMES.get(level, level),
        "message": message,
        "function_name": function_name,
        "request_id": request_id,
        **keys,
        **(fields or _NO_KEYS),
    }
    if extra:
        add_extra(line, extra)
    if record is not None and record.buffered is not None and not hold and LEVELS.get(level, 0) < WARN:
        buffer(record, encode(line))
        return
    write(line, hold)


def add_extra(line: dict[str, Any], extra: Mapping[str, object]) -> None:
    """A caller's ``extra`` fields, cleaned, after the line's own: a key the line already has is
    written as ``extra_<key>``, and so is a ``trace_id`` that is no valid id."""
    for key, value in clean_fields(extra).items():
        taken = key in line or (key == "trace_id" and not is_valid_id(value))
        line[f"extra_{key}" if taken else key] = value


def buffer(record: Record, text: str) -> None:
    """Keep a line of a buffered record (oldest first, at most ``MAX_BUFFERED_BYTES``)."""
    held = record.buffered
    if held is None:
        return
    held.append(text)
    record.buffered_size += len(text)
    while record.buffered_size > MAX_BUFFERED_BYTES and len(held) > 1:
        record.buffered_size -= len(held.pop(0))
        record.buffered_dropped += 1


def release(record: Record) -> None:
    """Write a failed buffered record's lines, in one write, before its ERROR line."""
    held, record.buffered = record.buffered, None
    if held:
        _out("".join(text + "\n" for text in held))


def error_fields(exc: BaseException) -> dict[str, Any]:
    """An exception's fields, ready for a line: its type, its text and its traceback, cleaned."""
    return {
        "error_type": type(exc).__name__,
        "error": clean(safe_str(exc)),
        "traceback": clean("".join(traceback.format_exception(exc))),
    }


def safe_str(exc: BaseException) -> str:
    return text_of(exc)


# --- writing a line --------------------------------------------------------------------------------


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _escaped(text: str) -> str:
    """The Unicode line breaks escaped: legal raw in JSON, yet they split a line for
    ``str.splitlines`` and some log viewers."""
    if text.isascii():
        return text
    for char, escape in _UNICODE_LINE_BREAKS:
        text = text.replace(char, escape)
    return text


def _fit(line: dict[str, Any]) -> str:
    """Cut the largest fields until the line is at most ``MAX_LINE_CHARS`` bytes, each from its
    own text (one marker), at budgets of 16, 4, 1 KiB, then 256 characters."""
    texts = {key: value if type(value) is str else codec.dumps_plain(value) for key, value in line.items()}
    budget = MAX_LINE_CHARS // 4
    while budget >= 256:
        fitted = {
            key: cut(texts[key], budget) if key not in _UNCUT and _utf8_size(texts[key]) > budget else value
            for key, value in line.items()
        }
        text = _escaped(codec.dumps_plain(fitted))
        if _utf8_size(text) <= MAX_LINE_CHARS:
            return text
        budget //= 4
    # too many fields to fit even cut short: the base fields (each at most 1 KiB), and how many others went
    kept = {key: _at_most(line[key], 1_024) for key in BASE_KEYS if key in line}
    kept["fields_dropped"] = len(line) - len(kept)
    return _escaped(codec.dumps_plain(kept))


def _at_most(value: object, limit: int) -> Any:
    return cut(value, limit) if type(value) is str and len(value) > limit else value


def encode(line: dict[str, Any]) -> str:
    """``line`` (of ``clean`` values: plain JSON data already) as one line of JSON text."""
    try:
        text = codec.dumps_plain(line)
    except Exception as exc:  # what ``clean`` let through and the codec refuses: the base fields, and why
        kept = {key: line[key] for key in BASE_KEYS if key in line}
        text = codec.dumps(clean({**kept, "log_error": text_of(exc)}))
    if not text.isascii():
        text = _escaped(text)
    if len(text) > MAX_LINE_CHARS // 4 and _utf8_size(text) > MAX_LINE_CHARS:
        text = _fit(line)
    return text


def write(line: dict[str, Any], hold: bool = False) -> None:
    """The one writer: ``line`` as one JSON line, to the sink, with the lines held before it;
    ``hold``: kept for the next write instead (standard output only: a sink gets each line as it
    comes)."""
    text = encode(line) + "\n"
    if _sink is not None:
        _sink(text)
        return
    held = getattr(_held, "text", "")
    if hold:
        _held.text = held + text
        return
    if held:
        _held.text = ""
        text = held + text
    sys.stdout.write(text)


def _out(text: str) -> None:
    """Lines already encoded, to the sink (each line) or standard output (one write)."""
    if _sink is None:
        sys.stdout.write(text)
        return
    for each in text.splitlines(keepends=True):
        _sink(each)


def warn_level_problem() -> None:
    """The one WARN line about the environment's log levels, at init (``levels_from_environment``)."""
    if _level_problem is not None:
        emit("WARN", "log level: " + _level_problem, fields={"source": "lambda_kit"})


warn_level_problem()
