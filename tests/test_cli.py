"""The ``lambda-kit`` command: trace, invoke, check, and the one-line errors users get."""

from __future__ import annotations

import json
import socket
import textwrap

import pytest
from _local_toys import vendor_lambda_kit

from lambda_kit.cli import main

TOY = """
service: {service}
provider:
  name: aws
  environment:
    GREETING: hello
functions:
  worker:
    handler: cli_worker.handler
    events:
      - sqs:
          arn: !GetAtt Jobs.Arn
          functionResponseType: ReportBatchItemFailures
  api:
    handler: cli_worker.api
    events:
      - httpApi: 'POST /things'
resources:
  Resources:
    Jobs:
      Type: AWS::SQS::Queue
      Properties:
        QueueName: ${{self:service}}-jobs
"""

WORKER = """
import os
from lambda_kit import sqs_handler, api_handler, get_logger
log = get_logger("cli_worker")

@sqs_handler
def handler(message, context):
    log.info("working", extra={"greeting": os.environ["GREETING"]})
    if message.get("fail"):
        raise ValueError("told to fail")
    return {"done": message}

@api_handler
def api(request, context):
    return {"statusCode": 201, "body": {"got": request.json}}
"""


@pytest.fixture
def project(tmp_path, unique_name):
    (tmp_path / "serverless.yml").write_text(
        textwrap.dedent(TOY.format(service=unique_name("cli"))), encoding="utf-8"
    )
    (tmp_path / "cli_worker.py").write_text(textwrap.dedent(WORKER), encoding="utf-8")
    vendor_lambda_kit(tmp_path)
    return tmp_path / "serverless.yml"


def _one_error_line(capsys):
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err and "Traceback" not in captured.out
    return lines[0]


# --- trace ---------------------------------------------------------------------------------------


def _log_file(tmp_path):
    lines = [
        {
            "timestamp": "2024-05-01T10:00:00.000Z",
            "level": "INFO",
            "message": "request received",
            "function_name": "svc-dev-ingest",
            "trace_id": "T-1",
        },
        {
            "timestamp": "2024-05-01T10:00:00.050Z",
            "level": "INFO",
            "message": "request processed",
            "function_name": "svc-dev-ingest",
            "trace_id": "T-1",
            "duration_ms": 48.5,
            "outcome": "ok",
        },
        {
            "timestamp": "2024-05-01T10:00:00.020Z",
            "level": "INFO",
            "message": "other",
            "function_name": "svc-dev-ingest",
            "trace_id": "T-2",
        },
        {
            "timestamp": "2024-05-01T10:00:02.500Z",
            "level": "ERROR",
            "message": "record failed",
            "function_name": "svc-dev-counter",
            "trace_id": "T-1",
            "outcome": "failed",
            "error_type": "ValueError",
            "error": "bad",
        },
    ]
    path = tmp_path / "logs.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\nnot json\n", encoding="utf-8")
    return path


def test_trace_prints_a_timeline_from_the_log_file(tmp_path, capsys):
    assert main(["trace", "T-1", "--logs", str(_log_file(tmp_path)), "-c", str(tmp_path / "none.yml")]) == 0
    out = capsys.readouterr().out
    assert "3 log lines" in out and "svc-dev-ingest → svc-dev-counter" in out
    rows = [line for line in out.splitlines() if " ms  " in line]
    assert [row.split()[0] for row in rows] == ["+0", "+50", "+2500"]
    assert "48.5 ms" in out and "failed ValueError: bad" in out
    assert "@trace_id:T-1" in out and "other" not in out


def test_trace_errors(tmp_path, capsys):
    assert main(["trace", "T-1", "--logs", str(tmp_path / "missing.jsonl")]) == 2
    assert "not found" in _one_error_line(capsys)
    assert main(["trace", "bad id\n", "--logs", str(_log_file(tmp_path))]) == 2
    assert "is not a trace id" in _one_error_line(capsys)
    assert main(["trace", "T-9", "--logs", str(_log_file(tmp_path))]) == 1  # nothing found


