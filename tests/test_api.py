"""api_handler through the public API, every shape: REST (v1), HTTP API payload 2.0 (v2) and 1.0
(http-v1), Function URLs (url), ALB (alb, with and without multi-value headers): requests,
responses, errors, cookies, binary bodies, trace header."""

from __future__ import annotations

import base64
import json

import pytest
from _http_shapes import body_bytes, header_values, kind_of, sent_headers
from _logs import of_level, read_lines, with_message

from lambda_kit import HTTPError, api_handler, current_record, current_trace_id
from lambda_kit.testing import API_VERSIONS, api_event, event, lambda_context

VERSIONS = list(API_VERSIONS)
SHAPE = {"v1": "v1", "http-v1": "v1", "v2": "v2", "url": "url", "alb": "alb"}
WITH_ALB_MULTI = [*VERSIONS, "alb-multi"]


def request_for(version, method="GET", path="/", **options):
    """An ``api_event``; ``"alb-multi"``: an ALB target group with multi-value headers on."""
    if version == "alb-multi":
        return api_event(method, path, version="alb", multi_value=True, **options)
    return api_event(method, path, version=version, **options)


def body_of(response):
    return json.loads(body_bytes(response))


def header(response, name):
    """The one value of header ``name`` in a response of any shape."""
    pairs = [(k, v) for k, v in (response.get("headers") or {}).items()]
    pairs += [(k, v) for k, values in (response.get("multiValueHeaders") or {}).items() for v in values]
    (value,) = [v for k, v in pairs if k.lower() == name.lower()]
    return value


@pytest.mark.parametrize("version", VERSIONS)
def test_request_exposes_method_path_headers_query_params_body(version):
    seen = {}

    @api_handler
    def handler(request, context):
        seen.update(
            method=request.method,
            path=request.path,
            agent=request.headers["USER-AGENT"],
            custom=request.headers.get("x-custom"),
            has=("X-CUSTOM" in request.headers, "x-absent" in request.headers),
            query=request.query,
            path_params=request.path_params,
            body=request.body,
            json=request.json,
            trace_id=request.trace_id,
            event=request.event,
            record=(current_record().source, current_record().id, current_trace_id()),
        )
        return {"ok": True}

    event = api_event(
        "post",
        "/pages/home",
        body={"url": "/home"},
        headers={"X-Custom": "yes", "x-trace-id": "api-1"},
        query={"from": "2024", "to": "2025"},
        path_params={"page": "home"},
        version=version,
    )
    context = lambda_context()
    response = handler(event, context)
    assert response["statusCode"] == 200 and body_of(response) == {"ok": True}
    assert seen["method"] == "POST" and seen["path"] == "/pages/home"
    assert seen["agent"] == "lambda-kit-tests" and seen["custom"] == "yes" and seen["has"] == (True, False)
    assert seen["query"] == {"from": "2024", "to": "2025"}
    assert seen["path_params"] == (
        {} if version in ("url", "alb") else {"page": "home"}
    )  # neither has path parameters
    assert seen["body"] == '{"url": "/home"}' and seen["json"] == {"url": "/home"}
    assert seen["trace_id"] == "api-1" and seen["event"] is event
    request_id = (
        context.aws_request_id if version == "alb" else event["requestContext"]["requestId"]
    )  # ALB sends none
    assert seen["record"] == ("api", request_id, "api-1")
    assert header(response, "X-Trace-Id") == "api-1"
    assert current_record() is None


def test_v1_multi_value_headers_and_query():
    seen = {}

    @api_handler
    def handler(request, context):
        seen.update(accept=request.headers["accept"], trace=request.trace_id, query=request.query)

    event = api_event(
        version="v1",
        multi_value_headers={"Accept": ["text/html", "application/json"], "X-Trace-Id": ["mv-1"]},
        query={"page": "2"},
    )
    response = handler(event, None)
    assert seen == {"accept": "text/html, application/json", "trace": "mv-1", "query": {"page": "2"}}
    assert header(response, "X-Trace-Id") == "mv-1"


@pytest.mark.parametrize("version", VERSIONS)
def test_base64_body_is_decoded(version):
    @api_handler
    def handler(request, context):
        return {"body": request.body, "json": request.json}

    response = handler(api_event("POST", body={"n": "ü"}, base64_body=True, version=version), None)
    assert body_of(response) == {"body": json.dumps({"n": "ü"}), "json": {"n": "ü"}}


