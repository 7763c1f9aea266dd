"""`lambda-kit check` for tumbling windows (``tumblingWindowInSeconds`` on stream events) and
CloudWatch Logs subscriptions (``cloudwatchLog`` events): each mistake on a small service, and the
clean service packaged by the real `serverless package`, which makes the resources checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import test_check
import yaml
from _packaging import package_service
from test_check import RBIF, findings, getatt, queue, run, variant

ROOT = Path(__file__).resolve().parent.parent
service = test_check.service  # the fixture writing a service to tmp_path

WINDOWED = (
    "from lambda_kit import current_window, stream_handler\n\n\n"
    "def publish(window):\n    return dict(window.state)\n\n\n"
    "@stream_handler(on_window_end=publish)\n"
    "def handler(view, context):\n"
    "    state = current_window().state\n"
    "    state['views'] = state.get('views', 0) + 1\n"
)
LOGS = (
    "from lambda_kit import cloudwatch_logs_handler\n\n\n"
    "@cloudwatch_logs_handler\ndef handler(log_event, context):\n    return None\n"
)
STREAM = (
    "from lambda_kit import stream_handler\n\n\n"
    "@stream_handler{options}\ndef handler(payload, context):\n    return None\n"
)


def windowed_stream(seconds: object = 120) -> dict:
    return {
        "type": "kinesis",
        "arn": getatt("Clicks"),
        "startingPosition": "TRIM_HORIZON",
        "maximumRetryAttempts": 3,
        "functionResponseType": RBIF,
        "tumblingWindowInSeconds": seconds,
        "destinations": {"onFailure": {"type": "sqs", "arn": getatt("WindowDLQ")}},
    }


def config_with(**functions: dict) -> dict:
    config = variant()
    config["functions"].update(functions)
    used = json.dumps(functions)
    extra = {
        "Clicks": {"Type": "AWS::Kinesis::Stream", "Properties": {"ShardCount": 1}},
        "WindowDLQ": queue("demo-window-dlq"),
        "LogsDLQ": queue("demo-logs-dlq"),
    }
    config["resources"]["Resources"].update({name: r for name, r in extra.items() if f'"{name}"' in used})
    return config


WINDOW_FUNCTION = {"handler": "handlers/windowed.handler", "events": [{"stream": windowed_stream()}]}
LOGS_FUNCTION = {
    "handler": "handlers/logs.handler",
    "destinations": {"onFailure": {"type": "sqs", "arn": getatt("LogsDLQ")}},
    "events": [
        {"cloudwatchLog": {"logGroup": "/aws/lambda/demo-dev-api", "filter": '{ $.level = "ERROR" }'}}
    ],
}
HANDLERS = {"windowed": WINDOWED, "logs": LOGS}


def test_a_windowed_stream_and_a_log_subscription_done_right_pass(service, capsys):
    status, lines = run(service(config_with(windowed=WINDOW_FUNCTION, logs=LOGS_FUNCTION), HANDLERS), capsys)
    assert findings(lines) == [] and status == 0


def test_a_window_on_a_handler_that_never_reads_it_is_fine(service, capsys):
    status, lines = run(
        service(config_with(windowed=WINDOW_FUNCTION), {"windowed": STREAM.format(options="")}), capsys
    )
    assert findings(lines) == [] and status == 0


@pytest.mark.parametrize("seconds", [901, -1, "2m", 1.5, True])
def test_a_window_outside_lambdas_range(service, capsys, seconds):
    function = {**WINDOW_FUNCTION, "events": [{"stream": windowed_stream(seconds)}]}
    status, lines = run(service(config_with(windowed=function), HANDLERS), capsys)
    assert status == 1
    assert findings(lines) == [
        f"error: windowed: tumblingWindowInSeconds {seconds!r} on its stream event is not a whole "
        "number of seconds from 0 to 900: Lambda rejects the event source"
    ]


def test_a_window_from_a_variable_is_left_to_the_framework(service, capsys):
    function = {**WINDOW_FUNCTION, "events": [{"stream": windowed_stream("${self:custom.window}")}]}
    status, lines = run(service(config_with(windowed=function), HANDLERS), capsys)
    assert findings(lines) == [] and status == 0


def test_reading_current_window_without_a_window_is_an_error(service, capsys):
    function = {**WINDOW_FUNCTION, "events": [{"stream": windowed_stream(0)}]}
    status, lines = run(service(config_with(windowed=function), HANDLERS), capsys)
    assert status == 1
    [line] = findings(lines)
    assert line.startswith(
        "error: windowed: the handler reads current_window() but no stream event of the function "
        "sets tumblingWindowInSeconds"
    )


def test_reading_current_window_through_the_package_counts_too(service, capsys):
    source = WINDOWED.replace(
        "from lambda_kit import current_window, stream_handler",
        "import lambda_kit\nfrom lambda_kit import stream_handler",
    )
    source = source.replace("current_window().state", "lambda_kit.current_window().state")
    function = {**WINDOW_FUNCTION, "events": [{"stream": windowed_stream(0)}]}
    _, lines = run(service(config_with(windowed=function), {"windowed": source}), capsys)
    assert "reads current_window()" in findings(lines)[0]


def test_a_window_state_without_on_window_end_is_a_warning(service, capsys):
    source = WINDOWED.replace("@stream_handler(on_window_end=publish)", "@stream_handler")
    status, lines = run(service(config_with(windowed=WINDOW_FUNCTION), {"windowed": source}), capsys)
    assert status == 0
    [line] = findings(lines)
    assert line.startswith("warning: windowed: the handler keeps a window state but has no on_window_end")


def test_requeue_with_a_window_is_a_warning(service, capsys):
    status, lines = run(
        service(
            config_with(windowed=WINDOW_FUNCTION),
            {"windowed": STREAM.format(options="(on_failure='requeue')")},
        ),
        capsys,
    )
    assert status == 0
    [line] = findings(lines)
    assert line.startswith(
        "warning: windowed: on_failure='requeue' with a tumbling window: "
        "a requeued record comes back in a later window"
    )


def test_a_window_without_report_batch_item_failures_is_an_error(service, capsys):
    stream = windowed_stream()
    del stream["functionResponseType"]
    status, lines = run(
        service(config_with(windowed={**WINDOW_FUNCTION, "events": [{"stream": stream}]}), HANDLERS), capsys
    )
    assert status == 1
    [line] = findings(lines)
    assert line.startswith(
        "error: windowed: add functionResponseType: ReportBatchItemFailures to its stream event"
    )


# --- CloudWatch Logs subscriptions ------------------------------------------------------------------------


def test_a_log_subscription_without_a_failure_destination_is_an_error(service, capsys):
    function = {key: value for key, value in LOGS_FUNCTION.items() if key != "destinations"}
    status, lines = run(service(config_with(logs=function), HANDLERS), capsys)
    assert status == 1
    assert findings(lines) == [
        "error: logs: add destinations.onFailure (or onError) to the function: its cloudwatchLog "
        "events invoke it asynchronously and failed invocations are dropped after Lambda's retries"
    ]


def test_a_log_subscription_on_another_decorator_is_an_error(service, capsys):
    status, lines = run(
        service(config_with(logs=LOGS_FUNCTION), {**HANDLERS, "logs": STREAM.format(options="")}), capsys
    )
    assert status == 1
    assert findings(lines) == [
        "error: logs: handler is a stream_handler but the function has cloudwatchLog events: "
        "use cloudwatch_logs_handler or move the event"
    ]


@pytest.mark.parametrize(
    ("group", "name"),
    [
        ("/aws/lambda/${self:service}-${sls:stage}-logs", None),
        ("/aws/lambda/demo-dev-logs", None),
        ("/aws/lambda/demo-${opt:stage, 'dev'}-logs", None),
        ("/aws/lambda/log-reader", "log-reader"),
    ],
)
def test_a_function_subscribed_to_its_own_log_group_is_an_error(service, capsys, group, name):
    function = {**LOGS_FUNCTION, "events": [{"cloudwatchLog": group}], **({"name": name} if name else {})}
    status, lines = run(service(config_with(logs=function), HANDLERS), capsys)
    assert status == 1
    assert findings(lines) == [
        f"error: logs: its cloudwatchLog event subscribes it to its own log group {group}: "
        "every invocation writes lines that invoke it again, without end; subscribe another function"
    ]


def test_more_subscription_filters_than_a_log_group_takes(service, capsys):
    config = config_with(logs=LOGS_FUNCTION, audit={**LOGS_FUNCTION})
    config["resources"]["Resources"]["ApiLogs"] = {
        "Type": "AWS::Logs::LogGroup",
        "Properties": {"LogGroupName": "/aws/lambda/demo-dev-api"},
    }
    config["resources"]["Resources"]["ToArchive"] = {
        "Type": "AWS::Logs::SubscriptionFilter",
        "Properties": {
            "LogGroupName": {"Ref": "ApiLogs"},
            "FilterPattern": "",
            "DestinationArn": getatt("Clicks"),
        },
    }
    status, lines = run(service(config, {**HANDLERS, "audit": LOGS}), capsys)
    assert status == 1
    assert findings(lines) == [
        "error: /aws/lambda/demo-dev-api: 3 subscription filters on this log group: CloudWatch Logs "
        "allows 2 per log group, so the deploy fails; merge the consumers or subscribe a stream "
        "they share"
    ]


def test_json_false_on_a_stream_of_log_data_is_a_warning(service, capsys):
    config = config_with(
        clicks={"handler": "handlers/clicks.handler", "events": [{"stream": {**windowed_stream(0)}}]}
    )
    config["resources"]["Resources"]["ToClicks"] = {
        "Type": "AWS::Logs::SubscriptionFilter",
        "Properties": {
            "LogGroupName": "/aws/lambda/demo-dev-api",
            "FilterPattern": "",
            "DestinationArn": getatt("Clicks"),
        },
    }
    status, lines = run(
        service(config, {**HANDLERS, "clicks": STREAM.format(options="(json=False)")}), capsys
    )
    assert status == 0
    assert findings(lines) == [
        "warning: clicks: a subscription filter puts CloudWatch Logs data on Clicks, but the handler "
        "is stream_handler(json=False): it gets the gzip-compressed messages; leave json on for one "
        "call per log event"
    ]


# --- what the framework makes of these events ---------------------------------------------------------------


def test_serverless_package_makes_the_window_and_the_subscription_check_reads(service, capsys, tmp_path):
    """The real `serverless package` (osls) turns tumblingWindowInSeconds into the event source
    mapping's TumblingWindowInSeconds and a cloudwatchLog event into a subscription filter of that log
    group: the settings check reads are the ones that deploy."""
    config = {
        "service": "demo",
        "provider": {"name": "aws", "runtime": "python3.12", "region": "us-east-1"},
        "package": {"patterns": ["handlers/**", "lambda_kit/**"]},
        "functions": {"windowed": WINDOW_FUNCTION, "logs": LOGS_FUNCTION},
        "resources": {
            "Resources": {
                "Clicks": {"Type": "AWS::Kinesis::Stream", "Properties": {"ShardCount": 1}},
                "WindowDLQ": queue("demo-window-dlq"),
                "LogsDLQ": queue("demo-logs-dlq"),
            }
        },
    }
    path = service(config, HANDLERS)
    status, lines = run(path, capsys)
    assert findings(lines) == [] and status == 0
    template = package_service(tmp_path)
    resources = template["Resources"].values()
    [mapping] = [r["Properties"] for r in resources if r["Type"] == "AWS::Lambda::EventSourceMapping"]
    assert mapping["TumblingWindowInSeconds"] == 120 and mapping["FunctionResponseTypes"] == [RBIF]
    [subscription] = [r["Properties"] for r in resources if r["Type"] == "AWS::Logs::SubscriptionFilter"]
    assert (
        subscription["LogGroupName"] == "/aws/lambda/demo-dev-api"
        and subscription["FilterPattern"] == '{ $.level = "ERROR" }'
    )
    assert (
        yaml.safe_load(path.read_text())["functions"]["logs"]["events"][0]["cloudwatchLog"]["logGroup"]
        == subscription["LogGroupName"]
    )
