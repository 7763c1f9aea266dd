"""Each function runs as Lambda runs it: worker processes under AWS's runtime interface client, from
what its zip would hold, with only its own environment, its role, its timeout and its memory size.

Real processes, real endpoints: the session's moto server and DynamoDB Local, the stack's Runtime
API and AWS proxy on loopback."""

from __future__ import annotations

import importlib.util
import json
import os
import time

import pytest
from _local_toys import fast_timing, module_of, toy_stack, wait_for

from lambda_kit.testing import sqs_event

SERVICE = """
service: {service}
provider:
  name: aws
  runtime: python3.12
  environment:
    SHARED: from-the-provider
    TABLE: !Ref Items
functions:
  first:
    handler: lambda_app.whoami
    environment:
      COLOUR: red
  second:
    handler: lambda_app.whoami
    memorySize: 256
    environment:
      COLOUR: blue
  sleeper:
    handler: lambda_app.sleeper
    timeout: 1
    events:
      - sqs: {{arn: !GetAtt Slow.Arn, batchSize: 1}}
  exiter:
    handler: lambda_app.exiter
    events:
      - sqs: {{arn: !GetAtt Exits.Arn, batchSize: 1}}
  hog:
    handler: lambda_app.hog
    memorySize: 128
  needs_pydantic:
    handler: needs_pydantic.handler
  broken:
    handler: broken_app.handler
  missing:
    handler: lambda_app.not_there
  writer:
    handler: lambda_app.writer
    role: WriterRole
resources:
  Resources:
    Items:
      Type: AWS::DynamoDB::Table
      Properties:
        TableName: {service}-items
        BillingMode: PAY_PER_REQUEST
        AttributeDefinitions: [{{AttributeName: PK, AttributeType: S}}]
        KeySchema: [{{AttributeName: PK, KeyType: HASH}}]
    Slow:
      Type: AWS::SQS::Queue
      Properties:
        QueueName: {service}-slow
        RedrivePolicy: {{deadLetterTargetArn: !GetAtt SlowDLQ.Arn, maxReceiveCount: 2}}
    SlowDLQ:
      Type: AWS::SQS::Queue
      Properties:
        QueueName: {service}-slow-dlq
    Exits:
      Type: AWS::SQS::Queue
      Properties:
        QueueName: {service}-exits
        RedrivePolicy: {{deadLetterTargetArn: !GetAtt ExitsDLQ.Arn, maxReceiveCount: 3}}
    ExitsDLQ:
      Type: AWS::SQS::Queue
      Properties:
        QueueName: {service}-exits-dlq
    WriterRole:
      Type: AWS::IAM::Role
      Properties:
        RoleName: {service}-writer
        Policies:
          - PolicyName: writer
            PolicyDocument:
              Statement:
                - Effect: Allow
                  Action: [sqs:SendMessage]
                  Resource: !GetAtt Slow.Arn
{extra_statement}
"""

PUT_ITEM = """\
                - Effect: Allow
                  Action: dynamodb:PutItem
                  Resource: !GetAtt Items.Arn"""

APP = """
import os
import time

import boto3
from lambda_kit import sqs_handler
from toy_state import recorded

pids = recorded(__name__, "pids")
exits = recorded(__name__, "exits")


def whoami(event, context):
    names = ("COLOUR", "SHARED", "AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "_HANDLER",
             "LAMBDA_TASK_ROOT", "AWS_LAMBDA_LOG_GROUP_NAME", "AWS_REGION", "LAMBDA_KIT_TEST_LEAK")
    return {"pid": os.getpid(), "env": {name: os.environ.get(name) for name in names},
            "cwd": os.getcwd(), "remaining": context.get_remaining_time_in_millis()}


def sleeper(event, context):
    pids.append(os.getpid())
    time.sleep(30)


@sqs_handler
def _exit_on_first_receive(message, context):
    from lambda_kit import current_record

    received = int(current_record().raw["attributes"]["ApproximateReceiveCount"])
    exits.append((message["n"], received))
    if received == 1:
        os._exit(3)


def exiter(event, context):
    return _exit_on_first_receive(event, context)


def hog(event, context):
    if event.get("hog"):
        hoard = bytearray(400 * 1024 * 1024)
        return len(hoard)
    return os.getpid()


@sqs_handler
def writer(message, context):
    boto3.client("dynamodb").put_item(TableName=os.environ["TABLE"], Item={"PK": {"S": message["id"]}})
    boto3.client("sqs").get_queue_url(QueueName=message["queue"])
    return "written"
"""

