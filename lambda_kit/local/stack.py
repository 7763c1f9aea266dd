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

import json
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from .._data import dig, mapping
from ..serverless_config import ConfigError
from .async_invoker import AsyncInvoker
from .authorizers import authorizer_for
from .aws_calls import DEFAULT_PATH as CALLS_PATH
from .aws_calls import CallLog, canonical
from .aws_proxy import AwsProxy
from .clients import Clients, remember_user_agents
from .config import EventSource, FunctionConfig, ServiceConfig, load_service
from .denied_calls import DeniedCalls
from .destinations import Destinations, target_arn
from .dynamodb_local import DynamoDBLocal, DynamoDBLocalUnavailable, find_installation
from .endpoint import aws_environment
from .eventbridge_source import EventBridgeEventSource
from .gateway import HttpGateway, Route, routes_for
from .iam_policy import Roles
from .logfile import DEFAULT_PATH, LogFile
from .moto_process import EndpointProcess
from .poller import Journal, Poller, Timing
from .relay import QueueRelay
from .reload import Reloader, watched_paths
from .resources import Resources
from .runtime import FunctionRuntime, Hook, Result
from .s3_source import S3EventSource
from .sns_source import SnsEventSource
from .sqs_source import SqsEventSource
from .stream_source import StreamEventSource, TtlDeletions
from .ttl import TtlSweeper
from .websocket_gateway import websocket_route
from .workspace import Workspace

