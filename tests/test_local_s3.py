"""S3 notifications on the local stack, from real object writes on moto's S3 (same endpoint):
an ``s3`` event invokes the function asynchronously (Lambda's retries, then the on-failure
destination), with the bucket's event type and key filters; a bucket resource notifying a queue
feeds an ``sqs`` event whose handler is an ``s3_handler`` (S3's test message skipped, failures
reported per message, redriven to the queue's DLQ)."""

from __future__ import annotations

import json
from urllib.parse import unquote_plus

from _local_toys import module_of, toy_stack, wait_for

CONFIG = """
service: {service}
provider:
  name: aws
functions:
  uploads:
    handler: direct_uploads.handler
    maximumRetryAttempts: 1
    destinations:
      onFailure:
        type: sqs
        arn: !GetAtt UploadsDLQ.Arn
    events:
      - s3:
          bucket: {bucket}
          event: s3:ObjectCreated:*
          rules:
            - prefix: incoming/
  queued:
    handler: queued_uploads.handler
    events:
      - sqs:
          arn: !GetAtt ArchiveQueue.Arn
          functionResponseType: ReportBatchItemFailures
resources:
  Resources:
    UploadsDLQ:
      Type: AWS::SQS::Queue
      Properties:
        QueueName: ${{self:service}}-uploads-dlq
    ArchiveQueue:
      Type: AWS::SQS::Queue
      Properties:
        QueueName: ${{self:service}}-archive
        RedrivePolicy:
          deadLetterTargetArn: !GetAtt ArchiveDLQ.Arn
          maxReceiveCount: 2
    ArchiveDLQ:
      Type: AWS::SQS::Queue
      Properties:
        QueueName: ${{self:service}}-archive-dlq
    Archive:
      Type: AWS::S3::Bucket
      Properties:
        BucketName: {archive}
        NotificationConfiguration:
          QueueConfigurations:
            - Event: s3:ObjectCreated:*
              Queue: !GetAtt ArchiveQueue.Arn
"""

HANDLER = """
from lambda_kit import s3_handler, current_record
from toy_state import recorded
calls = recorded(__name__, "calls")

@s3_handler
def handler(obj, context):
    calls.append((obj.bucket, obj.key, obj.size, obj.event_name, current_record().id))
    if obj.key.rpartition("/")[2].startswith("bad"):
        raise RuntimeError("cannot read " + obj.key)
    return obj.key
"""


def started(tmp_path, aws_endpoint, unique_name, name):
    bucket, archive = unique_name("uploads"), unique_name("archive")
    config = CONFIG.format(service=unique_name(name), bucket=bucket, archive=archive)
    modules = {"direct_uploads": HANDLER, "queued_uploads": HANDLER}
    return toy_stack(tmp_path, config, modules, aws_endpoint.url), bucket, archive


def test_an_object_write_invokes_the_function_with_its_decoded_key(tmp_path, aws_endpoint, unique_name):
    stack_of, bucket, _ = started(tmp_path, aws_endpoint, unique_name, "s3-ok")
    with stack_of as stack:
        s3 = stack.clients("s3")
        s3.put_object(Bucket=bucket, Key="incoming/red flower+1.jpg", Body=b"12345")
        s3.put_object(Bucket=bucket, Key="elsewhere/x.txt", Body=b"x")  # outside the prefix rule
        wait_for(lambda: module_of(stack, "uploads").calls)
        assert stack.wait_drained(20)
        assert module_of(stack, "uploads").calls == [
            (
                bucket,
                "incoming/red flower+1.jpg",
                5,
                "ObjectCreated:Put",
                module_of(stack, "uploads").calls[0][4],
            )
        ]
        assert stack.journal.events("s3.test_event_dropped", function="uploads")  # S3 sends none to Lambda
        assert stack.dlq_counts()["UploadsDLQ"] == 0


