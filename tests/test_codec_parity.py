"""One behaviour under every codec: orjson, ujson and the standard library's json give the same
JSON values (not the same bytes: spacing, float spelling and escapes may differ).

Whatever a function returns or logs, every installed codec gives the same response (status,
headers, the body's value) and the same log lines (their values); the type table of
docs/decorators.md holds under each; what one codec refuses, every codec refuses.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import os
import re
import subprocess
import sys
import uuid
from collections import namedtuple
from decimal import Decimal
from typing import Any

import pytest
from _hostile import CODECS, HOSTILE, captured, parse_lines, using_codec
from hypothesis import given, settings
from hypothesis import strategies as st

from lambda_kit import api_handler, codec, get_logger, sqs_handler
from lambda_kit.testing import api_event, lambda_context, sqs_event

log = get_logger("parity")
TRACE_ID = "parity-trace-1"


# --- values of every kind a function returns ------------------------------------------------------


class Colour(enum.Enum):
    RED = "red"
    HALF = Decimal("0.5")
    PAIR = (1, "a/b")


class Level(enum.IntEnum):
    LOW = 1


class Kind(enum.StrEnum):
    PATH = "a/b"


@dataclasses.dataclass
class Point:
    x: Any
    y: Any = None


Pair = namedtuple("Pair", "a b")


class Text(str):
    pass


class Whole(int):
    pass


class Real(float):
    pass


class Table(dict):
    pass


class Items(list):
    pass


EDGE_INTS = [
    2**63 - 1,
    2**63,
    2**64 - 1,
    2**64,
    -(2**63),
    -(2**63) - 1,
    10**307,
    10**308 - 1,
    10**308,
    -(10**308),
    10**400,
]
EDGE_DECIMALS = [
    Decimal(text)
    for text in (
        "3",
        "3.00",
        "0.1",
        "0.10",
        "-0",
        "-0.0",
        "1E+2",
        "1E+400",
        "-1E+308",
        "9.99E+307",
        "1E-400",
        "1.5E-7",
        "NaN",
        "-NaN",
        "sNaN",
        "Infinity",
        "-Infinity",
        "123456789012345678901234567890.5",
        "1E+30",
    )
]
EDGE_FLOATS = [
    0.0,
    -0.0,
    1e-4,
    9.99e-5,
    1e-5,
    -1.5e-5,
    1e-7,
    5e-324,
    1e16,
    1e22,
    1.7976931348623157e308,
    float("nan"),
    float("inf"),
    float("-inf"),
]
EDGE_TEXT = [
    "myblog.com/article1",
    "</script>",
    "\u2028\u2029\x85",
    "\x00\x1f\x7f",
    "é/ü 💥",
    '"\\',
    "\ud800",
    "a\udfffb",
]
offsets = st.timedeltas(
    min_value=-datetime.timedelta(hours=23, minutes=59), max_value=datetime.timedelta(hours=23, minutes=59)
)
zones = st.none() | st.just(datetime.UTC) | offsets.map(datetime.timezone)

hashable = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from(EDGE_INTS),
    st.floats(),
    st.text(max_size=8),
    st.decimals(allow_nan=False),
    st.sampled_from([d for d in EDGE_DECIMALS if not d.is_snan()]),
    st.dates(),
    st.uuids(),
    st.binary(max_size=6),
    st.sampled_from([*Colour, *Level, *Kind]),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from(EDGE_INTS),
    st.just(5_000).map(
        lambda digits: 10**digits
    ),  # drawn, as repr() refuses it: more digits than Python writes
    st.floats(),
    st.floats(min_value=-1e-3, max_value=1e-3),
    st.sampled_from(EDGE_FLOATS),
    st.text(max_size=12),
    st.sampled_from(EDGE_TEXT),
    st.decimals(),
    st.sampled_from(EDGE_DECIMALS),
    st.datetimes(timezones=zones),
    st.dates(),
    st.times(timezones=zones),
    st.uuids(),
    st.binary(max_size=8),
    st.sampled_from([*Colour, *Level, *Kind]),
    st.builds(Text, st.text(max_size=6)),
    st.builds(Whole, st.integers()),
    st.builds(Real, st.floats()),
)
keys = st.one_of(
    st.text(max_size=6),
    st.sampled_from(["a/b", "\ud800"]),
    st.integers(),
    st.floats(),
    st.none(),
    st.booleans(),
    st.decimals(allow_nan=False),
    st.dates(),
    st.uuids(),
    st.binary(max_size=4),
    st.sampled_from([*Level, *Kind]),
    st.tuples(st.integers()),  # no text for it: refused under every codec
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(keys, inner, max_size=4),
        st.dictionaries(st.text(max_size=5), inner, max_size=4),
        st.sets(hashable, max_size=4),
        st.frozensets(hashable, max_size=3),
        st.builds(Point, inner, inner),
        st.builds(Pair, inner, inner),
        st.dictionaries(st.text(max_size=5), inner, max_size=3).map(Table),
        st.lists(inner, max_size=3).map(Items),
    ),
    max_leaves=10,
)

PARITY = settings(HOSTILE, max_examples=250)


# --- comparing the codecs ------------------------------------------------------------------------


def outcome(fn: Any) -> tuple[Any, ...]:
    """What ``fn()`` gives under the current codec: its result, or the type of error it raises."""
    try:
        return ("ok", fn())
    except Exception as error:
        return ("error", type(error).__name__)


def under_each_codec(fn: Any) -> dict[str, Any]:
    results = {}
    for name in CODECS:
        with using_codec(name):
            results[name] = fn()
    return results


def assert_same(results: dict[str, Any]) -> Any:
    first_name, first = next(iter(results.items()))
    for name, got in results.items():
        assert got == first, f"{name} differs from {first_name}:\n{got!r}\n{first!r}"
    return first


def strict(text: str) -> Any:
    """``text`` read as strict JSON: NaN or Infinity written fail the test."""
    return json.loads(text, parse_constant=lambda token: pytest.fail(f"{token} written"))


def value_of(text: str) -> Any:
    """A written JSON text as the value it holds; what differs from run to run taken out."""
    value = strict(text)
    if isinstance(value, dict):
        for varying in ("timestamp", "duration_ms", "traceback"):
            value.pop(varying, None)
    return value


def written(out: list[str]) -> list[Any]:
    parse_lines(out)  # each a valid line: one JSON object, valid UTF-8, at most 64 KiB
    return [value_of(line) for line in out]


def run_api(value: Any, event: dict[str, Any], context: Any) -> tuple[Any, list[Any]]:
    with captured() as out:
        response = api_handler(lambda request, ctx: value)(event, context)
    response = {**response, "body": strict(response["body"])}
    return response, written(out)


def run_sqs(value: Any, event: dict[str, Any], context: Any) -> tuple[Any, list[Any]]:
    def fn(payload: Any, ctx: Any) -> Any:
        log.info("returning", extra={"value": value, "keyed": {"v": [value]}})
        return value

    with captured() as out:
        response = sqs_handler(fn)(event, context)
    return response, written(out)


# --- the properties ------------------------------------------------------------------------------


@PARITY
@given(value=values)
def test_dumps_writes_the_same_values_under_every_codec(value):
    result = assert_same(under_each_codec(lambda: outcome(lambda: value_of(codec.dumps(value)))))
    if result[0] == "ok":
        with using_codec(CODECS[0]):
            text = codec.dumps(value)
        assert "\\/" not in text
        text.encode("utf-8")


@settings(HOSTILE, max_examples=120)
@given(value=values)
def test_api_handler_answers_and_logs_the_same_under_every_codec(value):
    event = api_event("GET", "/things", headers={"X-Trace-Id": TRACE_ID})
    context = lambda_context()
    response, lines = assert_same(under_each_codec(lambda: run_api(value, event, context)))
    status = response["statusCode"]
    assert status in (200, 500)
    if status == 200:
        with using_codec(CODECS[0]):
            assert response["body"] == strict(codec.dumps(value))
    assert [line["message"] for line in lines] == (
        ["request received", "request processed"] if status == 200 else ["request received", "request failed"]
    )


@settings(HOSTILE, max_examples=120)
@given(value=values)
def test_batch_handler_logs_the_same_under_every_codec(value):
    event = sqs_event({"n": 1, "url": "myblog.com/article1"}, trace_id=TRACE_ID)
    context = lambda_context()
    response, lines = assert_same(under_each_codec(lambda: run_sqs(value, event, context)))
    assert response == {"batchItemFailures": []}  # logging never fails a record
    assert [line["message"] for line in lines] == ["record received", "returning", "record processed"]


HOSTILE_BODIES = [
    "123456789012345678901234567890",
    "-123456789012345678901234567890",
    "[18446744073709551616]",
    '{"n": 1e400}',
    '{"n": -1e400}',
    "[NaN]",
    "[Infinity]",
    "[-Infinity]",
    '["\\ud800"]',
    '["\\udc00x"]',
    '["\\ud83d\\ude00"]',
    '{"n": 1.5e308}',
    '{"n": 1e-400}',
    '"\ud800"',
    "[1, 2",
    "",
    "\ufeff[1]",
    ' {"a": 1} ',
    '{"a": 1, "a": 2}',
    "[1.0, -0.0, 0.1]",
    '"caf\u00e9"',
]


@pytest.mark.parametrize("body", HOSTILE_BODIES, ids=range(len(HOSTILE_BODIES)))
def test_every_codec_reads_a_body_as_the_same_value_or_refuses_it(body):
    """Integers of any size exact; non-finite numbers and lone surrogates refused (as orjson
    refuses them) under every codec."""

    def read(text: Any) -> tuple[Any, ...]:
        try:
            return ("ok", codec.loads(text))
        except ValueError:  # each codec's own class of it (JSONDecodeError ...): one outcome, refused
            return ("refused",)

    results = assert_same(under_each_codec(lambda: read(body)))
    as_bytes = assert_same(under_each_codec(lambda: read(body.encode("utf-8", "surrogatepass"))))
    assert as_bytes[0] == results[0] and as_bytes[1:] == results[1:] or results[0] == "error"
    if results[0] == "ok":
        assert results[1] == json.loads(body)


@pytest.mark.parametrize(
    ("body", "value"),
    [
        ("123456789012345678901234567890", 123456789012345678901234567890),
        ("[-18446744073709551617]", [-(2**64) - 1]),
        ("[1e400]", None),
        ("[NaN]", None),
        ('["\\ud800"]', None),
        ('{"a": "\\ud800"}', None),
        ('{"a": ["\\ud800"]}', None),
        ('{"\\ud800": 1}', None),
        ("[1.5e308]", [1.5e308]),
    ],
)
def test_big_integers_stay_exact_and_what_json_cannot_hold_is_refused(body, value):
    for name in CODECS:
        with using_codec(name):
            if value is None:
                with pytest.raises(ValueError):
                    codec.loads(body)
            else:
                assert codec.loads(body) == value and type(codec.loads(body)) is type(value)


@pytest.mark.parametrize("codec_name", [name for name in CODECS if name != "orjson"])
def test_what_is_not_json_is_refused_with_its_reason(codec_name):
    """Under the codecs read by the standard library's rules (orjson gives its own messages)."""
    beyond = "1" + "0" * 60 + "e400"
    with using_codec(codec_name):
        for text, message in [
            ("[NaN]", "NaN is not a JSON number"),
            ('{"a": -Infinity}', "-Infinity is not a JSON number"),
            (f"[{beyond}]", f"number {beyond[:40]} is beyond a float's range"),
        ]:
            with pytest.raises(ValueError) as raised:
                codec.loads(text)
            assert str(raised.value) == message


