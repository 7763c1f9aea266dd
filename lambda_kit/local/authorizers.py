"""Lambda authorizers in front of the local HTTP API's routes, as API Gateway runs them.

A route whose ``http`` or ``httpApi`` event names an authorizer function of the service
(``named_authorizers``) gets an ``Authorizer``: before the route's function runs, it reads the
identity sources from the request (one missing: 401, the authorizer is not called), calls the
authorizer function with the event of its shape (REST ``TOKEN`` or ``REQUEST``, HTTP API payload 1.0
or 2.0), and reads its answer as API Gateway does: the error ``Unauthorized`` is a 401, a simple
response's ``isAuthorized: false`` or a policy whose statements deny (or do not allow) the request's
ARN a 403, any other error or a malformed answer a 500; an allow runs the route with the answer's
context in ``requestContext.authorizer``. Answers are cached by identity source for the
authorizer's ``resultTtlInSeconds`` (REST: 300 unless set; HTTP API: only when set), and a cached
policy is matched against each request's own ARN, as API Gateway matches it.
"""

from __future__ import annotations

import json
import re
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

from .._data import mapping
from .config import EventSource, FunctionConfig, ServiceConfig
from .gateway import Request, Response, http_api_event, rest_api_event
from .runtime import FunctionRuntime

ACCOUNT = "123456789012"
REST_TTL = 300  # the framework's default resultTtlInSeconds for an http event's authorizer
NOT_FUNCTIONS = ("aws_iam", "AWS_IAM")
UNAUTHORIZED: Response = (401, [("Content-Type", "application/json")], b'{"message":"Unauthorized"}')
SERVER_ERROR: Response = (500, [("Content-Type", "application/json")], b'{"message":"Internal Server Error"}')


def _forbidden(message: str) -> Response:
    return 403, [("Content-Type", "application/json")], json.dumps({"message": message}).encode()


def named_authorizers(
    config: ServiceConfig,
) -> Iterator[tuple[FunctionConfig, EventSource, str, dict[str, Any]]]:
    """(the route's function, its event, the authorizer function's key or name, the authorizer's
    settings) for each ``http``, ``httpApi`` or ``websocket`` event that names a Lambda authorizer
    of this service (not one by ARN, not IAM, not a JWT authorizer)."""
    declared = mapping(mapping(config.provider.get("httpApi")).get("authorizers"))
    for function in config.functions.values():
        for event in function.events:
            named = event.spec.get("authorizer") if event.kind in ("http", "httpApi", "websocket") else None
            if named is None:
                continue
            settings = dict(mapping(named)) if isinstance(named, dict) else {"name": named}
            if event.kind == "httpApi":
                settings = dict(mapping(declared.get(settings.get("name"))))
                if str(settings.get("type", "")).lower() != "request":
                    continue  # a JWT authorizer, or one of another API: no function of ours
                name = settings.get("functionName")
            else:
                name = settings.get("name")
            if isinstance(name, str) and not name.startswith("arn:") and name not in NOT_FUNCTIONS:
                yield function, event, name, settings


def authorizer_for(
    config: ServiceConfig, runtimes: dict[str, FunctionRuntime], event: EventSource
) -> Authorizer | None:
    """The authorizer in front of the routes of ``event``, when it names one the stack runs: one
    per authorizer function and its settings, shared by every route that names it (its cache is)."""
    for _, named_event, name, settings in named_authorizers(config):
        runtime = runtimes.get(name) or next((r for r in runtimes.values() if r.function.name == name), None)
        if named_event is event and runtime is not None:
            key = (id(config), name, event.kind, json.dumps(settings, sort_keys=True, default=str))
            found = _shared.get(key)
            if found is None:
                found = _shared[key] = Authorizer(runtime, event.kind, settings, config.region)
            return found
    return None


_shared: weakref.WeakValueDictionary[tuple[int, str, str, str], Authorizer] = weakref.WeakValueDictionary()
"""A service's ``Authorizer``s by function, event kind and settings, while its routes hold them (an
id of a config no route holds any more is never looked up again)."""