_UNSET: Any = object()
Delivered = TypeVar("Delivered")
Part = TypeVar("Part")


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
        iam: bool = True,
        reload: bool = True,
    ) -> None:
        self.config = (
            config if isinstance(config, ServiceConfig) else load_service(config, stage=stage, region=region)
        )
        self.region = self.config.region
        self._endpoint_url = _given_or_env(endpoint_url, "AWS_ENDPOINT_URL")
        self._dynamodb_endpoint_url = _given_or_env(dynamodb_endpoint_url, "AWS_ENDPOINT_URL_DYNAMODB")
        self._function_endpoint_url = function_endpoint_url
        self.api_port = api_port
        self.log_path = log_path
        self.echo = echo
        self.timing = timing or Timing()
        self.only = None if functions is None else set(functions)
        self.event_sources = event_sources
        self.ttl_enabled = ttl
        self.hooks: list[Hook] = list(hooks)
        self.iam = iam
        """Whether each function's AWS calls are authorised against its role (else only recorded)."""
        self.calls = CallLog()
        self.calls_path = self.config.project_dir / CALLS_PATH
        self.aws_proxy: AwsProxy | None = None
        self.reload = reload
        """Whether a change to a function's files replaces its warm workers (``reload.py``)."""
        self.reloader: Reloader | None = None
        self._launches: dict[str, tuple[dict[str, str], dict[str, str]]] = {}
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
        self.deliveries: list[Any] = []  # what feeds the functions their events: pollers, relays, streams
        self.routes: list[Route] = []
        self.gateway: HttpGateway | None = None
        self.destinations: Destinations | None = None
        self.invoker: AsyncInvoker | None = None
        self.ttl_deletions = TtlDeletions()
        self.ttl: TtlSweeper | None = None
        self.log: LogFile | None = None
        self.workspace: Workspace | None = None
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
        """Each part made from the ones before it, and handed to what needs it."""
        self._started = True
        clients = self._start_endpoints()
        resources = self.resources = Resources(self.config, clients)
        resources.create_all()
        self._resolve_destinations(resources)
        log = self.log = LogFile(
            self.log_path, echo=self.echo, prefix=f"{self.config.service}-{self.config.stage}-"
        )
        if self.log_path is not None:  # a run kept: check reads its denied calls
            denied = DeniedCalls(self.config.path)
            self.calls.on_denied = lambda call: denied.record(call.function, call.action, call.resource)
        own = [Path(self.log_path)] if self.log_path is not None else []
        workspace = self.workspace = Workspace(self.config, self.timing, own)
        self._start_functions(workspace, resources, log)
        self.destinations = Destinations(clients)
        self.invoker = AsyncInvoker(self.destinations, self.timing, self.journal)
        self._start_deliveries(resources, clients)
        if self.reload:
            project = self.config.project_dir
            watched = watched_paths(project, workspace.files)
            self.reloader = Reloader(project, watched, lambda changed: self._reload(workspace, changed))
            self.reloader.start()

    def _start_deliveries(self, resources: Resources, clients: Clients) -> None:
        """What feeds the functions their events: each event's delivery, the HTTP gateway, TTL."""
        for runtime in self.runtimes.values():
            for event in runtime.function.events:
                self._wire(runtime, event, resources)
        if self.routes and self.api_port is not None:
            self.gateway = HttpGateway(self.routes, self.api_port, stage="$default").start()
        for delivery in self.deliveries:
            delivery.start()
        self._start_ttl(resources, clients)

    def _start_functions(self, workspace: Workspace, resources: Resources, log: LogFile) -> None:
        """Each function's runtime; its workers start at its first invocation (a handler that does
        not import fails its invocations with the init error, as on Lambda, not the start)."""
        selected = [f for f in self.config.functions.values() if self.only is None or f.key in self.only]
        proxy = self.aws_proxy = AwsProxy(
            self._function_endpoint_url or self.endpoint_url,
            self.dynamodb_url,
            self.region,
            self.calls,
            self.iam,
        ).start()
        roles = Roles(self.config, lambda value: canonical(resources.resolve(value), self.region))
        for function in selected:
            role = roles.of(function)
            if not role.known:
                self.journal.record("iam.unknown", function=function.key, why=role.why_unknown)
            environment = {
                k: _env_text(v) for k, v in resources.resolve(function.environment).items()
            }
            aws = {
                **aws_environment(proxy.url, self.region, proxy.url),
                **proxy.credentials(function.key, function.name, role),
            }
            self._launches[function.key] = (environment, aws)
            self.runtimes[function.key] = FunctionRuntime(
                function,
                workspace.launch(function, environment, aws),
                self.region,
                hooks=self.hooks,
                write=log.write,
                concurrency=workspace.concurrency(function),
                system_log_level=workspace.logging(function).get("systemLogLevel"),
            )

    def _reload(self, workspace: Workspace, changed: set[str]) -> None:
        """Files changed: the functions whose task roots hold one run from a rebuilt one."""
        for key, runtime in self.runtimes.items():
            if workspace.holds(runtime.function, changed):
                environment, aws = self._launches[key]
                runtime.renew(workspace.launch(runtime.function, environment, aws, fresh=True))
                self.journal.record("function.reloaded", function=key, changed=sorted(changed))

    def _start_endpoints(self) -> Clients:
        """moto (unless ``endpoint_url`` is given) and the DynamoDB, started side by side; the
        clients and the environment the functions see."""
        dynamodb_url = (self._dynamodb_endpoint_url or "").rstrip("/")
        if self._endpoint_url:
            self.endpoint_url = self._endpoint_url.rstrip("/")
        else:
            self.endpoint = EndpointProcess().launch()  # moto starts while DynamoDB Local does
            dynamodb_url = dynamodb_url or self._start_dynamodb_local()
            self.endpoint_url = self.endpoint.wait_ready().url
            if self.dynamodb_local is not None:
                dynamodb_url = self._wait_dynamodb_local(self.dynamodb_local)
        self.dynamodb_url = dynamodb_url or self.endpoint_url
        remember_user_agents()
        self.clients = Clients(self.endpoint_url, self.region, self.dynamodb_url)
        # this process's boto3 (the service's load, tests, hooks): the endpoints themselves
        self._set_env(aws_environment(self.endpoint_url, self.region, self.dynamodb_url))
        return self.clients

    def _resolve_destinations(self, resources: Resources) -> None:
        """Function-level destinations (asynchronous invocations) name resources with intrinsics."""
        for function in self.config.functions.values():
            for key in ("destinations", "onError"):
                if function.raw.get(key) is not None:
                    function.raw = {**function.raw, key: resources.resolve(function.raw[key])}

    def _wire(self, runtime: FunctionRuntime, event: EventSource, resources: Resources) -> None:
        """Deliver one event of a function as its source says (``Source.delivery``), or note that it
        is not emulated. Without ``event_sources``, only the HTTP routes."""
        found = self.config.sources_of(event)
        delivery = found[0].delivery if found else ""
        if not self.event_sources and delivery not in PASSIVE:
            return
        deliver = DELIVERIES.get(delivery, _not_emulated)
        started = deliver(self, runtime, event, resources.resolve(event.spec))
        if started is not None:
            self.deliveries.append(started)

    def _start_ttl(self, resources: Resources, clients: Clients) -> None:
        """The TTL sweeper, where moto serves DynamoDB (DynamoDB Local expires items itself)."""
        tables = resources.of_type("AWS::DynamoDB::Table")
        expiring = {
            r.attributes["Ref"]: r.attributes["TtlAttribute"]
            for r in tables
            if r.attributes.get("TtlAttribute")
        }
        if expiring and self.ttl_enabled and self.event_sources and self.dynamodb_local is None:
            self.ttl = TtlSweeper(expiring, clients, self.ttl_deletions, self.timing, self.journal)
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

    def _wait_dynamodb_local(self, local: DynamoDBLocal) -> str:
        try:
            return local.wait_ready().url
        except DynamoDBLocalUnavailable as reason:
            local.stop()
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
            return (
                f"moto's (DynamoDB Local not started: {self.dynamodb_fallback})"
                if self.dynamodb_fallback
                else "moto's"
            )
        return f"{self.dynamodb_url} (AWS_ENDPOINT_URL{'_DYNAMODB' if self._dynamodb_endpoint_url else ''})"

    def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        if self.reloader is not None:
            self.reloader.stop()
        self._stop_deliveries()
        for runtime in self.runtimes.values():
            runtime.close()
        if self.aws_proxy is not None:
            self.aws_proxy.stop()
            if self.log_path is not None:
                self.calls.write(self.calls_path)
        if self.workspace is not None:
            self.workspace.remove()
        if self.log is not None:
            self.log.close()
        for process in (self.endpoint, self.dynamodb_local):
            if process is not None:
                process.stop()
        self._restore_env()

    def _stop_deliveries(self) -> None:
        """Pollers, streams, the TTL sweeper, the invoker and the gateway: told to stop, then joined."""
        everything: list[Any] = [*self.deliveries, *([self.ttl] if self.ttl is not None else [])]
        for part in [*everything, self.invoker, self.gateway]:
            if part is not None:
                part.stop()
        for part in everything:
            part.join(5.0)

    def _restore_env(self) -> None:
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

    def delivering(self, kind: type[Delivered]) -> list[Delivered]:
        """The deliveries of one class (``SqsEventSource`` ...)."""
        return [delivery for delivery in self.deliveries if isinstance(delivery, kind)]

    @property
    def streams(self) -> list[StreamEventSource]:
        return self.delivering(StreamEventSource)

    @property
    def pollers(self) -> list[Poller]:
        """The deliveries polling a queue: SQS sources, SNS subscriptions, EventBridge and S3 relays."""
        return self.delivering(Poller)

    @property
    def sqs_sources(self) -> list[SqsEventSource]:
        return self.delivering(SqsEventSource)

    @property
    def sns_sources(self) -> list[SnsEventSource]:
        return self.delivering(SnsEventSource)

    @property
    def relays(self) -> list[QueueRelay]:
        """EventBridge rules and S3 notifications (and, as they relay too, SNS subscriptions)."""
        return [relay for relay in self.delivering(QueueRelay) if not isinstance(relay, SnsEventSource)]

    # --- inspecting it --------------------------------------------------------------------------

    def queue_url(self, queue: str) -> str:
        """URL of a queue given its logical id, name, ARN or URL."""
        declared = self._declared_queue_url(queue)
        if declared is not None or queue.startswith("http"):
            return declared or queue
        if queue.startswith("arn:"):
            return Destinations(self._clients()).queue_url(queue)
        return str(self._clients()("sqs").get_queue_url(QueueName=queue)["QueueUrl"])

    def _declared_queue_url(self, queue: str) -> str | None:
        """The URL of a queue serverless.yml declares, named by its logical id, name, ARN or URL."""
        queues = self._resources().of_type("AWS::SQS::Queue")
        by_id = [r for r in queues if r.logical_id == queue]
        by_name = [
            r
            for r in queues
            if queue in (r.attributes.get("QueueName"), r.attributes.get("Arn"), r.attributes.get("QueueUrl"))
        ]
        return next((r.attributes["QueueUrl"] for r in [*by_id, *by_name]), None)

    def queue_depth(self, queue: str) -> dict[str, int]:
        attributes = self._clients()("sqs").get_queue_attributes(
            QueueUrl=self.queue_url(queue),
            AttributeNames=[
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            ],
        )["Attributes"]
        return {
            "visible": int(attributes.get("ApproximateNumberOfMessages", 0)),
            "in_flight": int(attributes.get("ApproximateNumberOfMessagesNotVisible", 0)),
            "delayed": int(attributes.get("ApproximateNumberOfMessagesDelayed", 0)),
        }

    def queue_count(self, queue: str) -> int:
        return sum(self.queue_depth(queue).values())

    def receive_all(
        self, queue: str, delete: bool = False, max_messages: int = 10_000
    ) -> list[dict[str, Any]]:
        """Every message now on ``queue`` (bodies and attributes). Messages read without
        ``delete`` stay invisible for a second (use it on DLQs, not on source queues)."""
        sqs = self._clients()("sqs")
        url = self.queue_url(queue)
        found: list[dict[str, Any]] = []
        while len(found) < max_messages:
            messages = sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=0,
                VisibilityTimeout=1,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            if not messages:
                break
            found.extend(messages)
            if delete:
                sqs.delete_message_batch(
                    QueueUrl=url,
                    Entries=[
                        {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)
                    ],
                )
        return found

    def dead_letter_queues(self) -> dict[str, str]:
        """Logical id -> queue URL of every queue that receives failed work: redrive targets,
        stream on-failure destinations, async onFailure / onError destinations, an EventBridge
        rule target's dead-letter queue, SNS's own delivery failures (a subscription's redrive)."""
        resources = self._resources()
        arns = set(resources.dead_letter_queue_arns())
        for function in self.config.functions.values():
            arns.update(_function_dead_letter_arns(function))
            arns.update(self._event_dead_letter_arn(event) for event in function.events)
        return {
            resource.logical_id: resource.attributes["QueueUrl"]
            for resource in resources.of_type("AWS::SQS::Queue")
            if resource.attributes.get("Arn") in arns
        }

    def _event_dead_letter_arn(self, event: EventSource) -> str:
        """The queue an event's failures go to, whatever its kind: its on-failure destination, its
        rule target's dead-letter queue, its subscription's redrive policy (by reference or ARN)."""
        resources = self._resources()
        spec = resources.resolve(event.spec)
        redrive = mapping(spec.get("redrivePolicy"))
        referenced = resources.by_id.get(str(redrive.get("deadLetterTargetRef")))
        found = [
            target_arn(dig(spec, "destinations", "onFailure")),
            spec.get("deadLetterQueueArn"),
            referenced.attributes.get("Arn") if referenced is not None else None,
            redrive.get("deadLetterTargetArn"),
        ]
        return next((str(arn) for arn in found if arn), "")

    def dlq_counts(self) -> dict[str, int]:
        return {logical: self.queue_count(url) for logical, url in self.dead_letter_queues().items()}

    def shard_pollers(self) -> list[Any]:
        return [p for stream in self.streams for p in stream.pollers()]

    def idle(self, quiet: float | None = None) -> bool:
        """Nothing in flight anywhere and every source queue empty."""
        quiet = self.quiet_period if quiet is None else quiet
        components = [*self.pollers, *self.shard_pollers(), self.invoker, self.gateway]
        if not all(c.idle(quiet) for c in components if c is not None):
            return False
        return not any(source.queue_url and self.queue_count(source.queue_url) for source in self.pollers)

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
        return _started(self.clients)

    def _resources(self) -> Resources:
        return _started(self.resources)


