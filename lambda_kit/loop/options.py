"""What every decorator takes, declared once (``HandlerOptions``, ``BatchOptions``) and checked and
built once, when the function is decorated (``Options``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypedDict

from .. import metrics as metrics_backends
from ..record import Record

if TYPE_CHECKING:
    from ..validation import Validator

Commit = Callable[[list[tuple[Record, Any]]], Any]


class HandlerOptions(TypedDict, total=False):
    """The keywords every decorator takes (``**options: Unpack[HandlerOptions]``)."""

    log_event: bool
    """Write the ``record received`` line, with the payload (masked). Default True."""
    log_result: bool
    """Write the ``record processed`` line, with what the function returned. Default True."""
    logger: Any
    """A Powertools ``Logger``: told each record's trace id as its correlation id."""
    metrics: bool | str | list[str] | None
    """Send each invocation's counts: ``True``/``"datadog"``, ``"emf"`` (CloudWatch), or both as a
    list; ``False`` none; None: ``LAMBDA_KIT_METRICS`` decides (``lambda_kit.metrics``)."""
    model: Any
    """A pydantic model, a dataclass or a TypedDict: the function receives the payload validated."""
    log_buffer: bool
    """Hold each record's lines below WARN; write them only if the record fails. Default False."""


class BatchOptions(HandlerOptions, total=False):
    """The keywords of the decorators whose invocations carry many records."""

    max_concurrency: int
    """An ``async def`` only: up to that many records at once, each ordering group in order."""
    deadline_margin_ms: int
    """No record starts once less than the slowest record of the invocation plus this is left of
    its time; those not started go back to their source. Default ``DEADLINE_MARGIN_MS``."""


DEADLINE_MARGIN_MS = 100
"""The part of the margin that is not the slowest record: time to answer Lambda."""


def checked_concurrency(decorator: str, value: object) -> int:
    if type(value) is not int or value < 1:
        raise ValueError(f"{decorator}: max_concurrency must be a whole number of at least 1, not {value!r}")
    return value


def validator(model: object, from_json: bool) -> Validator:
    from ..validation import Validator  # the pydantic extra's module: loaded only for a model=

    return Validator(model, from_json=from_json)


class Options:
    """A decorator's options, checked when made (at decoration): the ``HandlerOptions`` and
    ``BatchOptions`` keywords, whether payloads are JSON (``json``), the batch's ``commit``, and
    ``validate``, the model's ``Validator``, built then."""

    __slots__ = (
        "decorator",
        "json",
        "log_event",
        "log_result",
        "logger",
        "metrics",
        "commit",
        "model",
        "max_concurrency",
        "deadline_margin_ms",
        "log_buffer",
        "validate",
    )

    def __init__(
        self,
        decorator: str,
        *,
        json: bool = True,
        commit: Commit | None = None,
        log_event: bool = True,
        log_result: bool = True,
        logger: Any = None,
        metrics: bool | str | list[str] | None = None,
        model: object = None,
        max_concurrency: int = 1,
        deadline_margin_ms: int = DEADLINE_MARGIN_MS,
        log_buffer: bool = False,
    ) -> None:
        if commit is not None and not callable(commit):
            raise TypeError(
                f"{decorator}: commit must be a function of the batch, not {type(commit).__name__}"
            )
        self.decorator = decorator
        self.json = json
        self.log_event = log_event
        self.log_result = log_result
        self.logger = logger
        self.metrics = metrics_backends.checked(decorator, metrics)
        self.commit = commit
        self.model = model
        self.max_concurrency = checked_concurrency(decorator, max_concurrency)
        if type(deadline_margin_ms) is not int or deadline_margin_ms < 0:
            raise ValueError(
                f"{decorator}: deadline_margin_ms must be a whole number of milliseconds, not "
                f"{deadline_margin_ms!r}"
            )
        self.deadline_margin_ms = deadline_margin_ms
        self.log_buffer = bool(log_buffer)
        self.validate = None if model is None else validator(model, from_json=not json)

    @property
    def model_name(self) -> str | None:
        return None if self.model is None else getattr(self.model, "__name__", None) or repr(self.model)

    def marks(self) -> dict[str, Any]:
        """What ``lambda-kit check`` reads of these options (the decorated function's
        ``__lambda_kit__``, with the sources' own)."""
        return {
            "decorator": self.decorator,
            "model": self.model_name,
            "json": self.json,
            "commit": self.commit is not None,
            "max_concurrency": self.max_concurrency,
        }
