"""``Router`` inside ``api_handler``, every shape: path parameters from the template, which route a
request reaches, 404 / 405 with ``Allow``, HEAD and OPTIONS, and what ``api_handler`` keeps doing
around a route (trace id, log lines, ``HTTPError``, 500s, ``model=``, ``async def``)."""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import time

import pytest
from _hostile import captured, parse_lines
from _http_shapes import header_values, json_body, kind_of, sent_headers

from lambda_kit import HTTPError, Router, api_handler, current_trace_id
from lambda_kit.testing import API_VERSIONS, api_event, lambda_context

SHAPES = [*API_VERSIONS, "alb-multi"]


def request(shape, method="GET", path="/", **options):
    if shape == "alb-multi":
        return api_event(method, path, version="alb", multi_value=True, **options)
    return api_event(method, path, version=shape, **options)


def answer(handler, shape, method, path, **options):
    """(status, headers the client sees as {lower name: [values]}, body text) of one request."""
    event = request(shape, method, path, **options)
    response = handler(event, lambda_context())
    headers: dict[str, list[str]] = {}
    for name, value in sent_headers(response, kind_of(event)):
        headers.setdefault(name.lower(), []).append(value)
    return response["statusCode"], headers, response["body"]


def shop() -> Router:
    """A router with each kind of template: literal, parameter, greedy."""
    router = Router()

    @router.get("/orders")
    def orders(request, context):
        return {"orders": [], "page": request.query.get("page")}

    @router.post("/orders")
    def create(request, context):
        return request.json, 201, {"Location": "/orders/o-9"}

    @router.get("/orders/{id}")
    def order(request, context):
        return {"route": "order", "params": request.path_params}

    @router.get("/orders/latest")
    def latest(request, context):
        return {"route": "latest", "params": request.path_params}

    @router.route("/orders/{id}/items/{item}", methods=["GET", "DELETE"])
    def item(request, context):
        return {"route": "item", "method": request.method, "params": request.path_params}

    @router.get("/files/{path+}")
    def files(request, context):
        return {"route": "files", "params": request.path_params}

    @router.get("/")
    def root(request, context):
        return {"route": "root"}

    return router


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(
    ("method", "path", "route", "params"),
    [
        ("GET", "/orders/o-1", "order", {"id": "o-1"}),
        ("GET", "/orders/latest", "latest", {}),  # a literal path before a template
        ("GET", "/orders/o-1/items/i-2", "item", {"id": "o-1", "item": "i-2"}),
        ("DELETE", "/orders/o-1/items/i-2", "item", {"id": "o-1", "item": "i-2"}),
        ("GET", "/files/a/b/c.txt", "files", {"path": "a/b/c.txt"}),  # greedy: the rest of the path
        ("GET", "/orders/caf%C3%A9%20bar", "order", {"id": "café bar"}),  # percent-decoded
        ("GET", "/orders/o-1/", "order", {"id": "o-1"}),  # a trailing slash is ignored
        ("GET", "/", "root", None),
    ],
)
def test_a_request_reaches_its_route_with_the_templates_parameters(shape, method, path, route, params):
    handler = api_handler(shop())
    status, headers, body = answer(handler, shape, method, path)
    found = json.loads(body)
    assert status == 200 and headers["content-type"] == ["application/json"]
    assert found["route"] == route
    if params is not None:
        assert found["params"] == params


@pytest.mark.parametrize("shape", SHAPES)
def test_a_route_returns_what_any_api_handler_function_returns(shape):
    handler = api_handler(shop())
    status, headers, body = answer(handler, shape, "POST", "/orders", body={"sku": "s-1"})
    assert (status, json.loads(body), headers["location"]) == (201, {"sku": "s-1"}, ["/orders/o-9"])
    status, headers, body = answer(handler, shape, "GET", "/orders", query={"page": "2"})
    assert (status, json.loads(body)) == (200, {"orders": [], "page": "2"})


def test_the_events_own_path_parameters_stay_beside_the_templates():
    """Behind API Gateway's own ``/{proxy+}`` route the event carries ``proxy``; the router adds
    its template's."""
    handler = api_handler(shop())
    event = api_event("GET", "/orders/o-1", path_params={"proxy": "orders/o-1"}, route="GET /{proxy+}")
    assert json_body(handler(event, None))["params"] == {"proxy": "orders/o-1", "id": "o-1"}


