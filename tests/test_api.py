"""api_handler through the public API: REST (v1) and HTTP (v2) events, responses, errors, trace header."""

from __future__ import annotations

import json

import pytest
from _logs import of_level, read_lines, with_message

from lambda_kit import HTTPError, api_handler, current_record, current_trace_id
from lambda_kit.testing import api_event, lambda_context

VERSIONS = ["v1", "v2"]


def body_of(response):
    return json.loads(response["body"])


def header(response, name):
    (value,) = [v for k, v in response["headers"].items() if k.lower() == name.lower()]
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
    response = handler(event, lambda_context())
    assert response["statusCode"] == 200 and body_of(response) == {"ok": True}
    assert seen["method"] == "POST" and seen["path"] == "/pages/home"
    assert seen["agent"] == "lambda-kit-tests" and seen["custom"] == "yes" and seen["has"] == (True, False)
    assert seen["query"] == {"from": "2024", "to": "2025"}
    assert seen["path_params"] == {"page": "home"}
    assert seen["body"] == '{"url": "/home"}' and seen["json"] == {"url": "/home"}
    assert seen["trace_id"] == "api-1" and seen["event"] is event
    assert seen["record"] == ("api", event["requestContext"]["requestId"], "api-1")
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
    assert of_level(lines, "WARNING")[0]["status"] == 404


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

    response = handler(api_event("POST", body="{not json", headers={"X-Trace-Id": "t-400"}, version=version), None)
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
    response = handler(api_event("POST", body=body, headers={"x-request-id": "custom-1", "X-Trace-Id": "other"}), None)
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
    (warning,) = of_level(lines, "WARNING")
    assert warning["rejected_trace_id"] == ascii(bad)


def test_returned_response_dict_is_used_with_the_trace_header_merged():
    @api_handler
    def handler(request, context):
        if request.path == "/dict-body":
            return {"statusCode": 201, "headers": {"Location": "/pages/1"}, "body": {"id": 1}}
        return {"statusCode": 302, "headers": {"location": "/x", "x-trace-id": "spoofed"}, "body": ""}

    created = handler(api_event(path="/dict-body", headers={"X-Trace-Id": "t-201"}), None)
    assert created["statusCode"] == 201
    assert created["headers"] == {"Location": "/pages/1", "Content-Type": "application/json", "X-Trace-Id": "t-201"}
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
