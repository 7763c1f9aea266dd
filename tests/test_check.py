"""`lambda-kit check`: each mistake it knows, on small services written to tmp_path."""

from __future__ import annotations

import copy
import os
import textwrap
from pathlib import Path

import pytest
import yaml

from lambda_kit.cli import check
from lambda_kit.serverless_config import ConfigError, load

ROOT = Path(__file__).resolve().parent.parent
RBIF = "ReportBatchItemFailures"

HANDLERS = {
    "api": (
        "from lambda_kit import api_handler\n\n\n"
        "@api_handler\ndef handler(request, context):\n    return {}\n"
    ),
    "worker": (
        "from lambda_kit import sqs_handler\n\n\n"
        "@sqs_handler\ndef handler(message, context):\n    return None\n"
    ),
    "tally": (
        "import lambda_kit.counters  # noqa: F401\nfrom lambda_kit import stream_handler\n\n\n"
        "@stream_handler\ndef handler(record, context):\n    return None\n"
    ),
    "notify": (
        "from lambda_kit import sns_handler\n\n\n"
        "@sns_handler\ndef handler(message, context):\n    return None\n"
    ),
    "plain": "def handler(event, context):\n    return None\n",
}


def getatt(name: str, attribute: str = "Arn") -> dict:
    return {"Fn::GetAtt": [name, attribute]}


