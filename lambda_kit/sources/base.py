"""What every source adapter is: the ``Source`` class, and the small helpers adapters share.

An adapter makes the same moves for every event source (as Mangum gives each event source one
small class that infers, builds the request and shapes the response):

- ``recognizes(event)``: is this event one of this source's? (the decorator refuses any other);
- ``records(event)``: the event split into ``Record``s: payload decoded, trace id read from where
  the producer put it (with its fallback: ``pick_trace``, given the source's *carrier*, reads
  tracers' contexts the same way for every source), and the id the source's failure report uses;
- ``response(event, outcome)``: what the source's retry machinery expects, given the failures;
- ``scope(event)``: what stays current while the batch runs (a tumbling window); nothing by default;
  ``serial()``: whether that batch must run one record at a time;
- ``ordering_key(record)``: the records that must run one after another (``async def`` functions run
  records of different keys at once); ``typed(payload, validate)``: what a function given
  ``model=`` receives.

Class attributes describe the source to the rest of lambda_kit (decorators, ``lambda-kit check``
and ``invoke``, the testing factories, the local stack), so none of them lists sources itself.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, ClassVar

from .. import codec, log
from .._data import dig
from ..record import Outcome, Record
from ..trace import is_valid_id, stable_id
from ..trace.context import DATADOG, STAMP, TraceContext, has_context, text
from ..trace.context import read as read_context
from ..trace.foreign import bounded_repr

if TYPE_CHECKING:
    from ..trace.context import Read
    from ..validation import Validator

Event = Mapping[str, Any] | list[Any]
"""An event a source recognized: a JSON object, or the list of records EventBridge Pipes sends."""


class Source:
    """One event source. Subclasses set the class attributes and implement ``read`` (and, where
    the defaults do not fit, ``recognizes``, ``records`` and ``response``)."""

    name: ClassVar[str] = ""
    """The source's name: ``Record.source``, the ``source`` field of log lines, ``--event`` of
    ``lambda-kit invoke``."""

    label: ClassVar[str] = ""
    """How a message names this source's events: ``"an SQS event"``."""

    decorator: ClassVar[str] = ""
    """The decorator that processes these events: ``"sqs_handler"``."""

    serverless_events: ClassVar[tuple[str, ...]] = ()
    """The ``serverless.yml`` event keys that deliver these events (``"sqs"``, ``"stream"`` ...)."""

    reports_batch_failures: ClassVar[bool] = False
    """Failures go back as a partial batch response, which Lambda reads only with
    ``functionResponseType: ReportBatchItemFailures`` on the event source mapping."""

    asynchronous: ClassVar[bool] = False
    """Lambda invokes the function asynchronously: a failure is raised, Lambda retries, then the
    function's on-failure destination (or DLQ) keeps the event."""

    ordered: ClassVar[bool] = False
    """Records come in order per shard/partition: a failure must not let later records pass it."""

    event_source: ClassVar[str] = ""
    """For ``{"Records": [...]}`` events: the records' ``eventSource`` (``"aws:sqs"``)."""

    record_marker: ClassVar[str] = ""
    """For ``{"Records": [...]}`` events: a key only this source's records have (``"messageId"``),
    for records that carry no ``eventSource``."""

    pipes: ClassVar[str] = ""
    """What EventBridge Pipes delivers of this source as a top-level JSON array (``"SQS
    messages"``), when the decorator takes such batches too; empty when it does not."""

    pipes_report_key: ClassVar[str] = ""
    """The record field Pipes' partial failure report names a record by, when not ``id``
    (``"eventID"`` for stream records)."""

    arn_service: ClassVar[str] = ""
    """What its ARNs look like: the service they name (``arn:aws:<arn_service>:...``), which tells
    a stream's Kinesis ARN from a DynamoDB one."""

    resource_types: ClassVar[tuple[str, ...]] = ()
    """The CloudFormation types of the resources its events are read from (``AWS::SQS::Queue``),
    which tell the source of an event that references one (``!GetAtt Table.StreamArn``)."""

    delivery: ClassVar[str] = ""
    """How the local stack delivers its events (``lambda_kit.local.stack``): ``"queue"`` (an SQS
    poller), ``"stream"`` (a poller per shard), ``"topic"`` (an SNS subscription, invoked
    asynchronously), ``"rule"`` / ``"notification"`` (EventBridge rules, S3 notifications, relayed
    through a queue), ``"gateway"`` (the HTTP gateway), ``"websocket"`` (the WebSocket gateway); empty:
    not emulated locally."""

    carried_by: ClassVar[tuple[str, ...]] = ()
    """The ``serverless.yml`` event keys of other sources whose events can carry this source's
    (S3 notifications in SQS messages, SNS messages, EventBridge events). There the carrier's
    traits apply (an S3 notification in an SQS message is reported like any SQS message), and
    ``describe`` names this source first: it is the more specific."""

    keeps_results: ClassVar[bool] = False
    """Its response carries each record's result (Firehose's transformed data, S3 Batch Operations'
    result string): the outcome keeps what the function returned for each processed record
    (``Outcome.results``)."""

    stop_at_first_failure: bool = False
    requeueing: bool = False

    @classmethod
    def recognizes(cls, event: object) -> bool:
        """By default: a ``Records`` batch of ``event_source`` records (or, for a source Pipes
        delivers, a top-level list of them)."""
        return records_claimed(event, cls.event_source, cls.record_marker, bool(cls.pipes))

    @classmethod
    def label_of(cls, event: object) -> str:
        """How a message names ``event``, one this source recognizes: by default ``label`` (a
        Pipes batch says so); a carried source says what carries it ("an SQS event carrying S3
        notifications")."""
        if type(event) is list and cls.pipes:
            return f"an EventBridge Pipes batch of {cls.pipes}"
        return cls.label

    def records(self, event: Event) -> list[Record]:
        """The event's records, each raw record read alone (``read_alone``): whatever goes wrong
        reading one is that record's failure. The records of a Pipes batch are ``piped``. A
        source whose events are not ``Records`` batches overrides this to split its own, reading
        each raw record through ``read_alone`` too."""
        piped = type(event) is list
        raws = event if piped else event["Records"]
        found = [record for raw in raws for record in read_alone(self.name, raw, self.read)]
        return [self.piped(record) for record in found] if piped else found

    def read(self, raw: object) -> list[Record]:
        """The records of one raw record: one, mostly (a KPL aggregate, a CloudWatch Logs message
        hold several). The one hook every source implements; always called through ``read_alone``."""
        raise NotImplementedError

    def piped(self, record: Record) -> Record:
        """A record that came in an EventBridge Pipes batch: named in the failure report by its raw
        record's ``pipes_report_key`` (an empty id when it has none: the whole batch fails, nothing
        is lost)."""
        if self.pipes_report_key and record.id:
            found = dig(record.raw, self.pipes_report_key)
            record.report_id = found if isinstance(found, str) else ""
        return record

    def response(self, event: Event, outcome: Outcome) -> Any:
        """By default: the partial batch response, or for an asynchronous source the first
        failure raised."""
        if self.asynchronous:
            raise_first_failure(outcome)
            return None
        if type(event) is list:
            return pipes_batch_item_failures(outcome)
        return batch_item_failures(outcome)

    def requeue(self, record: Record, error: BaseException) -> str:
        """Route a failed record elsewhere (only adapters with ``requeueing``)."""
        raise NotImplementedError

    def ordering_key(self, record: Record) -> Any:
        """Records with the same key run in batch order, one at a time, when the function is
        ``async def`` (records of different keys may run at once); None: no order to keep. By
        default the record's ``group`` (an SQS FIFO message group, a Kafka topic-partition)."""
        return record.group

    def typed(self, payload: Any, validate: Validator) -> Any:
        """What the function receives when the decorator has a ``model=``: by default the
        payload, validated. ``validate`` raises ``InvalidPayload`` for a payload that does not fit."""
        return validate(payload)

    def scope(self, event: Event) -> Any:
        """A context manager held while the batch is read, run and answered: how an adapter keeps
        something of the event current (``lambda_kit.sources.window``); by default nothing."""
        return UNSCOPED

    def serial(self) -> bool:
        """Whether the batch being run (inside ``scope``) must run one record at a time, whatever
        ``max_concurrency`` (a tumbling window's state); by default not."""
        return False


