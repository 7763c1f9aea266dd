"""``model=``: each payload validated by pydantic into a model, a dataclass or a TypedDict.

pydantic (``pip install 'lambda-event-kit[pydantic]'``) is imported when a decorator is given a model,
never by ``import lambda_kit`` (cold start). A payload that does not fit raises ``InvalidPayload``
naming each field and what is wrong with it. pydantic's own errors can carry the input (its
``input`` and, from a custom validator, its message): the input is never kept, and a field whose
path holds a secret-like name (``password``, ``token``, as ``log.is_secret_key`` says) shows only
the kind of problem (``string_too_short``), never the message.
"""

from __future__ import annotations

from typing import Any

from .errors import InvalidPayload
from .extras import import_optional, install_hint
from .log import clean, is_secret_key

MAX_PROBLEMS = 20  # listed on the line; the count says how many more
MAX_PROBLEM_CHARS = 300


class Validator:
    """``validator(value)`` is ``value`` validated into ``model``, or raises ``InvalidPayload``.

    With ``from_json`` (a decorator given ``json=False``), text or bytes are parsed as JSON by
    pydantic itself.
    """

    __slots__ = ("model", "name", "from_json", "_adapter", "_error")

    def __init__(self, model: object, from_json: bool = False) -> None:
        # pydantic (~200 ms to import) is loaded by a decorator given a model; missing, the error names
        # the extra
        pydantic = import_optional("pydantic", "model=")
        if not hasattr(pydantic, "TypeAdapter") or not hasattr(pydantic.TypeAdapter, "rebuild"):
            raise ImportError(f"model= needs pydantic 2.10 or later: {install_hint('pydantic')}")
        self.model = model
        self.name = getattr(model, "__name__", None) or repr(model)
        self.from_json = from_json
        self._adapter = self._built(pydantic)
        self._error = pydantic.ValidationError

    def _built(self, pydantic: Any) -> Any:
        """The model's validator, built now: a model pydantic cannot build (an annotation that does
        not resolve ...) raises here, when the function is decorated, not on every record."""
        try:
            adapter = pydantic.TypeAdapter(self.model)
            adapter.rebuild(raise_errors=True)
        except (pydantic.PydanticUserError, pydantic.errors.PydanticUndefinedAnnotation, NameError) as exc:
            reason = str(exc).split("\n", 1)[0]
            raise TypeError(
                f"model={self.name} is not a type pydantic can validate (a pydantic model, a dataclass or a "
                f"TypedDict, every annotation resolvable): {reason}"
            ) from None
        return adapter

    def __call__(self, value: object) -> Any:
        try:
            if self.from_json and isinstance(value, str | bytes | bytearray):
                return self._adapter.validate_json(value)
            return self._adapter.validate_python(value)
        except self._error as exc:
            # ``from None``: pydantic's error, which holds the input, is not chained to ours
            raise InvalidPayload(self.name, *problems_of(exc)) from None

    def missing(self, field: str, why: str) -> InvalidPayload:
        """The error for a record that has nothing to validate where the model applies."""
        return InvalidPayload(self.name, [{"field": field, "problem": why}])


def problems_of(error: Any) -> tuple[list[dict[str, str]], int]:
    """(up to ``MAX_PROBLEMS`` of ``{"field", "problem"}``, how many there are) of a pydantic
    ``ValidationError``, without its input values."""
    found = error.errors(include_url=False, include_input=False, include_context=False)
    listed = []
    for item in found[:MAX_PROBLEMS]:
        location = item.get("loc") or ()
        secret = any(type(part) is str and is_secret_key(part) for part in location)
        problem = str(item.get("type", "invalid")) if secret else str(item.get("msg", ""))
        if len(problem) > MAX_PROBLEM_CHARS:
            problem = problem[:MAX_PROBLEM_CHARS] + "..."
        listed.append({"field": field_path(location), "problem": clean(problem)})
    return listed, len(found)


def field_path(location: tuple[Any, ...]) -> str:
    """``("items", 0, "qty")`` as ``items[0].qty``; the payload itself as ``(payload)``."""
    path = ""
    for part in location:
        if type(part) is int:
            path += f"[{part}]"
        else:
            text = clean(str(part))
            path += f".{text}" if path else text
    return path or "(payload)"
