"""Lambda event filtering (``filterPatterns``), evaluated per record before batching.

A record is delivered when ANY pattern matches. Lambda's filter rules are EventBridge's, and so
is the matcher: moto's ``EventPattern`` (the one its EventBridge matches rules with). A pattern
matches when every key in it matches: a nested mapping descends into the record; a list is a set
of rules of which one must match (for a list value in the record, any element may match). Rules:
literal strings, numbers, booleans and ``null`` (exact match), ``{"prefix": s}``, ``{"suffix":
s}``, ``{"equals-ignore-case": s}``, ``{"wildcard": "a*b"}``, ``{"anything-but": v | [v...] |
{"prefix": s} | {"suffix": s}}``, ``{"numeric": [">", 0, "<=", 5]}``, ``{"exists": bool}``,
``{"cidr": "10.0.0.0/8"}``, and ``"$or": [pattern, ...]`` at any level.

What the patterns see, as Lambda documents it: SQS records with ``body`` parsed when it is JSON;
Kinesis records with ``data`` base64-decoded and parsed when it is JSON (other record fields stay
under ``kinesis`` as in the event); DynamoDB records as they are in the event (``dynamodb.Keys``,
``dynamodb.NewImage`` with typed values such as ``{"S": ...}``).

Where moto's matcher differs from Lambda's, this module corrects it (tests/test_local_config.py):

- a pattern is checked when it is compiled, as Lambda checks it when the event source is created:
  moto's matcher takes a rule it does not know (``{"prefx": ...}``) as matching everything, and
  fails on a bad ``numeric`` operator only when a record arrives;
- JSON booleans reach it as strings that no number equals (``_tagged``): in Python ``True == 1``,
  so moto's matcher took ``[true]`` for ``[1]`` and ran ``numeric`` rules on booleans. A rule that
  takes every string (``{"prefix": ""}``, ``{"wildcard": "*"}``) takes a boolean too.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from .._data import dig

RULES = frozenset(
    {"prefix", "suffix", "equals-ignore-case", "wildcard", "anything-but", "numeric", "exists", "cidr"}
)
NUMERIC_OPERATORS = frozenset({"=", "<", "<=", ">", ">="})
_BOOLEANS = {True: "\0true\0", False: "\0false\0"}

Predicate = Callable[[dict[str, Any]], bool]


class FilterError(ValueError):
    pass


def compile_patterns(patterns: Any, source: str) -> Predicate | None:
    """A predicate over Lambda-shaped records, or ``None`` when there are no patterns."""
    if not patterns:
        return None
    matchers = [_matcher(_parse(p)) for p in (patterns if isinstance(patterns, list) else [patterns])]

    def predicate(record: dict[str, Any]) -> bool:
        try:
            view = _tagged(filterable(record, source))
            return any(matcher.matches_event(view) for matcher in matchers)
        except RecursionError:  # nested deeper than Python recurses: the function gets it (and fails it)
            return True

    return predicate


def matches(pattern: dict[str, Any], event: Any) -> bool:
    """Whether ``event`` matches one pattern; :class:`FilterError` if the pattern is not one."""
    _validate(pattern)
    return bool(_matcher(pattern).matches_event(_tagged(event)))


def _matcher(pattern: dict[str, Any]) -> Any:
    """moto's matcher for a checked pattern."""
    # moto is the local extra's: the CLI imports FilterError from this module without it.
    from moto.events.models import EventPattern

    return EventPattern(None, _tagged(pattern, pattern=True))


def _parse(pattern: Any) -> dict[str, Any]:
    """A pattern given as an object, JSON text, or CloudFormation's ``{pattern: "..."}``."""
    if isinstance(pattern, dict) and set(pattern) == {"pattern"}:
        pattern = pattern["pattern"]
    if isinstance(pattern, str):
        try:
            pattern = json.loads(pattern)
        except ValueError as exc:
            raise FilterError(f"filter pattern is not valid JSON: {exc}") from None
    _validate(pattern)
    return pattern  # type: ignore[no-any-return]


def _validate(pattern: Any) -> None:
    if not isinstance(pattern, dict):
        raise FilterError(f"filter pattern must be an object, got {pattern!r}")
    for key, value in pattern.items():
        _validate_field(key, value)


def _validate_field(key: str, value: Any) -> None:
    if key == "$or":
        _validate_options(value)
    elif isinstance(value, dict):
        _validate(value)
    elif isinstance(value, list):
        for rule in value:
            _validate_rule(key, rule)
    else:
        raise FilterError(f"filter rule for {key!r} must be a list of values or an object, got {value!r}")


def _validate_options(options: Any) -> None:
    if not isinstance(options, list) or not options:
        raise FilterError("$or takes a non-empty list of patterns")
    for option in options:
        _validate(option)


def _validate_rule(key: str, rule: Any) -> None:
    if not isinstance(rule, dict):
        return  # a value to equal
    name = next(iter(rule), None)
    if len(rule) != 1 or name not in RULES:
        raise FilterError(
            f"unknown filter rule {rule!r} for {key!r}: the rules are {', '.join(sorted(RULES))}"
        )
    if name == "numeric" and not _numeric_terms(rule["numeric"]):
        raise FilterError(
            f"numeric rule {rule['numeric']!r}: operators are = < <= > >= each followed by a number"
        )


def _numeric_terms(terms: Any) -> bool:
    if not isinstance(terms, list) or not terms or len(terms) % 2:
        return False
    pairs = zip(terms[::2], terms[1::2], strict=True)
    return all(operator in NUMERIC_OPERATORS and _is_number(bound) for operator, bound in pairs)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _tagged(value: Any, pattern: bool = False) -> Any:
    """A record (or a ``pattern``) with JSON booleans as strings no number equals (see the
    module's notes); an ``exists`` rule keeps its own boolean."""
    if isinstance(value, bool):
        return _BOOLEANS[value]
    if isinstance(value, list):
        return [_tagged(item, pattern) for item in value]
    if not isinstance(value, dict) or (pattern and _is_exists_rule(value)):
        return value
    return {key: _tagged(item, pattern) for key, item in value.items()}


def _is_exists_rule(value: dict[str, Any]) -> bool:
    return set(value) == {"exists"} and isinstance(value["exists"], bool)


def filterable(record: dict[str, Any], source: str) -> dict[str, Any]:
    """The record as the patterns see it (see the module's notes)."""
    if source == "sqs":
        return {**record, "body": _maybe_json(record.get("body"))}
    if source == "kinesis":
        return {**record, "data": _maybe_json(_kinesis_data(record))}
    return record


def _kinesis_data(record: dict[str, Any]) -> Any:
    data = dig(record, "kinesis", "data")
    try:
        return base64.b64decode(data or "").decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return data


def _maybe_json(text: Any) -> Any:
    if isinstance(text, str) and text[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text
