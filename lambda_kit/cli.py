"""``lambda-kit``: run the service locally, trace a request, invoke a function, check the config.

    lambda-kit run      start the local stack, drive the service's own load, print its summary
    lambda-kit local    start the local stack and serve until Ctrl-C
    lambda-kit trace    every log line of one trace id, across functions, as a timeline
    lambda-kit invoke   one local invocation with a generated event
    lambda-kit check    the serverless.yml mistakes that lose or repeat work
    lambda-kit soak     the service's own fault soak (make soak)

``run`` and ``soak`` drive a load that belongs to the service, not to lambda_kit: the module its
serverless.yml names under ``custom.lambdaKit`` (``lambda_kit.local.service_load``), which may add
options of its own (listed by ``lambda-kit run --help`` in the service's directory).

Mistakes a user makes (unknown function, bad JSON, a bad option value, port in use,
serverless.yml missing or invalid, an extra not installed ...) print one line on stderr and exit
non-zero, never a traceback. ``trace`` on a log file needs nothing beyond the base install; the
other commands need the ``local`` extra (``pip install 'lambda-event-kit[local]'``) and say so.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TextIO
from urllib.parse import parse_qsl, urlsplit

from . import sources
from .extras import import_optional, missing_extra

DEFAULT_LOGS = os.path.join(".lambda-kit", "logs.jsonl")


class UserError(Exception):
    """Something the user can fix; printed as one line."""


# --- the parser ----------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad command line is one line on stderr (exit 2), not usage + error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def bounded(kind: Callable[[str], Any], low: float | None = None, high: float | None = None, what: str = "") -> Callable[[str], Any]:
    """An argparse type: ``kind`` (int or float) within [low, high]; a value out of range or not a
    number is one error line naming ``what`` it must be (services' load options use it too)."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
        if value != value or (low is not None and value < low) or (high is not None and value > high):
            if high is None:
                bounds = f"at least {low:g}"
            elif low is None:
                bounds = f"at most {high:g}"
            else:
                bounds = f"between {low:g} and {high:g}"
            raise argparse.ArgumentTypeError(f"{text} is out of range: {what or 'the value'} must be {bounds}")
        return value

    return parse


PORT = bounded(int, 0, 65535, "a TCP port (0: any free port)")
COUNT = bounded(int, 1, what="a count")
SEED = bounded(int)


def _log_file(text: str) -> str:
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a directory: give a file, e.g. {DEFAULT_LOGS}")
    return text


def _since(text: str) -> str:
    from .local.timeline import TraceError, parse_since

    try:
        seconds = parse_since(text)
    except TraceError:
        seconds = float("nan")
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a time span: a positive number with s, m, h, d or w, e.g. 1h or 30m")
    return text


def _config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-c", "--config", default="serverless.yml", help="path to serverless.yml (default: %(default)s)")


def _stack_options(parser: argparse.ArgumentParser, port: int) -> None:
    _config_option(parser)
    parser.add_argument("--stage", default=None, help="stage for ${sls:stage} / ${opt:stage} (default: the file's, else dev)")
    parser.add_argument("--port", type=PORT, default=port, help="HTTP API port on 127.0.0.1 (0: any free port; default: %(default)s)")
    parser.add_argument("--logs", default=DEFAULT_LOGS, type=_log_file, metavar="FILE", help="JSON-lines file for every function log line (default: %(default)s)")
    parser.add_argument("--echo", action="store_true", help="also print each log line (short form) on the terminal")


LOAD_EPILOG = (
    "The load is the service's own module, named in its serverless.yml under custom.lambdaKit.{command} "
    "(see docs/local-stack.md); its options are listed here when serverless.yml names one."
)


def _run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-h", "--help", action="store_true", help="show this help message and exit")
    _stack_options(parser, port=0)
    parser.add_argument("--keep", action="store_true", help="keep the stack up and serving after the summary, until Ctrl-C")
    parser.epilog = LOAD_EPILOG.format(command="run")


def _soak_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-h", "--help", action="store_true", help="show this help message and exit")
    _config_option(parser)
    parser.add_argument("--stage", default="soak", help="stage the soak's resources are named with (default: %(default)s)")
    parser.add_argument("--logs", default=DEFAULT_LOGS, type=_log_file, metavar="FILE", help="JSON-lines file for every function log line (default: %(default)s)")
    parser.add_argument("--timeout", type=bounded(float, 1, what="a number of seconds"), default=1200.0, help="seconds for the whole soak (default: %(default)s)")
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON object")
    parser.epilog = LOAD_EPILOG.format(command="soak")


LOAD_COMMANDS = {"run": _run_options, "soak": _soak_options}
"""The commands that drive the service's own load, with the options lambda_kit gives them."""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="lambda-kit", description="Run, trace and check a lambda_kit service locally.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    run = commands.add_parser("run", help="start the local stack, send the service's own load, print its summary", add_help=False)
    _run_options(run)

    local = commands.add_parser("local", help="start the local stack and serve until Ctrl-C")
    _stack_options(local, port=3000)

    trace = commands.add_parser("trace", help="print every log line of one trace id as a timeline")
    trace.add_argument("trace_id", metavar="ID")
    where = trace.add_mutually_exclusive_group()
    where.add_argument("--logs", default=None, type=_log_file, metavar="FILE", help=f"local log file (default: {DEFAULT_LOGS})")
    where.add_argument("--aws", action="store_true", help="read the deployed functions' CloudWatch Logs instead")
    trace.add_argument("--insights", action="store_true", help="with --aws: one CloudWatch Logs Insights query instead of filter_log_events (large volumes)")
    trace.add_argument("--since", default="1h", type=_since, help="with --aws: how far back to search, e.g. 30m, 1h, 2d (default: %(default)s)")
    trace.add_argument("--stage", default=None, help="with --aws: the deployed stage (default: the file's, else dev)")
    trace.add_argument("--region", default=None, help="with --aws: the region (default: the file's, else us-east-1)")
    _config_option(trace)

    invoke = commands.add_parser("invoke", help="invoke one function locally with a generated event")
    invoke.add_argument("function", metavar="FUNCTION")
    invoke.add_argument("--event", required=True, choices=sources.NAMES, help="the event source to generate an event of")
    body = invoke.add_mutually_exclusive_group()
    body.add_argument("--body", default=None, metavar="JSON", help="the message / record payload / request body, as JSON")
    body.add_argument("--file", default=None, metavar="F", help="read the payload from a JSON file")
    invoke.add_argument("--method", default=None, type=_http_method, help="with --event api: HTTP method (default: the function's first route)")
    invoke.add_argument("--path", default=None, type=_request_path, help="with --event api: request path (default: the function's first route)")
    invoke.add_argument("--query", default=None, type=_query, metavar="QUERY", help="with --event api: query string, e.g. 'url=myblog.com/a&days=7'")
    invoke.add_argument("--trace-id", default=None, help="trace id to put on the event")
    _config_option(invoke)
    invoke.add_argument("--stage", default=None, help="stage for ${sls:stage} / ${opt:stage} (default: the file's, else dev)")

    soak = commands.add_parser("soak", help="the service's own fault soak: its load under injected faults, every count checked", add_help=False)
    _soak_options(soak)

    check = commands.add_parser(
        "check",
        help="report serverless.yml mistakes that lose or repeat work",
        description="Report the serverless.yml mistakes that lose or repeat work. Exit status: 0 clean or warnings only, 1 errors, 2 no usable serverless.yml.",
    )
    check.add_argument("path", nargs="?", default=None, metavar="SERVERLESS_YML", help="path to serverless.yml (default: ./serverless.yml)")
    check.add_argument("-c", "--config", default=None, help="the same, as the other commands take it")
    return parser


def _http_method(text: str) -> str:
    if not text.isascii() or not text.isalpha():
        raise argparse.ArgumentTypeError(f"{text!r} is not an HTTP method (GET, POST, ...)")
    return text.upper()


def _request_path(text: str) -> str:
    if not text.startswith("/") or any(c.isspace() for c in text) or "?" in text:
        raise argparse.ArgumentTypeError(f"{text!r} is not a request path: it starts with / (the query string goes in --query)")
    return text


def _query(text: str) -> dict[str, str | list[str]]:
    """``a=1&b=x%20y&b=z`` -> {"a": "1", "b": ["x y", "z"]}: a repeated name keeps every value, and
    the generated event carries them the way its shape does (``lambda_kit.testing.api_event``)."""
    try:
        pairs = parse_qsl(text.removeprefix("?"), keep_blank_values=True, strict_parsing=bool(text.strip("?")))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a query string (name=value&name=value)") from None
    values: dict[str, list[str]] = {}
    for name, value in pairs:
        values.setdefault(name, []).append(value)
    return {name: found[0] if len(found) == 1 else found for name, found in values.items()}


# --- entry point ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command not in LOAD_COMMANDS:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        if args.command in LOAD_COMMANDS:
            module = _load_arguments(args, argv[argv.index(args.command) + 1 :])
            return COMMANDS[args.command](args, module)
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("", file=sys.stderr)
        return 130
    except Exception as exc:
        message = missing_extra(exc) or _user_message(exc)
        if message is not None:
            print(f"lambda-kit {args.command}: {message}", file=sys.stderr)
            return 2
        where = _save_traceback(exc)
        print(f"lambda-kit {args.command}: internal error: {type(exc).__name__}: {_one_line(exc)} (details in {where})", file=sys.stderr)
        return 1


def _load_arguments(args: argparse.Namespace, rest: list[str]) -> Any:
    """``run`` / ``soak``: the service's load module (``custom.lambdaKit``), and the command line
    parsed again with the load's own options added to lambda_kit's (into ``args``)."""
    from .local.config import load_service
    from .local.service_load import load_module

    command = args.command
    parser = _Parser(prog=f"lambda-kit {command}", add_help=False)
    LOAD_COMMANDS[command](parser)
    try:
        module = load_module(load_service(args.config, stage=args.stage), command)
    except Exception:
        if args.help:  # the help lambda_kit can give without the service
            parser.print_help()
            raise SystemExit(0) from None
        raise
    options = getattr(module, "options", None)
    if callable(options):
        options(parser.add_argument_group(f"options of {module.__name__} (the service's load)"))
    if args.help:
        parser.print_help()
        raise SystemExit(0)
    parser.parse_args(rest, namespace=args)
    return module


def _user_message(exc: BaseException) -> str | None:
    from .local.filters import FilterError
    from .local.gateway import PortInUse
    from .local.moto_process import EndpointUnavailable
    from .local.runtime import HandlerImportError
    from .local.service_load import LoadError
    from .local.timeline import TraceError
    from .serverless_config import ConfigError

    if isinstance(exc, UserError | ConfigError | PortInUse | HandlerImportError | TraceError | FilterError | LoadError | EndpointUnavailable):
        return _one_line(exc)
    name = type(exc).__name__
    if name in ("EndpointConnectionError", "ConnectionClosedError"):
        return f"cannot reach the AWS endpoint: {_one_line(exc)}"
    if name in ("NoCredentialsError", "PartialCredentialsError"):
        return "no AWS credentials: configure them (aws configure, AWS_PROFILE) or unset AWS_ENDPOINT_URL"
    return None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _save_traceback(exc: BaseException) -> str:
    path = Path(".lambda-kit") / "last-error.txt"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)), encoding="utf-8")
        return str(path)
    except OSError:
        return "stderr"


