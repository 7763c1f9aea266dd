"""``lambda-kit check``'s findings for functions that use ``lambda_kit.idempotency``.

For each ``@idempotent`` function a handler's module holds (decorated in it, or imported into it),
its table is looked for among ``serverless.yml``'s resources (by the environment variable the
table name was read from, ``!Ref Table`` or ``${...}`` as written, or by ``TableName``), then:

- error: a key schema other than ``PK`` (S, HASH) and ``SK`` (S, RANGE): every call would fail;
- error: a role (the function's ``role:``, else the provider's statements) that does not grant
  ``dynamodb:PutItem`` (claim, completion) and ``dynamodb:DeleteItem`` (releasing a failed call's
  claim) on the table;
- warning: no TTL on ``ttl``: completed entries are never deleted (their expiry still holds, the
  claim's condition reads ``ttl``), and the table grows;
- warning: a table that is not among the resources (created elsewhere: nothing to check);
- error: a handler decorated ``@idempotent(at_commit=True)`` under a decorator without
  ``commit=``: its calls' writes would wait for a commit that never runs.

Findings are ``(level, subject, message)``; ``check.py`` makes them its own.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Any

from .._data import mapping
from ..local.config import FunctionConfig, ServiceConfig
from ..local.intrinsics import target

Found = tuple[str, str, str]
MARK = "__lambda_kit_idempotency__"
PLACEHOLDER = "lambda-kit-check-"  # what check.py puts in an environment variable it cannot resolve
NEEDED = ("dynamodb:PutItem", "dynamodb:DeleteItem")
TABLE = "AWS::DynamoDB::Table"
KEY_SCHEMA = [("PK", "HASH"), ("SK", "RANGE")]


def tables_used(module: Any) -> list[str]:
    """The table names of the ``@idempotent`` functions ``module`` holds, in order, once each."""
    found = (getattr(value, MARK, None) for value in list(vars(module).values()))
    return list(dict.fromkeys(mark["table"] for mark in found if isinstance(mark, dict)))


def _as_written(table: str, function: FunctionConfig) -> Any:
    """What serverless.yml says the table name is: the variable's value, when it was read from one."""
    if table.startswith(PLACEHOLDER):
        return function.environment.get(table[len(PLACEHOLDER) :], table)
    return table


def table_resource(table: str, function: FunctionConfig, config: ServiceConfig) -> str | None:
    """The logical id of the table resource ``table`` names, or None."""
    written = _as_written(table, function)
    tables = config.of_type(TABLE)
    referenced = target(written)
    if referenced in tables:
        return referenced
    for logical, resource in tables.items():
        if written in (logical, mapping(resource.get("Properties")).get("TableName")):
            return logical
    return None


def _key_schema(properties: dict[str, Any]) -> list[tuple[Any, Any, Any]]:
    types = {
        mapping(d).get("AttributeName"): mapping(d).get("AttributeType")
        for d in properties.get("AttributeDefinitions") or []
    }
    return [
        (
            mapping(k).get("AttributeName"),
            mapping(k).get("KeyType"),
            types.get(mapping(k).get("AttributeName")),
        )
        for k in properties.get("KeySchema") or []
    ]


def _schema_findings(function: str, logical: str, properties: dict[str, Any]) -> list[Found]:
    schema = _key_schema(properties)
    if schema == [(name, kind, "S") for name, kind in KEY_SCHEMA]:
        return []
    shown = ", ".join(f"{name} ({kind}, {type_})" for name, kind, type_ in schema) or "none"
    return [
        (
            "error",
            function,
            f"idempotency table {logical} has key schema {shown}: lambda_kit.idempotency needs PK (S, HASH) "
            "and SK (S, RANGE)",
        )
    ]


def _ttl_findings(function: str, logical: str, properties: dict[str, Any]) -> list[Found]:
    ttl = mapping(properties.get("TimeToLiveSpecification"))
    if ttl.get("AttributeName") == "ttl" and ttl.get("Enabled") in (True, "true"):
        return []
    return [
        (
            "warning",
            function,
            f"idempotency table {logical} has no TTL on ttl: completed entries are never deleted (they still "
            "expire: the claim reads ttl); add TimeToLiveSpecification: {AttributeName: ttl, Enabled: true}",
        )
    ]


def _provider_statements(provider: dict[str, Any]) -> list[Any]:
    """The statements of the framework's shared role (``provider.iam.role.statements``, or v2's
    ``provider.iamRoleStatements``)."""
    role = mapping(mapping(provider.get("iam")).get("role"))
    return list(role.get("statements") or provider.get("iamRoleStatements") or [])


