"""``lambda-kit invoke --event api``: the path parameters of the route a request goes to, as API
Gateway fills them (``/orders/{id}``, greedy ``{proxy+}``), and ``--path-param`` by hand; what
invoke, check and help print; the help topics messages point at."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from _local_toys import vendor_lambda_kit

from lambda_kit.cli import main
from lambda_kit.cli._help import TOPICS
from lambda_kit.cli._invoke import path_parameters

SERVICE = """
service: {service}
provider:
  name: aws
functions:
  orders:
    handler: routes_app.handler
    events:
      - httpApi: 'GET /orders/{{id}}'
      - httpApi: 'DELETE /orders/{{id}}/items/{{item}}'
  files:
    handler: routes_app.handler
    events:
      - http: 'ANY files/{{proxy+}}'
  noisy:
    handler: routes_app.noisy
    url: true
"""

APP = """
from lambda_kit import api_handler, get_logger

log = get_logger("routes_app")


@api_handler
def handler(request, context):
    if request.method == "GET" and request.path.startswith("/orders/") and "id" not in request.path_params:
        return {"statusCode": 405, "body": {"error": "no id"}}
    event = request.event
    return {"statusCode": 200, "body": {
        "params": request.path_params, "path": request.path,
        "route": event.get("routeKey") or event.get("resource"),
    }}


@api_handler
def noisy(request, context):
    log.info("\\x1b]0;retitled\\x07\\r\\nforged row\\x9b2J")
    return {"statusCode": 200, "body": {"text": "\\x1b[31mred\\x7f\\u0085"}}
