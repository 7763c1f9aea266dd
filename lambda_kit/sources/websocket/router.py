"""``WebSocketRouter``: one function behind many route keys of a WebSocket API.

    router = WebSocketRouter()

    @router.route("$connect")
    def connect(message, context): ...

    @router.route("sendMessage")
    def send_message(message, context): ...

    handler = websocket_handler(router)

A message goes to the function of its route key; a custom route key no function has goes to the
``$default`` function, as API Gateway routes it (``$connect`` and ``$disconnect`` never do); with
none, the message fails (a 500, its ERROR line naming the route keys there are). Route functions
may be ``async def``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ...context import LambdaContext

F = TypeVar("F", bound=Callable[..., Any])
NEVER_DEFAULT = ("$connect", "$disconnect")


class WebSocketRouter:
    def __init__(self) -> None:
        self.routes: dict[str, Callable[..., Any]] = {}

    def route(self, route_key: str) -> Callable[[F], F]:
        """Register the function of ``route_key`` (``$connect``, ``$disconnect``, ``$default`` or a
        custom route key); each route key has one function."""
        if not isinstance(route_key, str) or not route_key:
            raise ValueError(f"WebSocketRouter.route: a route key is non-empty text, not {route_key!r}")

        def register(function: F) -> F:
            if route_key in self.routes:
                raise ValueError(f"WebSocketRouter: route key {route_key!r} has a function already")
            if inspect.isgeneratorfunction(function) or inspect.isasyncgenfunction(function):
                raise TypeError(f"WebSocketRouter: the function of {route_key!r} is a generator function")
            self.routes[route_key] = function
            return function

        return register

    def __call__(self, message: Any, context: LambdaContext | None) -> Any:
        key = message.route_key
        function = self.routes.get(key)
        if function is None and key not in NEVER_DEFAULT:
            function = self.routes.get("$default")
        if function is None:
            known = ", ".join(sorted(self.routes)) or "none"
            raise LookupError(f"no function for route key {key[:128]!r} (route keys: {known})")
        return function(message, context)
