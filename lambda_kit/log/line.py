"""The one log-line builder (``emit``) and its one writer (``write``).

Every line lambda_kit writes, the decorators' own and those of ``get_logger`` loggers, is made by
``emit``: the base fields (``timestamp``, ``level``, ``message``, ``function_name``,
``request_id``; inside a record's scope its ``trace_id``, its tracer's keys and its ``record_id``),
then the line's own fields, then the caller's ``extra`` (a key the line already has is written as
``extra_<key>``). What comes from outside goes through ``mask.clean``, the one masking rule: the
line's own fields hold it already cleaned (a payload, a result, an error's text), every ``extra``
value is cleaned here. ``write`` encodes the line with the codec,
escapes the Unicode line breaks a reader would split on, cuts the largest fields of a line over
``MAX_LINE_CHARS`` bytes, and hands it to the sink (standard output unless ``set_sink``).
Adding a field to every line is one edit, in ``base``.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import Any

from .. import codec
from ..trace import record_in_scope
from .mask import clean, clean_fields, cut, text_of

MAX_LINE_CHARS = 64 * 1024  # bytes of UTF-8, newline not counted
LEVELS = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40, "CRITICAL": 50}
BASE_KEYS = ("timestamp", "level", "message", "function_name", "request_id", "trace_id", "record_id")
_UNCUT = ("timestamp", "level", "trace_id")
_UNICODE_LINE_BREAKS = (("\x85", "\\u0085"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


# --- levels ----------------------------------------------------------------------------------------


def level_from_environment() -> int:
    """``LAMBDA_KIT_LOG_LEVEL``, else ``LOG_LEVEL``, else ``AWS_LAMBDA_LOG_LEVEL``, else INFO."""
    for variable in ("LAMBDA_KIT_LOG_LEVEL", "LOG_LEVEL", "AWS_LAMBDA_LOG_LEVEL"):
        value = os.environ.get(variable, "").upper()
        if value in LEVELS:
            return LEVELS[value]
    return LEVELS["INFO"]


_threshold = level_from_environment()
_on_level_change: list[Callable[[int], None]] = []


def set_level(level: str | int) -> None:
    """Set the level below which lambda_kit's own lines (and ``get_logger`` loggers') are dropped."""
    global _threshold
    _threshold = LEVELS[level.upper()] if isinstance(level, str) else int(level)
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


def enter_invocation(context: Any) -> tuple[Token[tuple[str | None, str | None]], str | None]:
    """Stamp the lines written until ``leave_invocation`` with this invocation's function name and
    request id; returns (token, function name)."""
    name = _text_attribute(context, "function_name") or os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
    return _invocation.set((name, _text_attribute(context, "aws_request_id"))), name


def _text_attribute(context: Any, name: str) -> str | None:
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


def flush() -> None:
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


def record_keys(record: Any) -> dict[str, Any]:
    """What every line of ``record`` carries after the base fields, made once per record: its
    trace id, its tracer's keys (``Record.log_keys``), its id."""
    record.line_keys = {"trace_id": record.trace_id, **(record.log_keys or {}), "record_id": clean(record.id)}
    return record.line_keys


def emit(
    level: str,
    message: Any,
    trace_id: str | None = None,
    fields: dict[str, Any] | None = None,
    extra: Any = None,
    now: float | None = None,
) -> None:
    """Write one line: the base fields (``timestamp``, ``level``, ``message``, ``function_name``,
    ``request_id``; inside a record's scope the record's keys, ``record_keys``; else the
    ``trace_id`` given, if any), then ``fields`` (the line's own: JSON-ready, what came from
    outside already ``clean``), then ``extra`` (a caller's, cleaned here: renamed ``extra_<key>``
    where the line already has the key). ``message`` is the caller's text (a user's is cleaned by
    ``get_logger``'s loggers); ``trace_id`` defaults to the current record's. Every line of
    lambda_kit is made here: this is its hot path, written with as few calls as it takes."""
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
        "level": level,
        "message": message,
        "function_name": function_name,
        "request_id": request_id,
        **keys,
        **(fields or _NO_KEYS),
    }
    if extra:
        for key, value in clean_fields(extra).items():
            line[f"extra_{key}" if key in line else key] = value
    write(line)


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


def _dumps(line: dict[str, Any]) -> str:
    """The codec's JSON with the Unicode line breaks escaped: legal raw in JSON, yet they split a
    line for ``str.splitlines`` and some log viewers."""
    text = codec.dumps(line)
    return text if text.isascii() else _escaped(text)


def _escaped(text: str) -> str:
    for char, escape in _UNICODE_LINE_BREAKS:
        text = text.replace(char, escape)
    return text


def _fit(line: dict[str, Any]) -> str:
    """Cut the largest fields until the line is at most ``MAX_LINE_CHARS`` bytes, each from its
    own text (one marker), at budgets of 16, 4, 1 KiB, then 256 characters."""
    texts = {key: value if type(value) is str else codec.dumps(value) for key, value in line.items()}
    budget = MAX_LINE_CHARS // 4
    while budget >= 256:
        fitted = {
            key: cut(texts[key], budget) if key not in _UNCUT and _utf8_size(texts[key]) > budget else value
            for key, value in line.items()
        }
        text = _dumps(fitted)
        if _utf8_size(text) <= MAX_LINE_CHARS:
            return text
        budget //= 4
    # too many fields to fit even cut short: the base fields (each at most 1 KiB), and how many others went
    kept = {key: _at_most(line[key], 1_024) for key in BASE_KEYS if key in line}
    kept["fields_dropped"] = len(line) - len(kept)
    return _dumps(kept)


def _at_most(value: Any, limit: int) -> Any:
    return cut(value, limit) if type(value) is str and len(value) > limit else value


def write(line: dict[str, Any]) -> None:
    """The one writer: ``line`` (of ``clean`` values) as one JSON line to the sink."""
    try:
        text = codec.dumps(line)
    except Exception as exc:  # what ``clean`` let through and the codec refuses: the base fields, and why
        text = codec.dumps(
            {**{key: line[key] for key in BASE_KEYS if key in line}, "log_error": text_of(exc)}
        )
    if not text.isascii():
        text = _escaped(text)
    if len(text) > MAX_LINE_CHARS // 4 and _utf8_size(text) > MAX_LINE_CHARS:
        text = _fit(line)
    (sys.stdout.write if _sink is None else _sink)(text + "\n")