MODULES = {
    "lambda_app": APP,
    "needs_pydantic": "import pydantic\n\ndef handler(event, context):\n    return pydantic.VERSION\n",
    "broken_app": "raise RuntimeError('boom at import')\n\ndef handler(event, context):\n    return 1\n",
}


def _service(tmp_path, aws_endpoint, name, extra_statement="", **options):
    config = SERVICE.format(service=name, extra_statement=extra_statement)
    return toy_stack(tmp_path, config, MODULES, aws_endpoint.url, **options)


@pytest.fixture(scope="module")
def stack(tmp_path_factory, aws_endpoint):
    os.environ["LAMBDA_KIT_TEST_LEAK"] = "the test process's own"
    name = f"lam{os.getpid()}"
    try:
        with _service(tmp_path_factory.mktemp("lambda"), aws_endpoint, name) as running:
            yield running
    finally:
        del os.environ["LAMBDA_KIT_TEST_LEAK"]


def _lines(stack):
    return [json.loads(line) for line in stack.log.path.read_text(encoding="utf-8").splitlines()]


def _reports(stack, request_id):
    return [
        line
        for line in _lines(stack)
        if line.get("type") == "platform.report" and line["request_id"] == request_id
    ]


def test_each_function_sees_only_its_own_environment(stack):
    first, second = stack.invoke("first", {}).response, stack.invoke("second", {}).response
    assert first["env"]["COLOUR"] == "red" and second["env"]["COLOUR"] == "blue"
    assert first["env"]["SHARED"] == second["env"]["SHARED"] == "from-the-provider"
    assert first["env"]["LAMBDA_KIT_TEST_LEAK"] is None  # nothing of the stack's own environment
    assert first["env"]["AWS_LAMBDA_FUNCTION_NAME"] == stack.runtime("first").name
    assert (
        first["env"]["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"],
        second["env"]["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"],
    ) == (
        "1024",
        "256",
    )
    assert first["env"]["_HANDLER"] == "lambda_app.whoami"
    assert first["env"]["AWS_LAMBDA_LOG_GROUP_NAME"] == f"/aws/lambda/{stack.runtime('first').name}"
    assert first["cwd"] == first["env"]["LAMBDA_TASK_ROOT"] != str(stack.config.project_dir)
    assert first["pid"] != second["pid"] != os.getpid()
    assert 5000 < first["remaining"] <= 6000  # the framework's default timeout, 6 s


def test_a_warm_worker_is_reused_and_a_cold_start_reports_its_init_duration(stack):
    cold = stack.invoke("second", {"n": 1})  # second's first invocation may have been in another test
    warm = stack.invoke("second", {"n": 2})
    assert cold.response["pid"] == warm.response["pid"]
    [report] = _reports(stack, warm.request_id)
    assert "initDurationMs" not in report["record"]["metrics"] and "Init Duration" not in report["message"]
    pids = {worker.pid for worker in stack.runtime("second").pool.workers}
    assert pids == {warm.response["pid"]}
    starts = [
        line
        for line in _lines(stack)
        if line.get("type") == "platform.report"
        and "initDurationMs" in line["record"]["metrics"]
        and line["function_name"] == stack.runtime("second").name
    ]
    assert len(starts) == 1 and starts[0]["record"]["metrics"]["initDurationMs"] > 0
    assert "\tInit Duration: " in starts[0]["message"] and starts[0]["message"].startswith(
        "REPORT Duration: "
    )
    assert starts[0]["outcome"] == f"success, init {starts[0]['record']['metrics']['initDurationMs']:.2f} ms"


