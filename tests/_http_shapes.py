"""Reading an ``api_handler`` response the way each HTTP front door does, for the API tests.

Each shape has one documented response: ``v1`` (API Gateway payload 1.0) ``headers`` plus
``multiValueHeaders`` for repeated names; ``v2``/``url`` ``headers`` plus a ``cookies`` list; ``alb``
``statusDescription`` and either ``multiValueHeaders`` (the target group has multi-value headers on)
or ``headers``. These helpers check that and give back the headers the client would see.
"""

from __future__ import annotations

import base64
import json
from typing import Any

KEYS = {
    "v1": {"statusCode", "headers", "body", "isBase64Encoded"},
    "v2": {"statusCode", "headers", "body", "isBase64Encoded"},
    "url": {"statusCode", "headers", "body", "isBase64Encoded"},
    "alb": {"statusCode", "statusDescription", "headers", "body", "isBase64Encoded"},
    "alb-multi": {"statusCode", "statusDescription", "multiValueHeaders", "body", "isBase64Encoded"},
}
OPTIONAL = {
    "v1": {"multiValueHeaders"},
    "v2": {"cookies"},
    "url": {"cookies"},
    "alb": set(),
    "alb-multi": set(),
}


def kind_of(event: dict[str, Any]) -> str:
    """The response shape an event asks for, read from the event as AWS documents it."""
    context = event["requestContext"]
    if isinstance(event.get("httpMethod"), str):  # payload format 1.0 and ALB
        if "elb" not in context:
            return "v1"
        return "alb-multi" if isinstance(event.get("multiValueHeaders"), dict) else "alb"
    domain = context.get("domainName")  # payload format 2.0: HTTP API or Function URL
    return "url" if isinstance(domain, str) and ".lambda-url." in domain else "v2"


def sent_headers(response: dict[str, Any], kind: str) -> list[tuple[str, str]]:
    """(name, value) of every header the client receives; asserts the response is ``kind``'s."""
    keys = set(response)
    assert KEYS[kind] <= keys <= KEYS[kind] | OPTIONAL[kind], (kind, sorted(keys))
    status = response["statusCode"]
    assert type(status) is int and 100 <= status <= 599
    assert type(response["isBase64Encoded"]) is bool and isinstance(response["body"], str)
    if kind.startswith("alb"):
        code, _, phrase = response["statusDescription"].partition(" ")
        assert code == str(status) and phrase, response["statusDescription"]
    pairs: list[tuple[str, str]] = []
    for name, value in (response.get("headers") or {}).items():
        assert isinstance(name, str) and isinstance(value, str), (name, value)
        pairs.append((name, value))
    for name, values in (response.get("multiValueHeaders") or {}).items():
        assert isinstance(values, list) and all(isinstance(v, str) for v in values), (name, values)
        pairs.extend((name, value) for value in values)
    for cookie in response.get("cookies") or []:
        assert isinstance(cookie, str)
        pairs.append(("Set-Cookie", cookie))
    return pairs


def header_values(response: dict[str, Any], kind: str, name: str) -> list[str]:
    return [value for key, value in sent_headers(response, kind) if key.lower() == name.lower()]


def body_bytes(response: dict[str, Any]) -> bytes:
    body = response["body"]
    return base64.b64decode(body) if response["isBase64Encoded"] else body.encode()


def json_body(response: dict[str, Any]) -> Any:
    return json.loads(body_bytes(response))
