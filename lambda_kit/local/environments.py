"""Execution environments: each function's workers, processes run by AWS's runtime interface client.

A ``Worker`` is one execution environment: ``python -S -m awslambdaric module.handler`` started
in the function's task root with only the function's environment (``launch`` says what it is), its
own Runtime API (``runtime_api.py``), an address-space limit of the function's memory size, and
its output (stdout and stderr) read line by line into the stack's log file. The handler is
imported when the process starts (Lambda's INIT phase: its duration is the time until the runtime
asks for its first invocation); a handler that does not import is reported as awslambdaric
reports it (``/init/error``: ``Runtime.ImportModuleError``, ``Runtime.HandlerNotFound`` ...).

One invocation at a time per worker, as in Lambda: ``Worker.run`` hands the event over and waits
for the response or the error. At the deadline the worker is killed and the invocation is
``Sandbox.Timedout`` (``Task timed out after N.NN seconds``); a worker that exits meanwhile is
``Runtime.ExitError``, one that ran out of memory ``Runtime.OutOfMemory``. Either way the worker is
gone and the invocation has its error: nothing waits on a worker that is not there.

A ``WorkerPool`` keeps a function's warm workers: an invocation takes an idle one (warm), or, while
fewer than ``limit`` run, starts one (cold) when none has come free within its patience (50 ms, or
twice the time invocations have been holding a worker), one cold start at a time; else it waits
for one to be free. Lambda starts environments at once, as many as the invocations need; here each
cold start costs a core a few hundred milliseconds, which a busy worker about to finish saves.
``renew()`` (a file of the function changed) retires the warm ones: each is replaced at its
function's next invocation.
"""

from __future__ import annotations

import fcntl
import os
import queue
import resource
import struct
import subprocess
import termios
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .runtime_api import RuntimeApi

LIVE = ("AWS_ENDPOINT_URL_APIGATEWAYMANAGEMENTAPI",)
"""The stack's variables a worker reads when it starts, not when its launch was made: the WebSocket
gateway's ``@connections`` endpoint, set once the gateway serves, so ``post_to_connection`` reaches it."""
INIT_LIMIT = 10.0
"""Seconds Lambda gives an on-demand function's INIT phase."""
MEMORY_ERRORS = ("MemoryError",)


@dataclass
class Launch:
    """How to start one execution environment of a function."""

    command: list[str]
    env: dict[str, str]
    cwd: Path
    memory_mb: int | None


@dataclass
class Pending:
    """One invocation handed to a worker: what it is, and once done, what came of it."""

    request_id: str
    body: bytes
    headers: dict[str, str]
    timeout: float
    taken: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    taken_at: float = 0.0
    response: bytes | None = None
    error: dict[str, Any] | None = None

    def finish(self, response: bytes | None = None, error: dict[str, Any] | None = None) -> bool:
        """Record the outcome (the first one wins); whether this one did."""
        if self.done.is_set():
            return False
        self.response, self.error = response, error
        self.done.set()
        return True


def runtime_error(kind: str, request_id: str, text: str) -> dict[str, Any]:
    """An error Lambda itself reports for an invocation (``Runtime.ExitError`` ...)."""
    return {"errorType": kind, "errorMessage": f"RequestId: {request_id} Error: {text}"}


def _exit_text(status: int) -> str:
    return f"Runtime exited with error: {'signal: killed' if status == -9 else _status(status)}"


def _status(status: int) -> str:
    return f"signal: {-status}" if status < 0 else f"exit status {status}"


