"""What a value looks like in a log line: secrets masked, long text cut, nesting bounded.

``clean`` is the one masking rule, applied to every field of every line (``lambda_kit.log.line``
calls it): a value under a secret-looking key (``SECRET_KEY_PARTS``, at any depth) is written as
``***``; text that is a JSON object or array (leading whitespace or a byte order mark included) is
masked as the JSON it holds; strings are cut at ``MAX_VALUE_CHARS``; nesting stops at
``MAX_DEPTH``; every other type is written as the codec writes it (``codec.convert``). ``clean`` is
total: whatever it is given, it returns plain JSON data and never raises.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Mapping
from itertools import islice
from typing import Any

from .. import codec

MAX_VALUE_CHARS = 8_192
MAX_DEPTH = 24
MASK = "***"
# Parts of a key name, compared with the key lower-cased and without "-" and "_" (so "privateKey",
# "private_key" and "Private-Key" are one): a key holding any of them is secret.
SECRET_KEY_PARTS = (
    "authorization",
    "cookie",
    "apikey",
    "password",
    "passwd",
    "pwd",
    "passphrase",
    "token",
    "secret",
    "credential",
    "privatekey",
    "session",
)
_INT_LIMIT = 10**4_299  # Python writes no int of more digits as text
_JSON_TEXT_START = ("{", "[")
_LEADING = " \t\r\n\ufeff"  # whitespace JSON allows before a value, and a byte order mark
_SPECIAL_START = frozenset(_JSON_TEXT_START + tuple(_LEADING))  # text starting so may hold JSON

_secret_keys: dict[str, bool] = {}


def is_secret_key(key: str) -> bool:
    """Whether a value under ``key`` is masked (the answers are cached, up to 4,096 keys)."""
    hit = _secret_keys.get(key)
    if hit is None:
        folded = key.lower().replace("-", "").replace("_", "")
        hit = any(part in folded for part in SECRET_KEY_PARTS)
        if len(_secret_keys) < 4_096:
            _secret_keys[key] = hit
    return hit


CUT_MARK_CHARS = 40  # room for "...[truncated N chars]"


def cut(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    """``text`` cut to at most ``limit`` characters (``limit`` > 40), the marker saying how many
    went included: cutting a cut value again leaves it as it is."""
    kept = limit - CUT_MARK_CHARS
    return f"{text[:kept]}...[truncated {len(text) - kept} chars]"


def text_of(value: object) -> str:
    """``str(value)``, or a placeholder when that raises (a ``__str__`` must not cost the line)."""
    try:
        text = str(value)
        return text if type(text) is str else str.__str__(text)
    except Exception:
        if isinstance(value, int):
            return f"<int of {value.bit_length()} bits>"
        return f"<unprintable {type(value).__name__}>"


def _valid(text: str) -> str:
    """``text`` with each lone surrogate (no UTF-8 can carry one) as the text ``\\udXXX``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _json_text(text: str, depth: int) -> str:
    """``text`` masked as the JSON object or array it holds, when it holds one."""
    try:
        parsed = codec.loads(text.lstrip(_LEADING))
    except Exception:
        return text
    if not isinstance(parsed, dict | list):
        return text
    cleaned = clean(parsed, depth)
    return text if cleaned == parsed else codec.dumps(cleaned)


def _clean_text(text: str, depth: int) -> str:
    if not text.isascii():
        text = _valid(text)
    if text[:1] in _JSON_TEXT_START or (
        text[:1] in _LEADING and text.lstrip(_LEADING)[:1] in _JSON_TEXT_START
    ):
        text = _json_text(text, depth)
    return text if len(text) <= MAX_VALUE_CHARS else cut(text)


def _clean_int(value: int, depth: int) -> Any:
    return text_of(value)  # an int beyond the range ``clean`` keeps: Python's text, or what it is


def _clean_float(value: float, depth: int) -> Any:
    return value if value - value == 0 else None  # NaN and infinities: null, as every codec writes them


def _same(value: object, depth: int) -> Any:
    return value


def _key(key: object) -> str:
    if type(key) is not str:
        try:
            key = codec.key_text(key)
        except Exception:  # a key with no JSON text (a tuple, an object): its text
            key = text_of(key)
    if not key.isascii():
        key = _valid(key)
    return key if len(key) <= MAX_VALUE_CHARS else cut(key)


