"""The view-stats service end to end on moto's server: the handlers run through their decorators on
events built from what the services really return (SQS messages, DynamoDB stream records, SNS
notifications delivered to an SQS subscription, Kinesis records), converted to Lambda's shapes."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from _logs import read_lines

from handlers import aggregator, clickstream, counter, ingest, milestones
from handlers.aggregates import DISTINCT_ARTICLES, SITE_VIEWS, last_days, milestones_crossed, site_day_key
from handlers.views import InvalidView, article_key, day_key, parse_view
from lambda_kit.counters import Counter
from lambda_kit.testing import api_event, lambda_context, sns_event

REGION = "us-east-1"


def now_iso(minutes_ago: int = 0) -> str:
    return (datetime.now(UTC) - timedelta(minutes=minutes_ago)).replace(microsecond=0).isoformat()


def view(url: str = "myblog.com/article1", client: str = "client-1", minutes_ago: int = 0) -> dict[str, str]:
    return {"url": url, "time": now_iso(minutes_ago), "clientId": client}


def body(response: dict[str, Any]) -> Any:
    return json.loads(response["body"])


# --- what the services return, in Lambda's event shapes ---------------------------------------


def queue_arn(sqs: Any, url: str) -> str:
    return sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


def receive_all(sqs: Any, url: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    while True:
        got = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"], AttributeNames=["All"]
        ).get("Messages", [])
        if not got:
            return messages
        messages.extend(got)
        sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)],
        )


def sqs_records(sqs: Any, url: str) -> list[dict[str, Any]]:
    """The queue's messages as Lambda's SQS records."""
    arn = queue_arn(sqs, url)
    return [
        {
            "messageId": m["MessageId"],
            "receiptHandle": m["ReceiptHandle"],
            "body": m["Body"],
            "attributes": m.get("Attributes", {}),
            "messageAttributes": {
                name: {
                    "stringValue": a.get("StringValue"),
                    "stringListValues": [],
                    "binaryListValues": [],
                    "dataType": a["DataType"],
                }
                for name, a in m.get("MessageAttributes", {}).items()
            },
            "md5OfBody": m["MD5OfBody"],
            "eventSource": "aws:sqs",
            "eventSourceARN": arn,
            "awsRegion": REGION,
        }
        for m in receive_all(sqs, url)
    ]


def sns_records(sqs: Any, url: str) -> list[dict[str, Any]]:
    """SNS notifications delivered to an SQS subscription (envelopes) as Lambda's SNS records."""
    records = []
    for m in receive_all(sqs, url):
        envelope = json.loads(m["Body"])
        records.append(
            {
                "EventSource": "aws:sns",
                "EventVersion": "1.0",
                "EventSubscriptionArn": envelope["TopicArn"] + ":subscription",
                "Sns": {
                    "Type": envelope["Type"],
                    "MessageId": envelope["MessageId"],
                    "TopicArn": envelope["TopicArn"],
                    "Subject": envelope.get("Subject"),
                    "Message": envelope["Message"],
                    "Timestamp": envelope["Timestamp"],
                    "SignatureVersion": envelope.get("SignatureVersion"),
                    "Signature": envelope.get("Signature"),
                    "MessageAttributes": envelope.get("MessageAttributes", {}),
                },
            }
        )
    return records


