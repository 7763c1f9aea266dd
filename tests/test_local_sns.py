"""SNS subscriptions on the local stack: asynchronous invocation with Lambda's retries, then the
on-failure destination or the DLQ; the trace id travels in the message attributes."""

from __future__ import annotations

import json

from _local_toys import module_of, toy_stack, wait_for

CONFIG = """
service: {service}
provider:
  name: aws
functions:
  listener:
    handler: {module}.handler
    maximumRetryAttempts: {retries}
    {failure}
    events:
      - sns:
          arn: !Ref Topic
          topicName: ${{self:service}}-topic
resources:
  Resources:
    Topic:
      Type: AWS::SNS::Topic
      Properties:
        TopicName: ${{self:service}}-topic
    ListenerDLQ:
      Type: AWS::SQS::Queue
      Properties:
        QueueName: ${{self:service}}-listener-dlq
"""

LISTENER = """
from lambda_kit import sns_handler, current_trace_id
from toy_state import recorded
calls = recorded(__name__, "calls")

@sns_handler
def handler(message, context):
    calls.append((message, current_trace_id(), context.aws_request_id))
    if message.get("fail"):
        raise RuntimeError("cannot record it")
    return "ok"
"""

ON_FAILURE = """destinations:
      onFailure:
        type: sqs
        arn: !GetAtt ListenerDLQ.Arn"""


def _publish(stack, message, trace_id=None):
    attributes = {"trace_id": {"DataType": "String", "StringValue": trace_id}} if trace_id else {}
    topic = stack.resources.by_id["Topic"].attributes["Ref"]
    stack.clients("sns").publish(TopicArn=topic, Message=json.dumps(message), MessageAttributes=attributes)


def test_sns_delivers_with_the_trace_id(tmp_path, aws_endpoint, unique_name):
    config = CONFIG.format(service=unique_name("sns-ok"), module="ok_listener", retries=2, failure=ON_FAILURE)
    with toy_stack(tmp_path, config, {"ok_listener": LISTENER}, aws_endpoint.url) as stack:
        _publish(stack, {"milestone": 10}, trace_id="T-sns-1")
        wait_for(lambda: module_of(stack, "listener").calls)
        assert stack.wait_drained(20)
        [(message, trace_id, _)] = module_of(stack, "listener").calls
        assert message == {"milestone": 10} and trace_id == "T-sns-1"
        assert stack.dlq_counts() == {"ListenerDLQ": 0}


def test_sns_retries_then_the_on_failure_destination(tmp_path, aws_endpoint, unique_name):
    config = CONFIG.format(
        service=unique_name("sns-fail"), module="failing_listener", retries=2, failure=ON_FAILURE
    )
    with toy_stack(tmp_path, config, {"failing_listener": LISTENER}, aws_endpoint.url) as stack:
        _publish(stack, {"fail": True}, trace_id="T-sns-2")
        wait_for(lambda: stack.journal.events("async.failed"))
        assert stack.wait_drained(20)
        calls = module_of(stack, "listener").calls
        assert len(calls) == 3  # the first try and maximumRetryAttempts (2) retries
        assert len({request_id for _, _, request_id in calls}) == 3
        assert {trace_id for _, trace_id, _ in calls} == {"T-sns-2"}
        [message] = stack.receive_all("ListenerDLQ")
        record = json.loads(message["Body"])
        assert record["requestContext"]["condition"] == "RetriesExhausted"
        assert record["requestContext"]["approximateInvokeCount"] == 3
        assert record["responsePayload"]["errorType"] == "RuntimeError"
        assert json.loads(record["requestPayload"]["Records"][0]["Sns"]["Message"]) == {"fail": True}


def test_sns_without_retries_goes_to_the_function_dlq(tmp_path, aws_endpoint, unique_name):
    dead_letter = "onError: !GetAtt ListenerDLQ.Arn"
    config = CONFIG.format(
        service=unique_name("sns-dlq"), module="dlq_listener", retries=0, failure=dead_letter
    )
    with toy_stack(tmp_path, config, {"dlq_listener": LISTENER}, aws_endpoint.url) as stack:
        _publish(stack, {"fail": True})
        wait_for(lambda: stack.journal.events("async.failed"))
        assert len(module_of(stack, "listener").calls) == 1
        [message] = stack.receive_all("ListenerDLQ")
        # A function DLQ gets the event itself, with the error in message attributes.
        assert json.loads(message["Body"])["Records"][0]["EventSource"] == "aws:sns"
        assert message["MessageAttributes"]["ErrorMessage"]["StringValue"] == "cannot record it"
