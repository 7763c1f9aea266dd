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
    lambda sqs: sqs.send_message(QueueUrl=sqs.get_queue_url(QueueName="user-agents")["QueueUrl"], MessageBody="x"),
    lambda sqs: list(sqs.get_paginator("list_queues").paginate()),  # a paginator adds its feature id
    lambda sqs: sqs.send_message(QueueUrl=sqs.get_queue_url(QueueName="user-agents")["QueueUrl"], MessageBody="y"),
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


def test_each_request_carries_the_header_botocore_builds_for_it_built_once_per_feature_set(aws_endpoint, builds):
    called, build = builds
    remember_user_agents()
    sqs = boto3.client("sqs")
    sent: list[tuple[str, str]] = []

    def check(request, **_):
        sent.append((_normal(request.headers["User-Agent"]), _normal(build(called[-1]))))

    sqs.meta.events.register("before-send", check)
    for _ in range(3):
        for call in CALLS:
            call(sqs)
    assert len(sent) == 3 * 6
    assert all(header == expected for header, expected in sent)
    assert len({header for header, _ in sent}) >= 2  # the paginator's calls carry another header
    assert len(called) <= len({header for header, _ in sent}) + 2  # botocore builds it twice a call


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
