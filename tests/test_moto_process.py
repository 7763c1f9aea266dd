"""moto's server in its own process (the local stack's endpoint): it serves, and it never outlives
its stack — stopped in order, or gone with a parent that was killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from lambda_kit.local.clients import Clients
from lambda_kit.local.moto_process import EndpointProcess


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # our own child: reap it, or it lingers as a zombie that still answers kill(pid, 0)
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return False


def test_it_serves_and_stops():
    endpoint = EndpointProcess().start()
    pid = endpoint.pid
    assert pid is not None
    sqs = Clients(endpoint.url, "us-east-1")("sqs")
    url = sqs.create_queue(QueueName="in-its-own-process")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="hello")
    assert [m["Body"] for m in sqs.receive_message(QueueUrl=url)["Messages"]] == ["hello"]
    assert os.getpid() != pid
    endpoint.stop()
    assert endpoint.pid is None
    assert _gone(pid, 10)


def test_it_goes_with_a_killed_parent():
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent("""
            import time
            from lambda_kit.local.moto_process import EndpointProcess
            endpoint = EndpointProcess().start()
            print(endpoint.pid, flush=True)
            time.sleep(120)
        """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    assert _gone(child, 15), "moto's process outlived the stack that started it"
