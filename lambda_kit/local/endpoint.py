"""The embedded AWS endpoint: moto's server on 127.0.0.1, on a free port, in the process that
starts it (the tests' session endpoint) or in one of its own (``moto_process.py``: the stack's).

moto serves SQS, SNS, Kinesis and the rest; DynamoDB and DynamoDB Streams are served by AWS's
DynamoDB Local (``dynamodb_local.py``) wherever it can run, and by moto only where it cannot
(``Endpoint(dynamodb=True)``). The DynamoDB patches below serve only moto's DynamoDB: DynamoDB
Local needs neither a lock nor a patch.

moto does not isolate concurrent DynamoDB transactions (a cancelled one restores a table
snapshot and can erase another request's write), while DynamoDB's are serializable. Wherever
several threads write at once we therefore serialize the server's DynamoDB (and DynamoDB Streams)
requests with one lock, so what we observe is our code's behaviour, not moto's.

moto also snapshots every table a transaction touches with a deep copy (items AND the stream's
whole history), so each transaction gets slower as the table and its stream grow: 30 ms at first,
300 ms after 800 transactions. ``fast_transactions`` replaces the snapshot with a copy of just
the items the transaction names plus the stream's length, restored the same way on cancellation
(same results, constant cost; it relies on the lock above, which it therefore also installs).

moto's SQS queues are not thread-safe either: ``DeleteMessage`` rebuilds a queue's message list
while ``SendMessage`` (and SNS delivering to a queue) appends to it, so a message sent at that
moment is lost; two receives redriving the same message to its DLQ answer 500, hiding the rest of
that receive for the visibility timeout. moto's Kinesis shards are not either ("not safe for
concurrency", its ``put_record`` says): two ``PutRecord`` at once can take the same sequence number,
and one record overwrites the other, lost before any reader sees it (the soak lost a view that
way). ``serialize_queues`` runs moto's SQS, SNS and Kinesis requests one at a time (a long poll
waits with the lock released), and EventBridge's and S3's too: their ``PutEvents`` and object
writes deliver to queues in-process (rules' targets, bucket notifications).

Some of moto's costs grow with the load rather than with the work, and ``fast_requests`` removes
them (same answers): for every message a receive returns, moto checks the retention period by
building all of the queue's attributes three times, each counting every message in the queue
(a receive of 10 from a queue holding 1,000 messages walked 30,000 of them, holding the queue
lock that ``SendMessage`` waits on), and every message it walks asks the clock through two
datetime conversions; it also finds the service of every request by listing its own package
folder on disk and trying hundreds of URL patterns, under one lock. The retention check now reads
the queue's retention period, a message compares its times with ``time.time()``, and the service
lookup is remembered per host. Every request also listed its handler class's methods with
``inspect.getmembers`` (now once per class), and a delete walked the whole queue twice per receipt
handle (now one walk that stops at the message).
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import threading
from typing import Any

_dynamodb_lock = threading.RLock()
_serialized = False


def serialize_dynamodb() -> None:
    """Run moto's DynamoDB and DynamoDB Streams request handlers one at a time (idempotent)."""
    global _serialized
    if _serialized:
        return
    from moto.dynamodb.responses import DynamoHandler
    from moto.dynamodbstreams.responses import DynamoDBStreamsHandler

    for handler in (DynamoHandler, DynamoDBStreamsHandler):
        original = handler.call_action

        @functools.wraps(original)
        def locked(self: Any, _original: Any = original) -> Any:
            with _dynamodb_lock:
                return _original(self)

        handler.call_action = locked  # type: ignore[method-assign]
    _serialized = True


_queues_lock = threading.Lock()
_queues_held = threading.local()
_queues_serialized = False


def serialize_queues() -> None:
    """Run moto's SQS, SNS, Kinesis, EventBridge and S3 request handlers one at a time
    (idempotent); a long poll (``WaitTimeSeconds``) releases the lock while it waits for messages."""
    global _queues_serialized
    if _queues_serialized:
        return
    from moto.events.responses import EventsHandler
    from moto.kinesis.responses import KinesisResponse
    from moto.s3.responses import S3Response
    from moto.sns.responses import SNSResponse
    from moto.sqs.models import Queue
    from moto.sqs.responses import SQSResponse

    handlers = [(SQSResponse, "call_action"), (SNSResponse, "call_action"), (KinesisResponse, "call_action"), (EventsHandler, "call_action")]
    handlers += [(S3Response, "_bucket_response"), (S3Response, "_key_response")]
    for handler, method in handlers:
        original = getattr(handler, method)

        @functools.wraps(original)
        def locked(self: Any, *args: Any, _original: Any = original) -> Any:
            if getattr(_queues_held, "depth", 0):
                return _original(self, *args)
            with _queues_lock:
                _queues_held.depth = 1
                try:
                    return _original(self, *args)
                finally:
                    _queues_held.depth = 0

        setattr(handler, method, locked)

    wait = Queue.wait_for_messages

    @functools.wraps(wait)
    def wait_unlocked(self: Any, timeout: int) -> None:
        if not getattr(_queues_held, "depth", 0):
            return wait(self, timeout)
        _queues_lock.release()
        try:
            return wait(self, timeout)
        finally:
            _queues_lock.acquire()

    Queue.wait_for_messages = wait_unlocked  # type: ignore[method-assign]
    _queues_serialized = True


