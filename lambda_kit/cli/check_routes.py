"""What ``lambda-kit check`` reads of a function's HTTP side: its ``http`` and ``httpApi`` events as
osls and API Gateway take them, and the ``Router`` routes of its handler against those events.

- **Syntax first.** A route osls's ``serverless package`` stops on (a ``httpApi: 'GTE /x'`` string
  is a ``TypeError`` there, an ``http`` event without a method or a path too) or that API Gateway
  refuses at deploy (a method that is none of ANY, GET, POST, PUT, PATCH, OPTIONS, HEAD, DELETE;
  a path with an empty segment, a brace that is not a whole ``{name}`` segment, a greedy
  ``{name+}`` before the last segment, a parameter named twice; for a REST API a path part outside
  ``a-zA-Z0-9._-``; one route twice) is an error naming the event and the fix.
- **Routes and events agree.** Every route of the handler's ``Router`` has an event that sends its
  method and path to the function (else API Gateway answers 404 before the function runs), and
  every event reaches a route (else the router answers every request it sends 404, or 405). A
  catch-all covers every route: ``httpApi: '*'`` (the ``$default`` route), a Function URL or an
  ALB target; ``ANY /{proxy+}`` covers every path but ``/`` itself, as API Gateway matches it.
- **Signatures.** The router calls each route ``function(request, context)``: a function that
  cannot be called so (Powertools' ``def get_order(id)``) answers 500 to every request.

The routes are the ones declared while the handler module imports (``recording_routes``):
``Router.route``, which ``get``/``post``/... call, is watched for that time.
"""

from __future__ import annotations

import contextlib
import difflib
import inspect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..local.config import EventSource, FunctionConfig
from ..sources.api.router import Router

HTTP_KINDS = ("httpApi", "http")
CATCH_ALL_KINDS = ("url", "alb")
"""Events that send every method and path to the function."""
METHODS = ("ANY", "GET", "POST", "PUT", "PATCH", "OPTIONS", "HEAD", "DELETE")
OSLS_ROUTE = re.compile(rf"^(?:\*|({'|'.join(METHODS)}) (/\S*))$", re.IGNORECASE)
"""The string form osls reads (its own pattern); osls's httpApi compiler crashes on anything else."""
PARAMETER = re.compile(r"\{([A-Za-z0-9._-]+)(\+?)\}")
REST_PART = re.compile(r"[A-Za-z0-9._-]+")
"""What a REST API accepts as a literal path part."""
EXAMPLE = "'GET /orders/{id}'"
TYPE_ERROR = "osls's `serverless package` stops on it with a TypeError"
REFUSED = {"httpApi": "osls refuses it", "http": "API Gateway refuses it at deploy"}
"""What becomes of a method that is none of METHODS, by kind."""


@dataclass(frozen=True)
class Declared:
    """One route of a ``Router``, as declared: its methods, template, function and model."""

    methods: tuple[str, ...]
    template: str
    function: Any
    model: Any


@contextlib.contextmanager
def recording_routes() -> Iterator[dict[Router, list[Declared]]]:
    """While it is open, every route declared on a ``Router`` is noted, by router."""
    declared: dict[Router, list[Declared]] = {}
    original = Router.route

    def route(self: Router, path: str, methods: Any = ("GET",), *, model: Any = None) -> Any:
        register = original(self, path, methods, model=model)  # refuses what the router refuses
        names = (methods,) if isinstance(methods, str) else tuple(methods)

        def noted(function: Any) -> Any:
            routed = Declared(tuple(name.upper() for name in names), path, function, model)
            declared.setdefault(self, []).append(routed)
            return register(function)

        return noted

    Router.route = route  # type: ignore[method-assign]
    try:
        yield declared
    finally:
        Router.route = original  # type: ignore[method-assign]


# --- one event as API Gateway routes it -----------------------------------------------------------