def _started(part: Part | None) -> Part:
    """A part of the stack that ``start`` makes (clients, resources ...): there once it is started."""
    if part is None:
        raise RuntimeError("the stack is not started")
    return part


def _given_or_env(value: str | None, variable: str) -> str | None:
    """An endpoint given to the stack, or when none is (not even None), the environment's."""
    return (os.environ.get(variable) or None) if value is _UNSET else value


def _function_dead_letter_arns(function: FunctionConfig) -> tuple[str, str]:
    """The function's asynchronous on-failure destination and its ``onError`` DLQ ("" if none)."""
    destinations = mapping(function.setting("destinations"))
    return target_arn(destinations.get("onFailure")) or "", target_arn(function.setting("onError")) or ""


def _env_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return "" if value is None else str(value)


# --- delivering each source's events (``Source.delivery``) ------------------------------------------


def _required_arn(runtime: FunctionRuntime, event: EventSource, spec: dict[str, Any]) -> str:
    arn = target_arn(spec)
    if not arn:
        raise ConfigError(f"functions.{runtime.function.key}.events[{event.index}].{event.kind} needs an arn")
    return arn


def _queue(stack: LocalStack, runtime: FunctionRuntime, event: EventSource, spec: dict[str, Any]) -> Any:
    arn = _required_arn(runtime, event, spec)
    queue_url = _started(stack.destinations).queue_url(arn)
    return SqsEventSource(
        runtime,
        event,
        spec,
        queue_url,
        arn,
        _started(stack.clients),
        stack.timing,
        stack.journal,
        stack.region,
    )


