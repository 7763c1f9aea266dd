"""The local stack: serverless.yml's resources on an AWS endpoint, its functions in-process, fed by
their event sources with Lambda's semantics, and its HTTP API on 127.0.0.1.

    from lambda_kit.local import LocalStack

    with LocalStack("serverless.yml", api_port=0) as stack:
        urllib.request.urlopen(stack.api_url + "/stats")
        stack.wait_drained()
        stack.queue_count("ViewsDLQ")

Programmatic hooks (the fault soak uses them):
- ``hooks``: invocation hooks ``hook(invocation, proceed)`` wrapping every invocation (crash
  before or after the work, change the event) — see ``runtime.py``;
- ``function_endpoint_url``: the endpoint the functions see (``AWS_ENDPOINT_URL``), e.g. a fault
  proxy in front of the one the stack itself uses, so faults hit the functions, not the pollers
  (DynamoDB calls go to ``dynamodb_url`` whatever it says);
- ``journal``: what the stack did (batches, deletes, checkpoints, retries, destinations);
- ``log``: every function log line (``log.subscribe(callback)``).

Which DynamoDB: ``dynamodb_endpoint_url`` (default ``AWS_ENDPOINT_URL_DYNAMODB``) if given; else the
one at ``endpoint_url`` if that is given (e.g. LocalStack); else AWS's DynamoDB Local, started here
(``dynamodb_local.py``), and moto's only where DynamoDB Local cannot run (``dynamodb_fallback``
says why). DynamoDB Local expires TTL items itself, so the TTL sweeper runs only on moto.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .. import log as lambda_log
from ..serverless_config import ConfigError
from .async_invoker import AsyncInvoker
from .clients import Clients, remember_user_agents
from .config import ServiceConfig, load_service
from .destinations import Destinations, target_arn
from .dynamodb_local import DynamoDBLocal, DynamoDBLocalUnavailable, find_installation
from .endpoint import aws_environment
from .eventbridge_source import EventBridgeEventSource
from .gateway import HttpGateway, Route, routes_for
from .logfile import DEFAULT_PATH, LogFile
from .moto_process import EndpointProcess
from .poller import Journal, Poller, Timing
from .relay import QueueRelay
from .resources import Resources
from .runtime import FunctionRuntime, Hook, Result
from .s3_source import S3EventSource
from .sns_source import SnsEventSource
from .sqs_source import SqsEventSource
from .stream_source import StreamEventSource, TtlDeletions
from .ttl import TtlSweeper

_UNSET: Any = object()
RELAYS: dict[str, type[QueueRelay]] = {"eventBridge": EventBridgeEventSource, "s3": S3EventSource}
"""serverless.yml event kinds fed through an internal queue (``relay.py``), besides SNS."""


class LocalStack:
    def __init__(
        self,
        config: ServiceConfig | str | os.PathLike[str] = "serverless.yml",
        *,
        stage: str | None = None,
        region: str | None = None,
        endpoint_url: str | None = _UNSET,
        dynamodb_endpoint_url: str | None = _UNSET,
        function_endpoint_url: str | None = None,
        api_port: int | None = 0,
        log_path: str | os.PathLike[str] | None = DEFAULT_PATH,
        echo: Any = False,
        timing: Timing | None = None,
        functions: Iterable[str] | None = None,
        event_sources: bool = True,
        ttl: bool = True,
        hooks: Iterable[Hook] = (),
    ) -> None:
        self.config = config if isinstance(config, ServiceConfig) else load_service(config, stage=stage, region=region)
        self.region = self.config.region
        if endpoint_url is _UNSET:
            endpoint_url = os.environ.get("AWS_ENDPOINT_URL") or None
        self._endpoint_url = endpoint_url
        if dynamodb_endpoint_url is _UNSET:
            dynamodb_endpoint_url = os.environ.get("AWS_ENDPOINT_URL_DYNAMODB") or None
        self._dynamodb_endpoint_url = dynamodb_endpoint_url
        self._function_endpoint_url = function_endpoint_url
        self.api_port = api_port
        self.log_path = log_path
        self.echo = echo
        self.timing = timing or Timing()
        self.only = set(functions) if functions is not None else None
        self.event_sources = event_sources
        self.ttl_enabled = ttl
        self.hooks: list[Hook] = list(hooks)
        self.journal = Journal()
        self.endpoint: EndpointProcess | None = None
        self.endpoint_url = ""
        self.dynamodb_local: DynamoDBLocal | None = None
        self.dynamodb_url = ""
        self.dynamodb_fallback = ""
        """Why moto serves DynamoDB although the stack chose the DynamoDB (empty otherwise)."""
        self.clients: Clients | None = None
        self.resources: Resources | None = None
        self.runtimes: dict[str, FunctionRuntime] = {}
        self.pollers: list[Poller] = []
        self.streams: list[StreamEventSource] = []
        self.sqs_sources: list[SqsEventSource] = []
        self.sns_sources: list[SnsEventSource] = []
        self.relays: list[QueueRelay] = []  # EventBridge rules and S3 notifications
        self.gateway: HttpGateway | None = None
        self.invoker: AsyncInvoker | None = None
        self.ttl_deletions = TtlDeletions()
        self.ttl: TtlSweeper | None = None
        self.log: LogFile | None = None
        self._saved_env: dict[str, str | None] = {}
        self._started = False

    # --- lifecycle ------------------------------------------------------------------------------

    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> LocalStack:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        self._started = True
        dynamodb_url = (self._dynamodb_endpoint_url or "").rstrip("/")
        if self._endpoint_url:
            self.endpoint_url = self._endpoint_url.rstrip("/")
        else:
            self.endpoint = EndpointProcess().launch()  # moto starts while DynamoDB Local does
            if not dynamodb_url:
                dynamodb_url = self._start_dynamodb_local()
            self.endpoint_url = self.endpoint.wait_ready().url
            if self.dynamodb_local is not None:
                dynamodb_url = self._wait_dynamodb_local()
        self.dynamodb_url = dynamodb_url or self.endpoint_url
        remember_user_agents()
        self.clients = Clients(self.endpoint_url, self.region, self.dynamodb_url)
        self._set_env(aws_environment(self._function_endpoint_url or self.endpoint_url, self.region, self.dynamodb_url))

        self.resources = Resources(self.config, self.clients)
        self.resources.create_all()

        selected = [f for f in self.config.functions.values() if self.only is None or f.key in self.only]
        for function in self.config.functions.values():
            # Function-level destinations (async invocations) name resources with intrinsics.
            for key in ("destinations", "onError"):
                if function.raw.get(key) is not None:
                    function.raw = {**function.raw, key: self.resources.resolve(function.raw[key])}
        environment: dict[str, str] = {}
        for function in selected:
            for key, value in self.resources.resolve(function.environment).items():
                text = _env_text(value)
                if key in environment and environment[key] != text:
                    self.journal.record("env.conflict", variable=key, function=function.key, values=[environment[key], text])
                environment[key] = text
        self._set_env(environment)

        self.log = LogFile(self.log_path, echo=self.echo, prefix=f"{self.config.service}-{self.config.stage}-")
        lambda_log.set_sink(self.log.write)

        for function in selected:
            runtime = FunctionRuntime(function, self.config.project_dir, self.region, hooks=self.hooks)
            runtime.handler()  # import now: a broken handler path fails the start, in one line
            self.runtimes[function.key] = runtime

        destinations = Destinations(self.clients)
        self.invoker = AsyncInvoker(destinations, self.timing, self.journal)
        routes: list[Route] = []
        for runtime in self.runtimes.values():
            http_specs, rest_specs = [], []
            for event in runtime.function.events:
                if event.kind in ("httpApi", "http"):
                    (http_specs if event.kind == "httpApi" else rest_specs).append(event.spec)
                    continue
                if not self.event_sources:
                    continue
                spec = self.resources.resolve(event.spec)
                if event.kind == "sqs":
                    arn = target_arn(spec)
                    if not arn:
                        raise ConfigError(f"functions.{runtime.function.key}.events[{event.index}].sqs needs an arn")
                    source = SqsEventSource(runtime, event, spec, destinations.queue_url(arn), arn, self.clients, self.timing, self.journal, self.region)
                    self.sqs_sources.append(source)
                elif event.kind == "stream":
                    arn = target_arn(spec)
                    if not arn:
                        raise ConfigError(f"functions.{runtime.function.key}.events[{event.index}].stream needs an arn")
                    self.streams.append(StreamEventSource(
                        runtime, event, spec, arn, self.clients, destinations, self.timing, self.journal, self.region,
                        self.ttl_deletions, moto_quirks=self.dynamodb_local is None,
                    ))
                elif event.kind == "sns":
                    topic = target_arn(spec) or self.clients("sns").create_topic(Name=str(spec.get("topicName")))["TopicArn"]
                    sns = SnsEventSource(runtime, event, spec, topic, self.clients, self.invoker, self.timing, self.journal)
                    sns.setup()
                    self.sns_sources.append(sns)
                elif event.kind in RELAYS and (event.kind != "eventBridge" or "pattern" in spec):
                    relay = RELAYS[event.kind](runtime, event, spec, self.clients, self.invoker, self.timing, self.journal)
                    relay.setup()
                    self.relays.append(relay)
                else:
                    unsupported = "eventBridge schedule" if event.kind == "eventBridge" else event.kind
                    self.journal.record("event.unsupported", function=runtime.function.key, event_kind=unsupported)
            routes.extend(routes_for(runtime, http_specs))
            routes.extend(routes_for(runtime, rest_specs, payload="1.0"))

        if routes and self.api_port is not None:
            self.gateway = HttpGateway(routes, self.api_port, stage="$default").start()

        for sqs in self.sqs_sources:
            sqs.start()
            self.pollers.append(sqs)
        for sns in self.sns_sources:
            sns.start()
            self.pollers.append(sns)
        for relay in self.relays:
            relay.start()
            self.pollers.append(relay)
        for stream in self.streams:
            stream.start()
        ttl_tables = {
            r.attributes["Ref"]: r.attributes["TtlAttribute"]
            for r in self.resources.of_type("AWS::DynamoDB::Table")
            if r.attributes.get("TtlAttribute")
        }
        if ttl_tables and self.ttl_enabled and self.event_sources and self.dynamodb_local is None:
            self.ttl = TtlSweeper(ttl_tables, self.clients, self.ttl_deletions, self.timing, self.journal)
            self.ttl.start()

    def _start_dynamodb_local(self) -> str:
        """Launch DynamoDB Local (it starts while moto does); its URL, or "" to use moto's DynamoDB."""
        try:
            local = DynamoDBLocal(find_installation([self.config.project_dir]))
            local.launch()
        except DynamoDBLocalUnavailable as reason:
            self.dynamodb_fallback = str(reason)
            return ""
        self.dynamodb_local = local
        return local.url

    def _wait_dynamodb_local(self) -> str:
        assert self.dynamodb_local is not None and self.endpoint is not None
        try:
            return self.dynamodb_local.wait_ready().url
        except DynamoDBLocalUnavailable as reason:
            self.dynamodb_local.stop()
            self.dynamodb_local = None
            self.dynamodb_fallback = str(reason)
            return ""  # moto serves DynamoDB after all (its process has the DynamoDB patches)

    @property
    def dynamodb_description(self) -> str:
        """Which DynamoDB the stack uses, in a few words (for banners)."""
        if self.dynamodb_local is not None:
            version = f" {self.dynamodb_local.version}" if self.dynamodb_local.version else ""
            return f"DynamoDB Local{version} (AWS's emulator, in memory) on {self.dynamodb_url}"
        if self.endpoint is not None and self.dynamodb_url == self.endpoint_url:
            return f"moto's (DynamoDB Local not started: {self.dynamodb_fallback})" if self.dynamodb_fallback else "moto's"
        return f"{self.dynamodb_url} (AWS_ENDPOINT_URL{'_DYNAMODB' if self._dynamodb_endpoint_url else ''})"

    def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        everything: list[Any] = [*self.pollers, *self.streams]
        if self.ttl is not None:
            everything.append(self.ttl)
        for poller in everything:
            poller.stop()
        if self.invoker is not None:
            self.invoker.stop()
        if self.gateway is not None:
            self.gateway.stop()
        for poller in everything:
            poller.join(5.0)
        lambda_log.set_sink(None)
        if self.log is not None:
            self.log.close()
        if self.endpoint is not None:
            self.endpoint.stop()
        if self.dynamodb_local is not None:
            self.dynamodb_local.stop()
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_env.clear()

    def _set_env(self, values: dict[str, str]) -> None:
        for key, value in values.items():
            if key not in self._saved_env:
                self._saved_env[key] = os.environ.get(key)
            os.environ[key] = value

    # --- using it -------------------------------------------------------------------------------

    @property
    def api_url(self) -> str:
        return self.gateway.url if self.gateway is not None else ""

    def runtime(self, function: str) -> FunctionRuntime:
        found = self.runtimes.get(function)
        if found is None:
            self.config.function(function)  # raises "unknown function" with the known names
            raise ConfigError(f"function {function!r} is not running in this stack")
        return found

    def invoke(self, function: str, event: Any) -> Result:
        """One synchronous invocation (as ``aws lambda invoke`` would)."""
        return self.runtime(function).invoke(event, source="direct")

    def add_hook(self, hook: Hook) -> None:
        self.hooks.append(hook)

    # --- inspecting it --------------------------------------------------------------------------

    def queue_url(self, queue: str) -> str:
        """URL of a queue given its logical id, name, ARN or URL."""
        assert self.resources is not None
        resource = self.resources.by_id.get(queue)
        if resource is not None and resource.type == "AWS::SQS::Queue":
            return resource.attributes["QueueUrl"]
        for candidate in self.resources.of_type("AWS::SQS::Queue"):
            if queue in (candidate.attributes.get("QueueName"), candidate.attributes.get("Arn"), candidate.attributes.get("QueueUrl")):
                return candidate.attributes["QueueUrl"]
        if queue.startswith("http"):
            return queue
        return Destinations(self._clients()).queue_url(queue) if queue.startswith("arn:") else self._clients()("sqs").get_queue_url(QueueName=queue)["QueueUrl"]

    def queue_depth(self, queue: str) -> dict[str, int]:
        attributes = self._clients()("sqs").get_queue_attributes(
            QueueUrl=self.queue_url(queue),
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"],
        )["Attributes"]
        return {
            "visible": int(attributes.get("ApproximateNumberOfMessages", 0)),
            "in_flight": int(attributes.get("ApproximateNumberOfMessagesNotVisible", 0)),
            "delayed": int(attributes.get("ApproximateNumberOfMessagesDelayed", 0)),
        }

    def queue_count(self, queue: str) -> int:
        return sum(self.queue_depth(queue).values())

    def receive_all(self, queue: str, delete: bool = False, max_messages: int = 10_000) -> list[dict[str, Any]]:
        """Every message now on ``queue`` (bodies and attributes). Messages read without
        ``delete`` stay invisible for a second (use it on DLQs, not on source queues)."""
        sqs = self._clients()("sqs")
        url = self.queue_url(queue)
        found: list[dict[str, Any]] = []
        while len(found) < max_messages:
            messages = sqs.receive_message(
                QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0, VisibilityTimeout=1,
                AttributeNames=["All"], MessageAttributeNames=["All"],
            ).get("Messages", [])
            if not messages:
                break
            found.extend(messages)
            if delete:
                sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)])
        return found

    def dead_letter_queues(self) -> dict[str, str]:
        """Logical id -> queue URL of every queue that receives failed work: redrive targets,
        stream on-failure destinations, async onFailure / onError destinations."""
        assert self.resources is not None
        arns = set(self.resources.dead_letter_queue_arns())
        for function in self.config.functions.values():
            arns.add(target_arn((function.setting("destinations") or {}).get("onFailure")) or "")
            arns.add(target_arn(function.setting("onError")) or "")
            for event in function.events:
                if event.kind == "stream":
                    spec = self.resources.resolve(event.spec)
                    arns.add(target_arn((spec.get("destinations") or {}).get("onFailure")) or "")
                if event.kind == "eventBridge" and event.spec.get("deadLetterQueueArn"):  # the rule target's DLQ
                    arns.add(str(self.resources.resolve(event.spec["deadLetterQueueArn"])))
                if event.kind == "sns":  # SNS's own delivery failures (subscription redrive policy)
                    redrive = event.spec.get("redrivePolicy") or {}
                    if redrive.get("deadLetterTargetRef") in self.resources.by_id:
                        arns.add(self.resources.by_id[redrive["deadLetterTargetRef"]].attributes.get("Arn", ""))
                    elif redrive.get("deadLetterTargetArn"):
                        arns.add(str(self.resources.resolve(redrive["deadLetterTargetArn"])))
        found = {}
        for resource in self.resources.of_type("AWS::SQS::Queue"):
            if resource.attributes.get("Arn") in arns:
                found[resource.logical_id] = resource.attributes["QueueUrl"]
        return found

    def dlq_counts(self) -> dict[str, int]:
        return {logical: self.queue_count(url) for logical, url in self.dead_letter_queues().items()}

    def shard_pollers(self) -> list[Any]:
        return [p for stream in self.streams for p in stream.pollers()]

    def idle(self, quiet: float | None = None) -> bool:
        """Nothing in flight anywhere and every source queue empty."""
        quiet = self.quiet_period if quiet is None else quiet
        components: list[Any] = [*self.pollers, *self.shard_pollers()]
        if self.invoker is not None:
            components.append(self.invoker)
        if self.gateway is not None:
            components.append(self.gateway)
        if not all(c.idle(quiet) for c in components):
            return False
        for source in [*self.sqs_sources, *self.sns_sources, *self.relays]:
            if source.queue_url and self.queue_count(source.queue_url) > 0:
                return False
        return True

    @property
    def quiet_period(self) -> float:
        return max(0.3, 3 * self.timing.poll_interval)

    def wait_drained(self, timeout: float = 120.0) -> bool:
        """Block until every queue and stream is drained and nothing is running (True), or until
        ``timeout`` (False)."""
        deadline = time.monotonic() + timeout
        stable = 0
        while time.monotonic() < deadline:
            if self.idle():
                stable += 1
                if stable >= 2:
                    return True
            else:
                stable = 0
            time.sleep(max(0.05, self.timing.poll_interval))
        return False

    def _clients(self) -> Clients:
        if self.clients is None:
            raise RuntimeError("the stack is not started")
        return self.clients


def _env_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        import json

        return json.dumps(value)
    return "" if value is None else str(value)


def project_path(path: str | os.PathLike[str]) -> Path:
    return Path(path).resolve()
