"""``model=`` on every decorator: the function receives the payload validated (a pydantic model, a
dataclass or a TypedDict); a payload that does not fit fails its record alone, with one ERROR line
naming the fields and what is wrong, no value from the payload on it, and never reaches the function.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from _hostile import HOSTILE, captured
from _logs import of_level, read_lines, with_message
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field, TypeAdapter, ValidationError, field_validator
from typing_extensions import TypedDict  # pydantic takes typing.TypedDict from Python 3.12

from lambda_kit import (
    InvalidPayload,
    api_handler,
    cloudwatch_logs_handler,
    eventbridge_handler,
    kafka_handler,
    s3_handler,
    sns_handler,
    sqs_handler,
    stream_handler,
)
from lambda_kit.testing import (
    api_event,
    cloudwatch_logs_event,
    dynamodb_record,
    dynamodb_stream_event,
    event,
    kafka_event,
    kinesis_event,
    lambda_context,
    s3_event,
    sqs_event,
)

SECRET = "S3cr3t\u00a7value"  # a marker no message of pydantic's or ours contains


class Item(BaseModel):
    sku: str
    qty: int = Field(gt=0)


class Order(BaseModel):
    id: int
    items: list[Item] = []
    note: str | None = None
    password: str = "ok-default"

    @field_validator("password")
    @classmethod
    def strong(cls, value: str) -> str:
        if not value.startswith("ok"):
            raise ValueError(f"weak password {value!r}")  # echoes the value: it must never be logged
        return value


@dataclasses.dataclass
class View:
    url: str
    count: int = 1


class Click(TypedDict):
    url: str
    x: int


# Per source: the decorator, and how a record that does not fit comes back ("report": in the
# response; "raise": the invocation raises InvalidPayload; "422": the HTTP answer).
SOURCES = {
    "sqs": (sqs_handler, "report"),
    "sns": (sns_handler, "raise"),
    "kinesis": (stream_handler, "report"),
    "dynamodb": (stream_handler, "report"),
    "kafka": (kafka_handler, "raise"),
    "eventbridge": (eventbridge_handler, "raise"),
    "api": (api_handler, "422"),
}


def validated_of(source: str, received):
    """What the model produced, out of what the function received."""
    if source == "kafka":
        return received["value"]
    if source == "api":
        return received.model
    return received


def run(source: str, model, payload, **options):
    """(objects the function received, "ok" | "failed", the response) for one event of ``source``."""
    decorator, fails = SOURCES[source]
    calls = []

    @decorator(model=model, **options)
    def handler(received, context):
        calls.append(validated_of(source, received))
        return {"ok": True}

    built = event(source, payload, method="POST") if source == "api" else event(source, payload)
    try:
        response = handler(built, lambda_context())
    except InvalidPayload:
        assert fails == "raise"
        return calls, "failed", None
    if fails == "report":
        return calls, "failed" if response["batchItemFailures"] else "ok", response
    if fails == "422":
        assert response["statusCode"] in (200, 422), response
        return calls, "failed" if response["statusCode"] == 422 else "ok", response
    return calls, "ok", response


# --- every decorator ---------------------------------------------------------------------------------


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_the_function_receives_the_validated_model(source, capfd):
    calls, outcome, _ = run(source, Order, {"id": "7", "items": [{"sku": "a", "qty": 2}]})
    assert outcome == "ok"
    assert calls == [Order(id=7, items=[Item(sku="a", qty=2)])]  # "7" coerced, as pydantic does


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_the_function_receives_the_lambda_context_beside_the_model(source, capfd):
    decorator, _ = SOURCES[source]
    context = lambda_context("typed")
    contexts = []

    @decorator(model=Order)
    def handler(received, given):
        contexts.append(given)

    built = (
        event(source, {"id": 1, "items": []}, method="POST")
        if source == "api"
        else event(source, {"id": 1, "items": []})
    )
    handler(built, context)
    assert contexts == [context]


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_a_payload_that_does_not_fit_never_reaches_the_function(source, capfd):
    calls, outcome, response = run(
        source, Order, {"id": "x", "items": [{"sku": "a", "qty": 0}], "password": SECRET}
    )
    assert (calls, outcome) == ([], "failed")
    output = capfd.readouterr().out
    assert SECRET not in output and "weak password" not in output
    lines = [json.loads(text) for text in output.splitlines()]
    expected = [
        {"field": "id", "problem": "Input should be a valid integer, unable to parse string as an integer"},
        {"field": "items[0].qty", "problem": "Input should be greater than 0"},
        {"field": "password", "problem": "value_error"},  # a secret-named field: the kind of problem only
    ]
    if source == "api":
        [line] = with_message(lines, "request failed")
        assert line["level"] == "WARN" and line["status"] == 422  # a client error, as every 4xx
        body = json.loads(response["body"])
        assert (
            body["error"]
            == line["error"]
            == "request body does not fit Order: "
            + "; ".join(f"{e['field']}: {e['problem']}" for e in expected)
        )
        return
    [line] = of_level(lines, "ERROR")
    assert line["message"] == "record failed validation" and line["error_type"] == "InvalidPayload"
    assert line["invalid"] == expected
    assert line["error"] == "payload does not fit Order: " + "; ".join(
        f"{e['field']}: {e['problem']}" for e in expected
    )
    assert "traceback" not in line


@pytest.mark.parametrize("source", sorted(SOURCES))
@pytest.mark.parametrize("model", [View, Click], ids=["dataclass", "TypedDict"])
def test_dataclasses_and_typed_dicts_validate_too(source, model, capfd):
    good = {"url": "/a", "count": 2} if model is View else {"url": "/a", "x": 3}
    calls, outcome, _ = run(source, model, good)
    assert outcome == "ok"
    assert calls == [View("/a", 2) if model is View else {"url": "/a", "x": 3}]
    calls, outcome, _ = run(source, model, {"count": 2})
    assert (calls, outcome) == ([], "failed")


def test_a_failed_record_fails_alone_in_its_batch(capfd):
    seen = []

    @sqs_handler(model=Order)
    def handler(order, context):
        seen.append(order.id)

    batch = sqs_event({"id": 1}, {"id": []}, {"id": 3})
    assert handler(batch, lambda_context()) == {
        "batchItemFailures": [{"itemIdentifier": batch["Records"][1]["messageId"]}]
    }
    assert seen == [1, 3]


def test_an_async_function_receives_the_model_too(capfd):
    seen = []

    @sqs_handler(model=Order, max_concurrency=2)
    async def handler(order, context):
        seen.append(order)

    batch = sqs_event({"id": 1}, {"id": "no"})
    assert handler(batch, lambda_context()) == {
        "batchItemFailures": [{"itemIdentifier": batch["Records"][1]["messageId"]}]
    }
    assert seen == [Order(id=1)]


# --- per source -----------------------------------------------------------------------------------


def test_dynamodb_validates_the_new_image_and_the_old_one_for_a_remove(capfd):
    seen = []

    @stream_handler(model=View)
    def handler(view, context):
        seen.append(view)

    batch = dynamodb_stream_event(
        dynamodb_record("INSERT", {"PK": "a"}, new_image={"PK": "a", "url": "/new", "count": 1}),
        dynamodb_record(
            "MODIFY",
            {"PK": "a"},
            new_image={"PK": "a", "url": "/new", "count": 2},
            old_image={"PK": "a", "url": "/new", "count": 1},
        ),
        dynamodb_record("REMOVE", {"PK": "a"}, old_image={"PK": "a", "url": "/old", "count": 2}),
    )
    assert handler(batch, lambda_context()) == {"batchItemFailures": []}
    assert seen == [View("/new", 1), View("/new", 2), View("/old", 2)]


def test_a_dynamodb_record_without_its_image_fails_naming_the_stream_view_type(capfd):
    @stream_handler(model=View)
    def handler(view, context):
        raise AssertionError("not reached")

    batch = dynamodb_stream_event(dynamodb_record("REMOVE", {"PK": "a"}))  # a KEYS_ONLY stream
    assert handler(batch, lambda_context())["batchItemFailures"]
    [line] = of_level(read_lines(capfd), "ERROR")
    assert line["invalid"] == [
        {
            "field": "OldImage",
            "problem": (
                "the record has no OldImage: the stream's view type must include it (NEW_AND_OLD_IMAGES)"
            ),
        }
    ]


def test_kafka_validates_the_value_and_keeps_the_rest_of_the_message(capfd):
    seen = []

    @kafka_handler(model=View)
    def handler(message, context):
        seen.append((message["value"], message["key"], message["offset"]))

    handler(kafka_event({"url": "/k"}, key="k1", offset=5), lambda_context())
    assert seen == [(View("/k"), b"k1", 5)]


@pytest.mark.parametrize("source", ["sqs", "kinesis", "kafka"])
def test_with_json_false_pydantic_reads_the_text_itself(source, capfd):
    calls, outcome, _ = run(source, View, {"url": "/j"}, json=False)
    assert (calls, outcome) == ([View("/j")], "ok")
    decorator, _ = SOURCES[source]
    handler = decorator(json=False, model=View)(lambda payload, context: None)
    broken = {
        "sqs": lambda: sqs_event("not json"),
        "kinesis": lambda: kinesis_event(b"not json"),
        "kafka": lambda: kafka_event(b"not json"),
    }[source]()
    if source == "kafka":
        with pytest.raises(InvalidPayload, match=r"\(payload\): Invalid JSON"):
            handler(broken, lambda_context())
    else:
        assert handler(broken, lambda_context())["batchItemFailures"]


def test_s3_validates_the_objects_fields(capfd):
    class Upload(BaseModel):
        bucket: str
        key: str = Field(pattern=r"^uploads/")
        size: int = Field(le=1024)

    seen = []

    @s3_handler(model=Upload)
    def handler(upload, context):
        seen.append(upload.key)

    handler(s3_event("uploads/a.png", size=10), lambda_context())
    assert seen == ["uploads/a.png"]
    with pytest.raises(InvalidPayload, match="key: String should match pattern"):
        handler(s3_event("elsewhere/b.png", size=10), lambda_context())
    batch = s3_event("uploads/c.png", "other/d.png", envelope="sqs", size=10)
    assert len(handler(batch, lambda_context())["batchItemFailures"]) == 1
    assert seen == ["uploads/a.png", "uploads/c.png"]


def test_cloudwatch_logs_validates_the_log_event(capfd):
    class Line(BaseModel):
        level: str
        message: str

    class LogEvent(BaseModel):
        id: str
        log_group: str
        json_: Line = Field(alias="json")

    seen = []

    @cloudwatch_logs_handler(model=LogEvent)
    def handler(log_event, context):
        seen.append((log_event.log_group, log_event.json_.message))

    handler(
        cloudwatch_logs_event({"level": "INFO", "message": "hello"}, log_group="/aws/lambda/views"),
        lambda_context(),
    )
    assert seen == [("/aws/lambda/views", "hello")]
    with pytest.raises(InvalidPayload, match=r"json: Input should be a valid dictionary"):
        handler(cloudwatch_logs_event("plain text, no JSON"), lambda_context())


def test_api_keeps_400_and_415_for_bodies_that_are_not_json(capfd):
    handler = api_handler(model=Order)(lambda request, context: {"id": request.model.id})
    assert handler(api_event("POST", "/o", body="{nope"), lambda_context())["statusCode"] == 400
    text = api_event("POST", "/o", body="id=1", headers={"content-type": "text/plain"})
    assert handler(text, lambda_context())["statusCode"] == 415
    answer = handler(api_event("POST", "/o", body={"id": 4}), lambda_context())
    assert (answer["statusCode"], json.loads(answer["body"])) == (200, {"id": 4})


def test_request_model_is_none_without_a_model(capfd):
    handler = api_handler(lambda request, context: {"model": request.model})
    assert json.loads(handler(api_event("POST", "/o", body={"id": 4}), lambda_context())["body"]) == {
        "model": None
    }


# --- what the line and the error may hold ------------------------------------------------------------


def test_secrets_anywhere_in_the_path_show_only_the_kind_of_problem(capfd):
    class Credentials(BaseModel):
        user: str
        token: int

    class Login(BaseModel):
        credentials: Credentials
        api_keys: dict[str, int]

    handler = sqs_handler(model=Login)(lambda login, context: None)
    handler(
        sqs_event({"credentials": {"user": SECRET, "token": SECRET}, "api_keys": {"main": SECRET}}),
        lambda_context(),
    )
    output = capfd.readouterr().out
    assert SECRET not in output
    [line] = [json.loads(text) for text in output.splitlines() if '"ERROR"' in text]
    assert line["invalid"] == [
        {"field": "credentials.token", "problem": "int_parsing"},
        {"field": "api_keys.main", "problem": "int_parsing"},
    ]


def test_many_problems_are_counted_beyond_the_twenty_listed(capfd):
    class Many(BaseModel):
        values: list[int]

    with pytest.raises(InvalidPayload) as raised:
        sns_handler(model=Many)(lambda many, context: None)(
            event("sns", {"values": ["x"] * 50}), lambda_context()
        )
    assert len(raised.value.problems) == 20 and raised.value.total == 50
    assert str(raised.value).endswith("; and 30 more")
    assert raised.value.__suppress_context__  # pydantic's error (which holds the input) is not chained


def test_a_validator_that_raises_another_error_fails_the_record_like_the_function_would(capfd):
    class Odd(BaseModel):
        n: int

        @field_validator("n")
        @classmethod
        def check(cls, value):
            raise LookupError("validator bug")

    handler = sqs_handler(model=Odd)(lambda odd, context: None)
    assert handler(sqs_event({"n": 1}), lambda_context())["batchItemFailures"]
    [line] = of_level(read_lines(capfd), "ERROR")
    assert line["message"] == "record failed" and line["error_type"] == "LookupError"


# --- at import time ------------------------------------------------------------------------------


def test_a_type_pydantic_cannot_validate_is_refused_at_import_time():
    class Plain:
        pass

    with pytest.raises(TypeError, match="model=Plain is not a type pydantic can validate"):
        sqs_handler(model=Plain)


@pytest.mark.parametrize(
    "decorator",
    [
        sqs_handler,
        sns_handler,
        stream_handler,
        kafka_handler,
        eventbridge_handler,
        s3_handler,
        cloudwatch_logs_handler,
        api_handler,
    ],
)
def test_a_model_whose_annotations_do_not_resolve_is_refused_when_decorated(decorator):
    """pydantic builds such a model lazily and would fail every record (every message to the DLQ):
    the decorator builds it first, so the deploy stops with pydantic's reason instead."""

    class Order(TypedDict):
        item: Missing  # noqa: F821
        qty: int

    @dataclasses.dataclass
    class Point:
        x: Nowhere  # noqa: F821

    for model, name in ((Order, "Missing"), (Point, "Nowhere")):
        with pytest.raises(
            TypeError,
            match=(
                f"model={model.__name__} is not a type pydantic can validate .*name '{name}' is not defined"
            ),
        ):
            decorator(model=model)