def test_trace_from_cloudwatch_logs(tmp_path, aws_endpoint, project, capsys):
    import boto3

    from lambda_kit.local.config import load_service

    config = load_service(project)
    logs = boto3.client("logs", endpoint_url=aws_endpoint.url, region_name="us-east-1")
    group = f"/aws/lambda/{config.functions['worker'].name}"
    logs.create_log_group(logGroupName=group)
    logs.create_log_stream(logGroupName=group, logStreamName="s")
    import time

    now = int(time.time() * 1000)
    events = [
        {
            "timestamp": now,
            "message": json.dumps(
                {
                    "timestamp": "2024-05-01T10:00:00.000Z",
                    "level": "INFO",
                    "message": "record received",
                    "function_name": config.functions["worker"].name,
                    "trace_id": "T-aws",
                }
            ),
        },
        {
            "timestamp": now + 1,
            "message": json.dumps({"level": "INFO", "message": "someone else", "trace_id": "T-other"}),
        },
        {"timestamp": now + 2, "message": "START RequestId: x Version: $LATEST"},
    ]
    logs.put_log_events(logGroupName=group, logStreamName="s", logEvents=events)
    assert main(["trace", "T-aws", "--aws", "--since", "1h", "-c", str(project)]) == 0
    out = capsys.readouterr().out
    assert (
        "1 log lines from CloudWatch Logs" in out and "record received" in out and "someone else" not in out
    )
    assert "no such log group" in out  # the api function has none
    assert "@trace_id:T-aws" in out


# --- invoke --------------------------------------------------------------------------------------


def test_invoke_prints_the_response_and_the_log_lines(project, aws_endpoint, capsys):
    assert (
        main(
            [
                "invoke",
                "worker",
                "--event",
                "sqs",
                "--body",
                '{"n": 1}',
                "--trace-id",
                "T-inv",
                "-c",
                str(project),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert '"batchItemFailures": []' in out
    lines = [json.loads(line) for line in out.splitlines() if line.startswith('{"timestamp"')]
    assert {line["message"] for line in lines} >= {"record received", "working", "record processed"}
    assert all(line["trace_id"] == "T-inv" for line in lines)
    assert next(line for line in lines if line["message"] == "working")["greeting"] == "hello"


def test_invoke_an_api_function_uses_its_route(project, aws_endpoint, capsys):
    assert main(["invoke", "api", "--event", "api", "--body", '{"a": 1}', "-c", str(project)]) == 0
    out = capsys.readouterr().out
    assert '"statusCode": 201' in out and '"method":"POST"' in out and '"path":"/things"' in out


def test_invoke_a_failing_record_exits_one_with_the_failure_reported(project, aws_endpoint, capsys):
    assert main(["invoke", "worker", "--event", "sqs", "--body", '{"fail": true}', "-c", str(project)]) == 1
    captured = capsys.readouterr()
    assert '"itemIdentifier"' in captured.out
    assert captured.err == "lambda-kit invoke: FAILED: 1 of 1 record reported in batchItemFailures\n"


def test_invoke_from_a_file(project, aws_endpoint, tmp_path, capsys):
    payload = tmp_path / "event.json"
    payload.write_text('{"n": 7}', encoding="utf-8")
    assert main(["invoke", "worker", "--event", "sqs", "--file", str(payload), "-c", str(project)]) == 0
    assert '"n":7' in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["invoke", "nope", "--event", "sqs"], "unknown function 'nope'"),
        (["invoke", "worker", "--event", "sqs", "--body", "{bad"], "--body is not valid JSON"),
        (
            ["invoke", "worker", "--event", "sqs", "--file", "/nonexistent/x.json"],
            "--file /nonexistent/x.json",
        ),
        (
            ["invoke", "worker", "--event", "s3", "--body", '{"Key": "a.txt"}'],
            "--event s3: an S3 payload names the object (bucket, key",
        ),
    ],
)
def test_invoke_user_errors(project, capsys, argv, expected):
    assert main([*argv, "-c", str(project)]) == 2
    assert expected in _one_error_line(capsys)


def test_missing_and_invalid_serverless_yml(tmp_path, capsys):
    assert main(["invoke", "f", "--event", "sqs", "-c", str(tmp_path / "serverless.yml")]) == 2
    assert "not found" in _one_error_line(capsys)
    bad = tmp_path / "bad.yml"
    bad.write_text("service: [unclosed\n", encoding="utf-8")
    assert main(["local", "-c", str(bad)]) == 2
    assert "not valid YAML" in _one_error_line(capsys)
    broken = tmp_path / "broken.yml"
    broken.write_text("service: s\nfunctions:\n  f:\n    handler: missing_module.handler\n", encoding="utf-8")
    # a handler that does not import fails its invocation with the init error, as on Lambda
    assert main(["invoke", "f", "--event", "sqs", "-c", str(broken)]) == 1
    captured = capsys.readouterr()
    assert "error: Runtime.ImportModuleError: Unable to import module 'missing_module'" in captured.out
    assert "FAILED: the function raised Runtime.ImportModuleError" in captured.err