UNSCOPED = nullcontext()


# --- recognizing a Records batch -----------------------------------------------------------------


def records_claimed(event: object, event_source: str, marker: str, pipes: bool = False) -> bool:
    """Whether ``event`` is a ``{"Records": [...]}`` batch of one source (with ``pipes``, also a
    top-level list of its records, as EventBridge Pipes sends): some record is this source's (its
    ``eventSource``/``EventSource`` is ``event_source``, or it has none and holds the source's
    ``marker`` key) and none names another source. Records it cannot tell are let through, to fail
    alone as malformed. An empty ``Records`` list is anyone's (nothing to do); an empty top-level
    list is no one's (Pipes never sends one)."""
    if pipes and type(event) is list:
        return _all_mine(event, event_source, marker)  # an empty one is no one's
    records = dig(event, "Records")
    return type(records) is list and (not records or _all_mine(records, event_source, marker))


def _all_mine(records: list[Any], event_source: str, marker: str) -> bool:
    """Some record is this source's, and none is another's."""
    claims = {_claim(raw, event_source, marker) for raw in records}
    return True in claims and False not in claims


def _claim(raw: object, event_source: str, marker: str) -> bool | None:
    """True: a record of this source; False: of another one; None: it cannot tell."""
    if type(raw) is not dict:
        return None
    found = raw.get("eventSource", raw.get("EventSource"))
    if found is None:
        return True if marker in raw else None
    return found == event_source


