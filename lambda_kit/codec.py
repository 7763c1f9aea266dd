"""The JSON codec: one ``loads`` and one ``dumps`` that give the same JSON *values* whichever JSON
library is installed (the bytes may differ: spacing, float spelling, escapes).

Chosen on first use, not at ``import lambda_kit``: orjson when installed (the ``fast`` extra, the
fastest: see ``make bench``), else ujson, else the standard library's ``json``.
``LAMBDA_KIT_JSON=orjson|ujson|json`` forces one.

Reading (``loads``), under every codec:

- integers of any size are exact ``int`` (orjson reads those beyond 64 bits as floats: such text
  is read by the standard library instead);
- ``NaN``, ``Infinity``, numbers beyond a float's range (``1e400``) and lone surrogates
  (``"\\ud800"``) are refused with ``ValueError``: they are not JSON (RFC 8259) or not Unicode, and
  orjson refuses them; the other codecs are held to the same answer;
- under ujson, text is read by the standard library (held to the rules above): ujson's reader
  accepts what JSON does not (``01``, ``1.``, ``-``, raw control characters in strings), so ujson
  only writes.

Writing (``dumps``), under every codec (the rules are in docs/decorators.md):

- ``Decimal``: integral ones as integers, others as the float when it is the same number, else as
  the text of the number in a string (``"1234567890123456789012345.123456789"``), so no digit is
  lost under any codec; NaN and infinities as ``null``;
- ``int``: exact, whatever its size; ``float``: NaN and infinities as ``null``;
- ``datetime``/``date``/``time``: ISO 8601 text; ``UUID``: its text; ``Enum``: its value;
  dataclasses: an object of their fields; pydantic models: their JSON dump
  (``model_dump(mode="json")``); ``set``/``frozenset``: an array, sorted when its items can be;
  ``tuple``: an array; ``bytes``: UTF-8 text (undecodable bytes as ``\\xNN``);
  subclasses of ``str``/``int``/``float``/``dict``/``list``: as their base type;
- keys that are not strings: the text of their value (``1`` → ``"1"``, ``None`` → ``"null"``);
- ``/`` is never escaped; a string holding a lone surrogate is refused (``UnicodeEncodeError``);
  nesting deeper than ``MAX_NESTING`` is refused (``ValueError``); any other type raises
  ``TypeError``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from decimal import Decimal

CODECS = ("orjson", "ujson", "json")
MAX_NESTING = 254  # orjson's limit, kept under every codec

loads: Callable[[str | bytes], Any]
dumps: Callable[[Any], str]
dumps_plain: Callable[[Any], str]
"""``dumps`` of plain JSON data (what ``plain`` or ``lambda_kit.log.clean`` made: dicts with ``str``
keys, lists, valid strings, ints, finite floats, bools, None), without walking it again first."""
name: str

# --- reading --------------------------------------------------------------------------------------

# What orjson reads otherwise than the standard library, found in the text with its digits zeroed
# (one fast pass in C): a long run of digits (an integer beyond 64 bits, which orjson reads as a
# float). Such text is read by ``strict_loads``.
_ZEROED = bytes.maketrans(b"123456789", b"000000000")
_LONG_INTEGER = b"0" * 19


def _zeroed(text: str | bytes | bytearray) -> bytes:
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    return data.translate(_ZEROED)


def _refuse_constant(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if number - number != 0:
        raise ValueError(f"number {text[:40]} is beyond a float's range")
    return number


_STRICT = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite)


def _check_strings(value: object) -> None:
    """Refuse a lone surrogate anywhere in a decoded value (``UnicodeEncodeError``)."""
    if isinstance(value, str):
        value.encode("utf-8")
    elif isinstance(value, dict):
        for key, item in value.items():
            key.encode("utf-8")
            _check_strings(item)
    elif isinstance(value, list):
        for item in value:
            _check_strings(item)


def strict_loads(text: str | bytes | bytearray) -> Any:
    """The standard library's reading, held to the rules above."""
    if not isinstance(text, str):
        text = bytes(text).decode("utf-8")
    value = _STRICT.decode(text)
    _check_strings(value)
    return value