def test_a_package_the_zip_lacks_fails_at_init_with_lambdas_error(stack):
    assert importlib.util.find_spec("pydantic") is not None  # the development venv has it; the zip not
    result = stack.invoke("needs_pydantic", {})
    assert result.error_type == "Runtime.ImportModuleError"
    assert str(result.error) == "Unable to import module 'needs_pydantic': No module named 'pydantic'"
    errors = [line for line in _lines(stack) if line.get("error_type") == "Runtime.ImportModuleError"]
    assert errors and errors[-1]["level"] == "ERROR"
    assert errors[-1]["function_name"] == stack.runtime("needs_pydantic").name


def test_a_module_that_raises_at_import_fails_its_invocations_and_the_others_keep_serving(stack):
    for _ in range(2):  # each invocation tries a fresh environment, as Lambda does after an init error
        result = stack.invoke("broken", {})
        assert (result.error_type, str(result.error)) == ("RuntimeError", "boom at import")
    missing = stack.invoke("missing", {})
    assert missing.error_type == "Runtime.HandlerNotFound"
    assert str(missing.error) == "Handler 'not_there' missing on module 'lambda_app'"
    assert stack.invoke("first", {}).response["env"]["COLOUR"] == "red"


def test_a_timeout_kills_the_worker_and_the_message_comes_back_then_goes_to_the_dlq(stack):
    stack.clients("sqs").send_message(QueueUrl=stack.queue_url("Slow"), MessageBody="slow")
    wait_for(lambda: stack.queue_count("SlowDLQ") == 1, timeout=60)
    batches = stack.journal.events("sqs.batch", function="sleeper")
    assert len(batches) == 2  # maxReceiveCount 2: two tries, then SQS moved it to the DLQ
    reasons = [b["reason"] for b in batches]
    assert all("Sandbox.Timedout" in r and "Task timed out after 1.00 seconds" in r for r in reasons), reasons
    pids = module_of(stack, "sleeper").pids
    assert len(pids) == 2 and pids[0] != pids[1]  # the first worker was killed at its deadline
    wait_for(lambda: not any(w.alive for w in stack.runtime("sleeper").pool.workers))
    timed_out = [
        line
        for line in _lines(stack)
        if line.get("message", "").endswith("Task timed out after 1.00 seconds")
    ]
    assert len(timed_out) == 2 and {line["level"] for line in timed_out} == {"ERROR"}


def test_a_worker_that_exits_mid_invocation_is_an_exit_error_and_the_message_comes_back(stack):
    stack.clients("sqs").send_message(QueueUrl=stack.queue_url("Exits"), MessageBody=json.dumps({"n": 7}))
    wait_for(lambda: (7, 2) in module_of(stack, "exiter").exits, timeout=60)
    assert stack.wait_drained(30)
    first, second = stack.journal.events("sqs.batch", function="exiter")[:2]
    assert first["reason"].startswith("Runtime.ExitError: RequestId: ")
    assert first["reason"].endswith("Error: Runtime exited with error: exit status 3")
    assert second["reason"] is None and second["deleted"]
    assert stack.queue_count("ExitsDLQ") == 0


def test_the_memory_size_is_a_limit(stack):
    pid = stack.invoke("hog", {}).response
    result = stack.invoke("hog", {"hog": True})
    assert result.error_type == "Runtime.OutOfMemory"
    assert "Runtime exited with error: signal: killed" in str(result.error)
    assert stack.invoke("hog", {}).response != pid  # that environment is gone


