"""The source registry: every event source lambda_kit knows, one module each.

Decorators, ``lambda-kit check`` and ``invoke``, the testing factories and the local stack read
this registry; adding a source is one module here (a ``Source`` subclass named ``SOURCE``) plus
its tests and its factory in ``lambda_kit.testing``. Modules are imported only when asked for, so
a decorator loads just its own adapter (cold start). Adapters never import each other.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from .base import Source, as_text

NAMES: tuple[str, ...] = (
    "sqs",
    "sns",
    "kinesis",
    "dynamodb",
    "api",
    "kafka",
    "eventbridge",
    "s3",
    "cloudwatch_logs",
    "authorizer",
    "websocket",
    "firehose",
    "s3_batch",
)
"""Every registered source, by name; each is the module ``lambda_kit.sources.<name>``."""


def get(name: str) -> type[Source]:
    """The adapter class of source ``name``."""
    if name not in NAMES:
        raise KeyError(f"unknown event source {name!r}; known: {', '.join(NAMES)}")
    adapter: type[Source] = importlib.import_module(f"{__name__}.{name}").SOURCE
    return adapter


def all_sources() -> list[type[Source]]:
    return [get(name) for name in NAMES]


def for_serverless_event(key: str) -> list[type[Source]]:
    """The sources a ``serverless.yml`` event key (``sqs``, ``stream``, ``httpApi`` ...) delivers."""
    return [source for source in all_sources() if key in source.serverless_events]


def delivered_by(key: str, spec: Mapping[str, Any], resource_type: str = "") -> list[type[Source]]:
    """The sources a ``serverless.yml`` event delivers: those of its key, and where the key is
    shared (a ``stream``: Kinesis or DynamoDB) the one the event declares, by its ``type``, the
    service its ARN names, or the CloudFormation type of the resource it references
    (``resource_type``); all of the key's when nothing tells."""
    found = for_serverless_event(key)
    arn = spec.get("arn")
    arn = arn if isinstance(arn, str) else ""
    tests: list[Callable[[type[Source]], bool]] = [
        lambda source: spec.get("type") == source.name,
        lambda source: f":{source.arn_service}:" in arn,
        lambda source: resource_type in source.resource_types,
    ]
    for test in tests if len(found) > 1 else []:
        narrowed = [source for source in found if test(source)]
        if narrowed:
            return narrowed
    return found


def carried_by(key: str) -> list[type[Source]]:
    """The sources whose events can arrive inside the events a ``serverless.yml`` event key
    delivers (S3 notifications in the messages of an ``sqs`` event)."""
    return [source for source in all_sources() if key in source.carried_by]


def describe(event: object) -> tuple[str, str | None]:
    """(what ``event`` looks like, the decorator that processes it, if any): for error lines.
    A source carried inside another's events is asked first: it is the more specific."""
    for source in sorted(all_sources(), key=lambda source: not source.carried_by):
        try:
            if source.recognizes(event):
                return source.label_of(event), source.decorator
        except Exception:  # a recognizer must not turn a refusal into a crash
            continue
    return shape_of(event), None


def shape_of(event: object) -> str:
    """A short description of an event no source recognizes."""
    if isinstance(event, dict):
        return _records_shape(event["Records"]) if "Records" in event else _object_shape(event)
    if isinstance(event, list):
        return "a top-level list, as EventBridge Pipes sends" if event else "an empty top-level list"
    return "an empty event (null)" if event is None else f"a {type(event).__name__}, not a JSON object"


def _records_shape(records: Any) -> str:
    if not isinstance(records, list):
        return "an event whose Records is not a list"
    kinds = sorted(
        {as_text(r.get("eventSource") or r.get("EventSource"))[:64] for r in records if isinstance(r, dict)}
        - {"None"}
    )
    if len(kinds) > 1:
        return f"an event mixing records of {', '.join(kinds)}"
    return f"an event with {kinds[0]} records" if kinds else "an event whose Records no source recognizes"


def _object_shape(event: dict[Any, Any]) -> str:
    keys = sorted(as_text(key)[:40] for key in event)
    if not keys:
        return "an empty JSON object"
    return "a JSON object with keys " + ", ".join(keys[:8]) + (", ..." if len(keys) > 8 else "")