def test_import_lambda_kit_loads_no_pydantic_and_no_asyncio():
    import subprocess
    import sys

    code = (
        "import sys, lambda_kit; from lambda_kit import sqs_handler; sqs_handler(lambda m, c: m); "
        "print(sorted(m for m in ('pydantic', 'asyncio') if m in sys.modules))"
    )
    assert (
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.strip()
        == "[]"
    )


# --- hostile payloads ------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)
items = st.one_of(st.fixed_dictionaries({"sku": st.text(max_size=4), "qty": st.integers(-2, 5)}), json_values)
orders = st.fixed_dictionaries(
    {},
    optional={
        "id": st.one_of(st.integers(-5, 5), st.text(max_size=3), json_values),
        "items": st.one_of(st.lists(items, max_size=3), json_values),
        "note": st.one_of(st.none(), st.text(max_size=5), json_values),
        "password": st.one_of(
            st.just("ok " + SECRET), st.just(SECRET), st.builds(lambda v: {"x": v}, st.just(SECRET))
        ),
        "extra": json_values,
    },
)


@HOSTILE
@given(st.sampled_from(sorted(SOURCES)), st.one_of(orders, json_values))
def test_any_payload_is_either_validated_and_processed_or_failed_with_one_line(source, payload):
    """Never a crash, never a silent success, never a secret on a line."""
    if (
        (source == "dynamodb" and not isinstance(payload, dict))
        or (source, payload) == ("api", None)
        or isinstance(payload, str)
    ):
        payload = {
            "value": payload
        }  # an image is an item; no body is no JSON (400); a str is sent as the text itself (a decode case)
    try:
        expected = TypeAdapter(Order).validate_python(payload)
    except ValidationError:
        expected = None
    with captured() as lines:
        calls, outcome, _ = run(source, Order, payload)
    assert SECRET not in "".join(lines)
    written = [json.loads(line) for line in lines]
    if expected is None:
        assert (calls, outcome) == ([], "failed")
        if source != "api":
            [failed] = [line for line in written if line["level"] == "ERROR"]
            assert failed["message"] == "record failed validation" and failed["invalid"]
    else:
        assert (calls, outcome) == ([expected], "ok")
        assert not [line for line in written if line["level"] in ("ERROR", "WARN")]