@dataclass(frozen=True)
class HttpEvent:
    """An ``http`` / ``httpApi`` event read as API Gateway routes it (``path`` None: every path)."""

    kind: str
    method: str  # "ANY" or one method
    path: str | None
    shown: str  # as written, for messages

    @property
    def key(self) -> str:
        return "$default" if self.path is None else f"{self.method} {self.path}"

    @property
    def segments(self) -> list[str]:
        return _segments(self.path or "")


def _segments(path: str) -> list[str]:
    return [segment for segment in path.strip("/").split("/") if segment]


def _method_hint(method: Any) -> str:
    close = difflib.get_close_matches(str(method).upper(), METHODS, n=1, cutoff=0.6)
    return f" ({method} is no HTTP method: {close[0]}?)" if close else ""


def _raw(function: FunctionConfig, event: EventSource) -> Any:
    """The event as written in serverless.yml (the model has its short form read already)."""
    entries = function.setting("events")
    entry = entries[event.index] if isinstance(entries, list) and event.index < len(entries) else None
    return entry.get(event.kind) if isinstance(entry, dict) else event.spec


def read_event(function: FunctionConfig, event: EventSource) -> tuple[HttpEvent | None, str | None]:
    """(the event as API Gateway routes it, None) or (None, the error that stops osls or the deploy)."""
    raw = _raw(function, event)
    shown = (
        repr(raw) if isinstance(raw, str) else f"{{method: {raw.get('method')!r}, path: {raw.get('path')!r}}}"
    )
    if isinstance(raw, str):
        method, path, problem = _string_route(event.kind, raw)
    elif isinstance(raw, dict):
        method, path, problem = _mapping_route(event.kind, raw)
    else:
        return None, f"its {event.kind} event {raw!r} is no route: write it as {EXAMPLE} or '*'"
    if problem is None and path is not None:
        problem = _path_problem(event.kind, path)
    if problem is not None:
        return None, f"its {event.kind} event {shown}: {problem}"
    return HttpEvent(event.kind, method, path, shown), None


REST_CATCH_ALL = "a REST API has no '*' route: write - http: 'ANY /{proxy+}' (and 'ANY /' for the root)"


def _string_route(kind: str, raw: str) -> tuple[str, str | None, str | None]:
    if kind == "http" and raw.strip() == "*":
        return "", None, f"{REST_CATCH_ALL}; {TYPE_ERROR}"
    found = OSLS_ROUTE.match(raw)
    if found is None:
        word = raw.strip().split(" ")[0]
        crash = TYPE_ERROR if kind == "httpApi" or " " not in raw else REFUSED["http"]
        return (
            "",
            None,
            (
                f"not 'METHOD /path' (METHOD one of {', '.join(METHODS)}) nor '*'{_method_hint(word)}: "
                f"{crash}; write it as {EXAMPLE}"
            ),
        )
    if found.group(1) is None:
        return "ANY", None, None
    return found.group(1).upper(), found.group(2), None


def _mapping_route(kind: str, raw: dict[str, Any]) -> tuple[str, str | None, str | None]:
    method, path = raw.get("method"), raw.get("path")
    if path == "*":
        return _catch_all(kind, method)
    if not isinstance(path, str) or not path:
        crash = f" ({TYPE_ERROR})" if kind == "http" else ""
        return "", None, f"no path{crash}: add path: /orders/{{id}}"
    upper, problem = _mapping_method(kind, method)
    if problem is not None:
        return "", None, problem
    return upper, path if path.startswith("/") or kind == "httpApi" else "/" + path, None


def _catch_all(kind: str, method: object) -> tuple[str, str | None, str | None]:
    """The route of ``path: '*'``: an HTTP API's $default route (every method), refused by a REST API."""
    if kind == "http":
        return "", None, f"{REST_CATCH_ALL}; API Gateway refuses the path part '*' at deploy"
    if method not in (None, "*"):
        return "", None, "path '*' (the $default route) takes every method: drop method or write method: '*'"
    return "ANY", None, None


