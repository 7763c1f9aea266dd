"""Read a Serverless Framework ``serverless.yml`` as plain data.

``load(path)`` returns the file as dicts and lists, as written: ``${...}`` variables are left as
strings for the caller to resolve, and CloudFormation short tags become their long form
(``!GetAtt Table.Arn`` -> ``{"Fn::GetAtt": ["Table", "Arn"]}``, ``!Ref Queue`` ->
``{"Ref": "Queue"}``, ``!Sub s`` -> ``{"Fn::Sub": s}``), the same data the framework itself
sees. Used by ``lambda-kit check`` and the local stack.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from .extras import import_optional

__all__ = ["ConfigError", "load"]


class ConfigError(Exception):
    """serverless.yml is missing or unreadable; the message is one line naming what to fix."""


@functools.cache
def _loader() -> Any:
    """SafeLoader plus CloudFormation's short tags; duplicate keys are an error, as in the framework.

    Built on first use: PyYAML comes with the ``local`` extra, and the decorators never need it.
    """
    yaml = import_optional("yaml", "reading serverless.yml")

    class Loader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                except TypeError:  # unhashable key: let SafeLoader report it
                    continue
                if duplicate:
                    raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    def node_value(loader: Any, node: Any) -> Any:
        if isinstance(node, yaml.ScalarNode):
            return loader.construct_scalar(node)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node, deep=True)
        return loader.construct_mapping(node, deep=True)

    def construct_tag(loader: Any, suffix: str, node: Any) -> dict[str, Any]:
        value = node_value(loader, node)
        if suffix == "Ref":
            return {"Ref": value}
        if suffix == "Condition":
            return {"Condition": value}
        if suffix == "GetAtt" and isinstance(value, str):
            resource, _, attribute = value.partition(".")
            return {"Fn::GetAtt": [resource, attribute]}
        return {f"Fn::{suffix}": value}

    # Every `!Name` tag (Ref, GetAtt, Sub, Join, If, Select, ImportValue, ...) -> its long form.
    Loader.add_multi_constructor("!", construct_tag)
    return yaml, Loader


def load(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The service configuration at ``path`` as plain data; ``ConfigError`` if missing or invalid."""
    name = os.fspath(path)
    try:
        with open(name, encoding="utf-8") as file:
            text = file.read()
    except FileNotFoundError:
        raise ConfigError(f"{name} not found: run in the service directory or pass the path to serverless.yml") from None
    except IsADirectoryError:
        raise ConfigError(f"{name} is a directory: pass the path to serverless.yml") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{name} cannot be read: {exc}") from None
    yaml, loader = _loader()
    try:
        config = yaml.load(text, Loader=loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = exc.problem or exc.context or "invalid YAML"
        raise ConfigError(f"{name} is not valid YAML: {problem}{where}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{name} is not valid YAML: {exc}") from None
    if not isinstance(config, dict):
        kind = "empty" if config is None else f"a {type(config).__name__}, not a mapping"
        raise ConfigError(f"{name} is {kind}: expected service, provider and functions keys")
    return config