def _statements(function: FunctionConfig, config: ServiceConfig) -> list[Any] | None:
    """The IAM statements of the function's role; None for a role check cannot see (an ARN)."""
    role = function.setting("role")
    if role is None:
        return _provider_statements(config.provider)
    logical = role if isinstance(role, str) else target(role)
    resource = config.resources.get(logical) if isinstance(logical, str) else None
    if not resource or resource.get("Type") != "AWS::IAM::Role":
        return None
    policies = mapping(resource.get("Properties")).get("Policies") or []
    return [
        statement
        for policy in policies
        for statement in mapping(mapping(policy).get("PolicyDocument")).get("Statement") or []
    ]


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _names_table(resource: Any, logical: str, table_name: Any) -> bool:
    """Whether an IAM ``Resource`` covers the table (its ARN by ``GetAtt``, a ``Sub``, or a pattern)."""
    if resource == "*":
        return True
    if isinstance(resource, dict):
        if "Fn::GetAtt" in resource:
            return target(resource) == logical and _attribute(resource["Fn::GetAtt"]) == "Arn"
        text = resource.get("Fn::Sub")
        text = text[0] if isinstance(text, list) and text else text
        return isinstance(text, str) and (f"${{{logical}.Arn}}" in text or _arn_matches(text, table_name))
    return isinstance(resource, str) and _arn_matches(resource, table_name)


def _attribute(argument: Any) -> Any:
    return (
        argument[1] if isinstance(argument, list) and len(argument) == 2 else str(argument).partition(".")[2]
    )


def _arn_matches(arn: str, table_name: Any) -> bool:
    found = re.search(r":table/([^/]+)$", arn)
    return (
        found is not None and isinstance(table_name, str) and fnmatch.fnmatchcase(table_name, found.group(1))
    )


def _granted(statements: list[Any], action: str, logical: str, table_name: Any) -> bool:
    for statement in map(mapping, statements):
        if statement.get("Effect") != "Allow":
            continue
        actions = [a for a in _listed(statement.get("Action")) if isinstance(a, str)]
        if any(fnmatch.fnmatch(action.lower(), a.lower()) for a in actions) and any(
            _names_table(resource, logical, table_name) for resource in _listed(statement.get("Resource"))
        ):
            return True
    return False


def _role_findings(function: FunctionConfig, config: ServiceConfig, logical: str) -> list[Found]:
    statements = _statements(function, config)
    if statements is None:
        return []
    table_name = mapping(config.resources[logical].get("Properties")).get("TableName")
    missing = [action for action in NEEDED if not _granted(statements, action, logical, table_name)]
    if not missing:
        return []
    return [
        (
            "error",
            function.key,
            f"its role does not grant {' and '.join(missing)} on idempotency table {logical}: "
            "lambda_kit.idempotency claims and completes with PutItem and releases a failed call's claim "
            "with DeleteItem",
        )
    ]


def _commit_findings(function: FunctionConfig, module: Any) -> list[Found]:
    handler = getattr(module, function.attribute, None)
    mark, marks = getattr(handler, MARK, None), getattr(handler, "__lambda_kit__", None)
    if not (isinstance(mark, dict) and mark.get("at_commit") and isinstance(marks, dict)):
        return []
    if marks.get("commit"):
        return []
    return [
        (
            "error",
            function.key,
            f"@idempotent(at_commit=True) under @{marks.get('decorator')} without commit=: its calls' writes "
            "wait for the batch's commit, which never runs; give it commit=complete_batch",
        )
    ]


def findings(function: FunctionConfig, config: ServiceConfig, module: Any) -> list[Found]:
    """What is wrong with the idempotency tables ``function``'s handler module uses."""
    found: list[Found] = _commit_findings(function, module)
    for table in tables_used(module):
        logical = table_resource(table, function, config)
        if logical is None:
            written = _as_written(table, function)
            found.append(
                (
                    "warning",
                    function.key,
                    f"idempotency table {written!r} is not among serverless.yml's resources: its key schema, "
                    "TTL and the role's permissions are not checked",
                )
            )
            continue
        properties = mapping(config.resources[logical].get("Properties"))
        found += _schema_findings(function.key, logical, properties)
        found += _ttl_findings(function.key, logical, properties)
        found += _role_findings(function, config, logical)
    return found
