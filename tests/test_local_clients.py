"""The local stack's botocore speed-up (``lambda_kit/local/clients.py``): each client's User-Agent is
built once per feature set and is the header botocore itself would have sent."""

from __future__ import annotations

import re

import boto3
import pytest
from botocore.useragent import UserAgentString

from lambda_kit.local.clients import remember_user_agents

CALLS = [
    lambda sqs: sqs.create_queue(QueueName="user-agents"),
    lambda sqs: sqs.send_message(
        QueueUrl=sqs.get_queue_url(QueueName="user-agents")["QueueUrl"], MessageBody="x"
    ),
    lambda sqs: list(sqs.get_paginator("list_queues").paginate()),  # a paginator adds its feature id
    lambda sqs: sqs.send_message(
        QueueUrl=sqs.get_queue_url(QueueName="user-agents")["QueueUrl"], MessageBody="y"
    ),
]


def _normal(header: str | bytes) -> str:
    """The header with its feature ids (``m/a,b``: a set, in no set order) sorted."""
    text = header.decode() if isinstance(header, bytes) else header
    return re.sub(r"\bm/([^ ]+)", lambda found: "m/" + ",".join(sorted(found.group(1).split(","))), text)


@pytest.fixture()
def builds(monkeypatch):
    """botocore's own ``to_string`` (whatever this process installed before), counted, with
    ``remember_user_agents`` not yet applied over it: the builders it was called for."""
    build = getattr(UserAgentString.to_string, "__wrapped__", UserAgentString.to_string)
    called: list[UserAgentString] = []

    def counted(self):
        called.append(self)
        return build(self)

    monkeypatch.setattr(UserAgentString, "to_string", counted)
    return called, build


def test_each_header_is_the_one_botocore_builds_at_that_moment_built_once_per_feature_set(
    aws_endpoint, builds, monkeypatch
):
    """Every header the remembered ``to_string`` hands out is compared with botocore's own build
    for the same builder, at the same moment (the call's context, its feature ids)."""
    called, build = builds
    remember_user_agents()
    remembered = UserAgentString.to_string
    handed_out: list[tuple[str, str]] = []
    builders: list[UserAgentString] = []  # this test's (a stack's leftover poller may call too)

    def compared(self):
        builders.append(self)
        header = remembered(self)
        handed_out.append((_normal(header), _normal(build(self))))
        return header

    monkeypatch.setattr(UserAgentString, "to_string", compared)
    sqs = boto3.client("sqs")
    for _ in range(3):
        for call in CALLS:
            call(sqs)
    assert len(handed_out) >= 2 * 3 * 6  # botocore asks twice a call
    assert all(header == expected for header, expected in handed_out)
    assert len({header for header, _ in handed_out}) >= 2  # the paginator's calls carry another header
    ours = [builder for builder in called if any(builder is mine for mine in builders)]
    assert len(ours) <= len(handed_out) / 4  # built once per builder and feature set, not per call


def test_a_copy_of_a_builder_with_another_config_builds_its_own(builds):
    """botocore's documented use: a builder per session, copied per client config (``copy`` shares
    the original's attribute values, the remembered headers among them)."""
    from botocore.config import Config

    remember_user_agents()
    session = UserAgentString.from_environment()
    plain = session.to_string()
    extra = session.with_client_config(Config(user_agent_extra="from-test")).to_string()
    assert not plain.endswith("from-test") and extra.endswith("from-test")
    assert session.to_string() == plain
