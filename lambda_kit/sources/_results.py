"""For the sources whose response carries each record's result (``Source.keeps_results``:
Firehose, S3 Batch Operations): the function wrapped so its result is converted to what the
response holds inside the record's own path, where a result that cannot be one fails that record
alone, with its ERROR line (never the whole response, after the fact)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..errors import BatchResponseReturned

if TYPE_CHECKING:
    from ..context import LambdaContext

Convert = Callable[[Any], Any]


def checked(convert: Convert, result: Any) -> Any:
    """``convert(result)``; a Lambda batch response returned per record fails the record."""
    if isinstance(result, dict) and "batchItemFailures" in result:
        raise BatchResponseReturned()
    return convert(result)


def converting(
    function: Callable[[Any, Any], Any], is_async: bool, convert: Convert
) -> Callable[[Any, Any], Any]:
    """``function`` whose result (awaited, for an ``async def`` or an awaitable it hands back) goes
    through ``convert`` (``checked``)."""
    if is_async:

        async def call_async(payload: Any, context: LambdaContext | None) -> Any:
            return checked(convert, await function(payload, context))

        return call_async

    async def awaited(result: Awaitable[Any]) -> Any:
        return checked(convert, await result)

    def call(payload: Any, context: LambdaContext | None) -> Any:
        result = function(payload, context)
        if result is not None and isinstance(result, Awaitable):
            return awaited(result)
        return checked(convert, result)

    return call
