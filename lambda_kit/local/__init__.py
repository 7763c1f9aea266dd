"""The local stack: any service's serverless.yml on one machine.

Depends on the rest of lambda_kit; nothing in the core depends on it. Modules:

- ``config`` (the one model of serverless.yml ``check``, ``invoke`` and the stack read: functions,
  events, resources; ``variables`` resolves ``${...}``),
  ``resources`` (creates them on the endpoint; ``intrinsics`` resolves Ref / GetAtt / Sub),
  ``endpoint`` (moto's server, patched), ``moto_process`` (it in a process of its own, the
  stack's), ``dynamodb_local`` (AWS's DynamoDB Local, the DynamoDB where Java can run it),
  ``clients``;
- ``runtime`` (a function as Lambda runs it: invocations, hooks, results), ``environments``
  (its worker processes under AWS's runtime interface client), ``runtime_api`` (Lambda's Runtime
  API, one per worker), ``workspace`` (what a worker runs from and with: ``task_root`` from the
  package patterns, ``requirements`` from a cache, ``runtime_libraries``, its environment),
  ``function_log`` (the workers' lines and Lambda's START / END / REPORT), ``reload`` (a changed
  file replaces the warm workers); ``aws_proxy`` (every AWS call of the functions, authorised
  against their roles: ``iam_policy``), ``aws_calls`` (the calls as the IAM actions and resources
  they need, recorded: ``recorded_calls``);
- event sources: ``sqs_source``, ``stream_source`` (Kinesis + DynamoDB Streams),
  ``sns_source`` (SNS), ``eventbridge_source`` and ``s3_source`` (fed through an internal queue:
  ``relay``), ``async_invoker`` (Lambda's asynchronous invocation), ``ttl`` (TTL emulation),
  ``filters`` (filterPatterns, by moto's matcher), ``destinations`` (failure records), ``poller``
  (threads, timing, journal);
- ``gateway`` (the HTTP API on 127.0.0.1, served by waitress: ``_wsgi``), ``lambda_api`` (Lambda's
  Invoke API of a running stack, and its client), ``running`` (the file that says a stack serves a
  service, which ``lambda-kit invoke`` reads), ``logfile`` (the JSON-lines log files, one per run),
  ``denied_calls`` (the calls a run's roles denied, for ``lambda-kit check``), ``terminal`` (what
  the CLI prints of logs and files, control characters escaped);
- ``stack`` (all of it together: ``LocalStack``), ``timeline`` (``lambda-kit trace``) and
  ``service_load`` (the service's own load module that ``lambda-kit run`` and ``soak`` drive).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__all__ = ["LocalStack", "Timing"]


_EXPORTS = {"LocalStack": "stack", "Timing": "poller"}


def __getattr__(name: str) -> object:
    # Lazy: the stack loads boto3 and moto (a second or more), which `lambda-kit trace`, reading
    # lambda_kit.local.timeline, does not need.
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lambda_kit.local' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)


if TYPE_CHECKING:
    from .poller import Timing
    from .stack import LocalStack
