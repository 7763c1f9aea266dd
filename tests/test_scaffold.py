"""`lambda-kit new` as a user runs it: from the wheel, in a fresh venv outside the repository.

Once per test run (tests/_wheel.py, shared by the xdist workers): the wheel as `make dist` builds
it, a fresh venv with the pip its Python bundles, the wheel installed there alone as
docs/install.md says, and from that venv `lambda-kit new orders` (the default parts, api and sqs;
lambda_kit's wheel made from the installed files) and `lambda-kit new everything --with
api,sqs,stream,counter --wheel dist/...`. Each service is then used as its README says:
`pip install -r requirements-dev.txt` (into that venv), its tests, `lambda-kit check`, and
`npx serverless package` with osls and the plugin this repository pins (its node_modules, linked:
no download). The tests open the zips (runtime code only, no bytecode), run the functions from
them on the runtime's Python, and serve the default service with `lambda-kit local`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

import _iam
import pytest
from _docs import read_page
from _local_process import start_local
from _packaging import runtime_python
from _wheel import ROOT, built_wheel, checked, clean_env, documented, fresh_venv, once_per_run, run

from lambda_kit import testing

SERVICES = {
    "orders": {"functions": ["api", "worker"], "new": []},
    "everything": {"functions": ["api", "worker", "stream"], "new": ["--with", "api,sqs,stream,counter"]},
}
LEFT_OUT = (
    "lambda_kit/local/",
    "lambda_kit/cli/",
    "lambda_kit/testing",
    "lambda_kit/serverless_config.py",
    "lambda_kit/py.typed",
)
"""What of lambda_kit's wheel the zip leaves out: the local stack, the CLI and its checks, test helpers."""
MAX_ZIP_BYTES = 400_000
"""About 100 KB of orjson and 200 KB of lambda_kit's runtime code (13 sources, idempotency, metrics),
compressed: a zip that holds more holds something a function does not run."""


def _package_env(venv_bin: Path) -> dict[str, str]:
    """A shell with the service's venv active (its python3 runs the plugin's pip) and dummy credentials."""
    env = clean_env()
    env.update(
        PATH=os.pathsep.join([str(venv_bin), env.get("PATH", "")]),
        SLS_TELEMETRY_DISABLED="1",
        AWS_ACCESS_KEY_ID="packaging-needs-no-credentials",
        AWS_SECRET_ACCESS_KEY="packaging-needs-no-credentials",
        AWS_REGION="us-east-1",
    )
    return env


def _set_up(base: Path) -> dict[str, Any]:
    env = clean_env()
    (base / "dist").mkdir()
    wheel = Path(shutil.copy(built_wheel()["wheel"], base / "dist"))
    python = fresh_venv(base / "venv", upgrade_pip=False)
    checked(run([str(python), "-m", *documented("pip install dist/")], base, env))
    made: dict[str, Any] = {}
    for name, service in SERVICES.items():
        given = ["--wheel", str(wheel)] if service["new"] else []
        new = run([str(python.parent / "lambda-kit"), "new", name, *service["new"], *given], base, env)
        directory = base / name
        checked(
            run(
                [str(python), "-m", "pip", "install", "-r", "requirements-dev.txt"],
                directory,
                env,
                timeout=900,
            )
        )
        (directory / "node_modules").symlink_to(ROOT / "node_modules", target_is_directory=True)
        package = run(
            [str(directory / "node_modules" / ".bin" / "serverless"), "package"],
            directory,
            _package_env(python.parent),
            timeout=600,
        )
        made[name] = {
            "new": [new.returncode, new.stdout, new.stderr],
            "package": [package.returncode, package.stdout + package.stderr],
        }
    return {"base": str(base), "wheel": str(wheel), "bin": str(python.parent), "services": made}


@pytest.fixture(scope="module")
def scaffold() -> dict[str, Any]:
    ready = once_per_run("scaffold", _set_up)
    ready["env"] = clean_env()
    return ready


def _directory(scaffold: dict[str, Any], name: str) -> Path:
    return Path(scaffold["base"]) / name


def _artifact(scaffold: dict[str, Any], name: str) -> Path:
    status, output = scaffold["services"][name]["package"]
    assert status == 0, output[-4000:]
    return _directory(scaffold, name) / ".serverless" / f"{name}.zip"


def _wheel_files(path: Path | str) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as wheel:
        return {name: wheel.read(name) for name in wheel.namelist() if not name.endswith(".dist-info/RECORD")}


# --- lambda-kit new from the wheel -------------------------------------------------------------------