class TableStream:
    """New records of a table's DynamoDB stream, as Lambda's records. Iterators are taken afresh
    from TRIM_HORIZON on every read (moto invalidates them after a cancelled transaction)."""

    def __init__(self, dynamodb: Any, streams: Any, table: str) -> None:
        self.streams = streams
        self.arn = dynamodb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
        self.seen: set[str] = set()

    def new_records(self) -> list[dict[str, Any]]:
        found = []
        for shard in self.streams.describe_stream(StreamArn=self.arn)["StreamDescription"]["Shards"]:
            iterator = self.streams.get_shard_iterator(
                StreamArn=self.arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
            )["ShardIterator"]
            while iterator:
                page = self.streams.get_records(ShardIterator=iterator)
                if not page["Records"]:
                    break
                found.extend(page["Records"])
                iterator = page.get("NextShardIterator")
        fresh = [r for r in found if r["dynamodb"]["SequenceNumber"] not in self.seen]
        self.seen.update(r["dynamodb"]["SequenceNumber"] for r in fresh)
        return [self._lambda_shape(r) for r in fresh]

    def _lambda_shape(self, record: dict[str, Any]) -> dict[str, Any]:
        change = dict(record["dynamodb"])
        created = change.get("ApproximateCreationDateTime")
        if isinstance(created, datetime):
            change["ApproximateCreationDateTime"] = created.timestamp()
        return {
            "eventID": record["eventID"],
            "eventName": record["eventName"],
            "eventVersion": record.get("eventVersion", "1.1"),
            "eventSource": "aws:dynamodb",
            "awsRegion": REGION,
            "dynamodb": change,
            "eventSourceARN": self.arn,
        }


