"""What a handler's module pays on Lambda's cold start: importing a decorator and ``get_logger``,
making a logger and decorating a function load no module Lambda's runtime has not already loaded
(json, logging, traceback ... ``bench/core.py``'s ``RUNTIME_IMPORTS``) beyond lambda_kit's own and
the few standard ones it needs. ``make bench`` measures the milliseconds; this keeps the modules
that cost them (typing ~4 ms, urllib.parse ~5 ms, base64 with struct ...) from coming back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lambda_kit.sources import all_sources

ROOT = Path(__file__).resolve().parent.parent
RUNTIME_IMPORTS = "import importlib, json, logging, os, sys, time, traceback"  # awslambdaric's bootstrap.py
ALLOWED = {"__future__", "contextvars", "_contextvars", "binascii", "collections.abc"}  # standard modules lambda_kit needs


@pytest.mark.parametrize("decorator", sorted({source.decorator for source in all_sources()}))
def test_a_decorated_handler_loads_nothing_heavy_beyond_lambdas_runtime(decorator):
    code = (
        f"{RUNTIME_IMPORTS}\nbefore = set(sys.modules)\n"
        f"from lambda_kit import {decorator}, get_logger\nlog = get_logger(__name__)\n"
        f"@{decorator}\ndef handler(event, context):\n    return None\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True, env=env, cwd=ROOT)
    loaded = set(json.loads(out.stdout))
    others = sorted(m for m in loaded - ALLOWED if m != "lambda_kit" and not m.startswith("lambda_kit."))
    assert others == []
