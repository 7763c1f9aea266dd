"""The DynamoDB Streams adapter (``lambda_kit.sources.dynamodb``) through ``stream_handler``: images
as boto3 gives them, records that cannot be read, what a failing record's ERROR line says, the
item key as the order of an ``async def`` function, the image given to ``model=``, and the
tumbling window's end."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest
from _logs import of_level, read_lines

from lambda_kit import current_trace_id, current_window, stream_handler
from lambda_kit.testing import dynamodb_record, lambda_context, tumbling_window


def one_change(record: dict) -> tuple[dict, list]:
    seen = []

    @stream_handler
    def handler(change, context):
        seen.append(change)

    return handler({"Records": [record]}, lambda_context()), seen


def test_binary_values_read_by_boto3_are_taken_as_the_bytes_they_are():
    # boto3's DynamoDB Streams client returns B and BS as bytes, not base64 text (the local stack's poller)
    record = dynamodb_record("INSERT", keys={"PK": "a"}, new_image={"PK": "a"})
    record["dynamodb"]["NewImage"].update(
        {"blob": {"B": b"\x00\xff"}, "blobs": {"BS": [b"x", bytearray(b"y")]}}
    )
    response, [change] = one_change(record)
    assert response == {"batchItemFailures": []}
    assert change["new_image"] == {"PK": "a", "blob": b"\x00\xff", "blobs": {b"x", b"y"}}


def test_a_binary_value_that_is_neither_text_nor_bytes_fails_its_record_saying_what_it_holds(capfd):
    record = dynamodb_record("INSERT", keys={"PK": "a"}, new_image={"PK": "a"})
    record["dynamodb"]["NewImage"]["blob"] = {"B": 12}
    response, seen = one_change(record)
    assert (
        response == {"batchItemFailures": [{"itemIdentifier": record["dynamodb"]["SequenceNumber"]}]}
        and seen == []
    )
    [error] = of_level(read_lines(capfd), "ERROR")
    assert error["error"] == "stream image is malformed (binary attribute holds int, not base64 text)"


def test_a_record_without_keys_has_empty_keys():
    record = dynamodb_record("INSERT", keys={}, new_image={"n": 1})
    del record["dynamodb"]["Keys"]
    response, [change] = one_change(record)
    assert response == {"batchItemFailures": []}
    assert change == {"event_name": "INSERT", "keys": {}, "new_image": {"n": 1}, "old_image": None}


@pytest.mark.parametrize("sequence_number", [123, "", None])
def test_a_record_without_a_sequence_number_as_text_cannot_be_read(sequence_number, capfd):
    record = dynamodb_record("INSERT", keys={"PK": "a"}, new_image={"PK": "a"})
    record["dynamodb"]["SequenceNumber"] = sequence_number
    response, seen = one_change(record)
    assert (
        response == {"batchItemFailures": [{"itemIdentifier": ""}]} and seen == []
    )  # the whole batch is retried
    [error] = of_level(read_lines(capfd), "ERROR")
    assert error["error"] == "record has no dynamodb.SequenceNumber" and error["source"] == "dynamodb"
    assert error["payload"] == record  # the record as it came, to look at


def test_the_error_line_of_a_malformed_image_shows_the_change_on_its_first_attempt(capfd):
    record = dynamodb_record("INSERT", keys={"PK": "a"}, new_image={"PK": "a"})
    record["dynamodb"]["NewImage"]["odd"] = {"ZZ": "1"}
    response, _ = one_change(record)
    sequence_number = record["dynamodb"]["SequenceNumber"]
    assert response == {"batchItemFailures": [{"itemIdentifier": sequence_number}]}
    [error] = of_level(read_lines(capfd), "ERROR")
    assert (error["record_id"], error["attempt"], error["trace_id"]) == (
        sequence_number,
        1,
        record["eventID"],
    )
    assert error["source"] == "dynamodb"
    assert error["payload"] == record["dynamodb"]  # what could not be decoded, to look at


def test_a_failing_record_is_on_its_first_attempt(capfd):
    @stream_handler
    def handler(change, context):
        raise ValueError("no")

    record = dynamodb_record("INSERT", keys={"PK": "a"}, new_image={"PK": "a"})
    assert handler({"Records": [record]}, lambda_context()) == {
        "batchItemFailures": [{"itemIdentifier": record["dynamodb"]["SequenceNumber"]}]
    }
    [error] = of_level(read_lines(capfd), "ERROR")
    assert error["attempt"] == 1 and error["message"] == "record failed"


def test_an_async_function_runs_records_that_have_no_item_key_each_in_a_lane_of_its_own(capfd):
    seen = []

    @stream_handler(max_concurrency=4)
    async def handler(change, context):
        seen.append(change["new_image"])

    good = dynamodb_record("INSERT", keys={"PK": "a"}, new_image={"PK": "a"})
    keyless = dynamodb_record("INSERT", keys={}, new_image={"n": 1})
    del keyless["dynamodb"]["Keys"]
    assert handler({"Records": [good, keyless]}, lambda_context()) == {"batchItemFailures": []}
    assert seen == [{"PK": "a"}, {"n": 1}]
    for unreadable, why in (
        ("junk", "record has no dynamodb object"),
        ({"eventSource": "aws:dynamodb", "dynamodb": "x"}, "record has no dynamodb object"),
    ):
        seen.clear()
        assert handler({"Records": [good, unreadable]}, lambda_context()) == {
            "batchItemFailures": [{"itemIdentifier": ""}]
        }
        assert seen == [{"PK": "a"}]
        [error] = of_level(read_lines(capfd), "ERROR")
        assert error["error"] == why and error["source"] == "dynamodb"
        assert error["payload"] == unreadable  # the record as it came, to look at


@dataclasses.dataclass
class Item:
    PK: str


@pytest.mark.parametrize("event_name", ["INSERT", "MODIFY"])
def test_with_a_model_a_change_without_its_new_image_fails_naming_the_stream_view_type(event_name, capfd):
    @stream_handler(model=Item)
    def handler(item, context):
        raise AssertionError("not reached")

    record = dynamodb_record(event_name, keys={"PK": "a"}, old_image={"PK": "a"})  # an OLD_IMAGE stream
    assert handler({"Records": [record]}, lambda_context()) == {
        "batchItemFailures": [{"itemIdentifier": record["dynamodb"]["SequenceNumber"]}]
    }
    [line] = of_level(read_lines(capfd), "ERROR")
    assert line["message"] == "record failed validation"
    assert line["invalid"] == [
        {
            "field": "NewImage",
            "problem": (
                "the record has no NewImage: the stream's view type must include it (NEW_AND_OLD_IMAGES)"
            ),
        }
    ]


def test_a_window_with_a_malformed_image_goes_back_with_the_state_before_it():
    @stream_handler(log_event=False, log_result=False)
    def handler(change, context):
        current_window().state["n"] = current_window().state.get("n", 0) + 1

    good = dynamodb_record("INSERT", keys={"PK": "a"}, new_image={"PK": "a"})
    bad = dynamodb_record("INSERT", keys={"PK": "b"}, new_image={"PK": "b"})
    bad["dynamodb"]["NewImage"]["odd"] = {"ZZ": "1"}
    event = tumbling_window({"Records": [good, bad]}, {})
    assert handler(event, None) == {
        "state": {"n": 1},
        "batchItemFailures": [{"itemIdentifier": bad["dynamodb"]["SequenceNumber"]}],
    }


def test_a_dynamodb_window_ends_with_on_window_end():
    ended = []

    @stream_handler(
        log_event=False, log_result=False, on_window_end=lambda window: ended.append(dict(window.state))
    )
    def handler(change, context):
        current_window().state["n"] = current_window().state.get("n", 0) + 1

    event = tumbling_window(
        {"Records": [dynamodb_record("INSERT", keys={"PK": "a"}, new_image={"PK": "a"})]},
        {"n": 1},
        final=True,
    )
    assert handler(event, None) == {"state": {"n": 2}, "batchItemFailures": []}
    assert ended == [{"n": 2}]


def test_a_malformed_traceparent_in_the_image_is_warned_about_as_dynamodb(capfd):
    record = dynamodb_record("INSERT", keys={"PK": "a"}, new_image={"PK": "a", "traceparent": "not-w3c"})
    response, [change] = one_change(record)
    assert response == {"batchItemFailures": []} and change["new_image"]["traceparent"] == "not-w3c"
    [warning] = of_level(read_lines(capfd), "WARN")
    assert (warning["source"], warning["rejected_trace_context"], warning["trace_id"]) == (
        "dynamodb",
        "'not-w3c'",
        record["eventID"],
    )


# --- numbers are exact -----------------------------------------------------------------------------
# DynamoDB keeps 38 significant digits; a float about 17. Integers are int; any other number is a
# float when the float gives the same number back, else a Decimal with all its digits.

NUMBERS = [
    ("42", 42),
    ("-7", -7),
    ("0", 0),
    ("12345678901234567890123456789012345678", 12345678901234567890123456789012345678),  # 38 digits, an int
    ("-99999999999999999999999999999999999999", -99999999999999999999999999999999999999),
    ("0.5", 0.5),
    ("-1.25", -1.25),
    ("0.1", 0.1),  # not exact in binary, yet the float reads back as 0.1: a float, as before
    ("100.0", 100.0),
    ("1E+2", 100.0),
    ("1E+130", 1e130),
    ("-1E-130", -1e-130),
    ("1234567890123456789012345.123456789", Decimal("1234567890123456789012345.123456789")),
    (
        "1.2345678901234567890123456789012345678",
        Decimal("1.2345678901234567890123456789012345678"),
    ),  # 38 digits
    ("-0.12345678901234567890123456789012345678", Decimal("-0.12345678901234567890123456789012345678")),
    ("9.9999999999999999999999999999999999999E+125", Decimal("9.9999999999999999999999999999999999999E+125")),
    ("1.0000000000000000000000000000000000001E-130", Decimal("1.0000000000000000000000000000000000001E-130")),
]


def image_number(text: str) -> object:
    record = dynamodb_record("INSERT", keys={"PK": "a"}, new_image={"PK": "a"})
    record["dynamodb"]["Keys"]["n"] = record["dynamodb"]["NewImage"]["n"] = {"N": text}
    record["dynamodb"]["NewImage"]["ns"] = {"NS": [text, "7"]}
    response, [change] = one_change(record)
    assert response == {"batchItemFailures": []}
    assert change["keys"]["n"] == change["new_image"]["n"] and type(change["keys"]["n"]) is type(
        change["new_image"]["n"]
    )
    assert change["new_image"]["ns"] == {change["new_image"]["n"], 7}  # a set of numbers: the same rule
    return change["new_image"]["n"]


@pytest.mark.parametrize(("text", "expected"), NUMBERS, ids=[text for text, _ in NUMBERS])
def test_a_number_reaches_the_function_with_every_digit(text, expected):
    number = image_number(text)
    assert type(number) is type(expected) and number == expected
    assert Decimal(repr(number) if type(number) is float else str(number)) == Decimal(text)  # nothing lost


def test_the_numbers_of_a_set_are_each_exact():
    record = dynamodb_record("INSERT", keys={"PK": "a"}, new_image={"PK": "a"})
    long = "1234567890123456789012345.123456789"
    record["dynamodb"]["NewImage"]["ns"] = {"NS": ["1", "0.5", long]}
    _, [change] = one_change(record)
    assert change["new_image"]["ns"] == {1, 0.5, Decimal(long)}
    assert sorted(type(n).__name__ for n in change["new_image"]["ns"]) == ["Decimal", "float", "int"]


def nested_list(depth: int) -> dict:
    value: dict = {"S": "x"}
    for _ in range(depth):
        value = {"L": [value]}
    return value


def test_an_image_nested_deeper_than_64_levels_fails_its_record_saying_so(capfd):
    # DynamoDB nests 32 levels at most: 64 is read, deeper is no item (and is never walked to its end)
    record = dynamodb_record("INSERT", keys={"PK": "a"}, new_image={"PK": "a"})
    record["dynamodb"]["NewImage"]["deep"] = nested_list(64)
    response, [change] = one_change(record)
    assert response == {"batchItemFailures": []}
    record["dynamodb"]["NewImage"]["deep"] = nested_list(65)
    response, seen = one_change(record)
    assert (
        response == {"batchItemFailures": [{"itemIdentifier": record["dynamodb"]["SequenceNumber"]}]}
        and seen == []
    )
    [error] = of_level(read_lines(capfd), "ERROR")
    assert error["error"] == "stream image is malformed (attributes are nested deeper than 64 levels)"


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "1e", "0x10", "", "one"])
def test_a_number_dynamodb_cannot_hold_fails_its_record_saying_so(text, capfd):
    record = dynamodb_record("INSERT", keys={"PK": "a"}, new_image={"PK": "a"})
    record["dynamodb"]["NewImage"]["n"] = {"N": text}
    response, seen = one_change(record)
    assert (
        response == {"batchItemFailures": [{"itemIdentifier": record["dynamodb"]["SequenceNumber"]}]}
        and seen == []
    )
    [error] = of_level(read_lines(capfd), "ERROR")
    assert error["error"].startswith(f"stream image is malformed ({text!r} is not a number")


def test_a_record_without_an_event_id_is_traced_by_its_sequence_number():
    seen = []

    @stream_handler
    def handler(change, context):
        seen.append(current_trace_id())

    record = dynamodb_record("INSERT", keys={"PK": "a"}, new_image={"PK": "a"})
    del record["eventID"]
    assert handler({"Records": [record]}, lambda_context()) == {"batchItemFailures": []}
    assert seen == [record["dynamodb"]["SequenceNumber"]]
