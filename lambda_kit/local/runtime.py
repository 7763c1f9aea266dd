"""Running a function in-process, the way Lambda's Python runtime would.

The handler module is imported from the project directory (which goes first on ``sys.path``, as
Lambda's task root does). Each invocation gets its own context (function name, a fresh
``aws_request_id``, remaining time counting down from the configured timeout). An invocation
that runs past its timeout counts as failed with ``Task timed out`` (Lambda would have stopped
it; here the thread cannot be killed, so it finishes, but its result is discarded).

Limitation: all functions share one process, so they share ``os.environ``: the stack sets the
provider's environment plus every function's variables at start. Functions that give the same
variable different values cannot both be right in-process (the stack warns about it).

Invocation hooks (``FunctionRuntime.hooks``, shared with the stack) wrap every invocation:
``hook(invocation, proceed)`` may raise before ``proceed()`` (a crash before the handler), after
it (a crash after the work committed), or change the event — the fault soak uses them.
"""

from __future__ import annotations

import importlib
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..testing import LambdaContext
from .config import FunctionConfig


class HandlerImportError(Exception):
    """The handler path does not import; the message is one line."""


class InvocationTimeout(Exception):
    pass


@dataclass
class Invocation:
    """One call of a function, as hooks see it."""

    function: FunctionConfig
    event: Any
    context: LambdaContext
    source: str  # "sqs", "dynamodb", "kinesis", "sns", "api", "direct"
    attempt: int = 1


@dataclass
class Result:
    request_id: str
    response: Any = None
    error: BaseException | None = None
    duration: float = 0.0
    started: float = 0.0  # wall clock

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def error_text(self) -> str | None:
        """``Type: message`` of the error, as the journal notes it (None on success)."""
        return None if self.error is None else f"{type(self.error).__name__}: {self.error}"


Hook = Callable[[Invocation, Callable[[], Any]], Any]

_import_lock = threading.RLock()


@dataclass
class FunctionRuntime:
    function: FunctionConfig
    project_dir: Path
    region: str = "us-east-1"
    hooks: list[Hook] = field(default_factory=list)
    on_result: Callable[[Invocation, Result], None] | None = None
    _handler: Callable[..., Any] | None = None

    @property
    def name(self) -> str:
        return self.function.name

    @property
    def arn(self) -> str:
        return f"arn:aws:lambda:{self.region}:123456789012:function:{self.function.name}"

    def handler(self) -> Callable[..., Any]:
        if self._handler is None:
            self._handler = load_handler(self.function, self.project_dir)
        return self._handler

    def context(self) -> LambdaContext:
        context = LambdaContext(self.function.name, self.function.timeout, self.function.memory)
        context.invoked_function_arn = self.arn
        context.log_group_name = f"/aws/lambda/{self.function.name}"
        return context

    def invoke(self, event: Any, source: str = "direct", attempt: int = 1) -> Result:
        handler = self.handler()
        context = self.context()
        invocation = Invocation(self.function, event, context, source, attempt)
        proceed = self._through_hooks(invocation, lambda: handler(invocation.event, invocation.context))
        result = Result(request_id=context.aws_request_id, started=time.time())
        started = time.perf_counter()
        try:
            result.response = proceed()
        except Exception as exc:  # the function's error, as Lambda reports it
            result.error = exc
        result.duration = time.perf_counter() - started
        self._time_out(result)
        if self.on_result is not None:
            self.on_result(invocation, result)
        return result

    def _through_hooks(self, invocation: Invocation, call: Callable[[], Any]) -> Callable[[], Any]:
        """``call`` wrapped in the hooks, the first hook outermost."""
        proceed = call
        for hook in reversed(self.hooks):
            proceed = _bind(hook, invocation, proceed)
        return proceed

    def _time_out(self, result: Result) -> None:
        """A run past the function's timeout failed, whatever it returned (Lambda would have stopped it)."""
        if result.error is None and result.duration > self.function.timeout:
            result.error = InvocationTimeout(f"Task timed out after {self.function.timeout:.2f} seconds")
            result.response = None


def _bind(hook: Hook, invocation: Invocation, proceed: Callable[[], Any]) -> Callable[[], Any]:
    return lambda: hook(invocation, proceed)


def load_handler(function: FunctionConfig, project_dir: Path) -> Callable[..., Any]:
    """Import ``function.handler`` from ``project_dir``; ``HandlerImportError`` with one line if not."""
    root = str(project_dir)
    with _import_lock:
        if root not in sys.path:
            sys.path.insert(0, root)
        _forget_foreign(function.module, root)
        module = _import(function, root)
    handler = getattr(module, function.attribute, None)
    if not callable(handler):
        raise HandlerImportError(
            f"{function.key}: module {function.module!r} has no function {function.attribute!r}"
        )
    return handler


def _import(function: FunctionConfig, root: str) -> Any:
    name = function.module
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and name.startswith(exc.name):
            raise HandlerImportError(
                f"{function.key}: handler {function.handler!r}: no module {name!r} under {root}"
            ) from None
        raise HandlerImportError(
            f"{function.key}: handler {function.handler!r} does not import: {exc}"
        ) from None
    except Exception as exc:
        raise HandlerImportError(
            f"{function.key}: handler {function.handler!r} does not import: {type(exc).__name__}: {exc}"
        ) from None


def _forget_foreign(module_name: str, root: str) -> None:
    """Drop an already-imported module of that name that lives in another project directory
    (tests start stacks for several toy projects in one process)."""
    parts = module_name.split(".")
    for depth in range(len(parts), 0, -1):
        name = ".".join(parts[:depth])
        if _is_foreign(sys.modules.get(name), root):
            _drop(name)
    importlib.invalidate_caches()


def _drop(package: str) -> None:
    """Forget the module ``package`` and its submodules."""
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[name]


def _is_foreign(module: Any, root: str) -> bool:
    """Whether ``module`` was loaded from outside ``root``."""
    location = getattr(module, "__file__", None) or next(iter(getattr(module, "__path__", None) or []), None)
    return bool(location) and not str(Path(location).resolve()).startswith(str(Path(root).resolve()))