def _stream(stack: LocalStack, runtime: FunctionRuntime, event: EventSource, spec: dict[str, Any]) -> Any:
    arn = _required_arn(runtime, event, spec)
    return StreamEventSource(
        runtime,
        event,
        spec,
        arn,
        _started(stack.clients),
        _started(stack.destinations),
        stack.timing,
        stack.journal,
        stack.region,
        stack.ttl_deletions,
        moto_quirks=stack.dynamodb_local is None,
    )


def _topic(stack: LocalStack, runtime: FunctionRuntime, event: EventSource, spec: dict[str, Any]) -> Any:
    clients = _started(stack.clients)
    topic = target_arn(spec) or clients("sns").create_topic(Name=str(spec.get("topicName")))["TopicArn"]
    subscription = SnsEventSource(
        runtime, event, spec, topic, clients, stack.invoker, stack.timing, stack.journal
    )
    subscription.setup()
    return subscription


def _relay(kind: type[QueueRelay]) -> Delivery:
    def deliver(stack: LocalStack, runtime: FunctionRuntime, event: EventSource, spec: dict[str, Any]) -> Any:
        relay = kind(
            runtime, event, spec, _started(stack.clients), stack.invoker, stack.timing, stack.journal
        )
        relay.setup()
        return relay

    return deliver


