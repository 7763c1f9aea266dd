"""The ``lambda-kit`` command line: its parser, and the argument types that make a bad value one
error line (``bounded`` is public: a service's load adds options with it)."""

from __future__ import annotations

import argparse
import os
import stat
from collections.abc import Callable
from typing import Any, NoReturn
from urllib.parse import parse_qsl

from .. import sources
from ..local.terminal import printable
from ..local.timeline import TraceError, parse_since
from ._help import TOPICS
from ._new import add_options as add_new_options

DEFAULT_LOGS = os.path.join(".lambda-kit", "logs.jsonl")


class Parser(argparse.ArgumentParser):
    """argparse, but a bad command line is one line on stderr (exit 2), not usage + error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, printable(f"{self.prog}: {message} (see {self.prog} --help)") + "\n")


def _bounds(low: float | None, high: float | None) -> str:
    if high is None:
        return f"at least {low:g}"
    return f"at most {high:g}" if low is None else f"between {low:g} and {high:g}"


def bounded(
    kind: Callable[[str], Any], low: float | None = None, high: float | None = None, what: str = ""
) -> Callable[[str], Any]:
    """An argparse type: ``kind`` (int or float) within [low, high]; a value out of range or not a
    number is one error line naming ``what`` it must be (services' load options use it too)."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not {'an integer' if kind is int else 'a number'}"
            ) from None
        if value != value or (low is not None and value < low) or (high is not None and value > high):
            raise argparse.ArgumentTypeError(
                f"{text} is out of range: {what or 'the value'} must be {_bounds(low, high)}"
            )
        return value

    return parse


PORT = bounded(int, 0, 65535, "a TCP port (0: any free port)")
COUNT = bounded(int, 1, what="a count")
SEED = bounded(int)


def _log_file(text: str) -> str:
    """A log file: not a directory, nor a FIFO or socket (opening one waits for the other end).
    Reading one also refuses a device (``lambda_kit.serverless_config.open_regular``)."""
    try:
        mode = os.stat(text).st_mode
    except OSError:
        return text
    if stat.S_ISDIR(mode):
        raise argparse.ArgumentTypeError(f"{text} is a directory: give a file, e.g. {DEFAULT_LOGS}")
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        raise argparse.ArgumentTypeError(
            f"{text} is a FIFO or a socket, which would block: give a file, e.g. {DEFAULT_LOGS}"
        )
    return text


def _since(text: str) -> str:
    try:
        seconds = parse_since(text)
    except TraceError:
        seconds = float("nan")
    if not seconds > 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time span: a positive number with s, m, h, d or w, e.g. 1h or 30m"
        )
    return text


def _http_method(text: str) -> str:
    if not text.isascii() or not text.isalpha():
        raise argparse.ArgumentTypeError(f"{text!r} is not an HTTP method (GET, POST, ...)")
    return text.upper()


def _request_path(text: str) -> str:
    if not text.startswith("/") or any(c.isspace() for c in text) or "?" in text:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a request path: it starts with / (the query string goes in --query)"
        )
    return text


def _query(text: str) -> dict[str, str | list[str]]:
    """``a=1&b=x%20y&b=z`` -> {"a": "1", "b": ["x y", "z"]}: a repeated name keeps every value, and
    the generated event carries them the way its shape does (``lambda_kit.testing.api_event``)."""
    try:
        pairs = parse_qsl(
            text.removeprefix("?"), keep_blank_values=True, strict_parsing=bool(text.strip("?"))
        )
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a query string (name=value&name=value)") from None
    values: dict[str, list[str]] = {}
    for name, value in pairs:
        values.setdefault(name, []).append(value)
    return {name: found[0] if len(found) == 1 else found for name, found in values.items()}


def _path_param(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError(f"{text!r} is not a path parameter: NAME=VALUE, e.g. id=o-1")
    return name, value


def _config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-c", "--config", default="serverless.yml", help="path to serverless.yml (default: %(default)s)"
    )


