"""``Router``: one ``api_handler`` function behind many routes.

::

    router = Router()

    @router.get("/orders/{id}")
    def order(request, context):
        return {"id": request.path_params["id"]}

    handler = api_handler(router)

Templates are written as API Gateway writes them: ``{name}`` is one path segment, ``{name+}`` (the
last segment only) the rest of the path. The values, percent-decoded, are put in
``request.path_params`` (beside the event's own); the function keeps ``(request, context)``.

As API Gateway routes: a request goes to the most specific template that matches its path and
has a route for its method (segment by segment from the left, a literal before ``{name}`` before
``{name+}``; a literal path before any template). A trailing ``/`` is ignored. A path no template
matches answers 404; a path whose templates have no route for the method answers 405 with
``Allow``, except ``HEAD``, answered as ``GET`` without the body, and ``OPTIONS``, answered 204
with ``Allow`` (a route of their own takes them first). ``model=`` on a route validates the JSON
body into ``request.model`` (422 naming the fields when it does not fit), as
``api_handler(model=...)`` does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ...errors import HTTPError
from ...validation import Validator
from .request import Request, validated

if TYPE_CHECKING:
    from ...context import LambdaContext

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
_PARAMETER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(\+?)\}")
_NAMES = re.compile(r"\?P<\w+>")

Handler = Callable[[Any, Any], Any]
Decorator = Callable[[Handler], Handler]


class Route:
    """One function on one method of one template, with its model's validator."""

    __slots__ = ("function", "validate")

    def __init__(self, function: Handler, validate: Validator | None) -> None:
        self.function = function
        self.validate = validate


class Resource:
    """One path template (a resource, as API Gateway calls it): its routes by method, and the
    methods ``Allow`` names for it."""

    __slots__ = ("template", "regex", "rank", "names", "anonymous", "head", "methods", "allowed")

    def __init__(self, template: str) -> None:
        self.template = template
        pattern, self.rank, self.names = _compiled(template)
        first = _trimmed(template)[1:].partition("/")[0]
        self.head = first if self.rank[:1] == (0,) else None  # its first segment, when a literal
        self.regex = re.compile(pattern)
        self.anonymous = _NAMES.sub("", pattern)  # the pattern, whatever its parameters' names
        self.methods: dict[str, Route] = {}
        self.allowed: set[str] = {"OPTIONS"}

    def add(self, method: str, route: Route) -> None:
        if method in self.methods:
            raise ValueError(f"{method} {self.template} has two routes: remove one")
        self.methods[method] = route
        self.allowed.update((method, "HEAD") if method == "GET" else (method,))


def _segment(segment: str, last: bool, template: str) -> tuple[str, int, str]:
    """(the segment's pattern, its rank: 0 a literal, 1 ``{name}``, 2 ``{name+}``, the parameter's name)."""
    found = _PARAMETER.fullmatch(segment)
    if found is None:
        if "{" in segment or "}" in segment:
            raise ValueError(
                f"route {template!r}: {segment!r} is not a path segment; write a parameter as "
                "{name} (one segment) or {name+} (the rest of the path)"
            )
        return re.escape(segment), 0, ""
    name, greedy = found.groups()
    if not greedy:
        return f"(?P<{name}>[^/]+)", 1, name
    if not last:
        raise ValueError(f"route {template!r}: the greedy {segment} must be the last segment")
    return f"(?P<{name}>.+)", 2, name


def _segments(template: str) -> list[str]:
    if not isinstance(template, str) or not template.startswith("/"):
        raise ValueError(f"route {template!r} must be a path starting with /, e.g. '/orders/{{id}}'")
    path = _trimmed(template)
    return path[1:].split("/") if len(path) > 1 else []


def _compiled(template: str) -> tuple[str, tuple[int, ...], tuple[str, ...]]:
    """(the template's regular expression, its rank for specificity, its parameters' names)."""
    segments = _segments(template)
    last = len(segments) - 1
    parts = [_segment(segment, index == last, template) for index, segment in enumerate(segments)]
    names = tuple(name for _, _, name in parts if name)
    if len(set(names)) != len(names):
        raise ValueError(f"route {template!r} names a parameter twice: give each its own name")
    pattern = "".join(f"/{pattern}" for pattern, _, _ in parts) or "/"
    return pattern, tuple(rank for _, rank, _ in parts), names


def _trimmed(path: str) -> str:
    """``path`` without its trailing ``/`` (``/`` itself stays)."""
    return path[:-1] if len(path) > 1 and path.endswith("/") else path


def _methods(methods: str | Iterable[str]) -> list[str]:
    found = [methods] if isinstance(methods, str) else list(methods)
    upper = [method.upper() for method in found if isinstance(method, str)]
    if not upper or len(upper) != len(found) or not set(upper) <= set(METHODS):
        raise ValueError(f"methods={methods!r}: give one or more of {', '.join(METHODS)}")
    return upper


