"""What an authorizer function returns, as the answer API Gateway reads, and the deny every
failure gets instead.

The function returns a decision:

- ``Allow(principal_id, context=..., resources=..., usage_identifier_key=...)`` or ``True``: the
  request goes through (``resources``: the ARNs the policy allows, by default the request's own);
- ``Deny(...)`` or ``False``: API Gateway answers 403;
- a dict: the answer as API Gateway documents it, an IAM policy (``principalId``,
  ``policyDocument``, ``context``, ``usageIdentifierKey``) or, for an HTTP API authorizer with
  simple responses, ``{"isAuthorized": ..., "context": ...}``; it is checked, never trusted;

or raises ``Unauthorized`` (a REST or WebSocket API answers 401). Anything else — another value,
``None``, a policy or simple response of the wrong form (an ``Effect`` other than ``Allow`` and
``Deny``, a simple response where a policy is due, a ``context`` value that is not a string, a
number or a boolean) or any other exception — is a failure, and a failure is a deny: a REST or
WebSocket API gets the error ``Unauthorized`` (401), an HTTP API a deny (403). Never an allow,
and never the exception's text or traceback (those go to the ERROR line).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .request import AuthorizerRequest

POLICY_VERSION = "2012-10-17"
INVOKE = "execute-api:Invoke"
EFFECTS = ("Allow", "Deny")
POLICY_KEYS = frozenset({"principalId", "policyDocument", "context", "usageIdentifierKey"})
SIMPLE_KEYS = frozenset({"isAuthorized", "context"})
RAISES_UNAUTHORIZED = ("rest-token", "rest-request", "websocket")
"""The shapes whose API answers 401 to the error ``Unauthorized``: a failure raises it."""


class Unauthorized(Exception):
    """Raise in an ``authorizer_handler`` function to refuse the request as unauthenticated: a REST
    or WebSocket API answers 401 (the Lambda error ``Unauthorized``); an HTTP API, which has no
    such answer, 403. The message stays in the log line; API Gateway only ever sees
    ``Unauthorized``."""

    def __init__(self, message: str = "Unauthorized") -> None:
        super().__init__(message)


class MalformedAnswer(TypeError):
    """The function's answer is not one API Gateway can read (the request is denied)."""


class Decision:
    """``Allow`` and ``Deny``: what an authorizer function decides, written as its API's answer."""

    allow = False

    def __init__(
        self,
        principal_id: str = "user",
        *,
        context: dict[str, Any] | None = None,
        resources: Sequence[str] | None = None,
        usage_identifier_key: str | None = None,
    ) -> None:
        self.principal_id = principal_id
        self.context = context
        self.resources = resources
        self.usage_identifier_key = usage_identifier_key

    def __repr__(self) -> str:
        return f"{type(self).__name__}(principal_id={self.principal_id!r})"


class Allow(Decision):
    """Let the request through: ``principal_id`` names the caller (``$context.authorizer.principalId``),
    ``context`` (strings, numbers and booleans only) reaches the integration as
    ``requestContext.authorizer``; ``resources`` are the ARNs allowed (default: the request's
    ``arn``; with caching on, API Gateway reuses the policy for the caller's other routes, so allow
    those too: ``request.arn_for()``)."""

    allow = True


class Deny(Decision):
    """Refuse the request: API Gateway answers 403."""


def answer(request: AuthorizerRequest, result: Any, simple: bool) -> dict[str, Any]:
    """The answer to give API Gateway for what the function returned; ``MalformedAnswer`` naming
    the problem when it cannot be one. ``simple``: an HTTP API 2.0 authorizer with simple
    responses on (``enableSimpleResponses``)."""
    simple = simple and request.shape == "http-2.0"
    if result is True or result is False:
        result = Allow() if result else Deny()
    if isinstance(result, Decision):
        return _decided(request, result, simple)
    if type(result) is dict:
        return _checked_simple(result) if simple else _checked_policy(result)
    raise MalformedAnswer(
        f"the authorizer returned {type(result).__name__}: return Allow(...), Deny(...), True, False "
        f"or {'a simple response' if simple else 'an IAM policy'} dict"
    )


def denial(shape: str, arn: str, simple: bool) -> dict[str, Any]:
    """The deny a failure gets where no error is raised (an HTTP API): 403."""
    if simple and shape == "http-2.0":
        return {"isAuthorized": False}
    return policy("deny", "Deny", [arn])


def raises_unauthorized(shape: str) -> bool:
    return shape in RAISES_UNAUTHORIZED


def decision_of(found: dict[str, Any]) -> str:
    """``"allow"`` or ``"deny"``: what a checked answer says, for its log line (an IAM policy with
    an ``Allow`` statement allows what it names)."""
    if "isAuthorized" in found:
        return "allow" if found["isAuthorized"] else "deny"
    statements = found["policyDocument"]["Statement"]
    return "allow" if any(statement["Effect"] == "Allow" for statement in statements) else "deny"


