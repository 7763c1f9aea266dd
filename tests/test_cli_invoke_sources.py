"""``lambda-kit invoke --event authorizer | websocket | firehose | s3_batch``: the event in the shape
the function's wiring gives it, and the verdict of responses that report failures without raising."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from lambda_kit.cli import main
from tests._local_toys import vendor_lambda_kit

SERVICE = """
service: {service}
provider:
  name: aws
  httpApi:
    authorizers:
      tenant: {{type: request, functionName: tenantAuth, enableSimpleResponses: true}}
functions:
  orders:
    handler: sources_app.orders
    events:
      - http: {{method: post, path: orders, authorizer: {{name: auth, type: request}}}}
      - httpApi: {{method: GET, path: /tenants, authorizer: {{name: tenant}}}}
  auth:
    handler: sources_app.auth
  tenantAuth:
    handler: sources_app.tenant_auth
  chat:
    handler: sources_app.chat
    events:
      - websocket: $default
  transform:
    handler: sources_app.transform
  batch:
    handler: sources_app.batch
"""

APP = """
from lambda_kit import Allow, api_handler, authorizer_handler
from lambda_kit import firehose_handler, s3_batch_handler, websocket_handler


@api_handler
def orders(request, context):
    return {}


@authorizer_handler
def auth(request, context):
    return Allow("u-1", context={"shape": request.shape, "method": request.method, "path": request.path})


@authorizer_handler(simple_responses=True)
def tenant_auth(request, context):
    return Allow(context={"shape": request.shape, "token": request.headers.get("authorization")})


@websocket_handler
def chat(message, context):
    return {"echo": message.json}


@firehose_handler
def transform(record, context):
    if record.get("fail"):
        raise ValueError("no")
    return record


@s3_batch_handler
def batch(task, context):
    if task.key.startswith("bad"):
        raise ValueError("bad key")
    return "ok " + task.key
"""


@pytest.fixture
def project(tmp_path, unique_name):
    (tmp_path / "serverless.yml").write_text(
        textwrap.dedent(SERVICE.format(service=unique_name("sources"))), encoding="utf-8"
    )
    (tmp_path / "sources_app.py").write_text(textwrap.dedent(APP), encoding="utf-8")
    vendor_lambda_kit(tmp_path)  # the zip holds lambda_kit, as a service's does
    return tmp_path / "serverless.yml"


def invoke(project: Path, capsys, function: str, kind: str, *argv: str) -> tuple[int, dict, str]:
    status = main(["invoke", function, "--event", kind, "-c", str(project), *argv])
    captured = capsys.readouterr()
    response = json.loads(captured.out.split("response:\n", 1)[1].split("\nlog lines", 1)[0])
    return status, response, captured.err


def test_an_authorizer_gets_the_shape_of_the_event_that_names_it(project, aws_endpoint, capsys):
    status, response, _ = invoke(project, capsys, "auth", "authorizer")
    assert status == 0 and response["policyDocument"]["Statement"][0]["Effect"] == "Allow"
    assert response["context"] == {"shape": "rest-request", "method": "POST", "path": "/orders"}
    status, response, _ = invoke(project, capsys, "tenantAuth", "authorizer", "--body", '"Bearer t-9"')
    assert status == 0
    assert response == {"isAuthorized": True, "context": {"shape": "http-2.0", "token": "Bearer t-9"}}


def test_a_websocket_message_is_answered(project, aws_endpoint, capsys):
    status, response, _ = invoke(project, capsys, "chat", "websocket", "--body", '{"text": "hi"}')
    assert status == 0 and json.loads(response["body"]) == {"echo": {"text": "hi"}}


def test_firehose_records_that_fail_are_the_invocation_s_failure(project, aws_endpoint, capsys):
    status, response, err = invoke(project, capsys, "transform", "firehose", "--body", '{"n": 1}')
    assert status == 0 and [r["result"] for r in response["records"]] == ["Ok"]
    status, response, err = invoke(project, capsys, "transform", "firehose", "--body", '{"fail": true}')
    assert status == 1 and "FAILED: 1 of 1 records ProcessingFailed" in err


def test_an_s3_batch_task_that_fails_is_the_invocation_s_failure(project, aws_endpoint, capsys):
    status, response, _ = invoke(project, capsys, "batch", "s3_batch", "--body", '"good.csv"')
    assert status == 0 and response["results"][0]["resultString"] == "ok good.csv"
    status, response, err = invoke(project, capsys, "batch", "s3_batch", "--body", '"bad.csv"')
    assert status == 1 and "FAILED: the task answered PermanentFailure" in err
