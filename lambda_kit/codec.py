"""The JSON codec: one ``dumps`` that writes the same text whichever JSON library is installed.

Chosen on first use, not at ``import lambda_kit`` (orjson alone costs ~20 ms to import in a fresh
process): orjson when installed (the ``fast`` extra; the fastest, see ``make bench``), else ujson,
else the standard library's ``json``. ``LAMBDA_KIT_JSON=orjson|ujson|json`` forces one.

Every codec writes every value alike, byte for byte (the table is in the README):

- ``Decimal``: an exact number (``Decimal("0.10")`` → ``0.10``), integral ones as integers
  (``Decimal("3")`` → ``3``); NaN and infinities → ``null``; beyond ±1E+308, where JSON readers
  overflow, the number's text as a string (``"1E+400"``).
- ``int``: exact, whatever its size; beyond ±1E+308 as a string of its digits. ``float``: shortest
  text that reads back the same; NaN and infinities → ``null``.
- ``datetime``/``date``/``time``: ISO 8601 text (``isoformat()``); ``UUID``: its text; ``Enum``:
  its value; dataclasses: an object of their fields; ``set``/``frozenset``: an array, sorted when
  its items can be; ``tuple``: an array; ``bytes``: UTF-8 text (undecodable bytes as ``\\xNN``);
  subclasses of ``str``/``int``/``float``/``dict``/``list``: as their base type.
- Keys that are not strings: the text of their value (``1`` → ``"1"``, ``None`` → ``"null"``,
  ``True`` → ``"true"``); a key with no such text (a tuple, an object) is refused.
- Strings: ``/`` never escaped. A string holding a lone surrogate (not Unicode, so no UTF-8 can
  carry it) is refused (``UnicodeEncodeError``); nesting deeper than ``MAX_NESTING`` too.
- Anything else raises ``TypeError`` ("Object of type X is not JSON serializable").

orjson writes most of these itself (the fast path, with one shared ``convert`` as its ``default``);
what it refuses, and everything under ujson and ``json``, goes through ``plain``: one walk that makes
any value plain JSON data, which each codec then writes identically.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

CODECS = ("orjson", "ujson", "json")
MAX_NESTING = 254  # orjson's limit, kept under every codec
_TOO_LARGE = 10**308  # numbers from here on overflow JSON readers (orjson refuses them)
_INF = float("inf")

loads: Callable[[str | bytes], Any]
dumps: Callable[[Any], str]
dumps_plain: Callable[[Any], str]
name: str
as_is_types: frozenset[type]
"""The types of which ``dumps_plain`` writes every value as ``plain`` makes it, or refuses it:
str, bool and None; int too under orjson, which refuses an int beyond 64 bits (ujson and ``json``
write its digits, where ``plain`` may make it text)."""


class Number:
    """An exact JSON number, written as its text: a ``Decimal``, an int beyond 64 bits, a tiny float."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __json__(self) -> str:  # ujson writes what this returns, as is
        return self.text

    def __repr__(self) -> str:
        return f"Number({self.text})"


# --- one value at a time -----------------------------------------------------------------------

def convert(value: Any) -> Any:
    """``value``, of a type JSON has no form for, as the JSON-ready value it is written as.

    One step, not recursive: a dataclass becomes a dict of its fields, a set a list of its items,
    still holding whatever they hold. A ``Number`` is returned as is. Raises ``TypeError`` for a
    type the table does not cover (and whatever a failing ``isoformat``/``__iter__`` raises).
    """
    converter = _converters.get(type(value))
    if converter is None:
        converter = _converter_for(type(value))
    return converter(value)


def key_text(key: Any) -> str:
    """The text a JSON object holds for the dict key ``key``: the text of its value."""
    value = plain(key)
    kind = type(value)
    if kind is str:
        return value
    if kind is Number:
        return value.text
    if value is None or kind is bool:
        return "null" if value is None else "true" if value else "false"
    if kind is int or kind is float:
        return repr(value)  # a plain float's repr is what every codec writes
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _same(value: Any) -> Any:
    return value