@pytest.mark.parametrize("version", VERSIONS)
def test_http_error_gives_its_status_and_body_shape_and_is_not_a_server_error(capfd, version):
    @api_handler
    def handler(request, context):
        raise HTTPError(404, "no such page")

    response = handler(api_event(headers={"X-Trace-Id": "t-404"}, version=version), None)
    assert response["statusCode"] == 404
    assert body_of(response) == {"error": "no such page", "trace_id": "t-404"}
    assert header(response, "X-Trace-Id") == "t-404"
    lines = read_lines(capfd)
    assert not of_level(lines, "ERROR")
    assert of_level(lines, "WARN")[0]["status"] == 404


@pytest.mark.parametrize("version", VERSIONS)
def test_unexpected_exception_is_a_500_without_its_text_or_traceback(capfd, version):
    @api_handler
    def handler(request, context):
        raise RuntimeError("db password is hunter2")

    response = handler(api_event(version=version), lambda_context())
    assert response["statusCode"] == 500
    trace_id = header(response, "X-Trace-Id")
    assert body_of(response) == {"error": "Internal Server Error", "trace_id": trace_id}
    text = json.dumps(response)
    assert "hunter2" not in text and "Traceback" not in text and "RuntimeError" not in text
    (error,) = of_level(read_lines(capfd), "ERROR")
    assert error["trace_id"] == trace_id and error["error_type"] == "RuntimeError"
    assert "Traceback" in error["traceback"]


@pytest.mark.parametrize("version", VERSIONS)
def test_invalid_json_is_a_400_with_the_error_shape_and_not_an_error_line(capfd, version):
    @api_handler
    def handler(request, context):
        return request.json

    response = handler(
        api_event("POST", body="{not json", headers={"X-Trace-Id": "t-400"}, version=version), None
    )
    assert response["statusCode"] == 400
    assert set(body_of(response)) == {"error", "trace_id"} and body_of(response)["trace_id"] == "t-400"
    assert header(response, "X-Trace-Id") == "t-400"
    assert not of_level(read_lines(capfd), "ERROR")


def test_body_over_max_body_is_a_413_and_the_function_is_not_called():
    @api_handler(max_body=10)
    def handler(request, context):
        raise AssertionError("not called")

    response = handler(api_event("POST", body="x" * 11), None)
    assert response["statusCode"] == 413
    assert set(body_of(response)) == {"error", "trace_id"}
    assert header(response, "X-Trace-Id") == body_of(response)["trace_id"]


def test_wrong_content_type_is_a_415_when_reading_json():
    @api_handler
    def handler(request, context):
        if request.path == "/raw":
            return {"raw": request.body}
        return request.json

    form = {"Content-Type": "application/x-www-form-urlencoded"}
    response = handler(api_event("POST", "/json", body="a=1", headers=form), None)
    assert response["statusCode"] == 415 and set(body_of(response)) == {"error", "trace_id"}
    assert handler(api_event("POST", "/raw", body="a=1", headers=form), None)["statusCode"] == 200
    charset = {"Content-Type": "application/json; charset=utf-8"}
    assert body_of(handler(api_event("POST", "/json", body={"a": 1}, headers=charset), None)) == {"a": 1}


@pytest.mark.parametrize("raise_what", [None, HTTPError(403, "no"), RuntimeError("x"), "bad json", "too big"])
def test_custom_trace_header_is_read_and_on_every_response(raise_what):
    @api_handler(trace_header="X-Request-Id", max_body=100)
    def handler(request, context):
        if isinstance(raise_what, Exception):
            raise raise_what
        if raise_what == "bad json":
            return request.json
        return {"trace": current_trace_id()}

    body = "x" * 200 if raise_what == "too big" else "{oops"
    response = handler(
        api_event("POST", body=body, headers={"x-request-id": "custom-1", "X-Trace-Id": "other"}), None
    )
    assert header(response, "X-Request-Id") == "custom-1"
    assert "X-Trace-Id" not in response["headers"]
    assert body_of(response).get("trace", body_of(response).get("trace_id")) == "custom-1"


def test_missing_trace_header_gets_a_fresh_id_per_request():
    @api_handler
    def handler(request, context):
        return {"trace": request.trace_id}

    first = handler(api_event(), None)
    second = handler(api_event(), None)
    assert header(first, "X-Trace-Id") == body_of(first)["trace"]
    assert header(first, "X-Trace-Id") != header(second, "X-Trace-Id")


