"""`lambda-kit check` reads the code against the config (issue 32): each mistake a service grown
from the docs made, which passed check and failed on AWS, is now an error naming the fix; the
correct service passes. The services are written to tmp_path: a Router behind `api_handler`, its
`httpApi` events, a requirements file bundled by serverless-python-requirements."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import yaml
from _packaging import package_offline

from lambda_kit.cli import main
from lambda_kit.local.denied_calls import DeniedCalls

ROOT = Path(__file__).resolve().parent.parent

API = """\
from dataclasses import dataclass

from lambda_kit import Router, api_handler

router = Router()


@dataclass
class NewOrder:
    item: str
    quantity: int


@router.post("/orders", model=NewOrder)
def place_order(request, context):
    return {"item": request.model.item}, 201


@router.get("/orders/{id}")
def get_order(request, context):
    return {"id": request.path_params["id"]}


handler = api_handler(router)
"""

SERVICE = {
    "service": "shop",
    "frameworkVersion": "3",
    "plugins": ["serverless-python-requirements"],
    "provider": {"name": "aws", "runtime": "python3.12"},
    "package": {"patterns": ["!**", "handlers/**"]},
    "functions": {
        "api": {
            "handler": "handlers/api.handler",
            "events": [{"httpApi": "POST /orders"}, {"httpApi": "GET /orders/{id}"}],
        }
    },
}
REQUIREMENTS = "lambda-event-kit[fast,pydantic]\n"


def write(
    tmp_path: Path, api: str = API, config: dict | None = None, requirements: str = REQUIREMENTS
) -> Path:
    (tmp_path / "handlers").mkdir(exist_ok=True)
    (tmp_path / "handlers" / "__init__.py").write_text("")
    (tmp_path / "handlers" / "api.py").write_text(api)
    (tmp_path / "requirements.txt").write_text(requirements)
    path = tmp_path / "serverless.yml"
    path.write_text(yaml.safe_dump(config or SERVICE, sort_keys=False))
    return path


def check(path: Path, capsys) -> tuple[int, list[str]]:
    status = main(["check", str(path)])
    out, err = capsys.readouterr()
    return status, [line for line in (out + err).splitlines() if line.startswith(("error:", "warning:"))]


def with_events(*events: object) -> dict:
    config = yaml.safe_load(yaml.safe_dump(SERVICE))
    config["functions"]["api"]["events"] = list(events)
    return config


def test_the_correct_service_passes(tmp_path, capsys):
    status = main(["check", str(write(tmp_path))])
    out = capsys.readouterr().out.splitlines()
    assert status == 0
    assert out == [f"lambda-kit check ok: {tmp_path / 'serverless.yml'}: 1 functions, 0 errors, 0 warnings"]


# --- the mistakes of issue 32 -------------------------------------------------------------------------


def test_a_route_typo_is_an_error_both_ways(tmp_path, capsys):
    status, lines = check(write(tmp_path, API.replace('"/orders/{id}"', '"/ordrs/{id}"')), capsys)
    assert status == 1
    assert lines == [
        "error: api: route GET /ordrs/{id} (handlers/api.py:19) has no httpApi event that sends to it (its "
        "event 'GET /orders/{id}' looks like a typo of it): API Gateway answers 404 before the function "
        "runs; add - httpApi: 'GET /ordrs/{id}' to its events, or send everything to the router with - "
        "httpApi: '*'",
        "error: api: its httpApi event 'GET /orders/{id}' reaches no route: the router answers every request "
        "it sends 404: no route of the router matches its path; fix the event or add the route (routes: POST "
        "/orders, GET /ordrs/{id})",
    ]


def test_gte_is_an_error_before_osls_crashes_on_it(tmp_path, capsys):
    status, lines = check(
        write(tmp_path, config=with_events({"httpApi": "POST /orders"}, {"httpApi": "GTE /orders/{id}"})),
        capsys,
    )
    assert status == 1
    assert lines[0] == (
        "error: api: its httpApi event 'GTE /orders/{id}': not 'METHOD /path' (METHOD one of ANY, GET, POST, "
        "PUT, PATCH, OPTIONS, HEAD, DELETE) nor '*' (GTE is no HTTP method: GET?): osls's `serverless "
        "package` stops on it with a TypeError; write it as 'GET /orders/{id}'"
    )
    # and the route it was meant for is then sent nowhere
    assert lines[1].startswith("error: api: route GET /orders/{id} (handlers/api.py:19) has no httpApi event")


def test_a_handler_at_the_router_is_an_error_with_the_fix(tmp_path, capsys):
    config = yaml.safe_load(yaml.safe_dump(SERVICE))
    config["functions"]["api"]["handler"] = "handlers/api.router"
    status, lines = check(write(tmp_path, config=config), capsys)
    assert status == 1
    assert lines == [
        "error: api: handler 'handlers/api.router' is a Router, not a handler: Lambda would call it with the "
        "raw event and every request fails (AttributeError); add handler = api_handler(router) to "
        "handlers/api.py and point the function at handlers/api.handler"
    ]


def test_a_class_as_the_handler_is_an_error(tmp_path, capsys):
    config = yaml.safe_load(yaml.safe_dump(SERVICE))
    config["functions"]["api"]["handler"] = "handlers/api.NewOrder"
    status, lines = check(write(tmp_path, config=config), capsys)
    assert status == 1
    assert lines == [
        "error: api: handler 'handlers/api.NewOrder' is a class: Lambda would call the class with "
        "(event, context), making an instance instead of handling the event; point the handler at a "
        "decorated function"
    ]


def test_a_powertools_style_route_is_an_error_naming_the_signature(tmp_path, capsys):
    api = API.replace(
        'def get_order(request, context):\n    return {"id": request.path_params["id"]}',
        'def get_order(id):\n    return {"id": id}',
    )
    status, lines = check(write(tmp_path, api), capsys)
    assert status == 1
    assert lines == [
        "error: api: route GET /orders/{id}: get_order(id) (handlers/api.py:19) cannot be called as the "
        "router calls it, with (request, context): every request answers 500; write def "
        "get_order(request, context) and read path parameters from request.path_params"
    ]


def test_a_decorated_function_that_cannot_take_the_payload_is_an_error(tmp_path, capsys):
    api = "from lambda_kit import api_handler\n\n\n@api_handler\ndef handler(request):\n    return {}\n"
    status, lines = check(write(tmp_path, api, config=with_events({"httpApi": "*"})), capsys)
    assert status == 1
    assert lines == [
        "error: api: handler(request) (handlers/api.py:4) cannot be called as api_handler calls it, with "
        "(request, context): every request answers 500; write def handler(request, context)"
    ]


def test_a_model_without_pydantic_in_the_zip_is_an_error_naming_the_line(tmp_path, capsys):
    status, lines = check(write(tmp_path, requirements="lambda-event-kit[fast]==0.1.0\n"), capsys)
    assert status == 1
    assert lines == [
        "error: api: model=NewOrder on route POST /orders (handlers/api.py:14) needs pydantic, which the zip "
        "would not hold (requirements.txt does not bring it): on Lambda the import fails with "
        "Runtime.ImportModuleError (No module named 'pydantic'); write its lambda_kit line as "
        "lambda-event-kit[fast,pydantic]==0.1.0 in requirements.txt"
    ]


def test_the_scaffolds_wheel_line_gets_its_pydantic_extra(tmp_path, capsys):
    wheel = "./vendor/lambda_event_kit-0.1.0-py3-none-any.whl"
    status, lines = check(write(tmp_path, requirements=f"{wheel}[fast]\n"), capsys)
    assert status == 1 and len(lines) == 1
    assert lines[0].endswith(f"write its lambda_kit line as {wheel}[fast,pydantic] in requirements.txt")
    status, lines = check(write(tmp_path, requirements=f"{wheel}[pydantic]\n"), capsys)
    assert (status, lines) == (0, [])


def test_pydantic_brought_by_another_requirement_is_enough(tmp_path, capsys):
    """The requirements' own dependencies reach the zip: pydantic-settings (installed here) needs pydantic."""
    assert check(write(tmp_path, requirements="lambda-event-kit\npydantic-settings\n"), capsys) == (0, [])