class KinesisStream:
    def __init__(self, kinesis: Any, name: str) -> None:
        self.kinesis, self.name = kinesis, name
        kinesis.create_stream(StreamName=name, ShardCount=1)
        self.arn = kinesis.describe_stream(StreamName=name)["StreamDescription"]["StreamARN"]
        self.seen: set[str] = set()

    def new_records(self) -> list[dict[str, Any]]:
        shard = self.kinesis.list_shards(StreamName=self.name)["Shards"][0]["ShardId"]
        iterator = self.kinesis.get_shard_iterator(
            StreamName=self.name, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        records = self.kinesis.get_records(ShardIterator=iterator, Limit=1000)["Records"]
        fresh = [r for r in records if r["SequenceNumber"] not in self.seen]
        self.seen.update(r["SequenceNumber"] for r in fresh)
        return [
            {
                "kinesis": {
                    "kinesisSchemaVersion": "1.0",
                    "partitionKey": r["PartitionKey"],
                    "sequenceNumber": r["SequenceNumber"],
                    "data": base64.b64encode(r["Data"]).decode(),
                    "approximateArrivalTimestamp": r["ApproximateArrivalTimestamp"].timestamp(),
                },
                "eventSource": "aws:kinesis",
                "eventVersion": "1.0",
                "eventID": f"{shard}:{r['SequenceNumber']}",
                "eventName": "aws:kinesis:record",
                "invokeIdentityArn": "arn:aws:iam::123456789012:role/clickstream",
                "awsRegion": REGION,
                "eventSourceARN": self.arn,
            }
            for r in fresh
        ]


def batches(records: list[dict[str, Any]], size: int = 100) -> list[dict[str, Any]]:
    return [{"Records": records[i : i + size]} for i in range(0, len(records), size)]


# --- the deployed service, on moto ------------------------------------------------------------


class Service:
    """The resources of serverless.yml on moto, and the event source mappings played by hand."""

    def __init__(self, table: str, unique_name: Any, monkeypatch: Any) -> None:
        import boto3

        self.table = table
        self.dynamodb = boto3.client("dynamodb")
        self.sqs = boto3.client("sqs")
        sns = boto3.client("sns")
        self.queue = self.sqs.create_queue(QueueName=unique_name("views"))["QueueUrl"]
        self.topic = sns.create_topic(Name=unique_name("milestones"))["TopicArn"]
        # Stands in for the milestones function's subscription: what SNS delivers, as SNS sends it.
        self.deliveries = self.sqs.create_queue(QueueName=unique_name("deliveries"))["QueueUrl"]
        sns.subscribe(TopicArn=self.topic, Protocol="sqs", Endpoint=queue_arn(self.sqs, self.deliveries))
        self.stream = TableStream(self.dynamodb, boto3.client("dynamodbstreams"), table)
        self.counter = Counter(table)
        monkeypatch.setenv("TABLE_NAME", table)
        monkeypatch.setenv("VIEWS_QUEUE_URL", self.queue)
        monkeypatch.setenv("MILESTONES_TOPIC_ARN", self.topic)

    def api(self, method: str, path: str, **options: Any) -> dict[str, Any]:
        return ingest.handler(api_event(method, path, **options), lambda_context("ingest"))

    def post(self, doc: Any, trace_id: str | None = None) -> dict[str, Any]:
        headers = {"X-Trace-Id": trace_id} if trace_id else {}
        response = self.api("POST", "/views", body=doc, headers=headers)
        assert response["statusCode"] == 202, response
        return response

    def settle(self) -> None:
        """Run the counter over the queue, then the aggregator over the table stream (everything
        on it, unfiltered: the code must ignore what the event filter would drop), then the
        milestones function over what SNS delivered, until nothing is left."""
        for event in batches(sqs_records(self.sqs, self.queue), 10):
            assert counter.handler(event, lambda_context("counter")) == {"batchItemFailures": []}
        while records := self.stream.new_records():
            for event in batches(records):
                assert aggregator.handler(event, lambda_context("aggregator")) == {"batchItemFailures": []}
        for record in sns_records(self.sqs, self.deliveries):
            milestones.handler({"Records": [record]}, lambda_context("milestones"))


@pytest.fixture
def service(aws_endpoint, counter_table, unique_name, monkeypatch):
    return Service(counter_table, unique_name, monkeypatch)


# --- the whole path ---------------------------------------------------------------------------


def test_one_trace_id_crosses_api_counter_aggregator_and_milestones(service, capfd):
    for i in range(9):
        service.post(view(client=f"reader-{i}"))
    service.settle()
    capfd.readouterr()

    accepted = body(service.post(view(client="reader-9"), trace_id="trace-T-10th"))
    assert accepted["accepted"] is True and accepted["trace_id"] == "trace-T-10th"
    service.settle()

    lines = read_lines(capfd)
    assert not [line for line in lines if line["level"] == "ERROR"]
    functions = {line["function_name"] for line in lines if line.get("trace_id") == "trace-T-10th"}
    # every hop, the milestone one included: the counter item's stream record carries the trace id
    # of the write that crossed the milestone (the counter stamps it on the item)
    assert {"ingest", "counter", "aggregator", "milestones"} <= functions
    [crossed] = [line for line in lines if line["message"] == "milestone crossed"]
    assert (crossed["url"], crossed["milestone"], crossed["views"]) == ("myblog.com/article1", 10, 10)
    assert crossed["trace_id"] == "trace-T-10th"
    assert {line["trace_id"] for line in lines if line["function_name"] == "milestones"} == {"trace-T-10th"}

    stats = body(service.api("GET", "/stats"))
    today = last_days(1)[0]
    assert stats["views"] == 10 and stats["articles"] == 1
    assert len(stats["daily"]) == 30 and stats["daily"][today] == 10 and sum(stats["daily"].values()) == 10
    [milestone] = stats["milestones"]
    assert (
        milestone["url"] == "myblog.com/article1"
        and milestone["milestone"] == 10
        and milestone["views"] == 10
    )


def test_get_views_reads_total_and_last_30_days(service):
    service.post(view(client="a"))
    service.post(view(client="b", minutes_ago=60 * 24 * 2))
    service.post(view(client="c", minutes_ago=60 * 24 * 40))  # counted, but older than the window
    service.post(view(url="myblog.com/other"))
    service.settle()

    stats = body(service.api("GET", "/views", query={"url": "myblog.com/article1"}))
    days = last_days()
    assert stats["url"] == "myblog.com/article1" and stats["views"] == 3
    assert list(stats["daily"]) == days
    assert (
        stats["daily"][days[-1]] == 1 and stats["daily"][days[-3]] == 1 and sum(stats["daily"].values()) == 2
    )

    unknown = body(service.api("GET", "/views", query={"url": "myblog.com/never"}))
    assert unknown["views"] == 0 and set(unknown["daily"].values()) == {0}
    site = body(service.api("GET", "/stats"))
    assert site["views"] == 4 and site["articles"] == 2 and sum(site["daily"].values()) == 3


# --- the counter ------------------------------------------------------------------------------


def test_a_poison_message_fails_alone_and_the_rest_of_the_batch_counts(service):
    good = [view(client=f"c{i}") for i in range(4)]
    for doc in good[:2]:
        service.post(doc)
    service.sqs.send_message(QueueUrl=service.queue, MessageBody=json.dumps({"url": "myblog.com/article1"}))
    service.sqs.send_message(QueueUrl=service.queue, MessageBody="not json")
    for doc in good[2:]:
        service.post(doc)
    records = sqs_records(service.sqs, service.queue)
    poison = {r["messageId"] for r in records if "clientId" not in r["body"]}

    response = counter.handler({"Records": records}, lambda_context("counter"))

    assert {f["itemIdentifier"] for f in response["batchItemFailures"]} == poison and len(poison) == 2
    assert service.counter.get(article_key("myblog.com/article1")) == 4


def test_the_counter_counts_a_whole_batch_in_two_transactions(service):
    from handlers import clients

    for i in range(60):  # 60 views x (article total + day bucket) = 120 markers, 3 articles, 1 day
        service.post(view(url=f"myblog.com/a{i % 3}", client=f"c{i}"))
    records = sqs_records(service.sqs, service.queue)
    sent: list[int] = []

    def count(params: dict[str, Any], **_: Any) -> None:
        sent.append(len(params["TransactItems"]))

    events = clients.counter().client.meta.events
    events.register("before-parameter-build.dynamodb.TransactWriteItems", count)
    try:
        response = counter.handler({"Records": records}, lambda_context("counter"))
    finally:
        events.unregister("before-parameter-build.dynamodb.TransactWriteItems", count)

    assert response == {"batchItemFailures": []}
    # one update per counter item per transaction: 6 items, plus one more for a group split
    # where the first transaction is full
    assert len(sent) == 2 and 120 + 6 <= sum(sent) <= 120 + 7
    assert sum(service.counter.get(article_key(f"myblog.com/a{i}")) for i in range(3)) == 60


@pytest.mark.parametrize("url_bytes", [2_020, 2_021, 2_025, 2_029, 2_030])
def test_every_url_the_api_accepts_is_one_the_counter_can_count(url_bytes):
    """The view validation and the counter share one key limit: a url the API answers 202 for
    never reaches a batch commit the counter refuses (which would fail every record with it)."""
    from lambda_kit.counters import InvalidKeyError, check_key

    url = "myblog.com/" + "x" * (url_bytes - len("myblog.com/"))
    doc = {"url": url, "time": "2022-03-28T13:17:23+00:00", "clientId": "c"}
    try:
        parsed = parse_view(doc)
    except InvalidView:
        with pytest.raises(InvalidKeyError):
            check_key(day_key(url, "2022-03-28"))
        return
    for key in (article_key(parsed.url), day_key(parsed.url, parsed.day)):
        assert check_key(key) == key


def test_a_record_whose_keys_the_counter_refuses_fails_alone_at_commit(service):
    """Defense in depth: even a key that got past validation costs only its own record."""
    from handlers.counting import count_views

    class Rec:
        def __init__(self, id: str) -> None:
            self.id, self.trace_id = id, f"t-{id}"

    good, bad = Rec("good"), Rec("bad")
    results = [
        (good, {"event_id": "e-good", "keys": [article_key("myblog.com/ok")]}),
        (bad, {"event_id": "e-bad", "keys": [article_key("myblog.com/" + "x" * 2_100)]}),
    ]
    assert count_views(results) == [bad]
    assert service.counter.get(article_key("myblog.com/ok")) == 1


def test_a_redelivered_message_is_counted_once(service):
    service.post(view())
    records = sqs_records(service.sqs, service.queue)
    for _ in range(2):
        assert counter.handler({"Records": records}, lambda_context("counter")) == {"batchItemFailures": []}
    today = last_days(1)[0]
    counts = service.counter.get_many(
        [article_key("myblog.com/article1"), day_key("myblog.com/article1", today)]
    )
    assert list(counts.values()) == [1, 1]


# --- the aggregator ---------------------------------------------------------------------------


def test_a_redelivered_stream_record_is_aggregated_once(service):
    for i in range(3):
        service.post(view(client=f"c{i}"))
    for event in batches(sqs_records(service.sqs, service.queue)):
        counter.handler(event, lambda_context("counter"))
    records = service.stream.new_records()

    for _ in range(2):  # the same batch delivered again (e.g. after a timeout)
        assert aggregator.handler({"Records": records}, lambda_context("aggregator")) == {
            "batchItemFailures": []
        }

    today = last_days(1)[0]
    counts = service.counter.get_many([SITE_VIEWS, DISTINCT_ARTICLES, site_day_key(today)])
    assert counts == {SITE_VIEWS: 3, DISTINCT_ARTICLES: 1, site_day_key(today): 3}


def test_the_aggregator_ignores_its_own_writes(service):
    service.post(view())
    service.settle()  # leaves the aggregator's AGG# markers and counters on the stream, read below
    before = service.counter.get_many([SITE_VIEWS, DISTINCT_ARTICLES])
    service.dynamodb.put_item(
        TableName=service.table, Item={"PK": {"S": "AGG#VIEWS"}, "SK": {"S": "EVENT#x"}}
    )
    service.dynamodb.put_item(TableName=service.table, Item={"PK": {"S": "MILESTONES"}, "SK": {"S": "a#10"}})
    records = service.stream.new_records()
    results = [aggregator.handler({"Records": [r]}, lambda_context("aggregator")) for r in records]
    assert results and all(r == {"batchItemFailures": []} for r in results)
    assert (
        service.counter.get_many([SITE_VIEWS, DISTINCT_ARTICLES])
        == before
        == {SITE_VIEWS: 1, DISTINCT_ARTICLES: 1}
    )


def test_milestones_are_the_ones_a_change_crosses():
    assert milestones_crossed(0, 9) == []
    assert milestones_crossed(9, 10) == [10]
    assert milestones_crossed(10, 11) == []
    assert milestones_crossed(8, 1200) == [10, 100, 1000]
    assert milestones_crossed(99, 100) == [100]


# --- milestones -------------------------------------------------------------------------------


def test_a_milestone_delivered_twice_is_recorded_once(service):
    event = sns_event({"url": "myblog.com/article1", "views": 100, "milestone": 100}, trace_id="trace-M")
    first = milestones.handler(event, lambda_context("milestones"))
    second = milestones.handler(event, lambda_context("milestones"))
    assert first is None and second is None  # SNS: nothing to report; a failure would raise

    items = service.dynamodb.query(
        TableName=service.table,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": "MILESTONES"}},
    )["Items"]
    assert [(i["SK"]["S"], i["trace_id"]["S"]) for i in items] == [("myblog.com/article1#100", "trace-M")]
    assert len(body(service.api("GET", "/stats"))["milestones"]) == 1


# --- clickstream ------------------------------------------------------------------------------


def test_clickstream_counts_like_the_queue_and_an_event_on_both_counts_once(
    service, unique_name, monkeypatch
):
    import boto3

    kinesis = boto3.client("kinesis")
    stream = KinesisStream(kinesis, unique_name("clickstream"))
    dlq = service.sqs.create_queue(QueueName=unique_name("clickstream-dlq"))["QueueUrl"]
    monkeypatch.setenv("CLICKSTREAM_DLQ_URL", dlq)
    both = view(client="both-ways")
    service.post(both)
    service.settle()
    # The same view, its time written with another offset, plus a new one and a broken one.
    same = {
        **both,
        "time": datetime.fromisoformat(both["time"]).astimezone(timezone(timedelta(hours=2))).isoformat(),
    }
    for doc in (
        same,
        view(client="kinesis-only"),
        {"url": "myblog.com/article1", "time": "yesterday", "clientId": "x"},
    ):
        kinesis.put_record(StreamName=stream.name, Data=json.dumps(doc).encode(), PartitionKey="p")

    assert clickstream.handler({"Records": stream.new_records()}, lambda_context("clickstream")) == {
        "batchItemFailures": []
    }
    assert service.counter.get(article_key("myblog.com/article1")) == 2

    for _ in range(2):  # the broken record comes back (requeued) until its last attempt
        requeued = stream.new_records()
        assert len(requeued) == 1
        clickstream.handler({"Records": requeued}, lambda_context("clickstream"))
    assert stream.new_records() == []
    [dead] = receive_all(service.sqs, dlq)
    assert json.loads(dead["Body"])["attempts"] == 3
    assert service.counter.get(article_key("myblog.com/article1")) == 2


# --- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "names"),
    [
        ({"time": "2022-03-28T13:17:23+00:00", "clientId": "c"}, "url is missing"),
        ({"url": "  ", "time": "2022-03-28T13:17:23+00:00", "clientId": "c"}, "url is blank"),
        (
            {"url": "a/" + "x" * 2047, "time": "2022-03-28T13:17:23+00:00", "clientId": "c"},
            "url is longer than 2,048",
        ),
        ({"url": "a", "time": "28/03/2022", "clientId": "c"}, "time must be an ISO 8601"),
        ({"url": "a", "time": "2022-03-28", "clientId": "c"}, "time must be an ISO 8601"),
        ({"url": "a", "time": 1648473443, "clientId": "c"}, "time must be a string"),
        ({"url": "a", "time": "2022-03-28T13:17:23+00:00"}, "clientId is missing"),
        ({"url": "a", "time": "2022-03-28T13:17:23+00:00", "clientId": ""}, "clientId is blank"),
        (["not", "an", "object"], "must be a JSON object"),
    ],
)
def test_post_views_rejects_what_is_not_a_view_event_naming_the_field(doc, names):
    response = ingest.handler(api_event("POST", "/views", body=doc), lambda_context("ingest"))
    assert response["statusCode"] == 400
    assert names in body(response)["error"]