def test_new_writes_the_service_and_vendors_the_lambda_kit_it_runs_from(scaffold):
    for name in SERVICES:
        status, out, err = scaffold["services"][name]["new"]
        assert (status, err) == (0, ""), err
        assert out.startswith(f"lambda-kit new: {name}/ holds the service {name} ("), out
    vendored = _directory(scaffold, "orders") / "vendor" / Path(scaffold["wheel"]).name
    # made from the installed files: the wheel's files, byte for byte, and a RECORD of them
    assert _wheel_files(vendored) == _wheel_files(scaffold["wheel"])
    with zipfile.ZipFile(vendored) as wheel:
        record = wheel.read("lambda_event_kit-0.1.0.dist-info/RECORD").decode().splitlines()
    assert sorted(line.split(",")[0] for line in record) == sorted(zipfile.ZipFile(vendored).namelist())
    # given with --wheel: copied as it is
    given = _directory(scaffold, "everything") / "vendor" / Path(scaffold["wheel"]).name
    assert given.read_bytes() == Path(scaffold["wheel"]).read_bytes()


@pytest.mark.parametrize("name", SERVICES)
def test_the_services_own_tests_pass(scaffold, name):
    if name == "everything" and not hasattr(testing, "counter_table"):
        pytest.skip(
            "its counter tests use lambda_kit.testing.counter_table, which lands with the counters branch"
        )
    pytest_command = [str(Path(scaffold["bin"]) / "pytest"), "-p", "no:cacheprovider"]
    result = run(pytest_command, _directory(scaffold, name), scaffold["env"], timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "skipped" not in result.stdout and "error" not in result.stdout


@pytest.mark.parametrize("name", SERVICES)
def test_lambda_kit_check_finds_nothing(scaffold, name):
    result = run(
        [str(Path(scaffold["bin"]) / "lambda-kit"), "check"], _directory(scaffold, name), scaffold["env"]
    )
    functions = len(SERVICES[name]["functions"])
    assert (
        result.stdout == f"lambda-kit check ok: serverless.yml: {functions} functions, 0 errors, 0 warnings\n"
    ), result


def _commands(text: str) -> set[str]:
    """The command lines of a shell block, comments and spacing left out."""
    return {" ".join(line.split(" #", 1)[0].split()) for line in text.splitlines() if line.strip()}


def test_docs_deploy_gives_the_commands_of_the_services_readme(scaffold):
    readme = read_page(_directory(scaffold, "orders") / "README.md")
    three = [b for b in readme.blocks if b.language == "sh" and "curl" not in b.text]
    assert [b.text.split()[0] for b in three] == ["python3", ".venv/bin/pytest"]
    deploy = [b for b in read_page(ROOT / "docs" / "deploy.md").blocks if b.language == "sh"]
    documented_here = set().union(*(_commands(b.text) for b in deploy))
    assert set().union(*(_commands(b.text) for b in three)) <= documented_here
    assert "../lambda-kit-venv/bin/lambda-kit new ../orders" in documented_here


# --- the zip ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SERVICES)
def test_the_zip_holds_runtime_code_only(scaffold, name):
    artifact = _artifact(scaffold, name)
    assert artifact.stat().st_size <= MAX_ZIP_BYTES, f"{artifact.stat().st_size:,} bytes"
    names = zipfile.ZipFile(artifact).namelist()
    assert {n.split("/", 1)[0] for n in names} == {"handlers", "lambda_kit", "orjson"}
    assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".pyi")) or ".dist-info" in n]
    # lambda_kit: every file of its wheel but the local stack, the CLI and the test helpers
    shipped = [n for n in _wheel_files(scaffold["wheel"]) if n.startswith("lambda_kit/")]
    assert sorted(n for n in names if n.startswith("lambda_kit/")) == sorted(
        n for n in shipped if not n.startswith(LEFT_OUT)
    )
    assert "lambda_kit/__init__.py" in names and "lambda_kit/counters/counter.py" in names
    handlers = sorted(
        str(p.relative_to(_directory(scaffold, name)))
        for p in (_directory(scaffold, name) / "handlers").glob("*.py")
    )
    assert sorted(n for n in names if n.startswith("handlers/")) == handlers