@pytest.mark.parametrize("bad", ["a\nb", 'q"uote', "y" * 129, "é"])
def test_malicious_trace_header_is_not_used_and_logged_escaped(capfd, bad):
    @api_handler
    def handler(request, context):
        return {"trace": request.trace_id}

    response = handler(api_event(headers={"X-Trace-Id": bad}), None)
    trace_id = header(response, "X-Trace-Id")
    assert trace_id != bad and body_of(response)["trace"] == trace_id
    lines = read_lines(capfd)
    assert {line["trace_id"] for line in lines} == {trace_id}
    (warning,) = of_level(lines, "WARN")
    assert warning["rejected_trace_id"] == ascii(bad)


def test_returned_response_dict_is_used_with_the_trace_header_merged():
    @api_handler
    def handler(request, context):
        if request.path == "/dict-body":
            return {"statusCode": 201, "headers": {"Location": "/pages/1"}, "body": {"id": 1}}
        return {"statusCode": 302, "headers": {"location": "/x", "x-trace-id": "spoofed"}, "body": ""}

    created = handler(api_event(path="/dict-body", headers={"X-Trace-Id": "t-201"}), None)
    assert created["statusCode"] == 201
    assert created["headers"] == {
        "Location": "/pages/1",
        "Content-Type": "application/json",
        "X-Trace-Id": "t-201",
    }
    assert body_of(created) == {"id": 1}
    redirect = handler(api_event(path="/redirect", headers={"X-Trace-Id": "t-302"}), None)
    assert redirect["statusCode"] == 302 and redirect["body"] == ""
    assert redirect["headers"] == {"location": "/x", "X-Trace-Id": "t-302"}


def test_other_return_values_are_a_200_with_a_json_body():
    @api_handler
    def handler(request, context):
        return [1, "two", None] if request.path == "/list" else None

    listed = handler(api_event(path="/list"), None)
    assert listed["statusCode"] == 200 and body_of(listed) == [1, "two", None]
    assert header(listed, "Content-Type") == "application/json"
    nothing = handler(api_event(path="/none"), None)
    assert nothing["statusCode"] == 200 and body_of(nothing) is None


def test_http_error_headers_are_kept_and_status_outside_4xx_5xx_is_a_500():
    @api_handler
    def handler(request, context):
        if request.path == "/limited":
            raise HTTPError(429, "slow down", headers={"Retry-After": "5"})
        raise HTTPError(200, "not an error status")

    limited = handler(api_event(path="/limited"), None)
    assert limited["statusCode"] == 429 and limited["headers"]["Retry-After"] == "5"
    assert handler(api_event(path="/odd"), None)["statusCode"] == 500


def test_request_and_response_are_logged_with_secrets_masked(capfd):
    @api_handler
    def handler(request, context):
        return {"token": "tok-secret-value", "user": "ann"}

    event = api_event(
        "POST",
        "/login",
        body={"user": "ann", "password": "pw-secret-value"},
        headers={"Authorization": "Bearer auth-secret-value", "Cookie": "session=cookie-secret-value"},
        query={"api_key": "key-secret-value", "page": "1"},
    )
    handler(event, None)
    out = capfd.readouterr().out
    assert "secret-value" not in out
    lines = [json.loads(text) for text in out.splitlines()]
    received = with_message(lines, "request received")[0]
    assert received["headers"]["authorization"] == "***" and received["headers"]["cookie"] == "***"
    assert received["query"] == {"api_key": "***", "page": "1"}
    assert received["body"] == {"user": "ann", "password": "***"}
    assert with_message(lines, "request processed")[0]["result"] == {"token": "***", "user": "ann"}


