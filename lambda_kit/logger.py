"""The ``logging.Logger`` face of lambda_kit's JSON lines: what ``get_logger`` returns.

Imported on the first ``get_logger()`` call (``logging`` with it), never by a decorator. A logger's
lines take a short path when lambda_kit's handler is the only thing that would see them; anything
a user sets on it (a handler, a filter, ``propagate``, a record factory) sends them down the
standard ``logging`` path, which writes the same line.
"""

from __future__ import annotations

import logging
from typing import Any

from . import log
from .trace import current_record

_STANDARD_ATTRS = frozenset(
    vars(logging.LogRecord("", 0, "", 0, "", None, None)).keys() | {"message", "asctime", "taskName"}
)
_RECORD_FACTORY = logging.getLogRecordFactory()


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
    writes the same line."""

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
        handlers = self.handlers
        if (
            len(handlers) == 1
            and type(handler := handlers[0]) is JsonLogHandler
            and level >= handler.level
            and not (self.filters or handler.filters or self.propagate or stack_info)
            and (not extra or _STANDARD_ATTRS.isdisjoint(extra))
            and logging.getLogRecordFactory() is _RECORD_FACTORY
        ):
            try:
                log.write_logger_line(self.name, logging.getLevelName(level), msg, args, exc_info, extra)
                return
            except Exception:  # the standard path writes the line, or reports why it cannot
                pass
        super()._log(level, msg, args, exc_info, extra, stack_info, stacklevel + 1)

    # The level methods, with their keywords spelled out (no ``**kwargs`` to pack and unpack); each
    # is one frame more for the standard path's ``findCaller`` to skip.

    def debug(self, msg: Any, *args: Any, exc_info: Any = None, extra: Any = None, stack_info: bool = False,
              stacklevel: int = 1) -> None:
        if self.isEnabledFor(10):
            self._log(10, msg, args, exc_info, extra, stack_info, stacklevel + 1)

    def info(self, msg: Any, *args: Any, exc_info: Any = None, extra: Any = None, stack_info: bool = False,
             stacklevel: int = 1) -> None:
        if self.isEnabledFor(20):
            self._log(20, msg, args, exc_info, extra, stack_info, stacklevel + 1)

    def warning(self, msg: Any, *args: Any, exc_info: Any = None, extra: Any = None, stack_info: bool = False,
                stacklevel: int = 1) -> None:
        if self.isEnabledFor(30):
            self._log(30, msg, args, exc_info, extra, stack_info, stacklevel + 1)

    def error(self, msg: Any, *args: Any, exc_info: Any = None, extra: Any = None, stack_info: bool = False,
              stacklevel: int = 1) -> None:
        if self.isEnabledFor(40):
            self._log(40, msg, args, exc_info, extra, stack_info, stacklevel + 1)


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