def _rule(stack: LocalStack, runtime: FunctionRuntime, event: EventSource, spec: dict[str, Any]) -> Any:
    if "pattern" not in spec:  # a schedule: nothing sends it locally
        stack.journal.record(
            "event.unsupported", function=runtime.function.key, event_kind=f"{event.kind} schedule"
        )
        return None
    return _relay(EventBridgeEventSource)(stack, runtime, event, spec)


PAYLOADS = {"httpApi": "2.0", "http": "1.0"}
"""The HTTP events the gateway serves, with their payload format (ALB and Function URLs: not served)."""


def _route(stack: LocalStack, runtime: FunctionRuntime, event: EventSource, spec: dict[str, Any]) -> Any:
    if event.kind not in PAYLOADS:
        return _not_emulated(stack, runtime, event, spec)
    routes = routes_for(runtime, [event.spec], payload=PAYLOADS[event.kind])
    for route in routes:  # the Lambda authorizer the event names, in front of its routes
        route.authorizer = authorizer_for(stack.config, stack.runtimes, event)
    stack.routes.extend(routes)
    return None


def _not_emulated(
    stack: LocalStack, runtime: FunctionRuntime, event: EventSource, spec: dict[str, Any]
) -> Any:
    stack.journal.record("event.unsupported", function=runtime.function.key, event_kind=event.kind)
    return None


Delivery = Callable[[LocalStack, FunctionRuntime, EventSource, dict[str, Any]], Any]

DELIVERIES: dict[str, Delivery] = {
    "queue": _queue,
    "stream": _stream,
    "topic": _topic,
    "rule": _rule,
    "notification": _relay(S3EventSource),
    "gateway": _route,
    "websocket": websocket_route,
}
"""How each ``Source.delivery`` is wired: given the stack, the function's runtime, the event and its
resolved settings, it returns what to start (None: nothing runs for it)."""
PASSIVE = ("gateway",)
"""Deliveries wired even without ``event_sources``: they poll nothing."""
