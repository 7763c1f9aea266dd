"""serverless.yml as lambda_kit reads it: the one model ``lambda-kit check``, ``invoke`` and the
local stack share (functions, their events, the resources).

``read_service(path)`` reads the file as written: ``${...}`` variables stay in place (``check``
reports values as the user wrote them) and whatever the local stack could not run is listed in
``problems`` instead of raised. ``load_service(path, stage=...)`` resolves the Serverless
variables (``${self:...}``, ``${sls:stage}``, ``${opt:stage, 'dev'}``, ``${aws:region}``,
``${env:X, default}``) and raises the first problem (a ``ConfigError``, one line naming what to
fix). CloudFormation intrinsics (``Ref``, ``Fn::GetAtt``, ``Fn::Sub`` ...) stay in place: they are
resolved once the resources exist (``resources.py``).

Short forms take their long form (``sqs: arn`` -> ``{"arn": arn}``, ``httpApi: 'GET /x'`` ->
``{"method": "GET", "path": "/x"}``); a Function URL (the function's ``url:``) is an event of
kind ``url``: it delivers HTTP requests. Which sources an event delivers is the registry's answer
(``sources_of``), the one place a stream is told Kinesis or DynamoDB.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import sources
from .._data import mapping
from ..serverless_config import ConfigError, load
from .intrinsics import intrinsic, target
from .variables import Variables

DEFAULT_TIMEOUT = 6  # the framework's default, seconds
DEFAULT_MEMORY = 1024  # the framework's default, MB
RESOURCE_SECTIONS = ("Resources", "Outputs", "extensions")
"""The sections of ``resources`` lambda_kit reads."""
LOCAL_SECTIONS = ("functions.", "provider.environment", "resources.Resources.", "service")
"""Where an unresolved variable stops the local stack."""


@dataclass
class EventSource:
    """One entry of a function's ``events``: ``kind`` is its key (sqs, stream, sns, httpApi, ...)."""

    kind: str
    spec: dict[str, Any]
    index: int


@dataclass
class FunctionConfig:
    key: str  # the name under `functions:`
    name: str  # the deployed name: <service>-<stage>-<key> unless `name:` is set
    handler: str  # "handlers/ingest.handler"
    timeout: float | None  # None: not a number (a variable check cannot read)
    memory: int | None
    environment: dict[str, Any]  # provider + function; values may still hold intrinsics
    events: list[EventSource]
    raw: dict[str, Any]

    @property
    def module(self) -> str:
        path, _, _ = self.handler.rpartition(".")
        return path.replace("/", ".").replace("\\", ".")

    @property
    def attribute(self) -> str:
        return self.handler.rpartition(".")[2]

    def setting(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)


@dataclass
class ServiceConfig:
    path: Path
    service: str  # "" when the file names none
    stage: str
    region: str
    provider: dict[str, Any]
    functions: dict[str, FunctionConfig]
    resources: dict[str, dict[str, Any]]  # logical id -> {"Type": ..., "Properties": ...}
    outputs: dict[str, Any] = field(default_factory=dict)
    unresolved: list[tuple[str, str]] = field(default_factory=list)
    custom: dict[str, Any] = field(default_factory=dict)  # the file's `custom:` section
    extensions: dict[str, dict[str, Any]] = field(default_factory=dict)  # `resources.extensions`
    problems: list[str] = field(default_factory=list)  # what the local stack cannot run, one line each
    package: dict[str, Any] = field(default_factory=dict)  # the file's `package:` section
    plugins: list[str] = field(default_factory=list)  # the plugins it names

    @property
    def project_dir(self) -> Path:
        return self.path.parent

    def function(self, key: str) -> FunctionConfig:
        found = self.functions.get(key) or next((f for f in self.functions.values() if f.name == key), None)
        if found is None:
            known = ", ".join(sorted(self.functions)) or "none"
            raise ConfigError(f"unknown function {key!r}: {self.path.name} declares {known}")
        return found

    def of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        """The resources of one CloudFormation type, by logical id."""
        return {
            name: resource
            for name, resource in self.resources.items()
            if resource.get("Type") == resource_type
        }

    def resource_type(self, value: Any) -> str:
        """The type of the resource ``value`` references (``!GetAtt Table.StreamArn``), or ""."""
        resource = self.resources.get(target(value))
        return str(resource.get("Type") or "") if resource else ""

    def sources_of(self, event: EventSource) -> list[type[sources.Source]]:
        """The sources ``event`` delivers (a stream: the one its type, ARN or resource says)."""
        return sources.delivered_by(event.kind, event.spec, self.resource_type(event.spec.get("arn")))