_fast_requests = False


def fast_requests() -> None:
    """Make moto's SQS send, receive and its per-request service lookup cost O(1) (idempotent)."""
    global _fast_requests
    if _fast_requests:
        return
    import time

    from moto.moto_server.werkzeug_app import DomainDispatcherApplication
    from moto.sqs.exceptions import ReceiptHandleIsInvalid
    from moto.sqs.models import Message, Queue, SQSBackend

    def is_message_valid_based_on_retention_period(self: SQSBackend, queue_name: str, message: Message) -> bool:
        retention = self.get_queue(queue_name).message_retention_period
        return int(retention) + message.sent_timestamp / 1000 > time.time()  # type: ignore[operator]

    SQSBackend.is_message_valid_based_on_retention_period = is_message_valid_based_on_retention_period  # type: ignore[method-assign]
    Message.visible = property(lambda self: time.time() * 1000 > self.visible_at)  # type: ignore[method-assign,assignment]
    Message.delayed = property(lambda self: time.time() * 1000 < self.delayed_until)  # type: ignore[method-assign,assignment]

    # A send reads one queue attribute, ContentBasedDeduplication, through ``Queue.attributes``,
    # which builds every attribute: three walks over all of the queue's messages, under the lock
    # every other SQS request waits on, so a send cost more the longer the queue's backlog.
    all_attributes = Queue.attributes.fget
    sending = threading.local()

    def attributes(self: Queue) -> dict[str, Any]:
        if getattr(sending, "depth", 0):  # what moto's own reads: ContentBasedDeduplication of a FIFO queue
            return {"ContentBasedDeduplication": str(self.content_based_deduplication).lower()} if self.fifo_queue else {}
        return all_attributes(self)  # type: ignore[no-any-return]

    send = SQSBackend.send_message

    @functools.wraps(send)
    def send_message(self: SQSBackend, *args: Any, **kwargs: Any) -> Any:
        sending.depth = getattr(sending, "depth", 0) + 1
        try:
            return send(self, *args, **kwargs)
        finally:
            sending.depth -= 1

    Queue.attributes = property(attributes)  # type: ignore[method-assign,assignment]
    SQSBackend.send_message = send_message  # type: ignore[method-assign]

    lookup = DomainDispatcherApplication.get_backend_for_host
    known: dict[str | None, Any] = {}

    @functools.wraps(lookup)
    def get_backend_for_host(self: DomainDispatcherApplication, host: str | None) -> Any:
        if host not in known:
            known[host] = lookup(self, host)
        return known[host]

    DomainDispatcherApplication.get_backend_for_host = get_backend_for_host  # type: ignore[method-assign]

    # Every request asked ``inspect.getmembers`` for the names of its handler class's methods
    # (hundreds of attributes, each looked up and tested) to check that the action is one of them.
    # The classes do not change while the server runs: their names are listed once per class.
    import moto.core.responses as core_responses

    list_methods = core_responses.method_names_from_class
    methods: dict[type, list[str]] = {}

    @functools.wraps(list_methods)
    def method_names_from_class(clazz: type) -> list[str]:
        if clazz not in methods:
            methods[clazz] = list_methods(clazz)
        return methods[clazz]

    core_responses.method_names_from_class = method_names_from_class  # type: ignore[assignment]

    # A delete walked every message of the queue twice per receipt handle (a batch of 10 deletes:
    # 20 walks), building each message's list of receipt handles on the way, under the queue lock.
    # One walk now finds the message and removes it: same errors, same bookkeeping.
    def had_receipt_handle(self: Message, receipt_handle: str) -> bool:
        return receipt_handle == self.receipt_handle or receipt_handle in self._old_receipt_handles

    def delete_message(self: Queue, receipt_handle: str) -> None:
        if receipt_handle in self.deleted_messages:
            return  # already deleted: moto (and SQS) accept it again
        for index, message in enumerate(self._messages):
            if message.had_receipt_handle(receipt_handle):
                self.pending_messages.discard(message)
                self.deleted_messages.update(message.all_receipt_handles)
                del self._messages[index]
                return
        raise ReceiptHandleIsInvalid()

    Message.had_receipt_handle = had_receipt_handle  # type: ignore[method-assign]
    Queue.delete_message = delete_message  # type: ignore[method-assign]
    _fast_requests = True


_fast = False


