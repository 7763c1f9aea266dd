"""The ``lambda-kit`` command's options: bad values are one line, ``invoke`` reports failures in its
exit status, takes a query string and warns when the event does not fit the function, ``check``
takes ``-c`` like the other commands."""

from __future__ import annotations

import argparse
import json
import textwrap

import pytest
from _local_toys import vendor_lambda_kit

from lambda_kit.cli import main

SERVICE = """
service: {service}
provider:
  name: aws
functions:
  worker:
    handler: options_app.worker
    events:
      - sqs:
          arn: !GetAtt Jobs.Arn
          functionResponseType: ReportBatchItemFailures
  api:
    handler: options_app.api
    events:
      - httpApi: 'GET /echo'
  notify:
    handler: options_app.notify
    events:
      - sns: {service}-topic
resources:
  Resources:
    Jobs:
      Type: AWS::SQS::Queue
      Properties:
        QueueName: {service}-jobs
"""

APP = """
from lambda_kit import api_handler, sns_handler, sqs_handler


@sqs_handler
def worker(message, context):
    return message


@api_handler
def api(request, context):
    if request.query.get("boom"):
        raise RuntimeError("exploded")
    return {"statusCode": 200, "body": {"path": request.path, "query": request.query}}


@sns_handler
def notify(message, context):
    raise ValueError("cannot notify")
"""


@pytest.fixture
def project(tmp_path, unique_name):
    (tmp_path / "serverless.yml").write_text(
        textwrap.dedent(SERVICE.format(service=unique_name("opts"))), encoding="utf-8"
    )
    (tmp_path / "options_app.py").write_text(textwrap.dedent(APP), encoding="utf-8")
    vendor_lambda_kit(tmp_path)
    return tmp_path / "serverless.yml"


def _response(out: str) -> dict:
    text = out.split("response:\n", 1)[1].split("\nlog lines", 1)[0]
    return json.loads(text)


# --- bad option values: one line, exit 2, for every command ----------------------------------------

BAD_VALUES = [
    (
        ["run", "--port", "99999"],
        "argument --port: 99999 is out of range: a TCP port (0: any free port) must be between 0 and 65535",
    ),
    (["local", "--port", "-1"], "argument --port: -1 is out of range"),
    (["local", "--port", "http"], "argument --port: 'http' is not an integer"),
    (["run", "--events", "0"], "argument --events: 0 is out of range: a count must be at least 1"),
    (["run", "--articles", "-3"], "argument --articles: -3 is out of range"),
    (
        ["run", "--duplicates", "2"],
        "argument --duplicates: 2 is out of range: a share of the events must be between 0 and 0.9",
    ),
    (["run", "--duplicates", "nan"], "argument --duplicates: nan is out of range"),
    (["run", "--poison", "-1"], "argument --poison: -1 is out of range"),
    (["soak", "--events", "-5"], "argument --events: -5 is out of range"),
    (
        ["soak", "--fault-rate", "0.9"],
        "argument --fault-rate: 0.9 is out of range: a share must be between 0 and 0.5",
    ),
    (["soak", "--timeout", "0"], "argument --timeout: 0 is out of range"),
    (["soak", "--seed", "x"], "argument --seed: 'x' is not an integer"),
    (
        ["invoke", "worker", "--event", "api", "--method", "GE T"],
        "argument --method: 'GE T' is not an HTTP method",
    ),
    (
        ["invoke", "worker", "--event", "api", "--path", "echo"],
        "argument --path: 'echo' is not a request path",
    ),
    (["invoke", "worker", "--event", "api", "--path", "/echo?a=1"], "the query string goes in --query"),
    (
        ["invoke", "worker", "--event", "api", "--query", "a=1&&b"],
        "argument --query: 'a=1&&b' is not a query string",
    ),
    (["invoke", "worker", "--event", "pigeon"], "argument --event: invalid choice: 'pigeon'"),
    (["trace"], "the following arguments are required: ID"),
    (["trace", "T-1", "--aws", "--since", "soon"], "argument --since: 'soon' is not a time span"),
    (["trace", "T-1", "--aws", "--since=-1h"], "argument --since: '-1h' is not a time span"),
    (["trace", "T-1", "--logs", "/"], "argument --logs: / is a directory"),
    (["local", "--logs", "/"], "argument --logs: / is a directory"),
    (["soak", "--logs", "/"], "argument --logs: / is a directory"),
    (["check", "a.yml", "b.yml"], "unrecognized arguments: b.yml"),
    (["invoke", "worker", "--event", "sqs", "--port", "99999"], "unrecognized arguments: --port 99999"),
    (["soak", "--events", "10", "--port", "1"], "unrecognized arguments: --port 1"),
]


