"""DynamoDB Streams and Kinesis event sources on the local stack: checkpoint at the first
failure, retry limits and the on-failure destination, bisect, filter patterns, moto's extra
keys-only INSERT, TTL removals."""

from __future__ import annotations

import json
import time

from _local_toys import module_of, toy_stack, wait_for

TABLE_CONFIG = """
service: {service}
provider:
  name: aws
functions:
  watcher:
    handler: {module}.handler
    events:
      - stream:
          type: dynamodb
          arn: !GetAtt Things.StreamArn
          startingPosition: TRIM_HORIZON
          batchSize: {batch_size}
          maximumBatchingWindow: {window}
          maximumRetryAttempts: {retries}
          bisectBatchOnFunctionError: {bisect}
          functionResponseType: ReportBatchItemFailures
          destinations:
            onFailure:
              type: sqs
              arn: !GetAtt WatcherDLQ.Arn
          {extra}
resources:
  Resources:
    Things:
      Type: AWS::DynamoDB::Table
      Properties:
        TableName: ${{self:service}}-things
        BillingMode: PAY_PER_REQUEST
        AttributeDefinitions:
          - {{AttributeName: PK, AttributeType: S}}
        KeySchema:
          - {{AttributeName: PK, KeyType: HASH}}
        StreamSpecification:
          StreamViewType: NEW_AND_OLD_IMAGES
        TimeToLiveSpecification:
          AttributeName: ttl
          Enabled: true
    WatcherDLQ:
      Type: AWS::SQS::Queue
      Properties:
        QueueName: ${{self:service}}-watcher-dlq
"""

RECORDER = """
from lambda_kit import stream_handler, current_record
from toy_state import recorded
seen = recorded(__name__, "seen")      # every delivery, in order: (event_name, PK)
failed_once = set()
raw = recorded(__name__, "raw")

@stream_handler
def handler(change, context):
    pk = change["keys"]["PK"]
    seen.append((change["event_name"], pk))
    raw.append(current_record().raw)
    if pk.startswith("fail-once") and pk not in failed_once:
        failed_once.add(pk)
        raise ValueError("fails the first time")
    if pk.startswith("always-fail"):
        raise ValueError("always fails")
    return pk
"""


def _config(service, module, batch_size=10, window=0.5, retries=-1, bisect="false", extra=""):
    return TABLE_CONFIG.format(
        service=service,
        module=module,
        batch_size=batch_size,
        window=window,
        retries=retries,
        bisect=bisect,
        extra=extra,
    )


def _table(stack):
    return stack.resources.by_id["Things"].attributes["Ref"]


def _put(stack, *keys, **attributes):
    dynamodb = stack.clients("dynamodb")
    for key in keys:
        item = {
            "PK": {"S": key},
            **{k: {"S": str(v)} if not isinstance(v, dict) else v for k, v in attributes.items()},
        }
        dynamodb.put_item(TableName=_table(stack), Item=item)


def test_dynamodb_stream_checkpoints_at_the_first_failure(tmp_path, aws_endpoint, unique_name):
    service = unique_name("ddb-checkpoint")
    with toy_stack(
        tmp_path, _config(service, "ckpt_watcher", window=1), {"ckpt_watcher": RECORDER}, aws_endpoint.url
    ) as stack:
        _put(stack, "a", "b", "fail-once-c", "d")
        wait_for(lambda: ("INSERT", "d") in module_of(stack, "watcher").seen)
        assert stack.wait_drained(20)
        pks = [pk for _, pk in module_of(stack, "watcher").seen]
        # a and b are done before the failure: never delivered again; the retry starts at c, in order.
        assert pks == ["a", "b", "fail-once-c", "fail-once-c", "d"]
        assert stack.dlq_counts() == {"WatcherDLQ": 0}


def test_retries_exhausted_go_to_the_on_failure_destination_and_the_shard_moves_on(
    tmp_path, aws_endpoint, unique_name
):
    service = unique_name("ddb-retries")
    with toy_stack(
        tmp_path,
        _config(service, "retry_watcher", batch_size=1, window=0, retries=2),
        {"retry_watcher": RECORDER},
        aws_endpoint.url,
    ) as stack:
        _put(stack, "always-fail-x")
        _put(stack, "after")
        wait_for(lambda: ("INSERT", "after") in module_of(stack, "watcher").seen)
        pks = [pk for _, pk in module_of(stack, "watcher").seen]
        assert pks.count("always-fail-x") == 3  # first try + maximumRetryAttempts 2
        [message] = stack.receive_all("WatcherDLQ")
        failure = json.loads(message["Body"])
        info = failure["DDBStreamBatchInfo"]
        assert failure["requestContext"]["condition"] == "RetryAttemptsExhausted"
        assert failure["requestContext"]["approximateInvokeCount"] == 3
        assert "functionError" not in failure["responseContext"]  # it reported the failure, it did not raise
        assert info["batchSize"] == 1 and info["startSequenceNumber"] == info["endSequenceNumber"]
        assert info["streamArn"] == stack.resources.by_id["Things"].attributes["StreamArn"]


