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

import ast
import contextlib
import importlib
import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .. import sources
from ..local.config import EventSource, FunctionConfig, ServiceConfig, read_service
from ..local.intrinsics import target
from ..local.terminal import printable
from ..serverless_config import ConfigError

__all__ = ["Finding", "check", "main"]

RBIF = "ReportBatchItemFailures"
DEFAULT_VISIBILITY_TIMEOUT = 30  # SQS default, seconds
QUEUE = "AWS::SQS::Queue"
SUBSCRIPTION_FILTER = "AWS::Logs::SubscriptionFilter"


@dataclass(frozen=True)
class Finding:
    level: str  # "error" | "warning"
    subject: str  # function name or resource logical id
    message: str

    def __str__(self) -> str:
        return f"{self.level}: {self.subject}: {self.message}"


# ------------------------------------------------------------------ importing handlers


def _string_env(environment: dict[str, Any]) -> dict[str, str]:
    """Environment values as the function would see them; unresolved ones get a placeholder."""
    return {
        str(key): value if isinstance(value, str) and "${" not in value else f"lambda-kit-check-{key}"
        for key, value in environment.items()
        if not isinstance(value, (bool, type(None)))
    }


def _own(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


@contextlib.contextmanager
def _importing_from(project_dir: str, environment: dict[str, str], package: str) -> Iterator[None]:
    """Import ``package`` from ``project_dir`` with ``environment`` set; put everything back after."""
    saved_path = list(sys.path)
    saved_env = dict(os.environ)
    shadowed = {name: module for name, module in sys.modules.items() if _own(name, package)}
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
        for name in [n for n in sys.modules if _own(n, package)]:
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


def _holds_counters(value: Any) -> bool:
    origin = getattr(value, "__name__", "") if isinstance(value, type(sys)) else getattr(value, "__module__", "")
    return isinstance(origin, str) and origin.startswith("lambda_kit.counters")


def _imports_counters(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(alias.name.startswith("lambda_kit.counters") for alias in node.names)
    if not isinstance(node, ast.ImportFrom) or not node.module:
        return False
    return node.module.startswith("lambda_kit.counters") or (
        node.module == "lambda_kit" and any(alias.name == "counters" for alias in node.names)
    )


def _uses_counters(module: Any) -> bool:
    """Whether the handler module imports ``lambda_kit.counters`` (or holds anything from it)."""
    if any(_holds_counters(value) for value in vars(module).values()):
        return True
    tree = _module_tree(module)
    return tree is not None and any(_imports_counters(node) for node in ast.walk(tree))


def _is_current_window(value: Any) -> bool:
    return (getattr(value, "__module__", None), getattr(value, "__name__", None)) == (
        "lambda_kit.sources.window", "current_window"
    )


def _reads_window(module: Any) -> bool:
    """Whether the handler module uses ``current_window()`` (imported, or ``lambda_kit.current_window``)."""
    if any(_is_current_window(value) for value in vars(module).values()):
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


def _import_error(function: FunctionConfig, module_name: str, exc: BaseException) -> str:
    """The finding for a handler module that does not import."""
    path = function.handler.rpartition(".")[0]
    missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    if missing and _own(module_name, missing):
        return f"handler {function.handler!r} names {path}.py, which does not exist: fix the handler path"
    reason = f"{type(exc).__name__}: {exc}".strip().splitlines()[0]
    return f"handler module {path}.py does not import ({reason}): fix the module"


def _import_handler(function: FunctionConfig, config: ServiceConfig, findings: list[Finding]) -> _Handler | None:
    """The function's handler, imported with the function's environment; None (and a finding)
    when it cannot be."""
    raw = function.setting("handler")
    if not isinstance(raw, str) or "." not in raw:
        findings.append(Finding("error", function.key, f"handler {raw!r} is not of the form path/to/module.function"))
        return None
    module_name = function.module.strip(".")
    environment = _string_env(function.environment)
    environment.setdefault("AWS_REGION", os.environ.get("AWS_REGION", config.region))
    environment.setdefault("AWS_DEFAULT_REGION", os.environ.get("AWS_DEFAULT_REGION", config.region))
    with _importing_from(str(config.project_dir), environment, module_name.partition(".")[0]):
        try:
            module = importlib.import_module(module_name)
        except (Exception, SystemExit) as exc:  # anything the module raises on import is the finding
            findings.append(Finding("error", function.key, _import_error(function, module_name, exc)))
            return None
        fn = getattr(module, function.attribute, None)
        if not callable(fn):
            message = f"handler module {module_name} has no function {function.attribute!r}: fix the handler path {raw!r}"
            findings.append(Finding("error", function.key, message))
            return None
        marks = getattr(fn, "__lambda_kit__", None)
        return _Handler(marks if isinstance(marks, dict) else None, _uses_counters(module), _reads_window(module))


# ------------------------------------------------------------------ one function


@dataclass
class _Subject:
    """One function being checked, its handler as imported (None: it does not import), the service."""

    function: FunctionConfig
    handler: _Handler | None
    config: ServiceConfig
    findings: list[Finding]

    @property
    def name(self) -> str:
        return self.function.key

    @property
    def marks(self) -> dict[str, Any]:
        return self.handler.marks if self.handler is not None and self.handler.marks else {}

    @property
    def counts(self) -> bool:
        return self.handler is not None and self.handler.uses_counters

    @property
    def reads_window(self) -> bool:
        return self.handler is not None and self.handler.reads_window

    def error(self, message: str, subject: str | None = None) -> None:
        self.findings.append(Finding("error", subject or self.name, message))

    def warning(self, message: str, subject: str | None = None) -> None:
        self.findings.append(Finding("warning", subject or self.name, message))


def _check_function(subject: _Subject) -> None:
    events = subject.function.events
    delivered = {event.kind: sources.for_serverless_event(event.kind) for event in events}
    # What the handler processes of each event: the sources it delivers, or carries (S3 notifications
    # in SQS messages); the delivering source's traits apply to both.
    handled = set(subject.marks.get("sources") or ())
    processed = {kind: handled & {s.name for s in [*found, *sources.carried_by(kind)]} for kind, found in delivered.items()}
    _check_decorator(subject, delivered, processed)
    for event in events:
        _check_event(subject, event, delivered[event.kind], bool(processed[event.kind]))
    _check_window_use(subject)
    _check_async_destination(subject, delivered)


WHAT_DELIVERS = {"url": ("a Function URL (url:)", "remove url")}
"""How a mismatch names an event kind and its fix, where not ``<kind> events`` / ``move the event``."""


def _check_decorator(subject: _Subject, delivered: dict[str, list[Any]], processed: dict[str, set[str]]) -> None:
    if subject.handler is not None and not subject.marks and any(delivered.values()):
        subject.warning("handler is not a lambda_kit decorator (no __lambda_kit__), so its partial-failure wiring cannot be checked")
    decorator = subject.marks.get("decorator")
    if not decorator:
        return
    for kind in sorted(kind for kind, found in delivered.items() if found and not processed[kind]):
        fits = " or ".join(dict.fromkeys(s.decorator for s in delivered[kind]))
        what, fix = WHAT_DELIVERS.get(kind, (f"{kind} events", "move the event"))
        subject.error(f"handler is a {decorator} but the function has {what}: use {fits} or {fix}")


def _check_event(subject: _Subject, event: EventSource, found: list[Any], processed: bool) -> None:
    if processed and any(s.reports_batch_failures for s in found) and event.spec.get("functionResponseType") != RBIF:
        subject.error(
            f"add functionResponseType: {RBIF} to its {event.kind} event: without it Lambda ignores the failures "
            f"the {subject.marks.get('decorator')} reports and treats failed records as processed"
        )
    for check in EVENT_CHECKS.get(event.kind, ()):
        check(subject, event)


def _check_async_destination(subject: _Subject, delivered: dict[str, list[Any]]) -> None:
    kinds = sorted(kind for kind, found in delivered.items() if any(s.asynchronous for s in found))
    function = subject.function
    destinations = function.setting("destinations") if isinstance(function.setting("destinations"), dict) else {}
    if kinds and not destinations.get("onFailure") and not function.setting("onError"):
        subject.error(
            f"add destinations.onFailure (or onError) to the function: its {', '.join(kinds)} events invoke it "
            "asynchronously and failed invocations are dropped after Lambda's retries"
        )


# --- streams and Kafka ---


def _check_stream(subject: _Subject, event: EventSource) -> None:
    spec = event.spec
    if not _mapping(spec.get("destinations")).get("onFailure"):
        subject.error("add destinations.onFailure (an SQS queue or SNS topic) to its stream event: records that exhaust their retries are dropped without a trace")
    if spec.get("maximumRetryAttempts", -1) == -1 and spec.get("maximumRecordAgeInSeconds", -1) == -1:
        subject.warning("set maximumRetryAttempts on its stream event: retries are unlimited by default, so one failing record blocks its shard until it expires")
    _check_starting_position(subject, event)
    if subject.marks.get("on_failure") == "requeue" and [s.name for s in subject.config.sources_of(event)] == ["dynamodb"]:
        subject.error("on_failure='requeue' only works on Kinesis streams: use on_failure='stop' for its DynamoDB stream event")


def _check_starting_position(subject: _Subject, event: EventSource) -> None:
    if event.spec.get("startingPosition") != "LATEST":
        return
    if subject.counts:
        subject.error(f"its {event.kind} event starts at LATEST but the handler counts with lambda_kit.counters: records written before the mapping starts are never counted; use TRIM_HORIZON")
    else:
        subject.warning(f"its {event.kind} event starts at LATEST: records written before the mapping starts are skipped; use TRIM_HORIZON unless that is intended")


def _check_kafka(subject: _Subject, event: EventSource) -> None:
    """An ``msk`` / ``kafka`` event: the framework's own settings, plus what
    ``resources.extensions.<its event source mapping>.Properties`` adds (the framework has no
    setting for FunctionResponseTypes, and none for an msk event's on-failure destination)."""
    kind, spec = event.kind, event.spec
    logical_id = _kafka_mapping_id(subject.name, kind, spec)
    extension = _mapping(subject.config.extensions.get(logical_id or "", {}).get("Properties"))
    where = f"resources.extensions.{logical_id or '<its event source mapping>'}.Properties"
    destination = _mapping(_mapping(extension.get("DestinationConfig")).get("OnFailure")).get("Destination")
    if not destination and not (kind == "kafka" and spec.get("onFailureDestination")):
        setting = "onFailureDestination" if kind == "kafka" else f"{where}.DestinationConfig.OnFailure.Destination (the msk event has no setting for it)"
        subject.error(f"add an on-failure destination to its {kind} event ({setting}): a batch that keeps failing blocks its partitions until its records expire, and is then dropped")
    if subject.marks.get("on_failure") == "report" and not _provisioned_reporting(spec, extension):
        subject.error(f"kafka_handler(on_failure='report') returns batchItemFailures, which Lambda reads only in provisioned mode with {RBIF}: add provisionedPollerConfig to its {kind} event and FunctionResponseTypes: [{RBIF}] to {where}, or use on_failure='raise'; without them Lambda treats failed records as processed")
    _check_starting_position(subject, event)


def _provisioned_reporting(spec: dict[str, Any], extension: dict[str, Any]) -> bool:
    types = extension.get("FunctionResponseTypes")
    provisioned = spec.get("provisionedPollerConfig") or extension.get("ProvisionedPollerConfig")
    return bool(isinstance(types, list) and RBIF in types and provisioned)


def _kafka_mapping_id(function: str, kind: str, spec: dict[str, Any]) -> str | None:
    """The logical id the framework gives the event source mapping of an msk / kafka event."""
    topic = spec.get("topic")
    if not isinstance(topic, str):
        return None
    prefix = _alphanumeric_name(function.replace("-", "Dash").replace("_", "Underscore"), keep=True)
    if kind == "kafka":
        return f"{prefix}EventSourceMappingKafka{_alphanumeric_name(topic)[:158]}"
    cluster = _msk_cluster(spec.get("arn"))
    if not isinstance(cluster, str):
        return None
    return f"{prefix}EventSourceMappingMSK{_alphanumeric_name(cluster)[:79]}{_alphanumeric_name(topic)[:79]}"


def _msk_cluster(arn: Any) -> Any:
    if isinstance(arn, dict):
        return arn.get("Ref", arn.get("Fn::ImportValue"))
    return arn.split("/")[1] if isinstance(arn, str) and "/" in arn else None


def _alphanumeric_name(name: str, keep: bool = False) -> str:
    """The framework's name normalization: first letter upper-cased (``keep``: other characters
    kept; else only letters and digits)."""
    name = name if keep else re.sub(r"[^0-9A-Za-z]", "", name)
    return name[:1].upper() + name[1:]


# --- EventBridge, SNS, SQS and HTTP ---

S3_OBJECT_EVENTS = {"Object Created", "Object Deleted"}


def _check_event_bridge(subject: _Subject, event: EventSource) -> None:
    """An EventBridge rule invokes the function asynchronously: a failed invocation is retried by
    Lambda and then kept by the function's on-failure destination (checked with the other
    asynchronous events). The rule's own dead-letter queue keeps what EventBridge could not hand
    to Lambda at all. Input transformations and patterns must give the decorator its events."""
    spec, decorator = event.spec, subject.marks.get("decorator")
    if not spec.get("deadLetterQueueArn"):
        subject.warning("add deadLetterQueueArn to its eventBridge event: events EventBridge cannot hand to the function (function deleted, permission missing) are dropped after its retries (24 h by default)")
    changed = [key for key in ("input", "inputPath", "inputTransformer") if spec.get(key) is not None]
    if changed and decorator in ("eventbridge_handler", "s3_handler"):
        subject.error(f"its eventBridge event sets {changed[0]}, so the function receives that instead of the EventBridge event and the {decorator} refuses every invocation: remove {changed[0]}")
    if decorator == "s3_handler" and not _only_s3_object_events(_mapping(spec.get("pattern"))):
        subject.error("its eventBridge pattern lets through events the s3_handler refuses: match source: [aws.s3] and detail-type: [Object Created] and/or [Object Deleted]")


def _only_s3_object_events(pattern: dict[str, Any]) -> bool:
    detail_type = pattern.get("detail-type")
    return pattern.get("source") == ["aws.s3"] and isinstance(detail_type, list) and bool(detail_type) and set(detail_type) <= S3_OBJECT_EVENTS


def _check_sns(subject: _Subject, event: EventSource) -> None:
    if not isinstance(event.spec.get("redrivePolicy"), dict):
        subject.warning("add redrivePolicy (a dead-letter queue) to its sns event: messages SNS cannot deliver to the function are dropped")


def _check_visibility(subject: _Subject, event: EventSource) -> None:
    queues = subject.config.of_type(QUEUE)
    queue = _queue_of(event.spec.get("arn"), queues)
    timeout = subject.function.timeout
    if queue is None or timeout is None:
        return
    visibility = _mapping(queues[queue].get("Properties")).get("VisibilityTimeout", DEFAULT_VISIBILITY_TIMEOUT)
    if not isinstance(visibility, int) or isinstance(visibility, bool) or visibility >= 6 * timeout:
        return
    if visibility < timeout:
        subject.error(f"VisibilityTimeout {visibility} s is shorter than the {subject.name} timeout ({timeout:g} s): Lambda rejects the event source; set it to at least {6 * timeout:g}", queue)
    else:
        subject.warning(f"VisibilityTimeout {visibility} s is under 6 x the {subject.name} timeout ({timeout:g} s): throttled batches may be received again while still in flight; set it to at least {6 * timeout:g}", queue)


def _check_alb(subject: _Subject, event: EventSource) -> None:
    if event.spec.get("multiValueHeaders") is not True:
        subject.warning("set multiValueHeaders: true on its alb event: without it the load balancer passes only the last value of a repeated query parameter or header (request.query_all holds one value each)")


def _check_url(subject: _Subject, event: EventSource) -> None:
    if str(event.spec.get("invokeMode", "")).upper() == "RESPONSE_STREAM":
        subject.error("its url has invokeMode: RESPONSE_STREAM, but Lambda streams responses only from Node.js and custom runtimes: the response api_handler returns (statusCode, headers, body) would not be read as an HTTP response; remove invokeMode (BUFFERED is the default)")


# --- tumbling windows and CloudWatch Logs data on a stream ---

MAX_TUMBLING_WINDOW = 900  # seconds: Lambda's range is 0 (no window) to 900


def _window_seconds(spec: dict[str, Any]) -> Any:
    return spec.get("tumblingWindowInSeconds", 0)


def _check_window(subject: _Subject, event: EventSource) -> None:
    seconds = _window_seconds(event.spec)
    if isinstance(seconds, str) and "${" in seconds:
        return
    if not isinstance(seconds, int) or isinstance(seconds, bool) or not 0 <= seconds <= MAX_TUMBLING_WINDOW:
        subject.error(f"tumblingWindowInSeconds {seconds!r} on its stream event is not a whole number of seconds from 0 to {MAX_TUMBLING_WINDOW}: Lambda rejects the event source")
        return
    marks = subject.marks
    if seconds and marks.get("on_failure") == "requeue":
        subject.warning("on_failure='requeue' with a tumbling window: a requeued record comes back in a later window and is counted there; use on_failure='stop' to keep each record in its own window")
    if seconds and subject.reads_window and marks.get("decorator") == "stream_handler" and not marks.get("on_window_end"):
        subject.warning("the handler keeps a window state but has no on_window_end: the window's last invocation may carry no records, and after it Lambda drops the state; pass stream_handler(on_window_end=...) to act on the final state")


def _check_window_use(subject: _Subject) -> None:
    if subject.reads_window and not any(_window_seconds(event.spec) for event in subject.function.events):
        subject.error("the handler reads current_window() but no stream event of the function sets tumblingWindowInSeconds: current_window() is None and every record fails; set tumblingWindowInSeconds or drop the window")


def _check_log_stream(subject: _Subject, event: EventSource) -> None:
    """A stream a subscription filter fills holds gzip-compressed log data: ``json=False`` hands
    the function those bytes instead of one call per log event."""
    marks = subject.marks
    if marks.get("decorator") != "stream_handler" or marks.get("json", True):
        return
    stream = target(event.spec.get("arn"))
    if stream and any(target(f.get("DestinationArn")) == stream for f in _subscription_filters(subject.config)):
        subject.warning(f"a subscription filter puts CloudWatch Logs data on {stream}, but the handler is stream_handler(json=False): it gets the gzip-compressed messages; leave json on for one call per log event")


EVENT_CHECKS: dict[str, tuple[Callable[[_Subject, EventSource], None], ...]] = {
    "sqs": (_check_visibility,),
    "stream": (_check_stream, _check_window, _check_log_stream),
    "msk": (_check_kafka,),
    "kafka": (_check_kafka,),
    "sns": (_check_sns,),
    "eventBridge": (_check_event_bridge,),
    "alb": (_check_alb,),
    "url": (_check_url,),
}
"""The checks of one kind of event, beyond what every event gets from the registry's traits
(partial batch responses, asynchronous invocation, the decorator that fits)."""


# ------------------------------------------------------------------ the service


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


MAX_SUBSCRIPTION_FILTERS = 2  # per log group, a CloudWatch Logs quota that cannot be raised


def _subscription_filters(config: ServiceConfig) -> list[dict[str, Any]]:
    return [_mapping(resource.get("Properties")) for resource in config.of_type(SUBSCRIPTION_FILTER).values()]


def _delivers(event: EventSource, source: str) -> bool:
    return any(found.name == source for found in sources.for_serverless_event(event.kind))


def _log_subscription_findings(config: ServiceConfig) -> list[Finding]:
    findings: list[Finding] = []
    filters: dict[str, int] = {}
    for function in config.functions.values():
        own = _own_log_groups(function, config)
        for event in function.events:
            group = event.spec.get("logGroup", event.spec.get("arn"))
            if not _delivers(event, "cloudwatch_logs") or not isinstance(group, str):
                continue
            filters[group] = filters.get(group, 0) + 1
            if _normalized(group, config) in own:
                findings.append(Finding("error", function.key, f"its cloudwatchLog event subscribes it to its own log group {group}: every invocation writes lines that invoke it again, without end; subscribe another function"))
    for group in _filtered_groups(config):  # filters declared as resources count too
        filters[group] = filters.get(group, 0) + 1
    return findings + [
        Finding("error", group, f"{count} subscription filters on this log group: CloudWatch Logs allows {MAX_SUBSCRIPTION_FILTERS} per log group, so the deploy fails; merge the consumers or subscribe a stream they share")
        for group, count in filters.items()
        if count > MAX_SUBSCRIPTION_FILTERS
    ]


def _filtered_groups(config: ServiceConfig) -> list[str]:
    """The log group of each subscription filter declared as a resource (a Ref to a log group
    declared with its name counts as that name)."""
    groups = []
    for properties in _subscription_filters(config):
        group = properties.get("LogGroupName")
        referenced = target(group)
        if referenced is not None:
            group = _mapping(config.resources.get(referenced, {}).get("Properties")).get("LogGroupName")
        if isinstance(group, str):
            groups.append(group)
    return groups


def _own_log_groups(function: FunctionConfig, config: ServiceConfig) -> set[str]:
    """The log group names the function writes to, normalized (``_normalized``): ``/aws/lambda/``
    and its deployed name, ``name:`` or the framework's ``<service>-<stage>-<key>``."""
    if isinstance(function.setting("name"), str):
        return {_normalized(f"/aws/lambda/{function.setting('name')}", config)}
    stages = {str(config.provider.get("stage") or "dev"), "${sls:stage}"}
    return {_normalized(f"/aws/lambda/{config.service}-{stage}-{function.key}", config) for stage in stages}


def _normalized(text: str, config: ServiceConfig) -> str:
    """``text`` with the service's name for ``${self:service}`` and one placeholder for any stage
    variable (``${sls:stage}``, ``${opt:stage, 'dev'}``, ``${self:provider.stage}`` ...)."""
    text = re.sub(r"\$\{self:service(\.name)?\}", lambda _: config.service, text)
    return re.sub(r"\$\{[^}]*stage[^}]*\}", "<stage>", text)


def _queue_of(value: Any, queues: dict[str, dict[str, Any]]) -> str | None:
    """The queue (logical id) an ARN-ish value names: a reference or an ARN ending in its name."""
    name = target(value)
    if name in queues:
        return name
    if isinstance(value, dict) and "arn" in value:
        return _queue_of(value["arn"], queues)
    if not isinstance(value, str):
        return None
    if value in queues:
        return value
    return next((logical_id for logical_id, queue in queues.items() if _names_queue(value, queue)), None)


def _names_queue(value: str, queue: dict[str, Any]) -> bool:
    name = _mapping(queue.get("Properties")).get("QueueName")
    return isinstance(name, str) and (value.endswith(":" + name) or value == name)


DEAD_LETTER_KEYS = ("deadLetterTargetArn", "TargetArn", "Destination")
"""Keys anywhere in the resources that name a queue receiving failures."""


def _targets_in(value: Any) -> Iterator[Any]:
    """Every ``deadLetterTargetArn`` / ``TargetArn`` / ``Destination`` value inside ``value``."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if key in DEAD_LETTER_KEYS:
            yield item
        yield from _targets_in(item)


def _function_targets(function: FunctionConfig) -> Iterator[Any]:
    """The function's on-failure destinations, and those of its events."""
    yield _mapping(function.setting("destinations")).get("onFailure")
    yield function.setting("onError")
    for event in function.events:
        redrive = _mapping(event.spec.get("redrivePolicy"))
        yield redrive.get("deadLetterTargetArn")
        yield redrive.get("deadLetterTargetRef")
        yield _mapping(event.spec.get("destinations")).get("onFailure")
        yield event.spec.get("deadLetterQueueArn")  # an eventBridge rule target's DLQ


def _dead_letter_queues(config: ServiceConfig, queues: dict[str, dict[str, Any]]) -> set[str]:
    """Queues that receive failures: they need no redrive policy of their own."""
    targets = [*_targets_in(config.resources)]
    targets += [found for function in config.functions.values() for found in _function_targets(function)]
    return {q for q in (_queue_of(t, queues) for t in targets if t) if q is not None}


def _queue_findings(config: ServiceConfig) -> list[Finding]:
    queues = config.of_type(QUEUE)
    dead_letters = _dead_letter_queues(config, queues)
    consumed = {
        _queue_of(event.spec.get("arn"), queues)
        for function in config.functions.values() for event in function.events if _delivers(event, "sqs")
    }
    unguarded = [name for name, queue in queues.items() if name not in dead_letters and not _mapping(queue.get("Properties")).get("RedrivePolicy")]
    return [
        Finding("error", name, "add a RedrivePolicy (deadLetterTargetArn + maxReceiveCount) to the queue: a message that always fails is retried until it expires")
        if name in consumed else
        Finding("warning", name, "queue has no RedrivePolicy and is no function's dead-letter target: add one, or point a redrive policy / destination at it")
        for name in unguarded
    ]


def check(path: str | os.PathLike[str] = "serverless.yml") -> list[Finding]:
    """The findings for the service at ``path``; raises ``ConfigError`` if it cannot be read."""
    return _check(path)[0]


def _check(path: str | os.PathLike[str]) -> tuple[list[Finding], int]:
    config = read_service(path)
    if not config.functions:
        raise ConfigError(f"{os.fspath(path)} declares no functions: nothing to check")
    if not config.service:
        raise ConfigError(f"{os.fspath(path)} names no service: add service: <name> (the framework requires it)")
    findings: list[Finding] = []
    for function in config.functions.values():
        handler = _import_handler(function, config, findings)
        _check_function(_Subject(function, handler, config, findings))
    return findings + _log_subscription_findings(config) + _queue_findings(config), len(config.functions)


def main(argv: list[str]) -> int:
    """``lambda-kit check PATH``: the findings, one line each, then the verdict. Exit status: 0
    clean or warnings only, 1 errors, 2 no usable serverless.yml."""
    [path] = argv
    try:
        findings, functions = _check(path)
    except ConfigError as exc:
        print(f"error: {printable(exc)}", file=sys.stderr)
        return 2
    for finding in findings:
        print(printable(finding))
    errors = sum(f.level == "error" for f in findings)
    warnings = len(findings) - errors
    verdict = "ok" if not errors else "failed"
    print(printable(f"lambda-kit check {verdict}: {path}: {functions} functions, {errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}"))
    return 1 if errors else 0