@pytest.mark.parametrize("version", ["v1", "v2", "url", "alb"])
@pytest.mark.parametrize("body", HOSTILE_BODIES, ids=range(len(HOSTILE_BODIES)))
def test_an_api_answers_a_hostile_body_alike_under_every_codec(body, version):
    """Through ``api_handler``, as a client sends it: the same status and the same answer under
    each codec; what JSON cannot hold (NaN, 1e400, a lone surrogate) is a 400, never a 200 or a 500."""
    context = lambda_context()

    def answer() -> tuple[int, Any]:
        event = api_event("POST", "/items", body=body, version=version, headers={"X-Trace-Id": "t-hostile"})
        with captured():
            response = api_handler(lambda request, ctx: {"got": request.json})(event, context)
        return response["statusCode"], strict(response["body"])

    status, answered = assert_same(under_each_codec(answer))
    cannot_hold = ("NaN", "Infinity", "1e400", "\\ud800", "\\udc00x", "\ud800")
    if status == 200:
        assert answered == {"got": json.loads(body.removeprefix("\ufeff"))}  # a BOM is read past
    else:
        assert (status, answered["error"]) == (400, "request body is not valid JSON")
    assert status == 400 or not any(token in body for token in cannot_hold)


@settings(HOSTILE, max_examples=200)
@given(
    value=st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
        max_leaves=12,
    )
)
def test_what_one_codec_writes_every_codec_reads_back_as_it_was(value):
    for writer in CODECS:
        with using_codec(writer):
            text = codec.dumps(value)
        for reader in CODECS:
            with using_codec(reader):
                assert codec.loads(text) == value


