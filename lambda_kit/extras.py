"""The optional parts of lambda_kit, and the extra that installs each.

The decorators need the standard library only; the rest comes with an extra of the
``lambda-event-kit`` distribution::

    pip install 'lambda-event-kit[local]'    # the local stack and the CLI: moto, PyYAML, boto3
    pip install 'lambda-event-kit[fast]'     # orjson
    pip install 'lambda-event-kit[datadog]'  # metrics over DogStatsD
    pip install 'lambda-event-kit[powertools]'
    pip install 'lambda-event-kit[kpl]'      # KPL-aggregated Kinesis records: aws-kinesis-agg
    pip install 'lambda-event-kit[pydantic]' # model= on the decorators

``missing_extra(exc)`` turns the ``ModuleNotFoundError`` of one of those modules into the one
line a user needs; ``import_optional(name)`` imports one, raising ``MissingExtra`` with that line.
"""

from __future__ import annotations

import importlib
from types import ModuleType

DISTRIBUTION = "lambda-event-kit"

# Top-level module -> (what it is, the extra that installs it).
EXTRA_OF_MODULE: dict[str, tuple[str, str]] = {
    "yaml": ("PyYAML", "local"),
    "moto": ("moto", "local"),
    "boto3": ("boto3", "local"),
    "botocore": ("botocore", "local"),
    "orjson": ("orjson", "fast"),
    "datadog": ("datadog", "datadog"),
    "aws_lambda_powertools": ("Powertools for AWS Lambda", "powertools"),
    "aws_kinesis_agg": ("aws-kinesis-agg", "kpl"),
    "pydantic": ("pydantic", "pydantic"),
    "packaging": ("packaging", "local"),
}


class MissingExtra(ModuleNotFoundError):
    """An optional dependency is not installed; the message names the extra that installs it."""


def install_hint(extra: str) -> str:
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def missing_extra(exc: BaseException) -> str | None:
    """The one line for a missing optional dependency, or None when ``exc`` is something else."""
    if isinstance(exc, MissingExtra):
        return str(exc)
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    known = EXTRA_OF_MODULE.get(exc.name.partition(".")[0])
    if known is None:
        return None
    what, extra = known
    return f"{what} is not installed: {install_hint(extra)}"


def _needs(needed_for: str, module: str) -> str | None:
    known = EXTRA_OF_MODULE.get(module)
    if known is None:
        return None
    what, extra = known
    return f"{needed_for} needs {what}: {install_hint(extra)}"


def import_optional(name: str, needed_for: str) -> ModuleType:
    """``import name``; if it (not something it imports) is missing, ``MissingExtra`` saying
    what needs it and which extra installs it."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        itself = exc.name is not None and (name == exc.name or name.startswith(exc.name + "."))  # or a parent
        line = _needs(needed_for, name.partition(".")[0]) if itself else None
        if line is None:
            raise
        raise MissingExtra(line, name=exc.name) from None
