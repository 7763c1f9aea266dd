"""serverless.yml for the local stack: variables, intrinsics, resources created on the endpoint,
and Lambda's filter rules."""

from __future__ import annotations

import base64
import json
import re
import textwrap

import pytest

from lambda_kit.local.clients import Clients
from lambda_kit.local.config import load_service
from lambda_kit.local.filters import FilterError, compile_patterns, matches
from lambda_kit.local.resources import Resources
from lambda_kit.serverless_config import ConfigError

CONFIG = """
service: cfg-{suffix}
custom:
  tableName: ${{self:service}}-${{sls:stage}}-table
  prod: {{size: 3}}
  dev: {{size: 1}}
  size: ${{self:custom.${{sls:stage}}.size}}
provider:
  name: aws
  stage: ${{opt:stage, 'dev'}}
  region: ${{opt:region, 'us-east-1'}}
  timeout: 9
  environment:
    TABLE: ${{self:custom.tableName}}
    FROM_ENV: ${{env:LAMBDA_KIT_TEST_UNSET_VARIABLE, 'fallback'}}
    REGION: ${{aws:region}}
functions:
  worker:
    handler: pkg/worker.handler
    timeout: 20
    environment:
      QUEUE_URL: !Ref Queue
      QUEUE_ARN: !GetAtt Queue.Arn
      STREAM: !GetAtt Table.StreamArn
      SUB: !Sub "${{Queue.QueueName}} in ${{AWS::Region}}"
      JOINED: !Join [":", [a, !Ref Topic]]
      SIZE: ${{self:custom.size}}
resources:
  Resources:
    Table:
      Type: AWS::DynamoDB::Table
      Properties:
        TableName: ${{self:custom.tableName}}
        BillingMode: PAY_PER_REQUEST
        AttributeDefinitions: [{{AttributeName: PK, AttributeType: S}}]
        KeySchema: [{{AttributeName: PK, KeyType: HASH}}]
        StreamSpecification: {{StreamViewType: NEW_IMAGE}}
        TimeToLiveSpecification: {{AttributeName: expires, Enabled: true}}
    Queue:
      Type: AWS::SQS::Queue
      Properties:
        QueueName: cfg-{suffix}-queue
        VisibilityTimeout: 45
        RedrivePolicy:
          deadLetterTargetArn: !GetAtt DLQ.Arn
          maxReceiveCount: 4
    DLQ:
      Type: AWS::SQS::Queue
      Properties:
        QueueName: cfg-{suffix}-dlq
    Topic:
      Type: AWS::SNS::Topic
      Properties:
        TopicName: cfg-{suffix}-topic
    Stream:
      Type: AWS::Kinesis::Stream
      Properties:
        Name: cfg-{suffix}-stream
        ShardCount: 2
    Role:
      Type: AWS::IAM::Role
      Properties:
        Policies:
          - PolicyDocument:
              Statement:
                - Resource: !Sub arn:${{AWS::Partition}}:logs:${{AWS::Region}}:${{AWS::AccountId}}:log-group:x
"""


