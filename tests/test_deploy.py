"""The deployment: `serverless package` (osls, offline, dummy credentials) and the template it makes.

Packaging runs once per test run, as a new machine would run it (tests/_packaging.py: a cold
requirements cache, no python of the runtime's version on PATH); the session fixture ``packaged``
(tests/conftest.py) serves its template and artifact.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from _iam import as_list, function_id, target
from _packaging import CONFIG, RUNTIME_VERSION, SERVICE, STAGE, runtime_python

from lambda_kit import testing

MAX_ARTIFACT_BYTES = 1_000_000

# cfn-lint rules skipped, each with its reason:
CFN_LINT_IGNORED = {
    # "dependency already enforced by a GetAtt/Ref": the framework itself adds DependsOn on each
    # function's role and each HTTP API route's integration next to the GetAtt/Ref it also
    # writes. Redundant but harmless, and not something serverless.yml can remove.
    "W3005",
}

FUNCTIONS = ("ingest", "counter", "aggregator", "milestones", "clickstream")


@pytest.fixture(scope="session")
def template(packaged) -> dict[str, Any]:
    return packaged["template"]


@pytest.fixture(scope="session")
def resources(template) -> dict[str, Any]:
    return template["Resources"]


# ------------------------------------------------------------------ helpers


def of_type(resources: dict[str, Any], kind: str) -> dict[str, Any]:
    return {name: r for name, r in resources.items() if r["Type"] == kind}


def mappings_of(resources: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [
        r["Properties"]
        for r in of_type(resources, "AWS::Lambda::EventSourceMapping").values()
        if target(r["Properties"]["FunctionName"]) == function_id(name)
    ]


def role_of(resources: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    role_id = target(resources[function_id(name)]["Properties"]["Role"])
    return role_id, resources[role_id]


def statements(role: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for policy in role["Properties"].get("Policies", []):
        for statement in policy["PolicyDocument"]["Statement"]:
            found.append(statement)
    return found


def grants(resources: dict[str, Any], name: str) -> dict[str, set[str]]:
    """{action: {resource logical id or literal}} for the function's role."""
    _, role = role_of(resources, name)
    granted: dict[str, set[str]] = {}
    for statement in statements(role):
        assert statement["Effect"] == "Allow"
        for action in as_list(statement["Action"]):
            for resource in as_list(statement["Resource"]):
                granted.setdefault(action, set()).add(
                    target(resource) or json.dumps(resource, sort_keys=True)
                )
    return granted


# ------------------------------------------------------------------ packaging and lint