# --- reading records ----------------------------------------------------------------------------


def read_alone(source: str, raw: object, read: Callable[[Any], list[Record]]) -> list[Record]:
    """``read(raw)``: the records of one raw record. An error no check foresaw (an adapter's bug, a
    value of a shape nobody expected) makes that raw record fail alone, with the reason, never the
    batch."""
    try:
        return read(raw)
    except Exception as exc:
        return [unreadable(source, raw, exc)]


def unreadable(source: str, raw: object, exc: Exception) -> Record:
    """The failed record of a raw record whose reading raised ``exc``."""
    return malformed(source, raw, f"record cannot be read ({type(exc).__name__}: {reason(exc)})")


def pick_trace(
    source: str,
    found: object,
    fallback: object,
    carrier: Mapping[str, Any] | None = None,
    read: Read = text,
    xray: object = None,
) -> tuple[str, str | None, TraceContext | None]:
    """(trace id, rejected id, tracer's context) of a record, in the documented order:
    lambda_kit's ``found`` id, then a tracer's context in ``carrier`` (where this source's
    producers put ``traceparent``, ``_datadog`` or ``x-datadog-*``; ``read`` turns a value of it
    into text, bytes or a dict) or ``xray`` (the X-Ray header the source found), then the stable
    ``fallback``. The context is returned whichever id wins, for the log lines' vendor keys; when
    lambda_kit's id is missing or invalid, the context's id (as its vendor prints it) is the
    trace id. A malformed context gets a WARNING line (the value shown boundedly) and is not used;
    an invalid ``found`` is returned as found, for the record's WARNING line (``log.brief``)."""
    own = found if type(found) is str and is_valid_id(found) else None
    context, refused = read_context(carrier, read, xray) if has_context(carrier, xray) else (None, ())
    trace_id = own or (context.display_id() if context is not None else stable_id(fallback))
    for where, value in refused:
        warn_rejected_context(source, trace_id, where, value)
    return trace_id, None if own else found, context


def unstamped(doc: object) -> tuple[Any, Mapping[str, Any] | None]:
    """(the producer's JSON document, without what ``propagate()`` added; the trace fields it
    added, or None): the function sees the payload as its producer wrote it."""
    stamp = doc.get(STAMP) if type(doc) is dict else None
    if type(stamp) is not dict:
        return doc, None
    ours = {STAMP, DATADOG} if DATADOG in stamp and doc.get(DATADOG) == stamp[DATADOG] else {STAMP}
    return {key: value for key, value in doc.items() if key not in ours}, stamp


def warn_rejected_context(source: str, trace_id: str, where: str, value: object) -> None:
    """The WARNING line for a tracer's context that is present and malformed (not used)."""
    if log.enabled(30):
        log.emit(
            "WARN",
            f"ignored an invalid {where}; reading the next place",
            trace_id,
            {"source": source, "rejected_trace_context": log.brief(value)},
        )


def malformed(source: str, raw: object, why: str) -> Record:
    """A record that cannot be read at all (its payload is the raw record, for the ERROR line):
    it fails with ``why`` and reports an empty id, which Lambda treats as a failure of the whole
    batch (nothing is lost). Its trace id is a digest of what it holds, the same on every retry."""
    return Record(
        source=source, id="", trace_id=stable_id(bounded_repr(raw, 512)), payload=raw, raw=raw, error=why
    )


