"""``get_logger``'s direct path: with lambda_kit's handler alone on the logger, a line is written
with no ``LogRecord``; the same line as the standard path's, and every ``logging`` knob still
honoured (handlers, filters, levels, ``propagate``, ``logging.disable``, a record factory, a logger
class of one's own), each of which sends the line down the standard path.

Each test makes its own logger (a logger made at import would hide ``get_logger`` from the tests).
"""

from __future__ import annotations

import enum
import itertools
import json
import logging
import math
import time
import traceback
from decimal import Decimal
from typing import Any

import pytest
from _hostile import CODECS, captured, using_codec

from lambda_kit import get_logger, log, sqs_handler
from lambda_kit.testing import lambda_context, sqs_event

_names = itertools.count()


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def logger() -> logging.LoggerAdapter:
    """A fresh logger (``get_logger``'s adapter over a fresh standard logger)."""
    return get_logger(f"short.{next(_names)}")


def without_pytest_handlers() -> None:
    """pytest attaches its capture handlers to every non-propagating logger at the start of each
    test phase, which would send every line down the standard path: taken off (it takes them off
    again, harmlessly, at the end of the phase)."""
    for logger in list(logging.Logger.manager.loggerDict.values()):
        if isinstance(logger, logging.Logger):
            for handler in [h for h in logger.handlers if type(h).__module__ == "_pytest.logging"]:
                logger.removeHandler(handler)