class Authorizer:
    """One authorizer function in front of routes (the module's docstring says what it does)."""

    def __init__(self, runtime: FunctionRuntime, kind: str, settings: dict[str, Any], region: str) -> None:
        self.runtime = runtime
        self.region = region
        version = str(settings.get("payloadVersion", "2.0"))
        token = str(settings.get("type", "token")).lower() != "request"
        if kind == "httpApi":
            self.shape = "http-1.0" if version == "1.0" else "http-2.0"
        else:
            self.shape = "rest-token" if token else "rest-request"
        self.simple = self.shape == "http-2.0" and settings.get("enableSimpleResponses") is True
        self.sources = _identity_sources(settings.get("identitySource"), kind)
        ttl = settings.get("resultTtlInSeconds", REST_TTL if kind == "http" else 0)
        self.ttl = ttl if isinstance(ttl, int) and not isinstance(ttl, bool) else 0
        self.cache: dict[tuple[str, ...], tuple[float, Any]] = {}
        self.lock = threading.Lock()

    def admit(self, request: Request, event: dict[str, Any]) -> Response | None:
        """None when the request may go on (``event`` then carries the authorizer's context), else
        the response API Gateway gives instead."""
        identity = [_identity_value(source, request) for source in self.sources]
        if any(value is None for value in identity):
            return UNAUTHORIZED
        key = tuple(str(value) for value in identity)
        answer = self.cached(key)
        if answer is None:
            result = self.runtime.invoke(self.event(request, key), source="authorizer")
            if result.error is not None:
                return UNAUTHORIZED if str(result.error) == "Unauthorized" else SERVER_ERROR
            answer = result.response
            if self.ttl and key:
                with self.lock:
                    self.cache[key] = (time.monotonic() + self.ttl, answer)
        return self.decide(answer, self.arn(request), event)

    def cached(self, key: tuple[str, ...]) -> Any:
        with self.lock:
            found = self.cache.get(key)
        return found[1] if found is not None and found[0] > time.monotonic() else None

    def arn(self, request: Request) -> str:
        api, stage = ("local", "local") if self.shape.startswith("rest") else ("local", request.stage)
        return f"arn:aws:execute-api:{self.region}:{ACCOUNT}:{api}/{stage}/{request.method}{request.path}"

    def event(self, request: Request, identity: tuple[str, ...]) -> dict[str, Any]:
        """The authorizer's event, of its shape, for ``request``."""
        arn = self.arn(request)
        if self.shape == "rest-token":
            return {"type": "TOKEN", "authorizationToken": identity[0] if identity else "", "methodArn": arn}
        if self.shape == "http-2.0":
            built = {
                key: value
                for key, value in http_api_event(request).items()
                if key not in ("body", "isBase64Encoded")
            }
            return {**built, "type": "REQUEST", "routeArn": arn, "identitySource": list(identity)}
        built = {
            key: value
            for key, value in rest_api_event(request).items()
            if key not in ("body", "isBase64Encoded")
        }
        event = {"type": "REQUEST", "methodArn": arn, **built}
        if self.shape == "http-1.0":
            event.update(
                version="1.0", identitySource=",".join(identity), authorizationToken=",".join(identity)
            )
        return event

    def decide(self, answer: Any, arn: str, event: dict[str, Any]) -> Response | None:
        """The answer read as API Gateway reads it, for the request of ``arn``."""
        found = mapping(answer)
        context = mapping(found.get("context"))
        if self.simple:
            allowed = found.get("isAuthorized")
            if type(allowed) is not bool:
                return SERVER_ERROR
            return self.stamp(event, None, context) if allowed else _forbidden("Forbidden")
        statements = mapping(found.get("policyDocument")).get("Statement")
        if not isinstance(found.get("principalId"), str) or not isinstance(statements, list):
            return SERVER_ERROR
        effects = {mapping(s).get("Effect") for s in statements if _covers(mapping(s), arn)}
        if "Deny" in effects:
            return _forbidden("User is not authorized to access this resource with an explicit deny")
        if "Allow" not in effects:
            return _forbidden("User is not authorized to access this resource")
        return self.stamp(event, found["principalId"], context)

    def stamp(self, event: dict[str, Any], principal: str | None, context: Any) -> None:
        """The route's event carries the authorizer's context, where its payload format puts it."""
        if self.shape == "http-2.0" or "version" in event:
            event["requestContext"]["authorizer"] = {"lambda": dict(context)}
        else:
            event["requestContext"]["authorizer"] = {"principalId": principal, **context}
        return None


def _identity_sources(value: Any, kind: str) -> list[str]:
    """The identity sources: ``method.request.header.Authorization`` (an http event's default) or
    ``$request.header.X`` / ``$request.querystring.x`` forms, as lower-cased ``header.x`` or
    ``querystring.x``."""
    if value is None:
        value = "method.request.header.Authorization" if kind == "http" else []
    found = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else []
    sources = []
    for source in found:
        text = str(source).strip().removeprefix("method.request.").removeprefix("$request.")
        sources.append(text.lower() if text.startswith("header.") else text)
    return sources


def _identity_value(source: str, request: Request) -> str | None:
    where, _, name = source.partition(".")
    if where == "header":
        return next((value for header, value in request.headers if header.lower() == name), None)
    if where == "querystring":
        pairs = [pair.partition("=") for pair in request.query.split("&") if pair]
        return next((value for key, _, value in pairs if key == name), None)
    return ""  # a context or stage variable source: present


def _covers(statement: dict[str, Any], arn: str) -> bool:
    """Whether a policy statement is about invoking ``arn`` (IAM's ``*`` and ``?`` wildcards)."""
    actions = statement.get("Action")
    resources = statement.get("Resource")
    actions = actions if isinstance(actions, list) else [actions]
    resources = resources if isinstance(resources, list) else [resources]
    acts = any(isinstance(a, str) and _glob(a.lower(), "execute-api:invoke") for a in actions)
    return acts and any(isinstance(r, str) and _glob(r, arn) for r in resources)


def _glob(pattern: str, text: str) -> bool:
    regex = "".join(".*" if char == "*" else "." if char == "?" else re.escape(char) for char in pattern)
    return re.fullmatch(regex, text) is not None
