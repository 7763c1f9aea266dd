"""authorizer_handler: every shape API Gateway sends, the answers each takes, and the one rule that
matters most: whatever goes wrong, a request is never allowed.

An exception, ``None``, a malformed policy or simple response, a ``context`` value that is not a
string, number or boolean: each is a deny (REST and WebSocket APIs: the error ``Unauthorized``,
401; HTTP APIs: a deny, 403), with one ERROR line, and never the exception's text in the answer.
The last tests prove it over generated answers (hypothesis).
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import pytest
from _hostile import HOSTILE, captured, parse_lines
from hypothesis import given
from hypothesis import strategies as st

from lambda_kit import Allow, Deny, Unauthorized, authorizer_handler, current_trace_id
from lambda_kit.testing import AUTHORIZER_SHAPES, authorizer_event, lambda_context

RAISING = ("rest-token", "rest-request", "websocket")  # their APIs answer 401 to the error "Unauthorized"


def answer_of(handler: Any, event: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    """(the answer, or the exception raised; the lines)."""
    with captured() as out:
        try:
            answer = handler(event, lambda_context())
        except Exception as exc:
            answer = exc
    return answer, parse_lines(out)


def allows(answer: Any) -> bool:
    """What API Gateway does with an answer: a simple response's ``isAuthorized``, or a policy
    with an ``Allow`` statement; an error is never an allow."""
    if not isinstance(answer, dict):
        return False
    if "isAuthorized" in answer:
        return answer["isAuthorized"] is True
    return any(statement.get("Effect") == "Allow" for statement in answer["policyDocument"]["Statement"])


def is_deny(answer: Any, shape: str, simple: bool = False) -> bool:
    """The deny of a failure, as each API reads it."""
    if shape in RAISING:
        return type(answer) is Unauthorized and str(answer) == "Unauthorized"
    if simple and shape == "http-2.0":
        return answer == {"isAuthorized": False}
    statements = answer["policyDocument"]["Statement"]
    return [statement["Effect"] for statement in statements] == ["Deny"]


# --- what the function receives -----------------------------------------------------------------------


@pytest.mark.parametrize("shape", AUTHORIZER_SHAPES)
def test_each_shape_reaches_the_function_as_one_request(shape):
    seen = []
    handler = authorizer_handler(lambda request, context: seen.append(request) or True)
    event = authorizer_event(shape, token="tok-1", trace_id="T-auth", path="/orders", method="POST")
    answer, lines = answer_of(handler, event)
    [request] = seen
    assert request.shape == shape and request.event is event
    assert request.arn == event.get("routeArn", event.get("methodArn"))
    assert (request.api_id, request.stage, request.region, request.account_id) == (
        "abcdef123",
        "test",
        "us-east-1",
        "123456789012",
    )
    if shape == "rest-token":
        assert request.token == "tok-1" and request.headers == {}
        assert (request.method, request.resource) == ("POST", "/orders")
    elif shape == "websocket":
        assert request.headers["authorization"] == "tok-1" and request.route_key == "$connect"
    else:
        assert request.headers["AUTHORIZATION"] == "tok-1" and request.method == "POST"
        assert request.path == "/orders"
    assert allows(answer)
    received = [line for line in lines if line["message"] == "request received"]
    assert received and "tok-1" not in json.dumps(lines)  # the token and the Authorization header masked
    expected = "T-auth" if shape != "rest-token" else lines[0]["trace_id"]
    assert {line["trace_id"] for line in lines} == {expected}


def test_the_trace_id_is_the_header_then_a_tracers_context_then_the_request_id(capfd):
    seen = []
    handler = authorizer_handler(lambda request, context: seen.append(current_trace_id()) or True)
    handler(authorizer_event("rest-request", headers={"X-Trace-Id": "mine"}), None)
    traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    handler(authorizer_event("http-2.0", headers={"traceparent": traceparent}), None)
    token = authorizer_event("rest-token")
    handler(token, lambda_context())
    assert seen[:2] == ["mine", "4bf92f3577b34da6a3ce929d0e0e4736"]
    assert seen[2] and seen[2] != "mine"
    named = authorizer_handler(trace_header="X-Request-Id")(
        lambda request, context: seen.append(current_trace_id()) or True
    )
    named(authorizer_event("rest-request", headers={"X-Request-Id": "other"}), None)
    assert seen[3] == "other"


# --- what the function decides --------------------------------------------------------------------------


@pytest.mark.parametrize("shape", AUTHORIZER_SHAPES)
def test_allow_is_a_policy_for_the_request_with_its_context(shape):
    handler = authorizer_handler(
        lambda request, context: Allow("user-7", context={"tenant": "t1", "level": 3, "admin": False})
    )
    event = authorizer_event(shape)
    answer, lines = answer_of(handler, event)
    arn = event.get("routeArn", event.get("methodArn"))
    assert answer == {
        "principalId": "user-7",
        "policyDocument": {
            "Version": "2012-10-17",
            "Statement": [{"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": [arn]}],
        },
        "context": {"tenant": "t1", "level": 3, "admin": False},
    }
    [done] = [line for line in lines if line["message"] == "request processed"]
    assert (done["decision"], done["principal_id"]) == ("allow", "user-7")


def test_simple_responses_answer_an_http_api_2_request_with_is_authorized():
    handler = authorizer_handler(simple_responses=True)(
        lambda request, context: Allow(context={"user": "u1"})
    )
    assert handler(authorizer_event("http-2.0"), None) == {"isAuthorized": True, "context": {"user": "u1"}}
    denied = authorizer_handler(simple_responses=True)(lambda request, context: False)
    assert denied(authorizer_event("http-2.0"), None) == {"isAuthorized": False}
    # simple responses exist for HTTP API payload 2.0 only: every other shape still gets a policy
    rest = handler(authorizer_event("rest-request"), None)
    assert rest["policyDocument"]["Statement"][0]["Effect"] == "Allow"


def test_allow_covers_the_resources_asked_for_and_arn_for_names_the_api_s_other_routes():
    def decide(request, context):
        return Allow("u", resources=[request.arn_for("GET", "orders/*"), request.arn_for()])

    answer = authorizer_handler(decide)(authorizer_event("rest-request"), None)
    base = "arn:aws:execute-api:us-east-1:123456789012:abcdef123/test"
    assert answer["policyDocument"]["Statement"][0]["Resource"] == [f"{base}/GET/orders/*", f"{base}/*/*"]
    websocket = authorizer_handler(lambda request, context: Allow(resources=[request.arn_for(resource="*")]))
    found = websocket(authorizer_event("websocket"), None)
    assert found["policyDocument"]["Statement"][0]["Resource"] == [f"{base}/*"]


@pytest.mark.parametrize("shape", AUTHORIZER_SHAPES)
def test_deny_and_false_are_an_explicit_deny_policy(shape):
    for decision in (Deny(), False, Deny("user-9", context={"why": "suspended"})):
        answer, lines = answer_of(
            authorizer_handler(lambda request, context, d=decision: d), authorizer_event(shape)
        )
        assert [s["Effect"] for s in answer["policyDocument"]["Statement"]] == ["Deny"]
        assert not [line for line in lines if line["level"] == "ERROR"]


@pytest.mark.parametrize("shape", AUTHORIZER_SHAPES)
def test_unauthorized_is_a_401_where_the_api_has_one_and_a_deny_elsewhere(shape):
    def refuse(request, context):
        raise Unauthorized("token expired at 12:00")

    answer, lines = answer_of(authorizer_handler(refuse), authorizer_event(shape))
    assert is_deny(answer, shape)
    [done] = [line for line in lines if line["message"] == "request processed"]
    assert done["decision"] == "unauthorized" and done["reason"] == "token expired at 12:00"
    assert not [line for line in lines if line["level"] == "ERROR"]


def test_aws_s_documented_answer_goes_back_as_it_is_and_its_template_effect_is_denied():
    """aws-lambda-go's sample answer is a template (``"Effect": "Allow|Deny"``): returned as it is,
    it denies; with a real effect it goes back untouched."""
    with open("tests/events/authorizer/apigw-custom-auth-response.aws-lambda-go.json") as sample:
        documented = json.load(sample)
    answer, lines = answer_of(
        authorizer_handler(lambda request, context: documented), authorizer_event("rest-token")
    )
    assert is_deny(answer, "rest-token")
    assert "Allow|Deny" in [line for line in lines if line["level"] == "ERROR"][0]["error"]
    documented["policyDocument"]["Statement"][0]["Effect"] = "Allow"
    answer = authorizer_handler(lambda request, context: documented)(authorizer_event("rest-token"), None)
    assert answer is documented


def test_an_async_authorizer_is_awaited():
    async def decide(request, context):
        await asyncio.sleep(0)
        return Allow("async-user")

    assert authorizer_handler(decide)(authorizer_event("http-2.0"), None)["principalId"] == "async-user"


def test_model_validates_the_event_and_a_mismatch_denies():
    from pydantic import BaseModel

    class TokenEvent(BaseModel):
        type: str
        authorizationToken: str
        methodArn: str

    seen = []
    handler = authorizer_handler(model=TokenEvent)(
        lambda request, context: seen.append(request.model) or True
    )
    assert allows(handler(authorizer_event("rest-token", token="abc"), None))
    assert seen[0].authorizationToken == "abc"
    broken = authorizer_event("rest-token")
    broken["authorizationToken"] = 7
    answer, lines = answer_of(handler, broken)
    assert is_deny(answer, "rest-token") and len(seen) == 1
    [error] = [line for line in lines if line["level"] == "ERROR"]
    assert error["error_type"] == "InvalidPayload" and error["invalid"]


# --- every failure denies -------------------------------------------------------------------------------

MALFORMED = {
    "None": None,
    "a string": "allow",
    "a number": 1,
    "a list": [{"Effect": "Allow"}],
    "a simple response where a policy is due": {"isAuthorized": True},
    "a policy without principalId": {"policyDocument": {"Version": "2012-10-17", "Statement": [{}]}},
    "an Effect in lower case": {
        "principalId": "u",
        "policyDocument": {
            "Version": "2012-10-17",
            "Statement": [{"Action": "execute-api:Invoke", "Effect": "allow", "Resource": "*"}],
        },
    },
    "a context with an object": {
        "principalId": "u",
        "policyDocument": {
            "Version": "2012-10-17",
            "Statement": [{"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": "*"}],
        },
        "context": {"user": {"id": 1}},
    },
    "Allow with a context holding a list": Allow("u", context={"roles": ["admin"]}),
    "Allow with a context holding null": Allow("u", context={"role": None}),
    "Allow with an empty principal": Allow(""),
}


@pytest.mark.parametrize("shape", AUTHORIZER_SHAPES)
@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_answer_denies_with_an_error_line_naming_the_problem(shape, case):
    answer, lines = answer_of(
        authorizer_handler(lambda request, context: MALFORMED[case]), authorizer_event(shape)
    )
    assert is_deny(answer, shape) and not allows(answer)
    [error] = [line for line in lines if line["level"] == "ERROR"]
    assert error["message"] == "request failed: denied" and error["decision"] == "deny"
    assert error["error_type"] == "MalformedAnswer" and "traceback" not in error


def test_a_policy_where_simple_responses_are_on_is_malformed():
    policy = authorizer_handler(lambda request, context: Allow())(authorizer_event("http-2.0"), None)
    handler = authorizer_handler(simple_responses=True)(lambda request, context: policy)
    answer, lines = answer_of(handler, authorizer_event("http-2.0"))
    assert answer == {"isAuthorized": False}
    assert "simple responses are on" in [line for line in lines if line["level"] == "ERROR"][0]["error"]


@pytest.mark.parametrize("shape", AUTHORIZER_SHAPES)
def test_an_exception_denies_and_its_text_never_reaches_the_answer(shape):
    def broken(request, context):
        raise KeyError("secret-database-password")

    answer, lines = answer_of(authorizer_handler(broken), authorizer_event(shape))
    assert is_deny(answer, shape)
    assert "secret-database-password" not in repr(answer) and "secret-database-password" not in json.dumps(
        answer if isinstance(answer, dict) else {}
    )
    [error] = [line for line in lines if line["level"] == "ERROR"]
    assert error["error_type"] == "KeyError" and "traceback" in error  # the log says all


def test_the_error_raised_is_exactly_unauthorized_with_no_chained_cause():
    def broken(request, context):
        raise RuntimeError("inner detail")

    with pytest.raises(Unauthorized) as raised:
        authorizer_handler(broken)(authorizer_event("rest-token"), None)
    assert str(raised.value) == "Unauthorized" and raised.value.__cause__ is None
    assert raised.value.__suppress_context__


def test_an_authorizer_refuses_every_event_that_is_not_an_authorizers():
    from lambda_kit import UnsupportedEvent
    from lambda_kit.testing import api_event, websocket_event

    handler = authorizer_handler(lambda request, context: True)
    for event in (api_event("GET", "/"), websocket_event({"a": 1}), {"type": "TOKEN"}, {"type": "REQUEST"}):
        with captured(), pytest.raises(UnsupportedEvent):
            handler(event, None)


# --- never an allow, over generated answers ---------------------------------------------------------

JSON_LEAVES = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=12)
JSON = st.recursive(
    JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
NESTED = (
    st.dictionaries(st.text(max_size=8), JSON, min_size=1, max_size=3)
    | st.lists(JSON, max_size=3)
    | st.none()
)
EXCEPTIONS = st.sampled_from(
    [ValueError, KeyError, TypeError, RuntimeError, LookupError, ZeroDivisionError, Exception]
)


def _valid_policy(effect: str = "Allow") -> dict[str, Any]:
    return {
        "principalId": "user",
        "policyDocument": {
            "Version": "2012-10-17",
            "Statement": [{"Action": "execute-api:Invoke", "Effect": effect, "Resource": ["*"]}],
        },
    }


@st.composite
def corrupted_policies(draw: Any) -> dict[str, Any]:
    """A well-formed allow policy with one thing broken."""
    policy = _valid_policy()
    statement = policy["policyDocument"]["Statement"][0]
    fault = draw(
        st.sampled_from(
            [
                "principal",
                "document",
                "statements",
                "statement",
                "effect",
                "action",
                "resource",
                "context",
                "key",
            ]
        )
    )
    junk = draw(JSON.filter(lambda value: not (isinstance(value, str) and value)))
    if fault == "principal":
        policy["principalId"] = junk
    elif fault == "document":
        policy["policyDocument"] = draw(JSON.filter(lambda value: not isinstance(value, dict)))
    elif fault == "statements":
        policy["policyDocument"]["Statement"] = draw(
            st.just([]) | JSON.filter(lambda value: not isinstance(value, list))
        )
    elif fault == "statement":
        policy["policyDocument"]["Statement"] = [draw(JSON.filter(lambda value: not isinstance(value, dict)))]
    elif fault == "effect":
        statement["Effect"] = draw(JSON.filter(lambda value: value not in ("Allow", "Deny")))
    elif fault in ("action", "resource"):
        statement[fault.title()] = junk if not isinstance(junk, list) or not junk else [*junk, None]
    elif fault == "context":
        policy["context"] = {
            draw(st.text(max_size=8)): draw(
                NESTED | st.floats(allow_nan=True).filter(lambda f: not math.isfinite(f))
            )
        }
    else:
        policy[
            draw(
                st.text(min_size=1, max_size=12).filter(
                    lambda key: key not in ("principalId", "policyDocument", "context", "usageIdentifierKey")
                )
            )
        ] = junk
    return policy


def failing(kind: type[Exception], message: str) -> Any:
    def fail(request, context):
        raise kind(message)

    return fail


ANSWERS = st.one_of(
    st.builds(lambda kind, message: ("raises", failing(kind, message)), EXCEPTIONS, st.text(max_size=20)),
    st.just(("returns", None)),
    corrupted_policies().map(lambda policy: ("returns", policy)),
    st.dictionaries(st.text(max_size=8), NESTED, min_size=1, max_size=3).map(
        lambda context: ("returns", Allow("user", context=context))
    ),
    JSON.filter(lambda value: not isinstance(value, bool)).map(lambda value: ("returns", value)),
    st.builds(
        lambda value: ("returns", {"isAuthorized": value}), JSON.filter(lambda value: value is not True)
    ),
)


@HOSTILE
@given(answer=ANSWERS, shape=st.sampled_from(AUTHORIZER_SHAPES), simple=st.booleans())
def test_no_failure_and_no_malformed_answer_ever_allows_a_request(answer, shape, simple):
    kind, value = answer
    function = value if kind == "raises" else (lambda request, context: value)
    handler = authorizer_handler(simple_responses=simple)(function)
    found, lines = answer_of(handler, authorizer_event(shape))
    assert not allows(found), (answer, found)
    assert is_deny(found, shape, simple) or found == {"isAuthorized": False} or _is_deny_policy(found), found
    assert [line["level"] for line in lines].count("ERROR") <= 1


def _is_deny_policy(found: Any) -> bool:
    return isinstance(found, dict) and [s.get("Effect") for s in found["policyDocument"]["Statement"]] == [
        "Deny"
    ]


@HOSTILE
@given(
    context=st.dictionaries(
        st.text(max_size=8), st.text(max_size=8) | st.integers() | st.booleans(), max_size=4
    ),
    shape=st.sampled_from(AUTHORIZER_SHAPES),
)
def test_a_well_formed_allow_is_allowed_with_exactly_its_context(context, shape):
    """The other side of the rule: the checks do not deny what is right."""
    handler = authorizer_handler(lambda request, context_: Allow("u", context=context))
    found, lines = answer_of(handler, authorizer_event(shape))
    assert allows(found) and found.get("context", {}) == context
    assert not [line for line in lines if line["level"] == "ERROR"]