def test_a_form_encoded_body_is_logged_as_fields_with_secrets_masked(capfd):
    @api_handler
    def handler(request, context):
        return {"ok": True}

    event = api_event(
        "POST",
        "/login",
        body="user=ana&password=hunter2&api_key=k-123",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert handler(event, None)["statusCode"] == 200
    lines = read_lines(capfd)
    assert not any("hunter2" in json.dumps(line) or "k-123" in json.dumps(line) for line in lines)
    [received] = [line for line in lines if line["message"] == "request received"]
    assert received["body"] == {"user": "ana", "password": "***", "api_key": "***"}


# --- every shape: what it gets --------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_request_shape_names_the_front_door(version):
    shapes = []
    api_handler(lambda request, context: shapes.append(request.shape))(api_event(version=version), None)
    assert shapes == [SHAPE[version]]


@pytest.mark.parametrize("version", WITH_ALB_MULTI)
def test_query_all_holds_every_value_of_a_repeated_parameter_decoded(version):
    seen = {}

    @api_handler
    def handler(request, context):
        seen.update(all=request.query_all, one=request.query)

    query = {"tag": ["a b", "c+d", "é/&="], "page": "2", "empty": ""}
    handler(request_for(version, query=query), None)
    tags = (
        ["é/&="] if version == "alb" else ["a b", "c+d", "é/&="]
    )  # ALB without multi-value headers: the last one
    assert seen["all"] == {"tag": tags, "page": ["2"], "empty": [""]}
    assert seen["one"] == {"tag": "é/&=", "page": "2", "empty": ""}  # the last value, in every shape


def test_alb_query_strings_are_percent_decoded_and_api_gateway_ones_are_not_decoded_twice():
    """ALB passes the query string as the client sent it; API Gateway decodes it."""
    seen = []
    handler = api_handler(lambda request, context: seen.append(request.query_all))
    alb = api_event(version="alb")
    alb["queryStringParameters"] = {"q": "a%20b+c%2Bd", "caf%C3%A9": "%25"}
    handler(alb, None)
    rest = api_event(version="v1")
    rest["multiValueQueryStringParameters"] = {"q": ["a%20b", "100%"]}  # already decoded by API Gateway
    rest["queryStringParameters"] = {"q": "100%"}
    handler(rest, None)
    multi = api_event(version="alb", multi_value=True)
    multi["multiValueQueryStringParameters"] = {"t": ["x%2Fy", "z+w"]}
    handler(multi, None)
    assert seen == [{"q": ["a b c+d"], "café": ["%"]}, {"q": ["a%20b", "100%"]}, {"t": ["x/y", "z w"]}]


def test_alb_without_multi_value_headers_has_only_the_last_value():
    """What the target group setting changes: the request's fields, and so the response's."""
    seen = []
    handler = api_handler(
        lambda request, context: seen.append((request.query_all, request.headers["accept"]))
    )
    single = handler(
        api_event(version="alb", query={"tag": ["a", "b"]}, headers={"Accept": "text/html"}), None
    )
    multi = handler(
        api_event(
            version="alb",
            multi_value=True,
            query={"tag": ["a", "b"]},
            multi_value_headers={"accept": ["text/html", "application/json"]},
        ),
        None,
    )
    assert seen == [({"tag": ["b"]}, "text/html"), ({"tag": ["a", "b"]}, "text/html, application/json")]
    assert "headers" in single and "multiValueHeaders" not in single
    assert "multiValueHeaders" in multi and "headers" not in multi
    assert multi["multiValueHeaders"]["X-Trace-Id"] == [header(multi, "X-Trace-Id")]


@pytest.mark.parametrize("version", WITH_ALB_MULTI)
def test_cookies_are_readable_on_every_shape(version):
    seen = []
    api_handler(lambda request, context: seen.append(request.cookies))(
        request_for(version, cookies={"session": "s-1", "theme": "dark", "quoted": '"x y"'}), None
    )
    assert seen == [{"session": "s-1", "theme": "dark", "quoted": "x y"}]


@pytest.mark.parametrize("header_value", ["a=1; b=2; a=3", " a = 1 ;;b=2", "a=1;b"])
def test_cookie_header_is_read_leniently_and_the_first_of_a_name_wins(header_value):
    seen = []
    api_handler(lambda request, context: seen.append(request.cookies))(
        api_event(version="v1", headers={"Cookie": header_value}), None
    )
    assert seen[0]["a"] == "1" and seen[0].get("b", "2") == "2"


def test_cookies_of_repeated_cookie_headers_are_all_read():
    seen = []
    event = api_event(version="alb", multi_value=True, multi_value_headers={"cookie": ["a=1", "b=2; c=3"]})
    api_handler(lambda request, context: seen.append(request.cookies))(event, None)
    assert seen == [{"a": "1", "b": "2", "c": "3"}]


@pytest.mark.parametrize("version", VERSIONS)
def test_set_cookie_goes_out_the_way_each_shape_wants_it(version):
    cookies = ["id=1; Path=/; HttpOnly", "theme=dark; Expires=Wed, 21 Oct 2026 07:28:00 GMT"]

    @api_handler
    def handler(request, context):
        return {"statusCode": 200, "cookies": cookies, "headers": {"X-One": "1"}, "body": "ok"}

    for multi in [False, True] if version == "alb" else [False]:
        request = api_event(version=version, multi_value=multi)
        response = handler(request, None)
        kind = kind_of(request)
        assert sorted(header_values(response, kind, "set-cookie")) == sorted(cookies)
        if kind in ("v2", "url"):
            assert response["cookies"] == cookies  # HTTP API / Function URLs: the cookies list
        elif kind in ("v1", "alb-multi"):
            assert response["multiValueHeaders"]["Set-Cookie"] == cookies
        else:
            assert sorted(k for k in response["headers"] if k.lower() == "set-cookie") == [
                "Set-Cookie",
                "set-Cookie",
            ]
        assert header_values(response, kind, "x-one") == ["1"]


@pytest.mark.parametrize("version", WITH_ALB_MULTI)
def test_set_cookie_given_as_headers_is_moved_where_the_shape_wants_it(version):
    @api_handler
    def handler(request, context):
        return {
            "statusCode": 204,
            "headers": {"Set-Cookie": "a=1"},
            "multiValueHeaders": {"set-cookie": ["b=2"], "Vary": ["Accept", "Origin"]},
        }

    request = request_for(version)
    response = handler(request, None)
    kind = kind_of(request)
    sent_headers(response, kind)
    assert header_values(response, kind, "set-cookie") == ["a=1", "b=2"]
    if kind in ("v2", "url"):
        assert response["cookies"] == ["a=1", "b=2"] and response["headers"]["Vary"] == "Accept,Origin"
    assert response["body"] == "" and response["statusCode"] == 204


@pytest.mark.parametrize("version", WITH_ALB_MULTI)
def test_a_binary_request_body_is_body_bytes_never_a_lossy_text(version):
    data = bytes(range(256))
    seen = {}

    @api_handler
    def handler(request, context):
        seen["bytes"] = request.body_bytes
        for name in ("body", "json"):
            try:
                getattr(request, name)
            except HTTPError as error:
                seen[name] = (error.status, error.message)
        return {"size": len(request.body_bytes)}

    response = handler(
        request_for(version, "POST", body=data, headers={"Content-Type": "application/octet-stream"}), None
    )
    assert seen["bytes"] == data and body_of(response) == {"size": 256}
    assert seen["body"] == (400, "request body is not UTF-8 text")
    assert seen["json"] == (415, "Content-Type must be application/json")


def test_a_binary_body_claiming_json_is_a_400_and_is_logged_as_its_size(capfd):
    handler = api_handler(lambda request, context: request.json)
    response = handler(api_event("POST", body=b"\xff\xfe{}", version="url"), None)
    assert response["statusCode"] == 400 and body_of(response)["error"] == "request body is not valid JSON"
    [received] = with_message(read_lines(capfd), "request received")
    assert received["body"] == "<4 bytes, not UTF-8 text>" and received["shape"] == "url"


@pytest.mark.parametrize("version", WITH_ALB_MULTI)
def test_a_bytes_response_body_goes_base64_encoded(version):
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(200))

    @api_handler
    def handler(request, context):
        if request.path == "/raw":
            return png
        return {"statusCode": 200, "headers": {"Content-Type": "image/png"}, "body": png}

    for path, content_type in (("/raw", "application/octet-stream"), ("/png", "image/png")):
        request = request_for(version, path=path)
        response = handler(request, None)
        kind = kind_of(request)
        assert response["isBase64Encoded"] is True and base64.b64decode(response["body"]) == png
        assert header_values(response, kind, "content-type") == [content_type]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_body_already_base64_encoded_by_the_function_is_passed_through(version):
    @api_handler
    def handler(request, context):
        return {"statusCode": 200, "body": base64.b64encode(b"\x00\x01").decode(), "isBase64Encoded": True}

    response = handler(api_event(version=version), None)
    assert response["isBase64Encoded"] is True and base64.b64decode(response["body"]) == b"\x00\x01"


