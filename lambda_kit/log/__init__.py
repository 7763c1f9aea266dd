"""Structured JSON logs: one object per line on standard output, carrying the current trace id.

Every line passes through the same small steps (the structlog idea, without its per-line cost):
``clean`` masks secrets, cuts long values and bounds nesting; the codec's text is written as it
is when it is short ASCII (``_write_as_is``), else ``encode`` escapes, sanitizes and cuts it to
fit; the sink writes one line. The decorators call ``emit`` directly (the hot path);
``get_logger`` gives a standard ``logging.Logger`` whose lines take the same route
(``lambda_kit.log.logger``, which imports ``logging`` on the first ``get_logger()`` call, not before).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar, Token
from itertools import islice
from typing import TYPE_CHECKING, Any

from .. import codec
from ..trace import current_record, record_in_scope

if TYPE_CHECKING:
    import logging

MAX_VALUE_CHARS = 8_192
MAX_LINE_CHARS = 64 * 1024  # bytes of UTF-8, newline not counted
MAX_DEPTH = 24
MASK = "***"
SECRET_KEY_PARTS = (
    "authorization",
    "cookie",
    "api-key",
    "api_key",
    "apikey",
    "password",
    "passwd",
    "token",
    "secret",
    "credential",
    "private_key",
    "private-key",
)

LEVELS = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40, "CRITICAL": 50}


def _level_from_env() -> int:
    for var in ("LAMBDA_KIT_LOG_LEVEL", "LOG_LEVEL", "AWS_LAMBDA_LOG_LEVEL"):
        value = os.environ.get(var, "").upper()
        if value in LEVELS:
            return LEVELS[value]
    return LEVELS["INFO"]


_threshold = _level_from_env()

# (function_name, request_id) of the invocation being served.
_invocation: ContextVar[tuple[str | None, str | None]] = ContextVar(
    "lambda_kit_invocation", default=(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"), None)
)


def enter_invocation(context: Any) -> tuple[Token[tuple[str | None, str | None]], str | None]:
    """Stamp the lines written until ``leave_invocation`` with this invocation's function name
    and request id; returns (token, function name)."""
    name = getattr(context, "function_name", None) or os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
    return _invocation.set((name, getattr(context, "aws_request_id", None))), name


def leave_invocation(token: Token[tuple[str | None, str | None]]) -> None:
    _invocation.reset(token)


def current_function_name() -> str | None:
    return _invocation.get()[0]


def set_level(level: str | int) -> None:
    """Set the level below which lambda_kit's own lines (and ``get_logger`` loggers) are dropped."""
    global _threshold
    _threshold = LEVELS[level.upper()] if isinstance(level, str) else int(level)
    for logger in loggers:
        logger.setLevel(_threshold)


def enabled(levelno: int) -> bool:
    return levelno >= _threshold


def threshold() -> int:
    """The level below which lines are dropped (``set_level``, else the environment's)."""
    return _threshold


# --- the sink ------------------------------------------------------------------------------

_sink: Callable[[str], None] | None = None  # None: standard output (``_write`` writes to it inline)


def set_sink(write: Callable[[str], None] | None) -> None:
    """Send every line to ``write`` instead of standard output (the local stack's log file);
    ``None``: standard output again."""
    global _sink
    _sink = write


def flush() -> None:
    if _sink is None:
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            pass


# --- clean: mask, cut, bound ---------------------------------------------------------------

_secret_cache: dict[str, bool] = {}


def is_secret_key(key: str) -> bool:
    hit = _secret_cache.get(key)
    if hit is None:
        lowered = key.lower()
        hit = any(part in lowered for part in SECRET_KEY_PARTS)
        if len(_secret_cache) < 4_096:
            _secret_cache[key] = hit
    return hit


