"""s3_batch_handler: one task per invocation, one result per task; what is retried
(``TemporaryFailure``) is what AWS documents as retryable or what the function says is, and every
other failure is ``PermanentFailure``, with the error's type and text as the result string."""

from __future__ import annotations

import asyncio
from typing import Any

import boto3
import pytest
from _hostile import captured, parse_lines
from botocore.config import Config
from botocore.exceptions import ClientError

from lambda_kit import (
    PermanentFailure,
    S3BatchTask,
    TemporaryFailure,
    UnsupportedEvent,
    current_trace_id,
    s3_batch_handler,
)
from lambda_kit.testing import firehose_event, lambda_context, s3_batch_event, s3_event


def run(handler: Any, event: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    with captured() as out:
        response = handler(event, lambda_context())
    return response, parse_lines(out)


def result_of(handler: Any, event: dict[str, Any]) -> dict[str, Any]:
    response, _ = run(handler, event)
    [result] = response["results"]
    return result


@pytest.mark.parametrize("schema", ["1.0", "2.0"])
def test_a_task_reaches_the_function_and_its_result_string_goes_back(schema):
    seen = []

    @s3_batch_handler
    def copy(task, context):
        seen.append(task)
        return {"copied": f"s3://archive/{task.key}"}

    event = s3_batch_event("photos/red flower+1.jpg", bucket="uploads", schema=schema, version_id="v1")
    response, _ = run(copy, event)
    [task] = seen
    assert isinstance(task, S3BatchTask)
    assert (task.bucket, task.key, task.version_id, task.schema_version) == (
        "uploads",
        "photos/red flower+1.jpg",
        "v1",
        schema,
    )
    assert task.bucket_arn == ("arn:aws:s3:::uploads" if schema == "1.0" else None)
    assert response == {
        "invocationSchemaVersion": schema,
        "treatMissingKeysAs": "PermanentFailure",
        "invocationId": event["invocationId"],
        "results": [
            {
                "taskId": event["tasks"][0]["taskId"],
                "resultCode": "Succeeded",
                "resultString": '{"copied":"s3://archive/photos/red flower+1.jpg"}',
            }
        ],
    }


def test_text_is_the_result_string_as_it_is_and_none_is_empty():
    assert result_of(s3_batch_handler(lambda t, c: "done"), s3_batch_event())["resultString"] == "done"
    assert result_of(s3_batch_handler(lambda t, c: None), s3_batch_event())["resultString"] == ""


def test_treat_missing_keys_as_goes_back_and_is_checked():
    response, _ = run(s3_batch_handler(treat_missing_keys_as="Succeeded")(lambda t, c: 1), s3_batch_event())
    assert response["treatMissingKeysAs"] == "Succeeded"
    with pytest.raises(ValueError, match="treat_missing_keys_as must be one of"):
        s3_batch_handler(treat_missing_keys_as="Retry")


def throttled(code: str, status: int) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": "slow down"}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "CopyObject",
    )


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (TemporaryFailure("the archive is locked"), "TemporaryFailure"),
        (throttled("SlowDown", 503), "TemporaryFailure"),
        (throttled("RequestTimeout", 400), "TemporaryFailure"),
        (throttled("ThrottlingException", 400), "TemporaryFailure"),
        (throttled("SomethingNew", 503), "TemporaryFailure"),
        (TimeoutError("read timed out"), "TemporaryFailure"),
        (ConnectionResetError("reset"), "TemporaryFailure"),
        (throttled("AccessDenied", 403), "PermanentFailure"),
        (throttled("NoSuchKey", 404), "PermanentFailure"),
        (PermanentFailure("not an image"), "PermanentFailure"),
        (ValueError("bad header"), "PermanentFailure"),
        (KeyError("x"), "PermanentFailure"),
    ],
    ids=[
        "explicit temporary",
        "slowdown",
        "request timeout",
        "throttling",
        "a 503",
        "timeout",
        "connection",
        "access denied",
        "no such key",
        "explicit permanent",
        "value error",
        "key error",
    ],
)
def test_what_is_retried_and_what_is_not(error, code):
    def fail(task, context):
        raise error

    response, lines = run(s3_batch_handler(fail), s3_batch_event())
    [result] = response["results"]
    assert result["resultCode"] == code
    [line] = [line for line in lines if line["level"] == "ERROR"]
    assert line["error_type"] == type(error).__name__
    if isinstance(error, TemporaryFailure | PermanentFailure):
        assert result["resultString"] == str(error)
    else:
        assert result["resultString"].startswith(f"{type(error).__name__}: ")
    assert "Traceback" not in result["resultString"]