def queue(name: str, **properties) -> dict:
    return {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": name, **properties}}


# A service with one function per source and no mistakes; each test breaks one thing.
CLEAN = {
    "service": "demo",
    "provider": {
        "name": "aws",
        "runtime": "python3.12",
        "timeout": 10,
        "environment": {"TABLE_NAME": {"Ref": "Table"}},
    },
    "functions": {
        "api": {"handler": "handlers/api.handler", "events": [{"httpApi": {"method": "GET", "path": "/x"}}]},
        "worker": {
            "handler": "handlers/worker.handler",
            "timeout": 30,
            "events": [{"sqs": {"arn": getatt("Jobs"), "batchSize": 10, "functionResponseType": RBIF}}],
        },
        "tally": {
            "handler": "handlers/tally.handler",
            "events": [
                {
                    "stream": {
                        "type": "dynamodb",
                        "arn": getatt("Table", "StreamArn"),
                        "startingPosition": "TRIM_HORIZON",
                        "maximumRetryAttempts": 3,
                        "functionResponseType": RBIF,
                        "destinations": {"onFailure": {"type": "sqs", "arn": getatt("TallyDLQ")}},
                    }
                }
            ],
        },
        "notify": {
            "handler": "handlers/notify.handler",
            "maximumRetryAttempts": 1,
            "destinations": {"onFailure": {"type": "sqs", "arn": getatt("NotifyDLQ")}},
            "events": [
                {
                    "sns": {
                        "arn": {"Ref": "Topic"},
                        "topicName": "t",
                        "redrivePolicy": {"deadLetterTargetRef": "TopicDLQ"},
                    }
                }
            ],
        },
    },
    "resources": {
        "Resources": {
            "Jobs": queue(
                "demo-jobs",
                VisibilityTimeout=180,
                RedrivePolicy={"deadLetterTargetArn": getatt("JobsDLQ"), "maxReceiveCount": 3},
            ),
            "JobsDLQ": queue("demo-jobs-dlq"),
            "TallyDLQ": queue("demo-tally-dlq"),
            "NotifyDLQ": queue("demo-notify-dlq"),
            "TopicDLQ": queue("demo-topic-dlq"),
            "Topic": {"Type": "AWS::SNS::Topic"},
            "Table": {
                "Type": "AWS::DynamoDB::Table",
                "Properties": {"StreamSpecification": {"StreamViewType": "NEW_IMAGE"}},
            },
        }
    },
}


@pytest.fixture
def service(tmp_path):
    """write(config=None, **handler sources) -> path of serverless.yml in a fresh project dir."""

    def write(config: dict | None = None, handlers: dict[str, str] | None = None) -> Path:
        package = tmp_path / "handlers"
        package.mkdir(exist_ok=True)
        (package / "__init__.py").write_text("")
        for name, source in {**HANDLERS, **(handlers or {})}.items():
            (package / f"{name}.py").write_text(source)
        if not (tmp_path / "lambda_kit").exists():  # in the zip as this repository's is: project code
            (tmp_path / "lambda_kit").symlink_to(ROOT / "lambda_kit", target_is_directory=True)
        path = tmp_path / "serverless.yml"
        path.write_text(yaml.safe_dump(CLEAN if config is None else config, sort_keys=False))
        return path

    return write


def variant() -> dict:
    return copy.deepcopy(CLEAN)


def run(path: Path, capsys) -> tuple[int, list[str]]:
    status = check.main([str(path)])
    out, err = capsys.readouterr()
    return status, (out + err).splitlines()


def findings(lines: list[str], level: str = "") -> list[str]:
    return [line for line in lines if line.startswith(f"{level}:" if level else ("error:", "warning:"))]


def test_clean_service_passes(service, capsys):
    status, lines = run(service(), capsys)
    assert findings(lines) == []
    assert status == 0
    assert lines[-1].startswith("lambda-kit check ok") and "4 functions, 0 errors, 0 warnings" in lines[-1]


def test_sqs_handler_without_report_batch_item_failures(service, capsys):
    config = variant()
    del config["functions"]["worker"]["events"][0]["sqs"]["functionResponseType"]
    status, lines = run(service(config), capsys)
    assert status == 1
    [line] = findings(lines)
    assert line.startswith(
        "error: worker: add functionResponseType: ReportBatchItemFailures to its sqs event"
    )


def test_stream_handler_without_report_batch_item_failures(service, capsys):
    config = variant()
    del config["functions"]["tally"]["events"][0]["stream"]["functionResponseType"]
    status, lines = run(service(config), capsys)
    assert status == 1
    assert findings(lines) == [
        "error: tally: add functionResponseType: ReportBatchItemFailures to its stream event: "
        "without it Lambda ignores the failures the stream_handler reports and treats failed "
        "records as processed"
    ]


def test_handler_path_that_does_not_exist(service, capsys):
    config = variant()
    config["functions"]["worker"]["handler"] = "handlers/wroker.handler"
    status, lines = run(service(config), capsys)
    assert status == 1
    assert findings(lines) == [
        "error: worker: handler 'handlers/wroker.handler' names handlers/wroker.py, which does not exist: "
        "fix the handler path"
    ]


def test_handler_module_that_fails_to_import(service, capsys):
    status, lines = run(service(handlers={"worker": "import not_a_module_anywhere\n"}), capsys)
    assert status == 1
    [line] = findings(lines)
    assert line.startswith(
        "error: worker: handler module handlers/worker.py does not import (ModuleNotFoundError"
    )
    assert "not_a_module_anywhere" in line


def test_handler_module_that_raises_on_import(service, capsys):
    status, lines = run(service(handlers={"api": "raise RuntimeError('boom')\n"}), capsys)
    assert status == 1
    assert findings(lines) == [
        "error: api: handler module handlers/api.py does not import (RuntimeError: boom): fix the module"
    ]


def test_handler_function_missing(service, capsys):
    config = variant()
    config["functions"]["api"]["handler"] = "handlers/api.main"
    status, lines = run(service(config), capsys)
    assert status == 1
    assert findings(lines) == [
        "error: api: handler module handlers.api has no function 'main': "
        "fix the handler path 'handlers/api.main'"
    ]


def test_module_sees_the_function_environment(service, capsys):
    """Modules that read their configuration at import: provider and function variables are set,
    unresolved ones (Ref, ${...}) get a placeholder, and nothing leaks into this process."""
    config = variant()
    config["functions"]["api"]["environment"] = {"QUEUE": "${self:custom.queue}", "MODE": "fast"}
    source = (
        "import os\n"
        "assert os.environ['MODE'] == 'fast'\n"
        "assert os.environ['QUEUE'] and os.environ['TABLE_NAME']\n" + HANDLERS["api"]
    )
    status, lines = run(service(config, handlers={"api": source}), capsys)
    assert findings(lines) == [] and status == 0
    assert "MODE" not in os.environ


def test_undecorated_handler_is_an_error_naming_the_decorator(service, capsys):
    config = variant()
    config["functions"]["worker"]["handler"] = "handlers/plain.handler"
    status, lines = run(service(config), capsys)
    assert status == 1
    assert findings(lines) == [
        "error: worker: handler 'handlers/plain.handler' is not a lambda_kit decorated function: its events' "
        "records, retries and partial failures are not handled (and check cannot see them); decorate it "
        "with @sqs_handler"
    ]


def test_decorator_of_another_source(service, capsys):
    config = variant()
    config["functions"]["worker"]["handler"] = "handlers/notify.handler"
    status, lines = run(service(config), capsys)
    assert status == 1
    assert findings(lines) == [
        "error: worker: handler is a sns_handler but the function has sqs events: "
        "use sqs_handler or move the event"
    ]


def test_stream_without_on_failure_destination(service, capsys):
    config = variant()
    del config["functions"]["tally"]["events"][0]["stream"]["destinations"]
    del config["resources"]["Resources"]["TallyDLQ"]
    status, lines = run(service(config), capsys)
    assert status == 1
    [line] = findings(lines)
    assert line.startswith(
        "error: tally: add destinations.onFailure (an SQS queue or SNS topic) to its stream event"
    )


def test_stream_with_unlimited_retries(service, capsys):
    config = variant()
    del config["functions"]["tally"]["events"][0]["stream"]["maximumRetryAttempts"]
    status, lines = run(service(config), capsys)
    assert status == 0
    [line] = findings(lines)
    assert line.startswith("warning: tally: set maximumRetryAttempts on its stream event")


def test_sns_function_without_failure_destination(service, capsys):
    config = variant()
    del config["functions"]["notify"]["destinations"]
    del config["resources"]["Resources"]["NotifyDLQ"]
    status, lines = run(service(config), capsys)
    assert status == 1
    [line] = findings(lines)
    assert line.startswith("error: notify: add destinations.onFailure (or onError) to the function")


def test_sns_on_error_counts_as_failure_destination(service, capsys):
    config = variant()
    del config["functions"]["notify"]["destinations"]
    config["functions"]["notify"]["onError"] = "arn:aws:sns:us-east-1:123456789012:failures"
    del config["resources"]["Resources"]["NotifyDLQ"]
    status, lines = run(service(config), capsys)
    assert (status, findings(lines)) == (0, [])


def test_sns_event_without_redrive_policy(service, capsys):
    config = variant()
    del config["functions"]["notify"]["events"][0]["sns"]["redrivePolicy"]
    del config["resources"]["Resources"]["TopicDLQ"]
    status, lines = run(service(config), capsys)
    assert status == 0
    [line] = findings(lines)
    assert line.startswith("warning: notify: add redrivePolicy (a dead-letter queue) to its sns event")


def test_consumed_queue_without_redrive_policy(service, capsys):
    config = variant()
    del config["resources"]["Resources"]["Jobs"]["Properties"]["RedrivePolicy"]
    status, lines = run(service(config), capsys)
    assert status == 1
    assert findings(lines) == [
        "error: Jobs: add a RedrivePolicy (deadLetterTargetArn + maxReceiveCount) to the queue: "
        "a message that always fails is retried until it expires",
        "warning: JobsDLQ: queue has no RedrivePolicy and is no function's dead-letter target: "
        "add one, or point a redrive policy / destination at it",
    ]


def test_dead_letter_queue_named_by_arn_needs_no_redrive(service, capsys):
    config = variant()
    redrive = config["functions"]["notify"]["events"][0]["sns"]["redrivePolicy"]
    redrive.pop("deadLetterTargetRef")
    redrive["deadLetterTargetArn"] = "arn:aws:sqs:us-east-1:123456789012:demo-topic-dlq"
    status, lines = run(service(config), capsys)
    assert (status, findings(lines)) == (0, [])


def test_latest_on_a_counting_stream_is_an_error(service, capsys):
    config = variant()
    config["functions"]["tally"]["events"][0]["stream"]["startingPosition"] = "LATEST"
    status, lines = run(service(config), capsys)
    assert status == 1
    [line] = findings(lines)
    assert line.startswith(
        "error: tally: its stream event starts at LATEST but the handler counts with lambda_kit.counters"
    )


def test_latest_on_another_stream_is_a_warning(service, capsys):
    config = variant()
    config["functions"]["tally"]["events"][0]["stream"]["startingPosition"] = "LATEST"
    plain_stream = (
        "from lambda_kit import stream_handler\n\n\n"
        "@stream_handler\ndef handler(record, context):\n    return None\n"
    )
    status, lines = run(service(config, handlers={"tally": plain_stream}), capsys)
    assert status == 0
    [line] = findings(lines)
    assert line.startswith("warning: tally: its stream event starts at LATEST")


def test_requeue_on_a_dynamodb_stream(service, capsys):
    source = (
        "from lambda_kit import stream_handler\n\n\n"
        "@stream_handler(on_failure='requeue')\ndef handler(record, context):\n    return None\n"
    )
    status, lines = run(service(handlers={"tally": source}), capsys)
    assert status == 1
    assert findings(lines) == [
        "error: tally: on_failure='requeue' only works on Kinesis streams: "
        "use on_failure='stop' for its DynamoDB stream event"
    ]


@pytest.mark.parametrize(
    ("visibility", "expected"),
    [
        (20, "error: Jobs: VisibilityTimeout 20 s is shorter than the worker timeout (30 s)"),
        (60, "warning: Jobs: VisibilityTimeout 60 s is under 6 x the worker timeout (30 s)"),
    ],
)
def test_queue_visibility_timeout_against_consumer_timeout(service, capsys, visibility, expected):
    config = variant()
    config["resources"]["Resources"]["Jobs"]["Properties"]["VisibilityTimeout"] = visibility
    _, lines = run(service(config), capsys)
    [line] = findings(lines)
    assert line.startswith(expected)


def test_missing_config(tmp_path, capsys):
    status, lines = run(tmp_path / "serverless.yml", capsys)
    assert status == 2
    assert lines == [
        f"error: {tmp_path / 'serverless.yml'} not found: "
        "run in the service directory or pass the path to serverless.yml"
    ]


def test_invalid_yaml(tmp_path, capsys):
    path = tmp_path / "serverless.yml"
    path.write_text("service: demo\nfunctions:\n  a: [unclosed\n")
    status, lines = run(path, capsys)
    assert status == 2
    [line] = lines
    assert line.startswith(f"error: {path} is not valid YAML:") and "line" in line


def test_config_without_functions(tmp_path, capsys):
    path = tmp_path / "serverless.yml"
    path.write_text("service: demo\nprovider:\n  name: aws\n")
    status, lines = run(path, capsys)
    assert (status, lines) == (2, [f"error: {path} declares no functions: nothing to check"])


# ------------------------------------------------------------------ EventBridge and S3

RULES = (
    "from lambda_kit import eventbridge_handler\n\n\n"
    "@eventbridge_handler\ndef handler(detail, context):\n    return None\n"
)
UPLOADS = "from lambda_kit import s3_handler\n\n\n@s3_handler\ndef handler(obj, context):\n    return None\n"
S3_PATTERN = {
    "source": ["aws.s3"],
    "detail-type": ["Object Created"],
    "detail": {"bucket": {"name": ["uploads"]}},
}


def with_eventbridge_and_s3() -> dict:
    """The clean service plus an EventBridge rule's function and S3 notifications delivered
    directly, through a queue and through EventBridge, all wired right."""
    config = variant()
    failures = {"onFailure": {"type": "sqs", "arn": getatt("AsyncDLQ")}}
    config["functions"].update(
        {
            "rules": {
                "handler": "handlers/rules.handler",
                "destinations": failures,
                "events": [
                    {
                        "eventBridge": {
                            "eventBus": "orders",
                            "pattern": {"source": ["shop.orders"]},
                            "deadLetterQueueArn": getatt("RuleDLQ"),
                        }
                    }
                ],
            },
            "uploads": {
                "handler": "handlers/uploads.handler",
                "destinations": failures,
                "events": [
                    {"s3": {"bucket": "uploads", "event": "s3:ObjectCreated:*"}},
                    {"eventBridge": {"pattern": S3_PATTERN, "deadLetterQueueArn": getatt("RuleDLQ")}},
                ],
            },
            "queued": {
                "handler": "handlers/uploads.handler",
                "timeout": 30,
                "events": [{"sqs": {"arn": getatt("Jobs"), "functionResponseType": RBIF}}],
            },
        }
    )
    config["resources"]["Resources"].update(AsyncDLQ=queue("demo-async-dlq"), RuleDLQ=queue("demo-rule-dlq"))
    return config


def test_eventbridge_and_s3_functions_wired_right_pass(service, capsys):
    status, lines = run(service(with_eventbridge_and_s3(), {"rules": RULES, "uploads": UPLOADS}), capsys)
    assert (status, findings(lines)) == (0, [])


@pytest.mark.parametrize("function", ["rules", "uploads"])
def test_eventbridge_and_s3_functions_need_an_on_failure_destination(service, capsys, function):
    config = with_eventbridge_and_s3()
    del config["functions"][function]["destinations"]
    status, lines = run(service(config, {"rules": RULES, "uploads": UPLOADS}), capsys)
    kinds = {"rules": "eventBridge", "uploads": "eventBridge, s3"}[function]
    assert status == 1
    assert findings(lines) == [
        f"error: {function}: add destinations.onFailure (or onError) to the function: "
        f"its {kinds} events invoke it asynchronously and failed invocations are dropped after "
        "Lambda's retries"
    ]


def test_an_eventbridge_event_without_a_dead_letter_queue_is_a_warning(service, capsys):
    config = with_eventbridge_and_s3()
    del config["functions"]["rules"]["events"][0]["eventBridge"]["deadLetterQueueArn"]
    status, lines = run(service(config, {"rules": RULES, "uploads": UPLOADS}), capsys)
    assert status == 0
    [line] = findings(lines)
    assert line.startswith(
        "warning: rules: add deadLetterQueueArn to its eventBridge event: "
        "events EventBridge cannot hand to the function"
    )


def test_the_rule_dead_letter_queue_is_a_dead_letter_queue(service, capsys):
    """RuleDLQ has no redrive policy of its own and is no function's destination: it is the rule's DLQ."""
    config = with_eventbridge_and_s3()
    for function in ("rules", "uploads"):
        for event in config["functions"][function]["events"]:
            event.get("eventBridge", {}).pop("deadLetterQueueArn", None)
    _, lines = run(service(config, {"rules": RULES, "uploads": UPLOADS}), capsys)
    assert (
        "warning: RuleDLQ: queue has no RedrivePolicy and is no function's dead-letter target"
        in "\n".join(lines)
    )


@pytest.mark.parametrize(
    "setting",
    [{"input": {"a": 1}}, {"inputPath": "$.detail"}, {"inputTransformer": {"inputTemplate": "<x>"}}],
)
def test_an_input_transformation_hides_the_event_from_the_decorator(service, capsys, setting):
    config = with_eventbridge_and_s3()
    config["functions"]["rules"]["events"][0]["eventBridge"].update(setting)
    status, lines = run(service(config, {"rules": RULES, "uploads": UPLOADS}), capsys)
    [key] = setting
    assert status == 1
    assert findings(lines) == [
        f"error: rules: its eventBridge event sets {key}, so the function receives that instead of "
        f"the EventBridge event and the eventbridge_handler refuses every invocation: remove {key}"
    ]


@pytest.mark.parametrize(
    "pattern",
    [
        {"source": ["shop.orders"]},
        {"source": ["aws.s3"]},
        {"source": ["aws.s3", "aws.ec2"], "detail-type": ["Object Created"]},
        {"source": ["aws.s3"], "detail-type": ["Object Created", "Object Restore Completed"]},
    ],
)
def test_an_s3_handler_on_an_eventbridge_pattern_wider_than_s3_object_events(service, capsys, pattern):
    config = with_eventbridge_and_s3()
    config["functions"]["uploads"]["events"][1]["eventBridge"]["pattern"] = pattern
    status, lines = run(service(config, {"rules": RULES, "uploads": UPLOADS}), capsys)
    assert status == 1
    assert findings(lines) == [
        "error: uploads: its eventBridge pattern lets through events the s3_handler refuses: "
        "match source: [aws.s3] and detail-type: [Object Created] and/or [Object Deleted]"
    ]


def test_an_s3_handler_on_a_queue_needs_report_batch_item_failures(service, capsys):
    config = with_eventbridge_and_s3()
    del config["functions"]["queued"]["events"][0]["sqs"]["functionResponseType"]
    status, lines = run(service(config, {"rules": RULES, "uploads": UPLOADS}), capsys)
    assert status == 1
    [line] = findings(lines)
    assert line.startswith(
        "error: queued: add functionResponseType: ReportBatchItemFailures to its sqs event: without it "
        "Lambda ignores the failures the s3_handler reports"
    )


@pytest.mark.parametrize(
    ("function", "handler", "expected"),
    [
        (
            "uploads",
            "handlers/worker.handler",
            "error: uploads: handler is a sqs_handler but the function has eventBridge events: "
            "use eventbridge_handler or move the event",
        ),
        (
            "rules",
            "handlers/uploads.handler",
            "error: rules: its eventBridge pattern lets through events the s3_handler refuses",
        ),
    ],
)
def test_a_decorator_for_another_source(service, capsys, function, handler, expected):
    config = with_eventbridge_and_s3()
    config["functions"][function]["handler"] = handler
    _, lines = run(service(config, {"rules": RULES, "uploads": UPLOADS}), capsys)
    assert any(line.startswith(expected) for line in findings(lines, "error")), lines


def test_an_sqs_handler_on_s3_events(service, capsys):
    config = with_eventbridge_and_s3()
    config["functions"]["uploads"]["handler"] = "handlers/worker.handler"
    _, lines = run(service(config, {"rules": RULES, "uploads": UPLOADS}), capsys)
    assert (
        "error: uploads: handler is a sqs_handler but the function has s3 events: "
        "use s3_handler or move the event"
    ) in findings(lines, "error")


# ------------------------------------------------------------------ the YAML reader


def test_load_keeps_variables_and_expands_short_tags(tmp_path):
    path = tmp_path / "serverless.yml"
    path.write_text(
        textwrap.dedent(
            """\
            service: demo
            provider:
              stage: ${opt:stage, 'dev'}
              environment:
                QUEUE: !Ref Jobs
                TOPIC: !GetAtt [Topic, TopicArn]
                STREAM: !GetAtt Table.StreamArn
                LOGS: !Sub arn:${AWS::Partition}:logs:${AWS::Region}:*:/aws/lambda/\
${self:service}-${sls:stage}
                JOINED: !Join ["-", [a, !Ref AWS::Region]]
                PICK: !Select [0, !GetAZs ""]
            base: &base {a: 1}
            merged:
              <<: *base
              b: 2
            """
        )
    )
    config = load(path)
    env = config["provider"]["environment"]
    assert config["provider"]["stage"] == "${opt:stage, 'dev'}"
    assert env["QUEUE"] == {"Ref": "Jobs"}
    assert env["TOPIC"] == {"Fn::GetAtt": ["Topic", "TopicArn"]}
    assert env["STREAM"] == {"Fn::GetAtt": ["Table", "StreamArn"]}
    assert env["LOGS"] == {
        "Fn::Sub": "arn:${AWS::Partition}:logs:${AWS::Region}:*:/aws/lambda/${self:service}-${sls:stage}"
    }
    assert env["JOINED"] == {"Fn::Join": ["-", ["a", {"Ref": "AWS::Region"}]]}
    assert env["PICK"] == {"Fn::Select": [0, {"Fn::GetAZs": ""}]}
    assert config["merged"] == {"a": 1, "b": 2}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("service: a\nservice: b\n", "is not valid YAML: duplicate key 'service' at line 2, column 1"),
        ("- a\n- b\n", "is a list, not a mapping: expected service, provider and functions keys"),
        ("", "is empty: expected service, provider and functions keys"),
    ],
)
def test_load_rejects_with_one_line(tmp_path, text, message):
    path = tmp_path / "serverless.yml"
    path.write_text(text)
    with pytest.raises(ConfigError) as raised:
        load(path)
    assert str(raised.value) == f"{path} {message}"
    assert "\n" not in str(raised.value)


