"""What every decorator takes, checked and built once, when the function is decorated."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..record import Record
from ..validation import Validator

__all__ = ["Commit", "Options", "checked_concurrency"]

Commit = Callable[[list[tuple[Record, Any]]], Any]


def checked_concurrency(decorator: str, value: Any) -> int:
    if type(value) is not int or value < 1:
        raise ValueError(f"{decorator}: max_concurrency must be a whole number of at least 1, not {value!r}")
    return value


@dataclass(frozen=True, kw_only=True)
class Options:
    """The options every decorator shares: payload decoding, what to log, a Powertools logger,
    metrics, the batch commit, the payload model and how many records an ``async def`` may run at
    once. ``validate`` is the model's ``Validator``, built (and checked) here, at decoration."""

    decorator: str
    json: bool = True
    log_event: bool = True
    log_result: bool = True
    logger: Any = None
    metrics: bool | None = None
    commit: Commit | None = None
    model: Any = None
    max_concurrency: int = 1
    validate: Validator | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        checked_concurrency(self.decorator, self.max_concurrency)
        if self.commit is not None and not callable(self.commit):
            raise TypeError(f"{self.decorator}: commit must be a function of the batch, not {type(self.commit).__name__}")
        if self.model is not None:
            object.__setattr__(self, "validate", Validator(self.model, from_json=not self.json))

    @property
    def model_name(self) -> str | None:
        return None if self.model is None else getattr(self.model, "__name__", None) or repr(self.model)
