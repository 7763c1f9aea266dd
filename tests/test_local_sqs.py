"""SQS event source semantics on the local stack: partial batch failures, whole-batch failures,
redrive after maxReceiveCount, batching window, filters."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from _local_toys import module_of, toy_stack, wait_for

CONFIG = """
service: {service}
provider:
  name: aws
functions:
  worker:
    handler: {module}.handler
    timeout: 5
    events:
      - sqs:
          arn: !GetAtt Jobs.Arn
          batchSize: {batch_size}
          maximumBatchingWindow: {window}
          functionResponseType: ReportBatchItemFailures
          {extra}
resources:
  Resources:
    Jobs:
      Type: AWS::SQS::Queue
      Properties:
        QueueName: ${{self:service}}-jobs
        VisibilityTimeout: 30
        RedrivePolicy:
          deadLetterTargetArn: !GetAtt JobsDLQ.Arn
          maxReceiveCount: 2
    JobsDLQ:
      Type: AWS::SQS::Queue
      Properties:
        QueueName: ${{self:service}}-jobs-dlq
"""

DECORATED = """
from lambda_kit import sqs_handler, current_record
from toy_state import recorded
seen = recorded(__name__, "seen")   # (n, receive count)
batches = recorded(__name__, "batches")

@sqs_handler
def _each(message, context):
    seen.append((message["n"], int(current_record().raw["attributes"]["ApproximateReceiveCount"])))
    if message.get("bad"):
        raise ValueError("bad message")
    return {"ok": message["n"]}

def handler(event, context):
    batches.append(len(event["Records"]))
    return _each(event, context)
"""


def _config(service: str, module: str, batch_size: int = 10, window: float = 0, extra: str = "") -> str:
    return CONFIG.format(service=service, module=module, batch_size=batch_size, window=window, extra=extra)


def _stack(tmp_path, aws_endpoint, service, module, code, **config):
    """A toy stack of one worker ``module`` (its ``code``) on the session's endpoint."""
    return toy_stack(tmp_path, _config(service, module, **config), {module: code}, aws_endpoint.url)


def _send(stack, bodies):
    sqs = stack.clients("sqs")
    for body in bodies:
        sqs.send_message(
            QueueUrl=stack.queue_url("Jobs"), MessageBody=body if isinstance(body, str) else json.dumps(body)
        )


def test_partial_batch_failure_deletes_only_successes_and_redrives_the_failure(
    tmp_path, aws_endpoint, unique_name
):
    service = unique_name("sqs-partial")
    with _stack(
        tmp_path, aws_endpoint, service, "partial_worker", DECORATED, batch_size=10, window=0.5
    ) as stack:
        _send(stack, [{"n": n, "bad": n == 3} for n in range(6)])
        assert stack.wait_drained(20)
        seen = Counter(n for n, _ in module_of(stack, "worker").seen)
        # Every good message was handled exactly once: deleted after its first batch.
        assert {n: seen[n] for n in (0, 1, 2, 4, 5)} == {0: 1, 1: 1, 2: 1, 4: 1, 5: 1}
        # The bad one came back until maxReceiveCount (2), then SQS moved it to the DLQ.
        assert seen[3] == 2
        dlq = stack.receive_all("JobsDLQ")
        assert [json.loads(m["Body"])["n"] for m in dlq] == [3]
        batches = stack.journal.events("sqs.batch")
        assert any(len(b["failed"]) == 1 and len(b["deleted"]) >= 1 for b in batches)
        assert stack.queue_count("Jobs") == 0


def test_redrive_happens_after_max_receive_count(tmp_path, aws_endpoint, unique_name):
    service = unique_name("sqs-redrive")
    with _stack(tmp_path, aws_endpoint, service, "redrive_worker", DECORATED) as stack:
        _send(stack, [{"n": 1, "bad": True}])
        assert stack.wait_drained(20)
        receive_counts = [count for n, count in module_of(stack, "worker").seen if n == 1]
        assert receive_counts == [1, 2]  # maxReceiveCount: 2 receives, then the DLQ
        assert stack.dlq_counts() == {"JobsDLQ": 1}


