"""``lambda-kit check [serverless.yml]``: the deployment mistakes that lose or repeat work.

Reads ``serverless.yml`` and imports each function's handler module (the project directory is put
first on ``sys.path``; the function's environment variables are set while it imports), then
reports, one line each::

    error: counter: add functionResponseType: ReportBatchItemFailures to its sqs event ...
    warning: ViewsQueue: VisibilityTimeout 30 s is under 6 x the counter timeout ...

What it looks for: a handler path that does not import; a handler that is a ``Router``, a class
or a function no lambda_kit decorator wraps; a function whose signature cannot take what its
decorator passes; the HTTP side (``check_routes``: routes osls crashes on or API Gateway refuses,
``Router`` routes no event sends to, events that reach no route, route signatures); the zip
(``check_requirements``: a package the handler's code imports, or pydantic for a ``model=``, that
the requirements, the package patterns and the Lambda runtime do not bring); calls a local run
recorded that a role denied (``lambda_kit.local.denied_calls``); a decorator that cannot process the
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
import inspect
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import sources
from .._data import mapping
from ..local import denied_calls
from ..local.config import EventSource, FunctionConfig, ServiceConfig, read_service
from ..local.intrinsics import target
from ..local.terminal import printable
from ..serverless_config import ConfigError
from ..sources.api.router import Router
from . import check_idempotency, check_requirements, check_routes
from .check_routes import Declared
from .check_sources import wiring_findings

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


def _forget(package: str) -> dict[str, Any]:
    """Take ``package`` and its submodules out of ``sys.modules``; returns them."""
    found = {name: module for name, module in sys.modules.items() if _own(name, package)}
    for name in found:
        del sys.modules[name]
    return found


@contextlib.contextmanager
def _importing_from(project_dir: str, environment: dict[str, str], package: str) -> Iterator[None]:
    """Import ``package`` from ``project_dir`` with ``environment`` set; put everything back after."""
    saved_path = list(sys.path)
    saved_env = dict(os.environ)
    shadowed = _forget(package)
    sys.path.insert(0, project_dir)
    os.environ.update(environment)
    importlib.invalidate_caches()
    try:
        yield
    finally:
        sys.path[:] = saved_path
        os.environ.clear()
        os.environ.update(saved_env)
        _forget(package)
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


COUNTERS = "lambda_kit.counters"


def _holds_counters(value: Any) -> bool:
    origin = (
        getattr(value, "__name__", "") if isinstance(value, type(sys)) else getattr(value, "__module__", "")
    )
    return isinstance(origin, str) and origin.startswith(COUNTERS)


def _imports_counters(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(alias.name.startswith(COUNTERS) for alias in node.names)
    return isinstance(node, ast.ImportFrom) and _from_counters(
        node.module or "", [alias.name for alias in node.names]
    )


def _from_counters(module: str, names: list[str]) -> bool:
    return module.startswith(COUNTERS) or (module == "lambda_kit" and "counters" in names)


def _uses_counters(module: Any) -> bool:
    """Whether the handler module imports ``lambda_kit.counters`` (or holds anything from it)."""
    if any(_holds_counters(value) for value in vars(module).values()):
        return True
    tree = _module_tree(module)
    return tree is not None and any(_imports_counters(node) for node in ast.walk(tree))


def _is_current_window(value: Any) -> bool:
    return (getattr(value, "__module__", None), getattr(value, "__name__", None)) == (
        "lambda_kit.sources.window",
        "current_window",
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
    marks: dict[str, Any] = field(default_factory=dict)  # its __lambda_kit__ ({}: no decorator)
    decorator: str | None = None  # the decorator's name, as its marks give it
    uses_counters: bool = False
    reads_window: bool = False
    returns: tuple[str, ...] = ()  # what the function's return statements return that is a mistake
    imported: bool = True
    wrapped: Any = None  # what the decorator calls: the user's function, or a Router
    routes: list[Declared] = field(default_factory=list)  # the Router's, when it calls one
    module_file: Path | None = None


NOT_IMPORTED = _Handler(imported=False)
"""The handler of a function whose handler does not import (its finding says why)."""


def _returns(function: Any) -> tuple[str, ...]:
    """What the decorated function's ``return`` statements hold that lambda_kit refuses at run time,
    as far as its source shows it: ``"batch response"`` (a dict literal with ``batchItemFailures``),
    ``"status first"`` (a tuple whose first item is an HTTP status number)."""
    code = getattr(getattr(function, "__wrapped__", None), "__code__", None)
    found = {_mistake(node.value) for node in ast.walk(_function_tree(code)) if isinstance(node, ast.Return)}
    return tuple(sorted(found - {None}))


def _mistake(value: ast.expr | None) -> str | None:
    """What a returned expression holds that lambda_kit refuses (None: nothing)."""
    if isinstance(value, ast.Dict) and "batchItemFailures" in _constants(value.keys):
        return "batch response"
    if isinstance(value, ast.Tuple) and _is_status(_constants(value.elts[:1])):
        return "status first"
    return None


def _constants(nodes: list[Any]) -> list[Any]:
    return [node.value for node in nodes if isinstance(node, ast.Constant)]


def _is_status(values: list[Any]) -> bool:
    """Whether ``values`` is one HTTP status number."""
    return [type(value) for value in values] == [int] and 100 <= values[0] <= 599


def _function_tree(code: Any) -> ast.AST:
    """The function of ``code`` parsed from its file (an empty module when that cannot be read)."""
    empty = ast.Module(body=[], type_ignores=[])
    path = getattr(code, "co_filename", None)
    try:
        with open(path, encoding="utf-8") as file:  # type: ignore[arg-type]
            tree = ast.parse(file.read(), path)
    except (OSError, SyntaxError, TypeError, UnicodeDecodeError, ValueError):
        return empty
    return next(
        (
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and min(item.lineno for item in (node, *node.decorator_list)) == code.co_firstlineno
        ),
        empty,
    )


def _import_error(function: FunctionConfig, module_name: str, exc: BaseException) -> str:
    """The finding for a handler module that does not import."""
    path = function.handler.rpartition(".")[0]
    missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    if missing and _own(module_name, missing):
        return f"handler {function.handler!r} names {path}.py, which does not exist: fix the handler path"
    reason = f"{type(exc).__name__}: {exc}".strip().splitlines()[0]
    return f"handler module {path}.py does not import ({reason}): fix the module"


def _import_handler(
    function: FunctionConfig,
    config: ServiceConfig,
    findings: list[Finding],
    declared: dict[Router, list[Declared]],
) -> _Handler:
    """The function's handler, imported with the function's environment; ``NOT_IMPORTED`` (and a
    finding) when it cannot be. ``declared``: the routes of the routers declared so far."""
    raw = function.setting("handler")
    if not isinstance(raw, str) or "." not in raw:
        findings.append(
            Finding("error", function.key, f"handler {raw!r} is not of the form path/to/module.function")
        )
        return NOT_IMPORTED
    module_name = function.module.strip(".")
    environment = _string_env(function.environment)
    environment.setdefault("AWS_REGION", os.environ.get("AWS_REGION", config.region))
    environment.setdefault("AWS_DEFAULT_REGION", os.environ.get("AWS_DEFAULT_REGION", config.region))
    with _importing_from(str(config.project_dir), environment, module_name.partition(".")[0]):
        try:
            module = importlib.import_module(module_name)
        except (Exception, SystemExit) as exc:  # anything the module raises on import is the finding
            findings.append(Finding("error", function.key, _import_error(function, module_name, exc)))
            return NOT_IMPORTED
        fn = getattr(module, function.attribute, None)
        problem = _not_a_handler(fn, module_name, function, raw)
        if problem is not None:
            findings.append(Finding("error", function.key, problem))
            return NOT_IMPORTED
        marks = getattr(fn, "__lambda_kit__", None)
        wrapped = getattr(fn, "__wrapped__", None)
        findings.extend(Finding(*found) for found in check_idempotency.findings(function, config, module))
        marks = marks if isinstance(marks, dict) else {}
        return _Handler(
            marks,
            marks.get("decorator"),
            _uses_counters(module),
            _reads_window(module),
            _returns(fn),
            wrapped=wrapped,
            routes=declared.get(wrapped, []) if isinstance(wrapped, Router) else [],
            module_file=Path(module.__file__).resolve() if getattr(module, "__file__", None) else None,
        )


def _not_a_handler(fn: Any, module_name: str, function: FunctionConfig, raw: str) -> str | None:
    """Why the object the handler path names is no function Lambda can call with (event, context)."""
    path = raw.rpartition(".")[0]
    if isinstance(fn, Router):
        return (
            f"handler {raw!r} is a Router, not a handler: Lambda would call it with the raw event and every "
            f"request fails (AttributeError); add handler = api_handler({function.attribute}) to {path}.py "
            f"and point the function at {path}.handler"
        )
    if inspect.isclass(fn):
        return (
            f"handler {raw!r} is a class: Lambda would call the class with (event, context), making an "
            "instance instead of handling the event; point the handler at a decorated function"
        )
    if not callable(fn):
        missing = f"handler module {module_name} has no function {function.attribute!r}"
        return f"{missing}: fix the handler path {raw!r}"
    return None


# ------------------------------------------------------------------ one function


@dataclass
class _Subject:
    """One function being checked, its handler as imported (``NOT_IMPORTED``: it does not import),
    the service."""

    function: FunctionConfig
    handler: _Handler
    config: ServiceConfig
    findings: list[Finding]
    zip: check_requirements.Zip | None = None
    seen: set[str] = field(default_factory=set)  # messages of the service already given (a module shared)

    def add(self, level: str, message: str, subject: str | None = None) -> None:
        self.findings.append(Finding(level, subject or self.function.key, message))


Check = Callable[[_Subject, EventSource], None]


@dataclass(frozen=True)
class Rule:
    """One mistake an event can hold: when ``broken`` says it does, a finding of ``level`` with
    ``message`` (its ``{kind}`` and ``{decorator}`` filled in)."""

    level: str
    broken: Callable[[_Subject, EventSource], bool]
    message: str

    def __call__(self, subject: _Subject, event: EventSource) -> None:
        if self.broken(subject, event):
            subject.add(self.level, self.message.format(kind=event.kind, decorator=subject.handler.decorator))


def _check_function(subject: _Subject) -> None:
    events = subject.function.events
    delivered = {event.kind: sources.for_serverless_event(event.kind) for event in events}
    processed = _processed(subject, delivered)
    _check_marks(subject, delivered)
    _check_fit(subject, delivered, processed)
    for event in events:
        _check_reporting(subject, event, delivered[event.kind], bool(processed[event.kind]))
        for check in EVENT_CHECKS.get(event.kind, ()):
            check(subject, event)
    _check_window_use(subject)
    _check_async_destination(subject, delivered)
    _check_returns(subject)
    _check_http(subject)
    _check_signature(subject)
    _check_zip(subject)


def _where(subject: _Subject, function: Any) -> str:
    """``handlers/api.py:12`` of a function (its name when its file is not the project's)."""
    code = getattr(inspect.unwrap(function), "__code__", None)
    if code is None:
        return getattr(function, "__qualname__", repr(function))
    try:
        path = Path(code.co_filename).resolve().relative_to(subject.config.project_dir)
    except ValueError:
        return getattr(function, "__qualname__", repr(function))
    return f"{path.as_posix()}:{code.co_firstlineno}"


def http_events(subject: _Subject) -> list[check_routes.HttpEvent]:
    """The function's http / httpApi events as API Gateway routes them; an error for each one osls
    or API Gateway refuses."""
    found = []
    for event in subject.function.events:
        if event.kind in check_routes.HTTP_KINDS:
            read, problem = check_routes.read_event(subject.function, event)
            if problem is not None:
                subject.add("error", problem)
            if read is not None:
                found.append(read)
    return found


def _check_http(subject: _Subject) -> None:
    events = http_events(subject)
    routes = subject.handler.routes
    if not isinstance(subject.handler.wrapped, Router) or subject.handler.decorator != "api_handler":
        return
    catch_all = any(event.kind in check_routes.CATCH_ALL_KINDS for event in subject.function.events)
    where = lambda function: _where(subject, function)  # noqa: E731
    check_routes.check_routes(routes, events, catch_all, where, subject.add)
    check_routes.check_signatures(routes, where, subject.add)


CALLED_WITH = {"api_handler": "(request, context)"}
"""What each decorator calls the function with, where not (payload, context)."""


def _check_signature(subject: _Subject) -> None:
    wrapped = subject.handler.wrapped
    if not subject.handler.decorator or wrapped is None or isinstance(wrapped, Router):
        return
    written = check_routes.cannot_take_two(wrapped)
    if written is not None:
        called = CALLED_WITH.get(subject.handler.decorator, "(payload, context)")
        fails = "request answers 500" if subject.handler.decorator == "api_handler" else "record fails"
        subject.add(
            "error",
            f"{written} ({_where(subject, wrapped)}) cannot be called as {subject.handler.decorator} calls "
            "it, with "
            f"{called}: every {fails}; "
            f"write def {getattr(wrapped, '__name__', 'handler')}{called.replace('payload', 'message')}",
        )


def _models(subject: _Subject) -> list[str]:
    """Each ``model=`` the function's code gives, and where."""
    found = []
    if subject.handler.marks.get("model"):
        where = _where(subject, subject.handler.wrapped)
        found.append(f"model={subject.handler.marks['model']} on {subject.handler.decorator} ({where})")
    for route in subject.handler.routes:
        if route.model is not None:
            name = getattr(route.model, "__name__", None) or repr(route.model)
            methods = "/".join(route.methods)
            found.append(
                f"model={name} on route {methods} {route.template} ({_where(subject, route.function)})"
            )
    return found


def _check_zip(subject: _Subject) -> None:
    zip_ = subject.zip
    if zip_ is None or not subject.handler.imported:
        return
    messages = check_requirements.model_findings(zip_, _models(subject))
    if subject.handler.module_file is not None:
        messages += check_requirements.import_findings(zip_, subject.function, subject.handler.module_file)
    for message in messages:
        if message not in subject.seen:
            subject.seen.add(message)
            subject.add("error", message)


RETURN_MISTAKES = {
    "batch response": (
        'a per-record function returns {{"batchItemFailures": ...}}: {decorator} builds the batch '
        "response itself and fails the record; raise to fail this record"
    ),
    "status first": (
        "returns (status, body): {decorator} reads a tuple as (body, status[, headers]); put the body "
        'first, or return {{"statusCode": ..., "body": ...}}'
    ),
}


def _check_returns(subject: _Subject) -> None:
    if not subject.handler.decorator:  # a handler that does not import has no decorator either
        return
    api = subject.handler.decorator == "api_handler"
    for mistake in subject.handler.returns:
        if (mistake == "status first") == api:
            subject.add("error", RETURN_MISTAKES[mistake].format(decorator=subject.handler.decorator))


def _processed(subject: _Subject, delivered: dict[str, list[Any]]) -> dict[str, set[str]]:
    """What the handler processes of each event: the sources it delivers, or carries (S3
    notifications in SQS messages); the delivering source's traits apply to both."""
    handled = set(subject.handler.marks.get("sources") or ())
    return {
        kind: handled & {s.name for s in [*found, *sources.carried_by(kind)]}
        for kind, found in delivered.items()
    }


def _check_marks(subject: _Subject, delivered: dict[str, list[Any]]) -> None:
    if subject.handler.imported and not subject.handler.marks and any(delivered.values()):
        fits = " or ".join(dict.fromkeys(s.decorator for found in delivered.values() for s in found))
        subject.add(
            "error",
            f"handler {subject.function.handler!r} is not a lambda_kit decorated function: its events' "
            "records, retries and partial failures are not handled (and check cannot see them); decorate "
            f"it with @{fits}",
        )


WHAT_DELIVERS = {"url": ("a Function URL (url:)", "remove url")}
"""How a mismatch names an event kind and its fix, where not ``<kind> events`` / ``move the event``."""


def _check_fit(subject: _Subject, delivered: dict[str, list[Any]], processed: dict[str, set[str]]) -> None:
    """The decorator processes every kind of event the function has."""
    unfit = (
        sorted(kind for kind, found in delivered.items() if found and not processed[kind])
        if subject.handler.decorator
        else []
    )
    for kind in unfit:
        fits = " or ".join(dict.fromkeys(s.decorator for s in delivered[kind]))
        what, fix = WHAT_DELIVERS.get(kind, (f"{kind} events", "move the event"))
        subject.add(
            "error",
            f"handler is a {subject.handler.decorator} but the function has {what}: use {fits} or {fix}",
        )


def _check_reporting(subject: _Subject, event: EventSource, found: list[Any], processed: bool) -> None:
    reports = processed and any(s.reports_batch_failures for s in found)
    if reports and event.spec.get("functionResponseType") != RBIF:
        subject.add(
            "error",
            f"add functionResponseType: {RBIF} to its {event.kind} event: without it Lambda ignores the "
            "failures "
            f"the {subject.handler.decorator} reports and treats failed records as processed",
        )


def _check_async_destination(subject: _Subject, delivered: dict[str, list[Any]]) -> None:
    kinds = sorted(kind for kind, found in delivered.items() if any(s.asynchronous for s in found))
    destinations = mapping(subject.function.setting("destinations"))
    if kinds and not (destinations.get("onFailure") or subject.function.setting("onError")):
        subject.add(
            "error",
            f"add destinations.onFailure (or onError) to the function: its {', '.join(kinds)} events "
            "invoke it "
            "asynchronously and failed invocations are dropped after Lambda's retries",
        )


def _latest(subject: _Subject, event: EventSource) -> bool:
    return event.spec.get("startingPosition") == "LATEST"


STARTING_POSITION = (
    Rule(
        "error",
        lambda subject, event: _latest(subject, event) and subject.handler.uses_counters,
        "its {kind} event starts at LATEST but the handler counts with lambda_kit.counters: records "
        "written before the mapping starts are never counted; use TRIM_HORIZON",
    ),
    Rule(
        "warning",
        lambda subject, event: _latest(subject, event) and not subject.handler.uses_counters,
        "its {kind} event starts at LATEST: records written before the mapping starts are skipped; use "
        "TRIM_HORIZON unless that is intended",
    ),
)


# --- streams and Kafka ---


def _unlimited_retries(spec: dict[str, Any]) -> bool:
    return spec.get("maximumRetryAttempts", -1) == -1 and spec.get("maximumRecordAgeInSeconds", -1) == -1


def _requeues_dynamodb(subject: _Subject, event: EventSource) -> bool:
    names = [source.name for source in subject.config.sources_of(event)]
    return subject.handler.marks.get("on_failure") == "requeue" and names == ["dynamodb"]


STREAM_RULES = (
    Rule(
        "error",
        lambda subject, event: not mapping(event.spec.get("destinations")).get("onFailure"),
        "add destinations.onFailure (an SQS queue or SNS topic) to its stream event: records that exhaust "
        "their retries are dropped without a trace",
    ),
    Rule(
        "warning",
        lambda subject, event: _unlimited_retries(event.spec),
        "set maximumRetryAttempts on its stream event: retries are unlimited by default, so one failing "
        "record blocks its shard until it expires",
    ),
    *STARTING_POSITION,
    Rule(
        "error",
        _requeues_dynamodb,
        "on_failure='requeue' only works on Kinesis streams: use on_failure='stop' for its DynamoDB "
        "stream event",
    ),
)


KAFKA_DESTINATION_SETTING = {
    "kafka": "onFailureDestination",
    "msk": "{where}.DestinationConfig.OnFailure.Destination (the msk event has no setting for it)",
}
"""Where an msk / kafka event's on-failure destination is set."""


def _kafka_extension(subject: _Subject, event: EventSource) -> tuple[str, dict[str, Any]]:
    """An ``msk`` / ``kafka`` event's ``resources.extensions.<its event source mapping>.Properties``
    (the framework has no setting for FunctionResponseTypes, and none for an msk event's on-failure
    destination): where it is, what it adds."""
    logical_id = _kafka_mapping_id(subject.function.key, event.kind, event.spec)
    extension = mapping(subject.config.extensions.get(logical_id or "", {}).get("Properties"))
    return f"resources.extensions.{logical_id or '<its event source mapping>'}.Properties", extension


def _check_kafka_destination(subject: _Subject, event: EventSource) -> None:
    where, extension = _kafka_extension(subject, event)
    if not _kafka_destination(event.kind, event.spec, extension):
        setting = KAFKA_DESTINATION_SETTING[event.kind].format(where=where)
        subject.add(
            "error",
            f"add an on-failure destination to its {event.kind} event ({setting}): a batch that keeps "
            "failing blocks its partitions until its records expire, and is then dropped",
        )


def _check_kafka_reporting(subject: _Subject, event: EventSource) -> None:
    where, extension = _kafka_extension(subject, event)
    reports = subject.handler.marks.get("on_failure") == "report"
    if reports and not _provisioned_reporting(event.spec, extension):
        subject.add(
            "error",
            "kafka_handler(on_failure='report') returns batchItemFailures, which Lambda reads only in "
            f"provisioned mode with {RBIF}: add provisionedPollerConfig to its {event.kind} event and "
            f"FunctionResponseTypes: [{RBIF}] to {where}, or use on_failure='raise'; without them Lambda "
            "treats failed records as processed",
        )


KAFKA_CHECKS = (_check_kafka_destination, _check_kafka_reporting, *STARTING_POSITION)


def _kafka_destination(kind: str, spec: dict[str, Any], extension: dict[str, Any]) -> Any:
    if kind == "kafka" and spec.get("onFailureDestination"):
        return spec["onFailureDestination"]
    return mapping(mapping(extension.get("DestinationConfig")).get("OnFailure")).get("Destination")


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
TRANSFORMATIONS = ("input", "inputPath", "inputTransformer")


def _check_transformation(subject: _Subject, event: EventSource) -> None:
    """An EventBridge rule with an input transformation hands the function something else than
    the EventBridge event, which its decorator refuses."""
    changed = [key for key in TRANSFORMATIONS if event.spec.get(key) is not None]
    if changed and subject.handler.decorator in ("eventbridge_handler", "s3_handler"):
        subject.add(
            "error",
            f"its eventBridge event sets {changed[0]}, so the function receives that instead of the "
            f"EventBridge event and the {subject.handler.decorator} refuses every invocation: "
            f"remove {changed[0]}",
        )


def _wider_than_s3_objects(subject: _Subject, event: EventSource) -> bool:
    pattern = mapping(event.spec.get("pattern"))
    detail_type = pattern.get("detail-type")
    narrow = isinstance(detail_type, list) and bool(detail_type) and set(detail_type) <= S3_OBJECT_EVENTS
    return subject.handler.decorator == "s3_handler" and not (pattern.get("source") == ["aws.s3"] and narrow)


EVENTBRIDGE_RULES: tuple[Check, ...] = (
    # A rule invokes the function asynchronously (a failure is kept by the function's on-failure
    # destination); the rule's own dead-letter queue keeps what it could not hand to Lambda at all.
    Rule(
        "warning",
        lambda subject, event: not event.spec.get("deadLetterQueueArn"),
        "add deadLetterQueueArn to its eventBridge event: events EventBridge cannot hand to the function "
        "(function deleted, permission missing) are dropped after its retries (24 h by default)",
    ),
    _check_transformation,
    Rule(
        "error",
        _wider_than_s3_objects,
        "its eventBridge pattern lets through events the s3_handler refuses: match source: [aws.s3] and "
        "detail-type: [Object Created] and/or [Object Deleted]",
    ),
)


def _check_visibility(subject: _Subject, event: EventSource) -> None:
    queues = subject.config.of_type(QUEUE)
    queue = _queue_of(event.spec.get("arn"), queues)
    visibility = (
        mapping(queues[queue].get("Properties")).get("VisibilityTimeout", DEFAULT_VISIBILITY_TIMEOUT)
        if queue
        else None
    )
    timeout = subject.function.timeout
    if not _whole(visibility) or timeout is None or visibility >= 6 * timeout:
        return
    if visibility < timeout:
        subject.add(
            "error",
            f"VisibilityTimeout {visibility} s is shorter than the {subject.function.key} timeout "
            f"({timeout:g} s): Lambda rejects the event source; set it to at least {6 * timeout:g}",
            queue,
        )
    else:
        subject.add(
            "warning",
            f"VisibilityTimeout {visibility} s is under 6 x the {subject.function.key} timeout "
            f"({timeout:g} s): "
            "throttled batches may be received again while still in flight; set it to at least "
            f"{6 * timeout:g}",
            queue,
        )


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# --- tumbling windows and CloudWatch Logs data on a stream ---

MAX_TUMBLING_WINDOW = 900  # seconds: Lambda's range is 0 (no window) to 900


def _window_seconds(spec: dict[str, Any]) -> Any:
    return spec.get("tumblingWindowInSeconds", 0)


def _windowed(event: EventSource) -> bool:
    seconds = _window_seconds(event.spec)
    return _whole(seconds) and 0 < seconds <= MAX_TUMBLING_WINDOW


def _check_window(subject: _Subject, event: EventSource) -> None:
    seconds = _window_seconds(event.spec)
    if isinstance(seconds, str) and "${" in seconds:  # a variable: the framework's to check
        return
    if not _whole(seconds) or not 0 <= seconds <= MAX_TUMBLING_WINDOW:
        subject.add(
            "error",
            f"tumblingWindowInSeconds {seconds!r} on its stream event is not a whole number of seconds "
            f"from 0 to {MAX_TUMBLING_WINDOW}: Lambda rejects the event source",
        )
        return
    for rule in WINDOW_RULES:
        rule(subject, event)


def _state_without_end(subject: _Subject, event: EventSource) -> bool:
    marks = subject.handler.marks
    return (
        _windowed(event)
        and subject.handler.reads_window
        and subject.handler.decorator == "stream_handler"
        and not marks.get("on_window_end")
    )


WINDOW_RULES = (
    Rule(
        "warning",
        lambda subject, event: _windowed(event) and subject.handler.marks.get("on_failure") == "requeue",
        "on_failure='requeue' with a tumbling window: a requeued record comes back in a later window and "
        "is counted there; use on_failure='stop' to keep each record in its own window",
    ),
    Rule(
        "warning",
        _state_without_end,
        "the handler keeps a window state but has no on_window_end: the window's last invocation may "
        "carry no records, and after it Lambda drops the state; pass stream_handler(on_window_end=...) to "
        "act on the final state",
    ),
)


def _check_window_use(subject: _Subject) -> None:
    windowed = any(_window_seconds(event.spec) for event in subject.function.events)
    if subject.handler.reads_window and not windowed:
        subject.add(
            "error",
            "the handler reads current_window() but no stream event of the function sets "
            "tumblingWindowInSeconds: current_window() is None and every record fails; set "
            "tumblingWindowInSeconds or drop the window",
        )


def _check_log_stream(subject: _Subject, event: EventSource) -> None:
    """A stream a subscription filter fills holds gzip-compressed log data: ``json=False`` hands
    the function those bytes instead of one call per log event."""
    stream = target(event.spec.get("arn"))
    raw = subject.handler.decorator == "stream_handler" and not subject.handler.marks.get("json", True)
    if (
        raw
        and stream
        and stream in {target(f.get("DestinationArn")) for f in _subscription_filters(subject.config)}
    ):
        subject.add(
            "warning",
            f"a subscription filter puts CloudWatch Logs data on {stream}, but the handler is "
            "stream_handler(json=False): it gets the gzip-compressed messages; leave json on for one "
            "call per log event",
        )


EVENT_CHECKS: dict[str, tuple[Check, ...]] = {
    "sqs": (_check_visibility,),
    "stream": (*STREAM_RULES, _check_window, _check_log_stream),
    "msk": KAFKA_CHECKS,
    "kafka": KAFKA_CHECKS,
    "sns": (
        Rule(
            "warning",
            lambda subject, event: not isinstance(event.spec.get("redrivePolicy"), dict),
            "add redrivePolicy (a dead-letter queue) to its sns event: messages SNS cannot deliver to the "
            "function are dropped",
        ),
    ),
    "eventBridge": EVENTBRIDGE_RULES,
    "alb": (
        Rule(
            "warning",
            lambda subject, event: event.spec.get("multiValueHeaders") is not True,
            "set multiValueHeaders: true on its alb event: without it the load balancer passes only the "
            "last value of a repeated query parameter or header (request.query_all holds one value each)",
        ),
    ),
    "url": (
        Rule(
            "error",
            lambda subject, event: str(event.spec.get("invokeMode", "")).upper() == "RESPONSE_STREAM",
            "its url has invokeMode: RESPONSE_STREAM, but Lambda streams responses only from Node.js and "
            "custom runtimes: the response api_handler returns (statusCode, headers, body) would not be "
            "read as an HTTP response; remove invokeMode (BUFFERED is the default)",
        ),
    ),
}
"""The checks of one kind of event, in the order their findings print, beyond what every event
gets from the registry's traits (partial batch responses, asynchronous invocation, the decorator
that fits)."""


# ------------------------------------------------------------------ the service


MAX_SUBSCRIPTION_FILTERS = 2  # per log group, a CloudWatch Logs quota that cannot be raised


def _subscription_filters(config: ServiceConfig) -> list[dict[str, Any]]:
    return [mapping(resource.get("Properties")) for resource in config.of_type(SUBSCRIPTION_FILTER).values()]


def _delivers(event: EventSource, source: str) -> bool:
    return any(found.name == source for found in sources.for_serverless_event(event.kind))


def _subscribed_groups(function: FunctionConfig) -> list[str]:
    """The log groups the function's ``cloudwatchLog`` events subscribe it to."""
    groups = [
        event.spec.get("logGroup", event.spec.get("arn"))
        for event in function.events
        if _delivers(event, "cloudwatch_logs")
    ]
    return [group for group in groups if isinstance(group, str)]


def _log_subscription_findings(config: ServiceConfig) -> list[Finding]:
    """A function subscribed to its own log group; more subscription filters on a log group than
    CloudWatch Logs allows (the functions' and those declared as resources)."""
    subscriptions = [
        (function, group) for function in config.functions.values() for group in _subscribed_groups(function)
    ]
    return _own_group_findings(subscriptions, config) + _filter_count_findings(
        [group for _, group in subscriptions] + _filtered_groups(config)
    )


def _own_group_findings(
    subscriptions: list[tuple[FunctionConfig, str]], config: ServiceConfig
) -> list[Finding]:
    return [
        Finding(
            "error",
            function.key,
            f"its cloudwatchLog event subscribes it to its own log group {group}: every invocation writes "
            "lines that invoke it again, without end; subscribe another function",
        )
        for function, group in subscriptions
        if _normalized(group, config) in _own_log_groups(function, config)
    ]


def _filter_count_findings(groups: list[str]) -> list[Finding]:
    return [
        Finding(
            "error",
            group,
            f"{count} subscription filters on this log group: CloudWatch Logs allows "
            f"{MAX_SUBSCRIPTION_FILTERS} per log group, so the deploy fails; merge the consumers or "
            "subscribe a stream they share",
        )
        for group, count in Counter(groups).items()
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
            group = mapping(config.resources.get(referenced, {}).get("Properties")).get("LogGroupName")
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
    """The queue (logical id) an ARN-ish value names: a reference, its logical id, or an ARN or a
    name ending in its queue name (``{"arn": ...}``: the same of that)."""
    if isinstance(value, dict) and "arn" in value:
        return _queue_of(value["arn"], queues)
    named = value if isinstance(value, str) else target(value)
    if named in queues:
        return named
    return next((logical_id for logical_id, queue in queues.items() if _names_queue(value, queue)), None)


def _names_queue(value: Any, queue: dict[str, Any]) -> bool:
    name = mapping(queue.get("Properties")).get("QueueName")
    return isinstance(value, str) and isinstance(name, str) and (value.endswith(":" + name) or value == name)


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
    yield mapping(function.setting("destinations")).get("onFailure")
    yield function.setting("onError")
    for event in function.events:
        redrive = mapping(event.spec.get("redrivePolicy"))
        yield redrive.get("deadLetterTargetArn")
        yield redrive.get("deadLetterTargetRef")
        yield mapping(event.spec.get("destinations")).get("onFailure")
        yield event.spec.get("deadLetterQueueArn")  # an eventBridge rule target's DLQ


def _dead_letter_queues(config: ServiceConfig, queues: dict[str, dict[str, Any]]) -> set[str]:
    """Queues that receive failures: they need no redrive policy of their own."""
    targets = [*_targets_in(config.resources)]
    targets += [found for function in config.functions.values() for found in _function_targets(function)]
    return {q for q in (_queue_of(t, queues) for t in targets if t) if q is not None}


def _consumed_queues(config: ServiceConfig, queues: dict[str, dict[str, Any]]) -> set[str | None]:
    events = [event for function in config.functions.values() for event in function.events]
    return {_queue_of(event.spec.get("arn"), queues) for event in events if _delivers(event, "sqs")}


def _queue_findings(config: ServiceConfig) -> list[Finding]:
    """Each queue without a redrive policy that is no dead-letter queue: an error when a function
    consumes it, a warning otherwise."""
    queues = config.of_type(QUEUE)
    guarded = _dead_letter_queues(config, queues) | {
        name for name, q in queues.items() if mapping(q.get("Properties")).get("RedrivePolicy")
    }
    consumed = _consumed_queues(config, queues)
    return [_unguarded(name, name in consumed) for name in queues if name not in guarded]


def _unguarded(name: str, consumed: bool) -> Finding:
    if consumed:
        return Finding(
            "error",
            name,
            "add a RedrivePolicy (deadLetterTargetArn + maxReceiveCount) to the queue: a message that "
            "always fails is retried until it expires",
        )
    return Finding(
        "warning",
        name,
        "queue has no RedrivePolicy and is no function's dead-letter target: add one, or point a redrive "
        "policy / destination at it",
    )


def check(path: str | os.PathLike[str] = "serverless.yml") -> list[Finding]:
    """The findings for the service at ``path``; raises ``ConfigError`` if it cannot be read."""
    return _check(path)[0]


def _check(path: str | os.PathLike[str]) -> tuple[list[Finding], int]:
    config = read_service(path)
    if not config.functions:
        raise ConfigError(f"{os.fspath(path)} declares no functions: nothing to check")
    if not config.service:
        raise ConfigError(
            f"{os.fspath(path)} names no service: add service: <name> (the framework requires it)"
        )
    findings: list[Finding] = []
    zip_ = check_requirements.service_zip(config)
    seen: set[str] = set()
    marks: dict[str, dict[str, Any]] = {}  # each imported handler's: how authorizers, Firehose are wired
    with check_routes.recording_routes() as declared:
        for function in config.functions.values():
            handler = _import_handler(function, config, findings, declared)
            marks.update({function.key: handler.marks} if handler.imported else {})
            _check_function(_Subject(function, handler, config, findings, zip_, seen))
    findings += [Finding(*found) for found in wiring_findings(config, marks)]
    service = _log_subscription_findings(config) + _queue_findings(config)
    service += _requirement_problems(zip_) + _duplicate_routes(config) + _denied_calls(config)
    return findings + service, len(config.functions)


def _requirement_problems(zip_: check_requirements.Zip | None) -> list[Finding]:
    return [Finding("warning", zip_.requirements, problem) for problem in zip_.problems] if zip_ else []


def _duplicate_routes(config: ServiceConfig) -> list[Finding]:
    events = []
    for function in config.functions.values():
        for event in function.events:
            if event.kind in check_routes.HTTP_KINDS:
                read, _ = check_routes.read_event(function, event)
                events += [(function.key, read)] if read is not None else []
    return [Finding("error", name, message) for name, message in check_routes.duplicate_routes(events)]


def _denied_calls(config: ServiceConfig) -> list[Finding]:
    """The calls a local run recorded that the function's role denied (``lambda_kit.local.denied_calls``)."""
    recorded = denied_calls.read(config.path)
    if recorded is None:
        return []
    if recorded.problem:
        return [Finding("warning", "IAM", recorded.problem)]
    if not recorded.current:
        count = len(recorded.denied)
        return (
            [
                Finding(
                    "warning",
                    "IAM",
                    f"the local run of {recorded.started} recorded {count} denied call{'s' * (count != 1)} "
                    "under an older serverless.yml: run lambda-kit local again to check them against the "
                    "roles as they are now",
                )
            ]
            if count
            else []
        )
    return [
        _denied_finding(config, denied) for denied in recorded.denied if denied.function in config.functions
    ]


def _denied_finding(config: ServiceConfig, denied: denied_calls.Denied) -> Finding:
    function = config.functions[denied.function]
    role = function.setting("role") or "provider.iam.role.statements"
    resource = f"!GetAtt {denied.resource_ref}" if denied.resource_ref else denied.resource
    trace = f", trace {denied.trace_id}" if denied.trace_id else ""
    return Finding(
        "error",
        function.key,
        f"the local run called {denied.action} on {denied.resource} ({denied.calls} call"
        f"{'s' * (denied.calls != 1)}{trace}), which its role denies: on AWS it fails with "
        f"AccessDeniedException; allow it in {role} (Effect: Allow, Action: {denied.action}, "
        f"Resource: {resource})",
    )


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
    print(
        printable(
            f"lambda-kit check {'failed' if errors else 'ok'}: {path}: {functions} functions, "
            f"{_count(errors, 'error')}, {_count(len(findings) - errors, 'warning')}"
        )
    )
    return 1 if errors else 0


def _count(number: int, what: str) -> str:
    return f"{number} {what}{'s' * (number != 1)}"