# ------------------------------------------------------------------ the project's own service


@pytest.mark.skipif(not (ROOT / "handlers" / "ingest.py").exists(), reason="handlers/ are not written yet")
def test_project_service_has_no_errors(capsys):
    status, lines = run(ROOT / "serverless.yml", capsys)
    assert findings(lines, "error") == []
    assert findings(lines, "warning") == []
    assert status == 0


# --- msk and kafka events ---------------------------------------------------------------------------

MSK_ARN = "arn:aws:kafka:us-east-1:123456789012:cluster/orders-cluster/abcd1234-0123-4567-89ab-0123456789ab-1"
KAFKA_HANDLERS = {
    "orders": (
        "from lambda_kit import kafka_handler\n\n\n"
        "@kafka_handler\ndef handler(message, context):\n    return None\n"
    ),
    "orders_report": (
        "from lambda_kit import kafka_handler\n\n\n@kafka_handler(on_failure='report')\n"
        "def handler(message, context):\n    return None\n"
    ),
}
MSK_MAPPING = "OrdersDashmskEventSourceMappingMSKOrdersclusterOrdersv1"
KAFKA_MAPPING = "OrdersUnderscorekafkaEventSourceMappingKafkaOrdersv1"


def kafka_service(handler: str = "orders") -> dict:
    """One function on an msk event and one on a self-managed kafka event, both fully wired."""
    return {
        "service": "orders",
        "provider": {"name": "aws", "runtime": "python3.12"},
        "functions": {
            "orders-msk": {
                "handler": f"handlers/{handler}.handler",
                "events": [{"msk": {"arn": MSK_ARN, "topic": "orders.v1"}}],
            },
            "orders_kafka": {
                "handler": f"handlers/{handler}.handler",
                "events": [
                    {
                        "kafka": {
                            "topic": "orders.v1",
                            "bootstrapServers": ["b-1.example.com:9092"],
                            "accessConfigurations": {
                                "saslScram512Auth": [
                                    "arn:aws:secretsmanager:us-east-1:123456789012:secret:kafka"
                                ]
                            },
                            "onFailureDestination": "arn:aws:sqs:us-east-1:123456789012:orders-dlq",
                        }
                    }
                ],
            },
        },
        "resources": {
            "extensions": {
                MSK_MAPPING: {
                    "Properties": {
                        "DestinationConfig": {
                            "OnFailure": {"Destination": "arn:aws:sqs:us-east-1:123456789012:orders-dlq"}
                        }
                    }
                },
            }
        },
    }


