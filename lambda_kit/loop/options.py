"""What every decorator takes, checked and built once, when the function is decorated."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import metrics as metrics_backends
from ..record import Record

if TYPE_CHECKING:
    from ..validation import Validator

Commit = Callable[[list[tuple[Record, Any]]], Any]


def checked_concurrency(decorator: str, value: Any) -> int:
    if type(value) is not int or value < 1:
        raise ValueError(f"{decorator}: max_concurrency must be a whole number of at least 1, not {value!r}")
    return value


def validator(model: Any, from_json: bool) -> Validator:
    from ..validation import Validator  # the pydantic extra's module: loaded only for a model=

    return Validator(model, from_json=from_json)


class Options:
    """The options every decorator shares: payload decoding, what to log, a Powertools logger,
    metrics, the batch commit, the payload model and how many records an ``async def`` may run at
    once. Checked when made, at decoration; ``validate`` is the model's ``Validator``, built then."""

    __slots__ = (
        "decorator",
        "log_event",
        "log_result",
        "logger",
        "metrics",
        "commit",
        "model",
        "max_concurrency",
        "validate",
    )

    def __init__(
        self,
        *,
        decorator: str,
        json: bool = True,
        log_event: bool = True,
        log_result: bool = True,
        logger: Any = None,
        metrics: bool | str | list[str] | None = None,
        commit: Commit | None = None,
        model: Any = None,
        max_concurrency: int = 1,
    ) -> None:
        if commit is not None and not callable(commit):
            raise TypeError(
                f"{decorator}: commit must be a function of the batch, not {type(commit).__name__}"
            )
        self.decorator = decorator
        self.log_event = log_event
        self.log_result = log_result
        self.logger = logger
        self.metrics = metrics_backends.checked(decorator, metrics)
        self.commit = commit
        self.model = model
        self.max_concurrency = checked_concurrency(decorator, max_concurrency)
        self.validate = None if model is None else validator(model, from_json=not json)

    @property
    def model_name(self) -> str | None:
        return None if self.model is None else getattr(self.model, "__name__", None) or repr(self.model)