# --- what each type becomes (the table in docs/decorators.md) ------------------------------------

TABLE = [
    (Decimal("3"), 3),
    (Decimal("3.00"), 3),
    (Decimal("0.1"), 0.1),
    (Decimal("0.10"), 0.1),
    (Decimal("1.5E-7"), 1.5e-7),
    (Decimal("-1E+30"), -(10**30)),
    (Decimal("1E+400"), 10**400),
    (Decimal("1E+4299"), 10**4299),  # 4,300 digits: the most Python writes as an int's text
    (Decimal("1E+4300"), "1E+4300"),
    (
        Decimal("1234567890123456789012345.123456789"),
        "1234567890123456789012345.123456789",
    ),  # no float holds it
    (Decimal("0.1000000000000000055511151231257827"), "0.1000000000000000055511151231257827"),
    (Decimal("1E-400"), "1E-400"),
    (Decimal("NaN"), None),
    (Decimal("-Infinity"), None),
    (2**64, 2**64),
    (10**308, 10**308),
    (float("nan"), None),
    (float("inf"), None),
    (0.1, 0.1),
    (1e-5, 1e-5),
    (1e16, 1e16),
    (datetime.datetime(2024, 2, 29, 12, 0, 5, 123, tzinfo=datetime.UTC), "2024-02-29T12:00:05.000123+00:00"),
    (datetime.datetime(2024, 2, 29, 12, 0), "2024-02-29T12:00:00"),
    (datetime.date(2024, 2, 29), "2024-02-29"),
    (datetime.time(13, 5), "13:05:00"),
    (uuid.UUID(int=7), "00000000-0000-0000-0000-000000000007"),
    ({3, 1, 2}, [1, 2, 3]),
    ({8, 1}, [1, 8]),  # a set that iterates as 8, 1
    (frozenset({"b", "a"}), ["a", "b"]),
    ((1, "a"), [1, "a"]),
    (Pair(1, 2), [1, 2]),
    (b"caf\xc3\xa9 \xff", "café \\xff"),
    (Colour.HALF, 0.5),
    (Level.LOW, 1),
    (Kind.PATH, "a/b"),
    (Point(1, {2}), {"x": 1, "y": [2]}),
    (Text("t"), "t"),
    (Whole(7), 7),
    (Real(1e-5), 1e-5),
    (Table(a=1), {"a": 1}),
    (
        {
            2: "a",
            None: "b",
            True: "c",
            2.5: "d",
            Decimal("0.5"): "e",
            datetime.date(2024, 1, 1): "f",
            b"k": "g",
        },
        {"2": "a", "null": "b", "true": "c", "2.5": "d", "0.5": "e", "2024-01-01": "f", "k": "g"},
    ),
    ({"url": "myblog.com/article1"}, {"url": "myblog.com/article1"}),
    ("\u2028", "\u2028"),
]


