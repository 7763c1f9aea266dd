"""``lambda-kit``: run the service locally, trace a request, invoke a function, check the config.

    lambda-kit run      start the local stack, drive the service's own load, print its summary
    lambda-kit local    start the local stack and serve until Ctrl-C
    lambda-kit trace    every log line of one trace id, across functions, as a timeline
    lambda-kit invoke   one local invocation with a generated event
    lambda-kit check    the serverless.yml mistakes that lose or repeat work
    lambda-kit soak     the service's own fault soak (make soak)
    lambda-kit help     the topics error messages point at (local, load, check)
    lambda-kit new      a new service of your own: functions, tests, serverless.yml, packaging

``run`` and ``soak`` drive a load that belongs to the service, not to lambda_kit: the module its
serverless.yml names under ``custom.lambdaKit`` (``lambda_kit.local.service_load``), which may add
options of its own (listed by ``lambda-kit run --help`` in the service's directory).

Mistakes a user makes (unknown function, bad JSON, a bad option value, port in use,
serverless.yml missing or invalid, a FIFO or a device given as a file, an extra not installed ...)
print one line on stderr and exit non-zero, never a traceback; what a command prints from logs,
events and files has its control characters escaped. ``trace`` on a log file, ``help`` and ``new``
need nothing beyond the base install; the other commands need the ``local`` extra (``pip install
'lambda-event-kit[local]'``) and say so.

The modules: ``_options`` (the parser), ``_stack`` (run, local, soak), ``_trace``, ``_invoke``,
``check``, ``_help``, ``_new`` (and its ``templates/``), ``_errors`` (the one line a failure prints).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from ._errors import UserError, failure_line
from ._help import cmd_help
from ._invoke import cmd_invoke
from ._new import cmd_new
from ._options import COUNT, LOAD_COMMANDS, PORT, SEED, bounded, build_parser
from ._stack import cmd_local, cmd_run, cmd_soak, load_arguments
from ._trace import cmd_trace

__all__ = ["COUNT", "PORT", "SEED", "UserError", "bounded", "build_parser", "main"]


def cmd_check(args: argparse.Namespace) -> int:
    from .check import main as check_main  # it reads requirements with packaging, the local extra's

    given = {args.path, args.config} - {None}
    if len(given) > 1:
        raise UserError(f"two paths given ({args.path} and -c {args.config}): pass one")
    return check_main(list(given) or ["serverless.yml"])


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "local": cmd_local,
    "trace": cmd_trace,
    "invoke": cmd_invoke,
    "check": cmd_check,
    "help": cmd_help,
    "new": cmd_new,
}
LOAD_RUNNERS: dict[str, Callable[[argparse.Namespace, Any], int]] = {"run": cmd_run, "soak": cmd_soak}
"""The commands that drive the service's own load: they get its module too."""


def _run(args: argparse.Namespace, argv: list[str]) -> int:
    if args.command in LOAD_COMMANDS:
        module = load_arguments(args, argv[argv.index(args.command) + 1 :])
        return LOAD_RUNNERS[args.command](args, module)
    return COMMANDS[args.command](args)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command not in LOAD_COMMANDS:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return _run(args, argv)
    except KeyboardInterrupt:
        print("", file=sys.stderr)
        return 130
    except Exception as exc:
        line, status = failure_line(args.command, exc)
        print(line, file=sys.stderr)
        return status
