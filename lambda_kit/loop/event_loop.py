"""The event loop that runs ``async def`` functions: one per thread, reused across warm invocations.

Lambda calls a handler synchronously, so lambda_kit drives a loop of its own for the length of an
invocation (``run``), and keeps it between invocations: clients a function creates on it (an
``aiohttp`` session, an ``aioboto3`` client) stay usable while the execution environment is warm.
Not ``asyncio.run``, which closes its loop after each call. A handler called from code that is
already running a loop in this thread cannot block on another: that is an error, raised before
anything runs, never records acknowledged unprocessed. ``asyncio`` is imported only here, and this
module only when a function is asynchronous (cold start).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_local = threading.local()  # the local stack may serve several functions at once, in threads


def event_loop() -> asyncio.AbstractEventLoop:
    """This thread's loop: created on first use, recreated if something closed it."""
    loop: asyncio.AbstractEventLoop | None = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = _local.loop = asyncio.new_event_loop()
    return loop


class LoopAlreadyRunning(RuntimeError):
    """The handler was called from inside a running event loop, where it cannot wait for its own."""


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to completion on this thread's loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        running = False
    else:
        running = True
    if not running:  # outside the except block: a failure of the function chains nothing of ours
        return event_loop().run_until_complete(coroutine)
    coroutine.close()  # never started: no "was never awaited" warning, the error says it
    raise LoopAlreadyRunning(
        "a lambda_kit handler was called from inside a running event loop, where it cannot run its "
        "async function: call the handler from synchronous code (as Lambda does), or in a thread "
        "(await asyncio.to_thread(handler, event, context))"
    )


def awaited(awaitable: Awaitable[T]) -> T:
    """The result of an awaitable a plain function returned (a coroutine, a future), run to the
    end on this thread's loop."""
    return run(awaitable if isinstance(awaitable, Coroutine) else wait(awaitable))


async def wait(awaitable: Awaitable[T]) -> T:
    """``awaitable`` as a coroutine (a future or any awaitable, awaited)."""
    return await awaitable
