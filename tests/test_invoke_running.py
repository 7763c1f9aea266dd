"""One stack at a time (issue 32 point 5): `lambda-kit invoke` sends to the running `lambda-kit
local` through its Lambda Invoke API (its state, its log file, which `trace` reads), says so, and
without one starts a stack of its own and says that; the Invoke API answers the AWS SDK as Lambda
does."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import boto3
import pytest
from botocore.config import Config

from lambda_kit import testing
from lambda_kit.cli import main
from lambda_kit.local import running
from tests._local_process import start_local
from tests._local_toys import vendor_lambda_kit

SERVICE = """
service: shelf
provider:
  name: aws
  runtime: python3.12
  iam:
    role:
      statements:
        - Effect: Allow
          Action: [dynamodb:PutItem, dynamodb:Scan]
          Resource: {"Fn::GetAtt": [Shelf, Arn]}
functions:
  api:
    handler: shelf_api.handler
    environment:
      TABLE: {Ref: Shelf}
    events:
      - httpApi: '*'
resources:
  Resources:
    Shelf:
      Type: AWS::DynamoDB::Table
      Properties:
        TableName: shelf-${sls:stage}-items
        BillingMode: PAY_PER_REQUEST
        AttributeDefinitions: [{AttributeName: PK, AttributeType: S}]
        KeySchema: [{AttributeName: PK, KeyType: HASH}]
"""

API = """
import os

import boto3

from lambda_kit import api_handler


@api_handler
def handler(request, context):
    table = boto3.resource("dynamodb").Table(os.environ["TABLE"])
    if request.method == "POST":
        table.put_item(Item={"PK": request.json["id"]})
        return {"stored": request.json["id"]}, 201
    return {"items": sorted(item["PK"] for item in table.scan()["Items"])}
"""


def write(root: Path) -> Path:
    (root / "serverless.yml").write_text(textwrap.dedent(SERVICE), encoding="utf-8")
    (root / "shelf_api.py").write_text(textwrap.dedent(API), encoding="utf-8")
    vendor_lambda_kit(root)  # the zip holds lambda_kit, as a service's does
    return root / "serverless.yml"


def invoke(capsys, config: Path, *argv: str) -> tuple[int, list[str]]:
    status = main(
        ["invoke", "api", "--event", "api", "--method", "GET", "--path", "/items", *argv, "-c", str(config)]
    )
    captured = capsys.readouterr()
    assert status != 2, captured.err
    return status, captured.out.splitlines()


def response_body(out: list[str]) -> dict:
    start, end = (
        out.index("response:") + 1,
        next(i for i, row in enumerate(out) if row.startswith("log lines (")),
    )
    return json.loads(json.loads("\n".join(out[start:end]))["body"])


@pytest.mark.slow
def test_invoke_uses_the_running_local_stack_then_one_of_its_own(tmp_path, aws_endpoint, capsys):
    config = write(tmp_path)
    env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    env.update(PYTHONUNBUFFERED="1", PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    process, url = start_local(tmp_path, env)
    try:
        for item in ("a", "b"):
            request = urllib.request.Request(
                url + "/items",
                data=json.dumps({"id": item}).encode(),
                method="POST",
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=10) as answer:
                assert answer.status == 201
        found = running.find(config, "dev")
        assert found is not None and found.pid == process.pid

        status, out = invoke(capsys, config, "--trace-id", "T-running")
        assert status == 0
        assert out[1] == (
            f"  on the running lambda-kit local (pid {process.pid}, {found.lambda_api}): its state, its log "
            f"{found.log}"
        )
        assert response_body(out) == {"items": ["a", "b"]}  # what the HTTP requests stored
        request_id = out[0].rsplit(" ", 1)[1]
        logged = [json.loads(row) for row in (tmp_path / found.log).read_text().splitlines()]
        assert {"request received", "request processed"} <= {
            row["message"] for row in logged if row.get("request_id") == request_id
        }  # in the running stack's log file
        assert (
            main(
                [
                    "trace",
                    "T-running",
                    "-c",
                    str(config),
                    "--logs",
                    str(tmp_path / ".lambda-kit" / "logs.jsonl"),
                ]
            )
            == 0
        )
        assert "5 log lines" in capsys.readouterr().out

        _the_sdk_invokes_it(found.lambda_api)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
    assert running.find(config, "dev") is None
    assert not running.path_for(config).exists()  # the stack withdrew its file

    status, out = invoke(capsys, config, "--logs", str(tmp_path / "own.jsonl"))
    assert status == 0
    own_log = (tmp_path / "own.jsonl").resolve()
    assert out[1] == (
        f"  on a stack of its own (no lambda-kit local serves {config}): fresh state, its log file {own_log}"
    )
    assert response_body(out) == {"items": []}


def _the_sdk_invokes_it(url: str) -> None:
    client = boto3.client(
        "lambda",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"max_attempts": 1}),
    )
    event = testing.api_event("GET", "/items", headers={"X-Trace-Id": "T-sdk"})
    answer = client.invoke(FunctionName="shelf-dev-api", Payload=json.dumps(event), LogType="Tail")
    assert answer["StatusCode"] == 200 and "FunctionError" not in answer
    assert json.loads(json.loads(answer["Payload"].read())["body"]) == {"items": ["a", "b"]}
    tail = base64.b64decode(answer["LogResult"]).decode()
    assert '"message":"request processed"' in tail and "T-sdk" in tail
    broken = client.invoke(FunctionName="api", Payload=b'"not an api event"')
    assert broken["FunctionError"] == "Unhandled"
    assert json.loads(broken["Payload"].read())["errorType"] == "UnsupportedEvent"
    assert client.invoke(FunctionName="api", InvocationType="DryRun")["StatusCode"] == 204
    with pytest.raises(client.exceptions.ResourceNotFoundException):
        client.invoke(FunctionName="nope", Payload=b"{}")


def test_a_stale_file_of_a_stack_that_is_gone_is_ignored(tmp_path, aws_endpoint, capsys):
    config = write(tmp_path)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    running.path_for(config).parent.mkdir(parents=True)
    running.path_for(config).write_text(
        json.dumps(
            {
                "pid": int(gone.stdout),
                "config": str(config),
                "stage": "dev",
                "lambda_api": "http://127.0.0.1:9",
                "log": "x",
                "functions": {"api": {}},
            }
        )
    )
    status, out = invoke(capsys, config, "--logs", str(tmp_path / "own.jsonl"))
    assert status == 0
    assert out[1].startswith("  on a stack of its own (no lambda-kit local serves")
    status, out = invoke(capsys, config, "--new-stack", "--logs", str(tmp_path / "own.jsonl"))
    assert out[1].startswith("  on a stack of its own (--new-stack): fresh state")
