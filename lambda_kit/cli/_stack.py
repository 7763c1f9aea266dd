"""``lambda-kit run | local | soak``: the local stack started from serverless.yml, serving, or
driven by the service's own load (``lambda_kit.local.service_load``)."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading
from typing import Any, TextIO
from urllib.parse import urlsplit

from ..local import running
from ..local.config import EventSource, FunctionConfig, ServiceConfig, load_service
from ..local.service_load import load_module
from ..local.terminal import printable, shown_path
from ._errors import UserError
from ._options import LOAD_COMMANDS, Parser


def load_arguments(args: argparse.Namespace, rest: list[str]) -> Any:
    """``run`` / ``soak``: the service's load module (``custom.lambdaKit``), and the command line
    parsed again with the load's own options added to lambda_kit's (into ``args``)."""
    command = args.command
    parser = Parser(prog=f"lambda-kit {command}", add_help=False)
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


def check_endpoint() -> None:
    """``AWS_ENDPOINT_URL``, when set, is a URL that answers."""
    url = os.environ.get("AWS_ENDPOINT_URL")
    if not url:
        return
    parts = urlsplit(url)
    if not parts.hostname:
        raise UserError(
            f"AWS_ENDPOINT_URL={url!r} is not a URL: set it to e.g. http://localhost:4566, or unset it to "
            "use the embedded moto"
        )
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=2).close()
    except OSError:
        raise UserError(
            f"AWS_ENDPOINT_URL={url} does not answer: start it (e.g. LocalStack) or unset "
            "AWS_ENDPOINT_URL to use the embedded moto"
        ) from None


LABELS = {"httpApi": "http api", "http": "rest api", "stream": "{source} stream"}
"""How the banner names a function's events of a kind (by default, the kind)."""


def _label(config: ServiceConfig, event: EventSource) -> str:
    found = config.sources_of(event)
    return LABELS.get(event.kind, event.kind).format(source=found[0].name if found else event.kind)


def _labels(config: ServiceConfig, function: FunctionConfig) -> str:
    return ", ".join(dict.fromkeys(_label(config, event) for event in function.events)) or "direct only"


def _start_stack(args: argparse.Namespace, out: TextIO, **options: Any) -> tuple[Any, Any]:
    """The stack, started and announced (``lambda_kit.local.running``: ``lambda-kit invoke`` finds
    it), and its Lambda Invoke API."""
    from ..local import endpoint, lambda_api, stack  # the local stack: moto and boto3, the local extra

    config = load_service(args.config, stage=args.stage)
    check_endpoint()
    if args.port and not endpoint.port_is_free(args.port):
        raise UserError(
            f"port {args.port} on 127.0.0.1 is in use: pass --port with a free port (or --port 0 for any "
            "free port)"
        )
    _say(out, f"lambda-kit · {config.service} (stage {config.stage}) from {shown_path(config.path)}")
    stack = stack.LocalStack(
        config,
        api_port=args.port,
        log_path=args.logs,
        echo=sys.stderr if args.echo else False,
        iam=getattr(args, "iam", True),
        **options,
    )
    stack.start()
    try:
        api = lambda_api.LambdaApi(stack).start()
        running.announce(stack, api.url, stack.log.run_path if stack.log is not None else None)
    except BaseException:
        stack.stop()
        raise
    _banner(stack, api, args, out)
    return stack, api


def _stop(stack: Any, api: Any) -> None:
    running.withdraw(stack.config.path)
    api.stop()
    stack.stop()


def _say(out: TextIO, text: str) -> None:
    print(printable(text), file=out, flush=True)


def _banner(stack: Any, api: Any, args: argparse.Namespace, out: TextIO) -> None:
    endpoint = (
        f"moto (own process) on {stack.endpoint_url}"
        if stack.endpoint is not None
        else f"{stack.endpoint_url} (AWS_ENDPOINT_URL)"
    )
    _say(out, f"  AWS endpoint   {endpoint}")
    _say(out, f"  DynamoDB       {stack.dynamodb_description}")
    if stack.gateway is not None:
        _say(
            out,
            f"  HTTP API       {stack.api_url}   {' · '.join(route.key for route in stack.gateway.routes)}",
        )
    functions = [
        f"{runtime.function.key} ({_labels(stack.config, runtime.function)})"
        for runtime in stack.runtimes.values()
    ]
    _say(out, f"  functions      {' · '.join(functions)}")
    _say(
        out, f"  Lambda API     {api.url}   (lambda-kit invoke sends here; aws lambda invoke --endpoint-url)"
    )
    _say(out, f"  logs           {args.logs}")
    _notes(stack, out)


def _notes(stack: Any, out: TextIO) -> None:
    """What the stack noted at start: roles it cannot read, events not emulated."""
    if not stack.iam:
        _say(out, "  IAM            off (--no-iam): every AWS call of the functions is let through")
    for event in stack.journal.events("iam.unknown"):
        _say(
            out,
            f"  note: {event['function']}: its AWS calls are not authorised locally ({event['why']}); "
            "they are recorded",
        )
    for event in stack.journal.events("event.unsupported"):
        _say(
            out,
            f"  note: {event['function']}: `{event['event_kind']}` events are not emulated locally "
            "(invoke it with `lambda-kit invoke`)",
        )


def _serve_until_interrupted(stack: Any, out: TextIO) -> None:
    _say(out, f"  serving until Ctrl-C (API {stack.api_url})")
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(0.2):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    _say(out, "  stopped")


def cmd_run(args: argparse.Namespace, load: Any) -> int:
    out = sys.stdout
    stack, api = _start_stack(args, out)
    try:
        print("", file=out)
        failed = load.run(stack, args, out)
        out.flush()
        if args.keep:
            _serve_until_interrupted(stack, out)
    finally:
        _stop(stack, api)
    return _verdict("run", failed)


def cmd_local(args: argparse.Namespace) -> int:
    stack, api = _start_stack(args, sys.stdout)
    try:
        _serve_until_interrupted(stack, sys.stdout)
    finally:
        _stop(stack, api)
    return 0


def cmd_soak(args: argparse.Namespace, load: Any) -> int:
    # The soak stops waiting at --timeout; should anything hang past it regardless, end the process.
    watchdog = threading.Timer(args.timeout + 120, _soak_overrun, args=(args.timeout + 120,))
    watchdog.daemon = True
    watchdog.start()
    try:
        failed = load.soak(args, sys.stdout)
    finally:
        watchdog.cancel()
    return _verdict("soak", failed)


def _verdict(command: str, failed: list[str]) -> int:
    if failed:
        print(printable(f"lambda-kit {command}: FAILED: {'; '.join(failed)}"), file=sys.stderr)
        return 1
    return 0


def _soak_overrun(seconds: float) -> None:
    print(
        f"lambda-kit soak: FAILED: still running after {seconds:.0f} s; stopped", file=sys.stderr, flush=True
    )
    os._exit(3)