def test_extras_that_require_their_own_distribution_are_followed_once(tmp_path, capsys):
    """lambda-event-kit[all] requires lambda-event-kit[fast,pydantic,...]: read once, pydantic in."""
    assert check(write(tmp_path, requirements="lambda-event-kit[all]\n"), capsys) == (0, [])


def test_a_missing_requirement_is_an_error_naming_the_line(tmp_path, capsys):
    api = "import json\n\nimport yaml\n" + API
    status, lines = check(write(tmp_path, api), capsys)
    assert status == 1
    assert lines == [
        "error: api: handlers/api.py:3 imports yaml, which the zip would not hold (requirements.txt does not "
        "bring it, nor the package patterns or the Lambda runtime): Lambda fails the import with "
        "Runtime.ImportModuleError; add the line pyyaml to requirements.txt"
    ]
    (tmp_path / "requirements.txt").write_text(REQUIREMENTS + "PyYAML>=6\n")
    assert check(tmp_path / "serverless.yml", capsys) == (0, [])


def test_a_function_with_layers_is_not_checked_for_packages(tmp_path, capsys):
    """A layer may bring any package, and check cannot see inside one."""
    config = yaml.safe_load(yaml.safe_dump(SERVICE))
    config["functions"]["api"]["layers"] = ["arn:aws:lambda:us-east-1:123456789012:layer:yaml:1"]
    assert check(write(tmp_path, "import yaml\n" + API, config=config), capsys) == (0, [])