def report_wiring(config: dict) -> dict:
    for function, mapping in (("orders-msk", MSK_MAPPING), ("orders_kafka", KAFKA_MAPPING)):
        [event] = config["functions"][function]["events"]
        next(iter(event.values()))["provisionedPollerConfig"] = {"minimumPollers": 1, "maximumPollers": 2}
        properties = config["resources"]["extensions"].setdefault(mapping, {"Properties": {}})["Properties"]
        properties["FunctionResponseTypes"] = [RBIF]
    return config


@pytest.mark.parametrize(("handler", "wire"), [("orders", False), ("orders_report", True)])
def test_wired_kafka_service_passes(service, capsys, handler, wire):
    config = kafka_service(handler)
    status, lines = run(service(report_wiring(config) if wire else config, KAFKA_HANDLERS), capsys)
    assert findings(lines) == [] and status == 0


def test_kafka_events_without_an_on_failure_destination(service, capsys):
    config = kafka_service()
    del config["resources"]["extensions"][MSK_MAPPING]
    del config["functions"]["orders_kafka"]["events"][0]["kafka"]["onFailureDestination"]
    status, lines = run(service(config, KAFKA_HANDLERS), capsys)
    assert status == 1
    assert findings(lines) == [
        "error: orders-msk: add an on-failure destination to its msk event (resources.extensions."
        f"{MSK_MAPPING}.Properties.DestinationConfig.OnFailure.Destination "
        "(the msk event has no setting for it)): "
        "a batch that keeps failing blocks its partitions until its records expire, and is then dropped",
        "error: orders_kafka: add an on-failure destination to its kafka event (onFailureDestination): "
        "a batch that keeps failing blocks its partitions until its records expire, and is then dropped",
    ]