RUNTIME_CHECK = """
import importlib, json, sys, types
task, site, events = sys.argv[1], sys.argv[2], json.loads(open(sys.argv[3]).read())
sys.path[:0] = [task]
sys.path.append(site)  # boto3, as the Lambda runtime has it
context = types.SimpleNamespace(
    function_name="f", function_version="$LATEST", memory_limit_in_mb=256, aws_request_id="req-1",
    invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:f", log_group_name="/aws/lambda/f",
    log_stream_name="s", get_remaining_time_in_millis=lambda: 10000,
)
results = {}
for name, handler in events["handlers"].items():
    module, _, attribute = handler.rpartition(".")
    function = getattr(importlib.import_module(module.replace("/", ".")), attribute)
    results[name] = function(events["events"][name], context)
from lambda_kit import codec
shipped = ("lambda_kit", "handlers", "orjson")
loaded = list(sys.modules.items())
files = {m: getattr(v, "__file__", None) or "" for m, v in loaded if m.split(".")[0] in shipped}
print(json.dumps({"results": results, "files": files, "codec": codec.name}))
"""
EVENTS = {
    "api": testing.api_event("POST", "/orders", body={"id": "o-1", "item": "book"}),
    "worker": testing.sqs_event({"not": "an order"}),
    "stream": testing.kinesis_event({"not": "an order"}),
}