def _write(tmp_path, text, name="serverless.yml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_serverless_variables(tmp_path):
    config = load_service(_write(tmp_path, CONFIG.format(suffix="vars")), stage="prod")
    assert config.stage == "prod" and config.region == "us-east-1"
    worker = config.functions["worker"]
    assert worker.name == "cfg-vars-prod-worker" and worker.timeout == 20 and worker.module == "pkg.worker"
    assert worker.environment["TABLE"] == "cfg-vars-prod-table"
    assert worker.environment["FROM_ENV"] == "fallback"
    assert worker.environment["REGION"] == "us-east-1"
    assert worker.environment["SIZE"] == 3  # nested ${self:custom.${sls:stage}.size}
    assert worker.environment["QUEUE_URL"] == {"Ref": "Queue"}  # intrinsics wait for the resources
    assert load_service(_write(tmp_path, CONFIG.format(suffix="vars"))).stage == "dev"


def test_resources_are_created_and_intrinsics_resolve(tmp_path, aws_endpoint):
    config = load_service(_write(tmp_path, CONFIG.format(suffix="res")))
    clients = Clients(aws_endpoint.url, config.region)
    resources = Resources(config, clients)
    resources.create_all()
    env = resources.resolve(config.functions["worker"].environment)
    assert env["QUEUE_URL"].startswith(aws_endpoint.url) and env["QUEUE_URL"].endswith("/cfg-res-queue")
    assert env["QUEUE_ARN"] == "arn:aws:sqs:us-east-1:123456789012:cfg-res-queue"
    assert env["STREAM"].startswith("arn:aws:dynamodb:us-east-1:123456789012:table/cfg-res-dev-table/stream/")
    assert env["SUB"] == "cfg-res-queue in us-east-1"
    assert env["JOINED"] == "a:arn:aws:sns:us-east-1:123456789012:cfg-res-topic"
    sqs = clients("sqs")
    attributes = sqs.get_queue_attributes(QueueUrl=env["QUEUE_URL"], AttributeNames=["All"])["Attributes"]
    assert attributes["VisibilityTimeout"] == "45"
    assert json.loads(attributes["RedrivePolicy"]) == {
        "deadLetterTargetArn": "arn:aws:sqs:us-east-1:123456789012:cfg-res-dlq",
        "maxReceiveCount": 4,
    }
    ttl = clients("dynamodb").describe_time_to_live(TableName="cfg-res-dev-table")["TimeToLiveDescription"]
    assert ttl["AttributeName"] == "expires" and ttl["TimeToLiveStatus"] == "ENABLED"
    shards = clients("kinesis").list_shards(StreamName="cfg-res-stream")["Shards"]
    assert len(shards) == 2
    assert resources.dead_letter_queue_arns() == {"arn:aws:sqs:us-east-1:123456789012:cfg-res-dlq"}


@pytest.mark.parametrize(
    "text, message",
    [
        ("service: x\nprovider: {name: aws}\n", "no functions"),
        ("service: x\nfunctions:\n  f: {handler: nodot}\n", "needs `handler"),
        (
            "service: x\nfunctions:\n  f:\n    handler: m.h\n    environment: {A: '${ssm:/secret}'}\n",
            "cannot resolve ${ssm:/secret}",
        ),
        ("service: x\nfunctions: [1\n", "not valid YAML"),
    ],
)
def test_unusable_configs_are_one_line_errors(tmp_path, text, message):
    with pytest.raises(ConfigError) as error:
        load_service(_write(tmp_path, text))
    assert message in str(error.value) and "\n" not in str(error.value)


def test_unknown_function_names_the_known_ones(tmp_path):
    config = load_service(_write(tmp_path, CONFIG.format(suffix="names")))
    with pytest.raises(ConfigError, match="unknown function 'nope'.*worker"):
        config.function("nope")


# --- filter rules ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern, event, expected",
    [
        ({"a": ["x"]}, {"a": "x"}, True),
        ({"a": ["x"]}, {"a": "y"}, False),
        ({"a": [5]}, {"a": 5.0}, True),
        ({"a": [None]}, {"a": None}, True),
        ({"a": ["x"]}, {"a": ["y", "x"]}, True),  # any element of a list value
        ({"a": [{"prefix": "UR"}]}, {"a": "URL#1"}, True),
        ({"a": [{"prefix": "UR"}]}, {"a": "X"}, False),
        ({"a": [{"suffix": ".png"}]}, {"a": "f.png"}, True),
        ({"a": [{"equals-ignore-case": "abc"}]}, {"a": "ABC"}, True),
        ({"a": [{"wildcard": "a*c"}]}, {"a": "abbbc"}, True),
        ({"a": [{"anything-but": ["x", "y"]}]}, {"a": "z"}, True),
        ({"a": [{"anything-but": ["x", "y"]}]}, {"a": "x"}, False),
        ({"a": [{"anything-but": "x"}]}, {}, False),
        ({"a": [{"anything-but": {"prefix": "t"}}]}, {"a": "test"}, False),
        ({"a": [{"numeric": [">", 0, "<=", 5]}]}, {"a": 5}, True),
        ({"a": [{"numeric": [">", 0, "<=", 5]}]}, {"a": 6}, False),
        ({"a": [{"numeric": ["=", 3]}]}, {"a": "3"}, False),  # numbers only
        ({"a": [{"exists": True}]}, {"a": 1}, True),
        ({"a": [{"exists": True}]}, {}, False),
        ({"a": [{"exists": False}]}, {}, True),
        ({"a": [{"exists": False}]}, {"a": 1}, False),
        ({"a": {"b": ["x"]}}, {"a": {"b": "x", "c": 1}}, True),
        ({"a": {"b": ["x"]}}, {"a": "x"}, False),
        ({"$or": [{"a": ["1"]}, {"b": ["2"]}]}, {"b": "2"}, True),
        ({"$or": [{"a": ["1"]}, {"b": ["2"]}]}, {"c": "3"}, False),
        ({"a": [{"cidr": "10.0.0.0/8"}]}, {"a": "10.1.2.3"}, True),
        # a JSON boolean is not a number (in Python True == 1: moto's matcher alone says True to each)
        ({"a": [True]}, {"a": 1}, False),
        ({"a": [1]}, {"a": True}, False),
        ({"a": [False]}, {"a": 0}, False),
        ({"a": [{"numeric": [">", 0]}]}, {"a": True}, False),
        ({"a": [{"anything-but": [True]}]}, {"a": 1}, True),
        ({"a": [True]}, {"a": [0, True]}, True),
        ({"a": [{"exists": True}]}, {"a": False}, True),
    ],
)
def test_filter_rules(pattern, event, expected):
    assert matches(pattern, event) is expected


