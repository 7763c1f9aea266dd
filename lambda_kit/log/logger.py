"""``get_logger``: the ``logging`` face of lambda_kit's JSON lines.

``get_logger(name)`` puts lambda_kit's handler (``JsonLogHandler``) on the standard logger
``logging.getLogger(name)`` and returns a ``JsonLogger``: a ``logging.LoggerAdapter`` over it, the
standard library's way to wrap a logger. The standard logger keeps its class and its methods;
handlers, filters, levels and ``propagate`` work on it as ``logging`` documents them, through the
adapter too.

Lines reach the same builder (``line.emit``) by one of two paths:

- the standard path: ``logging`` makes a ``LogRecord`` and calls the handlers; lambda_kit's writes
  the record as a line;
- the direct path, ``JsonLogger.log``: while lambda_kit's handler is the only thing that would see
  a line (no other handler, no filter, ``propagate`` off, the standard ``LogRecord`` factory and
  logger class, no ``stack_info``), the adapter writes the line itself, with no ``LogRecord`` and
  no ``findCaller`` walking the stack: about a third of the standard path's cost (``make bench``).
  The line is the same either way; what it leaves out is what no line carries (``funcName``,
  ``lineno``, the thread and process fields): add a filter or a handler to have them.

Under Lambda's runtime (``awslambdaric``), the root logger has the runtime's handler, which writes
every ``logging`` record that reaches the root in Lambda's Text or JSON format. lambda_kit puts its
own handler in its place (``adopt_runtime_root``, when this module is imported: the runtime has
set up logging by then), so what user code and libraries log through plain ``logging``
(``logging.getLogger(__name__).warning``, boto3's and urllib3's warnings) comes out as lambda_kit's
JSON lines, with the request id and the current record's trace id, one line each, whatever
``AWS_LAMBDA_LOG_FORMAT`` says. The root logger's level stays the runtime's (the function's
logging configuration).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, TypeAlias

from . import line
from .mask import clean, text_of

STANDARD_ATTRS = frozenset(
    vars(logging.LogRecord("", 0, "", 0, "", None, None)).keys() | {"message", "asctime", "taskName"}
)
"""A ``LogRecord``'s own attributes: an ``extra=`` naming one is refused by ``logging``."""

_STANDARD_FACTORY = logging.getLogRecordFactory()
ExcInfo: TypeAlias = (
    bool
    | BaseException
    | tuple[type[BaseException], BaseException, TracebackType | None]
    | tuple[None, None, None]
    | None
)
"""What ``logging``'s ``exc_info=`` takes."""


def message_text(msg: object, args: tuple[object, ...] | Mapping[str, object]) -> str:
    """The line's message: ``msg % args`` as ``LogRecord.getMessage`` makes it; a message that
    cannot be formatted must not cost the line (its ``msg`` then)."""
    if isinstance(args, tuple) and len(args) == 1 and isinstance(args[0], Mapping) and args[0]:
        args = args[0]  # as LogRecord reads log.info("%(a)s", {"a": 1})
    try:
        return str(msg) % args if args else text_of(msg)
    except Exception:
        return text_of(msg)


def exception_of(exc_info: ExcInfo) -> BaseException | None:
    """The exception an ``exc_info=`` argument names, as ``Logger._log`` reads it."""
    if isinstance(exc_info, BaseException):
        return exc_info
    if isinstance(exc_info, tuple):
        return exc_info[1] if len(exc_info) > 1 else None
    return sys.exc_info()[1] if exc_info else None


def user_line(
    name: str,
    level: int,
    message: object,
    exception: BaseException | None,
    extra: Mapping[str, object] | None,
    now: float | None = None,
) -> None:
    """The line of one ``logging`` call, whichever path it took."""
    fields: dict[str, Any] = {"logger": name}
    if exception is not None:
        fields.update(line.error_fields(exception))
    level_name = line.NAMES.get(level) or logging.getLevelName(level)
    line.emit(level_name, clean(message), fields=fields, extra=extra, now=now)


class JsonLogHandler(logging.Handler):
    """Writes ``logging`` records as lambda_kit JSON lines. On a logger a Powertools ``Logger``
    configured too (the same name as its service), it leaves the line to Powertools' handler: one
    line per call, never two."""

    def __init__(self, logger: logging.Logger) -> None:
        super().__init__()
        self.logger = logger

    def emit(self, record: logging.LogRecord) -> None:
        logger = self.logger
        if getattr(logger, "powertools_handler", None) in logger.handlers:
            return
        try:
            extra = {key: value for key, value in vars(record).items() if key not in STANDARD_ATTRS}
            exception = record.exc_info[1] if record.exc_info else None
            user_line(
                record.name,
                record.levelno,
                message_text(record.msg, record.args),
                exception,
                extra,
                record.created,
            )
        except Exception:
            self.handleError(record)


def only_lambda_kit_sees(logger: logging.Logger, level: int) -> bool:
    """Whether lambda_kit's handler is the only thing that would see a line of ``logger``."""
    handlers = logger.handlers
    return (
        len(handlers) == 1
        and type(handlers[0]) is JsonLogHandler
        and level >= handlers[0].level
        and not (logger.filters or handlers[0].filters or logger.propagate)
        and type(logger) is logging.Logger
        and logging.getLogRecordFactory() is _STANDARD_FACTORY
    )