def policy(principal_id: str, effect: str, resources: list[str]) -> dict[str, Any]:
    return {
        "principalId": principal_id,
        "policyDocument": {
            "Version": POLICY_VERSION,
            "Statement": [{"Action": INVOKE, "Effect": effect, "Resource": resources}],
        },
    }


def _decided(request: AuthorizerRequest, decision: Decision, simple: bool) -> dict[str, Any]:
    context = decision.context
    if context is not None:
        _check_context(context)
    if simple:
        return {"isAuthorized": decision.allow, **({"context": context} if context else {})}
    if not isinstance(decision.principal_id, str) or not decision.principal_id:
        raise MalformedAnswer(f"principal_id must be non-empty text, not {decision.principal_id!r}")
    resources = [request.arn] if decision.resources is None else _resources(decision.resources)
    found = policy(decision.principal_id, "Allow" if decision.allow else "Deny", resources)
    if context:
        found["context"] = context
    key = decision.usage_identifier_key
    if key is not None:
        if not isinstance(key, str):
            raise MalformedAnswer(f"usage_identifier_key must be text, not {type(key).__name__}")
        found["usageIdentifierKey"] = key
    return found


def _resources(resources: Any) -> list[str]:
    if isinstance(resources, str) or not isinstance(resources, Sequence):
        raise MalformedAnswer(f"resources must be a list of ARNs, not {type(resources).__name__}")
    found = list(resources)
    if not found or not all(isinstance(arn, str) and arn for arn in found):
        raise MalformedAnswer("resources must be a non-empty list of ARNs (text)")
    return found


def _check_context(context: object) -> None:
    """API Gateway takes a context of string keys and string, number or boolean values only: an
    object, a list or null as a value makes it answer 500."""
    if type(context) is not dict:
        raise MalformedAnswer(f"context must be an object, not {type(context).__name__}")
    for key, value in context.items():
        if not isinstance(key, str):
            raise MalformedAnswer(f"context keys must be text, not {type(key).__name__}")
        if not _flat(value):
            raise MalformedAnswer(
                f"context[{key[:64]!r}] is {type(value).__name__}: API Gateway takes only strings, "
                "numbers and booleans (put structured values in a JSON string)"
            )


def _flat(value: Any) -> bool:
    if isinstance(value, bool | str | int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def _checked_simple(found: dict[str, Any]) -> dict[str, Any]:
    if "policyDocument" in found or "principalId" in found:
        raise MalformedAnswer(
            "the authorizer returned an IAM policy, but simple responses are on (simple_responses=True): "
            'return {"isAuthorized": ...} (or Allow/Deny)'
        )
    _check_keys(found, SIMPLE_KEYS, "a simple response")
    if type(found.get("isAuthorized")) is not bool:
        raise MalformedAnswer("a simple response needs isAuthorized, true or false")
    if "context" in found:
        _check_context(found["context"])
    return found


def _checked_policy(found: dict[str, Any]) -> dict[str, Any]:
    if "isAuthorized" in found:
        raise MalformedAnswer(
            'the authorizer returned a simple response ({"isAuthorized": ...}), but this authorizer '
            "answers with an IAM policy: return Allow/Deny (or a policy), or turn on simple responses "
            "(enableSimpleResponses, and simple_responses=True) on an HTTP API 2.0 authorizer"
        )
    _check_keys(found, POLICY_KEYS, "an IAM policy")
    principal = found.get("principalId")
    if not isinstance(principal, str) or not principal:
        raise MalformedAnswer("an IAM policy needs principalId, non-empty text")
    _check_document(found.get("policyDocument"))
    if "context" in found:
        _check_context(found["context"])
    if "usageIdentifierKey" in found and not isinstance(found["usageIdentifierKey"], str):
        raise MalformedAnswer("usageIdentifierKey must be text")
    return found


def _check_document(document: object) -> None:
    if type(document) is not dict or not isinstance(document.get("Version"), str):
        raise MalformedAnswer("an IAM policy needs policyDocument with Version and Statement")
    statements = document.get("Statement")
    if type(statements) is not list or not statements:
        raise MalformedAnswer("policyDocument.Statement must be a non-empty list of statements")
    for statement in statements:
        _check_statement(statement)


def _check_statement(statement: Any) -> None:
    if type(statement) is not dict:
        raise MalformedAnswer(f"a policy statement must be an object, not {type(statement).__name__}")
    if statement.get("Effect") not in EFFECTS:
        raise MalformedAnswer(
            f"a policy statement's Effect must be Allow or Deny, not {statement.get('Effect')!r:.80}"
        )
    for field in ("Action", "Resource"):
        value = statement.get(field)
        listed = value if type(value) is list else [value]
        if not listed or not all(isinstance(item, str) and item for item in listed):
            raise MalformedAnswer(f"a policy statement's {field} must be text or a non-empty list of text")


def _check_keys(found: dict[str, Any], known: frozenset[str], what: str) -> None:
    unknown = sorted(str(key)[:40] for key in found if key not in known)
    if unknown:
        raise MalformedAnswer(f"{what} has no {', '.join(unknown)} (it has {', '.join(sorted(known))})")