def test_the_most_specific_template_wins_whatever_the_order_they_were_added_in():
    router = Router()
    for template in ("/{proxy+}", "/{a}/{b}", "/{a}/b", "/a/{b}", "/a/b/{c+}"):
        router.get(template)(lambda request, context, t=template: {"template": t})
    handler = api_handler(router)
    reached = {
        path: json_body(handler(api_event("GET", path), None))["template"]
        for path in ("/a/b", "/x/b", "/a/x", "/x/y", "/x", "/a/b/c/d", "/x/y/z")
    }
    assert reached == {
        "/a/b": "/a/{b}",
        "/x/b": "/{a}/b",
        "/a/x": "/a/{b}",
        "/x/y": "/{a}/{b}",
        "/x": "/{proxy+}",
        "/a/b/c/d": "/a/b/{c+}",
        "/x/y/z": "/{proxy+}",
    }


def test_a_request_goes_to_the_most_specific_template_that_takes_its_method():
    """As API Gateway: ``GET /orders/{id}`` and ``ANY /{proxy+}``: a POST to /orders/1 reaches the proxy."""
    router = Router()
    router.get("/orders/{id}")(lambda request, context: "order")
    router.route("/{proxy+}", methods=["GET", "POST"])(lambda request, context: "proxy")
    handler = api_handler(router)
    assert json_body(handler(api_event("GET", "/orders/1"), None)) == "order"
    assert json_body(handler(api_event("POST", "/orders/1"), None)) == "proxy"


# --- 404, 405, HEAD, OPTIONS ----------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("path", ["/nothing", "/orders/o-1/other", "/files", "/orders/o-1/items"])
def test_an_unknown_path_is_a_404_and_a_warning_line(shape, path):
    handler = api_handler(shop())
    with captured() as out:
        status, headers, body = answer(handler, shape, "GET", path, headers={"X-Trace-Id": "t-404"})
    assert (status, json.loads(body)) == (404, {"error": "Not Found", "trace_id": "t-404"})
    assert headers["x-trace-id"] == ["t-404"] and "allow" not in headers
    [failed] = [line for line in parse_lines(out) if line["message"] == "request failed"]
    assert (failed["level"], failed["status"], failed["trace_id"]) == ("WARN", 404, "t-404")


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("POST", "/orders/o-1", "GET, HEAD, OPTIONS"),
        ("PUT", "/orders", "GET, HEAD, OPTIONS, POST"),
        ("PATCH", "/orders/o-1/items/i-2", "DELETE, GET, HEAD, OPTIONS"),
        ("DELETE", "/files/a/b", "GET, HEAD, OPTIONS"),
    ],
)
def test_a_known_path_with_another_method_is_a_405_naming_the_allowed_ones(shape, method, path, allow):
    handler = api_handler(shop())
    status, headers, body = answer(handler, shape, method, path)
    assert status == 405 and json.loads(body)["error"] == "Method Not Allowed"
    assert headers["allow"] == [allow]


@pytest.mark.parametrize("shape", SHAPES)
def test_head_on_a_get_route_answers_as_get_without_the_body(shape):
    calls = []
    router = Router()

    @router.get("/report")
    def report(request, context):
        calls.append(request.method)
        return {
            "statusCode": 200,
            "headers": {"ETag": '"v1"'},
            "cookies": ["seen=1"],
            "body": {"big": "x" * 100},
        }

    handler = api_handler(router)
    traced = {"X-Trace-Id": "t-1"}
    get_status, get_headers, get_body = answer(handler, shape, "GET", "/report", headers=traced)
    status, headers, body = answer(handler, shape, "HEAD", "/report", headers={"X-Trace-Id": "t-1"})
    assert (status, headers, body) == (get_status, get_headers, "") and get_body
    assert headers["content-type"] == ["application/json"] and headers["etag"] == ['"v1"']
    assert calls == ["GET", "HEAD"]  # the GET route ran, and saw the request's own method


def test_head_answers_a_tuple_or_a_plain_value_without_the_body():
    router = Router()
    router.get("/tuple")(lambda request, context: ({"a": 1}, 202, {"X-A": "1"}))
    router.get("/bytes")(lambda request, context: b"\x00\x01")
    handler = api_handler(router)
    tuple_head = handler(api_event("HEAD", "/tuple"), None)
    assert (tuple_head["statusCode"], tuple_head["body"], tuple_head["headers"]["X-A"]) == (202, "", "1")
    bytes_head = handler(api_event("HEAD", "/bytes"), None)
    assert (bytes_head["body"], bytes_head["isBase64Encoded"]) == ("", False)
    assert bytes_head["headers"]["Content-Type"] == "application/octet-stream"