def read_service(path: str | os.PathLike[str] = "serverless.yml") -> ServiceConfig:
    """The service at ``path`` as written (variables unresolved), its ``problems`` listed;
    ``ConfigError`` only when the file cannot be read as YAML."""
    document = load(path)
    return _Reader(Path(path).resolve(), Variables(document, None, None)).service(document)


def load_service(
    path: str | os.PathLike[str] = "serverless.yml", stage: str | None = None, region: str | None = None
) -> ServiceConfig:
    """The service at ``path`` with its variables resolved; ``ConfigError`` (one line naming what to
    fix) if the local stack cannot use it."""
    document = load(path)
    variables = Variables(document, stage, region)
    config = _Reader(Path(path).resolve(), variables).service(variables.resolve(document))
    config.problems += [
        f"{config.path.name}: cannot resolve {variable} at {where} locally: give it a default, e.g. "
        "${env:X, 'value'}"
        for where, variable in variables.unresolved
        if where.startswith(LOCAL_SECTIONS)
    ]
    if config.problems:
        raise ConfigError(config.problems[0])
    return config


class _Reader:
    """Builds the model from the document, noting each problem and reading on."""

    def __init__(self, path: Path, variables: Variables) -> None:
        self.path = path
        self.name = path.name
        self.variables = variables
        self.problems: list[str] = []

    def problem(self, text: str) -> None:
        self.problems.append(f"{self.name}: {text}")

    def mapping(self, value: Any, problem: str) -> dict[str, Any]:
        """``value`` if a mapping; {} for nothing, or {} and ``problem`` for anything else."""
        if isinstance(value, dict):
            return value
        if value is not None:
            self.problem(problem)
        return {}

    def merged(self, value: Any, problem: str) -> dict[str, Any]:
        """A mapping, or a list of mappings merged (the framework takes both for functions and
        resources)."""
        if not isinstance(value, list):
            return self.mapping(value, problem)
        merged: dict[str, Any] = {}
        for part in value:
            merged.update(self.mapping(part, problem))
        return merged

    def service(self, document: dict[str, Any]) -> ServiceConfig:
        service = _service_name(document.get("service"))
        if not service:
            self.problem("`service` must be a non-empty string")
        provider = self.mapping(document.get("provider"), "`provider` must be a mapping")
        functions = self.functions(document.get("functions"), provider, service)
        sections = self.sections(document.get("resources"))
        resources = self.resources(sections.get("Resources", {}))
        return ServiceConfig(
            path=self.path,
            service=service,
            stage=self.variables.stage,
            region=self.variables.region,
            provider=provider,
            functions=functions,
            resources=resources,
            outputs=sections.get("Outputs", {}),
            unresolved=self.variables.unresolved,
            custom=dict(mapping(document.get("custom"))),
            extensions={k: v for k, v in sections.get("extensions", {}).items() if isinstance(v, dict)},
            problems=self.problems,
            package=dict(mapping(document.get("package"))),
            plugins=_plugins(document.get("plugins")),
        )

    def functions(self, value: Any, provider: dict[str, Any], service: str) -> dict[str, FunctionConfig]:
        declared = self.merged(value, "`functions` must be a mapping of function name to settings")
        if not declared:
            self.problem("no functions declared under `functions`")
        environment = self.mapping(provider.get("environment"), "provider.environment must be a mapping")
        defaults = {
            "timeout": provider.get("timeout", DEFAULT_TIMEOUT),
            "memorySize": provider.get("memorySize", DEFAULT_MEMORY),
        }
        return {
            str(key): self.function(str(key), settings, environment, defaults, service)
            for key, settings in declared.items()
        }

    def function(
        self, key: str, value: Any, environment: dict[str, Any], defaults: dict[str, Any], service: str
    ) -> FunctionConfig:
        settings = self.mapping(value, f"function {key!r} must be a mapping with a `handler`")
        handler = settings.get("handler")
        if isinstance(value, dict) and not (isinstance(handler, str) and "." in handler):
            self.problem(f"function {key!r} needs `handler: path/module.function` (got {handler!r})")
        own = self.mapping(settings.get("environment"), f"functions.{key}.environment must be a mapping")
        timeout, memory = self.sizes(key, settings, defaults)
        return FunctionConfig(
            key=key,
            name=str(settings.get("name") or f"{service}-{self.variables.stage}-{key}"),
            handler=handler if isinstance(handler, str) else "",
            timeout=timeout,
            memory=memory,
            environment={**environment, **own},
            events=self.events(key, settings),
            raw=settings,
        )

    def sizes(
        self, key: str, settings: dict[str, Any], defaults: dict[str, Any]
    ) -> tuple[float | None, int | None]:
        """The function's timeout (seconds) and memory (MB); None for a value that is no number."""
        timeout = _number(settings.get("timeout", defaults["timeout"]), float)
        memory = _number(settings.get("memorySize", defaults["memorySize"]), int)
        if timeout is None or memory is None:
            self.problem(f"functions.{key}: timeout and memorySize must be numbers")
        return timeout, memory

    def events(self, key: str, settings: dict[str, Any]) -> list[EventSource]:
        entries = settings.get("events") or []
        if not isinstance(entries, list):
            self.problem(f"functions.{key}.events must be a list")
            entries = []
        events = [self.event(key, index, entry) for index, entry in enumerate(entries)]
        return [event for event in events if event is not None] + _url_event(
            settings.get("url"), len(entries)
        )

    def event(self, key: str, index: int, entry: Any) -> EventSource | None:
        if isinstance(entry, dict) and len(entry) == 1:
            ((kind, spec),) = entry.items()
            return EventSource(str(kind), event_spec(str(kind), spec), index)
        self.problem(
            f"functions.{key}.events[{index}] must be a mapping with one key (sqs, stream, sns, httpApi ...)"
        )
        return None

    def sections(self, value: Any) -> dict[str, dict[str, Any]]:
        """``resources`` (a mapping, or a list of them as the framework also takes) by section
        (Resources, Outputs, extensions), each merged over the blocks."""
        merged: dict[str, dict[str, Any]] = {}
        for block in value if isinstance(value, list) else [value]:
            for section, content in self.mapping(block, "`resources` must be a mapping").items():
                if section in RESOURCE_SECTIONS:
                    problem = f"resources.{section} must be a mapping of logical id to resource"
                    merged.setdefault(section, {}).update(self.mapping(content, problem))
        return merged

    def resources(self, declared: dict[str, Any]) -> dict[str, dict[str, Any]]:
        for logical, resource in declared.items():
            if not isinstance(resource, dict) or not isinstance(resource.get("Type"), str):
                self.problem(f"resources.Resources.{logical} needs a `Type`")
        return {
            str(logical): resource for logical, resource in declared.items() if isinstance(resource, dict)
        }


