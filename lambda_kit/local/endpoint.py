"""The embedded AWS endpoint: moto's server on 127.0.0.1, on a free port, in the process that
starts it (the tests' session endpoint) or in one of its own (``moto_process.py``, which runs
:func:`main`: the stack's).

moto serves SQS, SNS, Kinesis, EventBridge, S3 and the rest; DynamoDB and DynamoDB Streams are
served by AWS's DynamoDB Local (``dynamodb_local.py``) wherever it can run, and by moto only where
it cannot (``Endpoint(dynamodb=True)``). moto's application is served by waitress (``_wsgi.py``),
not by moto's own werkzeug server, which closes the connection after every response (each boto3
call opened a TCP connection and a server thread: 15-20 ms a call under load).

moto is patched where it is not safe under concurrent requests or where its cost grows with the
load rather than with the work. Each patch below says what it works around; docs/local-stack.md
lists them all ("moto, patched"), and tests/test_moto_patches.py checks that moto answers as it
did. They are written against moto 5.2 (``pyproject.toml`` pins the range).
"""

from __future__ import annotations

import copy
import functools
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import moto.core.responses as core_responses
import moto.dynamodb.models as dynamodb_models
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
from moto.dynamodb.responses import DynamoHandler
from moto.dynamodbstreams.responses import DynamoDBStreamsHandler
from moto.events.responses import EventsHandler
from moto.kinesis.responses import KinesisResponse
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from moto.s3.responses import S3Response
from moto.sns.responses import SNSResponse
from moto.sqs.exceptions import ReceiptHandleIsInvalid
from moto.sqs.models import Message, Queue, SQSBackend
from moto.sqs.responses import SQSResponse

from ._wsgi import WsgiServer

Method = Callable[..., Any]

# --- DynamoDB, one request at a time ----------------------------------------------------------------
# moto does not isolate concurrent transactions: a cancelled one restores a snapshot of the table
# and can erase another request's write, where DynamoDB's transactions are serializable.

_dynamodb_lock = threading.RLock()


def _under(lock: threading.RLock, original: Method) -> Method:
    @functools.wraps(original)
    def locked(self: Any, *args: Any) -> Any:
        with lock:
            return original(self, *args)

    return locked


@functools.cache
def serialize_dynamodb() -> None:
    """Run moto's DynamoDB and DynamoDB Streams request handlers one at a time (idempotent)."""
    for handler in (DynamoHandler, DynamoDBStreamsHandler):
        handler.call_action = _under(_dynamodb_lock, handler.call_action)


# --- SQS, SNS, Kinesis, EventBridge and S3, one request at a time -----------------------------------
# moto's queues are not thread-safe: DeleteMessage rebuilds a queue's message list while
# SendMessage (and SNS delivering to a queue) appends to it, so a message sent at that moment is
# lost; two receives redriving one message to its DLQ answer 500. Two PutRecord on one Kinesis
# shard can take the same sequence number, one record overwriting the other. EventBridge's
# PutEvents and S3's object writes deliver to queues in-process. A long poll waits with the lock
# released.

_queues_lock = threading.Lock()
_queues_held = threading.local()
QUEUE_HANDLERS = (
    (SQSResponse, "call_action"),
    (SNSResponse, "call_action"),
    (KinesisResponse, "call_action"),
    (EventsHandler, "call_action"),
    (S3Response, "_bucket_response"),
    (S3Response, "_key_response"),
)


def _holding() -> bool:
    return bool(getattr(_queues_held, "depth", 0))


def _one_at_a_time(original: Method) -> Method:
    @functools.wraps(original)
    def locked(self: Any, *args: Any) -> Any:
        if _holding():  # a handler calling another: the lock is ours already
            return original(self, *args)
        with _queues_lock:
            _queues_held.depth = 1
            try:
                return original(self, *args)
            finally:
                _queues_held.depth = 0

    return locked


def _waiting_unlocked(wait: Method) -> Method:
    @functools.wraps(wait)
    def wait_for_messages(self: Queue, timeout: int) -> None:
        if not _holding():
            return wait(self, timeout)  # type: ignore[no-any-return]
        _queues_lock.release()
        try:
            return wait(self, timeout)  # type: ignore[no-any-return]
        finally:
            _queues_lock.acquire()

    return wait_for_messages


@functools.cache
def serialize_queues() -> None:
    """Run moto's SQS, SNS, Kinesis, EventBridge and S3 request handlers one at a time
    (idempotent); a long poll (``WaitTimeSeconds``) releases the lock while it waits for messages."""
    for handler, method in QUEUE_HANDLERS:
        setattr(handler, method, _one_at_a_time(getattr(handler, method)))
    Queue.wait_for_messages = _waiting_unlocked(Queue.wait_for_messages)  # type: ignore[method-assign]


