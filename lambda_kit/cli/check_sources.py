"""What ``lambda-kit check`` checks of the functions no event of their own feeds: the Lambda
authorizers that ``http``, ``httpApi`` and ``websocket`` events name, and the functions Firehose
delivery streams transform records with (S3 Batch Operations jobs are made outside
``serverless.yml``: nothing to check there).

- An authorizer (``authorizer:`` on an ``http`` event, a ``request`` authorizer of
  ``provider.httpApi.authorizers`` named by an ``httpApi`` event, ``authorizer:`` on a ``websocket``
  ``$connect`` route) must be a function of the service whose handler is an ``authorizer_handler``;
  an HTTP API authorizer's ``enableSimpleResponses`` must match its ``simple_responses``; a
  WebSocket authorizer goes on ``$connect`` only.
- A Lambda processor of an ``AWS::KinesisFirehose::DeliveryStream`` (its
  ``ProcessingConfiguration``, ``Type: Lambda``, ``LambdaArn``) must be a ``firehose_handler``.
- An ``authorizer_handler`` or ``firehose_handler`` nothing names is a warning: API Gateway or
  Firehose never calls it (unless another service does, by ARN).

Findings are ``(level, subject, message)``; ``check`` makes them its ``Finding``s.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .._data import mapping
from ..local.authorizers import named_authorizers
from ..local.config import EventSource, FunctionConfig, ServiceConfig
from ..local.intrinsics import target

Found = tuple[str, str, str]
DELIVERY_STREAM = "AWS::KinesisFirehose::DeliveryStream"
FUNCTION_SUFFIX = "LambdaFunction"


def wiring_findings(config: ServiceConfig, marks: dict[str, dict[str, Any]]) -> list[Found]:
    """The findings of the service's authorizers and Firehose processors; ``marks`` is each
    imported function's ``__lambda_kit__`` (``{}``: not a lambda_kit decorator)."""
    named_by = list(named_authorizers(config))
    processors = list(_processors(config))
    found = [problem for wiring in named_by for problem in _authorizer_problems(config, marks, *wiring)]
    found += [problem for wiring in processors for problem in _processor_problems(config, marks, *wiring)]
    named = {_function_key(config, name) for _, _, name, _ in named_by} | {key for _, key in processors}
    for key, fn_marks in marks.items():
        decorator = fn_marks.get("decorator")
        if decorator in UNNAMED and key not in named:
            found.append(("warning", key, UNNAMED[decorator].format(decorator=decorator)))
    return found


UNNAMED = {
    "authorizer_handler": (
        "handler is an {decorator}, but no http, httpApi or websocket event of this service names it as its "
        "authorizer: API Gateway never calls it (unless another service's API does, by ARN)"
    ),
    "firehose_handler": (
        "handler is a {decorator}, but no Firehose delivery stream of this service transforms with it "
        "(ProcessingConfiguration, Type: Lambda): Firehose never calls it (unless one elsewhere does, by ARN)"
    ),
}


# --- authorizers ------------------------------------------------------------------------------------


def _authorizer_problems(
    config: ServiceConfig,
    marks: dict[str, dict[str, Any]],
    function: FunctionConfig,
    event: EventSource,
    name: str,
    settings: dict[str, Any],
) -> Iterator[Found]:
    where = f"its {event.kind} event"
    if event.kind == "websocket" and event.spec.get("route") != "$connect":
        yield (
            "error",
            function.key,
            f"{where} (route {event.spec.get('route')!r}) has an authorizer: API Gateway runs a WebSocket "
            "API's authorizer on $connect only; move it to the $connect route",
        )
    key = _function_key(config, name)
    if key is None:
        yield (
            "error",
            function.key,
            f"{where} names the authorizer {name!r}, which is no function of this service: declare it under "
            "functions, or give its arn",
        )
        return
    decorator = marks.get(key, {}).get("decorator")
    if decorator not in (None, "authorizer_handler"):
        yield (
            "error",
            key,
            f"it is the authorizer of {function.key}'s {event.kind} event, but its handler is a {decorator}: "
            "use authorizer_handler",
        )
    if event.kind == "httpApi" and decorator == "authorizer_handler":
        yield from _simple_problems(key, settings, marks[key].get("simple_responses") is True)


def _simple_problems(key: str, settings: dict[str, Any], simple: bool) -> Iterator[Found]:
    declared = settings.get("enableSimpleResponses") is True
    if declared and not simple:
        yield (
            "error",
            key,
            "its HTTP API authorizer has enableSimpleResponses: true, but the handler answers with IAM "
            "policies, which API Gateway then refuses (every request fails): use "
            "authorizer_handler(simple_responses=True)",
        )
    elif simple and not declared:
        yield (
            "error",
            key,
            "the handler is authorizer_handler(simple_responses=True), but its HTTP API authorizer answers "
            "must be IAM policies (no enableSimpleResponses: true): every request would fail; set "
            "enableSimpleResponses: true or drop simple_responses",
        )
    if simple and str(settings.get("payloadVersion", "2.0")) != "2.0":
        yield ("error", key, "simple responses need payloadVersion '2.0' on its HTTP API authorizer")


# --- Firehose processors ----------------------------------------------------------------------------


def _processors(config: ServiceConfig) -> Iterator[tuple[str, str]]:
    """(the delivery stream's logical id, the function's key) for each Lambda processor of a
    delivery stream of the service that names one of its functions."""
    for stream, resource in config.of_type(DELIVERY_STREAM).items():
        for processor in _lambda_processors(resource.get("Properties")):
            parameters = processor.get("Parameters") if isinstance(processor.get("Parameters"), list) else []
            for parameter in map(mapping, parameters):
                if parameter.get("ParameterName") == "LambdaArn":
                    key = _function_key(config, parameter.get("ParameterValue"))
                    if key is not None:
                        yield stream, key


def _lambda_processors(value: Any) -> Iterator[dict[str, Any]]:
    """The enabled ``Type: Lambda`` processors of every ``ProcessingConfiguration`` in ``value``."""
    if isinstance(value, list):
        for item in value:
            yield from _lambda_processors(item)
    if not isinstance(value, dict):
        return
    for name, item in value.items():
        if name == "ProcessingConfiguration" and mapping(item).get("Enabled", True) is not False:
            processors = mapping(item).get("Processors")
            yield from (p for p in processors or [] if mapping(p).get("Type") == "Lambda")
        else:
            yield from _lambda_processors(item)


def _processor_problems(
    config: ServiceConfig, marks: dict[str, dict[str, Any]], stream: str, key: str
) -> Iterator[Found]:
    decorator = marks.get(key, {}).get("decorator")
    if decorator not in (None, "firehose_handler"):
        yield (
            "error",
            key,
            f"the delivery stream {stream} transforms its records with it, but its handler is a {decorator}: "
            "use firehose_handler (Firehose needs every record back, with its recordId and result)",
        )


def _function_key(config: ServiceConfig, value: Any) -> str | None:
    """The key of the function ``value`` names: its key, its deployed name or ARN, its logical id
    (``!GetAtt AuthLambdaFunction.Arn``, ``!Ref``); None when it names none of the service's."""
    logical = target(value) if isinstance(value, dict) else None
    text = logical or (value if isinstance(value, str) else "")
    name = text.rpartition(":function:")[2].partition(":")[0] if ":function:" in text else text
    for key, function in config.functions.items():
        stem = key.lower().replace("-", "dash").replace("_", "underscore")
        if name in (key, function.name) or name.lower() == stem + FUNCTION_SUFFIX.lower():
            return key
    return None