WHOLE_BATCH = """
from toy_state import recorded
calls = recorded(__name__, "calls")

def handler(event, context):
    ids = sorted(r["body"] for r in event["Records"])
    calls.append(ids)
    if len(calls) == 1:
        raise RuntimeError("the first invocation crashes")
    return None   # no batchItemFailures: all succeeded
"""


def test_a_raised_exception_fails_the_whole_batch(tmp_path, aws_endpoint, unique_name):
    service = unique_name("sqs-crash")
    with _stack(
        tmp_path, aws_endpoint, service, "crash_worker", WHOLE_BATCH, batch_size=10, window=0.5
    ) as stack:
        _send(stack, ["a", "b", "c"])
        assert stack.wait_drained(20)
        calls = module_of(stack, "worker").calls
        delivered = Counter(body for call in calls for body in call)
        assert delivered == {"a": 2, "b": 2, "c": 2}
        assert stack.dlq_counts() == {"JobsDLQ": 0}
        first = stack.journal.events("sqs.batch")[0]
        assert first["deleted"] == [] and "RuntimeError" in first["reason"]


MALFORMED = """
def handler(event, context):
    return {"batchItemFailures": [{"itemIdentifier": "not-in-this-batch"}]}
"""


def test_a_malformed_batch_response_fails_the_whole_batch(tmp_path, aws_endpoint, unique_name):
    service = unique_name("sqs-malformed")
    with _stack(tmp_path, aws_endpoint, service, "malformed_worker", MALFORMED) as stack:
        _send(stack, ["x"])
        assert stack.wait_drained(20)
        assert stack.dlq_counts() == {"JobsDLQ": 1}
        assert all(b["deleted"] == [] for b in stack.journal.events("sqs.batch"))


def test_batching_window_gathers_one_batch(tmp_path, aws_endpoint, unique_name):
    service = unique_name("sqs-window")
    with _stack(tmp_path, aws_endpoint, service, "window_worker", DECORATED, batch_size=5, window=2) as stack:
        _send(stack, [{"n": n} for n in range(5)])
        wait_for(lambda: len(module_of(stack, "worker").seen) == 5)
        assert module_of(stack, "worker").batches == [5]


@pytest.mark.parametrize("pattern, delivered", [('[{"body": {"kind": ["view"]}}]', [1])])
def test_filter_patterns_drop_messages_before_the_function(
    tmp_path, aws_endpoint, unique_name, pattern, delivered
):
    service = unique_name("sqs-filter")
    extra = f"filterPatterns: {pattern}"
    with _stack(tmp_path, aws_endpoint, service, "filter_worker", DECORATED, extra=extra) as stack:
        _send(stack, [{"n": 1, "kind": "view"}, {"n": 2, "kind": "click"}])
        assert stack.wait_drained(20)
        assert [n for n, _ in module_of(stack, "worker").seen] == delivered
        assert stack.queue_count("Jobs") == 0  # filtered messages are deleted, as on AWS


def test_an_invocation_hook_can_crash_after_the_work_is_done(tmp_path, aws_endpoint, unique_name):
    """The soak's fault: the handler's work committed, then the invocation dies before SQS was
    told; the batch is delivered again."""
    crashed = []

    def crash_once_after(invocation, proceed):
        response = proceed()
        if invocation.source == "sqs" and not crashed:
            crashed.append(invocation.context.aws_request_id)
            raise RuntimeError("crashed after the work committed")
        return response

    service = unique_name("sqs-hook")
    config = _config(service, "hook_worker", batch_size=10, window=0.5)
    with toy_stack(
        tmp_path, config, {"hook_worker": DECORATED}, aws_endpoint.url, hooks=[crash_once_after]
    ) as stack:
        _send(stack, [{"n": 1}, {"n": 2}])
        assert stack.wait_drained(20)
        seen = Counter(n for n, _ in module_of(stack, "worker").seen)
        assert seen == {1: 2, 2: 2} and len(crashed) == 1
        assert stack.dlq_counts() == {"JobsDLQ": 0}