def fast_transactions() -> None:
    """Make moto's TransactWriteItems snapshot only the items it names (idempotent)."""
    global _fast
    if _fast:
        return
    serialize_dynamodb()
    import copy

    import moto.dynamodb.models as models
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.table import Table

    original = models.DynamoDBBackend.transact_write_items

    class _SharingTables:
        """``copy`` for moto's transaction code: tables are "copied" as themselves."""

        @staticmethod
        def deepcopy(value: Any, memo: Any = None) -> Any:
            return value if isinstance(value, Table) else copy.deepcopy(value, memo)

    _SharingTables.copy = staticmethod(copy.copy)  # type: ignore[attr-defined]

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> Any:
        saved: list[tuple[Any, Any, Any, Any]] = []
        shards: dict[int, tuple[Any, int]] = {}
        for entry in transact_items:
            if not isinstance(entry, dict) or len(entry) != 1:
                continue
            op = next(iter(entry.values()))
            table = self.tables.get(op.get("TableName")) if isinstance(op, dict) else None
            attributes = (op.get("Item") if "Item" in op else op.get("Key")) if table is not None else None
            if not isinstance(attributes, dict) or table.hash_key_attr not in attributes:
                continue
            try:
                hash_value = DynamoType(attributes[table.hash_key_attr])
                range_value = DynamoType(attributes[table.range_key_attr]) if table.range_key_attr else None
                item = table.get_item(hash_value, range_value)
            except Exception:  # malformed key: the transaction itself will say so
                continue
            saved.append((table, hash_value, range_value, copy.deepcopy(item)))
            shard = table.stream_shard
            if shard is not None and id(shard) not in shards:
                shards[id(shard)] = (shard, len(shard.items))
        models.copy = _SharingTables  # type: ignore[assignment]
        try:
            return original(self, transact_items)
        except Exception:
            for table, hash_value, range_value, item in reversed(saved):
                if range_value is not None:
                    bucket = table.items[hash_value]
                    if item is None:
                        bucket.pop(range_value, None)
                        if not bucket:
                            table.items.pop(hash_value, None)
                    else:
                        bucket[range_value] = item
                elif item is None:
                    table.items.pop(hash_value, None)
                else:
                    table.items[hash_value] = item
            for shard, length in shards.values():
                del shard.items[length:]
            raise
        finally:
            models.copy = copy  # type: ignore[assignment]

    models.DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
    _fast = True


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


class Endpoint:
    """moto's server on loopback. ``url`` is what boto3's ``endpoint_url`` / ``AWS_ENDPOINT_URL`` take.

    ``dynamodb``: whether moto's DynamoDB will be used (then its transactions are made isolated and
    fast, see above); False when DynamoDB Local serves DynamoDB.

    moto's WSGI application is served by waitress, not by moto's own werkzeug server: werkzeug's
    development server closes the connection after every response, so each boto3 call opened a
    TCP connection and a server thread (15-20 ms a call under load); waitress keeps connections
    alive and answers from a pool of ``THREADS`` threads (a long poll holds one while it waits).
    Like werkzeug, it drops request headers with an underscore in their name.
    """

    THREADS = 32

    def __init__(self, port: int = 0, host: str = "127.0.0.1", *, dynamodb: bool = True) -> None:
        import waitress
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

        if dynamodb:
            fast_transactions()
        serialize_queues()
        fast_requests()
        logging.getLogger("waitress").setLevel(logging.ERROR)
        self._server = waitress.create_server(
            DomainDispatcherApplication(create_backend_app),
            host=host,
            port=port,
            threads=self.THREADS,
            backlog=1024,
            connection_limit=1000,
            asyncore_use_poll=True,
            ident="moto",
        )
        self.url = ""
        self._thread: threading.Thread | None = None

    def start(self) -> Endpoint:
        self._thread = threading.Thread(target=self._server.run, name="moto", daemon=True)
        self._thread.start()
        self.url = f"http://{self._server.effective_host}:{self._server.effective_port}"
        return self

    def stop(self) -> None:
        self._server.task_dispatcher.shutdown()
        self._server.close()

    def reset(self) -> None:
        """Forget every resource (moto's ``/moto-api/reset``)."""
        import urllib.request

        urllib.request.urlopen(urllib.request.Request(f"{self.url}/moto-api/reset", method="POST")).read()

    def __enter__(self) -> Endpoint:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def aws_environment(url: str, region: str = "us-east-1", dynamodb_url: str | None = None) -> dict[str, str]:
    """Environment variables that point boto3 (and the handlers) at ``url`` with dummy credentials,
    DynamoDB and DynamoDB Streams at ``dynamodb_url`` (default: ``url`` too)."""
    return {
        "AWS_ENDPOINT_URL": url,
        "AWS_ENDPOINT_URL_DYNAMODB": dynamodb_url or url,
        "AWS_ENDPOINT_URL_DYNAMODB_STREAMS": dynamodb_url or url,
        "AWS_ACCESS_KEY_ID": os.environ.get("AWS_ACCESS_KEY_ID", "testing"),
        "AWS_SECRET_ACCESS_KEY": os.environ.get("AWS_SECRET_ACCESS_KEY", "testing"),
        "AWS_DEFAULT_REGION": region,
        "AWS_REGION": region,
    }