@pytest.mark.parametrize("codec_name", CODECS)
@pytest.mark.parametrize(
    ("value", "written_as"), TABLE, ids=[f"{type(v).__name__}_{i}" for i, (v, _) in enumerate(TABLE)]
)
def test_each_type_is_written_as_the_table_says(value, written_as, codec_name):
    with using_codec(codec_name):
        text = codec.dumps(value)
    assert strict(text) == written_as and type(strict(text)) is type(written_as)
    assert "\\/" not in text


REFUSED = [
    (object(), TypeError, "Object of type object is not JSON serializable"),
    ({(1, 2): "x"}, TypeError, "keys must be str, int, float, bool or None, not tuple"),
    (datetime.timedelta(days=1), TypeError, "Object of type timedelta is not JSON serializable"),
    ("bad \ud800", UnicodeEncodeError, "surrogates not allowed"),
    (10**5_000, ValueError, "Exceeds the limit (4300 digits)"),
]


@pytest.mark.parametrize("codec_name", CODECS)
@pytest.mark.parametrize(
    ("value", "error", "message"), REFUSED, ids=[e.__name__ + str(i) for i, (_, e, _) in enumerate(REFUSED)]
)
def test_what_json_cannot_hold_is_refused_alike(value, error, message, codec_name):
    with using_codec(codec_name), pytest.raises(error, match=re.escape(message)) as raised:
        codec.dumps(value)
    assert raised.value.__context__ is None  # no codec's own error chained to it