PLAIN_RAISER = """
from toy_state import recorded
batches = recorded(__name__, "batches")

def handler(event, context):
    keys = [r["dynamodb"]["Keys"]["PK"]["S"] for r in event["Records"]]
    batches.append(keys)
    if "poison" in keys:
        raise ValueError("a poison record in the batch")
"""


def test_bisect_isolates_the_poison_record(tmp_path, aws_endpoint, unique_name):
    service = unique_name("ddb-bisect")
    config = _config(service, "bisect_watcher", batch_size=4, window=1, retries=0, bisect="true")
    with toy_stack(tmp_path, config, {"bisect_watcher": PLAIN_RAISER}, aws_endpoint.url) as stack:
        _put(stack, "k1", "k2", "k3", "poison")
        wait_for(lambda: stack.journal.events("stream.discarded"))
        batches = module_of(stack, "watcher").batches
        assert batches[0] == ["k1", "k2", "k3", "poison"]
        assert ["k1", "k2"] in batches and ["k3"] in batches and batches[-1] == ["poison"]
        [discarded] = stack.journal.events("stream.discarded")
        assert discarded["size"] == 1
        [message] = stack.receive_all("WatcherDLQ")
        assert json.loads(message["Body"])["DDBStreamBatchInfo"]["batchSize"] == 1


def test_filter_patterns_on_dynamodb_records(tmp_path, aws_endpoint, unique_name):
    service = unique_name("ddb-filter")
    extra = """filterPatterns:
            - eventName: [INSERT]
              dynamodb:
                Keys:
                  PK:
                    S: [{prefix: "VIEW#"}]
            - dynamodb:
                NewImage:
                  kind:
                    S: [{anything-but: [skip, ignore]}]"""
    with toy_stack(
        tmp_path,
        _config(service, "filter_watcher", extra=extra),
        {"filter_watcher": RECORDER},
        aws_endpoint.url,
    ) as stack:
        _put(stack, "VIEW#1", kind="skip")  # first pattern
        _put(stack, "OTHER#1", kind="skip")  # neither
        _put(stack, "OTHER#2", kind="keep")  # second pattern
        _put(stack, "OTHER#3")  # no kind: anything-but needs the field
        assert stack.wait_drained(20)
        assert [pk for _, pk in module_of(stack, "watcher").seen] == ["VIEW#1", "OTHER#2"]


def test_an_update_that_creates_an_item_is_one_insert(tmp_path, aws_endpoint, unique_name):
    service = unique_name("ddb-upsert")
    with toy_stack(
        tmp_path, _config(service, "upsert_watcher"), {"upsert_watcher": RECORDER}, aws_endpoint.url
    ) as stack:
        stack.clients("dynamodb").update_item(
            TableName=_table(stack),
            Key={"PK": {"S": "counter"}},
            UpdateExpression="ADD n :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
        )
        _put(stack, "marker")
        assert stack.wait_drained(20)
        module = module_of(stack, "watcher")
        assert module.seen == [("INSERT", "counter"), ("INSERT", "marker")]
        assert module.raw[0]["dynamodb"]["NewImage"] == {"PK": {"S": "counter"}, "n": {"N": "1"}}