def test_cfn_lint_passes(packaged):
    cfn_lint = Path(sys.executable).with_name("cfn-lint")
    command = str(cfn_lint) if cfn_lint.exists() else shutil.which("cfn-lint")
    assert command, "cfn-lint is not installed (pip install -e '.[dev]')"
    result = subprocess.run(
        [command, "--ignore-checks", *sorted(CFN_LINT_IGNORED), "--", str(packaged["template_path"])],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def _pip_args() -> dict[str, str]:
    """custom.pythonRequirements.pipCmdExtraArgs as {"--platform": "manylinux2014_x86_64", ...}."""
    args = {}
    for item in CONFIG["custom"]["pythonRequirements"]["pipCmdExtraArgs"]:
        name, _, value = item.replace("=", " ", 1).partition(" ")
        args[name] = value.strip()
    return args


def test_requirements_are_fetched_for_the_runtime_not_the_local_python():
    options = CONFIG["custom"]["pythonRequirements"]
    args = _pip_args()
    assert args["--python-version"] == RUNTIME_VERSION
    assert args["--implementation"] == "cp"
    assert args["--only-binary"] == ":all:"
    assert (
        args["--platform"]
        == {"x86_64": "manylinux2014_x86_64", "arm64": "manylinux2014_aarch64"}[
            CONFIG["provider"]["architecture"]
        ]
    )
    assert "--no-compile" in args  # pip would compile .pyc for the packaging machine's Python
    assert options["dockerizePip"] is False
    assert options["pythonBin"] == "python3"  # not the runtime's python3.12
    assert options["useStaticCache"] is False  # a cache keyed by the requirements alone


def test_packaging_ran_without_the_runtimes_python_and_with_an_empty_cache(packaged):
    run = packaged["run"]
    assert shutil.which(f"python{RUNTIME_VERSION}", path=run["path"]) is None
    # pip installed the requirements (no earlier build was reused), with the empty cache
    assert 'Installing requirements from "' in run["output"], run["output"]
    assert "static cache" not in run["output"]
    assert f"Using download cache directory {run['cache']}/" in run["output"]


def _top_level(names: list[str]) -> set[str]:
    return {n.split("/", 1)[0] for n in names}


def test_artifact_holds_what_the_functions_import_and_nothing_else(packaged):
    artifact = packaged["artifact"]
    assert artifact.stat().st_size <= MAX_ARTIFACT_BYTES, f"{artifact.stat().st_size:,} bytes zipped"
    names = zipfile.ZipFile(artifact).namelist()
    assert _top_level(names) == {"lambda_kit", "handlers", "orjson"}
    assert "lambda_kit/__init__.py" in names and "handlers/ingest.py" in names
    # Compiled wheels are Lambda's (CPython 3.12, x86_64 Linux), whatever machine packaged them.
    assert [
        n
        for n in names
        if re.fullmatch(rf"orjson/orjson\.cpython-{RUNTIME_VERSION.replace('.', '')}-x86_64-linux-gnu\.so", n)
    ]
    # lambda_kit without the local stack, the CLI and the test helpers
    for unwanted in (
        "lambda_kit/local/",
        "lambda_kit/cli/",
        "lambda_kit/serverless_config.py",
        "lambda_kit/testing/",
    ):
        assert not [n for n in names if n.startswith(unwanted)], unwanted
    assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".pyi", ".dist-info/RECORD"))]


RUNTIME_CHECK = """
import importlib, json, sys, types
sys.path.insert(0, sys.argv[1])
events = json.loads(open(sys.argv[2]).read())
context = types.SimpleNamespace(
    function_name="view-stats-dev-f", function_version="$LATEST", memory_limit_in_mb=256,
    invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:view-stats-dev-f",
    aws_request_id="req-1", log_group_name="/aws/lambda/f", log_stream_name="s",
    get_remaining_time_in_millis=lambda: 10000,
)
report = {"results": {}}
for name, handler in events["handlers"].items():
    module, _, attribute = handler.rpartition(".")
    function = getattr(importlib.import_module(module.replace("/", ".")), attribute)
    if name in events["events"]:
        try:
            report["results"][name] = function(events["events"][name], context)
        except Exception as error:
            report["results"][name] = {"raised": type(error).__name__}
from lambda_kit import codec
report["codec"] = codec.name
report["loaded"] = sorted({m.split(".")[0] for m, v in list(sys.modules.items())
                           if (getattr(v, "__file__", None) or "").startswith(sys.argv[1])})
print(json.dumps(report))
"""