def nested(depth: int, inner: Any) -> Any:
    for _ in range(depth):
        inner = [inner]
    return inner


def nested_objects(depth: int, inner: Any) -> Any:
    for _ in range(depth):
        inner = {"a": inner}
    return inner


@pytest.mark.parametrize("codec_name", CODECS)
@pytest.mark.parametrize(
    ("value", "fits"),
    [
        (nested(codec.MAX_NESTING, 1), True),
        (nested(codec.MAX_NESTING, {1}), False),  # the set becomes one more array
        (nested(codec.MAX_NESTING - 1, {1}), True),
        (nested(codec.MAX_NESTING - 1, Point(1)), True),
        (nested(codec.MAX_NESTING - 1, Point([1])), False),
        (nested(codec.MAX_NESTING + 1, 1), False),
        (nested(codec.MAX_NESTING, 2**64), True),  # orjson refuses the int: the standard library writes it
        (nested_objects(codec.MAX_NESTING, 2**64), True),
        (nested_objects(codec.MAX_NESTING + 1, 1), False),
    ],
    ids=[
        "254",
        "254+set",
        "253+set",
        "253+dataclass",
        "253+dataclass+list",
        "255",
        "254+bigint",
        "254objects+bigint",
        "255objects",
    ],
)
def test_nesting_is_bounded_alike(value, fits, codec_name):
    with using_codec(codec_name):
        if fits:
            assert json.loads(codec.dumps(value)) is not None
        else:
            with pytest.raises(ValueError, match="nested deeper than 254 levels"):
                codec.dumps(value)


def test_circular_values_are_refused_alike():
    loop: list[Any] = []
    loop.append(loop)
    errors = under_each_codec(lambda: outcome(lambda: codec.dumps({"a": loop})))
    assert assert_same(errors) == ("error", "ValueError")


@pytest.mark.parametrize("codec_name", CODECS)
def test_a_dynamodb_number_answers_200_with_an_exact_body(codec_name):
    item = {
        "PK": "a",
        "count": Decimal("3"),
        "ratio": Decimal("0.1"),
        "tags": {"x"},
        "exact": Decimal("1234567890123456789012345.123456789"),
    }
    with using_codec(codec_name), captured() as out:
        response = api_handler(lambda request, context: item)(api_event(), lambda_context())
    assert response["statusCode"] == 200
    expected = {
        "PK": "a",
        "count": 3,
        "ratio": 0.1,
        "tags": ["x"],
        "exact": "1234567890123456789012345.123456789",
    }
    assert strict(response["body"]) == expected
    assert strict(out[-1])["result"] == expected


@pytest.mark.parametrize("codec_name", CODECS)
def test_urls_in_log_lines_are_greppable(codec_name):
    with using_codec(codec_name), captured() as out:
        sqs_handler(lambda message, context: message["url"])(sqs_event({"url": "myblog.com/article1"}), None)
    assert len(out) == 2
    assert all('"myblog.com/article1"' in line and "\\/" not in line for line in out)


# --- choosing the codec ----------------------------------------------------------------------------


@pytest.fixture
def restore_codec(monkeypatch):
    yield monkeypatch
    monkeypatch.undo()
    codec.reload()


def test_the_fastest_installed_codec_is_chosen(restore_codec):
    restore_codec.delenv("LAMBDA_KIT_JSON", raising=False)
    codec.reload()
    assert codec.name == CODECS[0]
    restore_codec.setitem(sys.modules, "orjson", None)  # as if not installed: import fails
    codec.reload()
    assert codec.name == ("ujson" if "ujson" in CODECS else "json")
    restore_codec.setitem(sys.modules, "ujson", None)
    codec.reload()
    assert codec.name == "json"
    assert codec.dumps({"n": Decimal("3")}) == '{"n":3}'


