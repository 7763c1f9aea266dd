"""What a handler's module pays on Lambda's cold start: importing a decorator and ``get_logger``,
making a logger and decorating a function load nothing heavy: no third-party package (boto3,
orjson, pydantic ...) and none of the standard library's large subsystems (asyncio, email, http.client).
``make bench`` measures the milliseconds; the modules of rare paths (a failure, a requeue, a KPL
aggregate, an async function) are loaded when one is taken."""

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
# heavy on a cold start: third-party packages, and the standard library's large subsystems
HEAVY = (
    "asyncio",
    "boto3",
    "botocore",
    "datadog",
    "aws_lambda_powertools",
    "orjson",
    "ujson",
    "pydantic",
    "yaml",
    "moto",
    "opentelemetry",
    "email",
    "http.client",
    "http.server",
    "urllib.request",
    "concurrent",
    "multiprocessing",
)


DECORATORS = sorted({source.decorator for source in all_sources()})

# Modules of rare paths, loaded when one is taken (a failure, a requeue, a KPL aggregate, a base64
# body ...), never by importing and decorating, except by the decorators named beside them.
# The stream adapters import what they read with (awslogs, kpl) and requeue through (aws) at the
# top, as ordinary modules: they cost nothing heavy, what is heavy in them (boto3, aws-kinesis-agg's
# protobuf) is imported on first use.
RARE = {
    "lambda_kit.aws": {"stream_handler"},
    "lambda_kit.sources.kpl": {"stream_handler"},
    "lambda_kit.sources.awslogs": {"cloudwatch_logs_handler", "stream_handler"},
    "lambda_kit.loop.concurrent": set(),
    "lambda_kit.loop.event_loop": set(),
    "lambda_kit.metrics.emf": set(),  # loaded with the first metric written
    "lambda_kit.metrics.datadog": set(),
    "lambda_kit.idempotency": set(),
}


def loaded_by(decorator: str) -> set[str]:
    """The modules importing ``decorator`` and ``get_logger``, making a logger and decorating a
    function load, in a fresh interpreter after what Lambda's runtime has imported."""
    code = (
        f"{RUNTIME_IMPORTS}\nbefore = set(sys.modules)\n"
        f"from lambda_kit import {decorator}, get_logger\nlog = get_logger(__name__)\n"
        f"@{decorator}\ndef handler(event, context):\n    return None\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True, env=env, cwd=ROOT
    )
    return set(json.loads(out.stdout))


@pytest.mark.parametrize("decorator", DECORATORS)
def test_a_decorated_handler_loads_nothing_heavy_beyond_lambdas_runtime(decorator):
    loaded = loaded_by(decorator)
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY or m in HEAVY)
    assert heavy == []
    assert {m for m in loaded if m.startswith("lambda_kit.")} >= {
        "lambda_kit.decorators",
        "lambda_kit.log",
        "lambda_kit.log.logger",
    }


@pytest.mark.parametrize("decorator", DECORATORS)
def test_the_modules_of_rare_paths_are_loaded_only_when_taken(decorator):
    loaded = loaded_by(decorator)
    assert sorted(m for m, wanted_by in RARE.items() if m in loaded and decorator not in wanted_by) == []