def test_a_call_the_role_does_not_allow_is_denied_as_aws_denies_it(stack):
    event = sqs_event({"id": "denied-1", "queue": f"{stack.config.service}-slow"}, trace_id="trace-denied-1")
    result = stack.invoke("writer", event)
    assert (
        result.ok and result.response["batchItemFailures"]
    )  # the record failed, as the decorator reports it
    [failed] = [
        line
        for line in _lines(stack)
        if line.get("trace_id") == "trace-denied-1" and line["level"] == "ERROR"
    ]
    table = f"arn:aws:dynamodb:us-east-1:123456789012:table/{stack.config.service}-items"
    assert (
        "An error occurred (AccessDeniedException) when calling the PutItem operation: User: "
        in failed["error"]
    )
    role = f"{stack.config.service}-writer"
    principal = f"arn:aws:sts::123456789012:assumed-role/{role}/{stack.runtime('writer').name}"
    assert (
        f"{principal} is not authorized to perform: dynamodb:PutItem on resource: {table} "
        "because no identity-based policy allows the dynamodb:PutItem action"
    ) in failed["error"]
    denied = [
        (c.action, c.resource) for c in stack.calls.recorded() if c.function == "writer" and not c.allowed
    ]
    assert denied == [("dynamodb:PutItem", table)]


def test_with_the_statement_the_call_goes_through_and_the_next_one_is_denied(
    tmp_path, aws_endpoint, unique_name
):
    name = unique_name("lamok")
    with _service(tmp_path, aws_endpoint, name, extra_statement=PUT_ITEM, functions=["writer"]) as stack:
        event = sqs_event({"id": "allowed-1", "queue": f"{name}-slow"}, trace_id="trace-allowed-1")
        assert stack.invoke("writer", event).response["batchItemFailures"]
        item = stack.clients("dynamodb").get_item(TableName=f"{name}-items", Key={"PK": {"S": "allowed-1"}})
        assert "Item" in item  # PutItem is granted now: it went through
        # sqs:GetQueueUrl is not granted: SQS's JSON protocol names the query protocol's code
        [line] = [
            x for x in _lines(stack) if x.get("trace_id") == "trace-allowed-1" and x["level"] == "ERROR"
        ]
        assert (
            "An error occurred (AccessDenied) when calling the GetQueueUrl operation: User: " in line["error"]
        )
        assert (
            "is not authorized to perform: sqs:GetQueueUrl on resource: "
            f"arn:aws:sqs:us-east-1:123456789012:{name}-slow" in line["error"]
        )


def test_without_iam_every_call_goes_through_and_is_still_recorded(tmp_path, aws_endpoint, unique_name):
    name = unique_name("lamnoiam")
    with _service(tmp_path, aws_endpoint, name, functions=["writer"], iam=False) as stack:
        event = sqs_event({"id": "unchecked-1", "queue": f"{name}-slow"})
        assert stack.invoke("writer", event).response == {"batchItemFailures": []}
        item = stack.clients("dynamodb").get_item(TableName=f"{name}-items", Key={"PK": {"S": "unchecked-1"}})
        assert "Item" in item
        denied = {c.action for c in stack.calls.recorded() if not c.allowed}
        assert denied == {"dynamodb:PutItem", "sqs:GetQueueUrl"}  # what the role would deny


RELOADED = """
import os

VERSION = {version!r}


def handler(event, context):
    return {{"version": VERSION, "pid": os.getpid()}}
"""


def test_a_changed_handler_replaces_the_warm_workers_at_the_next_invocation(
    tmp_path, aws_endpoint, unique_name
):
    config = f"""
service: {unique_name("reload")}
provider:
  name: aws
functions:
  app:
    handler: reloaded.handler
"""
    with toy_stack(
        tmp_path, config, {"reloaded": RELOADED.format(version="one")}, aws_endpoint.url, timing=fast_timing()
    ) as stack:
        before = stack.invoke("app", {}).response
        assert before["version"] == "one"
        assert stack.reloader is not None and stack.reloader.wait_ready()
        (tmp_path / "reloaded.py").write_text(RELOADED.format(version="two"), encoding="utf-8")
        wait_for(lambda: stack.journal.events("function.reloaded", function="app"), timeout=20)
        after = stack.invoke("app", {}).response
        assert after["version"] == "two" and after["pid"] != before["pid"]
        time.sleep(0.1)
        assert not any(w.alive for w in stack.runtime("app").pool.workers if w.pid == before["pid"])