def _plugins(value: Any) -> list[str]:
    """The plugins named (``plugins: [a, b]`` or ``plugins: {modules: [a, b]}``)."""
    names = value.get("modules") if isinstance(value, dict) else value
    return [str(name) for name in names] if isinstance(names, list) else []


def _url_event(url: Any, index: int) -> list[EventSource]:
    """A Function URL (the function's ``url:``) as the event it is: it delivers HTTP requests."""
    return [EventSource("url", dict(mapping(url)), index)] if url else []


def _service_name(value: Any) -> str:
    if isinstance(value, dict):  # the old `service: {name: ...}` form
        value = value.get("name")
    return value if isinstance(value, str) else ""


def _number(value: Any, kind: type[float] | type[int]) -> Any:
    if isinstance(value, bool):
        return None
    try:
        return kind(value)
    except (TypeError, ValueError):
        return None


def event_spec(kind: str, spec: Any) -> dict[str, Any]:
    """An event's settings in their long form: ``sqs: arn`` -> ``{"arn": arn}``, ``httpApi: 'GET
    /x'`` -> ``{"method": "GET", "path": "/x"}``, ``sns: name`` -> ``{"topicName": name}`` ..."""
    if isinstance(spec, dict) and not _is_intrinsic(spec):
        return spec
    return SHORT_FORMS.get(kind, _arn)(spec)


def _is_intrinsic(value: Any) -> bool:
    """``{"Ref": ...}``, ``{"Fn::GetAtt": ...}`` ...: a reference written where a value goes."""
    found = intrinsic(value)
    return found is not None and (found[0] == "Ref" or found[0].startswith("Fn::"))


def _arn(spec: Any) -> dict[str, Any]:
    return {"arn": spec}


def _route(spec: Any) -> dict[str, Any]:
    """``'GET /orders/{id}'`` (``'*'``: any method, any path)."""
    if not isinstance(spec, str):
        return _arn(spec)
    method, _, route = spec.strip().partition(" ")
    return (
        {"method": "*", "path": "*"}
        if method == "*" and not route
        else {"method": method, "path": route.strip()}
    )


def _topic(spec: Any) -> dict[str, Any]:
    """An SNS topic by ARN (or a reference to one), else by name."""
    return _arn(spec) if _is_intrinsic(spec) or str(spec).startswith("arn:") else {"topicName": spec}


SHORT_FORMS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "httpApi": _route,
    "http": _route,
    "sns": _topic,
    "s3": lambda spec: {"bucket": spec},
    "cloudwatchLog": lambda spec: {"logGroup": spec},
    "websocket": lambda spec: {"route": spec},
}
"""What a bare value of an event stands for (``sqs: arn``, ``httpApi: 'GET /x'``); an ARN for
kinds not listed."""
