"""@idempotent across processes that are killed: 4 worker processes at a time take overlapping
batches of the same orders (each order delivered 1 to 3 times, its duplicates in different processes
at the same moment) from DynamoDB Local; workers send themselves SIGKILL mid-call, after the side
effect and after the commit, and the test kills others from outside at random moments. What no
process acknowledged is delivered again, round after round, as SQS would, until every delivery is
acknowledged. Then, counted:

- the DynamoDB write committed with the entry: exactly once per order, however often it was delivered
  or killed;
- the side effect outside DynamoDB (a line in a file): once per order, plus once per run killed after
  it and before its completion, and never by a run that lived (each order's other runs are of killed
  processes);
- every result returned for an order is the one its completed run stored;
- deliveries failed because their order was in progress in another process (they came back).

In the first round, each of three workers dies at one of the three points for sure, and the fourth
is killed from outside; later rounds kill at random.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter as Tally
from pathlib import Path

import pytest

from lambda_kit.testing import create_idempotency_table

pytestmark = pytest.mark.slow

ORDERS = 60
WORKERS = 4
KILL_ROUNDS = 3  # deliveries of the first rounds carry kill points; later ones run to the end
KILL_SHARE = 0.1
# The invocation's timeout: a run killed mid-call holds its claim this long at most, long enough
# (on a loaded machine too) for the next rounds to meet it in progress.
TIMEOUT = 30.0
WORKER = Path(__file__).with_name("_idempotency_worker.py")
POINTS = ("mid_call", "after_effect", "after_commit")


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def deliveries(rng: random.Random) -> list[dict]:
    """Each order 1-3 times; duplicates side by side, so dealing them round-robin puts them in
    different processes at the same place in their batches."""
    plan = []
    for number in range(ORDERS):
        for copy in range(rng.choice((1, 2, 2, 3))):
            plan.append({"id": f"m-{number}-{copy}", "order_id": f"order-{number}"})
    return plan


def first_kills(pending: list[dict]) -> None:
    """In the first round, worker n (n < 3) dies at point n at the first order of its batch that is
    delivered once (so no duplicate elsewhere answers it first), and only there."""
    copies = Tally(delivery["order_id"] for delivery in pending)
    for index, where in enumerate(POINTS):
        batch = pending[index::WORKERS]
        for delivery in batch:
            delivery["kill"] = None
        next(d for d in batch if copies[d["order_id"]] == 1)["kill"] = where


def kill_while_working(process: subprocess.Popen, log: Path, after: float) -> int:
    """SIGKILL ``process`` ``after`` seconds once it has processed a record (1), unless it is gone (0)."""
    deadline = time.monotonic() + 60
    while process.poll() is None and time.monotonic() < deadline:
        if '"record processed"' in log.read_text():
            time.sleep(after)
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                return 1
            break
        time.sleep(0.01)
    return 0


def start(spec: dict, directory: Path, index: int, environment: dict) -> tuple[subprocess.Popen, Path]:
    spec_path = directory / f"spec-{spec['round']}-{index}.json"
    spec_path.write_text(json.dumps(spec))
    log = open(directory / f"log-{spec['round']}-{index}.jsonl", "w")  # noqa: SIM115 (closed by the child's exit)
    process = subprocess.Popen(
        [sys.executable, str(WORKER), str(spec_path)], stdout=log, stderr=subprocess.STDOUT, env=environment
    )
    return process, Path(log.name)


def test_killed_processes_with_overlapping_duplicates_commit_each_write_once(
    require_dynamodb_local, dynamodb, unique_name, tmp_path
):
    table = create_idempotency_table(dynamodb, unique_name("IdemKills"))
    orders = create_idempotency_table(dynamodb, unique_name("IdemOrders"))
    rng = random.Random(34)
    pending = deliveries(rng)
    files = {name: str(tmp_path / f"{name}.jsonl") for name in ("effects", "results", "kills")}
    environment = {**os.environ, "PYTHONPATH": str(Path.cwd())}
    killed_pids: set[int] = set()
    outside_kills = in_progress = rounds = 0
    while pending and rounds < 40:
        rng.shuffle(pending)
        pending.sort(key=lambda delivery: delivery["order_id"])
        for delivery in pending:
            kill = rounds < KILL_ROUNDS and rng.random() < KILL_SHARE
            delivery["kill"] = rng.choice(POINTS) if kill else None
        if rounds == 0:
            first_kills(pending)
        workers = []
        for index in range(WORKERS):
            batch = pending[index::WORKERS]
            if batch:
                spec = {
                    "round": rounds,
                    "batch": batch,
                    "table": table,
                    "orders": orders,
                    "endpoint": require_dynamodb_local.url,
                    "timeout": TIMEOUT,
                    "response": str(tmp_path / f"response-{rounds}-{index}.json"),
                    **files,
                }
                workers.append((batch, spec["response"], *start(spec, tmp_path, index, environment)))
        if rounds < KILL_ROUNDS:  # kill -9 from outside too, while it works, at a moment nobody chose
            _batch, _response, victim, log = workers[-1] if rounds == 0 else rng.choice(workers)
            outside_kills += kill_while_working(victim, log, rng.uniform(0, 0.5))
        acknowledged: set[str] = set()
        for batch, response_path, process, log in workers:
            process.wait(timeout=120)
            if process.returncode == -signal.SIGKILL:
                killed_pids.add(process.pid)
                continue
            assert process.returncode == 0, log.read_text()[-3000:]
            [response] = read(Path(response_path))
            failed = {failure["itemIdentifier"] for failure in response["batchItemFailures"]}
            acknowledged |= {delivery["id"] for delivery in batch} - failed
            lines = read(log)
            in_progress += sum(line.get("error_type") == "AlreadyInProgress" for line in lines)
            assert {line.get("error_type") for line in lines if line["level"] == "ERROR"} <= {
                "AlreadyInProgress"
            }
        pending = [delivery for delivery in pending if delivery["id"] not in acknowledged]
        rounds += 1
        time.sleep(0.3)  # the visibility timeout, short
    assert pending == [], f"still not acknowledged after {rounds} rounds: {pending[:5]}"

    effects, results, kills = (read(Path(files[name])) for name in ("effects", "results", "kills"))
    killed_pids |= {kill["pid"] for kill in kills}
    order_ids = {f"order-{number}" for number in range(ORDERS)}

    # the DynamoDB write committed with the completed entry: exactly once per order
    items = dynamodb.scan(TableName=orders, ConsistentRead=True)["Items"]
    assert {item["PK"]["S"]: item["charged"]["N"] for item in items} == dict.fromkeys(order_ids, "1")

    # every result returned for an order is the stored one: the run that completed
    stored = {}
    for line in results:
        stored.setdefault(line["order_id"], line["result"])
        assert line["result"] == stored[line["order_id"]], line
    assert set(stored) == order_ids

    # the side effect outside DynamoDB: once by the run that completed, else only by killed runs
    completed = Tally(
        effect["order_id"] for effect in effects if effect["run"] == stored[effect["order_id"]]["run"]
    )
    assert completed == Tally(order_ids)
    for effect in effects:
        if effect["run"] != stored[effect["order_id"]]["run"]:
            assert effect["pid"] in killed_pids, f"a run that lived repeated the side effect: {effect}"
    by_point = Tally(kill["point"] for kill in kills)
    assert by_point["after_effect"] <= len(effects) - ORDERS
    assert all(by_point[point] > 0 for point in POINTS) and outside_kills > 0 and in_progress > 0
    print(
        f"\n{ORDERS} orders, {sum(1 for _ in deliveries(random.Random(34)))} deliveries, {rounds} rounds of "
        f"{WORKERS} processes; kill -9: {dict(by_point)} by the workers, {outside_kills} from outside; "
        f"side effects run {len(effects)} (orders {ORDERS} + {len(effects) - ORDERS} by killed runs); "
        f"DynamoDB writes {len(items)} (one per order); results returned {len(results)}, "
        f"{len({r['run'] for r in stored.values()})} distinct; deliveries failed in progress {in_progress}"
    )