def _mapping_method(kind: str, method: Any) -> tuple[str, str | None]:
    """(the method of a mapping route, upper-case, ``ANY`` for ``*``; the problem with it, if any)."""
    if not isinstance(method, str) or not method:
        crash = TYPE_ERROR if kind == "http" else "osls refuses it"
        return "", f"no method: {crash}; add method: GET (or '*' for any)"
    upper = "ANY" if method == "*" else method.upper()
    if upper not in METHODS:
        return "", (
            f"method {method!r} is none of {', '.join(METHODS)}, '*'{_method_hint(method)}: {REFUSED[kind]}; "
            "write e.g. method: GET"
        )
    return upper, None


def _path_problem(kind: str, path: str) -> str | None:
    """What API Gateway refuses in ``path`` (None: nothing)."""
    if kind == "httpApi" and not path.startswith("/"):
        return f"path {path!r} must start with /: write /{path.lstrip('/')}"
    if re.search(r"\s", path):
        return f"path {path!r} holds a space: API Gateway refuses it; encode it or remove it"
    inner = path.strip("/")
    if "//" in path or (inner and "" in inner.split("/")):
        return f"path {path!r} has an empty segment (//): API Gateway refuses it; remove the extra /"
    problem = _segments_problem(kind, _segments(path))
    return None if problem is None else f"path {path!r}{problem}"


def _segments_problem(kind: str, segments: list[str]) -> str | None:
    """What API Gateway refuses in a path's segments: ``: <why>``, or `` names ... twice``."""
    names = []
    for index, segment in enumerate(segments):
        problem = _segment_problem(kind, segment, index == len(segments) - 1)
        if problem is not None:
            return f": {problem}"
        found = PARAMETER.fullmatch(segment)
        names += [found.group(1)] if found else []
    repeated = [name for name in names if names.count(name) > 1]
    return f" names the parameter {repeated[0]} twice: give each its own name" if repeated else None


def _segment_problem(kind: str, segment: str, last: bool) -> str | None:
    found = PARAMETER.fullmatch(segment)
    if found is not None:
        if found.group(2) and not last:
            return f"the greedy {segment} must be the last segment: API Gateway refuses it elsewhere"
        return None
    if "{" in segment or "}" in segment:
        return (
            f"{segment!r} is not a parameter: write a whole segment {{name}} (or {{name+}} last), "
            "letters, digits and ._- in the name"
        )
    if kind == "http" and not REST_PART.fullmatch(segment):
        return f"{segment!r}: a REST API's path parts take only a-zA-Z0-9._- (API Gateway refuses it)"
    return None


def duplicate_routes(events: list[tuple[str, HttpEvent]]) -> list[tuple[str, str]]:
    """(function, message) for each route declared a second time in the service (osls refuses an
    HTTP API's; a REST API's is one resource method twice, which CloudFormation refuses)."""
    seen: dict[tuple[str, str], str] = {}
    found = []
    for function, event in events:
        key = (event.kind, event.key)
        if key in seen:
            found.append(
                (
                    function,
                    f"its {event.kind} route {event.key} is also {seen[key]}'s: osls refuses a route "
                    "twice; keep one",
                )
            )
        seen.setdefault(key, function)
    return found


# --- the router's routes against the events -------------------------------------------------------


def _parts(template: str) -> list[tuple[int, str]]:
    """A template's segments: (0 literal, 1 ``{name}``, 2 ``{name+}``; the literal)."""
    parts = []
    for segment in _segments(template):
        found = PARAMETER.fullmatch(segment)
        parts.append((0, segment) if found is None else (2 if found.group(2) else 1, ""))
    return parts


def _covers(outer: list[tuple[int, str]], inner: list[tuple[int, str]]) -> bool:
    """Whether every path ``inner`` matches, ``outer`` matches too."""
    for index, (kind, literal) in enumerate(outer):
        if kind == 2:
            return len(inner) > index
        if index >= len(inner) or inner[index][0] == 2:
            return False
        if kind == 0 and inner[index] != (0, literal):
            return False
    return len(outer) == len(inner)