def _clean_items(value: Mapping[Any, Any], depth: int) -> dict[str, Any]:
    out = {}
    known = _secret_keys.get
    for key, item in value.items():
        if type(key) is not str or len(key) > MAX_VALUE_CHARS or not key.isascii():
            key = _key(key)
        secret = known(key)
        if secret is None:
            secret = is_secret_key(key)
        out[key] = MASK if secret and item is not None else clean(item, depth)
    return out


def _clean_dict(value: dict[Any, Any], depth: int) -> Any:
    return _clean_items(value, depth + 1) if depth < MAX_DEPTH else "[nested too deep]"


def clean_fields(fields: Mapping[Any, Any]) -> dict[str, Any]:
    """A line's fields ready to log: each key's value cleaned as a value of its own (``clean``),
    masked when the key is secret."""
    try:
        return _clean_items(fields, 0)
    except Exception as exc:  # a mapping whose items cannot be read: say so, lose the line's rest
        return {"fields_error": text_of(exc)}


def _clean_list(value: list[Any] | tuple[Any, ...], depth: int) -> Any:
    if depth >= MAX_DEPTH:
        return "[nested too deep]"
    return [clean(item, depth + 1) for item in value]


_CLEANERS: dict[type, Callable[[Any, int], Any]] = {
    str: _clean_text,
    int: _clean_int,
    float: _clean_float,
    bool: _same,
    type(None): _same,
    dict: _clean_dict,
    list: _clean_list,
    tuple: _clean_list,
}


def _clean_other(value: object, depth: int) -> Any:
    if depth >= MAX_DEPTH:
        return "[nested too deep]"
    try:
        return clean(codec.convert(value), depth + 1)
    except Exception:  # a type JSON has no form for, or one that fails to convert: its text
        return _clean_text(text_of(value), depth)


def clean(value: object, depth: int = 0) -> Any:
    """``value`` ready to log (the rules are in this module's docstring)."""
    kind = type(value)
    if kind is str:
        if len(value) <= MAX_VALUE_CHARS and value.isascii() and value[:1] not in _SPECIAL_START:
            return value  # the most common value, short text that holds no JSON: as it is
    elif kind is int:
        if -_INT_LIMIT < value < _INT_LIMIT:
            return value
    elif value is None or kind is bool:
        return value
    return _CLEANERS.get(kind, _clean_other)(value, depth)


_BRIEF = reprlib.Repr()  # keyword arguments only from Python 3.12
_BRIEF.maxlevel, _BRIEF.maxstring, _BRIEF.maxother, _BRIEF.maxlong = 3, 200, 60, 60


def brief(value: object, limit: int = 256) -> str:
    """A short, ASCII, bounded description of any value (a rejected trace id, say): nesting, length
    and the size of numbers bounded before anything is walked, so a producer's deep or huge value
    costs nothing."""
    if isinstance(value, str):
        return ascii(value[:limit])[:limit]
    try:
        text = _BRIEF.repr(value)
    except Exception:  # a __repr__ that raises
        text = f"<{type(value).__name__}>"
    return text.encode("ascii", "backslashreplace").decode("ascii")[:limit]


_KINDS = {str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}
MAX_OUTLINE_KEYS = 20


def outline(value: object, depth: int = 0) -> Any:
    """The shape of ``value`` with none of its values: objects with their keys, an array as the
    shape of its first item, and each scalar as its JSON type (the ERROR line of an event no
    decorator processes says what it looks like, never what it holds)."""
    if isinstance(value, dict):
        if depth >= 4:
            return "object"
        shape = {
            _key(key)[:64]: outline(item, depth + 1) for key, item in islice(value.items(), MAX_OUTLINE_KEYS)
        }
        if len(value) > MAX_OUTLINE_KEYS:
            shape["..."] = f"{len(value) - MAX_OUTLINE_KEYS} more keys"
        return shape
    if isinstance(value, list | tuple):
        return [outline(value[0], depth + 1)] if value and depth < 4 else "array"
    return _KINDS.get(type(value), type(value).__name__)
