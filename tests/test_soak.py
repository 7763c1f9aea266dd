"""The small fault soak: a few hundred view events through the local stack (the real
serverless.yml and handlers) with every fault kind of ``make soak``, and every figure asserted."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from _iam import check

from loads.soak import FAULT_KINDS, SoakOptions, run_soak, summary

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def soak(tmp_path_factory):
    out = io.StringIO()
    options = SoakOptions(
        events=300,
        seed=7,
        articles=25,
        # batched consumers make few DynamoDB calls for 300 events: a higher rate still
        # injects every fault kind several times
        fault_rate=0.25,
        config=ROOT / "serverless.yml",
        stage=f"soak{os.getpid()}",  # moto's state is per process: fresh resources for this run
        log_path=tmp_path_factory.mktemp("soak") / "logs.jsonl",
        timeout=240,
    )
    result = run_soak(options, out=out)
    print(out.getvalue() + summary(result))
    return result


def test_every_check_passes(soak):
    assert soak.ok, summary(soak)


def test_counted_equals_unique_and_nothing_lost_or_counted_twice(soak):
    assert soak.drained and not soak.timed_out
    assert soak.sent == 300 and soak.rejected_posts == 0 and soak.not_sent == 0
    assert 0 < soak.unique < soak.sent
    assert soak.counted == soak.unique
    assert soak.double_counted == 0 and soak.double_counted_articles == []
    assert soak.lost == 0 and soak.lost_articles == [] and soak.markers_missing == 0
    assert soak.articles_exact == soak.articles == len(soak.per_article)
    assert all(figures["actual"] == figures["expected"] for figures in soak.per_article.values())
    assert soak.day_buckets_wrong == 0


def test_duplicates_of_every_kind_were_delivered(soak):
    assert sum(soak.duplicates.values()) == soak.sent - soak.unique
    assert len(soak.duplicates) == 4 and all(soak.duplicates.values())
    assert soak.pairs > 0 and soak.pairs_in_one_batch > 0


def test_poison_lands_in_dead_letter_queues_with_its_trace_id_logged(soak):
    assert soak.poison_injected == 5
    assert soak.poison_in_dlq == soak.poison_injected
    assert soak.dlq["views-dlq"] == 4 and soak.dlq["clickstream-dlq"] == 1
    assert sum(soak.dlq.values()) == 5
    assert soak.poison_missing == [] and soak.dlq_unexpected == []
    assert len(soak.poison_error_lines) == 5
    # At least once per attempt: the views queue tries a message maxReceiveCount (3) times,
    # the clickstream function requeues twice and dead-letters on the third attempt.
    assert all(count >= 3 for count in soak.poison_error_lines.values()), soak.poison_error_lines


def test_aggregates_agree_with_the_counters(soak):
    assert soak.site_total == soak.counted
    assert soak.site_days_wrong == 0
    assert soak.distinct_articles == soak.articles
    assert soak.milestones_recorded == soak.milestones_expected > 0 and soak.milestones_missing == []


def test_every_log_line_is_json_with_a_trace_id(soak):
    assert soak.log_lines > soak.sent
    assert soak.log_lines_bad == 0 and soak.log_lines_without_trace == 0


def test_faults_of_every_kind_were_injected_and_only_loopback_was_contacted(soak):
    assert set(soak.faults) == set(FAULT_KINDS) and all(soak.faults.values()), soak.faults
    assert soak.writes_applied_before_500 > 0
    assert {"counter", "aggregator", "clickstream"} <= {f for f, n in soak.crashes.items() if n}, soak.crashes
    assert soak.sqs_batches_failed > 0 and soak.stream_batches_failed > 0
    assert soak.refused_hosts == []


def test_figures_as_a_dict(soak):
    figures = soak.as_dict()
    for key in (
        "events_sent",
        "unique_valid_events",
        "counted",
        "double_counted",
        "lost",
        "poison_in_dlq",
        "site_total",
        "distinct_articles",
        "faults",
        "crashes_after_commit",
        "seconds",
    ):
        assert key in figures
    assert figures["ok"] is True and figures["double_counted"] == 0 and figures["lost"] == 0


FUNCTIONS = ["ingest", "counter", "aggregator", "milestones", "clickstream"]


def test_every_aws_call_is_granted_and_every_grant_is_needed(soak, packaged):
    """IAM proven by the calls: each AWS call a function made during the soak against its role in
    the packaged template, and each grant of the role used by a call, by Lambda's side of the
    wiring, or justified by a comment naming it in serverless.yml."""
    findings = check(
        packaged["template"],
        (ROOT / "serverless.yml").read_text(encoding="utf-8"),
        soak.aws_calls,
        soak.resource_ids,
        FUNCTIONS,
    )
    for finding in findings:
        print(
            f"{finding.function}: used {sorted(finding.used)}; Lambda's {sorted(finding.by_lambda)};"
            f" justified {sorted(finding.justified)}"
        )
    assert {f.function: f.not_granted for f in findings if f.not_granted} == {}
    assert {f.function: f.unjustified for f in findings if f.unjustified} == {}
    assert all(f.used for f in findings), [
        f.function for f in findings if not f.used
    ]  # every function called AWS
    # the calls are mapped to IAM as IAM authorises them: a transaction as its item actions
    used = {f.function: {action for action, _ in f.used} for f in findings}
    assert {"dynamodb:PutItem", "dynamodb:UpdateItem"} <= used[
        "counter"
    ] and "dynamodb:TransactWriteItems" not in used["counter"]
    assert {"sqs:SendMessage", "dynamodb:BatchGetItem", "dynamodb:Query"} <= used["ingest"]
    assert {"kinesis:PutRecord", "sqs:SendMessage"} <= used["clickstream"]