@pytest.fixture
def records_made(logger: logging.LoggerAdapter, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the ``LogRecord``s ``logger`` makes (the standard path makes one per line)."""
    made: list[str] = []
    standard = logger.logger.makeRecord

    def counting(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = standard(*args, **kwargs)
        made.append(record.name)
        return record

    monkeypatch.setattr(logger.logger, "makeRecord", counting)
    return made


def lines_in_handler(write: Any) -> list[dict[str, Any]]:
    """The lines ``write()`` logs inside an SQS handler (trace id ``t-short``), the decorator's own
    left out, timestamps dropped (they differ between two runs)."""
    without_pytest_handlers()
    with captured() as out:
        sqs_handler(log_event=False, log_result=False)(lambda payload, context: write())(
            sqs_event({"n": 1}, trace_id="t-short"), lambda_context("short-fn")
        )
    lines = [json.loads(text) for text in out]
    for line in lines:
        assert line.pop("timestamp").endswith("Z")
        assert line.pop("request_id")  # each invocation's own
        assert line.pop("record_id")  # each event's own
    return lines


class Odd:
    def __str__(self) -> str:
        raise RuntimeError("no text")


def calls(logger: logging.Logger) -> None:
    """Lines of every shape the short path writes itself."""
    logger.info("plain")
    logger.warning("views %s of %d", "a", 3)
    logger.info("%(url)s seen", {"url": "/a"})
    logger.info("bad %d", "not a number")  # a message that cannot be formatted keeps its msg
    logger.error(Odd())
    logger.info(
        "fields",
        extra={
            "url": "/a",
            "password": "hunter2",
            "level": "mine",
            "logger": "mine",
            "trace_id": "mine",
            "views": 3,
            "nested": {"token": "t", "n": [1, 2]},
        },
    )
    logger.debug("below the level")
    logger.log(25, "a level of its own")
    try:
        raise ValueError("boom")
    except ValueError as exc:
        logger.exception("failed")
        logger.error("failed again", exc_info=exc)
        logger.error("and again", exc_info=(type(exc), exc, exc.__traceback__))
    logger.error("no exception", exc_info=True)


def test_the_short_path_makes_no_log_record_and_writes_the_standard_lines(logger, records_made):
    short = lines_in_handler(lambda: calls(logger))
    assert records_made == []  # no LogRecord: the short path wrote them
    logger.addFilter(lambda record: True)  # any filter: the standard path, which makes records
    standard = lines_in_handler(lambda: calls(logger))
    assert len(records_made) == 11  # the debug line is dropped before either path
    assert short == standard
    assert [line["message"] for line in short] == [
        "plain",
        "views a of 3",
        "/a seen",
        "bad %d",
        "<unprintable Odd>",
        "fields",
        "a level of its own",
        "failed",
        "failed again",
        "and again",
        "no exception",
    ]
    fields = short[5]
    assert (fields["level"], fields["trace_id"], fields["logger"], fields["function_name"]) == (
        "INFO",
        "t-short",
        logger.name,
        "short-fn",
    )
    assert (fields["password"], fields["extra_level"], fields["extra_logger"], fields["extra_trace_id"]) == (
        "***",
        "mine",
        "mine",
        "mine",
    )
    assert fields["nested"] == {"token": "***", "n": [1, 2]}
    assert short[6]["level"] == "Level 25"
    for line in short[7:10]:
        assert (line["error_type"], line["error"]) == ("ValueError", "boom")
        assert "Traceback" in line["traceback"]
    assert "error_type" not in short[10]


def test_a_handler_added_gets_standard_records_with_the_callers_location(logger, records_made):
    collect = Collect()
    logger.addHandler(collect)
    lines = lines_in_handler(lambda: logger.info("counting", extra={"url": "/a"}))
    assert [line["url"] for line in lines] == ["/a"]  # lambda_kit's line, written once
    (record,) = collect.records
    assert (record.getMessage(), record.url, record.funcName) == ("counting", "/a", "<lambda>")
    assert record.pathname == __file__
    logger.removeHandler(collect)
    lines_in_handler(lambda: logger.info("alone again"))
    assert len(collect.records) == 1 and len(records_made) == 1  # back on the short path


def test_every_level_method_names_the_callers_location(logger):
    collect = Collect()
    logger.addHandler(collect)
    logger.setLevel(logging.DEBUG)

    def caller() -> None:
        logger.debug("d")
        logger.info("i")
        logger.warning("w")
        logger.error("e")
        logger.critical("c")
        logger.log(25, "l")
        try:
            raise ValueError("x")
        except ValueError:
            logger.exception("x")

    assert len(lines_in_handler(caller)) == 7
    assert [(record.getMessage(), record.funcName) for record in collect.records] == [
        (message, "caller") for message in ("d", "i", "w", "e", "c", "l", "x")
    ]


def test_filters_on_the_logger_or_its_handler_are_honoured(logger):
    def where(record: logging.LogRecord) -> bool:
        record.where = f"{record.funcName}:{record.lineno}"
        return record.getMessage() != "dropped"

    logger.addFilter(where)
    lines = lines_in_handler(lambda: (logger.info("kept"), logger.info("dropped")))
    assert [line["message"] for line in lines] == ["kept"]
    assert lines[0]["where"].startswith("<lambda>:")
    logger.removeFilter(where)
    (handler,) = logger.handlers
    handler.addFilter(lambda record: record.levelno >= logging.WARNING)
    lines = lines_in_handler(lambda: (logger.info("info"), logger.warning("warning")))
    assert [line["message"] for line in lines] == ["warning"]


def test_levels_disable_and_disabled_are_honoured(logger):
    logger.setLevel(logging.WARNING)
    assert [line["message"] for line in lines_in_handler(lambda: (logger.info("i"), logger.error("e")))] == [
        "e"
    ]
    logger.setLevel(logging.DEBUG)
    (handler,) = logger.handlers
    handler.setLevel(logging.ERROR)  # the handler's level, not only the logger's
    assert [
        line["message"] for line in lines_in_handler(lambda: (logger.warning("w"), logger.error("e")))
    ] == ["e"]
    handler.setLevel(logging.NOTSET)
    logging.disable(logging.WARNING)
    try:
        assert [
            line["message"] for line in lines_in_handler(lambda: (logger.warning("w"), logger.error("e")))
        ] == ["e"]
    finally:
        logging.disable(logging.NOTSET)
    logger.disabled = True
    assert lines_in_handler(lambda: logger.error("e")) == []


def test_propagate_sends_the_record_up_too(logger):
    collect = Collect()
    logging.getLogger("short").addHandler(collect)
    try:
        logger.propagate = True
        lines = lines_in_handler(lambda: logger.info("up"))
    finally:
        logging.getLogger("short").removeHandler(collect)
    assert [line["message"] for line in lines] == ["up"]
    assert [record.getMessage() for record in collect.records] == ["up"]


def test_stack_info_a_record_factory_and_reserved_extras_take_the_standard_path(logger, records_made):
    lines = lines_in_handler(lambda: logger.info("with stack", stack_info=True))
    assert [line["message"] for line in lines] == ["with stack"] and len(records_made) == 1

    standard = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = standard(*args, **kwargs)
        record.region = "eu-west-1"
        return record

    logging.setLogRecordFactory(factory)
    try:
        (line,) = lines_in_handler(lambda: logger.info("from the factory"))
    finally:
        logging.setLogRecordFactory(standard)
    assert line["region"] == "eu-west-1"
    with pytest.raises(KeyError, match="Attempt to overwrite 'msg' in LogRecord"):
        logger.info("reserved", extra={"msg": "x"})  # as logging refuses it


def test_a_logger_of_another_class_keeps_its_class_and_writes_the_same_lines():
    class Mine(logging.Logger):
        pass

    name = f"short.mine.{next(_names)}"
    logging.Logger.manager.setLoggerClass(Mine)
    try:
        logging.getLogger(name)
    finally:
        logging.Logger.manager.setLoggerClass(logging.Logger)
    mine = get_logger(name)
    assert type(mine.logger) is Mine and mine.logger is logging.getLogger(name)
    (line,) = lines_in_handler(lambda: mine.info("mine", extra={"k": 1}))
    assert (line["message"], line["k"], line["logger"], line["trace_id"]) == ("mine", 1, name, "t-short")


# --- every shape of value, key and exception the short path writes itself, line for line -------


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text")


class Key:
    """A dict key the codec has no text for: it is written as its ``str()``."""

    def __str__(self) -> str:
        return "api_token"  # a secret's name: its value is masked


class Field(enum.Enum):
    MESSAGE = "message"  # an Enum key is written as its value: a line's own key, so renamed


LONG = "m" * 9_000  # over MAX_VALUE_CHARS
EDGE = "e" * log.MAX_VALUE_CHARS  # exactly at it: not cut
LONG_CUT = "m" * 8_152 + "...[truncated 848 chars]"
LONG_KEY = "k" * 9_000  # a key is cut as a value is
LONG_KEY_CUT = "k" * 8_152 + "...[truncated 848 chars]"


def shapes(logger: logging.Logger) -> Exception:
    """A line of each shape; returns the exception the error lines carry."""
    logger.info(LONG)
    logger.info(EDGE)
    logger.info("strings", extra={"edge": EDGE, "long": LONG, "short": "s"})
    logger.info(
        "ints",
        extra={
            "small": 3,
            "top": 2**64 - 1,
            "bottom": -(2**63),
            "above": 2**64,
            "below": -(2**63) - 1,
            "huge": 10**400,
            "yes": True,
            "no": False,
            "none": None,
        },
    )
    logger.info("floats", extra={"half": 1.5, "tiny": 1e-7, "nan": math.nan, "inf": -math.inf})
    logger.info(
        "containers",
        extra={
            "dict": {"token": "t", "n": [1, 2]},
            "list": [1, "a", None],
            "tuple": (1, 2),
            "set": {3, 1, 2},
            "decimal": Decimal("0.10"),
        },
    )
    logger.info(
        "secrets", extra={"password": "p", "X-Api-Key": "k", "client_secret": None, "plain": "visible"}
    )
    logger.info("secrets again", extra={"password": "p", "plain": "visible"})  # now answered by the cache
    logger.info(
        "keys",
        extra={
            1: "int",
            2.5: "float",
            None: "none",
            False: "bool",
            (1, 2): "tuple",
            Key(): "by its text",
            Field.MESSAGE: "by its value",
            LONG_KEY: "long key",
        },
    )
    logger.info(
        "renamed",
        extra={"logger": 2, "level": 3, "timestamp": 4, "function_name": 5, "request_id": 6, "trace_id": 7},
    )
    logger.info("%s and %d", "a", 3)
    logger.info("%(url)s", {"url": "/a"})
    logger.info("%s", {})  # an empty mapping is an argument like any other
    logger.info(LONG + "%s", "!")
    try:
        raise ValueError("boom")
    except ValueError as exc:
        caught = exc
        logger.error("exc_info=True", exc_info=True)
    logger.error("an exception, after its except block", exc_info=caught)
    logger.error("a 3-tuple", exc_info=(ValueError, caught, caught.__traceback__))
    logger.error("a 2-tuple", exc_info=(ValueError, caught))
    logger.error("no exception", exc_info=(None, None, None))
    logger.error("unprintable", exc_info=Unprintable())
    return caught


def ordered(lines: list[dict[str, Any]]) -> list[list[tuple[str, Any]]]:
    """The lines with their keys' order (a dict compares without it)."""
    return [list(line.items()) for line in lines]


@pytest.mark.parametrize("codec_name", CODECS)
def test_every_shape_of_line_takes_the_short_path_and_writes_the_standard_line(
    codec_name, logger, records_made
):
    caught: list[Exception] = []
    with using_codec(codec_name):
        short = lines_in_handler(lambda: caught.append(shapes(logger)))
        assert records_made == []  # no line fell back to the standard path (which writes the same line)
        logger.addFilter(lambda record: True)
        standard = lines_in_handler(lambda: shapes(logger))
    assert len(records_made) == len(short) == 20
    assert ordered(short) == ordered(standard)

    base = {"level": "INFO", "function_name": "short-fn", "trace_id": "t-short", "logger": logger.name}
    by_message = {line["message"]: line for line in short}
    assert short[0] == {**base, "message": LONG_CUT}
    assert short[1] == {**base, "message": EDGE}
    assert by_message["strings"] == {
        **base,
        "message": "strings",
        "edge": EDGE,
        "long": LONG_CUT,
        "short": "s",
    }
    assert by_message["ints"] == {
        **base,
        "message": "ints",
        "small": 3,
        "top": 2**64 - 1,
        "bottom": -(2**63),
        "above": 2**64,
        "below": -(2**63) - 1,
        "huge": 10**400,
        "yes": True,
        "no": False,
        "none": None,
    }
    assert by_message["floats"] == {
        **base,
        "message": "floats",
        "half": 1.5,
        "tiny": 1e-7,
        "nan": None,
        "inf": None,
    }
    assert by_message["containers"] == {
        **base,
        "message": "containers",
        "dict": {"token": "***", "n": [1, 2]},
        "list": [1, "a", None],
        "tuple": [1, 2],
        "set": [1, 2, 3],
        "decimal": 0.1,
    }
    for message in ("secrets", "secrets again"):
        assert {key: value for key, value in by_message[message].items() if key not in base} == {
            "message": message,
            "password": "***",
            "plain": "visible",
            **({"X-Api-Key": "***", "client_secret": None} if message == "secrets" else {}),
        }  # None hides nothing
    assert ordered([by_message["keys"]]) == ordered(
        [
            {
                "level": "INFO",
                "message": "keys",
                "function_name": "short-fn",
                "trace_id": "t-short",
                "logger": logger.name,
                "1": "int",
                "2.5": "float",
                "null": "none",
                "false": "bool",
                "(1, 2)": "tuple",
                "api_token": "***",
                "extra_message": "by its value",
                LONG_KEY_CUT: "long key",
            }
        ]
    )
    assert by_message["renamed"] == {
        **base,
        "message": "renamed",
        "extra_logger": 2,
        "extra_level": 3,
        "extra_timestamp": 4,
        "extra_function_name": 5,
        "extra_request_id": 6,
        "extra_trace_id": 7,
    }
    assert [line["message"] for line in short[10:14]] == [
        "a and 3",
        "/a",
        "{}",
        LONG_CUT.replace("848", "849"),
    ]

    (exc,) = caught
    errors = short[14:]
    assert [line["level"] for line in errors] == ["ERROR"] * 6
    failure = {
        "error_type": "ValueError",
        "error": "boom",
        "traceback": "".join(traceback.format_exception(exc)),
    }
    assert "raise ValueError" in failure["traceback"]
    for line in errors[:4]:
        assert {key: line[key] for key in failure} == failure, line["message"]
    assert "error_type" not in errors[4]
    assert {key: errors[5][key] for key in failure} == {
        "error_type": "Unprintable",
        "error": "<unprintable Unprintable>",
        "traceback": "".join(traceback.format_exception(Unprintable())),
    }


def extra_values(logger: logging.Logger) -> None:
    """Lines of the same extra keys, each with a value of another kind, and the keys in another order."""
    logger.info("teach", extra={"k": "v", "n": 1})
    logger.info("as they are", extra={"k": "v", "n": 2**64 - 1})
    logger.info("in another order", extra={"n": -(2**63), "k": None})
    logger.info("a bool", extra={"k": True, "n": False})
    logger.info("long", extra={"k": LONG, "n": 1})
    logger.info("at the limit", extra={"k": EDGE, "n": 1})
    logger.info("a long line of short values", extra={"k": "x" * 5_000, "n": "y" * 5_000})
    logger.info("above 64 bits", extra={"k": "v", "n": 2**64})
    logger.info("below 64 bits", extra={"k": "v", "n": -(2**63) - 1})
    logger.info("huge", extra={"k": "v", "n": 10**400})
    logger.info("a float", extra={"k": "v", "n": 1e-7})
    logger.info("a nested secret", extra={"k": {"password": "p"}, "n": 1})
    logger.info("a subclass", extra={"k": "v", "n": Flag.ON})
    logger.info("line breaks", extra={"k": "caf\u00e9\u2028", "n": 1})
    logger.info("a lone surrogate", extra={"k": "\ud800", "n": 1})
    try:
        raise ValueError("boom")
    except ValueError:
        logger.error("with exc_info", exc_info=True, extra={"k": "v", "n": 1})


class Flag(enum.IntEnum):
    ON = 1


@pytest.mark.parametrize("codec_name", CODECS)
def test_extra_values_of_every_kind_are_written_alike_on_both_paths(codec_name, logger, records_made):
    with using_codec(codec_name):
        short = lines_in_handler(lambda: extra_values(logger))
        assert records_made == []
        logger.addFilter(lambda record: True)
        standard = lines_in_handler(lambda: extra_values(logger))
    assert len(records_made) == len(short) == 16
    assert ordered(short) == ordered(standard)
    values = {line["message"]: (line["k"], line["n"]) for line in short}
    assert values["as they are"] == ("v", 2**64 - 1)
    assert list(short[2])[-2:] == ["n", "k"]
    assert values["a bool"] == (True, False)
    assert values["long"] == (LONG_CUT, 1)
    assert values["at the limit"] == (EDGE, 1)
    assert values["a long line of short values"] == ("x" * 5_000, "y" * 5_000)
    assert values["above 64 bits"] == ("v", 2**64)
    assert values["below 64 bits"] == ("v", -(2**63) - 1)
    assert values["huge"] == ("v", 10**400)
    assert values["a float"] == ("v", 1e-7)
    assert values["a nested secret"] == ({"password": "***"}, 1)
    assert values["a subclass"] == ("v", 1)
    assert values["line breaks"] == ("caf\u00e9\u2028", 1)
    assert short[-1]["error_type"] == "ValueError"


def test_secret_and_renamed_extra_keys_stay_so_on_every_line(logger, records_made):
    lines = lines_in_handler(
        lambda: [
            logger.info(str(n), extra=extra)
            for n, extra in enumerate(
                (
                    {"password": "p", "logger": "mine", "trace_id": "mine"},
                    {"password": "p", "logger": "mine", "trace_id": "mine"},
                )
            )
        ]
    )
    assert records_made == []
    for line in lines:
        assert (line["password"], line["extra_logger"], line["extra_trace_id"], line["trace_id"]) == (
            "***",
            "mine",
            "mine",
            "t-short",
        )


@pytest.mark.parametrize("codec_name", CODECS)
def test_a_unicode_line_break_in_an_extra_is_escaped(codec_name, logger, records_made):
    without_pytest_handlers()
    with using_codec(codec_name), captured() as out:
        logger.info("teach", extra={"k": "v"})
        logger.info("breaks", extra={"k": "caf\u00e9\u2028"})
    assert records_made == []
    assert "\u2028" not in out[1] and "caf\u00e9\\u2028" in out[1]


class Reserved(enum.Enum):
    MSG = "msg"


def test_a_non_str_key_whose_text_is_a_logrecord_attribute_never_lets_that_str_key_through(
    logger, records_made
):
    (line,) = lines_in_handler(lambda: logger.info("by its value", extra={Reserved.MSG: "x"}))
    assert line["msg"] == "x"
    with pytest.raises(KeyError, match="Attempt to overwrite 'msg' in LogRecord"):
        logger.info("reserved", extra={"msg": "x"})  # as logging refuses it


def test_a_trace_id_extra_seen_outside_a_record_is_renamed_inside_one(logger, records_made):
    without_pytest_handlers()
    with captured():
        logger.info("outside", extra={"trace_id": "mine"})
    (line,) = lines_in_handler(lambda: logger.info("inside", extra={"trace_id": "mine"}))
    assert records_made == []
    assert (line["trace_id"], line["extra_trace_id"]) == ("t-short", "mine")


def lines_outside(write: Any) -> list[dict[str, Any]]:
    """The lines ``write()`` logs with no record in scope."""
    without_pytest_handlers()
    with captured() as out:
        write()
    return [json.loads(text) for text in out]


def test_outside_a_record_a_trace_id_extra_keeps_its_name_and_a_short_exc_info_tuple_costs_nothing(
    logger, records_made
):
    lines = lines_outside(
        lambda: (
            logger.info("mine", extra={"trace_id": "t-mine"}),
            logger.error("a 1-tuple", exc_info=(ValueError,)),
        )
    )
    assert records_made == []
    for line in lines:
        assert line.pop("timestamp").endswith("Z")
    assert lines == [
        {
            "level": "INFO",
            "message": "mine",
            "function_name": None,
            "request_id": None,
            "logger": logger.name,
            "trace_id": "t-mine",
        },
        # names no exception (logging's own handlers cannot format it): the line, without error fields
        {
            "level": "ERROR",
            "message": "a 1-tuple",
            "function_name": None,
            "request_id": None,
            "logger": logger.name,
        },
    ]


TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_a_records_tracer_keys_go_on_the_short_paths_lines_and_only_that_records(
    logger, records_made, monkeypatch
):
    event = sqs_event({"n": 1}, {"n": 2}, trace_id=["t-traced", "t-plain"])
    event["Records"][0]["messageAttributes"]["traceparent"] = {
        "stringValue": TRACEPARENT,
        "dataType": "String",
    }

    def run() -> list[dict[str, Any]]:
        without_pytest_handlers()
        with captured() as out:
            sqs_handler(log_event=False, log_result=False)(
                lambda payload, context: logger.info("n", extra={"n": payload["n"]})
            )(event, lambda_context("keys-fn"))
        return [json.loads(text) for text in out]

    short = run()
    assert records_made == []
    for line in short:
        assert line.pop("timestamp").endswith("Z")
        line.pop("request_id")
    logger.addFilter(lambda record: True)
    standard = run()
    assert len(records_made) == 2
    for line in standard:
        assert line.pop("timestamp").endswith("Z")
        line.pop("request_id")
    assert ordered(short) == ordered(standard)
    keys = {
        "otelTraceID": "0af7651916cd43dd8448eb211c80319c",
        "otelSpanID": "b7ad6b7169203331",
        "dd.trace_id": str(0x8448EB211C80319C),
        "dd.span_id": str(0xB7AD6B7169203331),
        "xray_trace_id": "1-0af76519-16cd43dd8448eb211c80319c",
    }
    first, second = (raw["messageId"] for raw in event["Records"])
    assert ordered(short) == ordered(
        [
            {
                "level": "INFO",
                "message": "n",
                "function_name": "keys-fn",
                "trace_id": "t-traced",
                **keys,
                "record_id": first,
                "logger": logger.name,
                "n": 1,
            },
            {
                "level": "INFO",
                "message": "n",
                "function_name": "keys-fn",
                "trace_id": "t-plain",
                "record_id": second,
                "logger": logger.name,
                "n": 2,
            },
        ]
    )


class Clock:
    """``lambda_kit.log.line``'s ``time`` module with the clock set by the test."""

    def __init__(self) -> None:
        self.now = 0.0
        self.strftime = time.strftime
        self.gmtime = time.gmtime

    def time(self) -> float:
        return self.now


def test_timestamps_are_the_clocks_utc_time_to_the_millisecond(logger, records_made, monkeypatch):
    clock = Clock()
    monkeypatch.setattr(log.line, "time", clock)
    stamps = []

    def write(now: float) -> None:
        clock.now = now
        with captured() as out:
            logger.info("now")
            log.emit("INFO", "emitted")
        stamps.extend(json.loads(text)["timestamp"] for text in out)

    without_pytest_handlers()
    second = 1_700_000_000  # 2023-11-14T22:13:20Z
    for now in (second, second + 0.5555, second + 0.9996, second + 1.25, second + 1.001):
        write(now)
    assert records_made == []
    assert stamps == [
        stamp
        for stamp in (
            "2023-11-14T22:13:20.000Z",
            "2023-11-14T22:13:20.555Z",
            "2023-11-14T22:13:20.999Z",
            "2023-11-14T22:13:21.250Z",
            "2023-11-14T22:13:21.001Z",
        )
        for _ in range(2)
    ]  # 1.001 s on: the millisecond it rounds to
    clock.now = second + 2.5555  # the loop's record lines, in a second a line before them started
    with captured() as out:
        logger.info("first in its second")
        sqs_handler(lambda payload, context: None)(sqs_event({"n": 1}), lambda_context())
    assert [json.loads(text)["timestamp"] for text in out] == ["2023-11-14T22:13:22.555Z"] * 3


# --- found by mutation testing (make mutate MODULE=lambda_kit/log/): what no test above watched --


def compact(line: dict[str, Any]) -> str:
    return json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n"


@pytest.mark.parametrize("codec_name", CODECS)
def test_a_direct_line_reaches_standard_output_whole_with_no_log_record(
    codec_name, logger, records_made, capfd, monkeypatch
):
    """The direct path writes to ``sys.stdout`` (no sink set), one whole line per call."""
    clock = Clock()
    clock.now = 1_700_000_000.25  # 2023-11-14T22:13:20.250Z
    monkeypatch.setattr(log.line, "time", clock)
    saved = log.set_sink(None)
    keys = {"k": f"known_{codec_name}_k", "b": f"known_{codec_name}_b", "z": f"known_{codec_name}_z"}
    without_pytest_handlers()
    capfd.readouterr()
    try:
        with using_codec(codec_name):
            logger.info("teach", extra={keys["k"]: "v", keys["b"]: True, keys["z"]: None})
            logger.warning("known", extra={keys["z"]: None, keys["k"]: "w", keys["b"]: False})
    finally:
        log.set_sink(saved)
    assert records_made == []

    def expected(level: str, message: str, extra: dict[str, Any]) -> str:
        return compact(
            {
                "timestamp": "2023-11-14T22:13:20.250Z",
                "level": level,
                "message": message,
                "function_name": log.current_function_name(),
                "request_id": None,
                "logger": logger.name,
                **extra,
            }
        )

    assert capfd.readouterr().out == (
        expected("INFO", "teach", {keys["k"]: "v", keys["b"]: True, keys["z"]: None})
        + expected("WARN", "known", {keys["z"]: None, keys["k"]: "w", keys["b"]: False})
    )


def test_a_secret_extra_key_alone_is_masked_on_every_line(logger, records_made):
    """A line whose only ``extra`` key is a secret's: masked on every line, not only the first."""
    lines = lines_in_handler(
        lambda: [logger.info(str(n), extra={"lone_api_token": "s3cr3t"}) for n in range(3)]
    )
    assert records_made == []
    assert [(line["message"], line["lone_api_token"]) for line in lines] == [
        ("0", "***"),
        ("1", "***"),
        ("2", "***"),
    ]


@pytest.mark.parametrize("reserved", ["msg", "args", "levelname", "message", "asctime", "exc_info"])
def test_an_extra_naming_a_logrecord_attribute_is_refused_as_logging_refuses_it(logger, reserved):
    """The direct path leaves such a line to ``logging``, which raises: never a line with the key."""
    without_pytest_handlers()
    with captured() as out, pytest.raises(KeyError, match=f"Attempt to overwrite '{reserved}' in LogRecord"):
        logger.info("refused", extra={"a": 1, reserved: 2})
    assert out == []


class Percent:
    def __str__(self) -> str:
        return "100%% done"


class Shouting(str):
    """A ``str`` subclass: what a ``__str__`` may return."""


class Loud:
    def __str__(self) -> str:
        return Shouting("LOUD")


def messages(logger: logging.Logger) -> None:
    logger.info("100%% done")  # no arguments: never formatted, as logging does
    logger.info(Percent())
    logger.info(7, "x")  # a message that cannot be formatted: its text
    logger.info({"n": 1}, "x")
    logger.info(None, "x")
    logger.info(Loud())
    logger.info("loud", extra={"value": Loud()})


def test_messages_that_are_not_text_or_not_formatted_read_as_logging_writes_them(logger, records_made):
    short = lines_in_handler(lambda: messages(logger))
    assert records_made == []
    logger.addFilter(lambda record: True)  # the standard path: the same lines
    standard = lines_in_handler(lambda: messages(logger))
    assert len(records_made) == 7
    assert short == standard
    assert [line["message"] for line in short] == [
        "100%% done",
        "100%% done",
        "7",
        "{'n': 1}",
        "None",
        "LOUD",
        "loud",
    ]
    assert short[-1]["value"] == "LOUD"
    for line in short:
        assert type(line["message"]) is str