def test_ttl_expiry_appears_as_a_remove_by_the_dynamodb_service(tmp_path, aws_endpoint, unique_name):
    service = unique_name("ddb-ttl")
    with toy_stack(
        tmp_path, _config(service, "ttl_watcher"), {"ttl_watcher": RECORDER}, aws_endpoint.url
    ) as stack:
        now = int(time.time())
        _put(stack, "expired", ttl={"N": str(now - 60)})
        _put(stack, "fresh", ttl={"N": str(now + 3600)})
        _put(stack, "ancient", ttl={"N": str(now - 6 * 365 * 86400)})  # DynamoDB ignores TTLs > 5 years old
        wait_for(lambda: ("REMOVE", "expired") in module_of(stack, "watcher").seen)
        assert stack.wait_drained(20)
        module = module_of(stack, "watcher")
        removes = [r for r in module.raw if r["eventName"] == "REMOVE"]
        assert [r["dynamodb"]["Keys"]["PK"]["S"] for r in removes] == ["expired"]
        assert removes[0]["userIdentity"] == {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
        item = stack.clients("dynamodb").get_item(TableName=_table(stack), Key={"PK": {"S": "fresh"}})
        assert "Item" in item


KINESIS_CONFIG = """
service: {service}
provider:
  name: aws
functions:
  reader:
    handler: {module}.handler
    events:
      - stream:
          type: kinesis
          arn: !GetAtt Clicks.Arn
          startingPosition: TRIM_HORIZON
          batchSize: 10
          maximumBatchingWindow: 1
          maximumRetryAttempts: 1
          functionResponseType: ReportBatchItemFailures
          destinations:
            onFailure:
              type: sqs
              arn: !GetAtt ReaderDLQ.Arn
resources:
  Resources:
    Clicks:
      Type: AWS::Kinesis::Stream
      Properties:
        Name: ${{self:service}}-clicks
        ShardCount: 1
    ReaderDLQ:
      Type: AWS::SQS::Queue
      Properties:
        QueueName: ${{self:service}}-reader-dlq
"""

KINESIS_READER = """
from lambda_kit import stream_handler
from toy_state import recorded
seen = recorded(__name__, "seen")

@stream_handler
def handler(payload, context):
    seen.append(payload["n"])
    if payload["n"] == 2:
        raise ValueError("record 2 always fails")
"""


def test_kinesis_checkpoints_at_the_first_failure_then_discards_it(tmp_path, aws_endpoint, unique_name):
    service = unique_name("kinesis")
    config = KINESIS_CONFIG.format(service=service, module="kinesis_reader")
    with toy_stack(tmp_path, config, {"kinesis_reader": KINESIS_READER}, aws_endpoint.url) as stack:
        kinesis = stack.clients("kinesis")
        for n in range(4):
            kinesis.put_record(
                StreamName=stack.resources.by_id["Clicks"].attributes["Ref"],
                Data=json.dumps({"n": n}).encode(),
                PartitionKey="p",
            )
        wait_for(lambda: stack.journal.events("stream.discarded"))
        assert stack.wait_drained(20)
        # 0 and 1 once; 2 on the first try and on one retry from the checkpoint (the decorator
        # stops at the failed record, so 3 is never reached); then the rest of the batch from the
        # checkpoint (2 and 3) is discarded to the destination, as Lambda does.
        assert module_of(stack, "reader").seen == [0, 1, 2, 2]
        [message] = stack.receive_all("ReaderDLQ")
        info = json.loads(message["Body"])["KinesisBatchInfo"]
        assert info["shardId"].startswith("shardId-") and info["batchSize"] == 2


def test_concurrent_puts_on_a_kinesis_stream_are_all_kept(aws_endpoint, unique_name, monkeypatch):
    """moto's Kinesis shard numbers records unsafely under concurrency (two PutRecord at once
    can take one sequence number, one record overwriting the other): the embedded endpoint runs
    Kinesis requests one at a time, so every record of racing producers is there, once. The
    race window (between reading the shard's last number and storing the record) is widened
    here so that without the lock the race is all but certain."""
    from concurrent.futures import ThreadPoolExecutor

    import boto3
    from moto.kinesis.models import Shard

    last_number = Shard.get_max_sequence_number

    def slowly(self):
        number = last_number(self)
        time.sleep(0.005)
        return number

    monkeypatch.setattr(Shard, "get_max_sequence_number", slowly)
    kinesis = boto3.client("kinesis", endpoint_url=aws_endpoint.url, region_name="us-east-1")
    stream = unique_name("racing")
    kinesis.create_stream(StreamName=stream, ShardCount=1)
    wait_for(
        lambda: (
            kinesis.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]["StreamStatus"]
            == "ACTIVE"
        )
    )

    def produce(producer: int) -> list[str]:
        client = boto3.client("kinesis", endpoint_url=aws_endpoint.url, region_name="us-east-1")
        return [
            client.put_record(StreamName=stream, Data=f"{producer}-{n}".encode(), PartitionKey="k")[
                "SequenceNumber"
            ]
            for n in range(10)
        ]

    with ThreadPoolExecutor(8) as pool:
        sequences = [s for produced in pool.map(produce, range(8)) for s in produced]
    shard = kinesis.list_shards(StreamName=stream)["Shards"][0]["ShardId"]
    iterator = kinesis.get_shard_iterator(StreamName=stream, ShardId=shard, ShardIteratorType="TRIM_HORIZON")[
        "ShardIterator"
    ]
    page = kinesis.get_records(ShardIterator=iterator, Limit=1000)
    assert len(set(sequences)) == 80
    assert sorted(r["Data"] for r in page["Records"]) == sorted(
        f"{p}-{n}".encode() for p in range(8) for n in range(10)
    )