def test_a_real_botocore_connection_error_is_temporary(aws_endpoint):
    """botocore raises its own connection errors (an endpoint nobody listens on), not ClientError."""
    s3 = boto3.client(
        "s3", endpoint_url="http://127.0.0.1:9", config=Config(retries={"max_attempts": 1}, connect_timeout=1)
    )
    result = result_of(
        s3_batch_handler(lambda task, context: s3.head_object(Bucket=task.bucket, Key=task.key)),
        s3_batch_event(),
    )
    assert result["resultCode"] == "TemporaryFailure" and "EndpointConnectionError" in result["resultString"]


def test_a_real_missing_object_is_permanent(aws_endpoint):
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="batch-missing")
    handler = s3_batch_handler(lambda task, context: s3.head_object(Bucket=task.bucket, Key=task.key))
    result = result_of(handler, s3_batch_event("nope.txt", bucket="batch-missing"))
    assert result["resultCode"] == "PermanentFailure" and result["resultString"].startswith("ClientError: ")


def test_a_long_error_is_cut_in_the_result_string():
    def fail(task, context):
        raise ValueError("x" * 5000)

    result = result_of(s3_batch_handler(fail), s3_batch_event())
    assert len(result["resultString"]) == 1024 and result["resultString"].endswith("...")


def test_a_result_that_cannot_be_a_string_fails_the_task():
    result = result_of(s3_batch_handler(lambda t, c: object()), s3_batch_event())
    assert result["resultCode"] == "PermanentFailure" and "not JSON serializable" in result["resultString"]


def test_a_task_without_a_key_fails_permanently_and_one_without_an_id_cannot_be_answered():
    event = s3_batch_event()
    del event["tasks"][0]["s3Key"]
    assert result_of(s3_batch_handler(lambda t, c: 1), event) == {
        "taskId": event["tasks"][0]["taskId"],
        "resultCode": "PermanentFailure",
        "resultString": "task has no s3Key",
    }
    del event["tasks"][0]["taskId"]
    with captured(), pytest.raises(Exception, match="task has no taskId"):
        s3_batch_handler(lambda t, c: 1)(event, None)


def test_the_trace_id_is_the_job_s_user_argument_then_the_job_id():
    seen = []
    handler = s3_batch_handler(lambda task, context: seen.append(current_trace_id()))
    run(handler, s3_batch_event(trace_id="T-job", schema="2.0"))
    job = s3_batch_event(job_id="f3cc4f60-61f6-4a2b-8a21-d07600c373ce")
    run(handler, job)
    assert seen == ["T-job", "f3cc4f60-61f6-4a2b-8a21-d07600c373ce"]
    with pytest.raises(ValueError, match="schema='2.0'"):
        s3_batch_event(trace_id="T", schema="1.0")


def test_model_validates_the_task_and_an_async_function_is_awaited():
    from pydantic import BaseModel

    class Task(BaseModel):
        bucket: str
        key: str

    async def size(task, context):
        await asyncio.sleep(0)
        return f"{task.bucket}/{task.key}"

    assert (
        result_of(s3_batch_handler(model=Task)(size), s3_batch_event("a.csv"))["resultString"]
        == "uploads/a.csv"
    )


def test_other_events_are_refused_naming_their_decorator():
    handler = s3_batch_handler(lambda task, context: None)
    for event, fits in ((s3_event("a.txt"), "s3_handler"), (firehose_event({"n": 1}), "firehose_handler")):
        with captured(), pytest.raises(UnsupportedEvent, match=f"use {fits}"):
            handler(event, None)
