"""EventBridge rules on the local stack: PutEvents on moto's EventBridge (same endpoint) reaches the
function when the rule's pattern matches (moto's own matcher), asynchronously, with Lambda's
retries and then the on-failure destination; the trace id travels in ``detail.trace_id``."""

from __future__ import annotations

import json

from _local_toys import module_of, toy_stack, wait_for

CONFIG = """
service: {service}
provider:
  name: aws
functions:
  rules:
    handler: {module}.handler
    maximumRetryAttempts: 2
    destinations:
      onFailure:
        type: sqs
        arn: !GetAtt RulesDLQ.Arn
    events:
      - eventBridge:
          eventBus: {bus}
          pattern:
            source: [shop.orders]
            detail-type: [Order Placed]
            detail:
              total: [{{numeric: [">", 100]}}]
          deadLetterQueueArn: !GetAtt RuleDLQ.Arn
resources:
  Resources:
    RulesDLQ:
      Type: AWS::SQS::Queue
      Properties:
        QueueName: ${{self:service}}-rules-dlq
    RuleDLQ:
      Type: AWS::SQS::Queue
      Properties:
        QueueName: ${{self:service}}-rule-dlq
"""

RULES = """
from lambda_kit import eventbridge_handler, current_record, current_trace_id
from toy_state import recorded
calls = recorded(__name__, "calls")

@eventbridge_handler
def handler(detail, context):
    calls.append((detail, current_trace_id(), current_record().id, context.aws_request_id))
    if detail.get("fail"):
        raise RuntimeError("cannot ship it")
    return "shipped"
"""


def put(stack, bus: str, detail: dict, detail_type: str = "Order Placed", source: str = "shop.orders") -> str:
    response = stack.clients("events").put_events(
        Entries=[
            {"Source": source, "DetailType": detail_type, "Detail": json.dumps(detail), "EventBusName": bus}
        ]
    )
    assert response["FailedEntryCount"] == 0, response
    return response["Entries"][0]["EventId"]


def test_matching_events_reach_the_function_with_their_trace_id(tmp_path, aws_endpoint, unique_name):
    bus = unique_name("orders")
    config = CONFIG.format(service=unique_name("eb-ok"), module="ok_rules", bus=bus)
    with toy_stack(tmp_path, config, {"ok_rules": RULES}, aws_endpoint.url) as stack:
        event_id = put(stack, bus, {"order": 1, "total": 250, "trace_id": "T-eb-local"})
        put(stack, bus, {"order": 2, "total": 50})  # the pattern's numeric filter drops it
        put(stack, bus, {"order": 3, "total": 500}, source="shop.returns")  # another source
        put(stack, "default", {"order": 4, "total": 500})  # another bus
        wait_for(lambda: module_of(stack, "rules").calls)
        assert stack.wait_drained(20)
        [(detail, trace_id, record_id, _)] = module_of(stack, "rules").calls
        assert detail == {"order": 1, "total": 250, "trace_id": "T-eb-local"}
        assert (trace_id, record_id) == ("T-eb-local", event_id)
        assert stack.dlq_counts() == {"RulesDLQ": 0, "RuleDLQ": 0}
    lines = [json.loads(line) for line in (tmp_path / "logs.jsonl").read_text().splitlines()]
    assert {line["trace_id"] for line in lines if line.get("source") == "eventbridge"} == {"T-eb-local"}


def test_a_failing_event_is_retried_then_kept_by_the_on_failure_destination(
    tmp_path, aws_endpoint, unique_name
):
    bus = unique_name("orders")
    config = CONFIG.format(service=unique_name("eb-fail"), module="failing_rules", bus=bus)
    with toy_stack(tmp_path, config, {"failing_rules": RULES}, aws_endpoint.url) as stack:
        event_id = put(stack, bus, {"order": 9, "total": 900, "fail": True})
        wait_for(lambda: stack.journal.events("async.failed"))
        assert stack.wait_drained(20)
        calls = module_of(stack, "rules").calls
        assert len(calls) == 3  # the first try and maximumRetryAttempts (2) retries
        assert {record_id for _, _, record_id, _ in calls} == {event_id}
        [message] = stack.receive_all("RulesDLQ")
        record = json.loads(message["Body"])
        assert record["requestContext"]["condition"] == "RetriesExhausted"
        assert record["requestContext"]["approximateInvokeCount"] == 3
        assert record["responsePayload"]["errorType"] == "RuntimeError"
        assert record["requestPayload"]["id"] == event_id and record["requestPayload"]["detail"]["order"] == 9
        assert "ingestion-time" not in record["requestPayload"]  # moto's own field is not Lambda's


PLAIN = """
from toy_state import recorded
calls = recorded(__name__, "calls")

def handler(event, context):
    calls.append(event)
"""


def test_a_constant_input_replaces_the_event(tmp_path, aws_endpoint, unique_name):
    bus = unique_name("orders")
    config = CONFIG.format(service=unique_name("eb-input"), module="plain_rules", bus=bus).replace(
        "          deadLetterQueueArn",
        "          input:\n            job: nightly\n          deadLetterQueueArn",
    )
    with toy_stack(tmp_path, config, {"plain_rules": PLAIN}, aws_endpoint.url) as stack:
        put(stack, bus, {"total": 101})
        wait_for(lambda: module_of(stack, "rules").calls)
        assert module_of(stack, "rules").calls == [{"job": "nightly"}]


def test_a_schedule_is_noted_not_run(tmp_path, aws_endpoint, unique_name):
    config = CONFIG.format(service=unique_name("eb-cron"), module="cron_rules", bus="default").replace(
        "          eventBus: default\n", "          schedule: rate(1 minute)\n"
    )
    config = (
        config[: config.index("          pattern:")] + config[config.index("          deadLetterQueueArn") :]
    )
    with toy_stack(tmp_path, config, {"cron_rules": RULES}, aws_endpoint.url) as stack:
        assert stack.journal.events("event.unsupported", event_kind="eventBridge schedule")
        assert stack.relays == []