@pytest.mark.parametrize("argv, expected", BAD_VALUES, ids=[" ".join(a) for a, _ in BAD_VALUES])
def test_a_bad_option_value_is_one_line(argv, expected, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.splitlines()
    # the command's name (argparse reports unrecognized arguments at the top level)
    assert line.startswith((f"lambda-kit {argv[0]}: ", "lambda-kit: ")) and expected in line, line
    assert line.endswith("--help)") and "usage:" not in captured.err


def test_good_option_values_at_the_bounds_pass(capsys):
    # parsing only: the bounds themselves are accepted
    from lambda_kit.cli import build_parser

    args = build_parser().parse_args(["run", "--port", "65535"])
    assert args.port == 65535
    # the example service's demo options (loads.demo, added to `lambda-kit run` by serverless.yml)
    from loads import demo

    parser = argparse.ArgumentParser()
    demo.options(parser)
    args = parser.parse_args(["--events", "1", "--duplicates", "0.9", "--poison", "0"])
    assert (args.events, args.duplicates, args.poison) == (1, 0.9, 0)
    args = build_parser().parse_args(
        ["invoke", "api", "--event", "api", "--method", "post", "--query", "?a=1&a=2&b=x%20y&c="]
    )
    assert args.method == "POST" and args.query == {"a": ["1", "2"], "b": "x y", "c": ""}


def test_a_bad_trace_id_is_one_line(project, capsys):
    assert main(["invoke", "worker", "--event", "sqs", "--trace-id", "two words", "-c", str(project)]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert (
        line
        == "lambda-kit invoke: --trace-id 'two words' is not a trace id (1-128 letters, digits and -_.:=;/+)"
    )


def test_http_options_need_an_api_event(project, capsys):
    assert (
        main(["invoke", "worker", "--event", "sqs", "--query", "a=1", "--path", "/x", "-c", str(project)])
        == 2
    )
    [line] = capsys.readouterr().err.splitlines()
    assert line == "lambda-kit invoke: --path, --query only apply to --event api, not --event sqs"


# --- invoke: the query string, the exit status, the event kind --------------------------------------


def test_invoke_passes_the_query_string(project, aws_endpoint, capsys):
    assert (
        main(["invoke", "api", "--event", "api", "--query", "url=myblog.com%2Fa&days=7", "-c", str(project)])
        == 0
    )
    captured = capsys.readouterr()
    response = _response(captured.out)
    assert response["statusCode"] == 200
    assert json.loads(response["body"]) == {"path": "/echo", "query": {"url": "myblog.com/a", "days": "7"}}
    assert captured.err == ""


def test_invoke_exits_one_on_an_http_5xx(project, aws_endpoint, capsys):
    assert main(["invoke", "api", "--event", "api", "--query", "boom=1", "-c", str(project)]) == 1
    captured = capsys.readouterr()
    assert _response(captured.out)["statusCode"] == 500
    assert captured.err == "lambda-kit invoke: FAILED: HTTP 500\n"


def test_invoke_exits_one_when_the_function_raises(project, aws_endpoint, capsys):
    assert main(["invoke", "notify", "--event", "sns", "--body", '{"n": 1}', "-c", str(project)]) == 1
    captured = capsys.readouterr()
    assert "error: ValueError: cannot notify" in captured.out
    assert captured.err == "lambda-kit invoke: FAILED: the function raised ValueError\n"


def test_invoke_exits_zero_when_every_record_succeeds(project, aws_endpoint, capsys):
    assert main(["invoke", "worker", "--event", "sqs", "--body", '{"n": 1}', "-c", str(project)]) == 0
    captured = capsys.readouterr()
    assert _response(captured.out) == {"batchItemFailures": []}
    assert captured.err == ""


def test_invoke_warns_when_the_event_kind_does_not_fit_the_function(project, aws_endpoint, capsys):
    main(["invoke", "worker", "--event", "sns", "--body", '{"n": 1}', "-c", str(project)])
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"lambda-kit invoke: warning: worker gets sqs events in {project}, not sns"
    main(["invoke", "api", "--event", "kinesis", "--body", '{"n": 1}', "-c", str(project)])
    assert (
        capsys.readouterr().err.splitlines()[0]
        == f"lambda-kit invoke: warning: api gets api events in {project}, not kinesis"
    )


# --- check takes -c ---------------------------------------------------------------------------------


def test_check_takes_the_path_positionally_or_with_c(project, capsys):
    positional = main(["check", str(project)])
    out_positional = capsys.readouterr().out
    assert main(["check", "-c", str(project)]) == positional
    assert capsys.readouterr().out == out_positional
    assert f"{project}: 3 functions" in out_positional


def test_check_with_two_different_paths_is_one_line(project, tmp_path, capsys):
    assert main(["check", str(project), "-c", str(tmp_path / "other.yml")]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("lambda-kit check: two paths given")


def test_check_without_a_file_is_one_line(tmp_path, capsys):
    assert main(["check", "-c", str(tmp_path / "missing.yml")]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert "missing.yml not found" in line


def test_no_iam_turns_the_authorisation_off_for_local_and_run():
    from lambda_kit.cli import build_parser

    for command in ("local", "run"):
        assert build_parser().parse_args([command]).iam is True
        assert build_parser().parse_args([command, "--no-iam"]).iam is False
