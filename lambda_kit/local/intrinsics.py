"""CloudFormation intrinsic functions resolved against the local resources.

``resolve(value, lookup)`` replaces ``Ref``, ``Fn::GetAtt``, ``Fn::Sub``, ``Fn::Join``,
``Fn::Select`` and ``Fn::Split`` with local names, ARNs and URLs; ``references(value)`` lists the
logical ids a value depends on (for creating resources in dependency order); ``target(value)`` is
the one logical id a single reference names (``lambda-kit check`` reads the resources with it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol

_SUB_VARIABLE = re.compile(r"\$\{(!?)([^}]+)\}")
_SUB_NAME = re.compile(r"\$\{([A-Za-z0-9]+(?:\.[A-Za-z]+)?)\}")


class IntrinsicError(ValueError):
    pass


class Lookup(Protocol):
    def ref(self, logical_id: str) -> Any: ...

    def get_att(self, logical_id: str, attribute: str) -> Any: ...


def intrinsic(value: Any) -> tuple[str, Any] | None:
    """``(function, argument)`` of a one-key mapping (``{"Ref": "Queue"}``), else None."""
    if isinstance(value, dict) and len(value) == 1:
        ((key, argument),) = value.items()
        return str(key), argument
    return None


def _get_att_args(value: Any) -> tuple[str, str]:
    if isinstance(value, str):
        logical, _, attribute = value.partition(".")
    elif isinstance(value, list) and len(value) == 2:
        logical, attribute = value
    else:
        raise IntrinsicError(f"Fn::GetAtt takes [LogicalId, Attribute], got {value!r}")
    return str(logical), str(attribute)


def _join(argument: Any, lookup: Lookup) -> str:
    delimiter, items = argument
    return str(delimiter).join(str(v) for v in resolve(items, lookup))


def _select(argument: Any, lookup: Lookup) -> Any:
    index, items = argument
    return resolve(items, lookup)[int(resolve(index, lookup))]


def _split(argument: Any, lookup: Lookup) -> list[str]:
    delimiter, text = argument
    return str(resolve(text, lookup)).split(str(delimiter))


def _import_value(argument: Any, lookup: Lookup) -> Any:
    raise IntrinsicError(f"Fn::ImportValue {argument!r} refers to another stack; it has no local value")


def _sub_parts(argument: Any) -> tuple[Any, Any]:
    """(template, variables) of ``Fn::Sub``'s two forms: a template, or ``[template, {name: value}]``."""
    if isinstance(argument, list) and argument:
        return argument[0], argument[1] if len(argument) > 1 else {}
    return argument, {}


def _sub(argument: Any, lookup: Lookup) -> str:
    template, given = _sub_parts(argument)
    variables = resolve(given, lookup)

    def replace(match: re.Match[str]) -> str:
        if match.group(1):  # ${!Literal}
            return "${" + match.group(2) + "}"
        name = match.group(2).strip()
        if name in variables:
            return str(variables[name])
        if "." in name and not name.startswith("AWS::"):
            return str(lookup.get_att(*name.split(".", 1)))
        return str(lookup.ref(name))

    return _SUB_VARIABLE.sub(replace, str(template))


FUNCTIONS: dict[str, Callable[[Any, Lookup], Any]] = {
    "Ref": lambda argument, lookup: lookup.ref(str(argument)),
    "Fn::GetAtt": lambda argument, lookup: lookup.get_att(*_get_att_args(argument)),
    "Fn::Sub": _sub,
    "Fn::Join": _join,
    "Fn::Select": _select,
    "Fn::Split": _split,
    "Fn::ImportValue": _import_value,
}
"""The intrinsics resolved locally, each given its argument and the lookup."""


def resolve(value: Any, lookup: Lookup) -> Any:
    if isinstance(value, list):
        return [resolve(v, lookup) for v in value]
    if not isinstance(value, dict):
        return value
    function, argument = _in(FUNCTIONS, value)
    if function is not None:
        return function(argument, lookup)
    return {k: resolve(v, lookup) for k, v in value.items()}


def _in(table: dict[str, Any], value: Any) -> tuple[Any, Any]:
    """What ``table`` holds for the intrinsic ``value`` is (None: no intrinsic, or not one of
    the table's), and its argument."""
    key, argument = intrinsic(value) or ("", None)
    return table.get(key), argument


def target(value: Any) -> str | None:
    """The logical id a ``Ref``, ``Fn::GetAtt`` or single-reference ``Fn::Sub`` points at, else None."""
    find, argument = _in(_TARGETS, value)
    return None if find is None else find(argument)


def _ref_target(argument: Any) -> str | None:
    return argument if isinstance(argument, str) else None


def _get_att_target(argument: Any) -> str | None:
    if isinstance(argument, list) and argument and isinstance(argument[0], str):
        return argument[0]
    return argument.partition(".")[0] if isinstance(argument, str) else None


def _sub_target(argument: Any) -> str | None:
    template = _sub_parts(argument)[0]
    if not isinstance(template, str):
        return None
    names = {match.partition(".")[0] for match in _SUB_NAME.findall(template)}
    return names.pop() if len(names) == 1 else None


_TARGETS: dict[str, Callable[[Any], str | None]] = {
    "Ref": _ref_target,
    "Fn::GetAtt": _get_att_target,
    "Fn::Sub": _sub_target,
}


def references(value: Any) -> set[str]:
    """Logical ids that ``value`` refers to (pseudo parameters excluded)."""
    found: set[str] = set()
    _walk(value, found)
    return found


def _walk(node: Any, found: set[str]) -> None:
    if isinstance(node, list):
        for item in node:
            _walk(item, found)
        return
    if not isinstance(node, dict):
        return
    add, argument = _in(_REFERENCES, node)
    if add is not None:
        add(argument, found)
        return
    for item in node.values():
        _walk(item, found)


def _ref_references(argument: Any, found: set[str]) -> None:
    if isinstance(argument, str) and not argument.startswith("AWS::"):
        found.add(argument)


def _get_att_references(argument: Any, found: set[str]) -> None:
    try:
        found.add(_get_att_args(argument)[0])
    except IntrinsicError:
        pass


def _sub_references(argument: Any, found: set[str]) -> None:
    template, given = _sub_parts(argument)
    local = set(given) if isinstance(given, dict) else set()
    names = [match.group(2).strip() for match in _SUB_VARIABLE.finditer(str(template)) if not match.group(1)]
    found.update(
        name.split(".", 1)[0] for name in names if not name.startswith("AWS::") and name not in local
    )
    _walk(given, found)


_REFERENCES: dict[str, Callable[[Any, set[str]], None]] = {
    "Ref": _ref_references,
    "Fn::GetAtt": _get_att_references,
    "Fn::Sub": _sub_references,
}