def cut(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    return f"{text[:limit]}...[truncated {len(text) - limit} chars]"


def clean(value: Any, depth: int = 0) -> Any:
    """``value`` ready to log: secrets masked, long strings cut, nesting bounded, and every other
    type as the codec writes it (``codec.convert``: Decimal, datetime, set, dataclass ...), so a line
    is the same under every codec; what the codec cannot write is logged as its text.

    Returns ``value`` itself when nothing needs changing, so the common small payload costs a
    walk and no copy.
    """
    kind = type(value)
    if kind is str:
        return value if len(value) <= MAX_VALUE_CHARS else cut(value)
    if kind is dict:  # the common payload, checked early
        return _clean_dict(value, depth) if depth < MAX_DEPTH else "[nested too deep]"
    if kind is bool or value is None:
        return value
    if kind is int:
        return value if -(2**63) <= value < 2**64 else _number(value)
    if kind is float:
        return _number(value)
    if depth >= MAX_DEPTH:
        return "[nested too deep]"
    if isinstance(value, dict):
        return _clean_dict(value, depth)
    if kind is list or kind is tuple:
        changed = None
        for index, item in enumerate(value):
            new = clean(item, depth + 1)
            if new is not item:
                if changed is None:
                    changed = list(value)
                changed[index] = new
        if changed is not None:
            return changed
        return value if kind is list else list(value)
    try:
        converted = codec.convert(value)
    except Exception:  # a type JSON has no form for, or one that fails to convert: its text
        return clean(_text_of(value))
    return converted if type(converted) is codec.Number else clean(converted, depth + 1)


def _number(value: int | float) -> Any:
    """A number as the codec writes it (NaN: null; a tiny float or a big int: exact text)."""
    try:
        return codec.plain(value)
    except ValueError:  # more digits than Python converts to text
        return _text_of(value)


def _text_of(value: Any) -> str:
    try:
        text = str(value)
        return text if type(text) is str else str.__str__(text)
    except Exception:  # a __str__ that raises must not cost the line
        if type(value) is int:
            return f"<int of {value.bit_length()} bits>"
        return f"<unprintable {type(value).__name__}>"


def _key_text(key: Any) -> str:
    """A non-``str`` dict key as the text a JSON line holds: the codec's (``codec.key_text``),
    else, for a key the codec refuses (a tuple, an object), its text."""
    try:
        text = codec.key_text(key)
    except Exception:
        text = _text_of(key)
    return clean(text)


_PLAIN = (bool, type(None))  # scalars ``clean`` returns unchanged at any depth


def _clean_dict(value: dict[Any, Any], depth: int) -> dict[Any, Any]:
    out: dict[Any, Any] | None = None
    secret_of = _secret_cache.get
    for index, (key, item) in enumerate(value.items()):
        if type(key) is str:
            if item is not None and ((secret := secret_of(key)) or (secret is None and is_secret_key(key))):
                new = MASK
            else:
                # Inline fast path for the common values (same result as ``clean``), no call.
                kind = type(item)
                if kind is str:
                    new = item if len(item) <= MAX_VALUE_CHARS else cut(item)
                elif kind in _PLAIN:
                    new = item
                else:
                    new = clean(item, depth + 1)
            if out is None:
                if new is item:
                    continue
                out = dict(islice(value.items(), index))
        else:
            key = _key_text(key)
            new = MASK if item is not None and is_secret_key(key) else clean(item, depth + 1)
            if out is None:
                out = dict(islice(value.items(), index))
        out[key] = new
    return value if out is None else out


# --- encode ---------------------------------------------------------------------------------

def _sanitize(value: Any) -> Any:
    """Make any value plain JSON data every codec writes alike (``codec.plain``), with what the
    codec refuses as its text. Total: whatever it is given, the codec can encode it."""
    return codec.plain(value, fallback=_text_of)


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


_UNCUT = ("timestamp", "level", "trace_id")
_BASE = ("timestamp", "level", "message", "function_name", "request_id", "trace_id")


_UNICODE_NEWLINES = (("\x85", "\\u0085"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


def _dumps(value: Any) -> str:
    """The codec's JSON with the Unicode line breaks escaped: legal raw in JSON, yet they split
    a line for ``str.splitlines`` and some log viewers."""
    text = codec.dumps_plain(value)
    if not text.isascii():
        for char, escape in _UNICODE_NEWLINES:
            if char in text:
                text = text.replace(char, escape)
    return text


def _fit(line: dict[str, Any]) -> str:
    """Cut the largest fields (with the marker) until the line is at most MAX_LINE_CHARS bytes."""
    texts = {key: value if type(value) is str else codec.dumps_plain(value) for key, value in line.items()}
    sizes = {key: _utf8_size(_dumps(text)) for key, text in texts.items()}
    order = sorted(sizes, key=sizes.__getitem__, reverse=True)
    budget = MAX_LINE_CHARS // 4
    while budget >= 256:
        for key in order:
            if sizes[key] <= budget:
                break
            if key not in _UNCUT:
                line[key] = cut(texts[key], budget)  # always cut from the original: one marker
        text = _dumps(line)
        if _utf8_size(text) <= MAX_LINE_CHARS:
            return text
        budget //= 4
    # Too many fields to fit even cut short: keep the line's own keys and say how many went.
    kept = {key: line[key] for key in _BASE if key in line}
    for key, value in kept.items():
        if type(value) is str and len(value) > 1024:
            kept[key] = cut(value, 1024)
    kept["fields_dropped"] = len(line) - len(kept)
    return _dumps(kept)


def encode(line: dict[str, Any]) -> str:
    """``line`` (made of ``clean`` values) as one JSON line when the codec cannot write it as it is
    (not ASCII, long, or refused: ``_write_as_is`` writes the rest): sanitized, escaped and cut
    to fit."""
    try:
        text = _dumps(line)
    except Exception:
        text = _dumps(_sanitize(line))
    if _utf8_size(text) > MAX_LINE_CHARS:
        text = _fit(_sanitize(line))
    return text + "\n"


# --- emit -----------------------------------------------------------------------------------

_stamp: list[Any] = [None, ""]  # [the clock's milliseconds, their text]: the lines of one millisecond share it
_date: list[Any] = [None, ""]  # [the clock's second, its date and time text]: cached per second


def _timestamp(now: float) -> str:
    """``now`` as ISO 8601 UTC text, truncated to the millisecond; cached per millisecond of the
    clock (the lines inline the cached case: ``_stamp[1]`` when ``int(now * 1000) == _stamp[0]``),
    the date part per second."""
    second = int(now)
    if second != _date[0]:
        _date[0] = second
        _date[1] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
    _stamp[0] = int(now * 1000)
    _stamp[1] = text = f"{_date[1]}.{int((now - second) * 1000):03d}Z"
    return text


def emit(
    level: str,
    message: str,
    trace_id: str | None = None,
    fields: dict[str, Any] | None = None,
    now: float | None = None,
) -> None:
    """Write one line. ``fields`` must already be cleaned (``clean``) by the caller: the line goes to
    ``codec.dumps_plain``, which writes plain data the same under every codec, not any value."""
    function_name, request_id = _invocation.get()
    if now is None:
        now = time.time()
    line: dict[str, Any] = {
        "timestamp": _stamp[1] if int(now * 1000) == _stamp[0] else _timestamp(now),
        "level": level,
        "message": message,
        "function_name": function_name,
        "request_id": request_id,
    }
    if trace_id is not None:
        line["trace_id"] = trace_id
        if _record_keys:  # the record's tracer keys (dd.trace_id ...), when it carries any
            record = current_record()
            if record is not None and record.log_keys is not None:
                line.update(record.log_keys)
    if fields:
        line.update(fields)
    _write(line)


_FAST_LINE_CHARS = MAX_LINE_CHARS // 4  # below this a line can never need cutting


def _write(line: dict[str, Any]) -> None:
    """``line`` to the sink (standard output unless ``set_sink``): the codec's text as it is when
    short ASCII (``_write_as_is``), else ``encode``'s."""
    if _write_as_is(line, _FAST_LINE_CHARS):
        return
    text = encode(line)
    if _sink is None:
        sys.stdout.write(text)
    else:
        _sink(text)


_payload_keys: set[str] = set()  # payload keys seen before that are not secret


def record_received(record: Any) -> None:
    """The loop's ``record received`` line for ``record``: ``emit``'s line, built as one dict (the
    per-record hot path). A flat payload of keys seen before (``_payload_keys``) and values
    ``codec.as_is_types`` goes in as it is (``_write_as_is``), with no walk."""
    if _record_keys and record.log_keys is not None:  # a tracer's keys go between trace_id and the fields
        emit("INFO", "record received", record.trace_id,
             {"source": record.source, "record_id": record.id, "payload": clean(record.payload)})
        return
    function_name, request_id = _invocation.get()
    now = time.time()
    payload = record.payload
    line = {
        "timestamp": _stamp[1] if int(now * 1000) == _stamp[0] else _timestamp(now),
        "level": "INFO",
        "message": "record received",
        "function_name": function_name,
        "request_id": request_id,
        "trace_id": record.trace_id,
        "source": record.source,
        "record_id": record.id,
        "payload": payload,
    }
    if type(payload) is dict:
        if _payload_keys.issuperset(payload) and codec.as_is_types.issuperset(map(type, payload.values())) and _write_as_is(line):
            return
        line["payload"] = cleaned = _clean_dict(payload, 0)
        if cleaned is payload and len(_payload_keys) < 4_096:
            _payload_keys.update(key for key in payload if not is_secret_key(key))  # all str: it came back as is
    else:
        line["payload"] = clean(payload)
    _write(line)


def record_processed(record: Any, result: Any, duration_ms: float) -> None:
    """The loop's ``record processed`` line: ``record``'s function returned ``result`` after
    ``duration_ms`` (one dict, as ``record_received``; a result of ``codec.as_is_types`` goes in
    as it is)."""
    if _record_keys and record.log_keys is not None:
        emit("INFO", "record processed", record.trace_id, {
            "source": record.source, "record_id": record.id, "outcome": "ok", "duration_ms": duration_ms,
            "result": clean(result),
        })
        return
    function_name, request_id = _invocation.get()
    now = time.time()
    line = {
        "timestamp": _stamp[1] if int(now * 1000) == _stamp[0] else _timestamp(now),
        "level": "INFO",
        "message": "record processed",
        "function_name": function_name,
        "request_id": request_id,
        "trace_id": record.trace_id,
        "source": record.source,
        "record_id": record.id,
        "outcome": "ok",
        "duration_ms": duration_ms,
        "result": result,
    }
    if type(result) in codec.as_is_types and _write_as_is(line):
        return
    line["result"] = clean(result)
    _write(line)


def _write_as_is(line: dict[str, Any], limit: int = MAX_VALUE_CHARS) -> bool:
    """Write ``line`` as the codec writes it when its JSON is ASCII and at most ``limit`` long (no
    line break to escape, nothing to cut); False, writing nothing, otherwise. With the default
    ``limit`` a line whose values were not cleaned (of ``codec.as_is_types``, or dicts of known
    keys and such values; a user's line: ``extra`` of known keys) is written only when that is the
    line ``clean`` would give: no string in it is long enough to need cutting; the caller cleans
    and writes it otherwise. ``_write`` passes the line limit for lines already cleaned."""
    try:
        text = codec.dumps_plain(line)
    except Exception:  # what the codec refuses (a lone surrogate): ``clean`` and ``encode`` write it
        return False
    if len(text) > limit or not text.isascii():
        return False
    if _sink is None:
        sys.stdout.write(text + "\n")
    else:
        _sink(text + "\n")
    return True


_record_keys = False  # no record carried tracer keys yet: ``emit`` does not look for them


def carry_record_keys(on: bool = True) -> None:
    """A record carries a tracer's log keys: from now on ``emit`` adds the current record's
    (``on=False``: it stops looking, as in a process that never saw one)."""
    global _record_keys
    _record_keys = on


def error_fields(exc: BaseException) -> dict[str, Any]:
    import traceback  # only for a failure: not paid on a cold start

    return {
        "error_type": type(exc).__name__,
        "error": clean(safe_str(exc)),
        "traceback": clean("".join(traceback.format_exception(exc))),
    }


def safe_str(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:
        return f"<unprintable {type(exc).__name__}>"


# --- the lines of get_logger's loggers (lambda_kit.log.logger) ----------------------------------------

loggers: list[Any] = []  # every logger get_logger made: set_level sets them all


def get_logger(name: str | None = None) -> logging.Logger:
    """A standard ``logging.Logger`` writing lambda_kit JSON lines with the current trace id
    (``logging`` is imported on the first call, not by ``from lambda_kit import get_logger``)."""
    from .logger import json_logger

    return json_logger(name)


RENAMED = frozenset(("logger", *_BASE)) - {"trace_id"}  # extra keys written as extra_<key>, and trace_id in a record


def logger_fields(name: str, extra: Any, current: Any) -> dict[str, Any]:
    """The fields of a ``logging`` line: ``logger`` (its name) and the ``extra=`` items, cleaned;
    an extra never replaces the line's own keys (it is written as ``extra_<key>``)."""
    fields: dict[str, Any] = {"logger": name}
    for key, value in extra:
        if type(key) is not str:
            key = _key_text(key)
        if key in RENAMED or (key == "trace_id" and current is not None):
            key = f"extra_{key}"
        fields[key] = MASK if is_secret_key(key) else clean(value)
    return fields


def message_text(msg: Any, args: Any) -> str:
    """The line's message: ``msg % args`` as ``LogRecord.getMessage`` makes it, cleaned; a message
    that cannot be formatted must not cost the line (its ``msg`` then)."""
    try:
        return clean(str(msg) % args if args else str(msg))
    except Exception:
        text = clean(msg)
        return text if type(text) is str else _text_of(text)


def _exception(exc_info: Any) -> BaseException | None:
    """The exception an ``exc_info=`` argument names, as ``Logger._log`` reads it."""
    if isinstance(exc_info, BaseException):
        return exc_info
    if isinstance(exc_info, tuple):
        return exc_info[1] if len(exc_info) > 1 else None
    return sys.exc_info()[1]


_INT_RANGE = range(-(2**63), 2**64)  # ints every codec writes as they are
_plain_keys: set[str] = set()  # extra keys written under their own name, never masked
_refused: frozenset[str] = frozenset()  # extra keys the standard path refuses (LogRecord's own attributes)


def refuse_extra_keys(keys: frozenset[str]) -> None:
    """``write_logger_line`` leaves a line whose ``extra`` names one of ``keys`` to the standard
    ``logging`` path (which refuses to overwrite a ``LogRecord`` attribute): set by ``lambda_kit.log.logger``."""
    global _refused
    _refused = keys


def write_logger_line(name: str, level: str, msg: Any, args: Any, exc_info: Any, extra: Any) -> bool:
    """Write the line ``JsonLogHandler`` writes for this ``logging`` call, made without a
    ``LogRecord`` (``emit``'s steps and ``logger_fields``' rules, inline: this is the hot path of a
    user's line); False, writing nothing, when ``extra`` names a ``LogRecord`` attribute.

    The common ``extra`` (keys seen before, neither renamed nor secret; values of
    ``codec.as_is_types``: str, bool, None, int under orjson) goes in as it is, with no step per
    item: if the codec writes the line and its JSON is at most ``MAX_VALUE_CHARS`` long, no string
    in it needed cutting; else the line is made again with every value cleaned."""
    if args or type(msg) is not str:
        if args and len(args) == 1 and isinstance(args[0], Mapping) and args[0]:
            args = args[0]  # as LogRecord reads log.info("%(a)s", {"a": 1})
        message = message_text(msg, args)
    else:
        message = msg if len(msg) <= MAX_VALUE_CHARS else cut(msg)
    function_name, request_id = _invocation.get()
    now = time.time()
    line: dict[str, Any] = {
        "timestamp": _stamp[1] if int(now * 1000) == _stamp[0] else _timestamp(now),
        "level": level,
        "message": message,
        "function_name": function_name,
        "request_id": request_id,
    }
    current = record_in_scope()
    if current is not None:
        line["trace_id"] = current.trace_id
        if _record_keys and current.log_keys is not None:
            line.update(current.log_keys)
    line["logger"] = name
    if extra:
        if not exc_info and _plain_keys.issuperset(extra) and codec.as_is_types.issuperset(map(type, extra.values())):
            line.update(extra)
            if _write_as_is(line):
                return True
        if not _add_extra(line, extra, current):
            return False
    if exc_info and (exc := _exception(exc_info)) is not None:
        line.update(error_fields(exc))
    _write(line)
    return True


def _add_extra(line: dict[str, Any], extra: Any, current: Any) -> bool:
    """``logger_fields``' rules for ``extra``, into ``line``: False, adding nothing more, at a key
    the standard path refuses."""
    secret_of = _secret_cache.get
    for key, value in extra.items():
        if type(key) is not str:
            key = _key_text(key)  # its text is never a known key: a str key of that text may be refused
        elif key in _refused:
            return False
        elif key != "trace_id" and key not in RENAMED and not is_secret_key(key) and len(_plain_keys) < 4_096:
            _plain_keys.add(key)
        if key in RENAMED or (key == "trace_id" and current is not None):
            key = f"extra_{key}"  # extra fields never replace the line's own keys
        if (secret := secret_of(key)) or (secret is None and is_secret_key(key)):
            value = MASK
        else:
            kind = type(value)
            if kind is str:
                if len(value) > MAX_VALUE_CHARS:
                    value = cut(value)
            elif kind is int:
                if value not in _INT_RANGE:
                    value = clean(value)
            elif value is not None and kind is not bool:
                value = clean(value)
        line[key] = value
    return True
