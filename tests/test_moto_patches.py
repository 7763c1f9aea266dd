"""moto's SQS with ``fast_requests`` (``lambda_kit/local/endpoint.py``) answers as moto did: delays,
visibility and the retention period still decide what a receive returns and what the queue counts."""

from __future__ import annotations

import time

import boto3


def _queue(unique_name, **attributes):
    sqs = boto3.client("sqs")
    url = sqs.create_queue(
        QueueName=unique_name("patched"), Attributes={k: str(v) for k, v in attributes.items()}
    )["QueueUrl"]
    return sqs, url


def _counts(sqs, url):
    names = [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
    ]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
    return tuple(int(attributes[name]) for name in names)


def test_delayed_and_invisible_messages_are_neither_received_nor_counted_as_visible(
    aws_endpoint, unique_name
):
    sqs, url = _queue(unique_name)
    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=1)
    sqs.send_message(QueueUrl=url, MessageBody="now")
    assert _counts(sqs, url) == (1, 0, 1)
    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=1)["Messages"]
    assert [m["Body"] for m in received] == ["now"]
    assert _counts(sqs, url) == (0, 1, 1)
    assert "Messages" not in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
    time.sleep(1.2)
    again = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30)["Messages"]
    assert sorted(m["Body"] for m in again) == ["later", "now"]
    assert _counts(sqs, url) == (0, 2, 0)


def test_a_message_past_the_retention_period_is_not_received(aws_endpoint, unique_name):
    from moto.sqs.models import sqs_backends

    sqs, url = _queue(unique_name, MessageRetentionPeriod=60)
    sqs.send_message(QueueUrl=url, MessageBody="old")
    sqs.send_message(QueueUrl=url, MessageBody="fresh")
    queue = sqs_backends["123456789012"]["us-east-1"].get_queue(url.rsplit("/", 1)[-1])
    old = next(m for m in queue._messages if m.body == "old")
    old.sent_timestamp -= 61_000  # sent 61 s earlier than it was: past the 60 s retention
    bodies = [
        m["Body"] for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    ]
    assert "old" not in bodies


def test_a_send_does_not_walk_the_queue_and_a_fifo_queue_still_deduplicates_by_content(
    aws_endpoint, unique_name, monkeypatch
):
    from moto.sqs.models import Queue

    sqs, url = _queue(unique_name)
    for n in range(3):
        sqs.send_message(QueueUrl=url, MessageBody=f"backlog {n}")
    walks = []
    for name in (
        "approximate_number_of_messages",
        "approximate_number_of_messages_not_visible",
        "approximate_number_of_messages_delayed",
    ):
        original = getattr(Queue, name)
        monkeypatch.setattr(
            Queue, name, property(lambda self, _o=original, _n=name: walks.append(_n) or _o.fget(self))
        )
    sqs.send_message(QueueUrl=url, MessageBody="one more")
    sqs.send_message_batch(
        QueueUrl=url, Entries=[{"Id": "a", "MessageBody": "x"}, {"Id": "b", "MessageBody": "y"}]
    )
    assert walks == []
    assert _counts(sqs, url) == (6, 0, 0)  # a read of the attributes still counts them
    assert walks

    fifo = sqs.create_queue(
        QueueName=unique_name("patched") + ".fifo",
        Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"},
    )["QueueUrl"]
    for _ in range(2):
        sqs.send_message(QueueUrl=fifo, MessageBody="same", MessageGroupId="g")
    sqs.send_message(QueueUrl=fifo, MessageBody="other", MessageGroupId="g")
    assert [m["Body"] for m in sqs.receive_message(QueueUrl=fifo, MaxNumberOfMessages=10)["Messages"]] == [
        "same",
        "other",
    ]
    explicit = sqs.create_queue(
        QueueName=unique_name("explicit") + ".fifo", Attributes={"FifoQueue": "true"}
    )["QueueUrl"]
    try:
        sqs.send_message(QueueUrl=explicit, MessageBody="no id", MessageGroupId="g")
    except sqs.exceptions.ClientError as error:
        assert "ContentBasedDeduplication" in str(error) or "deduplication" in str(error).lower()
    else:
        raise AssertionError(
            "a FIFO queue without content-based deduplication took a message with no deduplication id"
        )


def test_a_delete_removes_only_its_message_by_any_of_its_receipt_handles(aws_endpoint, unique_name):
    from moto.sqs.models import sqs_backends

    sqs, url = _queue(unique_name)
    for n in range(4):
        sqs.send_message(QueueUrl=url, MessageBody=f"m{n}")
    first = {
        m["Body"]: m["ReceiptHandle"]
        for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=1)["Messages"]
    }
    assert sorted(first) == ["m0", "m1", "m2", "m3"]
    time.sleep(1.2)
    second = {
        m["Body"]: m["ReceiptHandle"]
        for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30)["Messages"]
    }
    result = sqs.delete_message_batch(
        QueueUrl=url,
        Entries=[
            {"Id": "current", "ReceiptHandle": second["m2"]},
            {
                "Id": "older",
                "ReceiptHandle": first["m0"],
            },  # a receipt handle of an earlier receive still deletes it
            {"Id": "unknown", "ReceiptHandle": "not-a-receipt-handle"},
        ],
    )
    assert sorted(entry["Id"] for entry in result["Successful"]) == ["current", "older"]
    assert [(entry["Id"], entry["Code"]) for entry in result["Failed"]] == [
        ("unknown", "ReceiptHandleIsInvalid")
    ]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=first["m2"])  # already deleted: accepted again
    queue = sqs_backends["123456789012"]["us-east-1"].get_queue(url.rsplit("/", 1)[-1])
    assert [m.body for m in queue._messages] == ["m1", "m3"]  # the others stay, in order
    assert sorted(m.body for m in queue.pending_messages) == ["m1", "m3"]
    assert _counts(sqs, url) == (0, 2, 0)


def test_each_service_still_finds_its_own_actions_and_refuses_unknown_ones(aws_endpoint, unique_name):
    sqs, url = _queue(unique_name)
    sns = boto3.client("sns")
    kinesis = boto3.client("kinesis")
    for _ in range(2):  # the second round answers from the names listed in the first
        assert sqs.get_queue_url(QueueName=url.rsplit("/", 1)[-1])["QueueUrl"] == url
        topic = sns.create_topic(Name=unique_name("patched"))["TopicArn"]
        assert sns.publish(TopicArn=topic, Message="hello")["MessageId"]
        assert "StreamNames" in kinesis.list_streams()
    response = _post_form(aws_endpoint.url, {"Action": "NoSuchAction", "Version": "2012-11-05"})
    assert response[0] >= 400, response


def _post_form(url, form):
    import urllib.error
    import urllib.parse
    import urllib.request

    request = urllib.request.Request(
        url + "/",
        data=urllib.parse.urlencode(form).encode(),
        method="POST",
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "Authorization": "AWS4-HMAC-SHA256 Credential=testing/20240101/us-east-1/sqs/aws4_request,"
            " SignedHeaders=host, Signature=x",
        },
    )
    try:
        with urllib.request.urlopen(request) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