@pytest.mark.parametrize("value", ["json", "JSON", " ujson "])
def test_a_codec_is_forced_by_name(value, restore_codec):
    restore_codec.setenv("LAMBDA_KIT_JSON", value)
    codec.reload()
    assert codec.name == value.strip().lower()


def test_an_unknown_codec_name_is_one_clear_error(restore_codec):
    restore_codec.setenv("LAMBDA_KIT_JSON", "simplejson")
    with pytest.raises(ValueError) as raised:
        codec.reload()
    assert (
        str(raised.value)
        == "LAMBDA_KIT_JSON='simplejson' names no codec: use orjson, ujson or json, or leave it unset"
    )


def test_a_forced_codec_that_is_not_installed_says_so(restore_codec):
    restore_codec.setenv("LAMBDA_KIT_JSON", "ujson")
    restore_codec.setitem(sys.modules, "ujson", None)
    with pytest.raises(ImportError) as raised:
        codec.reload()
    assert (
        str(raised.value)
        == "LAMBDA_KIT_JSON=ujson, but ujson is not installed: pip install ujson, or unset LAMBDA_KIT_JSON"
    )
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_no_codec_library_is_imported_until_first_use():
    code = (
        "import sys\nfrom lambda_kit import sqs_handler, api_handler, get_logger\n"
        "from lambda_kit import codec\n"
        "libs = ('orjson', 'ujson')\n"
        "print(sorted(m for m in libs if m in sys.modules))\n"
        "codec.dumps({'a': 1})\nprint(codec.name in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "LAMBDA_KIT_JSON"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout
    assert out.split("\n")[:2] == ["[]", "True"]


@pytest.mark.parametrize(
    ("key", "text"),
    [
        ("k", "k"),
        ("é/", "é/"),
        (None, "null"),
        (True, "true"),
        (False, "false"),
        (3, "3"),
        (-2.5, "-2.5"),
        (1e-5, "1e-05"),
        (float("nan"), "null"),
        (Decimal("1.50"), "1.5"),
        (Decimal("2E+1"), "20"),
        (Decimal("1E+400"), "1" + "0" * 400),
        (10**400, "1" + "0" * 400),
        (Level.LOW, "1"),
        (Kind.PATH, "a/b"),
        (b"k\xff", "k\\xff"),
        (datetime.date(2024, 1, 2), "2024-01-02"),
        (uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
        (Text("t"), "t"),
        (Whole(7), "7"),
    ],
    ids=lambda v: type(v).__name__,
)
def test_a_key_is_the_text_of_its_value(key, text):
    assert codec.key_text(key) == text


@pytest.mark.parametrize(
    ("key", "error"),
    [((1,), TypeError), (Point(1), TypeError), ("\ud800", UnicodeEncodeError), (object(), TypeError)],
)
def test_a_key_with_no_text_is_refused(key, error):
    with pytest.raises(error):
        codec.key_text(key)


@pytest.mark.parametrize("codec_name", CODECS)
def test_sets_whose_items_do_not_compare_keep_every_item(codec_name):
    with using_codec(codec_name):
        assert sorted(json.loads(codec.dumps({1, "a", None})), key=str) == [1, None, "a"]


@pytest.mark.parametrize("attr", ["loads", "dumps", "name"])
def test_the_codec_is_chosen_on_first_use_of_any_of_its_names(attr):
    code = (
        f"from lambda_kit import codec\nvalue = codec.{attr}\n"
        "print(codec.name, callable(value) or value == codec.name)"
    )
    env = {k: v for k, v in os.environ.items() if k != "LAMBDA_KIT_JSON"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout
    assert out.split() == [CODECS[0], "True"]


def test_other_names_are_not_the_codec():
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        codec.nothing  # noqa: B018


def test_the_converter_cache_is_bounded():
    """Classes made at run time (one per call, say) must not grow the cache of converters forever."""
    codec._converters.clear()
    made = [type(f"Made{index}", (), {}) for index in range(1_100)]
    for kind in made:
        with pytest.raises(TypeError):
            codec.convert(kind())
    assert len(codec._converters) == 1_024
    assert all(codec._converters[kind] is not None for kind in made[:1_024])
