"""Serverless Framework variables (``${...}``) resolved for the local stack.

Supported sources: ``self:`` (any path in the file), ``sls:stage``, ``opt:stage`` / ``opt:region``,
``aws:region`` / ``aws:accountId``, ``env:NAME`` — each with an optional fallback after a comma
(``${opt:stage, 'dev'}``, ``${env:X, ${self:custom.y}}``). Inner variables are resolved first,
so ``${self:custom.${sls:stage}.name}`` works. Other sources (``ssm:``, ``cf:``, ``file(...)``)
use their fallback when one is given and are otherwise left unresolved and reported.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

ACCOUNT_ID = "123456789012"

# An innermost variable: no "${" or "}" inside it.
_INNERMOST = re.compile(r"\$\{([^${}]*)\}")
_MAX_PASSES = 200
# A Serverless variable names its source: "self:", "env:", "file(" ... ("AWS::Region" does not).
_SERVERLESS_VARIABLE = re.compile(r"\s*(?:[a-zA-Z][a-zA-Z0-9]*(?::(?!:)|\()|'|\")")
_LEFT = "$\u200b{"
"""A variable left in place while resolving, marked so the search does not find it again."""


class Unresolved(Exception):
    """A variable with no local value and no fallback."""


def _spliced(text: str, match: re.Match[str], value: Any) -> Any:
    """``text`` with the variable ``match`` found replaced by ``value`` (the value itself when the
    variable is the whole text: it may be a number, a list, a mapping)."""
    if match.start() == 0 and match.end() == len(text):
        return value
    return text[: match.start()] + ("" if value is None else str(value)) + text[match.end() :]


def _left(text: str, match: re.Match[str]) -> str:
    return text[: match.start()] + _LEFT + match.group(1) + "}" + text[match.end() :]


def _restored(value: Any) -> Any:
    return value.replace(_LEFT, "${") if isinstance(value, str) else value


class Variables:
    def __init__(
        self,
        document: Mapping[str, Any],
        stage: str | None,
        region: str | None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.document = document
        self.options = {"stage": stage, "region": region}
        self.env = os.environ if env is None else env
        self.unresolved: list[tuple[str, str]] = []  # (where, variable)
        self._resolving: set[str] = set()
        self._sources = {
            "self": self._self,
            "sls": lambda address: {"stage": self.stage, "instanceId": "local"}.get(address),
            "opt": self.options.get,
            "aws": lambda address: {"region": self.region, "accountId": ACCOUNT_ID, "partition": "aws"}.get(
                address
            ),
            "env": self.env.get,
        }
        # stage / region themselves may be variables in the provider section (read with the defaults).
        self.stage, self.region = stage or "dev", region or "us-east-1"
        self.stage = stage or self._provider_value("stage", "dev")
        self.region = region or self._provider_value("region", "us-east-1")

    def _provider_value(self, key: str, default: str) -> str:
        value = _node_at(self.document, f"provider.{key}")
        try:
            resolved = default if value is None else self.resolve_value(value, f"provider.{key}", strict=True)
        except Unresolved:
            return default
        return str(resolved) if resolved not in (None, "") else default

    # --- public -------------------------------------------------------------------------------

    def resolve(self, value: Any, where: str = "") -> Any:
        """``value`` with every resolvable variable replaced (recursively through dicts and lists)."""
        if isinstance(value, str):
            return self.resolve_value(value, where, strict=False)
        if isinstance(value, dict):
            return {k: self.resolve(v, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return value

    # --- one string ---------------------------------------------------------------------------

    def resolve_value(self, text: str, where: str, strict: bool) -> Any:
        """``text`` with its variables resolved, innermost first; one left unresolved raises
        ``Unresolved`` when ``strict``, else is noted in ``unresolved`` and kept."""
        current: Any = text
        for _ in range(_MAX_PASSES):
            match = _INNERMOST.search(current) if isinstance(current, str) else None
            if match is None:
                break
            current = self._step(current, match, where, strict)
        return _restored(current)

    def _step(self, text: str, match: re.Match[str], where: str, strict: bool) -> Any:
        """``text`` with the variable ``match`` found resolved, or marked as left."""
        if not _SERVERLESS_VARIABLE.match(match.group(1)):
            return _left(
                text, match
            )  # CloudFormation's own ${AWS::Region} / ${Logical.Attr} (Fn::Sub): not ours
        try:
            return _spliced(text, match, self._variable(match.group(1).strip()))
        except Unresolved:
            if strict:
                raise
            self.unresolved.append((where, match.group(0)))
            return _left(text, match)

    def _variable(self, body: str) -> Any:
        reference, fallback = _split_fallback(body)
        value = self._lookup(reference.strip())
        if value is not None:
            return value
        if fallback is None:
            raise Unresolved(f"${{{body}}}")
        return _literal(fallback)

    def _lookup(self, reference: str) -> Any:
        source, colon, address = reference.partition(":")
        if not colon:  # no source: a literal such as a quoted default on its own
            return _literal(reference) if reference[:1] in ("'", '"') else None
        lookup = self._sources.get(source.strip())
        return None if lookup is None else lookup(address.strip())

    def _self(self, address: str) -> Any:
        settled = {"provider.stage": self.stage, "provider.region": self.region}
        if address in settled:
            return settled[address]
        if address in self._resolving:
            raise Unresolved(f"${{self:{address}}} refers to itself")
        node = _node_at(self.document, address)
        self._resolving.add(address)
        try:
            return self._deep(node, address)
        finally:
            self._resolving.discard(address)

    def _deep(self, node: Any, where: str) -> Any:
        if isinstance(node, str):
            return self.resolve_value(node, where, strict=True)
        if isinstance(node, dict):
            return {k: self._deep(v, where) for k, v in node.items()}
        if isinstance(node, list):
            return [self._deep(v, where) for v in node]
        return node


def _node_at(document: Any, address: str) -> Any:
    """The value at a dotted ``address`` (``custom.tableName``, ``functions.f.events.0``), or None."""
    node = document
    for part in address.split(".") if address else []:
        node = _child(node, part)
    return node


def _child(node: Any, part: str) -> Any:
    if isinstance(node, Mapping):
        return node.get(part)
    if isinstance(node, list) and part.isdigit() and int(part) < len(node):
        return node[int(part)]
    return None


def _split_fallback(body: str) -> tuple[str, str | None]:
    """``"opt:stage, 'dev'"`` -> ``("opt:stage", "'dev'")``; commas inside quotes do not split."""
    quote = None
    for index, char in enumerate(body):
        if char == "," and quote is None:
            return body[:index], body[index + 1 :].strip()
        if char in ("'", '"'):
            quote = None if quote == char else quote or char
    return body, None


def _unquoted(text: str) -> str:
    return text[1:-1]


LITERALS = (
    (re.compile(r"'.*'|\".*\"", re.DOTALL), _unquoted),
    (re.compile(r"-?\d+"), int),
    (re.compile(r"-?\d+\.\d+"), float),
    (re.compile(r"true|false"), lambda text: text == "true"),
)
"""A fallback's text that is quoted, a number or a boolean, and what it becomes."""


def _literal(text: str) -> Any:
    text = text.strip()
    return next((convert(text) for pattern, convert in LITERALS if pattern.fullmatch(text)), text)