@pytest.mark.parametrize(
    "pattern, message",
    [
        ({"a": [{"prefx": "U"}]}, "unknown filter rule"),  # moto's matcher alone matches everything
        ({"a": [{"prefix": "U", "suffix": "V"}]}, "unknown filter rule"),
        ({"a": [{"numeric": ["~", 1]}]}, "numeric rule"),  # moto's matcher alone fails on each record
        ({"a": [{"numeric": [">", "1"]}]}, "numeric rule"),
        ({"a": [{"numeric": [">"]}]}, "numeric rule"),
        ({"a": "x"}, "must be a list of values or an object"),
        ({"$or": []}, "$or takes a non-empty list"),
        (["a"], "must be an object"),
        ("{not json", "not valid JSON"),
    ],
)
def test_a_pattern_lambda_would_refuse_is_refused_when_compiled(pattern, message):
    with pytest.raises(FilterError, match=re.escape(message)):
        compile_patterns([pattern], "sqs")


def test_a_record_too_deep_to_filter_goes_to_the_function():
    """Dropping it would count it as processed: the function gets it, and fails it if it must."""
    sqs = compile_patterns([{"body": {"kind": ["view"]}}], "sqs")
    assert sqs({"body": "[" * 100_000 + "]" * 100_000}) is True
    assert sqs({"body": json.dumps({"kind": "other"})}) is False


def test_filters_see_records_as_lambda_documents():
    sqs = compile_patterns([{"body": {"kind": ["view"]}}], "sqs")
    assert sqs({"body": json.dumps({"kind": "view"})}) and not sqs({"body": "not json"})
    kinesis = compile_patterns(['{"data": {"n": [{"numeric": [">", 1]}]}}'], "kinesis")
    encoded = base64.b64encode(json.dumps({"n": 2}).encode()).decode()
    assert kinesis({"kinesis": {"data": encoded}})
    keys = {"Keys": {"PK": {"S": [{"prefix": "URL#"}]}}}
    dynamodb = compile_patterns([{"eventName": ["INSERT"], "dynamodb": keys}], "dynamodb")
    assert dynamodb({"eventName": "INSERT", "dynamodb": {"Keys": {"PK": {"S": "URL#a"}}}})
    assert not dynamodb({"eventName": "MODIFY", "dynamodb": {"Keys": {"PK": {"S": "URL#a"}}}})


# --- one model for check, invoke and the local stack ----------------------------------------------


def test_read_service_keeps_the_file_as_written_and_lists_what_the_stack_cannot_run(tmp_path):
    from lambda_kit.local.config import read_service

    path = _write(
        tmp_path,
        """
        service: ${self:custom.name}
        custom: {name: shop}
        provider: {name: aws, timeout: "${self:custom.timeout}"}
        functions:
          - worker:
              handler: nodot
              events:
                - sqs: !GetAtt Jobs.Arn
                - just-a-string
          - api:
              handler: api.handler
              url: {invokeMode: BUFFERED}
              events:
                - httpApi: 'GET /orders/{id}'
                - sns: orders
                - cloudwatchLog: /aws/lambda/other
        resources:
          - Resources:
              Jobs: {Type: AWS::SQS::Queue}
          - Resources:
              Table: {Type: AWS::DynamoDB::Table}
            extensions:
              WorkerLambdaFunction: {Properties: {Tags: []}}
    """,
    )
    config = read_service(path)
    assert (
        config.service == "${self:custom.name}"
    )  # as written: check quotes values the way the user wrote them
    worker, api = config.functions["worker"], config.functions["api"]
    assert worker.timeout is None  # a variable check cannot read
    assert [(e.kind, e.spec) for e in worker.events] == [("sqs", {"arn": {"Fn::GetAtt": ["Jobs", "Arn"]}})]
    assert [(e.kind, e.spec) for e in api.events] == [
        ("httpApi", {"method": "GET", "path": "/orders/{id}"}),
        ("sns", {"topicName": "orders"}),
        ("cloudwatchLog", {"logGroup": "/aws/lambda/other"}),
        ("url", {"invokeMode": "BUFFERED"}),
    ]
    assert set(config.resources) == {"Jobs", "Table"} and set(config.extensions) == {"WorkerLambdaFunction"}
    assert config.resource_type(worker.events[0].spec["arn"]) == "AWS::SQS::Queue"
    assert [s.name for s in config.sources_of(worker.events[0])] == ["sqs"]
    assert config.problems == [
        "serverless.yml: function 'worker' needs `handler: path/module.function` (got 'nodot')",
        "serverless.yml: functions.worker: timeout and memorySize must be numbers",
        "serverless.yml: functions.worker.events[1] must be a mapping with one key "
        "(sqs, stream, sns, httpApi ...)",
        "serverless.yml: functions.api: timeout and memorySize must be numbers",
    ]
    with pytest.raises(ConfigError) as first:
        load_service(path)
    assert (
        str(first.value)
        == "serverless.yml: function 'worker' needs `handler: path/module.function` (got 'nodot')"
    )
