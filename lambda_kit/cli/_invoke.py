"""``lambda-kit invoke FUNCTION --event KIND``: one local invocation with an event made by the
``lambda_kit.testing`` factories, its response and log lines printed (escaped: what the function
logs or returns cannot drive the terminal).

When a ``lambda-kit local`` serves the service (``lambda_kit.local.running``), the event goes to it
through its Lambda Invoke API: the same queues, tables and log file as the requests it serves.
Otherwise (or with ``--new-stack``) a stack of its own starts for the one invocation, its log lines
in a run file of their own (``--logs``). Either way the output says which.

With ``--event api`` the request goes to one of the function's routes, in the shape of its front
door (HTTP API, REST API, ALB, Function URL): the route ``--path`` matches, else the first. Its
path parameters are filled from the path (``/orders/{id}`` and ``/orders/o-1`` give ``{"id":
"o-1"}``; ``{proxy+}`` takes the rest of the path); ``--path-param NAME=VALUE`` sets one by hand.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from .. import sources, testing
from ..local import lambda_api, running, timeline
from ..local.config import FunctionConfig, ServiceConfig, load_service
from ..local.terminal import printable, shown_path
from ..serverless_config import ConfigError, read_text
from ._errors import UserError, one_line
from ._invoke_sources import answered_failure, event_options
from ._stack import check_endpoint
from ._trace import check_trace_id

MAX_PAYLOAD_BYTES = 6 * 1024 * 1024
"""Lambda's limit for a synchronous invocation's payload."""
HTTP_OPTIONS = ("--method", "--path", "--path-param", "--query")


# --- routes ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    """One way into an HTTP function: its method and path, the event shape, and the route's
    template (None: any path, no parameters: an ALB target or a Function URL)."""

    method: str
    path: str
    options: tuple[tuple[str, Any], ...]  # api_event options of the front door: version, multi_value
    template: str | None = None
    key: str = ""  # an HTTP API's routeKey ("GET /orders/{id}", "$default")

    def takes(self, path: str | None) -> bool:
        """Whether a request to ``path`` (None: the route's own) comes in by this route."""
        if path is None or self.template is None or self.key == "$default":
            return True
        return path_parameters(self.template, path) is not None

    @property
    def shown(self) -> str:
        return self.key or self.template or self.path

    def gateway_options(self, path: str, given: dict[str, str]) -> dict[str, Any]:
        """An API Gateway route's path parameters in ``path`` (``given`` by hand win) and route key
        (an HTTP API's ``routeKey``, a REST API's ``resource``)."""
        assert self.template is not None
        found = {**(path_parameters(self.template, path) or {}), **given}
        return {
            "path_params": found or None,
            "route": self.key if dict(self.options).get("version") == "v2" else self.template,
        }


_PARAMETER = re.compile(r"\{([^{}+]+)(\+?)\}")


def path_parameters(template: str, path: str) -> dict[str, str] | None:
    """The parameters of route ``template`` in ``path`` (``{id}``: one segment, ``{proxy+}``: the
    rest), URL-decoded; None when the path is not the route's."""
    segments = [_PARAMETER.fullmatch(segment) or segment for segment in template.split("/") if segment]
    names = [segment.group(1) for segment in segments if isinstance(segment, re.Match)]
    match = re.fullmatch("".join(map(_segment_pattern, segments)) + "/?", path)
    return (
        None
        if match is None
        else {name: unquote(value) for name, value in zip(names, match.groups(), strict=True)}
    )


def _segment_pattern(segment: str | re.Match[str]) -> str:
    """A template's segment as a pattern: itself, one segment (``{id}``) or the rest (``{proxy+}``)."""
    if isinstance(segment, str):
        return "/" + re.escape(segment)
    return "/(.+)" if segment.group(2) else "/([^/]+)"


ANY_METHOD = ("*", "any", "ANY")


def _api_route(version: str) -> Any:
    def route(spec: dict[str, Any]) -> Route:
        method, template = str(spec.get("method", "GET")), str(spec.get("path", "/"))
        declared = "ANY" if method in ANY_METHOD else method.upper()
        if template == "*":
            return Route("GET", "/", (("version", version),), "/", "$default")
        template = template if template.startswith("/") else "/" + template
        return Route(
            "GET" if declared == "ANY" else declared,
            template,
            (("version", version),),
            template,
            f"{declared} {template}",
        )

    return route


def _first(value: Any, default: str) -> str:
    return str((value[0] if value else default) if isinstance(value, list) else value or default)


def _alb_route(spec: dict[str, Any]) -> Route:
    conditions = spec.get("conditions") if isinstance(spec.get("conditions"), dict) else {}
    path = _first(conditions.get("path"), "/").replace("*", "") or "/"
    options = (("version", "alb"), ("multi_value", spec.get("multiValueHeaders") is True))
    return Route(_first(conditions.get("method"), "GET"), path, options)


ROUTES = {
    "httpApi": _api_route("v2"),
    "http": _api_route("v1"),
    "alb": _alb_route,
    "url": lambda spec: Route("GET", "/", (("version", "url"),)),
}
"""How each kind of HTTP event makes its route."""
DEFAULT_ROUTE = Route("GET", "/", ())


def _route(function: FunctionConfig, path: str | None) -> Route:
    """The function's route ``path`` goes to (the first that takes it), else its first route."""
    routes = _routes(function)
    taking = [route for route in routes if route.takes(path)]
    if not taking:
        shown = ", ".join(route.shown for route in routes)
        print(
            printable(
                f"lambda-kit invoke: warning: --path {path} is none of {function.key}'s routes ({shown})"
            ),
            file=sys.stderr,
        )
    return (taking or routes)[0]


def _routes(function: FunctionConfig) -> list[Route]:
    """The function's routes, its HTTP events' in order (none: GET / in an HTTP API's shape)."""
    return [ROUTES[event.kind](event.spec) for event in function.events if event.kind in ROUTES] or [
        DEFAULT_ROUTE
    ]


def _api_options(args: argparse.Namespace, function: FunctionConfig) -> dict[str, Any]:
    """What ``api_event`` takes for the request: the route's front door, method and path, the
    query, and for an API Gateway route its path parameters and route key."""
    route = _route(function, args.path)
    path = args.path or route.path
    options: dict[str, Any] = {
        **dict(route.options),
        "method": args.method or route.method,
        "path": path,
        "query": args.query,
    }
    given = dict(args.path_params or ())
    if route.template is not None:
        return {**options, **route.gateway_options(path, given)}
    if given:
        raise UserError(
            f"--path-param: {function.key}'s front door ({options.get('version')}) has no path parameters"
        )
    return options


# --- the event ---------------------------------------------------------------------------------------


def _payload(args: argparse.Namespace) -> Any:
    if args.file is not None:
        try:
            text = read_text(args.file, MAX_PAYLOAD_BYTES, "pass a JSON file")
        except ConfigError as exc:
            raise UserError(f"--file {exc}") from None
        where = f"--file {args.file}"
    elif args.body is not None:
        text, where = args.body, "--body"
    else:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UserError(f"{where} is not valid JSON: {exc}") from None
    except RecursionError:
        raise UserError(f"{where} is nested too deeply to be a payload") from None


def _event(
    kind: str, payload: Any, options: dict[str, Any], trace_id: str | None, source_arn: str | None
) -> dict[str, Any]:
    try:
        return testing.event(kind, payload, trace_id=trace_id, source_arn=source_arn, **options)
    except ValueError as exc:
        raise UserError(f"--event {kind}: {exc}") from None


# --- the invocation ----------------------------------------------------------------------------------


def _check_options(args: argparse.Namespace) -> None:
    given = [
        option
        for option, value in zip(
            HTTP_OPTIONS, (args.method, args.path, args.path_params, args.query), strict=True
        )
        if value is not None
    ]
    if given and args.event != "api":
        raise UserError(f"{', '.join(given)} only apply to --event api, not --event {args.event}")
    if args.trace_id is not None:
        check_trace_id(args.trace_id, "--trace-id ")


def _invoke_kinds(config: ServiceConfig, function: FunctionConfig) -> list[str]:
    """The ``--event`` sources that fit the function's events in serverless.yml."""
    return list(
        dict.fromkeys(source.name for event in function.events for source in config.sources_of(event))
    )


def cmd_invoke(args: argparse.Namespace) -> int:
    _check_options(args)
    payload = _payload(args)
    config = load_service(args.config, stage=args.stage)
    function = config.function(args.function)
    options = _api_options(args, function) if args.event == "api" else {}
    options = options or event_options(args.event, config, function)
    found = None if args.new_stack else running.find(config.path, config.stage)
    if found is not None and function.key in found.functions:
        event, result = _on_running_stack(args, config, function, found, _Request(payload, options))
        log = found.log
        where = (
            f"the running lambda-kit local (pid {found.pid}, {found.lambda_api}): its state, its log {log}"
        )
    else:
        event, result, log = _on_own_stack(args, config, function, _Request(payload, options))
        reason = "--new-stack" if args.new_stack else f"no lambda-kit local serves {shown_path(config.path)}"
        where = f"a stack of its own ({reason}): fresh state, its log file {log}"
    lines = timeline.request_lines(log, result.request_id) if log else []
    _print_result(args, function, result, where, lines)
    return _verdict(result, event)


@dataclass(frozen=True)
class _Request:
    """What the event is made of: the payload, and for an HTTP function the api_event options."""

    payload: Any
    options: dict[str, Any]


def _on_running_stack(
    args: argparse.Namespace,
    config: ServiceConfig,
    function: FunctionConfig,
    found: running.Running,
    request: _Request,
) -> tuple[dict[str, Any], lambda_api.Invoked]:
    """The invocation sent to the running stack's Invoke API: (the event, the answer)."""
    arn = found.source_arn(function.key, args.event)
    event = _event(args.event, request.payload, request.options, args.trace_id, arn)
    _warn_unfit(args, config, function)
    try:
        return event, lambda_api.invoke(found.lambda_api, function.name, event)
    except (OSError, lambda_api.InvokeError) as exc:
        raise UserError(f"the running lambda-kit local (pid {found.pid}) did not answer: {exc}") from None


def _on_own_stack(
    args: argparse.Namespace, config: ServiceConfig, function: FunctionConfig, request: _Request
) -> tuple[dict[str, Any], lambda_api.Invoked, str]:
    """The invocation on a stack started for it: (the event, the answer, the run's log file)."""
    from ..local.stack import LocalStack  # the local stack: moto and boto3, the local extra

    check_endpoint()
    stack = LocalStack(
        config, functions=[function.key], api_port=None, log_path=args.logs, event_sources=False, ttl=False
    )
    stack.start()
    try:
        arn = running.source_arn(stack, function, args.event)
        event = _event(args.event, request.payload, request.options, args.trace_id, arn)
        _warn_unfit(args, config, function)  # once the event is built: a bad payload is one error line
        result = stack.invoke(function.key, event)
        log = str(stack.log.run_path) if stack.log is not None and stack.log.run_path else ""
    finally:
        stack.stop()
    error = result.error
    answer = lambda_api.Invoked(
        result.request_id,
        result.response,
        result.error_type,
        "" if error is None else one_line(error),
        result.duration,
    )
    return event, answer, log


def _warn_unfit(args: argparse.Namespace, config: ServiceConfig, function: FunctionConfig) -> None:
    kinds = _invoke_kinds(config, function)
    if kinds and args.event not in kinds:
        print(
            printable(
                f"lambda-kit invoke: warning: {function.key} gets {' and '.join(kinds)} events in "
                f"{shown_path(config.path)}, not {args.event}"
            ),
            file=sys.stderr,
        )


def _print_result(
    args: argparse.Namespace,
    function: FunctionConfig,
    result: lambda_api.Invoked,
    where: str,
    lines: list[dict[str, Any]],
) -> None:
    print(
        printable(
            f"invoked {function.key} ({function.name}) with {sources.get(args.event).label} in "
            f"{result.duration * 1000:.1f} ms, request id {result.request_id}"
        )
    )
    print(printable(f"  on {where}"))
    if result.error_type is not None:
        print(printable(f"  error: {result.error_type}: {result.error_message}"))
    else:
        print("response:")
        print(
            "\n".join(
                printable(row)
                for row in json.dumps(result.response, indent=2, default=str, ensure_ascii=False).split("\n")
            )
        )
    print(f"log lines ({len(lines)}):")
    for line in lines:
        print(printable(json.dumps(line, separators=(",", ":"), ensure_ascii=False)))
    sys.stdout.flush()


def _verdict(result: lambda_api.Invoked, event: dict[str, Any]) -> int:
    failure = _failure(result, event)
    if failure is None:
        return 0
    print(f"lambda-kit invoke: FAILED: {failure}", file=sys.stderr)
    return 1


def _failure(result: lambda_api.Invoked, event: dict[str, Any]) -> str | None:
    """What failed in one invocation (an error raised, records reported failed, an HTTP 5xx), or None."""
    if result.error_type is not None:
        return f"the function raised {result.error_type}"
    response = result.response if isinstance(result.response, dict) else {}
    answered = answered_failure(response)  # Firehose records, an S3 Batch Operations task
    if answered:
        return answered
    failures = response.get("batchItemFailures")
    status = response.get("statusCode")
    if failures:
        return _failed_records(failures, event)
    return f"HTTP {status}" if isinstance(status, int) and status >= 500 else None


def _failed_records(failures: Any, event: dict[str, Any]) -> str:
    records = event.get("Records")
    total = len(records) if isinstance(records, list) else len(failures)
    of = f" of {total}" if isinstance(records, list) else ""
    return f"{len(failures)}{of} record{'s' * (total != 1)} reported in batchItemFailures"