@pytest.mark.parametrize("missing", ["FunctionResponseTypes", "provisionedPollerConfig"])
def test_reporting_kafka_handler_needs_report_batch_item_failures_in_provisioned_mode(
    service, capsys, missing
):
    config = report_wiring(kafka_service("orders_report"))
    if missing == "FunctionResponseTypes":
        del config["resources"]["extensions"][MSK_MAPPING]["Properties"]["FunctionResponseTypes"]
    else:
        del config["functions"]["orders-msk"]["events"][0]["msk"]["provisionedPollerConfig"]
    status, lines = run(service(config, KAFKA_HANDLERS), capsys)
    assert status == 1
    assert findings(lines) == [
        "error: orders-msk: kafka_handler(on_failure='report') returns batchItemFailures, "
        f"which Lambda reads only in provisioned mode with {RBIF}: add provisionedPollerConfig "
        f"to its msk event and FunctionResponseTypes: [{RBIF}] to "
        f"resources.extensions.{MSK_MAPPING}.Properties, or use on_failure='raise'; "
        "without them Lambda treats failed records as processed"
    ]


def test_kafka_event_on_another_decorator_and_latest(service, capsys):
    config = kafka_service()
    config["functions"]["orders_kafka"]["handler"] = "handlers/worker.handler"
    config["functions"]["orders-msk"]["events"][0]["msk"]["startingPosition"] = "LATEST"
    status, lines = run(service(config, KAFKA_HANDLERS), capsys)
    assert status == 1
    assert findings(lines) == [
        "warning: orders-msk: its msk event starts at LATEST: records written before the mapping "
        "starts are skipped; use TRIM_HORIZON unless that is intended",
        "error: orders_kafka: handler is a sqs_handler but the function has kafka events: "
        "use kafka_handler or move the event",
    ]