class Router:
    """Routes requests to functions by method and path; ``api_handler(router)`` is the handler.

    Adding a route costs the same however many there are: the templates are put in order and
    indexed by their first segment once, at the first request after routes were added."""

    __slots__ = ("_static", "_templates", "_by_pattern", "_by_head", "_any_head", "_indexed")

    def __init__(self) -> None:
        self._static: dict[str, Resource] = {}
        self._templates: list[Resource] = []  # in the order they were added
        self._by_pattern: dict[str, Resource] = {}  # each template by its pattern, whatever its names
        self._by_head: dict[str, list[Resource]] = {}  # the templates paths of this first segment may match
        self._any_head: list[Resource] = []  # those whose first segment is a parameter
        self._indexed = True

    def route(self, path: str, methods: str | Iterable[str] = ("GET",), *, model: Any = None) -> Decorator:
        """Route ``methods`` on the ``path`` template to the decorated function, unchanged."""
        names = _methods(methods)
        target = self._resource(path)
        validate = None if model is None else Validator(model)  # a model pydantic cannot build fails here

        def register(function: Handler) -> Handler:
            route = Route(function, validate)
            for method in names:
                target.add(method, route)
            return function

        return register

    def get(self, path: str, *, model: Any = None) -> Decorator:
        return self.route(path, "GET", model=model)

    def post(self, path: str, *, model: Any = None) -> Decorator:
        return self.route(path, "POST", model=model)

    def put(self, path: str, *, model: Any = None) -> Decorator:
        return self.route(path, "PUT", model=model)

    def patch(self, path: str, *, model: Any = None) -> Decorator:
        return self.route(path, "PATCH", model=model)

    def delete(self, path: str, *, model: Any = None) -> Decorator:
        return self.route(path, "DELETE", model=model)

    def head(self, path: str, *, model: Any = None) -> Decorator:
        return self.route(path, "HEAD", model=model)

    def options(self, path: str, *, model: Any = None) -> Decorator:
        return self.route(path, "OPTIONS", model=model)

    def _resource(self, template: str) -> Resource:
        """The ``Resource`` of ``template``, made on first use. Two templates that differ only in
        their parameters' names would be one resource: refused, as API Gateway refuses them."""
        made = Resource(template)
        if not made.names:
            return self._static.setdefault(_trimmed(template), made)
        known = self._by_pattern.setdefault(made.anonymous, made)
        if known is not made:
            if known.names != made.names:
                raise ValueError(
                    f"routes {known.template!r} and {template!r} differ only in their "
                    "parameters' names: name them alike"
                )
            return known
        self._templates.append(made)
        self._indexed = False
        return made

    def _index(self) -> None:
        """The templates in order (the most specific first; stable: equals keep the order they were
        added in), and by their first segment: a path's candidates are the templates of its first
        segment and those whose first segment is a parameter, in that order."""
        any_head: list[Resource] = []
        by_head: dict[str, list[Resource]] = {}
        for resource in sorted(self._templates, key=lambda resource: resource.rank):
            if resource.head is None:
                any_head.append(resource)
                for listed in by_head.values():
                    listed.append(resource)
            elif resource.head in by_head:
                by_head[resource.head].append(resource)
            else:  # the first of its first segment: after the parameters' templates more specific
                by_head[resource.head] = [*any_head, resource]
        self._by_head, self._any_head = by_head, any_head
        self._indexed = True  # last: a request on another thread reads the index whole, or makes its own

    def __call__(self, request: Request, context: LambdaContext | None) -> Any:
        """The route of the most specific resource that matches the path and takes the method."""
        path, method = _trimmed(request.path), request.method
        static = self._static.get(path)
        if static is not None and method in static.methods:
            return _run(static.methods[method], None, request, context)
        for template in self._candidates(path):
            matched = template.regex.fullmatch(path)
            if matched is not None and method in template.methods:
                return _run(template.methods[method], matched, request, context)
        return _unrouted(list(self._matching(path)), request, context)

    def _candidates(self, path: str) -> list[Resource]:
        """The templates ``path`` may match (by its first segment), the most specific first."""
        if not self._indexed:
            self._index()
        return self._by_head.get(path[1:].partition("/")[0], self._any_head)

    def _matching(self, path: str) -> Iterator[tuple[Resource, Any]]:
        """Each resource ``path`` matches, the most specific first, with its template's match."""
        static = self._static.get(path)
        if static is not None:
            yield static, None
        for template in self._candidates(path):
            matched = template.regex.fullmatch(path)
            if matched is not None:
                yield template, matched

    def __repr__(self) -> str:
        resources = [*self._static.values(), *self._templates]
        routes = ", ".join(f"{resource.template} {sorted(resource.methods)}" for resource in resources)
        return f"Router({routes})"


def _run(route: Route, matched: Any, request: Request, context: LambdaContext | None) -> Any:
    """``route``'s function called, its template's parameters (percent-decoded) put in
    ``request.path_params``, the body validated into ``request.model`` when the route has a model."""
    if matched is not None:
        found = matched.groupdict()
        if "%" in request.path:
            found = {name: unquote(value) for name, value in found.items()}
        request.path_params = {**request.path_params, **found}
    if route.validate is not None:
        request.model = validated(route.validate, request)
    return route.function(request, context)


def _unrouted(seen: list[tuple[Resource, Any]], request: Request, context: LambdaContext | None) -> Any:
    """No route for the method on the resources that match (``seen``): 404 when none does; HEAD as
    the first GET without the body; OPTIONS 204; else 405. ``Allow`` names every method they take."""
    if not seen:
        raise HTTPError(404, "Not Found")
    gets = [(resource.methods["GET"], matched) for resource, matched in seen if "GET" in resource.methods]
    if request.method == "HEAD" and gets:  # the response goes without its body (response.py)
        return _run(*gets[0], request, context)
    allow = ", ".join(sorted(set().union(*(resource.allowed for resource, _ in seen))))
    if request.method == "OPTIONS":
        return {"statusCode": 204, "headers": {"Allow": allow}}
    raise HTTPError(405, "Method Not Allowed", headers={"Allow": allow})