# --- costs that grow with the load ----------------------------------------------------------------


def _within_retention(self: SQSBackend, queue_name: str, message: Message) -> bool:
    """moto built all of the queue's attributes three times (each walking every message) to read
    its retention period, for every message a receive returned."""
    retention = self.get_queue(queue_name).message_retention_period
    return int(retention) + message.sent_timestamp / 1000 > time.time()  # type: ignore[operator]


def _visible(self: Message) -> bool:
    """moto asked the clock through two datetime conversions for every message it walked."""
    return time.time() * 1000 > self.visible_at


def _delayed(self: Message) -> bool:
    return time.time() * 1000 < self.delayed_until


_sending = threading.local()


def _attributes_while_sending(all_attributes: Method) -> Method:
    """A send read one attribute, ContentBasedDeduplication, through ``Queue.attributes``, which
    builds every attribute: three walks over all of the queue's messages."""

    def attributes(self: Queue) -> dict[str, Any]:
        if getattr(_sending, "depth", 0):
            return (
                {"ContentBasedDeduplication": str(self.content_based_deduplication).lower()}
                if self.fifo_queue
                else {}
            )
        return all_attributes(self)  # type: ignore[no-any-return]

    return attributes


def _flagged_send(send: Method) -> Method:
    @functools.wraps(send)
    def send_message(self: SQSBackend, *args: Any, **kwargs: Any) -> Any:
        _sending.depth = getattr(_sending, "depth", 0) + 1
        try:
            return send(self, *args, **kwargs)
        finally:
            _sending.depth -= 1

    return send_message


def _had_receipt_handle(self: Message, receipt_handle: str) -> bool:
    """moto built the message's list of receipt handles to look one up."""
    return receipt_handle == self.receipt_handle or receipt_handle in self._old_receipt_handles


def _delete_message(self: Queue, receipt_handle: str) -> None:
    """moto walked every message of the queue twice per receipt handle: one walk now, that stops
    at the message (same errors, same bookkeeping)."""
    if receipt_handle in self.deleted_messages:
        return  # already deleted: moto (and SQS) accept it again
    for index, message in enumerate(self._messages):
        if message.had_receipt_handle(receipt_handle):
            self.pending_messages.discard(message)
            self.deleted_messages.update(message.all_receipt_handles)
            del self._messages[index]
            return
    raise ReceiptHandleIsInvalid()


@functools.cache
def fast_requests() -> None:
    """Make moto's SQS send, receive and delete, and its per-request lookups, cost O(1) (idempotent)."""
    SQSBackend.is_message_valid_based_on_retention_period = _within_retention  # type: ignore[method-assign]
    Message.visible = property(_visible)  # type: ignore[method-assign,assignment]
    Message.delayed = property(_delayed)  # type: ignore[method-assign,assignment]
    all_attributes = Queue.attributes.fget
    Queue.attributes = property(_attributes_while_sending(all_attributes))  # type: ignore[assignment]
    SQSBackend.send_message = _flagged_send(SQSBackend.send_message)  # type: ignore[method-assign]
    Message.had_receipt_handle = _had_receipt_handle  # type: ignore[method-assign]
    Queue.delete_message = _delete_message  # type: ignore[method-assign]
    # moto found the service of every request by listing its own package folder on disk and trying
    # hundreds of URL patterns, and listed the handler class's methods with inspect.getmembers to
    # check the action is one: neither changes while the server runs.
    DomainDispatcherApplication.get_backend_for_host = functools.cache(  # type: ignore[method-assign]
        DomainDispatcherApplication.get_backend_for_host
    )
    core_responses.method_names_from_class = functools.cache(core_responses.method_names_from_class)


# --- DynamoDB transactions that stay fast as tables grow ------------------------------------------
# moto snapshots every table a transaction touches with a deep copy (items AND the stream's whole
# history): 30 ms at first, 300 ms after 800 transactions. Instead, the items the transaction
# names are copied, and the stream's length; restored the same way on cancellation.

_transact_write_items = dynamodb_models.DynamoDBBackend.transact_write_items
Snapshot = tuple[Table, DynamoType, "DynamoType | None", Any]


class _SharingTables:
    """``copy`` for moto's transaction code: tables are "copied" as themselves."""

    copy = staticmethod(copy.copy)

    @staticmethod
    def deepcopy(value: Any, memo: Any = None) -> Any:
        return value if isinstance(value, Table) else copy.deepcopy(value, memo)


