"""Reading fields out of JSON-shaped data: one home for every layer (sources, the local stack, ``check``).

Events, ``serverless.yml`` and CloudFormation templates are nested dicts from outside: a field may
be missing or of another type, and reading one must never raise.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

NO_FIELDS: Mapping[str, Any] = MappingProxyType({})
"""An empty mapping: what ``mapping`` gives for a field that is no object."""


def dig(value: Any, *keys: str) -> Any:
    """``value[key][key]...`` through dicts, else None (a step that is no dict, a key missing)."""
    for key in keys:
        if type(value) is not dict:
            return None
        value = value.get(key)
    return value


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a dict, else ``NO_FIELDS``."""
    return value if type(value) is dict else NO_FIELDS


def is_text(value: Any) -> bool:
    """A non-empty string: what an id must be."""
    return isinstance(value, str) and value != ""


def text_or(value: Any, default: Any) -> Any:
    """``value`` when it is a non-empty string, else ``default``."""
    return value if is_text(value) else default
