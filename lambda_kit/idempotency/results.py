"""A call's result as the table keeps it, and restored as it was returned.

Kinds: ``json`` (JSON values, written by lambda_kit's codec: what JSON cannot tell apart comes back
as JSON gives it, a ``Decimal`` as a number, a ``datetime`` as its text); ``tuple`` (a tuple of
JSON values comes back a tuple, so an ``api_handler``'s ``(body, status)`` answers the same);
``dataclass`` (its fields; restored by pydantic when it is installed, nested dataclasses and typed
fields included, else by calling the class with the fields); ``pydantic`` (``model_dump`` in JSON
mode, restored by ``model_validate``). A dataclass or model is found again by its module and
qualified name, so it must be defined at a module's top level.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
from dataclasses import dataclass
from typing import Any

from .. import codec
from .errors import IdempotencyError

MAX_RESULT_BYTES = 380 * 1024
"""The largest result text kept: a DynamoDB item holds 400 KB, the entry's other attributes included."""


@dataclass(frozen=True, slots=True)
class Stored:
    kind: str
    text: str
    type_name: str | None = None


def _type_name(cls: type) -> str:
    if "<locals>" in cls.__qualname__:
        raise IdempotencyError(
            f"the result's class {cls.__qualname__} is defined inside a function: it cannot be found "
            "again to restore a stored result; define it at a module's top level"
        )
    return f"{cls.__module__}:{cls.__qualname__}"


def _is_model(value: Any) -> bool:
    model = type(value)
    return callable(getattr(model, "model_dump", None)) and callable(getattr(model, "model_validate", None))


def _text(value: Any, function: str) -> str:
    try:
        text = codec.dumps(value)
    except (TypeError, ValueError) as exc:
        raise IdempotencyError(
            f"{function} returned a value that cannot be stored ({exc}): return JSON values, a tuple, "
            "a dataclass or a pydantic model"
        ) from None
    if len(text.encode("utf-8")) > MAX_RESULT_BYTES:
        raise IdempotencyError(
            f"{function} returned a result of over {MAX_RESULT_BYTES // 1024} KiB as JSON: a DynamoDB item "
            "holds 400 KB; return less (an id to look the rest up by)"
        )
    return text


def store(result: Any, function: str) -> Stored:
    """``result`` as the table keeps it; a result that cannot be raises :class:`IdempotencyError`."""
    if _is_model(result) and not isinstance(result, type):
        return Stored("pydantic", _text(result.model_dump(mode="json"), function), _type_name(type(result)))
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return Stored("dataclass", _text(dataclasses.asdict(result), function), _type_name(type(result)))
    if type(result) is tuple:
        return Stored("tuple", _text(list(result), function))
    return Stored("json", _text(result, function))


def _class(type_name: str | None) -> Any:
    module_name, _, qualname = (type_name or "").partition(":")
    try:
        found: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError, ValueError):
        raise IdempotencyError(
            f"the stored result's class {type_name!r} cannot be found: it was renamed or moved since "
            "the result was stored"
        ) from None
    return found


def _restored_dataclass(cls: Any, fields: Any) -> Any:
    if importlib.util.find_spec("pydantic") is not None:
        from pydantic import TypeAdapter  # the pydantic extra, where installed: typed fields restored

        return TypeAdapter(cls).validate_python(fields)
    return cls(**fields)


def restore(stored: Stored) -> Any:
    """The result as it was returned (see the module's docstring for what each kind gives)."""
    value = codec.loads(stored.text)
    if stored.kind == "tuple":
        return tuple(value)
    if stored.kind == "dataclass":
        return _restored_dataclass(_class(stored.type_name), value)
    if stored.kind == "pydantic":
        return _class(stored.type_name).model_validate(value)
    return value