def test_port_in_use(project, capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["local", "--port", str(port), "-c", str(project)]) == 2
    assert f"port {port}" in _one_error_line(capsys)


def test_unreachable_aws_endpoint_url(project, monkeypatch, capsys):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    assert main(["invoke", "worker", "--event", "sqs", "-c", str(project)]) == 2
    assert "AWS_ENDPOINT_URL=http://127.0.0.1:9 does not answer" in _one_error_line(capsys)


def test_run_needs_the_services_own_load(tmp_path, aws_endpoint, unique_name, capsys):
    config = tmp_path / "serverless.yml"
    config.write_text(
        f"service: {unique_name('norun')}\nfunctions:\n  f:\n    handler: plain.handler\n", encoding="utf-8"
    )
    (tmp_path / "plain.py").write_text("def handler(event, context):\n    return event\n", encoding="utf-8")
    vendor_lambda_kit(tmp_path)
    assert main(["run", "-c", str(config), "--logs", str(tmp_path / "logs.jsonl")]) == 2
    line = _one_error_line(capsys)
    assert (
        "names no load for `lambda-kit run`: add custom.lambdaKit.run: MODULE" in line
        and "`lambda-kit local`" in line
    )


def test_bad_options_are_usage_errors(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["invoke", "worker", "--event", "pigeon"])
    assert exit_.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_check_is_delegated(project, capsys):
    """``lambda-kit check <config>`` runs the checker on that config: its findings, verdict and exit code."""
    code = main(["check", str(project)])
    lines = capsys.readouterr().out.splitlines()
    assert code == 1  # the toy's queue has no redrive policy (its zip holds lambda_kit: vendored)
    assert lines[-1] == f"lambda-kit check failed: {project}: 2 functions, 1 error, 1 warning"
    assert any(line.startswith("error: Jobs: add a RedrivePolicy") for line in lines)


FRONT_DOORS = """
service: {service}
provider:
  name: aws
functions:
  rest:
    handler: doors.handler
    events:
      - http: 'PUT things/{{id}}'
  balanced:
    handler: doors.handler
    events:
      - alb:
          listenerArn: arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/lb/1/2
          priority: 1
          multiValueHeaders: true
          conditions:
            method: [PATCH]
            path: [/doors/*]
  linked:
    handler: doors.handler
    url: true
"""

DOORS = """
from lambda_kit import api_handler

@api_handler
def handler(request, context):
    return {"statusCode": 200, "cookies": ["seen=1"], "body": \
{"shape": request.shape, "method": request.method, "path": request.path}}
"""


@pytest.mark.parametrize(
    ("function", "shape", "method", "path"),
    [
        ("rest", "v1", "PUT", "/things/{id}"),
        ("balanced", "alb", "PATCH", "/doors/"),
        ("linked", "url", "GET", "/"),
    ],
)
def test_invoke_an_api_function_sends_its_front_doors_shape(
    tmp_path, unique_name, aws_endpoint, capsys, function, shape, method, path
):
    (tmp_path / "serverless.yml").write_text(
        textwrap.dedent(FRONT_DOORS.format(service=unique_name("doors"))), encoding="utf-8"
    )
    (tmp_path / "doors.py").write_text(textwrap.dedent(DOORS), encoding="utf-8")
    vendor_lambda_kit(tmp_path)
    assert main(["invoke", function, "--event", "api", "-c", str(tmp_path / "serverless.yml")]) == 0
    out = capsys.readouterr().out
    response = json.loads(out[out.index("response:\n") + len("response:\n") : out.index("log lines")])
    assert json.loads(response["body"]) == {"shape": shape, "method": method, "path": path}
    if shape == "alb":  # multiValueHeaders: true on the alb event
        assert response["statusDescription"] == "200 OK" and response["multiValueHeaders"]["Set-Cookie"] == [
            "seen=1"
        ]
    elif shape == "url":
        assert response["cookies"] == ["seen=1"]
    else:
        assert response["headers"]["Set-Cookie"] == "seen=1"