def goes_direct(
    logger: logging.Logger, level: int, extra: Mapping[str, object] | None, stack_info: bool
) -> bool:
    """Whether a line of ``logger`` takes the direct path: lambda_kit's handler alone would see it,
    and nothing ``logging`` does for it is asked for (a stack, an extra naming a ``LogRecord``
    attribute, which ``logging`` refuses)."""
    return (
        not stack_info
        and only_lambda_kit_sees(logger, level)
        and not (extra and not STANDARD_ATTRS.isdisjoint(extra))
    )


def _delegated(attribute: str) -> property:
    """An attribute of the standard logger, read and set through the adapter."""
    return property(
        lambda adapter: getattr(adapter.logger, attribute),
        lambda adapter, value: setattr(adapter.logger, attribute, value),
    )


def _at(level: int, exc_info_default: ExcInfo = None) -> Callable[..., None]:
    """The level method of ``level`` (``debug``, ``info`` ...): ``logging``'s arguments, handed on
    as they are (``LoggerAdapter``'s pass them through ``**kwargs``, a third of a direct line's cost)."""

    def method(
        self: JsonLogger,
        msg: object,
        *args: object,
        exc_info: ExcInfo = exc_info_default,
        extra: Mapping[str, object] | None = None,
        stack_info: bool = False,
        stacklevel: int = 1,
    ) -> None:
        self.write(level, msg, args, exc_info, extra, stack_info, stacklevel)

    return method


class JsonLogger(logging.LoggerAdapter):  # type: ignore[type-arg]
    """What ``get_logger`` returns: the standard logger (``.logger``) with lambda_kit's direct
    path. Every other attribute is the standard logger's (``addHandler``, ``handlers``,
    ``addFilter``, ``propagate``, ``level`` ...)."""

    propagate = _delegated("propagate")
    level = _delegated("level")
    disabled = _delegated("disabled")

    debug = _at(logging.DEBUG)
    info = _at(logging.INFO)
    warning = _at(logging.WARNING)
    error = _at(logging.ERROR)
    exception = _at(logging.ERROR, exc_info_default=True)
    critical = _at(logging.CRITICAL)

    def log(  # type: ignore[override]
        self,
        level: int,
        msg: object,
        *args: object,
        exc_info: ExcInfo = None,
        extra: Mapping[str, object] | None = None,
        stack_info: bool = False,
        stacklevel: int = 1,
    ) -> None:
        self.write(level, msg, args, exc_info, extra, stack_info, stacklevel)

    def write(
        self,
        level: int,
        msg: object,
        args: tuple[object, ...],
        exc_info: ExcInfo,
        extra: Mapping[str, object] | None,
        stack_info: bool,
        stacklevel: int,
    ) -> None:
        """The direct path when lambda_kit's handler alone would see the line, else ``logging``'s."""
        logger = self.logger
        if not logger.isEnabledFor(level):
            return
        if not goes_direct(logger, level, extra, stack_info):
            # the standard path (it refuses an extra naming a LogRecord attribute, as logging does); the
            # caller's frame is two above: the level method's, then this one's
            logger.log(
                level,
                msg,
                *args,
                exc_info=exc_info,
                extra=extra,
                stack_info=stack_info,
                stacklevel=stacklevel + 2,
            )
            return
        exception = exception_of(exc_info) if exc_info else None
        message = msg if not args and type(msg) is str else message_text(msg, args)
        user_line(logger.name, level, message, exception, extra)

    def __getattr__(self, attribute: str) -> Any:
        if attribute == "logger":  # not set yet: no standard logger to ask
            raise AttributeError(attribute)
        return getattr(self.logger, attribute)


_loggers: dict[str, JsonLogger] = {}


def _set_levels(level: int) -> None:
    for adapter in _loggers.values():
        adapter.logger.setLevel(level)


line.on_level_change(_set_levels)


def get_logger(name: str | None = None) -> JsonLogger:
    """A logger writing lambda_kit JSON lines with the current trace id (and a ``logger`` key: its
    name), over the standard logger ``logging.getLogger(name)``. Without a name: the calling
    module's (``get_logger(__name__)``), never the root logger, whose lines are the runtime's."""
    if name is None:
        name = str(sys._getframe(1).f_globals.get("__name__") or "app")
    logger = logging.getLogger(name)
    if not any(isinstance(handler, JsonLogHandler) for handler in logger.handlers):
        logger.addHandler(JsonLogHandler(logger))
        logger.propagate = False
        if logger.level == logging.NOTSET:
            logger.setLevel(line.threshold())
    adapter = _loggers.get(name)
    if adapter is None or adapter.logger is not logger:
        adapter = _loggers[name] = JsonLogger(logger)
    return adapter


RUNTIME_HANDLERS = ("LambdaLoggerHandler", "LambdaLoggerHandlerWithFrameType")
"""The classes of the root handler Lambda's Python runtime (``awslambdaric``) installs."""


def adopt_runtime_root() -> bool:
    """Replace the runtime's root handler with lambda_kit's (the module docstring says why);
    whether there was one. Nothing changes outside Lambda's runtime."""
    root = logging.getLogger()
    found = [handler for handler in root.handlers if type(handler).__name__ in RUNTIME_HANDLERS]
    for handler in found:
        root.removeHandler(handler)
    if found and not any(type(handler) is JsonLogHandler for handler in root.handlers):
        root.addHandler(JsonLogHandler(root))
    return bool(found)


adopt_runtime_root()