def test_a_failing_object_is_retried_then_kept_by_the_on_failure_destination(
    tmp_path, aws_endpoint, unique_name
):
    stack_of, bucket, _ = started(tmp_path, aws_endpoint, unique_name, "s3-fail")
    with stack_of as stack:
        stack.clients("s3").put_object(Bucket=bucket, Key="incoming/bad file.csv", Body=b"a,b")
        wait_for(lambda: stack.journal.events("async.failed", function="uploads"))
        assert len(module_of(stack, "uploads").calls) == 2  # the first try and maximumRetryAttempts (1)
        [message] = stack.receive_all("UploadsDLQ")
        record = json.loads(message["Body"])
        assert record["requestContext"]["condition"] == "RetriesExhausted"
        sent = record["requestPayload"]["Records"][0]["s3"]["object"]["key"]  # as S3 sent it: URL-encoded
        assert "+" in sent and " " not in sent and unquote_plus(sent) == "incoming/bad file.csv"


def test_notifications_through_a_queue_are_reported_per_message(tmp_path, aws_endpoint, unique_name):
    stack_of, _, archive = started(tmp_path, aws_endpoint, unique_name, "s3-sqs")
    with stack_of as stack:
        s3 = stack.clients("s3")
        s3.put_object(Bucket=archive, Key="2024/ok one.txt", Body=b"ok")
        s3.put_object(Bucket=archive, Key="2024/bad one.txt", Body=b"no")
        wait_for(lambda: stack.queue_count("ArchiveDLQ") == 1, timeout=30)
        assert stack.wait_drained(30)
        calls = module_of(stack, "queued").calls
        assert [call[1] for call in calls if call[1].endswith("ok one.txt")] == ["2024/ok one.txt"]
        assert [call[1] for call in calls if call[1].endswith("bad one.txt")] == [
            "2024/bad one.txt"
        ] * 2  # maxReceiveCount
        [dead] = stack.receive_all("ArchiveDLQ")
        assert (
            unquote_plus(json.loads(dead["Body"])["Records"][0]["s3"]["object"]["key"]) == "2024/bad one.txt"
        )
        assert {call[4] for call in calls if "bad" in call[1]} == {dead["MessageId"]}  # reported by messageId
    lines = [json.loads(line) for line in (tmp_path / "logs.jsonl").read_text().splitlines()]
    [skipped] = [line for line in lines if line["message"] == "skipped an S3 test event"]
    assert skipped["bucket"] == archive and skipped["level"] == "INFO"


EVENTBRIDGE_CONFIG = """
service: {service}
provider:
  name: aws
functions:
  objects:
    handler: eb_objects.handler
    destinations:
      onFailure: arn:aws:sqs:us-east-1:123456789012:unused
    events:
      - eventBridge:
          pattern:
            source: [aws.s3]
            detail-type: [Object Created]
            detail:
              bucket:
                name: [{bucket}]
resources:
  Resources:
    Photos:
      Type: AWS::S3::Bucket
      Properties:
        BucketName: {bucket}
        NotificationConfiguration:
          EventBridgeConfiguration:
            EventBridgeEnabled: true
"""


def test_a_bucket_sending_to_eventbridge_reaches_an_s3_handler(tmp_path, aws_endpoint, unique_name):
    """S3 → EventBridge (moto's S3 puts the event on the bus) → the rule → the s3_handler: the key
    arrives as written, not encoded."""
    bucket = unique_name("photos")
    config = EVENTBRIDGE_CONFIG.format(service=unique_name("s3-eb"), bucket=bucket)
    with toy_stack(tmp_path, config, {"eb_objects": HANDLER}, aws_endpoint.url) as stack:
        stack.clients("s3").put_object(Bucket=bucket, Key="2024/red flower+1.jpg", Body=b"123")
        wait_for(lambda: module_of(stack, "objects").calls)
        assert stack.wait_drained(20)
        [(got_bucket, key, size, event_name, record_id)] = module_of(stack, "objects").calls
        assert (got_bucket, key, size) == (bucket, "2024/red flower+1.jpg", 3)
        assert event_name.startswith("ObjectCreated")
        [accepted] = stack.journal.events("eventbridge.accepted", function="objects")
        assert record_id == accepted["message_id"]  # the EventBridge event id