def test_imports_of_the_modules_the_handler_imports_are_followed(tmp_path, capsys):
    write(tmp_path, "from handlers import store\n" + API)
    (tmp_path / "handlers" / "store.py").write_text("from . import deep\n")
    (tmp_path / "handlers" / "deep.py").write_text("def f():\n    import yaml\n    return yaml\n")
    status, lines = check(tmp_path / "serverless.yml", capsys)
    assert status == 1
    assert [line.split(": ")[2].split(",")[0] for line in lines] == ["handlers/deep.py:2 imports yaml"]


def test_optional_imports_and_type_checking_imports_are_not_required(tmp_path, capsys):
    api = textwrap.dedent(
        """\
        from typing import TYPE_CHECKING

        try:
            import ujson as json
        except ImportError:
            import json

        if TYPE_CHECKING:
            import mypy_boto3_sqs
        import boto3
        import botocore.exceptions
        """
    )
    assert check(write(tmp_path, api + API), capsys) == (0, [])


def test_the_runtime_and_the_standard_library_are_there(tmp_path, capsys):
    api = "import boto3\nimport dateutil.parser\nimport urllib3\nimport sqlite3\nimport tomllib\n" + API
    assert check(write(tmp_path, api), capsys) == (0, [])


def test_a_module_the_package_patterns_leave_out_is_an_error(tmp_path, capsys):
    write(tmp_path, "import shared\n" + API)
    (tmp_path / "shared.py").write_text("")
    status, lines = check(tmp_path / "serverless.yml", capsys)
    assert status == 1
    assert lines == [
        "error: api: shared.py is imported by the handler, but the package patterns leave it out of the zip: "
        "Lambda fails the import with Runtime.ImportModuleError; add shared.py to package.patterns"
    ]


def test_without_the_plugin_nothing_of_the_requirements_reaches_the_zip(tmp_path, capsys):
    config = yaml.safe_load(yaml.safe_dump(SERVICE))
    del config["plugins"]
    status, lines = check(write(tmp_path, config=config), capsys)
    assert status == 1
    assert lines[0] == (
        "error: api: model=NewOrder on route POST /orders (handlers/api.py:14) needs pydantic, which the zip "
        "would not hold (nothing of requirements.txt reaches the zip (serverless-python-requirements is not "
        "among the plugins)): on Lambda the import fails with Runtime.ImportModuleError (No module named "
        "'pydantic'); add serverless-python-requirements to plugins, and write its lambda_kit line as "
        "lambda-event-kit[fast,pydantic] in requirements.txt"
    )