def _stage_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stage", default=None, help="stage for ${sls:stage} / ${opt:stage} (default: the file's, else dev)"
    )


def _logs_option(
    parser: argparse.ArgumentParser, what: str = "JSON-lines file for every function log line"
) -> None:
    parser.add_argument(
        "--logs",
        default=DEFAULT_LOGS,
        type=_log_file,
        metavar="FILE",
        help=f"{what} (default: %(default)s, linking to this run's file among every run's)",
    )


def _stack_options(parser: argparse.ArgumentParser, port: int) -> None:
    _config_option(parser)
    _stage_option(parser)
    parser.add_argument(
        "--port",
        type=PORT,
        default=port,
        help="HTTP API port on 127.0.0.1 (0: any free port; default: %(default)s)",
    )
    _logs_option(parser)
    parser.add_argument(
        "--echo", action="store_true", help="also print each log line (short form) on the terminal"
    )
    parser.add_argument(
        "--no-iam",
        dest="iam",
        action="store_false",
        help="let every AWS call of the functions through, whatever their roles allow (they are still "
        "recorded: `lambda-kit check` lists the ones the roles would deny)",
    )


LOAD_EPILOG = (
    "The load is the service's own module, named in its serverless.yml under custom.lambdaKit.{command} "
    "(see `lambda-kit help load`); its options are listed here when serverless.yml names one."
)


def _run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-h", "--help", action="store_true", help="show this help message and exit")
    _stack_options(parser, port=0)
    parser.add_argument(
        "--keep", action="store_true", help="keep the stack up and serving after the summary, until Ctrl-C"
    )
    parser.epilog = LOAD_EPILOG.format(command="run")


def _soak_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-h", "--help", action="store_true", help="show this help message and exit")
    _config_option(parser)
    parser.add_argument(
        "--stage", default="soak", help="stage the soak's resources are named with (default: %(default)s)"
    )
    _logs_option(parser)
    parser.add_argument(
        "--timeout",
        type=bounded(float, 1, what="a number of seconds"),
        default=1200.0,
        help="seconds for the whole soak (default: %(default)s)",
    )
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON object")
    parser.epilog = LOAD_EPILOG.format(command="soak")


LOAD_COMMANDS = {"run": _run_options, "soak": _soak_options}
"""The commands that drive the service's own load, with the options lambda_kit gives them."""


def _trace_options(trace: argparse.ArgumentParser) -> None:
    trace.add_argument("trace_id", metavar="ID")
    where = trace.add_mutually_exclusive_group()
    where.add_argument(
        "--logs",
        default=None,
        type=_log_file,
        metavar="FILE",
        help=f"local log file (default: {DEFAULT_LOGS}, every run's file, the newest first)",
    )
    where.add_argument(
        "--aws", action="store_true", help="read the deployed functions' CloudWatch Logs instead"
    )
    trace.add_argument(
        "--limit",
        default=1,
        type=COUNT,
        metavar="N",
        help="the local runs to show the trace from, the newest first (default: %(default)s)",
    )
    trace.add_argument(
        "--insights",
        action="store_true",
        help="with --aws: one CloudWatch Logs Insights query instead of filter_log_events (large volumes)",
    )
    trace.add_argument(
        "--since",
        default="1h",
        type=_since,
        help="with --aws: how far back to search, e.g. 30m, 1h, 2d (default: %(default)s)",
    )
    trace.add_argument(
        "--stage", default=None, help="with --aws: the deployed stage (default: the file's, else dev)"
    )
    trace.add_argument(
        "--region", default=None, help="with --aws: the region (default: the file's, else us-east-1)"
    )
    _config_option(trace)