def _unread(stream: Any) -> int:
    """Bytes waiting in a pipe (0 when it is closed)."""
    try:
        return struct.unpack("i", fcntl.ioctl(stream.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]
    except (OSError, ValueError):
        return 0


class Worker:
    """One execution environment (see the module's docstring)."""

    def __init__(self, launch: Launch, output: Callable[[str], None]) -> None:
        self.launch = launch
        self._output = output
        self._lock = threading.Lock()
        self._invocations: queue.Queue[Pending | None] = queue.Queue()
        self.pending: Pending | None = None
        self.init_error: dict[str, Any] | None = None
        self.init_duration: float | None = None
        self.exit_status: int | None = None
        self.out_of_memory = False
        self.invocations = 0
        self.generation = 0
        self.taken_at = 0.0  # when the pool last handed it out
        self.starting = False  # its first invocation (its INIT) has not ended
        self._killed = False
        self._output_done = threading.Condition()
        self._reading = False
        self._output_closed = False
        self.api = RuntimeApi(self)
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            launch.command,
            env={
                **launch.env,
                **{key: os.environ[key] for key in LIVE if key in os.environ},
                "AWS_LAMBDA_RUNTIME_API": self.api.address,
            },
            cwd=launch.cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # the terminal's Ctrl-C is the stack's to handle, not each worker's
        )
        self._limit_memory()
        self._reader = threading.Thread(
            target=self._read, name=f"worker {self.process.pid} output", daemon=True
        )
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def alive(self) -> bool:
        """Whether it can take another invocation (not killed, not exited)."""
        return not self._killed and self.exit_status is None and self.process.poll() is None

    def _limit_memory(self) -> None:
        """The function's memory size as the process's limit on its data (heap and private maps)."""
        if self.launch.memory_mb:
            limit = self.launch.memory_mb * 1024 * 1024
            try:
                resource.prlimit(self.process.pid, resource.RLIMIT_DATA, (limit, limit))
            except (OSError, ValueError):  # the process is already gone: its exit says why
                pass

    # --- the Runtime API's side (runtime_api.Channel) --------------------------------------------

    def next_invocation(self) -> tuple[bytes, dict[str, str]] | None:
        if self.init_duration is None:
            self.init_duration = time.monotonic() - self.started
        pending = self._invocations.get()
        if pending is None:
            return None
        pending.taken_at = time.monotonic()
        deadline_ms = int((time.time() + pending.timeout) * 1000)
        pending.taken.set()
        return pending.body, {**pending.headers, "Lambda-Runtime-Deadline-Ms": str(deadline_ms)}

    def respond(self, request_id: str, body: bytes) -> bool:
        pending = self.pending
        return pending is not None and pending.request_id == request_id and pending.finish(response=body)

    def fail(self, request_id: str, error: dict[str, Any]) -> bool:
        pending = self.pending
        if pending is None or pending.request_id != request_id:
            return False
        if error.get("errorType") in MEMORY_ERRORS:
            self.out_of_memory = True
            error = runtime_error(
                "Runtime.OutOfMemory", request_id, "Runtime exited with error: signal: killed"
            )
            self.kill()
        return pending.finish(error=error)

    def init_failed(self, error: dict[str, Any]) -> None:
        with self._lock:
            self.init_error = error
            pending = self.pending
        if pending is not None:
            pending.finish(error=error)

    # --- the process ------------------------------------------------------------------------------

    def _read(self) -> None:
        """Each line the process prints, to ``output``; then its exit."""
        stream = self.process.stdout
        assert stream is not None
        descriptor = stream.fileno()
        partial = b""
        while chunk := os.read(descriptor, 1 << 16):
            with self._output_done:
                self._reading = True
            *lines, partial = (partial + chunk).split(b"\n")
            for raw in lines:
                self._line(raw)
            with self._output_done:
                self._reading = False
                self._output_done.notify_all()
        if partial:
            self._line(partial)
        with self._output_done:
            self._output_closed = True
            self._output_done.notify_all()
        status = self.process.wait()
        with self._lock:
            self.exit_status = status
            pending = self.pending
        if pending is not None:
            pending.finish(error=self._exit_error(pending, status))
        self._invocations.put(None)
        self.api.close()

    def _line(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").rstrip("\r")
        if "MemoryError" in line:
            self.out_of_memory = True
        if line:
            self._output(line)

    def drain(self, timeout: float = 0.2) -> None:
        """Wait until what the process printed so far has gone to ``output`` (an invocation's lines
        are in the pipe before its response is posted; they are in the log once ``run`` returns)."""
        deadline = time.monotonic() + timeout
        with self._output_done:
            while not self._output_closed and (self._reading or _unread(self.process.stdout)):
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._output_done.wait(min(left, 0.002))

    def _exit_error(self, pending: Pending, status: int) -> dict[str, Any]:
        if self.init_error is not None:
            return self.init_error
        kind = "Runtime.OutOfMemory" if self.out_of_memory else "Runtime.ExitError"
        return runtime_error(kind, pending.request_id, _exit_text(status))

    def kill(self) -> None:
        self._killed = True  # at once: the process may take a moment to be gone
        if self.process.poll() is None:
            try:
                self.process.kill()
            except OSError:
                pass

    def close(self) -> None:
        """Stop the environment (idle or not) and wait for its process: killed first, so that its
        runtime never sees its Runtime API go away (and prints no error about it)."""
        self.kill()
        self._invocations.put(None)
        self._reader.join(5.0)

    # --- the stack's side -------------------------------------------------------------------------

    def run(self, pending: Pending) -> Pending:
        """Hand ``pending`` to the runtime and wait for its outcome (see the module's docstring)."""
        with self._lock:
            self.pending = pending
            failed = self.init_error if self.init_error is not None else None
            status = self.exit_status
        if failed is not None:
            pending.finish(error=failed)
        elif status is not None:
            pending.finish(error=self._exit_error(pending, status))
        else:
            self._invocations.put(pending)
            self._wait(pending)
            self.drain()
        self.invocations += 1
        with self._lock:
            self.pending = None
        return pending

    def _wait(self, pending: Pending) -> None:
        queued = time.monotonic()
        while True:
            taken = pending.taken.is_set()
            limit = pending.taken_at + pending.timeout if taken else queued + INIT_LIMIT
            if pending.done.wait(max(0.0, limit - time.monotonic())):
                return
            if not taken and pending.taken.is_set():
                continue  # taken meanwhile: its own deadline now
            text = (
                f"Task timed out after {pending.timeout:.2f} seconds"
                if taken
                else f"INIT phase did not complete within {INIT_LIMIT:.0f} seconds"
            )
            if pending.finish(error=runtime_error("Sandbox.Timedout", pending.request_id, text)):
                self.kill()
            return

    def peak_memory_mb(self) -> int:
        """The process's peak resident memory (VmHWM), in MB (0 once it is gone)."""
        try:
            with open(f"/proc/{self.process.pid}/status", encoding="ascii") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) // 1024
        except OSError:
            pass
        return 0


