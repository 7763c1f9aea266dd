"""A function as Lambda runs it: invocations handed to its execution environments.

``FunctionRuntime.invoke`` is the stack's side of one invocation: a fresh request id and context,
the invocation hooks, then the event to a worker of the function's pool (``environments.py``:
processes under AWS's runtime interface client, from the function's task root, with only its own
environment), the platform's START / END / REPORT lines (``function_log.py``), and a ``Result``.

What Lambda reports, the result reports: the function's own error (``errorType`` and
``errorMessage`` as the runtime posted them), an initialization error (``Runtime.ImportModuleError``,
``Runtime.HandlerNotFound``: the invocation fails with it, the next one starts a new environment),
``Sandbox.Timedout`` (``Task timed out after N.NN seconds``: the worker was killed at the deadline),
``Runtime.ExitError`` and ``Runtime.OutOfMemory`` (the worker is gone). A result's ``error`` is
then a ``FunctionError`` carrying them.

Invocation hooks (``FunctionRuntime.hooks``, shared with the stack) wrap every invocation on the
stack's side: ``hook(invocation, proceed)`` may raise before ``proceed()`` (a crash before the
handler), after it (a crash after the work committed), or change the event — the fault soak uses
them. ``proceed()`` returns the function's response or raises its ``FunctionError``.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..testing import LambdaContext
from .config import FunctionConfig
from .environments import Launch, Pending, Worker, WorkerPool
from .function_log import PlatformLines, Report, function_line


class FunctionError(Exception):
    """An invocation's error as Lambda reports it: ``error_type`` (``ValueError``,
    ``Runtime.ImportModuleError``, ``Sandbox.Timedout`` ...), the message, the runtime's stack trace."""

    def __init__(self, error_type: str, message: str, stack_trace: list[str] | None = None) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message
        self.stack_trace = list(stack_trace or [])

    @classmethod
    def of(cls, payload: dict[str, Any]) -> FunctionError:
        trace = payload.get("stackTrace")
        return cls(
            str(payload.get("errorType") or "Error"),
            str(payload.get("errorMessage") or ""),
            [str(line) for line in trace] if isinstance(trace, list) else None,
        )

    @property
    def payload(self) -> dict[str, Any]:
        """The error as Lambda returns it to a synchronous caller."""
        return {"errorMessage": self.message, "errorType": self.error_type, "stackTrace": self.stack_trace}


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
    def error_type(self) -> str | None:
        """Lambda's ``errorType`` of the error (a hook's own exception: its class name)."""
        if self.error is None:
            return None
        return self.error.error_type if isinstance(self.error, FunctionError) else type(self.error).__name__

    @property
    def error_text(self) -> str | None:
        """``Type: message`` of the error, as the journal notes it (None on success)."""
        return None if self.error is None else f"{self.error_type}: {self.error}"


Hook = Callable[[Invocation, Callable[[], Any]], Any]


def trace_header() -> str:
    """A fresh X-Ray trace header, as Lambda gives every invocation (not sampled)."""
    root = f"1-{int(time.time()):08x}-{secrets.token_hex(12)}"
    return f"Root={root};Parent={secrets.token_hex(8)};Sampled=0"


@dataclass
class FunctionRuntime:
    function: FunctionConfig
    launch: Launch
    region: str = "us-east-1"
    hooks: list[Hook] = field(default_factory=list)
    write: Callable[[str], None] = print
    """Where the function's lines go (the stack's log file)."""
    concurrency: int = 8
    """At most this many execution environments at once (reservedConcurrency when it is set)."""
    system_log_level: str | None = None
    pool: WorkerPool = field(init=False)
    platform: PlatformLines = field(init=False)

    def __post_init__(self) -> None:
        self.pool = WorkerPool(self._start_worker, self.concurrency)
        self.platform = PlatformLines(self.write, self.function.name, self.system_log_level)

    @property
    def name(self) -> str:
        return self.function.name

    @property
    def arn(self) -> str:
        return f"arn:aws:lambda:{self.region}:123456789012:function:{self.function.name}"

    def context(self) -> LambdaContext:
        context = LambdaContext(self.function.name, self.function.timeout or 3, self.function.memory or 128)
        context.invoked_function_arn = self.arn
        context.log_group_name = f"/aws/lambda/{self.function.name}"
        return context

    def invoke(
        self, event: Any, source: str = "direct", attempt: int = 1, trace: str | None = None
    ) -> Result:
        context = self.context()
        invocation = Invocation(self.function, event, context, source, attempt)
        proceed = self._through_hooks(invocation, lambda: self._call(invocation, trace or trace_header()))
        result = Result(request_id=context.aws_request_id, started=time.time())
        started = time.perf_counter()
        try:
            result.response = proceed()
        except Exception as exc:  # the function's error (or a hook's), as Lambda reports it
            result.error = exc
        result.duration = time.perf_counter() - started
        return result

    def renew(self, launch: Launch) -> None:
        """Run from ``launch`` from now on (a rebuilt task root): warm workers are replaced."""
        self.launch = launch
        self.pool.renew()

    def close(self) -> None:
        self.pool.close()

    def _through_hooks(self, invocation: Invocation, call: Callable[[], Any]) -> Callable[[], Any]:
        """``call`` wrapped in the hooks, the first hook outermost."""
        proceed = call
        for hook in reversed(self.hooks):
            proceed = _bind(hook, invocation, proceed)
        return proceed

    def _start_worker(self) -> Worker:
        worker: Worker | None = None

        def output(line: str) -> None:
            pending = worker.pending if worker is not None else None
            self.write(function_line(line, self.function.name, pending.request_id if pending else None))

        worker = Worker(self.launch, output)
        return worker

    def _call(self, invocation: Invocation, trace: str) -> Any:
        """One invocation on a worker: the response, or its ``FunctionError`` raised."""
        if self.concurrency == 0:
            raise FunctionError("TooManyRequestsException", "Rate Exceeded.")
        request_id = invocation.context.aws_request_id
        pending = Pending(request_id, json.dumps(invocation.event).encode(), self._headers(request_id, trace),
                          float(self.function.timeout or 3))  # fmt: skip
        worker, cold = self.pool.acquire()
        try:
            self.platform.start(request_id)
            worker.run(pending)
            self._report(worker, pending, cold)
        finally:
            self.pool.release(worker)
        if pending.error is not None:
            raise FunctionError.of(pending.error)
        return json.loads(pending.response) if pending.response else None

    def _headers(self, request_id: str, trace: str) -> dict[str, str]:
        return {
            "Lambda-Runtime-Aws-Request-Id": request_id,
            "Lambda-Runtime-Invoked-Function-Arn": self.arn,
            "Lambda-Runtime-Trace-Id": trace,
        }

    def _report(self, worker: Worker, pending: Pending, cold: bool) -> None:
        error_type = (pending.error or {}).get("errorType")
        timed_out = error_type == "Sandbox.Timedout"
        if timed_out:
            self.platform.timed_out(
                pending.request_id, str(pending.error["errorMessage"]).rpartition("Error: ")[2]
            )
        ran = time.monotonic() - pending.taken_at if pending.taken_at else 0.0
        self.platform.end(
            Report(
                request_id=pending.request_id,
                duration=ran,
                memory_mb=int(self.function.memory or 128),
                max_memory_mb=worker.peak_memory_mb(),
                init_duration=worker.init_duration if cold else None,
                error_type=error_type,
                timed_out=timed_out,
            )
        )


def _bind(hook: Hook, invocation: Invocation, proceed: Callable[[], Any]) -> Callable[[], Any]:
    return lambda: hook(invocation, proceed)
