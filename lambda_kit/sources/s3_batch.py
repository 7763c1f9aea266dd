"""Amazon S3 Batch Operations (``LambdaInvoke``): the ``s3_batch`` source.

S3 Batch Operations invokes the function synchronously with one task per invocation (an object of
the job's manifest), schema ``1.0`` (``s3BucketArn``) or ``2.0`` (``s3Bucket``, the job's
``userArguments``), and reads one result per task: ``resultCode`` ``Succeeded`` (its
``resultString`` goes to the completion report), ``TemporaryFailure`` (S3 redrives the task
before the job completes) or ``PermanentFailure``, with the response's ``invocationSchemaVersion``,
``invocationId`` and ``treatMissingKeysAs`` (what a task missing from the results counts as).

The function receives an ``S3BatchTask`` (``key`` URL-decoded: S3 Batch Operations sends keys
URL-encoded) and returns the result string (text as it is, anything else as JSON; ``None``: empty).
A failure is ``TemporaryFailure`` when it is one of the errors AWS documents as retryable
(throttling, ``RequestTimeout``, ``SlowDown``, a 500/502/503/504, a timeout or a broken
connection) or the function raised ``TemporaryFailure``; any other is ``PermanentFailure``, its
result string the error's type and text.

The trace id: the job's ``userArguments.trace_id`` (schema 2.0: where the job's creator can put
one), else the job id, so every task of a job is under one trace id.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_plus

from .. import codec, log
from .._data import dig, is_text, mapping
from ..errors import UndecodableRecord
from ..record import Outcome, Record
from ._results import converting
from .base import Source, malformed, pick_trace, read_alone

RESULT_CODES = ("Succeeded", "TemporaryFailure", "PermanentFailure")
MAX_RESULT_STRING = 1024
"""A failure's result string is cut here (what the completion report shows of it)."""

RETRYABLE_CODES = frozenset(
    {
        # botocore's standard retry mode: its transient and throttling error codes
        "RequestTimeout",
        "RequestTimeoutException",
        "PriorRequestNotComplete",
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "TransactionInProgressException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "LimitExceededException",
        "RequestThrottled",
        "SlowDown",
        "EC2ThrottledException",
        # S3's own for a busy or failing service
        "ServiceUnavailable",
        "InternalError",
    }
)
RETRYABLE_STATUS = frozenset({500, 502, 503, 504})
RETRYABLE_ERRORS = frozenset({"HTTPClientError", "ConnectionError", "TimeoutError"})
"""Exception classes (by name, anywhere in the class's ancestry: botocore's connection and timeout
errors, Python's) that say the call did not get through."""


class TemporaryFailure(Exception):
    """Raise in an ``s3_batch_handler`` function for ``TemporaryFailure``: S3 redrives the task
    before the job completes. Its message is the result string."""


class PermanentFailure(Exception):
    """Raise in an ``s3_batch_handler`` function for ``PermanentFailure`` with its message as the
    result string (any other exception fails permanently too, its type and text the string)."""


@dataclass(frozen=True)
class S3BatchTask:
    """One task of an S3 Batch Operations job: the object (``bucket``, ``key`` URL-decoded,
    ``version_id``) and the job (``job_id``, ``user_arguments``: schema 2.0's). The task as sent is
    ``current_record().raw["task"]``."""

    task_id: str
    bucket: str
    key: str
    version_id: str | None
    bucket_arn: str | None
    job_id: str | None
    user_arguments: dict[str, Any] = field(default_factory=dict)
    schema_version: str = "1.0"
    invocation_id: str = ""


def is_temporary(error: BaseException) -> bool:
    """Whether a task's failure is one S3 should redrive (the module's docstring lists them)."""
    if isinstance(error, TemporaryFailure):
        return True
    if isinstance(error, PermanentFailure):
        return False
    if any(kind.__name__ in RETRYABLE_ERRORS for kind in type(error).__mro__):
        return True
    response = getattr(error, "response", None)
    if type(response) is not dict:
        return False
    code = dig(response, "Error", "Code")
    return code in RETRYABLE_CODES or dig(response, "ResponseMetadata", "HTTPStatusCode") in RETRYABLE_STATUS


def result_string(result: Any) -> str:
    if result is None:
        return ""
    return result if isinstance(result, str) else codec.dumps(result)


def failure_string(error: BaseException) -> str:
    """A failed task's result string: an explicit failure's message, else the error's type and
    text; cut at ``MAX_RESULT_STRING`` characters. Never a traceback."""
    text = log.safe_str(error)
    if not isinstance(error, TemporaryFailure | PermanentFailure | UndecodableRecord):
        text = f"{type(error).__name__}: {text}"
    return text if len(text) <= MAX_RESULT_STRING else text[: MAX_RESULT_STRING - 3] + "..."


