"""The ``logging.Logger`` face of lambda_kit's JSON lines: what ``get_logger`` returns.

Imported on the first ``get_logger()`` call (``logging`` with it), never by a decorator. A logger's
lines take a short path when lambda_kit's handler is the only thing that would see them; anything
a user sets on it (a handler, a filter, ``propagate``, a record factory) sends them down the
standard ``logging`` path, which writes the same line.
"""

from __future__ import annotations

import logging
from typing import Any

from .. import log
from ..trace import current_record

_STANDARD_ATTRS = frozenset(
    vars(logging.LogRecord("", 0, "", 0, "", None, None)).keys() | {"message", "asctime", "taskName"}
)
log.refuse_extra_keys(_STANDARD_ATTRS)
_RECORD_FACTORY = logging.getLogRecordFactory()
_record_factory = logging.getLogRecordFactory


class JsonLogHandler(logging.Handler):
    """Formats ``logging`` records as lambda_kit JSON lines (trace id included).

    On a logger a Powertools ``Logger`` configured too (the same name as its service), it leaves
    the line to Powertools' handler: one line per call, never two."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        super().__init__()
        self.logger = logger

    def emit(self, record: logging.LogRecord) -> None:
        logger = self.logger
        if logger is not None and getattr(logger, "powertools_handler", None) in logger.handlers:
            return
        try:
            current = current_record()
            fields = log.logger_fields(
                record.name, [(k, v) for k, v in record.__dict__.items() if k not in _STANDARD_ATTRS], current
            )
            if record.exc_info and record.exc_info[1] is not None:
                fields.update(log.error_fields(record.exc_info[1]))
            log.emit(
                record.levelname,
                log.message_text(record.msg, record.args),
                current.trace_id if current is not None else None,
                fields,
                now=record.created,
            )
        except Exception:
            self.handleError(record)


class JsonLogger(logging.Logger):
    """The ``logging.Logger`` ``get_logger`` returns: a standard logger whose lines take a short
    path when lambda_kit's handler is the only thing that would see them (its one handler, no
    filters, not propagating, the standard ``LogRecord`` factory, no ``stack_info``): the line is
    written directly, with no ``LogRecord`` and no ``findCaller`` walking the stack. Anything else
    (a handler or filter added, ``propagate`` set ...) takes the standard ``logging`` path, which
    writes the same line.

    The level methods (``debug`` ... ``error``, made by ``_level_method``) take the short path
    themselves: a user's line is one call into ``log.write_logger_line``. ``log()``, ``exception()``
    and ``critical()`` reach it through ``_log``."""

    def _log(  # type: ignore[override]
        self,
        level: int,
        msg: Any,
        args: Any,
        exc_info: Any = None,
        extra: Any = None,
        stack_info: bool = False,
        stacklevel: int = 1,
    ) -> None:
        if short_path(self, level, stack_info):
            try:
                if log.write_logger_line(self.name, logging.getLevelName(level), msg, args, exc_info, extra):
                    return
            except Exception:  # the standard path writes the line, or reports why it cannot
                pass
        super()._log(level, msg, args, exc_info, extra, stack_info, stacklevel + 1)


def short_path(logger: logging.Logger, level: int, stack_info: bool) -> bool:
    """Whether a line of ``logger`` at ``level`` can skip ``logging``'s machinery: lambda_kit's
    handler is the only thing that would see it (an ``extra`` naming a ``LogRecord`` attribute is
    left to the standard path by ``log.write_logger_line``)."""
    handlers = logger.handlers
    return (
        len(handlers) == 1
        and type(handler := handlers[0]) is JsonLogHandler
        and level >= handler.level
        and not (logger.filters or handler.filters or logger.propagate or stack_info)
        and _record_factory() is _RECORD_FACTORY
    )


def _level_method(level: int, name: str) -> Any:
    """``JsonLogger``'s method for ``level``: the short path (this is the hot path of a user's
    line), else ``logging``'s own ``_log``. Its keywords are spelled out (no
    ``**kwargs`` to pack and unpack); on the standard path it is the one frame ``findCaller`` skips."""

    def method(self: JsonLogger, msg: Any, *args: Any, exc_info: Any = None, extra: Any = None,
               stack_info: bool = False, stacklevel: int = 1) -> None:
        if not self.isEnabledFor(level):
            return
        if short_path(self, level, stack_info):
            try:
                if log.write_logger_line(self.name, name, msg, args, exc_info, extra):
                    return
            except Exception:  # the standard path writes the line, or reports why it cannot
                pass
        self._log(level, msg, args, exc_info, extra, stack_info, stacklevel + 1)  # JsonLogger._log: logging's own path

    method.__name__ = method.__qualname__ = name.lower()
    return method


JsonLogger.debug = _level_method(logging.DEBUG, "DEBUG")  # type: ignore[method-assign]
JsonLogger.info = _level_method(logging.INFO, "INFO")  # type: ignore[method-assign]
JsonLogger.warning = _level_method(logging.WARNING, "WARNING")  # type: ignore[method-assign]
JsonLogger.error = _level_method(logging.ERROR, "ERROR")  # type: ignore[method-assign]


def json_logger(name: str | None = None) -> logging.Logger:
    """``log.get_logger``: the standard logger ``name`` with lambda_kit's handler on it. A logger of
    the standard class becomes a ``JsonLogger`` (the same logger, with the short path); one of
    another class (``logging.setLoggerClass``) keeps it and takes the standard path."""
    logger = logging.getLogger(name)
    if type(logger) is logging.Logger:
        logger.__class__ = JsonLogger
    if not any(isinstance(h, JsonLogHandler) for h in logger.handlers):
        logger.addHandler(JsonLogHandler(logger))
        logger.propagate = False
        if logger.level == logging.NOTSET:
            logger.setLevel(log.threshold())
        log.loggers.append(logger)
    return logger