def test_the_functions_run_from_the_artifact_on_the_runtimes_python(packaged, tmp_path):
    """Unzipped, with the runtime's Python and nothing else (no site-packages, as Lambda would
    have without boto3): every function imports, the ones whose events need no AWS call run,
    the platform wheel is the codec, and every top-level package shipped is loaded."""
    python = runtime_python()
    if python is None:
        pytest.skip(f"no python{RUNTIME_VERSION} to run the artifact with (the packaging itself needed none)")
    task = tmp_path / "task"
    zipfile.ZipFile(packaged["artifact"]).extractall(task)
    events = {
        "handlers": {
            name: packaged["template"]["Resources"][function_id(name)]["Properties"]["Handler"]
            for name in FUNCTIONS
        },
        "events": {
            "ingest": testing.api_event("POST", "/views", body={"url": ""}),
            "counter": testing.sqs_event({"not": "a view"}),
            "milestones": testing.sns_event({"not": "a milestone"}),
            "aggregator": testing.dynamodb_stream_event(
                testing.dynamodb_record("INSERT", {"PK": "AGG#x", "SK": "y"}, {"PK": "AGG#x", "SK": "y"})
            ),
        },
    }
    (tmp_path / "events.json").write_text(json.dumps(events))
    result = subprocess.run(
        [python, "-I", "-S", "-c", RUNTIME_CHECK, str(task), str(tmp_path / "events.json")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["codec"] == "orjson"
    assert set(report["loaded"]) == _top_level(zipfile.ZipFile(packaged["artifact"]).namelist())
    results = report["results"]
    assert results["ingest"]["statusCode"] == 400
    assert len(results["counter"]["batchItemFailures"]) == 1
    assert results["milestones"] == {"raised": "InvalidView"}  # SNS: raised, so Lambda retries
    assert results["aggregator"] == {"batchItemFailures": []}


# ------------------------------------------------------------------ functions and event sources


def test_functions(resources):
    functions = of_type(resources, "AWS::Lambda::Function")
    assert sorted(functions) == sorted(function_id(n) for n in FUNCTIONS)
    env_needed = {
        "ingest": {"VIEWS_QUEUE_URL"},
        "aggregator": {"MILESTONES_TOPIC_ARN"},
        "clickstream": {"CLICKSTREAM_STREAM_NAME", "CLICKSTREAM_DLQ_URL"},
    }
    for name in FUNCTIONS:
        properties = functions[function_id(name)]["Properties"]
        assert properties["Runtime"] == "python3.12"
        assert properties["Handler"] == f"handlers/{name}.handler"
        assert properties["FunctionName"] == f"{SERVICE}-{STAGE}-{name}"
        variables = properties["Environment"]["Variables"]
        assert variables["TABLE_NAME"] == f"{SERVICE}-{STAGE}-stats"
        assert "LOG_LEVEL" not in variables  # the level is the function's logging configuration
        assert properties["LoggingConfig"] == {
            "LogFormat": "JSON",
            "ApplicationLogLevel": "INFO",
            "SystemLogLevel": "INFO",
        }
        assert env_needed.get(name, set()) <= set(variables)
    assert (
        target(functions[function_id("ingest")]["Properties"]["Environment"]["Variables"]["VIEWS_QUEUE_URL"])
        == "ViewsQueue"
    )


def test_log_groups_have_retention(resources):
    groups = of_type(resources, "AWS::Logs::LogGroup")
    assert {g["Properties"]["LogGroupName"] for g in groups.values()} >= {
        f"/aws/lambda/{SERVICE}-{STAGE}-{n}" for n in FUNCTIONS
    }
    assert all(isinstance(g["Properties"].get("RetentionInDays"), int) for g in groups.values())


def test_ingest_http_api_routes_and_throttling(resources):
    routes = of_type(resources, "AWS::ApiGatewayV2::Route")
    assert sorted(r["Properties"]["RouteKey"] for r in routes.values()) == [
        "GET /stats",
        "GET /views",
        "POST /views",
    ]
    integrations = of_type(resources, "AWS::ApiGatewayV2::Integration")
    assert [target(i["Properties"]["IntegrationUri"]) for i in integrations.values()] == [
        function_id("ingest")
    ]
    [stage] = of_type(resources, "AWS::ApiGatewayV2::Stage").values()
    settings = stage["Properties"]["DefaultRouteSettings"]
    assert settings["ThrottlingRateLimit"] > 0 and settings["ThrottlingBurstLimit"] > 0


def test_counter_reads_the_views_queue_in_batches(resources):
    [mapping] = mappings_of(resources, "counter")
    assert target(mapping["EventSourceArn"]) == "ViewsQueue"
    assert mapping["BatchSize"] == 100
    assert mapping["MaximumBatchingWindowInSeconds"] > 0
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_views_queue_redrives_to_its_dlq(resources):
    queue = resources["ViewsQueue"]["Properties"]
    assert target(queue["RedrivePolicy"]["deadLetterTargetArn"]) == "ViewsDLQ"
    assert queue["RedrivePolicy"]["maxReceiveCount"] == 3
    counter_timeout = resources[function_id("counter")]["Properties"]["Timeout"]
    assert queue["VisibilityTimeout"] >= 6 * counter_timeout


def test_aggregator_reads_only_view_markers_and_article_counters(resources):
    [mapping] = mappings_of(resources, "aggregator")
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": ["ViewStatsTable", "StreamArn"]}
    assert mapping["StartingPosition"] == "TRIM_HORIZON"
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["BisectBatchOnFunctionError"] is True
    assert 0 <= mapping["MaximumRetryAttempts"] <= 10
    assert mapping["MaximumRecordAgeInSeconds"] > 0
    assert target(mapping["DestinationConfig"]["OnFailure"]["Destination"]) == "AggregatorDLQ"
    patterns = [json.loads(f["Pattern"]) for f in mapping["FilterCriteria"]["Filters"]]
    assert patterns == [
        # a new view marker, on an article's total or day bucket
        {
            "eventName": ["INSERT"],
            "dynamodb": {"Keys": {"PK": {"S": [{"prefix": "URL#"}]}, "SK": {"S": [{"prefix": "EVENT#"}]}}},
        },
        # a change of an article's counter (milestones, distinct articles)
        {
            "eventName": ["INSERT", "MODIFY"],
            "dynamodb": {"Keys": {"PK": {"S": [{"prefix": "URL#"}]}, "SK": {"S": ["COUNT"]}}},
        },
    ]


def test_clickstream_reads_the_kinesis_stream(resources):
    [mapping] = mappings_of(resources, "clickstream")
    assert target(mapping["EventSourceArn"]) == "ClickstreamStream"
    assert resources["ClickstreamStream"]["Type"] == "AWS::Kinesis::Stream"
    assert resources["ClickstreamStream"]["Properties"]["ShardCount"] == 1
    assert mapping["StartingPosition"] == "TRIM_HORIZON"
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["BisectBatchOnFunctionError"] is True
    assert 0 <= mapping["MaximumRetryAttempts"] <= 10
    assert target(mapping["DestinationConfig"]["OnFailure"]["Destination"]) == "ClickstreamDLQ"


def test_milestones_subscription_and_async_failures(resources):
    [subscription] = of_type(resources, "AWS::SNS::Subscription").values()
    properties = subscription["Properties"]
    assert target(properties["TopicArn"]) == "MilestonesTopic"
    assert (properties["Protocol"], target(properties["Endpoint"])) == ("lambda", function_id("milestones"))
    assert target(properties["RedrivePolicy"]["deadLetterTargetArn"]) == "MilestonesDLQ"
    # the topic may write to that DLQ, and only that topic
    [policy] = [
        p
        for p in of_type(resources, "AWS::SQS::QueuePolicy").values()
        if target(p["Properties"]["Queues"][0]) == "MilestonesDLQ"
    ]
    [statement] = policy["Properties"]["PolicyDocument"]["Statement"]
    assert (
        statement["Principal"] == {"Service": "sns.amazonaws.com"}
        and statement["Action"] == "sqs:SendMessage"
    )
    assert target(statement["Condition"]["ArnEquals"]["aws:SourceArn"]) == "MilestonesTopic"
    # the handler's own failures, after Lambda's async retries
    [config] = [
        c["Properties"]
        for c in of_type(resources, "AWS::Lambda::EventInvokeConfig").values()
        if target(c["Properties"]["FunctionName"]) == function_id("milestones")
    ]
    assert 0 <= config["MaximumRetryAttempts"] <= 2
    assert target(config["DestinationConfig"]["OnFailure"]["Destination"]) == "MilestonesHandlerDLQ"


def test_table(resources):
    table = resources["ViewStatsTable"]["Properties"]
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["KeySchema"] == [
        {"AttributeName": "PK", "KeyType": "HASH"},
        {"AttributeName": "SK", "KeyType": "RANGE"},
    ]
    assert table["StreamSpecification"]["StreamViewType"] == "NEW_AND_OLD_IMAGES"
    assert table["TimeToLiveSpecification"] == {"AttributeName": "ttl", "Enabled": True}


def test_every_async_or_stream_source_has_a_failure_destination(resources):
    for name, mapping in of_type(resources, "AWS::Lambda::EventSourceMapping").items():
        source = target(mapping["Properties"]["EventSourceArn"])
        if resources[source]["Type"] == "AWS::SQS::Queue":
            assert "RedrivePolicy" in resources[source]["Properties"], name
        else:
            assert mapping["Properties"]["DestinationConfig"]["OnFailure"]["Destination"], name
            assert mapping["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"], name
    invoke_configs = {
        target(c["Properties"]["FunctionName"]): c["Properties"]
        for c in of_type(resources, "AWS::Lambda::EventInvokeConfig").values()
    }
    for name, subscription in of_type(resources, "AWS::SNS::Subscription").items():
        assert subscription["Properties"]["RedrivePolicy"]["deadLetterTargetArn"], name
        function = target(subscription["Properties"]["Endpoint"])
        assert invoke_configs[function]["DestinationConfig"]["OnFailure"]["Destination"], function


def test_every_queue_has_a_redrive_policy_or_is_a_dead_letter_queue(resources):
    dead_letter = {
        target(q["Properties"]["RedrivePolicy"]["deadLetterTargetArn"])
        for q in of_type(resources, "AWS::SQS::Queue").values()
        if "RedrivePolicy" in q["Properties"]
    }
    for kind, path in (
        ("AWS::Lambda::EventSourceMapping", ("DestinationConfig", "OnFailure", "Destination")),
        ("AWS::Lambda::EventInvokeConfig", ("DestinationConfig", "OnFailure", "Destination")),
        ("AWS::SNS::Subscription", ("RedrivePolicy", "deadLetterTargetArn")),
    ):
        for resource in of_type(resources, kind).values():
            value: Any = resource["Properties"]
            for key in path:
                value = value.get(key, {})
            dead_letter.add(target(value))
    for name, queue in of_type(resources, "AWS::SQS::Queue").items():
        assert name in dead_letter or "RedrivePolicy" in queue["Properties"], name
    assert {
        "ViewsDLQ",
        "MilestonesDLQ",
        "MilestonesHandlerDLQ",
        "AggregatorDLQ",
        "ClickstreamDLQ",
    } <= dead_letter


# ------------------------------------------------------------------ IAM, least privilege per function

# Counter.increment/increment_many is one TransactWriteItems of Put (marker) + Update (count):
# IAM authorises it as those item actions (there is no dynamodb:TransactWriteItems action); while
# duplicates are frequent it first reads the batch's markers with BatchGetItem.
COUNTING = {"dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}
LOGS = {"logs:CreateLogStream", "logs:PutLogEvents"}

# What each function may do, on which resources: the calls in handlers/, lambda_kit/counters and
# the Kinesis requeue. Anything beyond this is a failure (change serverless.yml and this together).
EXPECTED_GRANTS = {
    "ingest": {
        "dynamodb:BatchGetItem": {"ViewStatsTable"},  # GET /views, GET /stats (Counter.get_many)
        "dynamodb:Query": {"ViewStatsTable"},  # GET /stats milestones
        "sqs:SendMessage": {"ViewsQueue"},
    },
    "counter": {
        **{a: {"ViewStatsTable"} for a in COUNTING},
        **{a: {"ViewsQueue"} for a in ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")},
    },
    "aggregator": {
        **{a: {"ViewStatsTable"} for a in COUNTING},
        **{
            f"dynamodb:{a}": {"ViewStatsTable"}
            for a in ("DescribeStream", "GetRecords", "GetShardIterator", "ListStreams")
        },
        "sns:Publish": {"MilestonesTopic"},
        "sqs:SendMessage": {"AggregatorDLQ"},
    },
    "milestones": {
        "dynamodb:PutItem": {"ViewStatsTable"},  # the conditional put of the milestone item
        "sqs:SendMessage": {"MilestonesHandlerDLQ"},
    },
    "clickstream": {
        **{a: {"ViewStatsTable"} for a in COUNTING},
        **{
            f"kinesis:{a}": {"ClickstreamStream"}
            for a in (
                "DescribeStream",
                "DescribeStreamSummary",
                "GetRecords",
                "GetShardIterator",
                "ListShards",
                "PutRecord",
            )
        },
        "sqs:SendMessage": {"ClickstreamDLQ"},
    },
}


def test_one_role_per_function_and_no_shared_role(resources):
    roles = [role_of(resources, name)[0] for name in FUNCTIONS]
    assert len(set(roles)) == len(FUNCTIONS)
    assert sorted(of_type(resources, "AWS::IAM::Role")) == sorted(roles)  # no unused (shared) role


@pytest.mark.parametrize("name", FUNCTIONS)
def test_role_grants_only_what_the_function_uses(resources, name):
    granted = grants(resources, name)
    for action in LOGS:  # its own log group only
        [group] = granted.pop(action)
        assert json.loads(group)["Fn::Sub"].endswith(f":log-group:/aws/lambda/{SERVICE}-{STAGE}-{name}:*")
    assert granted == EXPECTED_GRANTS[name]
    _, role = role_of(resources, name)
    assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"] == [
        {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
    ]
    assert not role["Properties"].get("ManagedPolicyArns")


def test_no_action_or_resource_wildcards(resources):
    for name, role in of_type(resources, "AWS::IAM::Role").items():
        for statement in statements(role):
            for action in as_list(statement["Action"]):
                assert "*" not in action, (name, action)
            for resource in as_list(statement["Resource"]):
                if isinstance(resource, str):
                    assert "*" not in resource, (name, resource)
                elif "Fn::Sub" in resource:  # only log streams of a named log group
                    assert resource["Fn::Sub"].count("*") == 1 and resource["Fn::Sub"].endswith(":*"), (
                        name,
                        resource,
                    )


def test_roles_match_the_wiring(resources):
    """Each event source can be read and each failure destination written by the function's role."""
    reads = {
        "AWS::SQS::Queue": "sqs:ReceiveMessage",
        "AWS::Kinesis::Stream": "kinesis:GetRecords",
        "AWS::DynamoDB::Table": "dynamodb:GetRecords",
    }
    for mapping in of_type(resources, "AWS::Lambda::EventSourceMapping").values():
        properties = mapping["Properties"]
        function = target(properties["FunctionName"])
        name = function.removesuffix("LambdaFunction").lower()
        source = target(properties["EventSourceArn"])
        assert source in grants(resources, name)[reads[resources[source]["Type"]]]
        destination = properties.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination")
        if destination:
            assert target(destination) in grants(resources, name)["sqs:SendMessage"]
    for config in of_type(resources, "AWS::Lambda::EventInvokeConfig").values():
        name = target(config["Properties"]["FunctionName"]).removesuffix("LambdaFunction").lower()
        destination = target(config["Properties"]["DestinationConfig"]["OnFailure"]["Destination"])
        assert destination in grants(resources, name)["sqs:SendMessage"]
