"""One behaviour under every codec: orjson, ujson and the standard library's json write the same bytes.

Whatever a function returns or logs, every installed codec gives the same response (status,
headers, body) and the same log lines, byte for byte; the README's type table holds under each.
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


EDGE_INTS = [2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**307, 10**308 - 1, 10**308,
             -(10**308), 10**400]
EDGE_DECIMALS = [Decimal(text) for text in (
    "3", "3.00", "0.1", "0.10", "-0", "-0.0", "1E+2", "1E+400", "-1E+308", "9.99E+307", "1E-400", "1.5E-7",
    "NaN", "-NaN", "sNaN", "Infinity", "-Infinity", "123456789012345678901234567890.5", "1E+30",
)]
EDGE_FLOATS = [0.0, -0.0, 1e-4, 9.99e-5, 1e-5, -1.5e-5, 1e-7, 5e-324, 1e16, 1e22, 1.7976931348623157e308,
               float("nan"), float("inf"), float("-inf")]
EDGE_TEXT = ["myblog.com/article1", "</script>", "\u2028\u2029\x85", "\x00\x1f\x7f", "é/ü 💥", '"\\', "\ud800", "a\udfffb"]
offsets = st.timedeltas(min_value=-datetime.timedelta(hours=23, minutes=59), max_value=datetime.timedelta(hours=23, minutes=59))
zones = st.none() | st.just(datetime.UTC) | offsets.map(datetime.timezone)

hashable = st.one_of(
    st.none(), st.booleans(), st.integers(), st.sampled_from(EDGE_INTS), st.floats(), st.text(max_size=8),
    st.decimals(allow_nan=False), st.sampled_from([d for d in EDGE_DECIMALS if not d.is_snan()]),
    st.dates(), st.uuids(), st.binary(max_size=6), st.sampled_from([*Colour, *Level, *Kind]),
)
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.sampled_from(EDGE_INTS),
    st.just(5_000).map(lambda digits: 10**digits),  # drawn, as repr() refuses it: more digits than Python writes
    st.floats(), st.floats(min_value=-1e-3, max_value=1e-3), st.sampled_from(EDGE_FLOATS),
    st.text(max_size=12), st.sampled_from(EDGE_TEXT),
    st.decimals(), st.sampled_from(EDGE_DECIMALS),
    st.datetimes(timezones=zones), st.dates(), st.times(timezones=zones),
    st.uuids(), st.binary(max_size=8), st.sampled_from([*Colour, *Level, *Kind]),
    st.builds(Text, st.text(max_size=6)), st.builds(Whole, st.integers()), st.builds(Real, st.floats()),
)
keys = st.one_of(
    st.text(max_size=6), st.sampled_from(["a/b", "\ud800"]), st.integers(), st.floats(), st.none(), st.booleans(),
    st.decimals(allow_nan=False), st.dates(), st.uuids(), st.binary(max_size=4), st.sampled_from([*Level, *Kind]),
    st.tuples(st.integers()),  # no text for it: refused under every codec
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(keys, inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4),
        st.sets(hashable, max_size=4), st.frozensets(hashable, max_size=3),
        st.builds(Point, inner, inner), st.builds(Pair, inner, inner),
        st.dictionaries(st.text(max_size=5), inner, max_size=3).map(Table), st.lists(inner, max_size=3).map(Items),
    ),
    max_leaves=10,
)

PARITY = settings(HOSTILE, max_examples=250)


# --- comparing the codecs ------------------------------------------------------------------------

def outcome(fn: Any) -> tuple[Any, ...]:
    """What ``fn()`` gives under the current codec: its result, or the error it raises."""
    try:
        return ("ok", fn())
    except Exception as error:
        return ("error", type(error).__name__, str(error))


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


VARYING = re.compile(r'"(timestamp|duration_ms)":("[^"]*"|[0-9.e-]+)|"traceback":"(?:[^"\\]|\\.)*"')


def same_text(line: str) -> str:
    """A written line with what differs from run to run (time, and the traceback's frames, which
    name the codec's own code) taken out; the rest compared byte for byte."""
    return VARYING.sub(lambda match: f'"{match.group(1) or "traceback"}":"-"', line)


def written(out: list[str]) -> list[str]:
    parse_lines(out)  # each a valid line: one JSON object, valid UTF-8, at most 64 KiB
    return [same_text(line) for line in out]


def run_api(value: Any, event: dict[str, Any], context: Any) -> tuple[Any, list[str]]:
    with captured() as out:
        response = api_handler(lambda request, ctx: value)(event, context)
    return response, written(out)


def run_sqs(value: Any, event: dict[str, Any], context: Any) -> tuple[Any, list[str]]:
    def fn(payload: Any, ctx: Any) -> Any:
        log.info("returning", extra={"value": value, "keyed": {"v": [value]}})
        return value

    with captured() as out:
        response = sqs_handler(fn)(event, context)
    return response, written(out)


# --- the properties ------------------------------------------------------------------------------

@PARITY
@given(value=values)
def test_dumps_writes_the_same_bytes_under_every_codec(value):
    result = assert_same(under_each_codec(lambda: outcome(lambda: codec.dumps(value))))
    if result[0] == "ok":
        text = result[1]
        json.loads(text, parse_constant=lambda token: pytest.fail(f"{token} written"))  # strict JSON
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
            assert response["body"] == codec.dumps(value)
    assert [json.loads(line)["message"] for line in lines] == (
        ["request received", "request processed"] if status == 200 else ["request received", "request failed"]
    )


@settings(HOSTILE, max_examples=120)
@given(value=values)
def test_batch_handler_logs_the_same_under_every_codec(value):
    event = sqs_event({"n": 1, "url": "myblog.com/article1"}, trace_id=TRACE_ID)
    context = lambda_context()
    response, lines = assert_same(under_each_codec(lambda: run_sqs(value, event, context)))
    assert response == {"batchItemFailures": []}  # logging never fails a record
    assert [json.loads(line)["message"] for line in lines] == ["record received", "returning", "record processed"]


# --- what each type becomes (the README's table) ----------------------------------------------------

TABLE = [
    (Decimal("3"), "3"),
    (Decimal("3.00"), "3"),
    (Decimal("0.1"), "0.1"),
    (Decimal("0.10"), "0.10"),
    (Decimal("1.5E-7"), "1.5E-7"),
    (Decimal("-1E+30"), "-1000000000000000000000000000000"),
    (Decimal("1E+400"), '"1E+400"'),
    (Decimal("NaN"), "null"),
    (Decimal("-Infinity"), "null"),
    (2**64, "18446744073709551616"),
    (10**308, '"1' + "0" * 308 + '"'),
    (float("nan"), "null"),
    (float("inf"), "null"),
    (0.1, "0.1"),
    (1e-5, "0.00001"),
    (1e-7, "1e-7"),
    (1e16, "1e+16"),
    (datetime.datetime(2024, 2, 29, 12, 0, 5, 123, tzinfo=datetime.UTC), '"2024-02-29T12:00:05.000123+00:00"'),
    (datetime.datetime(2024, 2, 29, 12, 0), '"2024-02-29T12:00:00"'),
    (datetime.date(2024, 2, 29), '"2024-02-29"'),
    (datetime.time(13, 5), '"13:05:00"'),
    (uuid.UUID(int=7), '"00000000-0000-0000-0000-000000000007"'),
    ({3, 1, 2}, "[1,2,3]"),
    ({8, 1}, "[1,8]"),  # a set that iterates as 8, 1
    (frozenset({"b", "a"}), '["a","b"]'),
    ((1, "a"), '[1,"a"]'),
    (Pair(1, 2), "[1,2]"),
    (b"caf\xc3\xa9 \xff", '"café \\\\xff"'),
    (Colour.HALF, "0.5"),
    (Level.LOW, "1"),
    (Kind.PATH, '"a/b"'),
    (Point(1, {2}), '{"x":1,"y":[2]}'),
    (Text("t"), '"t"'),
    (Whole(7), "7"),
    (Real(1e-5), "0.00001"),
    (Table(a=1), '{"a":1}'),
    ({2: "a", None: "b", True: "c", 2.5: "d", Decimal("0.5"): "e", datetime.date(2024, 1, 1): "f", b"k": "g"},
     '{"2":"a","null":"b","true":"c","2.5":"d","0.5":"e","2024-01-01":"f","k":"g"}'),
    ({"url": "myblog.com/article1"}, '{"url":"myblog.com/article1"}'),
    ("\u2028", '"\u2028"'),
]


@pytest.mark.parametrize("codec_name", CODECS)
@pytest.mark.parametrize(("value", "text"), TABLE, ids=[f"{type(v).__name__}-{i}" for i, (v, _) in enumerate(TABLE)])
def test_each_type_is_written_as_the_table_says(value, text, codec_name):
    with using_codec(codec_name):
        assert codec.dumps(value) == text


REFUSED = [
    (object(), TypeError, "Object of type object is not JSON serializable"),
    ({(1, 2): "x"}, TypeError, "keys must be str, int, float, bool or None, not tuple"),
    (datetime.timedelta(days=1), TypeError, "Object of type timedelta is not JSON serializable"),
    ("bad \ud800", UnicodeEncodeError, "surrogates not allowed"),
    (10**5_000, ValueError, "Exceeds the limit (4300 digits)"),
]


@pytest.mark.parametrize("codec_name", CODECS)
@pytest.mark.parametrize(("value", "error", "message"), REFUSED, ids=[e.__name__ + str(i) for i, (_, e, _) in enumerate(REFUSED)])
def test_what_json_cannot_hold_is_refused_alike(value, error, message, codec_name):
    with using_codec(codec_name), pytest.raises(error, match=re.escape(message)) as raised:
        codec.dumps(value)
    assert raised.value.__context__ is None  # no codec's own error chained to it


def nested(depth: int, inner: Any) -> Any:
    for _ in range(depth):
        inner = [inner]
    return inner


@pytest.mark.parametrize("codec_name", CODECS)
@pytest.mark.parametrize(("value", "fits"), [
    (nested(codec.MAX_NESTING, 1), True),
    (nested(codec.MAX_NESTING, {1}), False),  # the set becomes one more array
    (nested(codec.MAX_NESTING - 1, {1}), True),
    (nested(codec.MAX_NESTING - 1, Point(1)), True),
    (nested(codec.MAX_NESTING - 1, Point([1])), False),
    (nested(codec.MAX_NESTING + 1, 1), False),
    (nested(codec.MAX_NESTING, 2**64), True),  # orjson refuses the int: the shared walk writes it
], ids=["254", "254+set", "253+set", "253+dataclass", "253+dataclass+list", "255", "254+bigint"])
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
    assert assert_same(errors)[:2] == ("error", "ValueError")


# --- the two cases -------------------------------------------------------------------------

@pytest.mark.parametrize("codec_name", CODECS)
def test_a_dynamodb_number_answers_200_with_an_exact_body(codec_name):
    item = {"PK": "a", "count": Decimal("3"), "ratio": Decimal("0.1"), "tags": {"x"}}
    with using_codec(codec_name), captured() as out:
        response = api_handler(lambda request, context: item)(api_event(), lambda_context())
    assert response["statusCode"] == 200
    assert response["body"] == '{"PK":"a","count":3,"ratio":0.1,"tags":["x"]}'
    assert '"result":{"PK":"a","count":3,"ratio":0.1,"tags":["x"]}' in out[-1]


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
    assert str(raised.value) == "LAMBDA_KIT_JSON='simplejson' names no codec: use orjson, ujson or json, or leave it unset"


def test_a_forced_codec_that_is_not_installed_says_so(restore_codec):
    restore_codec.setenv("LAMBDA_KIT_JSON", "ujson")
    restore_codec.setitem(sys.modules, "ujson", None)
    with pytest.raises(ImportError) as raised:
        codec.reload()
    assert str(raised.value) == "LAMBDA_KIT_JSON=ujson, but ujson is not installed: pip install ujson, or unset LAMBDA_KIT_JSON"
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_no_codec_is_imported_until_first_use():
    code = (
        "import sys\nfrom lambda_kit import sqs_handler, api_handler, get_logger\nfrom lambda_kit import codec\n"
        "libs = ('orjson', 'ujson', 'json', 'decimal', 'uuid', 'datetime', 'dataclasses')\n"
        "print(sorted(m for m in libs if m in sys.modules))\n"
        "codec.dumps({'a': 1})\nprint(codec.name in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "LAMBDA_KIT_JSON"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out.split("\n")[:2] == ["[]", "True"]


# --- the pieces the log builds on -----------------------------------------------------------------

@pytest.mark.parametrize(("key", "text"), [
    ("k", "k"), ("é/", "é/"), (None, "null"), (True, "true"), (False, "false"), (3, "3"), (-2.5, "-2.5"),
    (1e-5, "0.00001"), (float("nan"), "null"), (Decimal("1.50"), "1.50"), (Decimal("2E+1"), "20"),
    (Decimal("1E+400"), "1E+400"), (10**400, "1" + "0" * 400), (Level.LOW, "1"), (Kind.PATH, "a/b"),
    (b"k\xff", "k\\xff"), (datetime.date(2024, 1, 2), "2024-01-02"), (uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
    (Text("t"), "t"), (Whole(7), "7"),
], ids=lambda v: type(v).__name__)
def test_a_key_is_the_text_of_its_value(key, text):
    assert codec.key_text(key) == text


@pytest.mark.parametrize(("key", "error"), [((1,), TypeError), (Point(1), TypeError), ("\ud800", UnicodeEncodeError),
                                            (object(), TypeError)])
def test_a_key_with_no_text_is_refused(key, error):
    with pytest.raises(error):
        codec.key_text(key)


def test_plain_with_a_fallback_writes_anything_the_table_refuses():
    class Opaque:
        pass

    value = {"o": Opaque(), 1: "int key", (1,): "tuple key", "s": "a\ud800", "\udc80": 1, "big": 10**5_000,
             "deep": nested(codec.MAX_NESTING + 1, 1), "ok": [Decimal("0.5"), {2}, 1e-5]}
    got = codec.plain(value, fallback=lambda item: f"<{type(item).__name__}>")
    deep = got.pop("deep")
    assert got == {"o": "<Opaque>", "1": "int key", "<tuple>": "tuple key", "s": "a\\ud800", "\\udc80": 1,
                   "big": "<int>", "ok": [got["ok"][0], [2], got["ok"][2]]}
    assert [type(item) for item in got["ok"]] == [codec.Number, list, codec.Number]
    assert [got["ok"][0].text, got["ok"][2].text] == ["0.5", "0.00001"]
    for _ in range(codec.MAX_NESTING - 1):  # the containers that fit, then the fallback's text
        [deep] = deep
    assert deep == "<list>"
    with pytest.raises(TypeError, match="Object of type Opaque is not JSON serializable"):
        codec.plain(value)


def test_a_number_is_written_as_its_text_and_shows_it():
    number = codec.Number("1.50")
    assert codec.convert(number) is number and repr(number) == "Number(1.50)"
    for name in CODECS:
        with using_codec(name):
            assert codec.dumps([number, {"n": number}]) == '[1.50,{"n":1.50}]'


@pytest.mark.parametrize("codec_name", CODECS)
def test_sets_whose_items_do_not_compare_keep_every_item(codec_name):
    with using_codec(codec_name):
        assert sorted(json.loads(codec.dumps({1, "a", None})), key=str) == [1, None, "a"]


@pytest.mark.parametrize("codec_name", CODECS)
@pytest.mark.parametrize(("value", "text"), [
    (10**308 - 1, "9" * 308), (-(10**308) + 1, "-" + "9" * 308), (-(10**308), '"-1' + "0" * 308 + '"'),
    (Decimal("9.99E+307"), "999" + "0" * 305), (Decimal("1E+308"), '"1E+308"'), (Decimal("-1E+308"), '"-1E+308"'),
    (2**63 - 1, str(2**63 - 1)), (-(2**63), str(-(2**63))), (2**64 - 1, str(2**64 - 1)),
    (-1e-5, "-0.00001"), (1.5e-9, "1.5e-9"), (1e-10, "1e-10"), (1e-4, "0.0001"), (-0.0, "-0.0"),
], ids=str)
def test_numbers_at_the_edges_of_the_table(value, text, codec_name):
    with using_codec(codec_name):
        assert codec.dumps(value) == text


@pytest.mark.parametrize("attr", ["loads", "dumps", "dumps_plain", "name"])
def test_the_codec_is_chosen_on_first_use_of_any_of_its_names(attr):
    code = f"from lambda_kit import codec\nvalue = codec.{attr}\nprint(codec.name, callable(value) or value == codec.name)"
    env = {k: v for k, v in os.environ.items() if k != "LAMBDA_KIT_JSON"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out.split() == [CODECS[0], "True"]


def test_other_names_are_not_the_codec():
    with pytest.raises(AttributeError, match="^nothing$"):
        codec.nothing  # noqa: B018


class Opaque:
    pass


@pytest.mark.parametrize("codec_name", CODECS)
def test_dumps_plain_never_writes_what_is_not_json(codec_name):
    """``dumps_plain`` takes plain data (the log's ``clean`` values); given anything else it writes
    valid JSON or refuses, never NaN or an object's repr."""
    with using_codec(codec_name):
        for value in (float("nan"), [float("-inf")]):
            outcome_ = outcome(lambda value=value: codec.dumps_plain(value))
            if outcome_[0] == "ok":
                json.loads(outcome_[1], parse_constant=lambda token: pytest.fail(f"{token} written"))
        with pytest.raises(TypeError, match="Opaque"):
            codec.dumps_plain({"o": Opaque()})


def test_the_converter_cache_is_bounded():
    """Classes made at run time (one per call, say) must not grow the cache of converters forever."""
    codec._converters.clear()
    made = [type(f"Made{index}", (), {}) for index in range(1_100)]
    for kind in made:
        with pytest.raises(TypeError):
            codec.convert(kind())
    assert len(codec._converters) == 1_024
    assert all(codec._converters[kind] is not None for kind in made[:1_024])


def test_plain_with_a_fallback_reaches_into_converted_values():
    """A dataclass's (or a set's) items get the fallback too, and so does the fallback's own text."""
    got = codec.plain({"p": Point(Opaque()), (1,): "k"}, fallback=lambda item: "\ud800" if type(item) is tuple else "<o>")
    assert got == {"p": {"x": "<o>", "y": None}, "\\ud800": "k"}
