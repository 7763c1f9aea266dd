"""Structured JSON logs: one object per line on standard output, carrying the current trace id.

``line`` builds and writes every line (``emit``), ``mask`` is the one masking rule (``clean``),
``logger`` is the ``logging`` face (``get_logger``). This package gathers what the rest of
lambda_kit uses.
"""

from __future__ import annotations

from .line import (
    LEVELS,
    MAX_LINE_CHARS,
    NAMES,
    current_function_name,
    emit,
    enabled,
    enter_invocation,
    error_fields,
    flush,
    leave_invocation,
    level_from_environment,
    release,
    safe_str,
    set_level,
    set_sink,
    threshold,
)
from .logger import get_logger
from .mask import (
    MASK,
    MAX_DEPTH,
    MAX_VALUE_CHARS,
    SECRET_KEY_PARTS,
    brief,
    clean,
    cut,
    is_secret_key,
    outline,
)

__all__ = [
    "LEVELS",
    "MASK",
    "NAMES",
    "MAX_DEPTH",
    "MAX_LINE_CHARS",
    "MAX_VALUE_CHARS",
    "SECRET_KEY_PARTS",
    "brief",
    "clean",
    "current_function_name",
    "cut",
    "emit",
    "enabled",
    "enter_invocation",
    "error_fields",
    "flush",
    "get_logger",
    "is_secret_key",
    "leave_invocation",
    "level_from_environment",
    "outline",
    "release",
    "safe_str",
    "set_level",
    "set_sink",
    "threshold",
]
