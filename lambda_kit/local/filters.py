"""Lambda event filtering (``filterPatterns``), evaluated per record before batching.

A record is delivered when ANY pattern matches. A pattern matches when every key in it matches:
a nested mapping descends into the record; a list is a set of rules of which one must match
(for a list value in the record, any element may match). Rules: literal strings, numbers,
booleans and ``null`` (exact match), ``{"prefix": s}``, ``{"suffix": s}``,
``{"equals-ignore-case": s}``, ``{"wildcard": "a*b"}``, ``{"anything-but": v | [v...] |
{"prefix": s} | {"suffix": s}}``, ``{"numeric": [">", 0, "<=", 5]}``, ``{"exists": bool}``,
and ``"$or": [pattern, ...]`` at any level.

What the patterns see, as Lambda documents it: SQS records with ``body`` parsed when it is JSON;
Kinesis records with ``data`` base64-decoded and parsed when it is JSON (other record fields stay
under ``kinesis`` as in the event); DynamoDB records as they are in the event (``dynamodb.Keys``,
``dynamodb.NewImage`` with typed values such as ``{"S": ...}``).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from typing import Any

_MISSING = object()
_NUMERIC_OPS = {
    "=": lambda a, b: a == b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


class FilterError(ValueError):
    pass


def compile_patterns(patterns: Any, source: str) -> Callable[[dict[str, Any]], bool] | None:
    """A predicate over Lambda-shaped records, or ``None`` when there are no patterns."""
    if not patterns:
        return None
    if not isinstance(patterns, list):
        patterns = [patterns]
    parsed = []
    for pattern in patterns:
        if isinstance(pattern, str):
            try:
                pattern = json.loads(pattern)
            except ValueError as exc:
                raise FilterError(f"filter pattern is not valid JSON: {exc}") from None
        if isinstance(pattern, dict) and set(pattern) == {"pattern"}:  # {pattern: "..."} (CloudFormation form)
            pattern = json.loads(pattern["pattern"]) if isinstance(pattern["pattern"], str) else pattern["pattern"]
        if not isinstance(pattern, dict):
            raise FilterError(f"filter pattern must be an object, got {pattern!r}")
        _validate(pattern)
        parsed.append(pattern)

    def predicate(record: dict[str, Any]) -> bool:
        view = filterable(record, source)
        return any(matches(pattern, view) for pattern in parsed)

    return predicate


def filterable(record: dict[str, Any], source: str) -> dict[str, Any]:
    if source == "sqs":
        body = record.get("body")
        return {**record, "body": _maybe_json(body)}
    if source == "kinesis":
        kinesis = record.get("kinesis") or {}
        try:
            data: Any = base64.b64decode(kinesis.get("data") or "").decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            data = kinesis.get("data")
        return {**record, "data": _maybe_json(data)}
    return record


def _maybe_json(text: Any) -> Any:
    if isinstance(text, str) and text[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def _validate(pattern: Any) -> None:
    if isinstance(pattern, dict):
        for key, value in pattern.items():
            if key == "$or":
                if not isinstance(value, list) or not value:
                    raise FilterError("$or takes a non-empty list of patterns")
                for option in value:
                    _validate(option)
            elif isinstance(value, dict):
                _validate(value)
            elif not isinstance(value, list):
                raise FilterError(f"filter rule for {key!r} must be a list of values or an object, got {value!r}")


def matches(pattern: dict[str, Any], event: Any) -> bool:
    for key, expected in pattern.items():
        if key == "$or":
            if not any(matches(option, event) for option in expected):
                return False
            continue
        value = event.get(key, _MISSING) if isinstance(event, dict) else _MISSING
        if isinstance(expected, dict):
            if not isinstance(value, dict) or not matches(expected, value):
                return False
        elif not _matches_rules(expected, value):
            return False
    return True


def _matches_rules(rules: list[Any], value: Any) -> bool:
    if value is _MISSING:
        return any(isinstance(rule, dict) and rule.get("exists") is False for rule in rules)
    values = value if isinstance(value, list) else [value]
    for rule in rules:
        if isinstance(rule, dict) and "exists" in rule:
            if rule["exists"] is True and not isinstance(value, dict):
                return True
            continue
        if any(_matches_rule(rule, item) for item in values):
            return True
    return False


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _matches_rule(rule: Any, value: Any) -> bool:
    if not isinstance(rule, dict):
        if _is_number(rule) and _is_number(value):
            return float(rule) == float(value)
        return type(rule) is type(value) and rule == value if rule is not None else value is None
    if "prefix" in rule:
        return isinstance(value, str) and isinstance(rule["prefix"], str) and value.startswith(rule["prefix"])
    if "suffix" in rule:
        return isinstance(value, str) and value.endswith(str(rule["suffix"]))
    if "equals-ignore-case" in rule:
        return isinstance(value, str) and value.casefold() == str(rule["equals-ignore-case"]).casefold()
    if "wildcard" in rule:
        regex = ".*".join(re.escape(part) for part in str(rule["wildcard"]).split("*"))
        return isinstance(value, str) and re.fullmatch(regex, value) is not None
    if "anything-but" in rule:
        excluded = rule["anything-but"]
        if isinstance(excluded, dict):
            return isinstance(value, str) and not _matches_rule(excluded, value)
        excluded = excluded if isinstance(excluded, list) else [excluded]
        return not any(_matches_rule(item, value) for item in excluded)
    if "numeric" in rule:
        if not _is_number(value):
            return False
        terms = rule["numeric"]
        for index in range(0, len(terms) - 1, 2):
            operator, bound = terms[index], terms[index + 1]
            if operator not in _NUMERIC_OPS or not _is_number(bound):
                raise FilterError(f"numeric rule {terms!r}: operators are = < <= > >= followed by a number")
            if not _NUMERIC_OPS[operator](float(value), float(bound)):
                return False
        return True
    raise FilterError(f"unknown filter rule {rule!r}")
