"""One worker process of tests/test_idempotency_kills.py: an SQS batch through ``sqs_handler`` and an
``@idempotent`` function with two side effects, one outside DynamoDB (a line appended to a file, as an
e-mail sent would be) and one DynamoDB write committed with the completed entry.

    python tests/_idempotency_worker.py SPEC.json

SPEC names the tables, the files, the batch (``[{"id", "order_id", "kill"}]``) and the invocation's
timeout. A delivery whose ``kill`` names a point (``mid_call``: the function started, nothing done;
``after_effect``: the file written, the entry not completed; ``after_commit``: the entry and the write
committed, the batch not acknowledged) has this process send itself SIGKILL there: no ``finally``, no
release, no response. The batch response is written to SPEC's ``response`` file only if the process
lives to the end (SQS would redeliver the whole batch otherwise).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import uuid

import boto3

from lambda_kit import current_record, sqs_handler
from lambda_kit.idempotency import current_writes, idempotent
from lambda_kit.testing import lambda_context, sqs_record

spec = json.loads(open(sys.argv[1]).read())
client = boto3.client("dynamodb", endpoint_url=spec["endpoint"])
kills = {delivery["id"]: delivery["kill"] for delivery in spec["batch"] if delivery["kill"]}


def append(path: str, line: dict) -> None:
    with open(path, "a") as file:
        file.write(json.dumps(line) + "\n")
        file.flush()
        os.fsync(file.fileno())


def point(order: dict, where: str) -> None:
    if kills.get(current_record().id) == where:
        append(spec["kills"], {"pid": os.getpid(), "order_id": order["order_id"], "point": where})
        os.kill(os.getpid(), signal.SIGKILL)


@idempotent(key="order_id", table=spec["table"], client=client)
def charge(order, context):
    run = str(uuid.uuid4())
    point(order, "mid_call")
    append(spec["effects"], {"pid": os.getpid(), "order_id": order["order_id"], "run": run})
    point(order, "after_effect")
    current_writes().update(
        spec["orders"],
        {"PK": order["order_id"], "SK": "ORDER"},
        "ADD #charged :one",
        names={"#charged": "charged"},
        values={":one": 1},
    )
    time.sleep(0.05)  # the duplicates other processes hold meet this one in progress
    return {"order_id": order["order_id"], "run": run}


@sqs_handler
def handler(message, context):
    result = charge(message, context)
    point(message, "after_commit")
    append(spec["results"], {"pid": os.getpid(), "order_id": message["order_id"], "result": result})
    return result


records = []
for delivery in spec["batch"]:
    record = sqs_record({"order_id": delivery["order_id"]})
    record["messageId"] = delivery["id"]
    records.append(record)
response = handler({"Records": records}, lambda_context("charge", timeout=spec["timeout"]))
append(spec["response"], response)