@pytest.mark.parametrize("name", SERVICES)
def test_the_functions_run_from_the_zip_on_the_runtimes_python(scaffold, name, tmp_path):
    python = runtime_python()
    if python is None:
        pytest.skip("no python3.12 to run the zip with (the packaging itself needed none)")
    task = tmp_path / "task"
    zipfile.ZipFile(_artifact(scaffold, name)).extractall(task)
    template = json.loads(
        (_directory(scaffold, name) / ".serverless" / "cloudformation-template-update-stack.json").read_text()
    )
    handlers = {
        r["Properties"]["FunctionName"].rsplit("-", 1)[1]: r["Properties"]["Handler"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
    }
    assert sorted(handlers) == sorted(SERVICES[name]["functions"])
    [site] = Path(scaffold["bin"]).parent.glob("lib/python*/site-packages")
    (tmp_path / "events.json").write_text(json.dumps({"handlers": handlers, "events": EVENTS}))
    result = subprocess.run(
        [python, "-I", "-S", "-c", RUNTIME_CHECK, str(task), str(site), str(tmp_path / "events.json")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["codec"] == "orjson"  # the zip's, built for the runtime
    outside = {
        module: file for module, file in report["files"].items() if file and not file.startswith(str(task))
    }
    assert outside == {}, outside  # lambda_kit, orjson and the handlers all come from the zip
    assert not [
        m
        for m in report["files"]
        if m.startswith(("lambda_kit.local", "lambda_kit.cli", "lambda_kit.testing"))
    ]
    results = report["results"]
    assert results["api"]["statusCode"] == 400
    assert json.loads(results["api"]["body"])["error"] == "quantity must be a whole number of at least 1"
    for consumer in set(handlers) - {"api"}:
        assert len(results[consumer]["batchItemFailures"]) == 1, results


# --- IAM: the roles grant what the functions call, and nothing else ---------------------------------

CALLS = """
import json, urllib.request
from lambda_kit.local import LocalStack
from lambda_kit.local.aws_calls import resource_ids

ORDER = json.dumps({"id": "o-1", "item": "book", "quantity": 2}).encode()
with LocalStack("serverless.yml", log_path=None) as stack:
    headers = {"Content-Type": "application/json"}
    post = urllib.request.Request(stack.api_url + "/orders", data=ORDER, headers=headers)
    urllib.request.urlopen(post, timeout=10).read()
    if "stream" in stack.runtimes:  # put on the stream by another producer (the stack's own client)
        name = f"{stack.config.service}-{stack.config.stage}-orders"
        stack.clients("kinesis").put_record(StreamName=name, Data=ORDER, PartitionKey="book")
    assert stack.wait_drained(60)
    if "dynamodb" in open("serverless.yml").read().lower():
        urllib.request.urlopen(stack.api_url + "/items/book", timeout=10).read()
    ids = resource_ids(stack.resources, stack.region)
    print(json.dumps({"calls": stack.calls.by_function(), "ids": ids}))
"""


@pytest.mark.parametrize("name", SERVICES)
def test_each_role_grants_what_its_function_calls_and_nothing_else(scaffold, name):
    """The calls each function makes on the local stack (recorded by its AWS proxy), as IAM
    actions on resources, against its role in the packaged template (tests/_iam.py): every call is
    granted, and every grant is used by a call, by Lambda's side of the wiring, or named by the
    comment above its statement."""
    directory = _directory(scaffold, name)
    run_calls = run(
        [str(Path(scaffold["bin"]) / "python"), "-c", CALLS], directory, scaffold["env"], timeout=300
    )
    assert run_calls.returncode == 0, run_calls.stdout[-3000:] + run_calls.stderr[-3000:]
    recorded = json.loads(run_calls.stdout.splitlines()[-1])
    _artifact(scaffold, name)  # packaged
    template = json.loads(
        (directory / ".serverless" / "cloudformation-template-update-stack.json").read_text()
    )
    functions = SERVICES[name]["functions"]
    counting = name == "everything"  # its consumers count on the table; the default's only log
    assert set(recorded["calls"]) == ({"api", *functions} if counting else {"api"}), recorded["calls"]
    findings = _iam.check(
        template, (directory / "serverless.yml").read_text(), recorded["calls"], recorded["ids"], functions
    )
    for finding in findings:
        assert (finding.function, finding.not_granted, finding.unjustified) == (finding.function, [], set())
    used = {finding.function: {action for action, _ in finding.used} for finding in findings}
    assert used["api"] == {"sqs:SendMessage"} | ({"dynamodb:BatchGetItem"} if name == "everything" else set())


# --- lambda-kit local ---------------------------------------------------------------------------------


def _logged(path: Path, trace_id: str, message: str, deadline: float) -> list[dict[str, Any]]:
    """The log lines with this trace id and message, waiting for one until ``deadline``."""
    while True:
        lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
        found = [
            line for line in lines if line.get("trace_id") == trace_id and line.get("message") == message
        ]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_lambda_kit_local_serves_the_default_service(scaffold):
    directory = _directory(scaffold, "orders")
    process, url = start_local(directory, scaffold["env"], python=str(Path(scaffold["bin"]) / "python"))
    try:
        order = json.dumps({"id": "o-9", "item": "pen", "quantity": 3}).encode()
        request = urllib.request.Request(
            url + "/orders",
            data=order,
            method="POST",
            headers={"Content-Type": "application/json", "X-Trace-Id": "T-local-9"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert (response.status, json.loads(response.read())) == (
                202,
                {"accepted": "o-9", "trace_id": "T-local-9"},
            )
        [taken] = _logged(
            directory / ".lambda-kit" / "logs.jsonl", "T-local-9", "order taken", time.monotonic() + 60
        )
        assert (taken["function_name"], taken["order"], taken["quantity"]) == ("orders-dev-worker", "o-9", 3)
        process.send_signal(signal.SIGINT)  # Ctrl-C
        assert process.wait(timeout=60) in (0, 130)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


# --- the mistakes the local stack catches as Lambda would ---------------------------------------------

NEEDS_PYDANTIC = '''
import pydantic

from lambda_kit import sqs_handler


@sqs_handler
def handler(message, context):
    return pydantic.VERSION
'''
SEND_STATEMENT = """                - Effect: Allow
                  Action: sqs:SendMessage
                  Resource: !GetAtt OrdersQueue.Arn
"""


def test_a_missing_requirement_and_a_denied_call_fail_locally_as_on_lambda(scaffold, tmp_path):
    """The default service from the wheel, with two mistakes: a handler importing a package its
    requirements do not list (the venv has it), and the api's role without its sqs:SendMessage."""
    directory = tmp_path / "orders"
    shutil.copytree(
        _directory(scaffold, "orders"), directory, symlinks=True, ignore=shutil.ignore_patterns(".lambda-kit")
    )
    (directory / "handlers" / "needs_pydantic.py").write_text(NEEDS_PYDANTIC, encoding="utf-8")
    config = (directory / "serverless.yml").read_text(encoding="utf-8")
    assert SEND_STATEMENT in config and "\nfunctions:\n" in config
    config = config.replace(SEND_STATEMENT, "").replace(
        "\nfunctions:\n", "\nfunctions:\n  needs_pydantic:\n    handler: handlers/needs_pydantic.handler\n", 1
    )
    (directory / "serverless.yml").write_text(config, encoding="utf-8")
    python = str(Path(scaffold["bin"]) / "python")
    has_pydantic = run([python, "-c", "import pydantic"], directory, scaffold["env"])
    assert has_pydantic.returncode == 0  # the venv has it (moto brings it): only the zip lacks it
    lambda_kit = str(Path(scaffold["bin"]) / "lambda-kit")

    imported = run([lambda_kit, "invoke", "needs_pydantic", "--event", "sqs"], directory, scaffold["env"])
    assert imported.returncode == 1, imported.stdout + imported.stderr
    assert (
        "error: Runtime.ImportModuleError: Unable to import module 'handlers/needs_pydantic': "
        "No module named 'pydantic'"
    ) in imported.stdout

    body = json.dumps({"id": "o-1", "item": "book", "quantity": 2})
    invoke = [lambda_kit, "invoke", "api", "--event", "api", "--method", "POST", "--path", "/orders"]
    invoke += ["--body", body]
    denied = run(invoke, directory, scaffold["env"])
    assert denied.returncode == 1, denied.stdout + denied.stderr  # the API answered 500
    assert "An error occurred (AccessDenied) when calling the SendMessage operation" in denied.stdout
    assert "/orders-dev-api is not authorized to perform: sqs:SendMessage on resource: " in denied.stdout