def reason(exc: BaseException) -> str:
    """A decoding error's message, short enough for one log field."""
    text = log.safe_str(exc)
    return text if len(text) <= 200 else text[:200] + "..."


# --- reading fields -----------------------------------------------------------------------------


def as_text(value: object) -> str:
    """``value`` when it is text, else its ``repr`` (bounded: ``trace.foreign``): a key that
    should be text (a message group, a partition key) compared or digested as one."""
    return value if type(value) is str else bounded_repr(value, 1024)


def loaded(text: object, name: str) -> tuple[Any, str | None]:
    """(the JSON document in ``text``, None), or (None, the error naming ``name``)."""
    try:
        return codec.loads(text), None
    except Exception as exc:
        return None, f"{name} is not valid JSON ({reason(exc)})"


def base64_bytes(text: object, name: str) -> tuple[bytes | None, str | None]:
    """(the bytes base64 ``text`` holds, None), or (None, the error naming ``name``): strict, as
    AWS writes it (a lenient decoder would read a corrupted value as something else)."""
    try:
        return binascii.a2b_base64(text, strict_mode=True), None
    except (binascii.Error, TypeError, ValueError) as exc:
        return None, f"{name} is not valid base64 ({reason(exc)})"


# --- responses ----------------------------------------------------------------------------------


def batch_item_failures(outcome: Outcome) -> dict[str, Any]:
    """The partial batch response SQS, Kinesis and DynamoDB Streams event source mappings read.

    A stream batch stopped at a failed record (``skipped``: the records not reached) is checkpointed
    by Lambda at the lowest sequence number reported, and retried from there: so a record not
    reached whose sequence number is lower than every failed one (a batch out of order: replayed or
    built by hand) is reported too, and nothing not done is ever taken as done."""
    failed = [record for record, _ in outcome.failures]
    if outcome.skipped:
        failed += lowest_not_reached(failed, outcome.skipped)
    return failure_report(failed)


def lowest_not_reached(failed: list[Record], skipped: list[Record]) -> list[Record]:
    """The record of ``skipped`` with the lowest sequence number, when it is lower than every
    failed record's (none otherwise: Lambda's checkpoint is already below it). Sequence numbers are
    compared as the integers their decimal text holds; a record without one has no place in the
    stream's order (a failed one is reported by what it has, which Lambda reads as the whole
    batch failed)."""
    checkpoint = None
    for record in failed:
        number = _sequence_number(record)
        if number is None:
            return []
        checkpoint = number if checkpoint is None else min(checkpoint, number)
    ordered = [(number, record) for record in skipped if (number := _sequence_number(record)) is not None]
    if not ordered:
        return []
    lowest, record = min(ordered, key=lambda item: item[0])
    return [record] if checkpoint is None or lowest < checkpoint else []


def _sequence_number(record: Record) -> int | None:
    """The number a record is reported by (its ``report_id``, a KPL user record's aggregate's), or
    None when that is no decimal text."""
    reported = record.id if record.report_id is None else record.report_id
    if type(reported) is not str or not reported.isascii() or not reported.isdigit():
        return None
    return int(reported)


def pipes_batch_item_failures(outcome: Outcome) -> dict[str, Any]:
    """The partial failure response of an EventBridge Pipes target: Pipes retries the records it
    names, so the records a stream batch stopped before are named too, after the failed ones (each
    name once: the user records of a KPL aggregate share theirs)."""
    report = failure_report([*(record for record, _ in outcome.failures), *outcome.skipped])
    names = dict.fromkeys(item["itemIdentifier"] for item in report["batchItemFailures"])
    return {"batchItemFailures": [{"itemIdentifier": name} for name in names]}


def failure_report(records: list[Record]) -> dict[str, Any]:
    """``batchItemFailures`` naming each record by its ``report_id``, or its ``id``."""
    return {
        "batchItemFailures": [
            {"itemIdentifier": record.id if record.report_id is None else record.report_id}
            for record in records
        ]
    }


def raise_first_failure(outcome: Outcome) -> None:
    """For asynchronous invocations: re-raise the first failure, so Lambda retries the event and
    its on-failure destination keeps it; nothing to return on success."""
    if outcome.failures:
        raise outcome.failures[0][1]
