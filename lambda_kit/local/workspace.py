"""Where a stack's functions run from, and with what: each function's task root (``task_root.py``),
the service's requirements (``requirements.py``), the runtime's own libraries
(``runtime_libraries.py``), and the environment Lambda would give the function.

Everything a stack builds lives in ``.lambda-kit/stacks/<pid>-<n>/`` beside serverless.yml and is
removed when the stack stops (a stack that was killed leaves its directory: the next stack of the
project removes the ones whose process is gone). The requirements are in the user's cache, shared.

A worker is ``python -S -m awslambdaric module.handler``: ``-S`` keeps the interpreter's
site-packages (the development venv) off ``sys.path``, whose entries are then ``PYTHONPATH``'s only:
the task root, the requirements, the runtime's libraries, as ``/var/task`` and ``/var/runtime``
are on Lambda. Its environment is built here, from nothing: the function's variables (the
provider's and its own, resolved), then what Lambda sets (``AWS_LAMBDA_*``, ``_HANDLER``,
``LAMBDA_TASK_ROOT``, ``AWS_REGION`` ...), ``AWS_LAMBDA_LOG_FORMAT`` / ``AWS_LAMBDA_LOG_LEVEL`` from
the function's logging config (``logs`` or ``provider.logs.lambda``: ``logFormat``,
``applicationLogLevel``, ``logGroup``, as osls writes them into ``LoggingConfig``) and the
credentials and endpoints the stack gives the function. Nothing of the stack's own environment
passes but ``PATH``, ``LANG`` and ``HOME``.
"""

from __future__ import annotations

import itertools
import os
import shutil
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from .._data import mapping
from .config import FunctionConfig, ServiceConfig
from .environments import Launch
from .poller import Timing
from .requirements import installed
from .runtime_libraries import assemble
from .task_root import Artifact, artifact_of, build, selected_files

_stack_ids = itertools.count(1)
PASSED = ("PATH", "LANG", "HOME")
"""The stack's own variables a worker gets (Lambda sets its own PATH and LANG; HOME lets pip-installed
tools find their caches)."""



class Workspace:
    """One stack's build directory and the launches of its functions."""

    def __init__(self, config: ServiceConfig, timing: Timing, own_files: list[Path] | None = None) -> None:
        self.config = config
        self.timing = timing
        self.own_files = [
            path.resolve().relative_to(config.project_dir.resolve()).as_posix()
            for path in own_files or []
            if path.resolve().is_relative_to(config.project_dir.resolve())
        ]
        """The stack's own files in the project (its log file): never in a task root."""
        stacks = config.project_dir / ".lambda-kit" / "stacks"
        _remove_abandoned(stacks)
        self.root = stacks / f"{os.getpid()}-{next(_stack_ids)}"
        self.root.mkdir(parents=True, exist_ok=True)
        self.runtime_dir = assemble(self.root / "runtime")
        self.requirements = installed(config)
        self._roots: dict[Artifact, tuple[Path, list[str]]] = {}
        self._lock = threading.Lock()

    def task_root(self, function: FunctionConfig, fresh: bool = False) -> Path:
        """The function's task root, built once per artifact (again when ``fresh``)."""
        artifact = self._artifact(function)
        with self._lock:
            if fresh or artifact not in self._roots:
                self._roots[artifact] = build(self.config.project_dir, artifact, self.root / "task")
            return self._roots[artifact][0]

    @property
    def files(self) -> set[str]:
        """Every file copied into a task root (relative to the project)."""
        with self._lock:
            return {file for _, files in self._roots.values() for file in files}

    def holds(self, function: FunctionConfig, changed: set[str]) -> bool:
        """Whether one of ``changed`` is (or would now be) in the function's task root."""
        artifact = self._artifact(function)
        with self._lock:
            before = set(self._roots[artifact][1]) if artifact in self._roots else set()
        return bool(changed & before) or bool(
            changed & set(selected_files(self.config.project_dir, artifact.patterns))
        )

    def _artifact(self, function: FunctionConfig) -> Artifact:
        artifact = artifact_of(self.config, function)
        return Artifact(artifact.name, (*artifact.patterns, *(f"!{file}" for file in self.own_files)))

    def logging(self, function: FunctionConfig) -> dict[str, Any]:
        """The function's logging config (``logs``, else ``provider.logs.lambda``)."""
        own = function.setting("logs")
        return dict(
            mapping(own if own is not None else mapping(self.config.provider.get("logs")).get("lambda"))
        )

    def concurrency(self, function: FunctionConfig) -> int:
        """At most this many environments at once: ``reservedConcurrency``, else the local default."""
        reserved = function.setting("reservedConcurrency")
        if isinstance(reserved, int) and not isinstance(reserved, bool) and reserved >= 0:
            return reserved
        return self.timing.function_concurrency

    def launch(
        self, function: FunctionConfig, variables: dict[str, str], aws: dict[str, str], fresh: bool = False
    ) -> Launch:
        """How to start one of ``function``'s workers (see the module's docstring)."""
        task_root = self.task_root(function, fresh)
        path = [
            str(task_root),
            *([str(self.requirements)] if self.requirements else []),
            str(self.runtime_dir),
        ]
        env = {key: os.environ[key] for key in PASSED if key in os.environ}
        env.update(variables)
        env.update(aws)
        env.update(self._lambda_variables(function, task_root))
        env["PYTHONPATH"] = os.pathsep.join(path)
        command = [sys.executable, "-S", "-m", "awslambdaric", function.handler]
        return Launch(command, env, task_root, function.memory)

    def _lambda_variables(self, function: FunctionConfig, task_root: Path) -> dict[str, str]:
        logging = self.logging(function)
        found = {
            "LAMBDA_TASK_ROOT": str(task_root),
            "LAMBDA_RUNTIME_DIR": str(self.runtime_dir),
            "_HANDLER": function.handler,
            # the Python that runs (the stack's), not serverless.yml's `runtime`: awslambdaric polls
            # from a thread of its own on 3.12 and later, which costs an invocation 2 ms here
            "AWS_EXECUTION_ENV": f"AWS_Lambda_python{sys.version_info.major}.{sys.version_info.minor}",
            "AWS_LAMBDA_FUNCTION_NAME": function.name,
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory or 128),
            "AWS_LAMBDA_LOG_GROUP_NAME": str(logging.get("logGroup") or f"/aws/lambda/{function.name}"),
            "AWS_LAMBDA_LOG_STREAM_NAME": f"{time.strftime('%Y/%m/%d')}/[$LATEST]{uuid.uuid4().hex}",
            "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
            "AWS_REGION": self.config.region,
            "AWS_DEFAULT_REGION": self.config.region,
            "TZ": ":UTC",
        }
        if str(logging.get("logFormat") or "").upper() == "JSON":
            found["AWS_LAMBDA_LOG_FORMAT"] = "JSON"
            found["AWS_LAMBDA_LOG_LEVEL"] = str(logging.get("applicationLogLevel") or "INFO").upper()
        return found

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _remove_abandoned(stacks: Path) -> None:
    """The directories of stacks whose process is gone (killed before it could remove its own)."""
    if not stacks.is_dir():
        return
    for entry in stacks.iterdir():
        pid = entry.name.partition("-")[0]
        if pid.isdigit() and not _running(int(pid)):
            shutil.rmtree(entry, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
