"""``lambda-kit run`` and ``soak`` drive the service's own load (``custom.lambdaKit`` in its
serverless.yml): a service that names none gets one line and nothing is started or sent; a
service's own load module runs on the started stack with its own options."""

from __future__ import annotations

import textwrap

import pytest
from _local_toys import vendor_lambda_kit

from lambda_kit.cli import main

SERVICE = """
service: {service}
provider:
  name: aws
functions:
  echo:
    handler: echo_app.handler
    events:
      - httpApi: 'POST /echo'
{custom}
"""

APP = """
from lambda_kit import api_handler

SEEN = []


@api_handler
def handler(request, context):
    SEEN.append(request.json)
    return {"statusCode": 200, "body": {"echo": request.json}}
"""

LOAD = """
import http.client
import json
from urllib.parse import urlsplit

from lambda_kit.cli import COUNT


def options(parser):
    parser.add_argument("--requests", type=COUNT, default=2, help="requests to send")


def run(stack, args, out):
    url = urlsplit(stack.api_url)
    answered = 0
    for number in range(args.requests):
        connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
        connection.request("POST", "/echo", body=json.dumps({"n": number}), \
headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        answered += json.loads(response.read())["echo"] == {"n": number}
        connection.close()
    out.write(f"echo load: {answered} of {args.requests} answered\\n")
    return [] if answered == args.requests else [f"{args.requests - answered} not echoed"]


def soak(args, out):
    return ["the echo service has no soak yet"]
"""


def _project(tmp_path, unique_name, custom: str = "", load: str | None = LOAD):
    (tmp_path / "serverless.yml").write_text(
        textwrap.dedent(SERVICE.format(service=unique_name("load"), custom=custom)), encoding="utf-8"
    )
    (tmp_path / "echo_app.py").write_text(textwrap.dedent(APP), encoding="utf-8")
    vendor_lambda_kit(tmp_path)
    if load is not None:
        (tmp_path / "echo_load.py").write_text(textwrap.dedent(load), encoding="utf-8")
    return str(tmp_path / "serverless.yml")


@pytest.mark.parametrize("command", ["run", "soak"])
def test_a_service_without_a_load_gets_one_line_and_nothing_runs(tmp_path, unique_name, capsys, command):
    config = _project(tmp_path, unique_name)
    assert main([command, "-c", config, "--events", "5"]) == 2
    captured = capsys.readouterr()
    [line] = captured.err.splitlines()
    assert line == (
        f"lambda-kit {command}: {config} names no load for `lambda-kit {command}`: "
        f"add custom.lambdaKit.{command}: MODULE "
        f"(a module beside the service with {command}(...); see `lambda-kit help load`), "
        "or run `lambda-kit local` and send your own events"
    )
    assert captured.out == ""  # no stack started, nothing sent


BROKEN = [
    ("run: no_such_module", "custom.lambdaKit.run: module 'no_such_module' does not import from"),
    ("run: echo_app", "custom.lambdaKit.run: module 'echo_app' has no function run()"),
]


@pytest.mark.parametrize("setting, expected", BROKEN, ids=[s for s, _ in BROKEN])
def test_a_load_that_cannot_be_used_is_one_line(tmp_path, unique_name, capsys, setting, expected):
    config = _project(tmp_path, unique_name, custom=f"custom:\n  lambdaKit:\n    {setting}\n")
    assert main(["run", "-c", config]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("lambda-kit run: ") and expected in line, line


def test_the_services_own_load_runs_on_the_stack_with_its_options(tmp_path, unique_name, capsys):
    config = _project(
        tmp_path, unique_name, custom="custom:\n  lambdaKit:\n    run: echo_load\n    soak: echo_load\n"
    )
    assert (
        main(["run", "-c", config, "--port", "0", "--logs", str(tmp_path / "logs.jsonl"), "--requests", "3"])
        == 0
    )
    captured = capsys.readouterr()
    assert "echo load: 3 of 3 answered" in captured.out and captured.err == ""
    # the load's own options: bounded like lambda_kit's, one line; listed in --help
    with pytest.raises(SystemExit) as exit_:
        main(["run", "-c", config, "--requests", "0"])
    assert exit_.value.code == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line == (
        "lambda-kit run: argument --requests: 0 is out of range: a count must be at least 1 "
        "(see lambda-kit run --help)"
    )
    with pytest.raises(SystemExit) as exit_:
        main(["run", "-c", config, "--help"])
    assert exit_.value.code == 0
    assert "options of echo_load (the service's load):\n  --requests REQUESTS" in capsys.readouterr().out
    # what the load reports failed is the command's failure
    assert main(["soak", "-c", config, "--timeout", "5"]) == 1
    assert capsys.readouterr().err == "lambda-kit soak: FAILED: the echo service has no soak yet\n"
