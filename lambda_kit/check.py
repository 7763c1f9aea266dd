"""``lambda-kit check [serverless.yml]``: the deployment mistakes that lose or repeat work.

Reads ``serverless.yml`` and imports each function's handler module (the project directory is put
first on ``sys.path``; the function's environment variables are set while it imports), then
reports, one line each::

    error: counter: add functionResponseType: ReportBatchItemFailures to its sqs event ...
    warning: ViewsQueue: VisibilityTimeout 30 s is under 6 x the counter timeout ...

What it looks for: a handler path that does not import; a handler that is not a lambda_kit
decorator (warning: its sources cannot be checked); a decorator that cannot process the
function's events; a decorator that reports partial batch failures on an event without
``ReportBatchItemFailures`` (Lambda would ignore the reported failures and treat failed records as
processed); an asynchronously invoked function (SNS, EventBridge, S3) without an on-failure
destination, an SNS event without a redrive policy, an EventBridge event without a dead-letter
queue, with an input transformation the decorator cannot read, or (for an ``s3_handler``) with a
pattern that lets through more than S3 object created/deleted events; an ordered stream event
without an on-failure destination or retry limit; a stream, msk or kafka event starting at
``LATEST`` (an error on a function that counts with ``lambda_kit.counters``); an msk / kafka
event without an on-failure destination, or with a ``kafka_handler(on_failure="report")`` that
Lambda would not read; an SQS queue without a redrive policy that is not itself a dead-letter
queue; a queue whose visibility timeout is shorter than its consumer's timeout allows; an ``alb``
event without ``multiValueHeaders: true`` (repeated query parameters and headers lose all but
their last value); a Function URL (``url:``) streaming its responses, which a Python function
cannot. Tumbling windows: ``tumblingWindowInSeconds`` outside Lambda's 0-900 s, a handler reading
``current_window()`` with no window on its streams, a windowed handler without ``on_window_end``
(warning), ``on_failure='requeue'`` moving records to later windows (warning). CloudWatch Logs
subscriptions: a function subscribed to its own log group (an endless loop), more than 2
subscription filters on a log group, ``stream_handler(json=False)`` on a stream a subscription filter
fills (warning). What each source needs comes from the source registry (``lambda_kit.sources``).
Exit status: 0 clean or
warnings only, 1 errors, 2 no usable serverless.yml.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from . import sources
from .serverless_config import ConfigError, load

__all__ = ["Finding", "check", "main"]

RBIF = "ReportBatchItemFailures"
DEFAULT_TIMEOUT = 6  # the framework's default function timeout, seconds
DEFAULT_VISIBILITY_TIMEOUT = 30  # SQS default, seconds


@dataclass(frozen=True)
class Finding:
    level: str  # "error" | "warning"
    subject: str  # function name or resource logical id
    message: str

    def __str__(self) -> str:
        return f"{self.level}: {self.subject}: {self.message}"


# ------------------------------------------------------------------ reading the config


def _functions(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    functions = config.get("functions") or {}
    if isinstance(functions, list):  # the framework also accepts a list of {name: definition}
        merged: dict[str, Any] = {}
        for part in functions:
            if isinstance(part, dict):
                merged.update(part)
        functions = merged
    if not isinstance(functions, dict):
        return {}
    return {str(name): spec if isinstance(spec, dict) else {} for name, spec in functions.items()}


def _resources(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    blocks = config.get("resources") or {}
    blocks = blocks if isinstance(blocks, list) else [blocks]
    merged: dict[str, dict[str, Any]] = {}
    for block in blocks:
        if isinstance(block, dict) and isinstance(block.get("Resources"), dict):
            for name, resource in block["Resources"].items():
                if isinstance(resource, dict):
                    merged[str(name)] = resource
    return merged


def _extensions(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``resources.extensions``: properties added to resources the framework generates."""
    blocks = config.get("resources") or {}
    blocks = blocks if isinstance(blocks, list) else [blocks]
    merged: dict[str, dict[str, Any]] = {}
    for block in blocks:
        if isinstance(block, dict) and isinstance(block.get("extensions"), dict):
            for name, extension in block["extensions"].items():
                if isinstance(extension, dict):
                    merged[str(name)] = extension
    return merged


