"""What the user sees when a command fails: one line naming what to fix, or, for a bug, one line
and the traceback saved to ``.lambda-kit/last-error.txt``."""

from __future__ import annotations

import traceback
from pathlib import Path

from ..extras import missing_extra
from ..local.service_load import LoadError
from ..local.terminal import printable
from ..local.timeline import TraceError
from ..serverless_config import ConfigError


class UserError(Exception):
    """Something the user can fix; printed as one line."""


USER_ERRORS = (UserError, ConfigError, TraceError, LoadError)

STACK_ERRORS = frozenset(
    {
        "lambda_kit.local.filters.FilterError",
        "lambda_kit.local.gateway.PortInUse",
        "lambda_kit.local.moto_process.EndpointUnavailable",
        "lambda_kit.local.requirements.RequirementsError",
        "lambda_kit.local.runtime_libraries.RuntimeUnavailable",
    }
)
"""The local stack's user errors, by name: importing their modules would load the stack."""

AWS_ERRORS = {
    "EndpointConnectionError": "cannot reach the AWS endpoint: {}",
    "ConnectionClosedError": "cannot reach the AWS endpoint: {}",
    "NoCredentialsError": "no AWS credentials: configure them (aws configure, AWS_PROFILE) or unset "
    "AWS_ENDPOINT_URL",
    "PartialCredentialsError": "no AWS credentials: configure them (aws configure, AWS_PROFILE) or unset "
    "AWS_ENDPOINT_URL",
}
"""botocore's errors a user fixes, by class name (botocore comes with the local extra)."""


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _os_error(exc: OSError) -> str:
    reason = exc.strerror or one_line(exc)
    return f"cannot use {exc.filename}: {reason}" if exc.filename is not None else reason


def _user_message(exc: BaseException) -> str | None:
    names = {f"{kind.__module__}.{kind.__qualname__}" for kind in type(exc).__mro__}
    if isinstance(exc, USER_ERRORS) or names & STACK_ERRORS:
        return one_line(exc)
    if isinstance(exc, OSError):
        return _os_error(exc)
    template = AWS_ERRORS.get(type(exc).__name__)
    return template.format(one_line(exc)) if template is not None else None


def _save_traceback(exc: BaseException) -> str:
    path = Path(".lambda-kit") / "last-error.txt"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)), encoding="utf-8"
        )
        return str(path)
    except OSError:
        return "stderr"


def failure_line(command: str, exc: BaseException) -> tuple[str, int]:
    """(the line to print on stderr, the exit status) for a command that raised ``exc``: 2 for
    what the user can fix, 1 for a bug (its traceback saved)."""
    message = missing_extra(exc) or _user_message(exc)
    if message is not None:
        return printable(f"lambda-kit {command}: {message}"), 2
    where = _save_traceback(exc)
    return printable(
        f"lambda-kit {command}: internal error: {type(exc).__name__}: {one_line(exc)} (details in {where})"
    ), 1
