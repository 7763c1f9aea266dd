"""s3_batch_handler against AWS's own published sample events (``tests/events/s3_batch/``).

Each task must reach the function with what Powertools' ``S3BatchOperationEvent`` reads of it,
field by field, and the response must be what Powertools' ``S3BatchOperationResponse`` builds for
the same result, and have the form of AWS's sample responses.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _hostile import DECORATORS, captured, refused
from aws_lambda_powertools.utilities.data_classes import S3BatchOperationEvent
from aws_lambda_powertools.utilities.data_classes.s3_batch_operation_event import S3BatchOperationResponse

from lambda_kit import TemporaryFailure, s3_batch_handler

ROOT = Path(__file__).parent / "events" / "s3_batch"
EVENTS = sorted(path.name for path in ROOT.glob("*.json") if "response" not in path.name)
RESPONSES = sorted(path.name for path in ROOT.glob("*.json") if "response" in path.name)
REGIONAL_ARN = "s3-batch-job-event-request-1.0.aws-lambda-go.json"
"""Its bucket ARN names a region and an account (``arn:aws:s3:us-east-1:0123456788:awsexamplebucket``):
Powertools takes what follows ``:::``, and finding none gives the whole ARN as the bucket; lambda_kit
gives what follows the last ``:``, the bucket's name."""


def sample(name: str) -> dict[str, Any]:
    return json.loads((ROOT / name).read_text())


def test_the_samples_are_all_here():
    assert (len(EVENTS), len(RESPONSES)) == (7, 2)


@pytest.mark.parametrize("name", EVENTS)
def test_each_task_matches_powertools_field_by_field(name):
    seen = []
    with captured():
        s3_batch_handler(lambda task, context: seen.append(task))(sample(name), None)
    [task] = seen
    powertools = S3BatchOperationEvent(sample(name))
    theirs = powertools.task
    assert (task.task_id, task.key, task.version_id, task.bucket_arn) == (
        theirs.task_id,
        theirs.s3_key,
        theirs.s3_version_id,
        theirs.s3_bucket_arn,
    )
    assert task.bucket == (theirs.s3_bucket if name != REGIONAL_ARN else "awsexamplebucket")
    assert (task.job_id, task.user_arguments) == (powertools.job.get_id, powertools.job.user_arguments)
    assert (task.schema_version, task.invocation_id) == (
        powertools.invocation_schema_version,
        powertools.invocation_id,
    )


@pytest.mark.parametrize("outcome", ["Succeeded", "TemporaryFailure", "PermanentFailure"])
@pytest.mark.parametrize("name", EVENTS)
def test_the_response_is_what_powertools_builds_for_the_same_result(name, outcome):
    def work(task, context):
        if outcome == "TemporaryFailure":
            raise TemporaryFailure("locked, try later")
        if outcome == "PermanentFailure":
            raise ValueError("not an image")
        return "copied"

    with captured():
        ours = s3_batch_handler(work)(sample(name), None)
    powertools = S3BatchOperationEvent(sample(name))
    expected = S3BatchOperationResponse(
        powertools.invocation_schema_version, powertools.invocation_id, "PermanentFailure"
    )
    text = {"Succeeded": "copied", "TemporaryFailure": "locked, try later"}.get(
        outcome, "ValueError: not an image"
    )
    expected.add_result(powertools.task.build_task_batch_response(outcome, text))
    assert ours == expected.asdict()


@pytest.mark.parametrize("name", RESPONSES)
def test_aws_s_sample_responses_have_the_form_lambda_kit_answers_in(name):
    documented = sample(name)
    with captured():
        ours = s3_batch_handler(lambda task, context: "x")(
            sample("s3_batch_event.aws-lambda-java.json"), None
        )
    assert list(ours) == list(documented)
    assert [set(result) for result in ours["results"]] == [set(result) for result in documented["results"]]


@pytest.mark.parametrize("decorator", sorted(set(DECORATORS) - {"s3_batch_handler"}))
@pytest.mark.parametrize("name", EVENTS)
def test_every_other_decorator_refuses_the_samples_naming_s3_batch_handler(name, decorator):
    assert refused(decorator, sample(name)).endswith(": use s3_batch_handler")