def test_a_route_of_its_own_takes_head_and_options_first():
    router = Router()
    router.get("/x")(lambda request, context: "get")
    router.head("/x")(lambda request, context: {"statusCode": 204, "headers": {"X-Head": "own"}})
    cors = {"statusCode": 200, "headers": {"Access-Control-Allow-Origin": "*"}}
    router.options("/x")(lambda request, context: cors)
    handler = api_handler(router)
    assert handler(api_event("HEAD", "/x"), None)["headers"]["X-Head"] == "own"
    options = handler(api_event("OPTIONS", "/x"), None)
    assert options["statusCode"] == 200 and options["headers"]["Access-Control-Allow-Origin"] == "*"


@pytest.mark.parametrize("shape", SHAPES)
def test_options_answers_204_with_allow(shape):
    handler = api_handler(shop())
    status, headers, body = answer(handler, shape, "OPTIONS", "/orders")
    assert (status, headers["allow"], body) == (204, ["GET, HEAD, OPTIONS, POST"], "")
    assert answer(handler, shape, "OPTIONS", "/nothing")[0] == 404


# --- inside api_handler ---------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
def test_trace_id_log_lines_and_errors_work_as_for_any_api_handler_function(shape):
    router = Router()

    @router.get("/trace")
    def trace(request, context):
        return {"trace": current_trace_id(), "request": request.trace_id}

    @router.get("/teapot")
    def teapot(request, context):
        raise HTTPError(418, "short and stout", headers={"X-Pot": "1"})

    @router.get("/boom")
    def boom(request, context):
        raise RuntimeError("password=hunter2")

    handler = api_handler(router)
    with captured() as out:
        status, headers, body = answer(handler, shape, "GET", "/trace", headers={"X-Trace-Id": "t-route"})
    assert (status, headers["x-trace-id"]) == (200, ["t-route"])
    assert json.loads(body) == {"trace": "t-route", "request": "t-route"}
    lines = parse_lines(out)
    assert [line["message"] for line in lines] == ["request received", "request processed"]
    assert all(line["trace_id"] == "t-route" for line in lines)
    assert lines[0]["path"] == "/trace" and lines[1]["result"] == {"trace": "t-route", "request": "t-route"}

    status, headers, body = answer(handler, shape, "GET", "/teapot")
    assert (status, json.loads(body)["error"], headers["x-pot"]) == (418, "short and stout", ["1"])
    with captured() as out:
        status, headers, body = answer(handler, shape, "GET", "/boom")
    assert (status, json.loads(body)["error"]) == (500, "Internal Server Error") and "hunter2" not in body
    [error] = [line for line in parse_lines(out) if line["level"] == "ERROR"]
    assert error["error_type"] == "RuntimeError"


def test_model_on_a_route_validates_the_body_into_request_model():
    pydantic = pytest.importorskip("pydantic")

    class Order(pydantic.BaseModel):
        sku: str
        qty: int

    router = Router()

    @router.post("/orders", model=Order)
    def create(request, context):
        return {"sku": request.model.sku, "qty": request.model.qty}

    @router.get("/orders")
    def listing(request, context):
        return {"model": request.model}

    handler = api_handler(router)
    created = handler(api_event("POST", "/orders", body={"sku": "s", "qty": "2"}), None)
    assert json_body(created) == {"sku": "s", "qty": 2}
    refused = handler(api_event("POST", "/orders", body={"sku": "s"}), None)
    assert refused["statusCode"] == 422
    assert json_body(refused)["error"] == "request body does not fit Order: qty: Field required"
    assert json_body(handler(api_event("GET", "/orders"), None)) == {"model": None}  # another route: no model
    with pytest.raises(TypeError, match="model=42 is not a type pydantic can validate"):
        Router().put("/x", model=42)


def test_an_async_def_route_is_awaited_and_head_on_it_too():
    router = Router()

    @router.get("/slow")
    async def slow(request, context):
        await asyncio.sleep(0)
        return {"slow": True}, 203

    handler = api_handler(router)
    got = handler(api_event("GET", "/slow"), None)
    assert (got["statusCode"], json_body(got)) == (203, {"slow": True})
    head = handler(api_event("HEAD", "/slow"), None)
    assert (head["statusCode"], head["body"]) == (203, "")