# --- starting the stack ----------------------------------------------------------------------------


def _check_endpoint() -> None:
    url = os.environ.get("AWS_ENDPOINT_URL")
    if not url:
        return
    parts = urlsplit(url)
    if not parts.hostname:
        raise UserError(f"AWS_ENDPOINT_URL={url!r} is not a URL: set it to e.g. http://localhost:4566, or unset it to use the embedded moto")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=2).close()
    except OSError:
        raise UserError(f"AWS_ENDPOINT_URL={url} does not answer: start it (e.g. LocalStack) or unset AWS_ENDPOINT_URL to use the embedded moto") from None


def _start_stack(args: argparse.Namespace, out: TextIO, **options: Any) -> Any:
    from .local.config import load_service
    from .local.gateway import PortInUse
    from .local.stack import LocalStack

    config = load_service(args.config, stage=args.stage)
    _check_endpoint()
    if args.port and not _port_free(args.port):
        raise PortInUse(f"port {args.port} on 127.0.0.1 is in use: pass --port with a free port (or --port 0 for any free port)")
    print(f"lambda-kit · {config.service} (stage {config.stage}) from {_relative(config.path)}", file=out)
    out.flush()
    stack = LocalStack(config, api_port=args.port, log_path=args.logs, echo=sys.stderr if args.echo else False, **options)
    stack.start()
    endpoint = f"moto (own process) on {stack.endpoint_url}" if stack.endpoint is not None else f"{stack.endpoint_url} (AWS_ENDPOINT_URL)"
    print(f"  AWS endpoint   {endpoint}", file=out)
    print(f"  DynamoDB       {stack.dynamodb_description}", file=out)
    if stack.gateway is not None:
        routes = " · ".join(route.key for route in stack.gateway.routes)
        print(f"  HTTP API       {stack.api_url}   {routes}", file=out)
    kinds = []
    for runtime in stack.runtimes.values():
        labels = [_source_label(e.kind, e.spec) for e in runtime.function.events] or ["direct only"]
        kinds.append(f"{runtime.function.key} ({', '.join(dict.fromkeys(labels))})")
    print(f"  functions      {' · '.join(kinds)}", file=out)
    print(f"  logs           {args.logs}", file=out)
    for event in stack.journal.events("env.conflict"):
        print(f"  warning: {event['variable']} differs between functions ({' vs '.join(event['values'])}); in-process they share one environment, {event['function']}'s value is used", file=out)
    for event in stack.journal.events("event.unsupported"):
        print(f"  note: {event['function']}: `{event['event_kind']}` events are not emulated locally (invoke it with `lambda-kit invoke`)", file=out)
    out.flush()
    return stack


