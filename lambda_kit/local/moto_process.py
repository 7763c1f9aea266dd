"""moto's server in a Python process of its own: the local stack's embedded AWS endpoint.

The stack runs the functions, the event source pollers and the HTTP gateway in one Python
process, and they share its interpreter lock. With moto's server in that process too, moto's
request handling took about a third of that lock under load (profiled with ``make run``), so the
functions waited for moto and moto for the functions on a machine with a second core idle. In its
own process moto runs beside them.

The child runs ``endpoint.main``: an ``Endpoint`` with every moto patch installed, its DynamoDB
ones too (they serve only requests sent to moto's DynamoDB, which happens only where DynamoDB
Local cannot run). It prints its URL, then serves until its standard input closes: when ``stop()``
closes it, or when the parent process dies (the system closes the pipe), so no moto outlives its
stack. Its own session keeps Ctrl-C for the parent, which stops it in order.

    with EndpointProcess() as endpoint:
        boto3.client("sqs", endpoint_url=endpoint.url)
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
from typing import IO

from ._child import tail, wait_or_kill

CHILD = "from lambda_kit.local.endpoint import main; main()"
"""What the child runs."""


class EndpointUnavailable(RuntimeError):
    """moto's server did not start; the message says why in one line."""


class EndpointProcess:
    def __init__(self, startup_timeout: float = 60.0) -> None:
        self.startup_timeout = startup_timeout
        self.url = ""
        self._process: subprocess.Popen[str] | None = None
        self._errors: IO[str] | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def launch(self) -> EndpointProcess:
        """Start the process without waiting for it (do other work, then :meth:`wait_ready`)."""
        self._errors = tempfile.TemporaryFile("w+", encoding="utf-8")
        self._process = subprocess.Popen(
            [sys.executable, "-c", CHILD],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._errors,
            text=True,
            start_new_session=True,
        )
        return self

    def wait_ready(self) -> EndpointProcess:
        """Wait for the URL it prints; :class:`EndpointUnavailable` if it exits or stays silent."""
        process = self._process
        if process is None or process.stdout is None:
            raise EndpointUnavailable("moto's server was not launched")
        first: list[str] = []
        output = process.stdout
        reader = threading.Thread(target=lambda: first.append(output.readline()), daemon=True)
        reader.start()
        reader.join(self.startup_timeout)
        url = first[0].strip() if first else ""
        if not url.startswith("http://"):
            self.stop()
            raise EndpointUnavailable(
                f"moto's server did not start within {self.startup_timeout:.0f} s: {self._error_tail()}"
            )
        process.stdout.close()  # the child writes nothing more there
        self.url = url
        return self

    def start(self) -> EndpointProcess:
        return self.launch().wait_ready()

    def _error_tail(self) -> str:
        if self._errors is None:
            return "no output"
        self._errors.seek(0)
        return tail(self._errors.read())

    def stop(self) -> None:
        """Close its standard input (it exits), then SIGTERM/SIGKILL if it does not (idempotent)."""
        process, self._process = self._process, None
        if process is not None:
            _end(process)
        errors, self._errors = self._errors, None
        if errors is not None:
            errors.close()

    def __enter__(self) -> EndpointProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _end(process: subprocess.Popen[str]) -> None:
    """Close the child's pipes (it exits when its standard input closes); kill it if it has not within 5 s."""
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            pipe.close()
    wait_or_kill(process)