# --- routes and events --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "events",
    [
        [{"httpApi": "*"}],
        [{"httpApi": {"method": "*", "path": "*"}}],
        [{"httpApi": "ANY /{proxy+}"}],
        [{"http": "ANY /{proxy+}"}],
        [{"httpApi": {"method": "ANY", "path": "/orders/{proxy+}"}}, {"httpApi": "POST /orders"}],
        [{"httpApi": "ANY /orders"}, {"httpApi": "GET /orders/{order}"}],
    ],
    ids=["star", "star_mapping", "proxy", "rest_proxy", "greedy_under_orders", "any_and_other_names"],
)
def test_a_catch_all_covers_the_routes(tmp_path, capsys, events):
    assert check(write(tmp_path, config=with_events(*events)), capsys) == (0, [])


def test_the_root_is_not_under_a_greedy_path(tmp_path, capsys):
    api = API + '\n\n@router.get("/")\ndef home(request, context):\n    return {}\n'
    status, lines = check(write(tmp_path, api, config=with_events({"httpApi": "ANY /{proxy+}"})), capsys)
    assert status == 1
    assert lines == [
        "error: api: route GET / (handlers/api.py:27) has no httpApi event that sends to it (ANY /{proxy+} "
        "takes every path but / itself): API Gateway answers 404 before the function runs; add - httpApi: "
        "'GET /' to its events, or send everything to the router with - httpApi: '*'"
    ]


def test_an_event_whose_method_the_router_lacks_answers_405(tmp_path, capsys):
    config = with_events(
        {"httpApi": "POST /orders"}, {"httpApi": "GET /orders/{id}"}, {"httpApi": "DELETE /orders/{id}"}
    )
    status, lines = check(write(tmp_path, config=config), capsys)
    assert status == 1
    assert lines == [
        "error: api: its httpApi event 'DELETE /orders/{id}' reaches no route: the router answers every "
        "request it sends 405: the router has no DELETE route there (it has GET); fix the event or add the "
        "route (routes: POST /orders, GET /orders/{id})"
    ]


def test_head_and_options_reach_the_router_it_answers_them(tmp_path, capsys):
    config = with_events(
        {"httpApi": "POST /orders"},
        {"httpApi": "GET /orders/{id}"},
        {"httpApi": "HEAD /orders/{id}"},
        {"httpApi": "OPTIONS /orders"},
    )
    assert check(write(tmp_path, config=config), capsys) == (0, [])


@pytest.mark.parametrize(
    ("event", "problem"),
    [
        ({"httpApi": "GET orders"}, "osls's `serverless package` stops on it with a TypeError"),
        ({"httpApi": "GET  /orders"}, "osls's `serverless package` stops on it with a TypeError"),
        ({"http": "GET"}, "osls's `serverless package` stops on it with a TypeError"),
        (
            {"http": {"path": "/orders"}},
            "no method: osls's `serverless package` stops on it with a TypeError",
        ),
        ({"httpApi": {"method": "GTE", "path": "/orders"}}, "method 'GTE' is none of"),
        ({"http": {"method": "FETCH", "path": "/orders"}}, "API Gateway refuses it at deploy"),
        ({"httpApi": {"method": "GET", "path": "orders"}}, "path 'orders' must start with /: write /orders"),
        ({"httpApi": "GET /orders//items"}, "has an empty segment (//)"),
        ({"httpApi": "GET /orders/{proxy+}/items"}, "the greedy {proxy+} must be the last segment"),
        ({"httpApi": "GET /orders/{id"}, "'{id' is not a parameter"),
        ({"httpApi": "GET /orders/id-{id}"}, "'id-{id}' is not a parameter"),
        ({"httpApi": "GET /a/{id}/b/{id}"}, "names the parameter id twice"),
        ({"http": "GET /orders/~me"}, "a REST API's path parts take only a-zA-Z0-9._-"),
        ({"httpApi": {"method": "GET", "path": "*"}}, "path '*' (the $default route) takes every method"),
        ({"httpApi": {"method": "GET"}}, "no path: add path"),
        ({"http": "*"}, "a REST API has no '*' route: write - http: 'ANY /{proxy+}'"),
        ({"http": {"method": "*", "path": "*"}}, "API Gateway refuses the path part '*' at deploy"),
    ],
    ids=[
        "no_slash",
        "two_spaces",
        "rest_no_path",
        "rest_no_method",
        "bad_method",
        "rest_bad_method",
        "relative_path",
        "empty_segment",
        "greedy_not_last",
        "open_brace",
        "partial_parameter",
        "parameter_twice",
        "rest_tilde",
        "default_with_method",
        "no_path",
        "rest_star",
        "rest_star_path",
    ],
)
def test_a_route_api_gateway_or_osls_refuses_is_an_error(tmp_path, capsys, event, problem):
    status, lines = check(write(tmp_path, config=with_events({"httpApi": "*"}, event)), capsys)
    assert status == 1
    assert lines and problem in lines[0], lines