def _operation(entry: Any) -> dict[str, Any]:
    """A transaction entry's one operation (``{"Put": {...}}`` -> ``{...}``); {} if malformed."""
    op = next(iter(entry.values())) if isinstance(entry, dict) and len(entry) == 1 else None
    return op if isinstance(op, dict) else {}


def _snapshot(backend: Any, entry: Any) -> Snapshot | None:
    """The table, key and a copy of the item an entry names (None where moto will refuse the entry)."""
    op = _operation(entry)
    attributes = op.get("Item") if "Item" in op else op.get("Key")
    try:
        table = backend.tables.get(op.get("TableName"))
        hash_value = DynamoType(attributes[table.hash_key_attr])
        range_value = DynamoType(attributes[table.range_key_attr]) if table.range_key_attr else None
        item = table.get_item(hash_value, range_value)
    except Exception:  # no such table, or a malformed key: the transaction itself will say so
        return None
    return table, hash_value, range_value, copy.deepcopy(item)


def _put_back(items: dict[Any, Any], key: Any, item: Any) -> None:
    if item is None:
        items.pop(key, None)
    else:
        items[key] = item


def _restore(table: Table, hash_value: DynamoType, range_value: DynamoType | None, item: Any) -> None:
    if range_value is None:
        _put_back(table.items, hash_value, item)
        return
    bucket = table.items[hash_value]
    _put_back(bucket, range_value, item)
    if not bucket:
        table.items.pop(hash_value, None)


def _stream_lengths(saved: list[Snapshot]) -> list[tuple[Any, int]]:
    """The streams of the tables in ``saved``, each with how many records it holds."""
    shards = {
        id(table.stream_shard): table.stream_shard for table, *_ in saved if table.stream_shard is not None
    }
    return [(shard, len(shard.items)) for shard in shards.values()]


def _fast_transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> Any:
    saved = [found for found in (_snapshot(self, entry) for entry in transact_items) if found is not None]
    lengths = _stream_lengths(saved)
    dynamodb_models.copy = _SharingTables  # type: ignore[assignment]
    try:
        return _transact_write_items(self, transact_items)
    except Exception:
        for snapshot in reversed(saved):
            _restore(*snapshot)
        for shard, length in lengths:
            del shard.items[length:]
        raise
    finally:
        dynamodb_models.copy = copy  # type: ignore[assignment]


@functools.cache
def fast_transactions() -> None:
    """Make moto's TransactWriteItems snapshot only the items it names (idempotent); it relies on
    :func:`serialize_dynamodb`, which it therefore also installs."""
    serialize_dynamodb()
    backend = dynamodb_models.DynamoDBBackend
    backend.transact_write_items = _fast_transact_write_items  # type: ignore[method-assign]


# --- the server -----------------------------------------------------------------------------------


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server can listen on ``port``, binding as waitress does (``SO_REUSEADDR``): a port
    something listens on is taken; one a server just closed (its connections in TIME_WAIT) is free."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


class Endpoint:
    """moto's server on loopback. ``url`` is what boto3's ``endpoint_url`` / ``AWS_ENDPOINT_URL`` take.

    ``dynamodb``: whether moto's DynamoDB will be used (then its transactions are made isolated and
    fast, see above); False when DynamoDB Local serves DynamoDB. waitress keeps connections alive
    and answers from a pool of ``THREADS`` threads (a long poll holds one while it waits); like
    werkzeug, it drops request headers with an underscore in their name.
    """

    THREADS = 32

    def __init__(self, port: int = 0, host: str = "127.0.0.1", *, dynamodb: bool = True) -> None:
        if dynamodb:
            fast_transactions()
        serialize_queues()
        fast_requests()
        logging.getLogger("waitress").setLevel(logging.ERROR)
        app = DomainDispatcherApplication(create_backend_app)
        self._server = WsgiServer(app, host, port, name="moto", threads=self.THREADS)
        self.url = ""

    def start(self) -> Endpoint:
        self._server.start()
        self.url = self._server.url
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> Endpoint:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    """moto's server for a parent process (``moto_process.py``): prints its URL, then serves until
    its standard input closes (the parent closed it, or died)."""
    endpoint = Endpoint(dynamodb=True).start()
    sys.stdout.write(endpoint.url + "\n")
    sys.stdout.flush()
    sys.stdout = sys.stderr  # whatever moto prints from now on goes with its errors
    sys.stdin.read()
    endpoint.stop()


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