# --- writing --------------------------------------------------------------------------------------


def _decimal(value: Decimal) -> Any:
    if not value.is_finite():
        return None
    if value.adjusted() >= 4_300:  # more digits than Python converts to an int's text
        return str(value)
    if value == value.to_integral_value():
        return int(value)
    number = float(value)
    return number if type(value)(repr(number)) == value else str(value)


def _set_items(value: set[Any] | frozenset[Any]) -> list[Any]:
    try:
        return sorted(value)
    except Exception:  # items of kinds that do not compare: in the set's own order
        return list(value)


def _bytes_text(value: bytes | bytearray | memoryview) -> str:
    return bytes(value).decode(errors="backslashreplace")


def _fields(value: object) -> dict[str, Any]:
    fields = sys.modules["dataclasses"].fields  # loaded: a dataclass exists
    return {field.name: getattr(value, field.name) for field in fields(value)}


def _unsupported(value: object) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _module_class(kind: type, module: str, *names: str) -> bool:
    """Whether ``kind`` subclasses one of these classes of ``module``, if that is imported (a value
    of such a class can only exist if it is, so nothing is imported to find out)."""
    found = sys.modules.get(module)
    return found is not None and issubclass(kind, tuple(getattr(found, each) for each in names))


# (is it this kind?, its converter), in order: Enum before str and int (IntEnum, StrEnum)
_KINDS: tuple[tuple[Callable[[type], bool], Callable[[Any], Any]], ...] = (
    (lambda kind: _module_class(kind, "enum", "Enum"), lambda value: value.value),
    (lambda kind: _module_class(kind, "decimal", "Decimal"), _decimal),
    (lambda kind: issubclass(kind, str), str.__str__),
    (lambda kind: issubclass(kind, int), int.__int__),
    (lambda kind: issubclass(kind, float), float.__float__),
    (lambda kind: _module_class(kind, "datetime", "date", "time"), lambda value: value.isoformat()),
    (lambda kind: _module_class(kind, "uuid", "UUID"), str),
    (lambda kind: issubclass(kind, Mapping), dict),
    (lambda kind: issubclass(kind, list | tuple), list),
    (lambda kind: issubclass(kind, set | frozenset), _set_items),
    (lambda kind: issubclass(kind, bytes | bytearray), _bytes_text),
    (lambda kind: hasattr(kind, "__dataclass_fields__"), _fields),
    (lambda kind: _module_class(kind, "pydantic", "BaseModel"), lambda value: value.model_dump(mode="json")),
)
_converters: dict[type, Callable[[Any], Any]] = {}


def _converter_for(kind: type) -> Callable[[Any], Any]:
    found = next((convert for matches, convert in _KINDS if matches(kind)), _unsupported)
    if len(_converters) < 1_024:  # bounded: classes made at run time must not grow it forever
        _converters[kind] = found
    return found


def convert(value: object) -> Any:
    """``value``, of a type JSON has no form for, as the JSON-ready value it is written as. One
    step, not recursive (a dataclass becomes a dict of its fields, still holding what they hold).
    Raises ``TypeError`` for a type the rules do not cover."""
    converter = _converters.get(type(value)) or _converter_for(type(value))
    return converter(value)


def key_text(key: object) -> str:
    """The text a JSON object holds for the dict key ``key``: the text of its value."""
    value = plain(key)
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int | float):
        return repr(value)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _valid(text: str) -> str:
    """``text``, refused (``UnicodeEncodeError``) when it holds a lone surrogate: no UTF-8 carries one."""
    if not text.isascii():
        text.encode("utf-8")
    return text


def _plain_float(value: float, depth: int) -> Any:
    return value if value - value == 0 else None  # NaN and infinities: null


def _plain_dict(value: dict[Any, Any], depth: int) -> dict[str, Any]:
    _nested(depth)
    return {
        _valid(key) if type(key) is str else key_text(key): plain(item, depth + 1)
        for key, item in value.items()
    }


def _plain_list(value: list[Any] | tuple[Any, ...], depth: int) -> list[Any]:
    _nested(depth)
    return [plain(item, depth + 1) for item in value]