def test_a_route_declared_twice_is_an_error(tmp_path, capsys):
    config = with_events(
        {"httpApi": "*"}, {"httpApi": "POST /orders"}, {"httpApi": {"method": "post", "path": "/orders"}}
    )
    status, lines = check(write(tmp_path, config=config), capsys)
    assert status == 1
    assert lines == [
        "error: api: its httpApi route POST /orders is also api's: osls refuses a route twice; keep one"
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    "event",
    [
        {"httpApi": "GTE /orders/{id}"},
        {"httpApi": "GET orders"},
        {"http": "GET"},
        {"http": {"path": "/orders"}},
        {"http": "*"},
    ],
    ids=["gte", "no_slash", "rest_no_path", "rest_no_method", "rest_star"],
)
def test_what_check_says_osls_crashes_on_it_does(tmp_path, capsys, event):
    """The real `serverless package` (osls) on the event check calls a TypeError: it stops with one."""
    config = with_events(event)
    del config["plugins"]
    status, lines = check(write(tmp_path, config=config), capsys)
    assert status == 1 and "stops on it with a TypeError" in lines[0]
    packaged = package_offline(tmp_path)
    assert packaged.returncode == 1
    assert "TypeError" in packaged.stdout + packaged.stderr


# --- the denials a local run recorded -----------------------------------------------------------------


def test_a_call_the_role_denied_in_a_local_run_is_an_error(tmp_path, capsys):
    path = write(tmp_path)
    denied = DeniedCalls(path)  # what the local stack keeps while it runs
    arn = "arn:aws:kinesis:us-east-1:123456789012:stream/shop-dev-orders"
    for _ in range(3):
        denied.record("api", "kinesis:PutRecord", arn, resource_ref="OrdersStream.Arn", trace_id="T1")
    status, lines = check(path, capsys)
    assert status == 1
    assert lines == [
        f"error: api: the local run called kinesis:PutRecord on {arn} (3 calls, trace T1), which its role "
        "denies: on AWS it fails with AccessDeniedException; allow it in provider.iam.role.statements "
        "(Effect: Allow, Action: kinesis:PutRecord, Resource: !GetAtt OrdersStream.Arn)"
    ]
    started = json.loads((tmp_path / ".lambda-kit" / "denied-calls.json").read_text())["started"]
    path.write_text(path.read_text() + "# the role changed\n")
    status, lines = check(path, capsys)
    assert status == 0
    assert lines == [
        f"warning: IAM: the local run of {started} recorded 1 denied call under an older "
        "serverless.yml: run lambda-kit local again to check them against the roles as they are now"
    ]


def test_a_run_that_denied_nothing_and_a_broken_record(tmp_path, capsys):
    path = write(tmp_path)
    DeniedCalls(path)
    assert check(path, capsys) == (0, [])
    (tmp_path / ".lambda-kit" / "denied-calls.json").write_text("{not json")
    status, lines = check(path, capsys)
    assert status == 0
    assert lines == [
        f"warning: IAM: {tmp_path / '.lambda-kit' / 'denied-calls.json'} cannot be read (JSONDecodeError): "
        "delete it, or run the stack again"
    ]