def _meets(one: list[tuple[int, str]], other: list[tuple[int, str]]) -> bool:
    """Whether some path matches both templates."""
    for index in range(max(len(one), len(other))):
        if index < len(one) and one[index][0] == 2:
            return len(other) > index
        if index < len(other) and other[index][0] == 2:
            return len(one) > index
        if index >= len(one) or index >= len(other):
            return False
        (kind, literal), (other_kind, other_literal) = one[index], other[index]
        if kind == other_kind == 0 and literal != other_literal:
            return False
    return True


def _takes(event: HttpEvent, method: str) -> bool:
    return event.method in ("ANY", method)


def _answers(route_methods: set[str], method: str) -> bool:
    """Whether a resource with routes for ``route_methods`` answers ``method`` itself (HEAD as
    GET, OPTIONS with its Allow)."""
    return (
        method in ("ANY", "OPTIONS")
        or method in route_methods
        or (method == "HEAD" and "GET" in route_methods)
    )


Add = Callable[[str, str], None]


def check_routes(
    routes: list[Declared], events: list[HttpEvent], catch_all: bool, where: Callable[[Any], str], add: Add
) -> None:
    """Routes no event sends to, and events that reach no route: errors (``add(level, message)``)."""
    if not catch_all and not any(event.path is None for event in events):
        for route in routes:
            _check_covered(route, events, where, add)
    for event in events:
        if event.path is not None:
            _check_reached(event, routes, add)


def _check_covered(route: Declared, events: list[HttpEvent], where: Callable[[Any], str], add: Add) -> None:
    parts = _parts(route.template)
    for method in route.methods:
        if any(_takes(event, method) and _covers(_parts(event.path or ""), parts) for event in events):
            continue
        kind = events[0].kind if events else "httpApi"
        root = " (ANY /{proxy+} takes every path but / itself)" if not parts else ""
        add(
            "error",
            f"route {method} {route.template} ({where(route.function)}) has no {kind} event that sends to "
            f"it{root}{_typo(method, route.template, events)}: API Gateway answers 404 before the function "
            f"runs; add - {kind}: '{method} {route.template}' to its events, or send everything to the "
            f"router with - httpApi: '*'",
        )


def _typo(method: str, template: str, events: list[HttpEvent]) -> str:
    paths = [event.path for event in events if event.path is not None and _takes(event, method)]
    close = difflib.get_close_matches(template, paths, n=1, cutoff=0.85)
    return f" (its event '{method} {close[0]}' looks like a typo of it)" if close else ""


def _check_reached(event: HttpEvent, routes: list[Declared], add: Add) -> None:
    parts = _parts(event.path or "")
    meeting = [route for route in routes if _meets(parts, _parts(route.template))]
    methods = {method for route in meeting for method in route.methods}
    if meeting and _answers(methods, event.method):
        return
    declared = ", ".join(dict.fromkeys(f"{m} {route.template}" for route in routes for m in route.methods))
    if meeting:
        answer = f"405: the router has no {event.method} route there (it has {', '.join(sorted(methods))})"
    else:
        answer = "404: no route of the router matches its path"
    add(
        "error",
        f"its {event.kind} event {event.shown} reaches no route: the router answers every request it sends "
        f"{answer}; fix the event or add the route (routes: {declared or 'none'})",
    )


# --- signatures -----------------------------------------------------------------------------------


def cannot_take_two(function: Any) -> str | None:
    """The function's signature as written when it cannot be called ``(x, context)``, else None."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin or the like: nothing to read
        return None
    try:
        signature.bind(None, None)
    except TypeError:
        return f"{getattr(function, '__name__', 'function')}{signature}"
    return None


def check_signatures(routes: list[Declared], where: Callable[[Any], str], add: Add) -> None:
    for route in routes:
        written = cannot_take_two(route.function)
        if written is not None:
            add(
                "error",
                f"route {'/'.join(route.methods)} {route.template}: {written} ({where(route.function)}) "
                "cannot be called as the router calls it, with (request, context): every request answers "
                f"500; write def {getattr(route.function, '__name__', 'route')}(request, context)"
                " and read path parameters from request.path_params",
            )