def _unsupported(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _int(value: int) -> Any:
    """An int beyond 64 bits: an exact number, or its digits as text where readers overflow."""
    if -_TOO_LARGE < value < _TOO_LARGE:
        return Number(str(value))
    return str(value)  # ValueError beyond 4,300 digits: Python will not write it


def _float(value: float) -> Any:
    """A float the codecs write differently (tiny ones), or one JSON cannot hold (NaN, infinities)."""
    if value - value != 0:
        return None
    return Number(_float_text(value))


def _float_text(value: float) -> str:
    """orjson's text for a float: ``repr``, but 1e-05 as 0.00001 and 1e-07 as 1e-7."""
    text = repr(value)
    if "e-0" not in text:
        return text
    mantissa, exponent = text.split("e-0")
    if exponent != "5":
        return f"{mantissa}e-{exponent}"
    sign, digits = ("-", mantissa[1:]) if value < 0 else ("", mantissa)
    return f"{sign}0.0000{digits.replace('.', '')}"


def _decimal(value: Any) -> Any:
    if not value.is_finite():
        return None
    if value.adjusted() >= 308:
        return str(value)
    if value == value.to_integral_value():
        return int(value)
    return Number(str(value))


def _set_items(value: Any) -> list[Any]:
    try:
        return sorted(value)
    except Exception:  # items of kinds that do not compare: in the set's own order
        return list(value)


def _bytes_text(value: Any) -> str:
    return bytes(value).decode(errors="backslashreplace")  # UTF-8


def _fields(value: Any) -> dict[str, Any]:
    from dataclasses import fields

    return {field.name: getattr(value, field.name) for field in fields(value)}


def _isoformat(value: Any) -> str:
    return value.isoformat()


def _enum_value(value: Any) -> Any:
    return value.value


def _subclass(kind: type, module: str, *names: str) -> bool:
    """Whether ``kind`` subclasses one of these classes of ``module``, if that is imported: a value
    of such a class can only exist if it is, so nothing is imported to find out."""
    found = sys.modules.get(module)
    return found is not None and issubclass(kind, tuple(getattr(found, name) for name in names))


def _converter_for(kind: type) -> Callable[[Any], Any]:
    if issubclass(kind, Number):
        found: Callable[[Any], Any] = _same
    elif _subclass(kind, "enum", "Enum"):  # before str and int: IntEnum, StrEnum
        found = _enum_value
    elif _subclass(kind, "decimal", "Decimal"):
        found = _decimal
    elif issubclass(kind, str):
        found = str.__str__
    elif issubclass(kind, int):
        found = int.__int__
    elif issubclass(kind, float):
        found = float.__float__
    elif _subclass(kind, "datetime", "date", "time"):
        found = _isoformat
    elif _subclass(kind, "uuid", "UUID"):
        found = str
    elif issubclass(kind, Mapping):
        found = dict
    elif issubclass(kind, list | tuple):
        found = list
    elif issubclass(kind, set | frozenset):
        found = _set_items
    elif issubclass(kind, bytes | bytearray):
        found = _bytes_text
    elif hasattr(kind, "__dataclass_fields__"):
        found = _fields
    else:
        found = _unsupported
    if len(_converters) < 1_024:  # bounded: classes made at run time must not grow it forever
        _converters[kind] = found
    return found


_converters: dict[type, Callable[[Any], Any]] = {}


# --- a whole value -------------------------------------------------------------------------------

def plain(value: Any, fallback: Callable[[Any], str] | None = None) -> Any:
    """``value`` as plain JSON data: dicts with ``str`` keys, lists, valid strings, 64-bit ints,
    floats every codec writes alike, bools, None and ``Number``. What the table cannot write raises
    (``TypeError``, ``ValueError``), or, when a ``fallback`` is given, is replaced by
    ``fallback(value)`` (and a lone surrogate by the text ``\\udXXX``): the log's way, total."""
    return _plain(value, 0, fallback)


def _plain(value: Any, depth: int, fallback: Callable[[Any], str] | None) -> Any:
    kind = type(value)
    if kind is str:
        return value if value.isascii() else _valid_text(value, fallback is not None)
    if kind is int:
        if -(2**63) <= value < 2**64:
            return value
    elif kind is float:
        return value if value == 0.0 or 1e-4 <= abs(value) < _INF else _float(value)
    elif kind is bool or value is None or kind is Number:
        return value
    elif kind is dict or kind is list or kind is tuple:
        if depth < MAX_NESTING:
            depth += 1
            if kind is dict:
                return {
                    k if type(k) is str and k.isascii() else _key(k, fallback): _plain(v, depth, fallback)
                    for k, v in value.items()
                }
            return [_plain(item, depth, fallback) for item in value]
    try:
        if kind is int:
            return _int(value)
        if kind is dict or kind is list or kind is tuple:
            raise ValueError(f"nested deeper than {MAX_NESTING} levels (or a circular reference)")
        converted = convert(value)
    except Exception:
        if fallback is None:
            raise
        return _plain(fallback(value), depth, None)
    return _plain(converted, depth, fallback)


def _key(key: Any, fallback: Callable[[Any], str] | None) -> str:
    if type(key) is str:  # as a string value is: a lone surrogate refused, or escaped with a fallback
        return _valid_text(key, fallback is not None)
    try:
        return key_text(key)
    except Exception:
        if fallback is None:
            raise
        return _valid_text(fallback(key), True)


def _valid_text(text: str, escape: bool) -> str:
    """``text``, refused when it holds a lone surrogate, or with each as the text ``\\udXXX``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        if not escape:
            raise
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


# --- the three codecs ----------------------------------------------------------------------------

def _orjson(orjson: Any) -> tuple[Callable[[Any], str], Callable[[Any], str]]:
    encode = orjson.dumps
    fragment = orjson.Fragment
    # datetimes, dataclasses and subclasses go through ``convert`` too (orjson's own forms differ)
    options = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS

    def default(value: Any) -> Any:
        converted = convert(value)
        return fragment(converted.text) if type(converted) is Number else converted

    def dumps(obj: Any) -> str:
        try:
            return encode(obj, default=default, option=options).decode()
        except Exception:  # what orjson refuses (big ints, odd keys, depth ...): the shared walk,
            pass  # outside this block, so its errors do not carry orjson's as their context
        return encode(plain(obj), default=default, option=options).decode()

    return dumps, dumps


def _ujson(ujson: Any) -> tuple[Callable[[Any], str], Callable[[Any], str]]:
    encode = ujson.dumps

    def dumps_plain(obj: Any) -> str:
        # ``Number`` has ``__json__``; no ``default``: ujson writes a Decimal as a float by itself,
        # so only plain data comes here
        return _utf8(encode(obj, ensure_ascii=False, escape_forward_slashes=False, allow_nan=False))

    def dumps(obj: Any) -> str:
        return dumps_plain(plain(obj))

    return dumps, dumps_plain


def _utf8(text: str) -> str:
    """``text``, refused (``UnicodeEncodeError``) when it holds lone surrogates, as orjson refuses
    them: ujson and ``json`` copy them into their output, which then cannot be written as UTF-8."""
    if not text.isascii():
        text.encode()
    return text


def _json(json: Any) -> tuple[Callable[[Any], str], Callable[[Any], str]]:
    options: dict[str, Any] = {"ensure_ascii": False, "separators": (",", ":"), "allow_nan": False}
    mark = f"\x00lambda_kit.codec {os.urandom(16).hex()}"  # no string outside this module is this one
    marked = json.dumps(mark)

    def dumps_plain(obj: Any) -> str:
        """``json`` cannot write raw text: each ``Number`` goes in as the mark, then replaces it."""
        texts: list[str] = []

        def default(value: Any) -> Any:
            if type(value) is not Number:
                return _unsupported(value)
            texts.append(value.text)
            return mark

        first, *parts = json.JSONEncoder(default=default, **options).encode(obj).split(marked)
        out = [first]
        for index, part in enumerate(parts):
            out += (texts[index], part)
        return _utf8("".join(out))

    def dumps(obj: Any) -> str:
        return dumps_plain(plain(obj))

    return dumps, dumps_plain


def _choice() -> str:
    raw = os.environ.get("LAMBDA_KIT_JSON", "")
    choice = raw.strip().lower()
    if choice and choice not in CODECS:
        raise ValueError(f"LAMBDA_KIT_JSON={raw!r} names no codec: use orjson, ujson or json, or leave it unset")
    return choice


def _load() -> None:
    global loads, dumps, dumps_plain, name, as_is_types
    choice = _choice()
    for candidate in (choice,) if choice else CODECS:
        try:
            module = __import__(candidate)
        except ImportError:
            if choice:
                raise ImportError(
                    f"LAMBDA_KIT_JSON={choice}, but {choice} is not installed: pip install {choice}, "
                    "or unset LAMBDA_KIT_JSON"
                ) from None
            continue
        make = {"orjson": _orjson, "ujson": _ujson, "json": _json}[candidate]
        dumps, dumps_plain = make(module)
        loads, name = module.loads, candidate
        as_is_types = frozenset((str, bool, type(None), *((int,) if candidate == "orjson" else ())))
        return


def __getattr__(attr: str) -> Any:
    if attr in ("loads", "dumps", "dumps_plain", "name", "as_is_types"):
        _load()
        return globals()[attr]
    raise AttributeError(attr)


def reload() -> None:
    """Pick the codec again (after changing ``LAMBDA_KIT_JSON``); used by the benchmark and tests."""
    _load()
