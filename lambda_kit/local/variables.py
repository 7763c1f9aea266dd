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


class Unresolved(Exception):
    """A variable with no local value and no fallback."""


class Variables:
    def __init__(self, document: Mapping[str, Any], stage: str | None, region: str | None, env: Mapping[str, str] | None = None) -> None:
        self.document = document
        self.options = {"stage": stage, "region": region}
        self.env = os.environ if env is None else env
        self.unresolved: list[tuple[str, str]] = []  # (where, variable)
        self._resolving: set[str] = set()
        # stage / region themselves may be variables in the provider section.
        self.stage = stage or self._provider_value("stage", "dev")
        self.region = region or self._provider_value("region", "us-east-1")

    def _provider_value(self, key: str, default: str) -> str:
        provider = self.document.get("provider")
        value = provider.get(key) if isinstance(provider, Mapping) else None
        if value is None:
            return default
        try:
            resolved = self.resolve_value(value, f"provider.{key}", strict=True)
        except Unresolved:
            return default
        return str(resolved) if resolved not in (None, "") else default

    # --- public -------------------------------------------------------------------------------

    def resolve(self, value: Any, where: str = "") -> Any:
        """``value`` with every resolvable variable replaced (recursively through dicts and lists)."""
        if isinstance(value, str):
            try:
                return self.resolve_value(value, where, strict=False)
            except Unresolved:  # pragma: no cover - non-strict never raises
                return value
        if isinstance(value, dict):
            return {k: self.resolve(v, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return value

    # --- one string ---------------------------------------------------------------------------

    def resolve_value(self, text: str, where: str, strict: bool) -> Any:
        current: Any = text
        for _ in range(_MAX_PASSES):
            if not isinstance(current, str):
                return current
            match = _INNERMOST.search(current)
            if match is None:
                return current.replace("$\u200b{", "${")
            if not _SERVERLESS_VARIABLE.match(match.group(1)):
                # CloudFormation's own ${AWS::Region} / ${Logical.Attr} (Fn::Sub): not ours.
                current = current[: match.start()] + "$\u200b{" + match.group(1) + "}" + current[match.end() :]
                continue
            try:
                value = self._variable(match.group(1).strip(), where, strict)
            except Unresolved:
                if strict:
                    raise
                self.unresolved.append((where, match.group(0)))
                # Leave it, marked so the loop does not find it again.
                current = current[: match.start()] + "$\u200b{" + match.group(1) + "}" + current[match.end() :]
                continue
            if match.start() == 0 and match.end() == len(current):
                current = value
            else:
                current = current[: match.start()] + ("" if value is None else str(value)) + current[match.end() :]
        if isinstance(current, str):
            current = current.replace("$\u200b{", "${")
        return current

    def _variable(self, body: str, where: str, strict: bool) -> Any:
        reference, fallback = _split_fallback(body)
        value = self._lookup(reference.strip(), where)
        if value is None and fallback is not None:
            return _literal(fallback)
        if value is None:
            raise Unresolved(f"${{{body}}}")
        return value

    def _lookup(self, reference: str, where: str) -> Any:
        source, _, address = reference.partition(":")
        source = source.strip()
        address = address.strip()
        if not _:  # no source: a literal such as a quoted default on its own
            return _literal(reference) if reference[:1] in ("'", '"') else None
        if source == "self":
            return self._self(address, where)
        if source == "sls":
            return {"stage": self.stage, "instanceId": "local"}.get(address)
        if source == "opt":
            return self.options.get(address)
        if source == "aws":
            return {"region": self.region, "accountId": ACCOUNT_ID, "partition": "aws"}.get(address)
        if source == "env":
            return self.env.get(address)
        return None

    def _self(self, address: str, where: str) -> Any:
        if address in self._resolving:
            raise Unresolved(f"${{self:{address}}} refers to itself")
        node: Any = self.document
        for part in address.split(".") if address else []:
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        if address == "provider.stage":
            return self.stage
        if address == "provider.region":
            return self.region
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


def _split_fallback(body: str) -> tuple[str, str | None]:
    """``"opt:stage, 'dev'"`` -> ``("opt:stage", "'dev'")``; commas inside quotes do not split."""
    quote = None
    for index, char in enumerate(body):
        if quote:
            if char == quote:
                quote = None
        elif char in ("'", '"'):
            quote = char
        elif char == ",":
            return body[:index], body[index + 1 :].strip()
    return body, None


def _literal(text: str) -> Any:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in ("'", '"'):
        return text[1:-1]
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"-?\d+\.\d+", text):
        return float(text)
    if text in ("true", "false"):
        return text == "true"
    return text