def _events(function: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(event type, its settings) per event; a bare ARN becomes ``{"arn": ...}``. A Function URL
    (the function property ``url:``) is an event of type ``url``: it delivers HTTP requests."""
    events = []
    for event in function.get("events") or []:
        if isinstance(event, dict) and len(event) == 1:
            kind, spec = next(iter(event.items()))
            events.append((str(kind), spec if isinstance(spec, dict) else {"arn": spec}))
    url = function.get("url")
    if url:
        events.append(("url", url if isinstance(url, dict) else {}))
    return events


def _target(value: Any) -> str | None:
    """The logical id a Ref / GetAtt / single-reference Sub points at, else None."""
    if isinstance(value, dict) and len(value) == 1:
        (key, arg), = value.items()
        if key == "Ref" and isinstance(arg, str):
            return arg
        if key == "Fn::GetAtt":
            if isinstance(arg, list) and arg and isinstance(arg[0], str):
                return arg[0]
            if isinstance(arg, str):
                return arg.partition(".")[0]
        if key == "Fn::Sub":
            template = arg[0] if isinstance(arg, list) and arg else arg
            if isinstance(template, str):
                names = {m.partition(".")[0] for m in re.findall(r"\$\{([A-Za-z0-9]+(?:\.[A-Za-z]+)?)\}", template)}
                if len(names) == 1:
                    return names.pop()
    return None


def _queue_of(value: Any, queues: dict[str, dict[str, Any]]) -> str | None:
    """The queue (logical id) an ARN-ish value names: a reference or an ARN ending in its name."""
    name = _target(value)
    if name in queues:
        return name
    if isinstance(value, dict) and "arn" in value:
        return _queue_of(value["arn"], queues)
    if isinstance(value, str):
        if value in queues:
            return value
        for logical_id, queue in queues.items():
            queue_name = (queue.get("Properties") or {}).get("QueueName")
            if isinstance(queue_name, str) and (value.endswith(":" + queue_name) or value == queue_name):
                return logical_id
    return None


def _timeout(function: dict[str, Any], provider: dict[str, Any]) -> int | None:
    value = function.get("timeout", provider.get("timeout", DEFAULT_TIMEOUT))
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _stream_type(spec: dict[str, Any], resources: dict[str, dict[str, Any]]) -> str | None:
    if spec.get("type") in ("dynamodb", "kinesis"):
        return spec["type"]
    arn = spec.get("arn")
    if isinstance(arn, str):
        for kind in ("dynamodb", "kinesis"):
            if f":{kind}:" in arn:
                return kind
    resource_type = (resources.get(_target(arn) or "") or {}).get("Type")
    return {"AWS::DynamoDB::Table": "dynamodb", "AWS::Kinesis::Stream": "kinesis"}.get(resource_type)


# ------------------------------------------------------------------ importing handlers


def _string_env(environment: Any) -> dict[str, str]:
    """Environment values as the function would see them; unresolved ones get a placeholder."""
    if not isinstance(environment, dict):
        return {}
    return {
        str(key): value if isinstance(value, str) and "${" not in value else f"lambda-kit-check-{key}"
        for key, value in environment.items()
        if not isinstance(value, (bool, type(None)))
    }


@contextlib.contextmanager
def _importing_from(project_dir: str, environment: dict[str, str], package: str) -> Iterator[None]:
    """Import ``package`` from ``project_dir`` with ``environment`` set; put everything back after."""
    saved_path = list(sys.path)
    saved_env = dict(os.environ)
    shadowed = {name: module for name, module in sys.modules.items() if name == package or name.startswith(package + ".")}
    for name in shadowed:
        del sys.modules[name]
    sys.path.insert(0, project_dir)
    os.environ.update(environment)
    importlib.invalidate_caches()
    try:
        yield
    finally:
        sys.path[:] = saved_path
        os.environ.clear()
        os.environ.update(saved_env)
        for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
            del sys.modules[name]
        sys.modules.update(shadowed)


def _module_tree(module: Any) -> ast.Module | None:
    """The handler module's source, parsed (None when it has no readable ``.py`` file)."""
    path = getattr(module, "__file__", None)
    if not path or not path.endswith(".py"):
        return None
    try:
        with open(path, encoding="utf-8") as file:
            return ast.parse(file.read(), path)
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


def _uses_counters(module: Any) -> bool:
    """Whether the handler module imports ``lambda_kit.counters`` (or holds anything from it)."""
    for value in vars(module).values():
        origin = getattr(value, "__name__", "") if isinstance(value, type(sys)) else getattr(value, "__module__", "")
        if isinstance(origin, str) and origin.startswith("lambda_kit.counters"):
            return True
    tree = _module_tree(module)
    if tree is None:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.startswith("lambda_kit.counters") for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith("lambda_kit.counters"):
                return True
            if node.module == "lambda_kit" and any(a.name == "counters" for a in node.names):
                return True
    return False


def _reads_window(module: Any) -> bool:
    """Whether the handler module uses ``current_window()`` (imported, or ``lambda_kit.current_window``)."""
    for value in vars(module).values():
        if getattr(value, "__module__", None) == "lambda_kit.sources.window" and getattr(value, "__name__", None) == "current_window":
            return True
    tree = _module_tree(module)
    return tree is not None and any(
        isinstance(node, ast.Attribute) and node.attr == "current_window" for node in ast.walk(tree)
    )


@dataclass
class _Handler:
    marks: dict[str, Any] | None = None
    uses_counters: bool = False
    reads_window: bool = False


def _import_handler(
    name: str, function: dict[str, Any], provider: dict[str, Any], project_dir: str, findings: list[Finding]
) -> _Handler | None:
    handler = function.get("handler")
    if not isinstance(handler, str) or "." not in handler:
        findings.append(Finding("error", name, f"handler {handler!r} is not of the form path/to/module.function"))
        return None
    module_path, _, attribute = handler.rpartition(".")
    module_name = module_path.replace("/", ".").replace("\\", ".").strip(".")
    environment = {**_string_env(provider.get("environment")), **_string_env(function.get("environment"))}
    region = provider.get("region")
    region = region if isinstance(region, str) and "${" not in region else "us-east-1"
    environment.setdefault("AWS_REGION", os.environ.get("AWS_REGION", region))
    environment.setdefault("AWS_DEFAULT_REGION", os.environ.get("AWS_DEFAULT_REGION", region))
    with _importing_from(project_dir, environment, module_name.partition(".")[0]):
        try:
            module = importlib.import_module(module_name)
        except BaseException as exc:  # anything the module raises on import is the finding
            if isinstance(exc, KeyboardInterrupt):
                raise
            missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
            if missing and (module_name == missing or module_name.startswith(missing + ".")):
                findings.append(Finding("error", name, f"handler {handler!r} names {module_path}.py, which does not exist: fix the handler path"))
            else:
                reason = f"{type(exc).__name__}: {exc}".strip().splitlines()[0]
                findings.append(Finding("error", name, f"handler module {module_path}.py does not import ({reason}): fix the module"))
            return None
        fn = getattr(module, attribute, None)
        if not callable(fn):
            findings.append(Finding("error", name, f"handler module {module_name} has no function {attribute!r}: fix the handler path {handler!r}"))
            return None
        marks = getattr(fn, "__lambda_kit__", None)
        return _Handler(marks if isinstance(marks, dict) else None, _uses_counters(module), _reads_window(module))


# ------------------------------------------------------------------ the checks


def _check_function(
    name: str,
    function: dict[str, Any],
    handler: _Handler | None,
    resources: dict[str, dict[str, Any]],
    queues: dict[str, dict[str, Any]],
    provider: dict[str, Any],
    findings: list[Finding],
    extensions: dict[str, dict[str, Any]] | None = None,
) -> None:
    events = _events(function)
    marks = handler.marks if handler and handler.marks else None
    handled = set(marks.get("sources") or ()) if marks else set()
    decorator = marks.get("decorator") if marks else None
    delivered = {kind: sources.for_serverless_event(kind) for kind, _ in events}
    # What the handler processes of each event: the sources it delivers, or carries (S3 notifications
    # in SQS messages); the delivering source's traits apply to both.
    processed = {kind: handled & {s.name for s in [*found, *sources.carried_by(kind)]} for kind, found in delivered.items()}
    if handler is not None and marks is None and any(delivered.values()):
        findings.append(Finding("warning", name, "handler is not a lambda_kit decorator (no __lambda_kit__), so its partial-failure wiring cannot be checked"))
    if decorator is not None:
        for kind in sorted({kind for kind, found in delivered.items() if found and not processed[kind]}):
            fits = " or ".join(dict.fromkeys(s.decorator for s in delivered[kind]))
            what, fix = ("a Function URL (url:)", "remove url") if kind == "url" else (f"{kind} events", "move the event")
            findings.append(Finding("error", name, f"handler is a {decorator} but the function has {what}: use {fits} or {fix}"))

    for kind, spec in events:
        if processed[kind] and any(s.reports_batch_failures for s in delivered[kind]) and spec.get("functionResponseType") != RBIF:
            findings.append(Finding("error", name, f"add functionResponseType: {RBIF} to its {kind} event: without it Lambda ignores the failures the {decorator} reports and treats failed records as processed"))
        if kind in KAFKA_EVENTS:
            _check_kafka(name, kind, spec, handler, extensions or {}, findings)
        elif any(s.ordered for s in delivered[kind]):
            _check_stream(name, spec, handler, resources, findings)
        if kind == "stream":
            _check_window(name, spec, handler, findings)
            _check_log_stream(name, spec, handler, resources, findings)
        if kind == "sns" and not isinstance(spec.get("redrivePolicy"), dict):
            findings.append(Finding("warning", name, "add redrivePolicy (a dead-letter queue) to its sns event: messages SNS cannot deliver to the function are dropped"))
        if kind == "sqs":
            _check_visibility(name, spec, function, queues, provider, findings)
        if kind == "eventBridge":
            _check_event_bridge(name, spec, decorator, findings)
        if kind == "alb" and spec.get("multiValueHeaders") is not True:
            findings.append(Finding("warning", name, "set multiValueHeaders: true on its alb event: without it the load balancer passes only the last value of a repeated query parameter or header (request.query_all holds one value each)"))
        if kind == "url" and str(spec.get("invokeMode", "")).upper() == "RESPONSE_STREAM":
            findings.append(Finding("error", name, "its url has invokeMode: RESPONSE_STREAM, but Lambda streams responses only from Node.js and custom runtimes: the response api_handler returns (statusCode, headers, body) would not be read as an HTTP response; remove invokeMode (BUFFERED is the default)"))

    _check_window_use(name, events, handler, findings)

    if any(s.asynchronous for found in delivered.values() for s in found):
        destinations = function.get("destinations") if isinstance(function.get("destinations"), dict) else {}
        if not destinations.get("onFailure") and not function.get("onError"):
            kinds = ", ".join(sorted({kind for kind, found in delivered.items() if any(s.asynchronous for s in found)}))
            findings.append(Finding("error", name, f"add destinations.onFailure (or onError) to the function: its {kinds} events invoke it asynchronously and failed invocations are dropped after Lambda's retries"))


def _check_stream(
    name: str, spec: dict[str, Any], handler: _Handler | None, resources: dict[str, dict[str, Any]], findings: list[Finding]
) -> None:
    destinations = spec.get("destinations") if isinstance(spec.get("destinations"), dict) else {}
    if not destinations.get("onFailure"):
        findings.append(Finding("error", name, "add destinations.onFailure (an SQS queue or SNS topic) to its stream event: records that exhaust their retries are dropped without a trace"))
    if spec.get("maximumRetryAttempts", -1) == -1 and spec.get("maximumRecordAgeInSeconds", -1) == -1:
        findings.append(Finding("warning", name, "set maximumRetryAttempts on its stream event: retries are unlimited by default, so one failing record blocks its shard until it expires"))
    _check_starting_position(name, "stream", spec, handler, findings)
    marks = handler.marks if handler and handler.marks else {}
    if marks.get("on_failure") == "requeue" and _stream_type(spec, resources) == "dynamodb":
        findings.append(Finding("error", name, "on_failure='requeue' only works on Kinesis streams: use on_failure='stop' for its DynamoDB stream event"))


def _check_starting_position(name: str, kind: str, spec: dict[str, Any], handler: _Handler | None, findings: list[Finding]) -> None:
    if spec.get("startingPosition") != "LATEST":
        return
    if handler is not None and handler.uses_counters:
        findings.append(Finding("error", name, f"its {kind} event starts at LATEST but the handler counts with lambda_kit.counters: records written before the mapping starts are never counted; use TRIM_HORIZON"))
    else:
        findings.append(Finding("warning", name, f"its {kind} event starts at LATEST: records written before the mapping starts are skipped; use TRIM_HORIZON unless that is intended"))


KAFKA_EVENTS = ("msk", "kafka")


def _check_kafka(
    name: str, kind: str, spec: dict[str, Any], handler: _Handler | None, extensions: dict[str, dict[str, Any]], findings: list[Finding]
) -> None:
    """An ``msk`` / ``kafka`` event: the framework's own settings, plus what
    ``resources.extensions.<its event source mapping>.Properties`` adds (the framework has no
    setting for FunctionResponseTypes, and none for an msk event's on-failure destination)."""
    logical_id = _kafka_mapping_id(name, kind, spec)
    extension = (extensions.get(logical_id or "") or {}).get("Properties")
    extension = extension if isinstance(extension, dict) else {}
    where = f"resources.extensions.{logical_id or '<its event source mapping>'}.Properties"
    destination = (extension.get("DestinationConfig") or {}).get("OnFailure") if isinstance(extension.get("DestinationConfig"), dict) else None
    if not (isinstance(destination, dict) and destination.get("Destination")) and not (kind == "kafka" and spec.get("onFailureDestination")):
        setting = "onFailureDestination" if kind == "kafka" else f"{where}.DestinationConfig.OnFailure.Destination (the msk event has no setting for it)"
        findings.append(Finding("error", name, f"add an on-failure destination to its {kind} event ({setting}): a batch that keeps failing blocks its partitions until its records expire, and is then dropped"))
    marks = handler.marks if handler and handler.marks else {}
    if marks.get("on_failure") == "report":
        types = extension.get("FunctionResponseTypes")
        provisioned = spec.get("provisionedPollerConfig") or extension.get("ProvisionedPollerConfig")
        if not (isinstance(types, list) and RBIF in types and provisioned):
            findings.append(Finding("error", name, f"kafka_handler(on_failure='report') returns batchItemFailures, which Lambda reads only in provisioned mode with {RBIF}: add provisionedPollerConfig to its {kind} event and FunctionResponseTypes: [{RBIF}] to {where}, or use on_failure='raise'; without them Lambda treats failed records as processed"))
    _check_starting_position(name, kind, spec, handler, findings)


def _kafka_mapping_id(function: str, kind: str, spec: dict[str, Any]) -> str | None:
    """The logical id the framework gives the event source mapping of an msk / kafka event."""
    topic = spec.get("topic")
    if not isinstance(topic, str):
        return None
    prefix = _alphanumeric_name(function.replace("-", "Dash").replace("_", "Underscore"), keep=True)
    if kind == "kafka":
        return f"{prefix}EventSourceMappingKafka{_alphanumeric_name(topic)[:158]}"
    arn = spec.get("arn")
    cluster = arn.get("Ref", arn.get("Fn::ImportValue")) if isinstance(arn, dict) else arn.split("/")[1] if isinstance(arn, str) and "/" in arn else None
    if not isinstance(cluster, str):
        return None
    return f"{prefix}EventSourceMappingMSK{_alphanumeric_name(cluster)[:79]}{_alphanumeric_name(topic)[:79]}"


def _alphanumeric_name(name: str, keep: bool = False) -> str:
    """The framework's name normalization: first letter upper-cased (``keep``: other characters
    kept; else only letters and digits)."""
    name = name if keep else re.sub(r"[^0-9A-Za-z]", "", name)
    return name[:1].upper() + name[1:]


# --- EventBridge and S3 ---

S3_OBJECT_EVENTS = {"Object Created", "Object Deleted"}


def _check_event_bridge(name: str, spec: dict[str, Any], decorator: str | None, findings: list[Finding]) -> None:
    """An EventBridge rule invokes the function asynchronously: a failed invocation is retried by
    Lambda and then kept by the function's on-failure destination (checked with the other
    asynchronous events). The rule's own dead-letter queue keeps what EventBridge could not hand
    to Lambda at all. Input transformations and patterns must give the decorator its events."""
    if not spec.get("deadLetterQueueArn"):
        findings.append(Finding("warning", name, "add deadLetterQueueArn to its eventBridge event: events EventBridge cannot hand to the function (function deleted, permission missing) are dropped after its retries (24 h by default)"))
    changed = [key for key in ("input", "inputPath", "inputTransformer") if spec.get(key) is not None]
    if changed and decorator in ("eventbridge_handler", "s3_handler"):
        findings.append(Finding("error", name, f"its eventBridge event sets {changed[0]}, so the function receives that instead of the EventBridge event and the {decorator} refuses every invocation: remove {changed[0]}"))
    if decorator == "s3_handler":
        pattern = spec.get("pattern") if isinstance(spec.get("pattern"), dict) else {}
        source, detail_type = pattern.get("source"), pattern.get("detail-type")
        if source != ["aws.s3"] or not isinstance(detail_type, list) or not detail_type or not set(detail_type) <= S3_OBJECT_EVENTS:
            findings.append(Finding("error", name, "its eventBridge pattern lets through events the s3_handler refuses: match source: [aws.s3] and detail-type: [Object Created] and/or [Object Deleted]"))


# ------------------------------------------------------------------ tumbling windows

MAX_TUMBLING_WINDOW = 900  # seconds: Lambda's range is 0 (no window) to 900


def _window_seconds(spec: dict[str, Any]) -> Any:
    return spec.get("tumblingWindowInSeconds", 0)


def _check_window(name: str, spec: dict[str, Any], handler: _Handler | None, findings: list[Finding]) -> None:
    seconds = _window_seconds(spec)
    if isinstance(seconds, str) and "${" in seconds:
        return
    if not isinstance(seconds, int) or isinstance(seconds, bool) or not 0 <= seconds <= MAX_TUMBLING_WINDOW:
        findings.append(Finding("error", name, f"tumblingWindowInSeconds {seconds!r} on its stream event is not a whole number of seconds from 0 to {MAX_TUMBLING_WINDOW}: Lambda rejects the event source"))
        return
    marks = handler.marks if handler and handler.marks else {}
    if seconds and marks.get("on_failure") == "requeue":
        findings.append(Finding("warning", name, "on_failure='requeue' with a tumbling window: a requeued record comes back in a later window and is counted there; use on_failure='stop' to keep each record in its own window"))
    if seconds and handler is not None and handler.reads_window and marks.get("decorator") == "stream_handler" and not marks.get("on_window_end"):
        findings.append(Finding("warning", name, "the handler keeps a window state but has no on_window_end: the window's last invocation may carry no records, and after it Lambda drops the state; pass stream_handler(on_window_end=...) to act on the final state"))


def _check_window_use(name: str, events: list[tuple[str, dict[str, Any]]], handler: _Handler | None, findings: list[Finding]) -> None:
    if handler is None or not handler.reads_window:
        return
    if not any(kind == "stream" and _window_seconds(spec) for kind, spec in events):
        findings.append(Finding("error", name, "the handler reads current_window() but no stream event of the function sets tumblingWindowInSeconds: current_window() is None and every record fails; set tumblingWindowInSeconds or drop the window"))


# ------------------------------------------------------------------ CloudWatch Logs subscriptions

MAX_SUBSCRIPTION_FILTERS = 2  # per log group, a CloudWatch Logs quota that cannot be raised


def _log_group_of(spec: dict[str, Any]) -> Any:
    return spec.get("logGroup", spec.get("arn"))


def _subscription_filters(resources: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [r.get("Properties") or {} for r in resources.values() if r.get("Type") == "AWS::Logs::SubscriptionFilter"]


def _check_log_stream(
    name: str, spec: dict[str, Any], handler: _Handler | None, resources: dict[str, dict[str, Any]], findings: list[Finding]
) -> None:
    """A stream a subscription filter fills holds gzip-compressed log data: ``json=False`` hands
    the function those bytes instead of one call per log event."""
    marks = handler.marks if handler and handler.marks else {}
    if marks.get("decorator") != "stream_handler" or marks.get("json", True):
        return
    stream = _target(spec.get("arn"))
    if stream and any(_target(f.get("DestinationArn")) == stream for f in _subscription_filters(resources)):
        findings.append(Finding("warning", name, f"a subscription filter puts CloudWatch Logs data on {stream}, but the handler is stream_handler(json=False): it gets the gzip-compressed messages; leave json on for one call per log event"))


def _log_subscription_findings(
    config: dict[str, Any], functions: dict[str, dict[str, Any]], resources: dict[str, dict[str, Any]]
) -> list[Finding]:
    findings: list[Finding] = []
    filters: dict[str, int] = {}
    for name, function in functions.items():
        own = _own_log_groups(name, function, config)
        for kind, spec in _events(function):
            group = _log_group_of(spec)
            if kind != "cloudwatchLog" or not isinstance(group, str):
                continue
            filters[group] = filters.get(group, 0) + 1
            if _normalized(group, config) in own:
                findings.append(Finding("error", name, f"its cloudwatchLog event subscribes it to its own log group {group}: every invocation writes lines that invoke it again, without end; subscribe another function"))
    for properties in _subscription_filters(resources):  # filters declared as resources count too
        group = properties.get("LogGroupName")
        target = _target(group)
        if target is not None:  # a Ref to a log group declared with its name
            group = (resources.get(target, {}).get("Properties") or {}).get("LogGroupName")
        if isinstance(group, str):
            filters[group] = filters.get(group, 0) + 1
    for group, count in filters.items():
        if count > MAX_SUBSCRIPTION_FILTERS:
            findings.append(Finding("error", group, f"{count} subscription filters on this log group: CloudWatch Logs allows {MAX_SUBSCRIPTION_FILTERS} per log group, so the deploy fails; merge the consumers or subscribe a stream they share"))
    return findings


def _own_log_groups(name: str, function: dict[str, Any], config: dict[str, Any]) -> set[str]:
    """The log group names the function writes to, normalized (``_normalized``): ``/aws/lambda/``
    and its deployed name, ``name:`` or the framework's ``<service>-<stage>-<key>``."""
    if isinstance(function.get("name"), str):
        return {_normalized(f"/aws/lambda/{function['name']}", config)}
    provider = config.get("provider") if isinstance(config.get("provider"), dict) else {}
    stages = {str(provider.get("stage") or "dev"), "${sls:stage}"}
    return {_normalized(f"/aws/lambda/{_service_name(config)}-{stage}-{name}", config) for stage in stages}


def _service_name(config: dict[str, Any]) -> str:
    service = config.get("service")
    return str(service.get("name") if isinstance(service, dict) else service)


def _normalized(text: str, config: dict[str, Any]) -> str:
    """``text`` with the service's name for ``${self:service}`` and one placeholder for any stage
    variable (``${sls:stage}``, ``${opt:stage, 'dev'}``, ``${self:provider.stage}`` ...)."""
    text = re.sub(r"\$\{self:service(\.name)?\}", lambda _: _service_name(config), text)
    return re.sub(r"\$\{[^}]*stage[^}]*\}", "<stage>", text)


def _check_visibility(
    name: str,
    spec: dict[str, Any],
    function: dict[str, Any],
    queues: dict[str, dict[str, Any]],
    provider: dict[str, Any],
    findings: list[Finding],
) -> None:
    queue = _queue_of(spec.get("arn"), queues)
    timeout = _timeout(function, provider)
    if queue is None or timeout is None:
        return
    visibility = (queues[queue].get("Properties") or {}).get("VisibilityTimeout", DEFAULT_VISIBILITY_TIMEOUT)
    if not isinstance(visibility, int) or isinstance(visibility, bool):
        return
    if visibility < timeout:
        findings.append(Finding("error", queue, f"VisibilityTimeout {visibility} s is shorter than the {name} timeout ({timeout} s): Lambda rejects the event source; set it to at least {6 * timeout}"))
    elif visibility < 6 * timeout:
        findings.append(Finding("warning", queue, f"VisibilityTimeout {visibility} s is under 6 x the {name} timeout ({timeout} s): throttled batches may be received again while still in flight; set it to at least {6 * timeout}"))


def _dead_letter_queues(functions: dict[str, dict[str, Any]], queues: dict[str, dict[str, Any]], resources: dict[str, dict[str, Any]]) -> set[str]:
    """Queues that receive failures: they need no redrive policy of their own."""
    targets: list[Any] = []

    def collect(value: Any) -> None:  # any deadLetterTargetArn / DestinationConfig in the resources
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ("deadLetterTargetArn", "TargetArn", "Destination"):
                    targets.append(item)
                collect(item)
        elif isinstance(value, list):
            for item in value:
                collect(item)

    collect(resources)
    for function in functions.values():
        destinations = function.get("destinations") if isinstance(function.get("destinations"), dict) else {}
        targets += [destinations.get("onFailure"), function.get("onError")]
        for _, spec in _events(function):
            redrive = spec.get("redrivePolicy") if isinstance(spec.get("redrivePolicy"), dict) else {}
            targets += [redrive.get("deadLetterTargetArn"), redrive.get("deadLetterTargetRef")]
            stream_destinations = spec.get("destinations") if isinstance(spec.get("destinations"), dict) else {}
            targets.append(stream_destinations.get("onFailure"))
            targets.append(spec.get("deadLetterQueueArn"))  # an eventBridge rule target's DLQ
    return {q for q in (_queue_of(t, queues) for t in targets if t) if q is not None}


def check(path: str | os.PathLike[str] = "serverless.yml") -> list[Finding]:
    """The findings for the service at ``path``; raises ``ConfigError`` if it cannot be read."""
    return _check(path)[0]


def _check(path: str | os.PathLike[str]) -> tuple[list[Finding], int]:
    config = load(path)
    functions = _functions(config)
    if not functions:
        raise ConfigError(f"{os.fspath(path)} declares no functions: nothing to check")
    provider = config.get("provider") if isinstance(config.get("provider"), dict) else {}
    resources = _resources(config)
    queues = {n: r for n, r in resources.items() if r.get("Type") == "AWS::SQS::Queue"}
    project_dir = os.path.dirname(os.path.abspath(os.fspath(path)))

    findings: list[Finding] = []
    extensions = _extensions(config)
    for name, function in functions.items():
        handler = _import_handler(name, function, provider, project_dir, findings)
        _check_function(name, function, handler, resources, queues, provider, findings, extensions)

    findings.extend(_log_subscription_findings(config, functions, resources))
    dead_letters = _dead_letter_queues(functions, queues, resources)
    consumed = {_queue_of(spec.get("arn"), queues) for f in functions.values() for kind, spec in _events(f) if kind == "sqs"}
    for name, queue in queues.items():
        properties = queue.get("Properties") or {}
        if name in dead_letters or properties.get("RedrivePolicy"):
            continue
        if name in consumed:
            findings.append(Finding("error", name, "add a RedrivePolicy (deadLetterTargetArn + maxReceiveCount) to the queue: a message that always fails is retried until it expires"))
        else:
            findings.append(Finding("warning", name, "queue has no RedrivePolicy and is no function's dead-letter target: add one, or point a redrive policy / destination at it"))
    return findings, len(functions)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lambda-kit check", description="Report the deployment mistakes in a serverless.yml.")
    parser.add_argument("config", nargs="?", default="serverless.yml", help="path to serverless.yml (default: ./serverless.yml)")
    args = parser.parse_args(argv)
    try:
        findings, functions = _check(args.config)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for finding in findings:
        print(finding)
    errors = sum(f.level == "error" for f in findings)
    warnings = len(findings) - errors
    verdict = "ok" if not errors else "failed"
    print(f"lambda-kit check {verdict}: {args.config}: {functions} functions, {errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}")
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