def _source_label(kind: str, spec: dict[str, Any]) -> str:
    if kind == "stream":
        return f"{_stream_type(spec)} stream"
    return {"httpApi": "http api", "http": "rest api"}.get(kind, kind)


def _stream_type(spec: dict[str, Any]) -> str:
    arn = json.dumps(spec.get("arn", ""))
    return str(spec.get("type") or ("dynamodb" if "dynamodb" in arn.lower() or "Table" in arn else "kinesis"))


def _invoke_kinds(function: Any) -> list[str]:
    """The ``--event`` sources that fit the function's events in serverless.yml."""
    kinds: list[str] = []
    for event in function.events:
        fitting = [source.name for source in sources.for_serverless_event(event.kind)]
        if len(fitting) > 1:  # a stream: kinesis or dynamodb, by its type or ARN
            fitting = [name for name in fitting if name == _stream_type(event.spec)] or fitting
        kinds += fitting
    return list(dict.fromkeys(kinds))


def _port_free(port: int) -> bool:
    from .local.endpoint import port_is_free

    return port_is_free(port)


def _relative(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _serve_until_interrupted(stack: Any, out: TextIO) -> None:
    print(f"  serving until Ctrl-C (API {stack.api_url})", file=out)
    out.flush()
    stop = False

    def interrupted(*_: Any) -> None:
        nonlocal stop
        stop = True

    previous = signal.signal(signal.SIGTERM, interrupted)
    try:
        while not stop:
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    print("  stopped", file=out)


# --- commands --------------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace, load: Any) -> int:
    out = sys.stdout
    stack = _start_stack(args, out)
    try:
        print("", file=out)
        failed = load.run(stack, args, out)
        out.flush()
        if args.keep:
            _serve_until_interrupted(stack, out)
    finally:
        stack.stop()
    if failed:
        print(f"lambda-kit run: FAILED: {'; '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def cmd_local(args: argparse.Namespace) -> int:
    out = sys.stdout
    stack = _start_stack(args, out)
    try:
        _serve_until_interrupted(stack, out)
    finally:
        stack.stop()
    return 0


def cmd_trace(args: argparse.Namespace) -> int:
    from .local import timeline

    _check_trace_id(args.trace_id)
    prefix = ""
    notes: list[str] = []
    if args.aws:
        from .local.config import load_service

        import_optional("boto3", "reading CloudWatch Logs")
        config = load_service(args.config, stage=args.stage, region=args.region)
        prefix = f"{config.service}-{config.stage}-"
        groups = [f"/aws/lambda/{function.name}" for function in config.functions.values()]
        search = timeline.insights_lines if args.insights else timeline.cloudwatch_lines
        lines, notes = search(args.trace_id, groups, timeline.parse_since(args.since), args.region or config.region)
        region = args.region or config.region
        source = f"CloudWatch Logs, {len(groups)} log groups of {config.service}-{config.stage}, last {args.since}"
    else:
        if args.insights:
            raise UserError("--insights searches CloudWatch Logs: use it with --aws")
        region = args.region or "us-east-1"
        path = args.logs or DEFAULT_LOGS
        lines = timeline.lines_of(args.trace_id, timeline.read_log_file(path))
        source = path
        try:
            from .local.config import load_service

            config = load_service(args.config)
            prefix = f"{config.service}-{config.stage}-"
            region = args.region or config.region
        except Exception:
            prefix = ""
    print(f"trace {args.trace_id} — {len(lines)} log lines from {source}")
    if lines:
        print(f"  crosses: {' → '.join(timeline.functions_crossed(lines, prefix))}")
    print(timeline.render(args.trace_id, lines, prefix))
    for note in notes:
        print(f"  note: {note}")
    print(f"  Datadog Logs: {timeline.datadog_query(args.trace_id)}")
    link = timeline.xray_link(args.trace_id, region)
    if link is None:  # lambda_kit's own id: the lines say which X-Ray trace they joined, if any
        joined = next((line["xray_trace_id"] for line in lines if isinstance(line.get("xray_trace_id"), str)), None)
        link = None if joined is None else timeline.xray_link(joined, region)
    if link is not None:
        print(f"  X-Ray: {link}")
    return 0 if lines else 1


def _check_trace_id(value: str, option: str = "") -> None:
    from .trace import is_valid_id

    if not is_valid_id(value):
        raise UserError(f"{option}{value!r} is not a trace id (1-128 letters, digits and -_.:=;/+)")


def _payload(args: argparse.Namespace) -> Any:
    if args.file is not None:
        try:
            text = Path(args.file).read_text(encoding="utf-8")
        except OSError as exc:
            raise UserError(f"--file {args.file}: {exc.strerror or exc}") from None
        where = f"--file {args.file}"
    elif args.body is not None:
        text, where = args.body, "--body"
    else:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UserError(f"{where} is not valid JSON: {exc}") from None


def build_event(
    kind: str, payload: Any, stack: Any, function: Any, method: str | None, path: str | None, trace_id: str | None, query: dict[str, str | list[str]] | None = None
) -> dict[str, Any]:
    from . import testing

    options: dict[str, Any] = {}
    if kind == "api":  # an HTTP request in the shape of the function's front door, to one of its routes
        route_method, route_path, options = _first_route(function)
        options.update(method=(method or route_method).upper(), path=path or route_path, query=query)
    try:
        return testing.event(kind, payload, trace_id=trace_id, source_arn=_event_source_arn(stack, function, kind), **options)
    except ValueError as exc:
        raise UserError(f"--event {kind}: {exc}") from None


def _first_route(function: Any) -> tuple[str, str, dict[str, Any]]:
    """(method, path, ``api_event`` options) of the function's first HTTP event: an HTTP API
    (payload 2.0), a REST API (1.0), an ALB target (multi-value headers as configured) or its
    Function URL (``url:``)."""
    for event in function.events:
        if event.kind in ("httpApi", "http"):
            method = str(event.spec.get("method", "GET"))
            route = str(event.spec.get("path", "/"))
            version = "v2" if event.kind == "httpApi" else "v1"
            route = "/" if route == "*" else route if route.startswith("/") else "/" + route
            return ("GET" if method in ("*", "any", "ANY") else method), route, {"version": version}
        if event.kind == "alb":
            conditions = event.spec.get("conditions") if isinstance(event.spec.get("conditions"), dict) else {}
            methods, paths = conditions.get("method") or ["GET"], conditions.get("path") or ["/"]
            route = str(paths[0] if isinstance(paths, list) else paths).replace("*", "") or "/"
            options = {"version": "alb", "multi_value": event.spec.get("multiValueHeaders") is True}
            return str(methods[0] if isinstance(methods, list) else methods), route, options
    if function.setting("url"):
        return "GET", "/", {"version": "url"}
    return "GET", "/", {}


def _event_source_arn(stack: Any, function: Any, kind: str) -> str | None:
    """The ARN of the function's own event of this source (queue, topic, stream, table), if any."""
    wanted = sources.get(kind).serverless_events
    for event in function.events:
        if event.kind not in wanted:
            continue
        try:
            spec = stack.resources.resolve(event.spec)
        except Exception:
            continue
        arn = spec.get("arn") if isinstance(spec.get("arn"), str) else None
        if arn and f":{kind}:" in arn:  # the ARN's service is the source's name (a stream: kinesis or dynamodb)
            return arn
    return None


def cmd_invoke(args: argparse.Namespace) -> int:
    from . import log as lambda_log
    from .local.config import load_service
    from .local.stack import LocalStack

    http_only = [name for name, value in (("--method", args.method), ("--path", args.path), ("--query", args.query)) if value is not None]
    if http_only and args.event != "api":
        raise UserError(f"{', '.join(http_only)} only apply to --event api, not --event {args.event}")
    if args.trace_id is not None:
        _check_trace_id(args.trace_id, "--trace-id ")
    payload = _payload(args)
    config = load_service(args.config, stage=args.stage)
    function = config.function(args.function)
    kinds = _invoke_kinds(function)
    _check_endpoint()
    lines: list[str] = []
    stack = LocalStack(config, functions=[function.key], api_port=None, log_path=None, event_sources=False, ttl=False)
    stack.start()
    try:
        lambda_log.set_sink(lines.append)
        event = build_event(args.event, payload, stack, function, args.method, args.path, args.trace_id, args.query)
        if kinds and args.event not in kinds:  # said once the event is built: a bad payload is one error line
            print(f"lambda-kit invoke: warning: {function.key} gets {' and '.join(kinds)} events in {_relative(config.path)}, not {args.event}", file=sys.stderr)
        result = stack.invoke(function.key, event)
    finally:
        stack.stop()
    print(f"invoked {function.key} ({function.name}) with {sources.get(args.event).label} in {result.duration * 1000:.1f} ms, request id {result.request_id}")
    if result.error is not None:
        print(f"  error: {type(result.error).__name__}: {_one_line(result.error)}")
    else:
        print("response:")
        print(json.dumps(result.response, indent=2, default=str, ensure_ascii=False))
    print(f"log lines ({len(lines)}):")
    for line in lines:
        sys.stdout.write(line if line.endswith("\n") else line + "\n")
    sys.stdout.flush()
    failure = _failure(result, event)
    if failure is not None:
        print(f"lambda-kit invoke: FAILED: {failure}", file=sys.stderr)
        return 1
    return 0


def _failure(result: Any, event: dict[str, Any]) -> str | None:
    """What failed in one invocation (an error raised, records reported failed, an HTTP 5xx), or None."""
    if result.error is not None:
        return f"the function raised {type(result.error).__name__}"
    response = result.response
    if not isinstance(response, dict):
        return None
    failures = response.get("batchItemFailures")
    if failures:
        records = event.get("Records")
        total = len(records) if isinstance(records, list) else len(failures)
        of = f" of {total}" if isinstance(records, list) else ""
        return f"{len(failures)}{of} record{'s' * (total != 1)} reported in batchItemFailures"
    status = response.get("statusCode")
    if isinstance(status, int) and status >= 500:
        return f"HTTP {status}"
    return None


def cmd_check(args: argparse.Namespace) -> int:
    from .check import main as check_main

    if args.path is not None and args.config is not None and args.path != args.config:
        raise UserError(f"two paths given ({args.path} and -c {args.config}): pass one")
    return check_main([args.path or args.config or "serverless.yml"])


def cmd_soak(args: argparse.Namespace, load: Any) -> int:
    import threading

    # The soak stops waiting at --timeout; should anything hang past it regardless, end the process.
    watchdog = threading.Timer(args.timeout + 120, _soak_overrun, args=(args.timeout + 120,))
    watchdog.daemon = True
    watchdog.start()
    try:
        failed = load.soak(args, sys.stdout)
    finally:
        watchdog.cancel()
    if failed:
        print(f"lambda-kit soak: FAILED: {'; '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _soak_overrun(seconds: float) -> None:
    print(f"lambda-kit soak: FAILED: still running after {seconds:.0f} s; stopped", file=sys.stderr, flush=True)
    os._exit(3)


COMMANDS = {"run": cmd_run, "local": cmd_local, "trace": cmd_trace, "invoke": cmd_invoke, "check": cmd_check, "soak": cmd_soak}


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