"""

CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@pytest.fixture
def project(tmp_path, unique_name):
    (tmp_path / "serverless.yml").write_text(
        textwrap.dedent(SERVICE.format(service=unique_name("routes"))), encoding="utf-8"
    )
    (tmp_path / "routes_app.py").write_text(textwrap.dedent(APP), encoding="utf-8")
    vendor_lambda_kit(tmp_path)
    return tmp_path / "serverless.yml"


def invoke(project: Path, capsys, *argv: str) -> tuple[int, dict, str]:
    status = main(["invoke", *argv, "--event", "api", "-c", str(project)])
    captured = capsys.readouterr()
    response = json.loads(captured.out.split("response:\n", 1)[1].split("\nlog lines", 1)[0])
    return status, json.loads(response["body"]), captured.err


@pytest.mark.parametrize(
    ("template", "path", "expected"),
    [
        ("/orders/{id}", "/orders/o-1", {"id": "o-1"}),
        ("/orders/{id}", "/orders/o%2F1/", {"id": "o/1"}),
        ("/orders/{id}", "/orders/o-1/items", None),
        ("/orders/{id}/items/{item}", "/orders/7/items/x", {"id": "7", "item": "x"}),
        ("/files/{proxy+}", "/files/a/b/c.txt", {"proxy": "a/b/c.txt"}),
        ("/files/{proxy+}", "/files/", None),
        ("/{order-id}", "/42", {"order-id": "42"}),
        ("/", "/", {}),
        ("/static", "/other", None),
    ],
)
def test_the_path_parameters_of_a_route(template, path, expected):
    assert path_parameters(template, path) == expected


def test_invoke_fills_the_path_parameters_of_the_route(project, aws_endpoint, capsys):
    status, body, err = invoke(project, capsys, "orders", "--path", "/orders/o-1")
    assert status == 0 and err == ""
    assert body == {"params": {"id": "o-1"}, "path": "/orders/o-1", "route": "GET /orders/{id}"}


def test_invoke_picks_the_route_the_path_matches(project, aws_endpoint, capsys):
    status, body, _ = invoke(project, capsys, "orders", "--method", "DELETE", "--path", "/orders/7/items/x")
    assert status == 0
    assert body["params"] == {"id": "7", "item": "x"} and body["route"] == "DELETE /orders/{id}/items/{item}"


def test_invoke_fills_a_greedy_parameter_on_a_rest_route(project, aws_endpoint, capsys):
    status, body, _ = invoke(project, capsys, "files", "--path", "/files/a/b.txt")
    assert status == 0
    assert body == {"params": {"proxy": "a/b.txt"}, "path": "/files/a/b.txt", "route": "/files/{proxy+}"}


def test_a_path_parameter_set_by_hand(project, aws_endpoint, capsys):
    status, body, _ = invoke(
        project,
        capsys,
        "orders",
        "--path",
        "/orders/o-1",
        "--path-param",
        "id=o-2",
        "--path-param",
        "extra=a=b",
    )
    assert status == 0 and body["params"] == {"id": "o-2", "extra": "a=b"}


def test_a_path_no_route_takes_is_sent_with_a_warning(project, aws_endpoint, capsys):
    status, body, err = invoke(project, capsys, "orders", "--path", "/customers/c-1")
    assert status == 0 and body == {"params": {}, "path": "/customers/c-1", "route": "GET /orders/{id}"}
    assert err.splitlines()[0] == (
        "lambda-kit invoke: warning: --path /customers/c-1 is none of orders's routes "
        "(GET /orders/{id}, DELETE /orders/{id}/items/{item})"
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["orders", "--event", "sqs", "--path-param", "id=1"],
            "lambda-kit invoke: --path-param only apply to --event api, not --event sqs",
        ),
        (
            ["noisy", "--event", "api", "--path-param", "id=1"],
            "lambda-kit invoke: --path-param: noisy's front door (url) has no path parameters",
        ),
    ],
)
def test_path_parameters_where_there_are_none_are_one_line(project, aws_endpoint, capsys, argv, expected):
    assert main(["invoke", *argv, "-c", str(project)]) == 2
    assert capsys.readouterr().err.splitlines() == [expected]


def test_a_bad_path_parameter_is_one_line(capsys):
    with pytest.raises(SystemExit):
        main(["invoke", "orders", "--event", "api", "--path-param", "id"])
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(
        "lambda-kit invoke: argument --path-param: 'id' is not a path parameter: NAME=VALUE"
    )


# --- what invoke, check and help print ------------------------------------------------------------------


def test_invoke_escapes_what_the_function_logs_and_returns(project, aws_endpoint, capsys):
    assert main(["invoke", "noisy", "--event", "api", "-c", str(project)]) == 0
    out = capsys.readouterr().out
    assert not CONTROL.search(out), repr(out)
    assert "\\u001b]0;retitled" in out or "\\x1b]0;retitled" in out
    assert "\\x9b2J" in out and "\\x7f" in out and "\\x85" in out


def test_check_escapes_what_serverless_yml_holds(tmp_path, capsys):
    path = tmp_path / "serverless.yml"
    path.write_text(
        'service: s\nfunctions:\n  f:\n    handler: "handlers/\\e]0;x\\a\\rmod.handler"\n', encoding="utf-8"
    )
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert not CONTROL.search(out)
    assert "handlers/\\x1b]0;x\\x07\\rmod" in out


def test_help_prints_each_topic(capsys):
    assert main(["help"]) == 0
    listing = capsys.readouterr().out
    for topic in TOPICS:
        assert main(["help", topic]) == 0
        text = capsys.readouterr().out
        assert text == TOPICS[topic] and f"  {topic} " in listing


def test_every_help_topic_a_message_names_exists():
    """Messages point at ``lambda-kit help TOPIC`` (a wheel has no docs/): each such topic is there."""
    package = Path(__file__).resolve().parent.parent / "lambda_kit"
    named = {
        topic
        for path in package.rglob("*.py")
        for topic in re.findall(r"lambda-kit help ([a-z]+)", path.read_text())
    }
    assert named and named <= set(TOPICS), named - set(TOPICS)
    docs_pointers = [
        path for path in package.rglob("*.py") if re.search(r"see docs/\S+\.md", path.read_text())
    ]
    assert docs_pointers == []