class S3BatchSource(Source):
    name = "s3_batch"
    label = "an S3 Batch Operations event"
    decorator = "s3_batch_handler"
    arn_service = "s3"
    keeps_results = True

    def __init__(self, treat_missing_keys_as: str = "PermanentFailure") -> None:
        if treat_missing_keys_as not in RESULT_CODES:
            raise ValueError(
                f"s3_batch_handler: treat_missing_keys_as must be one of {RESULT_CODES}, "
                f"not {treat_missing_keys_as!r}"
            )
        self.treat_missing_keys_as = treat_missing_keys_as

    @classmethod
    def recognizes(cls, event: object) -> bool:
        return (
            type(event) is dict
            and isinstance(event.get("invocationSchemaVersion"), str)
            and isinstance(event.get("invocationId"), str)
            and type(event.get("tasks")) is list
        )

    def records(self, event: Mapping[str, Any]) -> list[Record]:
        """One record per task (one, as S3 Batch Operations sends them), each read with the job and
        schema it belongs to: the raw record is ``{"task": ..., "job": ..., "invocationSchemaVersion":
        ..., "invocationId": ...}``."""
        shared = {key: event.get(key) for key in ("job", "invocationSchemaVersion", "invocationId")}
        raws = [{"task": task, **shared} for task in event["tasks"]]
        return [record for raw in raws for record in read_alone(self.name, raw, self.read)]

    def read(self, raw: Any) -> list[Record]:
        task, job = mapping(raw["task"]), mapping(raw["job"])
        task_id = task.get("taskId")
        if not is_text(task_id):
            return [malformed("s3_batch", raw, "task has no taskId")]
        key, bucket_arn, bucket = task.get("s3Key"), task.get("s3BucketArn"), task.get("s3Bucket")
        if is_text(bucket_arn) and not is_text(bucket):
            bucket = bucket_arn.rpartition(":")[2]
        trace_id, rejected, _ = pick_trace("s3_batch", dig(job, "userArguments", "trace_id"), job.get("id"))
        if not is_text(key) or not is_text(bucket):
            why = "task has no s3Key" if not is_text(key) else "task has no s3Bucket or s3BucketArn"
            return [Record(source="s3_batch", id=task_id, trace_id=trace_id, payload=raw, raw=raw, error=why)]
        payload = S3BatchTask(
            task_id=task_id,
            bucket=bucket,
            key=unquote_plus(key),
            version_id=task.get("s3VersionId"),
            bucket_arn=bucket_arn if is_text(bucket_arn) else None,
            job_id=job.get("id"),
            user_arguments=dict(mapping(job.get("userArguments"))),
            schema_version=str(raw["invocationSchemaVersion"]),
            invocation_id=str(raw["invocationId"]),
        )
        return [
            Record(
                source="s3_batch",
                id=task_id,
                trace_id=trace_id,
                payload=payload,
                raw=raw,
                rejected_trace_id=rejected,
            )
        ]

    def wrap(self, function: Callable[[Any, Any], Any], is_async: bool) -> Callable[[Any, Any], Any]:
        """The function, its result made the result string in the record's own path (a result
        that cannot be one fails the task, ``PermanentFailure``)."""
        return converting(function, is_async, result_string)

    def typed(self, payload: Any, validate: Any) -> Any:
        """With ``model=``: the task's fields (``task_id``, ``bucket``, ``key`` ...) validated."""
        return validate(dataclasses.asdict(payload))

    def response(self, event: Mapping[str, Any], outcome: Outcome) -> dict[str, Any]:
        """One result per task, in the event's order."""
        results = [
            {"taskId": record.id, "resultCode": "Succeeded", "resultString": result}
            for record, result in outcome.results
        ]
        for record, error in outcome.failures:
            if not record.id:  # no taskId to answer it by: the invocation fails (S3 counts it failed)
                raise error
            code = "TemporaryFailure" if is_temporary(error) else "PermanentFailure"
            results.append({"taskId": record.id, "resultCode": code, "resultString": failure_string(error)})
        order = {
            dig(task, "taskId"): index for index, task in enumerate(event["tasks"]) if type(task) is dict
        }
        results.sort(key=lambda found: order.get(found["taskId"], len(order)))
        return {
            "invocationSchemaVersion": event["invocationSchemaVersion"],
            "treatMissingKeysAs": self.treat_missing_keys_as,
            "invocationId": event["invocationId"],
            "results": results,
        }


SOURCE = S3BatchSource
