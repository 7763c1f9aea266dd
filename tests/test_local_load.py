"""``lambda-kit local`` under a burst, as a user runs it: 64 clients at once, 2,000 view events.

Every POST opens its own connection (no keep-alive), so the gateway accepts about 2,000
connections, 64 of them arriving together: none may be refused or reset (the standard library's
listen backlog of 5 was too small for that), every POST is accepted with 202, and the view-stats
service counts each accepted event exactly once (``GET /views`` per article). The load is bounded
(2,000 requests on loopback) and the time it takes is not asserted: ``make bench`` shows throughput.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest

from tests._local_process import start_local

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = 64
REQUESTS = 2000
ARTICLES = [f"myblog.com/load-{n}" for n in range(8)]


def _post(host: str, port: int, view: dict[str, str], trace_id: str) -> int | str:
    """One POST on a new connection: the status, or the connection error's name."""
    connection = http.client.HTTPConnection(host, port, timeout=120)
    try:
        connection.request(
            "POST",
            "/views",
            body=json.dumps(view).encode(),
            headers={
                "Content-Type": "application/json",
                "X-Trace-Id": trace_id,
                "Connection": "close",
            },
        )
        response = connection.getresponse()
        response.read()
        return response.status
    except (OSError, http.client.HTTPException) as error:
        return type(error).__name__
    finally:
        connection.close()


def _views(host: str, port: int, url: str) -> int:
    connection = http.client.HTTPConnection(host, port, timeout=60)
    try:
        connection.request("GET", f"/views?url={quote(url, safe='')}")
        response = connection.getresponse()
        body = json.loads(response.read())
        assert response.status == 200, body
        return int(body["views"])
    finally:
        connection.close()


@pytest.mark.skipif(
    not (ROOT / "handlers" / "ingest.py").exists(), reason="the view-stats handlers are not there yet"
)
def test_a_burst_of_64_clients_is_accepted_and_counted(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    process, url = start_local(ROOT, env, "--logs", str(tmp_path / "logs.jsonl"))
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "127.0.0.1", int(parts.port or 80)
        when = datetime.now(UTC).replace(microsecond=0).isoformat()
        views = [
            {"url": ARTICLES[n % len(ARTICLES)], "time": when, "clientId": f"load-{n:05d}"}
            for n in range(REQUESTS)
        ]
        start = threading.Barrier(CLIENTS)

        def client(number: int) -> list[tuple[str, int | str]]:
            start.wait()  # the first 64 connections arrive together
            return [
                (views[n]["url"], _post(host, port, views[n], f"load-{n:05d}"))
                for n in range(number, REQUESTS, CLIENTS)
            ]

        with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
            outcomes = [outcome for batch in pool.map(client, range(CLIENTS)) for outcome in batch]

        statuses = Counter(status for _, status in outcomes)
        assert statuses == {202: REQUESTS}, f"not every POST was accepted: {dict(statuses)}"
        accepted = Counter(article for article, status in outcomes if status == 202)

        counted: dict[str, int] = {}
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            counted = {article: _views(host, port, article) for article in ARTICLES}
            if counted == dict(accepted) or any(counted[a] > accepted[a] for a in ARTICLES):
                break
            time.sleep(1.0)
        assert counted == dict(accepted), f"counted {counted}, accepted {dict(accepted)}"
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