def test_the_api_answers_400_404_and_405_without_touching_aws():
    context = lambda_context("ingest")
    assert ingest.handler(api_event("POST", "/views", body="{not json"), context)["statusCode"] == 400
    missing = ingest.handler(api_event("GET", "/views"), context)
    assert missing["statusCode"] == 400 and "url" in body(missing)["error"]
    assert ingest.handler(api_event("GET", "/nowhere"), context)["statusCode"] == 404
    assert ingest.handler(api_event("DELETE", "/stats"), context)["statusCode"] == 405


def test_the_event_id_is_the_normalized_triple():
    base = parse_view({"url": "myblog.com/a", "time": "2022-03-28T13:17:23+00:00", "clientId": "c"})
    same = [
        {"url": " myblog.com/a#comments ", "time": "2022-03-28T15:17:23+02:00", "clientId": "c "},
        {"url": "myblog.com/a", "time": "2022-03-28T13:17:23Z", "clientId": "c"},
        {"url": "myblog.com/a", "time": "2022-03-28T13:17:23", "clientId": "c"},
    ]
    assert {parse_view(doc).event_id for doc in same} == {base.event_id}
    assert parse_view({**base.to_json(), "clientId": "d"}).event_id != base.event_id
    assert base.to_json()["time"] == "2022-03-28T13:17:23+00:00"
    with pytest.raises(InvalidView) as error:
        parse_view({"url": "a", "time": "2022-03-28T13:17:23Z", "clientId": "c\nd"})
    assert error.value.field == "clientId"
