"""The idempotency key of a call, and the fingerprint ``validate=`` compares.

A key is read from the payload: a function of it, or field names (``"order_id"``, a dotted path
``"customer.id"``, several names for a composite key). Fields are read from a mapping by item and
from anything else (a pydantic model, a dataclass) by attribute; an ``api_handler`` request's
fields are its JSON body's (its ``model=`` instance when it has one). The key's value is hashed
(SHA-256 of its canonical JSON): the table never holds the payload's values.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .errors import MissingKey

KeySpec = str | Sequence[str] | Callable[[Any], Any]
"""Field names (one, or several for a composite key), or a function of the payload."""

IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"
_MISSING = object()


def _request_class() -> type | None:
    """The API request class when it is loaded (a payload can only be one if it is)."""
    module = sys.modules.get("lambda_kit.sources.api.request")
    return None if module is None else module.Request  # type: ignore[no-any-return]


def is_request(payload: Any) -> bool:
    request = _request_class()
    return request is not None and isinstance(payload, request)


def fields_of(payload: Any) -> Any:
    """Where field names are looked up: the payload, or an API request's body."""
    if type(payload) is dict or not is_request(payload):
        return payload
    return payload.model if payload.model is not None else payload.json


def _field(value: Any, name: str) -> Any:
    for part in name.split("."):
        if isinstance(value, dict):
            value = value.get(part, _MISSING)
        else:
            value = getattr(value, part, _MISSING)
        if value is _MISSING or value is None:
            return _MISSING
    return value


def _present(value: Any) -> Any:
    return None if value is _MISSING else value


def field_values(payload: Any, names: Sequence[str], what: str) -> Any:
    """The value of each field in ``names`` (one name: its value); a missing or null one raises
    :class:`MissingKey` naming it."""
    where = fields_of(payload)
    values = []
    for name in names:
        value = _field(where, name)
        if value is _MISSING:
            raise MissingKey(f"the payload has no {what} field {name!r} (missing or null)")
        values.append(value)
    return values[0] if len(values) == 1 else values


def names_of(spec: str | Sequence[str], option: str) -> tuple[str, ...]:
    """Field names, checked when the function is decorated."""
    names = (spec,) if isinstance(spec, str) else tuple(spec)
    if not names or not all(isinstance(name, str) and name for name in names):
        raise TypeError(f"@idempotent: {option}= takes field names (a str or a list of str), not {spec!r}")
    return names


def key_reader(spec: KeySpec) -> Callable[[Any], Any]:
    """A function of the payload giving the key's value."""
    if callable(spec):
        return spec
    names = names_of(spec, "key")
    return lambda payload: field_values(payload, names, "key")


def plain(value: Any) -> Any:
    """``value`` as JSON values: a pydantic model dumped in JSON mode, a dataclass as its fields."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def digest(value: Any) -> str:
    """SHA-256 (hex) of ``value``'s canonical JSON: the same for the same value in every process,
    whichever JSON codec is installed (the standard library's ``json`` writes it, keys sorted)."""
    text = json.dumps(plain(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def key_digest(reader: Callable[[Any], Any], payload: Any) -> str:
    """The digest of the payload's key; a key function that gives None raises :class:`MissingKey`."""
    value = reader(payload)
    if value is None:
        raise MissingKey("the idempotency key function gave None for this payload")
    return digest(value)


def whole_request(request: Any) -> dict[str, Any]:
    """What ``validate=True`` compares of an API request: method, path, query and body."""
    return {"method": request.method, "path": request.path, "query": request.query_all, "body": request.body}


def fingerprint_reader(validate: Any) -> Callable[[Any], Any] | None:
    """What ``validate=`` compares between two calls with one key: None (nothing), True (the whole
    payload), field names, or a function of the payload."""
    if validate is None or validate is False:
        return None
    if validate is True:
        return lambda payload: whole_request(payload) if is_request(payload) else payload
    if callable(validate):
        return validate  # type: ignore[no-any-return]
    names = names_of(validate, "validate")
    return lambda payload: {name: _present(_field(fields_of(payload), name)) for name in names}


def fingerprint(reader: Callable[[Any], Any] | None, payload: Any) -> str | None:
    if reader is None:
        return None
    return digest(reader(payload))


def header(name: str = IDEMPOTENCY_KEY_HEADER) -> Callable[[Any], str]:
    """A key function for ``api_handler``: the request's ``name`` header (``Idempotency-Key``); a
    request without it is answered 400, never run unprotected."""

    def from_header(request: Any) -> str:
        value = dict.get(request.headers, name.lower()) if is_request(request) else None
        if not value:
            raise MissingKey(f"the request has no {name} header: send one to make it idempotent")
        return str(value)

    from_header.__qualname__ = f"header({name!r})"
    return from_header