def _invoke_options(invoke: argparse.ArgumentParser) -> None:
    invoke.add_argument("function", metavar="FUNCTION")
    invoke.add_argument(
        "--event", required=True, choices=sources.NAMES, help="the event source to generate an event of"
    )
    body = invoke.add_mutually_exclusive_group()
    body.add_argument(
        "--body", default=None, metavar="JSON", help="the message / record payload / request body, as JSON"
    )
    body.add_argument("--file", default=None, metavar="F", help="read the payload from a JSON file")
    invoke.add_argument(
        "--method",
        default=None,
        type=_http_method,
        help="with --event api: HTTP method (default: the function's first route)",
    )
    invoke.add_argument(
        "--path",
        default=None,
        type=_request_path,
        help="with --event api: request path (default: the function's first route); its route's "
        "{parameters} are filled from it",
    )
    invoke.add_argument(
        "--path-param",
        action="append",
        default=None,
        type=_path_param,
        dest="path_params",
        metavar="NAME=VALUE",
        help="with --event api: set one path parameter (repeat for more)",
    )
    invoke.add_argument(
        "--query",
        default=None,
        type=_query,
        metavar="QUERY",
        help="with --event api: query string, e.g. 'url=myblog.com/a&days=7'",
    )
    invoke.add_argument("--trace-id", default=None, help="trace id to put on the event")
    invoke.add_argument(
        "--new-stack",
        action="store_true",
        help="start a stack of its own even when `lambda-kit local` serves the service (fresh state)",
    )
    _logs_option(invoke, "a stack of its own's log file")
    _config_option(invoke)
    _stage_option(invoke)


def _check_options(check: argparse.ArgumentParser) -> None:
    check.add_argument(
        "path",
        nargs="?",
        default=None,
        metavar="SERVERLESS_YML",
        help="path to serverless.yml (default: ./serverless.yml)",
    )
    check.add_argument("-c", "--config", default=None, help="the same, as the other commands take it")


def _help_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "topic",
        nargs="?",
        default=None,
        choices=sorted(TOPICS),
        metavar="TOPIC",
        help=f"one of: {', '.join(sorted(TOPICS))}",
    )


CHECK_DESCRIPTION = (
    "Report the serverless.yml mistakes that lose or repeat work. "
    "Exit status: 0 clean or warnings only, 1 errors, 2 no usable serverless.yml."
)

NEW_HELP = (
    "Write a new service of your own in DIR (new or empty): its functions, their tests, serverless.yml, "
    "the packaging, and lambda_kit's wheel in vendor/. Its README.md gives the three commands: test, "
    "check and serve, package."
)

SUBCOMMANDS: list[tuple[str, dict[str, Any], Callable[[argparse.ArgumentParser], None]]] = [
    (
        "run",
        {"help": "start the local stack, send the service's own load, print its summary", "add_help": False},
        _run_options,
    ),
    (
        "local",
        {"help": "start the local stack and serve until Ctrl-C"},
        lambda parser: _stack_options(parser, port=3000),
    ),
    ("trace", {"help": "print every log line of one trace id as a timeline"}, _trace_options),
    ("invoke", {"help": "invoke one function locally with a generated event"}, _invoke_options),
    (
        "soak",
        {
            "help": "the service's own fault soak: its load under injected faults, every count checked",
            "add_help": False,
        },
        _soak_options,
    ),
    (
        "check",
        {"help": "report serverless.yml mistakes that lose or repeat work", "description": CHECK_DESCRIPTION},
        _check_options,
    ),
    ("help", {"help": "explain a topic the messages point at (local, load, check ...)"}, _help_options),
    (
        "new",
        {"help": "write a new service: functions, tests, serverless.yml, packaging", "description": NEW_HELP},
        add_new_options,
    ),
]
"""Each command: its name, what ``add_parser`` takes, and the function adding its options."""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="lambda-kit", description="Run, trace and check a lambda_kit service locally.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    for name, settings, add_options in SUBCOMMANDS:
        add_options(commands.add_parser(name, **settings))
    return parser