def _nested(depth: int) -> None:
    if depth >= MAX_NESTING:
        raise ValueError(f"nested deeper than {MAX_NESTING} levels (or a circular reference)")


def _plain_other(value: object, depth: int) -> Any:
    return plain(convert(value), depth)


_PLAIN: dict[type, Callable[[Any, int], Any]] = {
    str: lambda value, depth: _valid(value),
    int: lambda value, depth: value,
    bool: lambda value, depth: value,
    type(None): lambda value, depth: value,
    float: _plain_float,
    dict: _plain_dict,
    list: _plain_list,
    tuple: _plain_list,
}


def plain(value: object, depth: int = 0) -> Any:
    """``value`` as plain JSON data (dicts with ``str`` keys, lists, strings, ints, finite floats,
    bools, None), by the rules above; raises what ``dumps`` raises."""
    return _PLAIN.get(type(value), _plain_other)(value, depth)


def _json_dumps(value: object) -> str:
    return _json_plain(plain(value))


def _json_plain(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# --- the three codecs -----------------------------------------------------------------------------


Codec = tuple[Callable[[Any], Any], Callable[[Any], str], Callable[[Any], str]]
"""A codec's (loads, dumps, dumps_plain)."""


def _orjson(orjson: Any) -> Codec:
    encode, decode = orjson.dumps, orjson.loads
    # datetimes, dataclasses, subclasses and enums go through ``convert`` (orjson's own forms differ)
    option = (
        orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS
    )

    def read(text: str | bytes) -> Any:
        return strict_loads(text) if _LONG_INTEGER in _zeroed(text) else decode(text)

    def write(value: object) -> str:
        try:
            return encode(value, default=convert, option=option).decode()
        except TypeError:  # what orjson refuses (an int beyond 64 bits, an odd key ...)
            pass  # outside the except block, so an error of the fallback does not chain orjson's
        return _json_dumps(value)

    def write_plain(value: object) -> str:
        try:
            return encode(value).decode()
        except TypeError:  # an int beyond 64 bits
            pass
        return _json_plain(value)

    return read, write, write_plain


def _ujson(ujson: Any) -> Codec:
    encode = ujson.dumps

    def write(value: object) -> str:
        # ujson writes a Decimal as a float by itself, so everything is made plain first (no NaN is left)
        return write_plain(plain(value))

    def write_plain(value: object) -> str:
        return encode(value, ensure_ascii=False, escape_forward_slashes=False)

    return strict_loads, write, write_plain  # its reader is lenient (the module docstring)


def _json(_: Any) -> Codec:
    return strict_loads, _json_dumps, _json_plain


_MAKERS = {"orjson": _orjson, "ujson": _ujson, "json": _json}


def _choice() -> str:
    raw = os.environ.get("LAMBDA_KIT_JSON", "")
    choice = raw.strip().lower()
    if choice and choice not in CODECS:
        raise ValueError(
            f"LAMBDA_KIT_JSON={raw!r} names no codec: use orjson, ujson or json, or leave it unset"
        )
    return choice


def _installed(candidate: str, forced: bool) -> Any:
    try:
        return __import__(candidate)
    except ImportError:
        if forced:
            raise ImportError(
                f"LAMBDA_KIT_JSON={candidate}, but {candidate} is not installed: pip install {candidate}, "
                "or unset LAMBDA_KIT_JSON"
            ) from None
        return None


def reload() -> None:
    """Pick the codec (again, after ``LAMBDA_KIT_JSON`` changed)."""
    global loads, dumps, dumps_plain, name
    choice = _choice()
    for candidate in (choice,) if choice else CODECS:
        module = _installed(candidate, bool(choice))
        if module is not None:
            loads, dumps, dumps_plain = _MAKERS[candidate](module)
            name = candidate
            return


_CHOSEN = ("loads", "dumps", "dumps_plain", "name")
"""What ``reload`` sets: the codec is chosen on first use (orjson costs ~20 ms to import)."""


def __getattr__(attr: str) -> Any:
    if attr in _CHOSEN:
        reload()
        return globals()[attr]
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
