"""CloudFormation intrinsic functions resolved against the local resources.

``resolve(value, lookup)`` replaces ``Ref``, ``Fn::GetAtt``, ``Fn::Sub``, ``Fn::Join``,
``Fn::Select`` and ``Fn::Split`` with local names, ARNs and URLs; ``references(value)`` lists the
logical ids a value depends on (for creating resources in dependency order).
"""

from __future__ import annotations

import re
from typing import Any, Protocol

_SUB_VARIABLE = re.compile(r"\$\{(!?)([^}]+)\}")


class IntrinsicError(ValueError):
    pass


class Lookup(Protocol):
    def ref(self, logical_id: str) -> Any: ...

    def get_att(self, logical_id: str, attribute: str) -> Any: ...


def _get_att_args(value: Any) -> tuple[str, str]:
    if isinstance(value, str):
        logical, _, attribute = value.partition(".")
    elif isinstance(value, list) and len(value) == 2:
        logical, attribute = value
    else:
        raise IntrinsicError(f"Fn::GetAtt takes [LogicalId, Attribute], got {value!r}")
    return str(logical), str(attribute)


def resolve(value: Any, lookup: Lookup) -> Any:
    if isinstance(value, list):
        return [resolve(v, lookup) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        (key, argument), = value.items()
        if key == "Ref":
            return lookup.ref(str(argument))
        if key == "Fn::GetAtt":
            return lookup.get_att(*_get_att_args(argument))
        if key == "Fn::Sub":
            return _sub(argument, lookup)
        if key == "Fn::Join":
            delimiter, items = argument
            return str(delimiter).join(str(v) for v in resolve(items, lookup))
        if key == "Fn::Select":
            index, items = argument
            return resolve(items, lookup)[int(resolve(index, lookup))]
        if key == "Fn::Split":
            delimiter, text = argument
            return str(resolve(text, lookup)).split(str(delimiter))
        if key == "Fn::ImportValue":
            raise IntrinsicError(f"Fn::ImportValue {argument!r} refers to another stack; it has no local value")
    return {k: resolve(v, lookup) for k, v in value.items()}


def _sub(argument: Any, lookup: Lookup) -> str:
    if isinstance(argument, list):
        template, variables = argument[0], resolve(argument[1] if len(argument) > 1 else {}, lookup)
    else:
        template, variables = argument, {}

    def replace(match: re.Match[str]) -> str:
        if match.group(1):  # ${!Literal}
            return "${" + match.group(2) + "}"
        name = match.group(2).strip()
        if name in variables:
            return str(variables[name])
        if "." in name and not name.startswith("AWS::"):
            logical, attribute = name.split(".", 1)
            return str(lookup.get_att(logical, attribute))
        return str(lookup.ref(name))

    return _SUB_VARIABLE.sub(replace, str(template))


def references(value: Any) -> set[str]:
    """Logical ids that ``value`` refers to (pseudo parameters excluded)."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
            return
        if not isinstance(node, dict):
            return
        if len(node) == 1:
            (key, argument), = node.items()
            if key == "Ref" and isinstance(argument, str):
                if not argument.startswith("AWS::"):
                    found.add(argument)
                return
            if key == "Fn::GetAtt":
                try:
                    found.add(_get_att_args(argument)[0])
                except IntrinsicError:
                    pass
                return
            if key == "Fn::Sub":
                template = argument[0] if isinstance(argument, list) else argument
                local = set(argument[1]) if isinstance(argument, list) and len(argument) > 1 and isinstance(argument[1], dict) else set()
                for match in _SUB_VARIABLE.finditer(str(template)):
                    name = match.group(2).strip()
                    if match.group(1) or name.startswith("AWS::") or name in local:
                        continue
                    found.add(name.split(".", 1)[0])
                if isinstance(argument, list) and len(argument) > 1:
                    walk(argument[1])
                return
        for item in node.values():
            walk(item)

    walk(value)
    return found