def test_alb_status_description_is_the_status_and_its_phrase_or_the_functions_own():
    @api_handler
    def handler(request, context):
        return {
            "statusCode": int(request.query["s"]),
            **({"statusDescription": "418 Short And Stout"} if request.query.get("own") else {}),
        }

    def described(**query):
        return handler(api_event(version="alb", query=query), None)["statusDescription"]

    assert described(s="200") == "200 OK"
    assert described(s="404") == "404 Not Found"
    assert described(s="299") == "299 Unknown Status"
    assert described(s="418", own="1") == "418 Short And Stout"


@pytest.mark.parametrize("status", [True, "2OO", "²⁰⁰", 99, 600, None, 200.5, [200]])
def test_a_returned_status_code_that_is_not_an_http_status_is_a_500(status, capfd):
    response = api_handler(lambda request, context: {"statusCode": status, "body": "x"})(api_event(), None)
    assert response["statusCode"] == 500 and body_of(response)["error"] == "Internal Server Error"
    [error] = of_level(read_lines(capfd), "ERROR")
    assert error["error_type"] == "TypeError" and "not an HTTP status" in error["error"]


def test_a_numeric_status_code_string_is_accepted():
    assert api_handler(lambda request, context: {"statusCode": "201"})(api_event(), None)["statusCode"] == 201