def test_an_api_handler_function_may_call_the_router_itself():
    router = Router()
    router.get("/orders/{id}")(lambda request, context: {"id": request.path_params["id"]})

    @api_handler(trace_header="X-Request-Id")
    def handler(request, context):
        return router(request, context)

    response = handler(api_event("GET", "/orders/o-7", headers={"X-Request-Id": "r-1"}), None)
    assert json_body(response) == {"id": "o-7"} and header_values(response, "v2", "X-Request-Id") == ["r-1"]


def test_the_route_decorators_return_the_function_unchanged():
    router = Router()

    def order(request, context):
        return "o"

    assert router.get("/a")(order) is order and router.route("/b", methods="PUT")(order) is order
    assert repr(router) == "Router(/a ['GET'], /b ['PUT'])"


# --- mistakes refused when the routes are written -------------------------------------------------


@pytest.mark.parametrize(
    ("add", "message"),
    [
        (lambda r: r.get("orders"), "route 'orders' must be a path starting with /"),
        (lambda r: r.get("/orders/{id"), "'{id' is not a path segment"),
        (lambda r: r.get("/orders/x{id}"), "'x{id}' is not a path segment"),
        (lambda r: r.get("/files/{path+}/raw"), "the greedy {path+} must be the last segment"),
        (lambda r: r.get("/a/{id}/b/{id}"), "names a parameter twice"),
        (lambda r: r.route("/a", methods=[]), "methods=[]: give one or more of GET, HEAD, POST"),
        (lambda r: r.route("/a", methods=["FETCH"]), "methods=['FETCH']"),
    ],
)
def test_a_template_or_method_that_cannot_work_is_refused_when_added(add, message):
    with pytest.raises(ValueError, match=message.replace("{", r"\{").replace("[", r"\[").replace("+", r"\+")):
        add(Router())(lambda request, context: None)


def test_two_routes_for_one_method_and_template_are_refused():
    router = Router()
    router.get("/orders/{id}")(lambda request, context: None)
    with pytest.raises(ValueError, match=r"GET /orders/\{id\} has two routes: remove one"):
        router.get("/orders/{id}/")(lambda request, context: None)
    with pytest.raises(ValueError, match="differ only in their parameters' names: name them alike"):
        router.delete("/orders/{order_id}")(lambda request, context: None)
    router.delete("/orders/{id}")(lambda request, context: None)  # the same template, another method


# --- many routes ------------------------------------------------------------------------------------


_runs = itertools.count()


def routed(count: int, stop_after: float | None = None) -> tuple[float, Router, str]:
    """(seconds to add ``count`` templates ``/<prefix><n>/{id}``, of distinct first segments, and
    answer one request; the router; the prefix); with ``stop_after``, given up (inf) once adding
    takes longer than that. Each run's templates are its own, so none is compiled already (``re``
    caches 512 patterns)."""
    prefix = f"/r{next(_runs)}-"
    started = time.process_time()  # CPU time: other work on a shared machine inflates it far less
    router = Router()
    for number in range(count):
        router.get(f"{prefix}{number}/{{id}}")(lambda request, context, n=number: {"n": n})
        if stop_after is not None and number % 100 == 0 and time.process_time() - started > stop_after:
            return math.inf, router, prefix
    with captured():
        answered = api_handler(router)(api_event("GET", f"{prefix}{count - 1}/x"), None)
    assert json_body(answered) == {"n": count - 1}
    return time.process_time() - started, router, prefix


def test_adding_a_route_costs_the_same_however_many_there_are():
    """5,000 routes cost about ten times 500, not a hundred (or a thousand, as when every route
    added sorted and indexed them all again): a ratio in one run, never a wall-clock figure."""
    small = min(routed(500)[0] for _ in range(3))
    large, router, prefix = min(routed(5_000, stop_after=40 * small) for _ in range(2))
    assert large / small < 40, f"5,000 routes took {large / small:.0f} times 500"
    # the index made at the first request still routes by specificity, and a route added after it too
    seventh = f"{prefix}7"
    router.get("/{any}/{id}")(lambda request, context: "any")
    router.get(f"{seventh}/latest")(lambda request, context: "latest")
    handler = api_handler(router)
    with captured():
        reached = [json_body(handler(api_event("GET", path), None)) for path in (f"{seventh}/1", "/x/1")]
        reached.append(json_body(handler(api_event("GET", f"{seventh}/latest"), None)))
    assert reached == [{"n": 7}, "any", "latest"]