class WorkerPool:
    """A function's execution environments: warm ones reused, at most ``limit`` at once."""

    def __init__(self, start: Callable[[], Worker], limit: int, patience: float = 0.05) -> None:
        self._start = start
        self.limit = max(1, limit)
        self.patience = patience
        """Seconds an invocation waits for a busy worker to be free before it starts one more (at
        least twice the ``typical`` time a worker is held: on a machine too busy for invocations to
        be quick, more processes would only make them slower)."""
        self.typical = 0.0
        """How long an invocation holds its worker, recently (a moving average, seconds)."""
        self._idle: list[Worker] = []
        self._running = 0
        self._starting = 0  # workers started whose first invocation has not ended
        self._generation = 0
        self._condition = threading.Condition()
        self._closed = False
        self.workers: list[Worker] = []  # every worker started, for inspection (pids, cold starts)

    def acquire(self) -> tuple[Worker, bool]:
        """A worker for one invocation, and whether it was started for it (a cold start)."""
        patience = time.monotonic() + max(self.patience, 2 * self.typical)
        with self._condition:
            while True:
                if self._closed:
                    raise RuntimeError("the stack is stopping")
                warm = self._warm()
                if warm is not None:
                    return warm, False
                room = self._running < self.limit and not self._starting
                if room and (self._running == 0 or time.monotonic() >= patience):
                    self._running += 1
                    self._starting += 1
                    generation = self._generation
                    break
                self._condition.wait(max(0.0, patience - time.monotonic()) if room else None)
        try:
            worker = self._start()
        except BaseException:
            with self._condition:
                self._running -= 1
                self._starting -= 1
                self._condition.notify_all()
            raise
        worker.generation = generation
        worker.starting = True
        with self._condition:
            self.workers.append(worker)
        worker.taken_at = time.monotonic()
        return worker, True

    def _warm(self) -> Worker | None:
        """An idle worker of this generation, taken (under the condition); the others are retired."""
        while self._idle:
            worker = self._idle.pop()
            if worker.alive and worker.generation == self._generation:
                self._running += 1
                worker.taken_at = time.monotonic()
                return worker
            self._retire(worker)
        return None

    def release(self, worker: Worker) -> None:
        with self._condition:
            if worker.starting:  # its first invocation, INIT included: the next cold start may begin
                worker.starting = False
                self._starting -= 1
            else:
                self.typical += (time.monotonic() - worker.taken_at - self.typical) / 8
            self._running -= 1
            if worker.alive and worker.generation == self._generation and not self._closed:
                self._idle.append(worker)
            else:
                self._retire(worker)
            self._condition.notify_all()

    def _retire(self, worker: Worker) -> None:
        threading.Thread(target=worker.close, name=f"retire worker {worker.pid}", daemon=True).start()

    def renew(self) -> None:
        """Retire the warm workers: each invocation from now on runs on a fresh one."""
        with self._condition:
            self._generation += 1
            idle, self._idle = self._idle, []
            self._condition.notify_all()
        for worker in idle:
            worker.close()

    def close(self) -> None:
        with self._condition:
            self._closed = True
            workers = list(self.workers)
            self._idle = []
            self._condition.notify_all()
        for worker in workers:
            worker.close()