@pytest.mark.parametrize("version", WITH_ALB_MULTI)
def test_the_response_holds_only_the_fields_its_shape_documents(version):
    """API Gateway answers 502 to a proxy response with fields it does not know."""

    @api_handler
    def handler(request, context):
        return {"statusCode": 200, "body": "x", "extra": "field", "headers": {"N": 1}}

    request = request_for(version)
    response = handler(request, None)
    sent_headers(response, kind_of(request))  # asserts the key set and str header values
    assert "extra" not in response and header(response, "N") == "1"


@pytest.mark.parametrize("version", VERSIONS)
def test_testing_event_builds_every_shape(version):
    built = event("api", {"a": 1}, trace_id="T-9", method="PUT", path="/x", version=version)
    seen = []
    response = api_handler(
        lambda request, context: seen.append((request.shape, request.method, request.json))
    )(built, None)
    assert seen == [(SHAPE[version], "PUT", {"a": 1})] and header(response, "X-Trace-Id") == "T-9"


def test_api_event_refuses_an_unknown_version():
    with pytest.raises(ValueError, match="version must be one of v2, v1, http-v1, url, alb"):
        api_event(version="v3")


def test_lambda_authorizer_and_websocket_events_are_not_answered():
    from lambda_kit import UnsupportedEvent

    handler = api_handler(lambda request, context: {"ok": True})
    authorizer = {
        **api_event(version="v1"),
        "type": "REQUEST",
        "methodArn": "arn:aws:execute-api:us-east-1:1:a/s/GET/x",
    }
    websocket = api_event(version="v1")
    websocket["requestContext"].update(connectionId="abc=", eventType="CONNECT", routeKey="$connect")
    for refused in (authorizer, websocket):
        with pytest.raises(UnsupportedEvent):
            handler(refused, None)


def test_the_function_is_given_the_invocations_own_context(capfd):
    seen = []
    handler = api_handler(lambda request, context: seen.append(context) or {"ok": True})
    context = lambda_context("orders")
    assert handler(api_event(), context)["statusCode"] == 200
    assert seen == [context]


def test_each_request_line_says_its_status_outcome_and_duration(capfd):
    @api_handler
    def api(request, context):
        if request.path == "/missing":
            raise HTTPError(404, "no such thing")
        if request.path == "/broken":
            raise RuntimeError("boom")
        if request.path == "/gone":
            return {"gone": True}, 410  # an answer the function gave: processed, a client error
        return {"ok": True}

    for path in ("/ok", "/gone", "/missing", "/broken"):
        api(api_event(path=path), lambda_context("web"))
    answered = [line for line in read_lines(capfd) if line["message"] != "request received"]
    assert [(line["level"], line["message"], line["status"], line["outcome"]) for line in answered] == [
        ("INFO", "request processed", 200, "ok"),
        ("INFO", "request processed", 410, "client_error"),
        ("WARN", "request failed", 404, "client_error"),
        ("ERROR", "request failed", 500, "server_error"),
    ]
    durations = [line["duration_ms"] for line in answered]
    assert all(type(duration) is float and 0 <= duration < 5_000 for duration in durations), durations
