"""serverless.yml as the local stack needs it: functions, their event sources, the resources.

``load_service(path, stage=...)`` reads the file with ``lambda_kit.serverless_config.load`` and
resolves the Serverless variables (``${self:...}``, ``${sls:stage}``, ``${opt:stage, 'dev'}``,
``${aws:region}``, ``${env:X, default}``). CloudFormation intrinsics (``Ref``, ``Fn::GetAtt``,
``Fn::Sub`` ...) stay in place: they are resolved once the resources exist (``resources.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..serverless_config import ConfigError, load
from .variables import Variables

__all__ = ["ConfigError", "EventSource", "FunctionConfig", "ServiceConfig", "load_service"]

DEFAULT_TIMEOUT = 6  # the framework's default, seconds
DEFAULT_MEMORY = 1024  # the framework's default, MB


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
    timeout: float
    memory: int
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
    service: str
    stage: str
    region: str
    provider: dict[str, Any]
    functions: dict[str, FunctionConfig]
    resources: dict[str, dict[str, Any]]  # logical id -> {"Type": ..., "Properties": ...}
    outputs: dict[str, Any] = field(default_factory=dict)
    unresolved: list[tuple[str, str]] = field(default_factory=list)
    custom: dict[str, Any] = field(default_factory=dict)  # the file's `custom:` section

    @property
    def project_dir(self) -> Path:
        return self.path.parent

    def function(self, key: str) -> FunctionConfig:
        found = self.functions.get(key)
        if found is None:
            for candidate in self.functions.values():
                if candidate.name == key:
                    return candidate
            known = ", ".join(sorted(self.functions)) or "none"
            raise ConfigError(f"unknown function {key!r}: {self.path.name} declares {known}")
        return found


def _string_key(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where} must be a non-empty string")
    return value


def load_service(path: str | os.PathLike[str] = "serverless.yml", stage: str | None = None, region: str | None = None) -> ServiceConfig:
    """The service at ``path``; ``ConfigError`` (one line naming what to fix) if it cannot be used."""
    file = Path(path).resolve()
    document = load(file)
    variables = Variables(document, stage, region)
    resolved = variables.resolve(document)
    name = f"{file.name}"

    service = resolved.get("service")
    if isinstance(service, dict):  # the old `service: {name: ...}` form
        service = service.get("name")
    service = _string_key(service, f"{name}: `service`")
    provider = resolved.get("provider") or {}
    if not isinstance(provider, dict):
        raise ConfigError(f"{name}: `provider` must be a mapping")
    raw_functions = resolved.get("functions") or {}
    if not isinstance(raw_functions, dict):
        raise ConfigError(f"{name}: `functions` must be a mapping of function name to settings")
    if not raw_functions:
        raise ConfigError(f"{name}: no functions declared under `functions`")

    provider_env = provider.get("environment") or {}
    if not isinstance(provider_env, dict):
        raise ConfigError(f"{name}: provider.environment must be a mapping")

    functions: dict[str, FunctionConfig] = {}
    for key, settings in raw_functions.items():
        if not isinstance(settings, dict):
            raise ConfigError(f"{name}: function {key!r} must be a mapping with a `handler`")
        handler = settings.get("handler")
        if not isinstance(handler, str) or "." not in handler:
            raise ConfigError(f"{name}: function {key!r} needs `handler: path/module.function` (got {handler!r})")
        env = settings.get("environment") or {}
        if not isinstance(env, dict):
            raise ConfigError(f"{name}: functions.{key}.environment must be a mapping")
        events: list[EventSource] = []
        for index, entry in enumerate(settings.get("events") or []):
            if isinstance(entry, dict) and len(entry) == 1:
                (kind, spec), = entry.items()
                events.append(EventSource(str(kind), _event_spec(str(kind), spec), index))
            else:
                raise ConfigError(f"{name}: functions.{key}.events[{index}] must be a mapping with one key (sqs, stream, sns, httpApi ...)")
        timeout = settings.get("timeout", provider.get("timeout", DEFAULT_TIMEOUT))
        memory = settings.get("memorySize", provider.get("memorySize", DEFAULT_MEMORY))
        try:
            timeout = float(timeout)
            memory = int(memory)
        except (TypeError, ValueError):
            raise ConfigError(f"{name}: functions.{key}: timeout and memorySize must be numbers") from None
        functions[str(key)] = FunctionConfig(
            key=str(key),
            name=str(settings.get("name") or f"{service}-{variables.stage}-{key}"),
            handler=handler,
            timeout=timeout,
            memory=memory,
            environment={**provider_env, **env},
            events=events,
            raw=settings,
        )

    resources_section = resolved.get("resources") or {}
    if not isinstance(resources_section, dict):
        raise ConfigError(f"{name}: `resources` must be a mapping")
    resources = resources_section.get("Resources") or {}
    if not isinstance(resources, dict):
        raise ConfigError(f"{name}: resources.Resources must be a mapping of logical id to resource")
    for logical, resource in resources.items():
        if not isinstance(resource, dict) or not isinstance(resource.get("Type"), str):
            raise ConfigError(f"{name}: resources.Resources.{logical} needs a `Type`")

    # Variables that matter locally must resolve.
    for where, variable in variables.unresolved:
        if where.startswith(("functions.", "provider.environment", "resources.Resources.", "service")):
            raise ConfigError(f"{name}: cannot resolve {variable} at {where} locally: give it a default, e.g. ${{env:X, 'value'}}")

    return ServiceConfig(
        path=file,
        service=service,
        stage=variables.stage,
        region=variables.region,
        provider=provider,
        functions=functions,
        resources=resources,
        outputs=resources_section.get("Outputs") or {},
        unresolved=variables.unresolved,
        custom=resolved.get("custom") if isinstance(resolved.get("custom"), dict) else {},
    )


def _event_spec(kind: str, spec: Any) -> dict[str, Any]:
    """Short forms as their long form: ``sqs: arn`` -> ``{"arn": arn}``, ``httpApi: 'GET /x'`` ..."""
    if isinstance(spec, dict):
        return spec
    if kind == "httpApi" and isinstance(spec, str):
        if spec.strip() == "*":
            return {"method": "*", "path": "*"}
        method, _, route = spec.strip().partition(" ")
        return {"method": method, "path": route.strip()}
    if kind == "http" and isinstance(spec, str):
        method, _, route = spec.strip().partition(" ")
        return {"method": method, "path": route.strip()}
    if kind in ("sqs", "stream"):
        return {"arn": spec}
    if kind == "s3":
        return {"bucket": spec}
    if kind == "sns":
        return {"arn": spec} if isinstance(spec, (str, dict)) and str(spec).startswith("arn:") else {"topicName": spec}
    return {"value": spec}