def test_the_extension_names_check_reads_are_the_framework_s(service, tmp_path):
    """`serverless package` refuses an extension of a resource it did not generate: the wired
    service packages, so the event source mappings check looks for are the ones the framework makes."""
    from _packaging import package_offline

    path = service(report_wiring(kafka_service("orders_report")), KAFKA_HANDLERS)
    assert check.check(path) == []
    done = package_offline(tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    template = yaml.safe_load(
        (tmp_path / ".serverless" / "cloudformation-template-update-stack.json").read_text()
    )
    for mapping in (MSK_MAPPING, KAFKA_MAPPING):
        assert template["Resources"][mapping]["Properties"]["FunctionResponseTypes"] == [RBIF]


# --- HTTP front doors: ALB targets and Function URLs ----------------------------------------------------

ALB = {
    "listenerArn": (
        "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/lb/"
        "50dc6c495c0c9188/f2f7dc8efc522ab2"
    ),
    "priority": 1,
    "conditions": {"path": ["/hello"]},
}


@pytest.mark.parametrize("multi_value", [True, False, None])
def test_alb_event_without_multi_value_headers_is_a_warning(service, capsys, multi_value):
    config = variant()
    config["functions"]["api"]["events"] = [
        {"alb": {**ALB, **({} if multi_value is None else {"multiValueHeaders": multi_value})}}
    ]
    status, lines = run(service(config), capsys)
    assert status == 0
    expected = (
        []
        if multi_value
        else [
            "warning: api: set multiValueHeaders: true on its alb event: without it the load balancer "
            "passes only the last value of a repeated query parameter or header "
            "(request.query_all holds one value each)"
        ]
    )
    assert findings(lines) == expected


@pytest.mark.parametrize("kind", ["alb", "url"])
def test_alb_and_function_url_need_an_api_handler(service, capsys, kind):
    config = variant()
    if kind == "alb":
        config["functions"]["worker"]["events"].append({"alb": {**ALB, "multiValueHeaders": True}})
        what, fix = "alb events", "move the event"
    else:
        config["functions"]["worker"]["url"] = True
        what, fix = "a Function URL (url:)", "remove url"
    status, lines = run(service(config), capsys)
    assert status == 1
    assert findings(lines) == [
        f"error: worker: handler is a sqs_handler but the function has {what}: use api_handler or {fix}"
    ]


@pytest.mark.parametrize("url", [True, {"cors": True}, {"invokeMode": "BUFFERED", "authorizer": "aws_iam"}])
def test_a_function_url_on_an_api_handler_is_clean(service, capsys, url):
    config = variant()
    config["functions"]["api"]["url"] = url
    status, lines = run(service(config), capsys)
    assert (status, findings(lines)) == (0, [])


def test_a_streaming_function_url_is_an_error(service, capsys):
    config = variant()
    config["functions"]["api"]["url"] = {"invokeMode": "RESPONSE_STREAM"}
    status, lines = run(service(config), capsys)
    assert status == 1
    [line] = findings(lines)
    assert line.startswith(
        "error: api: its url has invokeMode: RESPONSE_STREAM, but Lambda streams responses only from Node.js"
    )


BATCH_RESPONSE_WORKER = (
    "from lambda_kit import sqs_handler\n\n\n@sqs_handler\ndef handler(message, context):\n"
    "    if message.get('bad'):\n"
    "        return {'batchItemFailures': [{'itemIdentifier': 'x'}]}\n    return None\n"
)
STATUS_FIRST_API = (
    "from lambda_kit import api_handler\n\n\n@api_handler\nasync def handler(request, context):\n"
    "    return 201, {'created': True}\n"
)
BODY_FIRST_API = (
    "from lambda_kit import api_handler\n\n\n@api_handler\ndef handler(request, context):\n"
    "    return {'created': True}, 201\n"
)


def test_a_returned_batch_response_and_a_status_first_tuple_are_errors(service, capsys):
    """Issue 27.6: both pass at run time as nothing (the record fails, the request answers 500);
    check shows them before the deploy, where the function's source shows them."""
    status, lines = run(service(handlers={"worker": BATCH_RESPONSE_WORKER, "api": STATUS_FIRST_API}), capsys)
    assert status == 1
    assert findings(lines, "error") == [
        "error: api: returns (status, body): api_handler reads a tuple as (body, status[, headers]); "
        'put the body first, or return {"statusCode": ..., "body": ...}',
        'error: worker: a per-record function returns {"batchItemFailures": ...}: sqs_handler builds '
        "the batch response itself and fails the record; raise to fail this record",
    ]


def test_a_body_first_tuple_passes(service, capsys):
    status, lines = run(service(handlers={"api": BODY_FIRST_API}), capsys)
    assert (status, findings(lines)) == (0, [])
