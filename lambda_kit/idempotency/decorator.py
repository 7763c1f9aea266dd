"""``@idempotent``: a function that runs once per key, whoever calls it and however often.

The first call with a key claims it (an entry in progress until the invocation's deadline), runs
the function, and stores its result with the entry marked completed. A later call with the same key
gets the stored result without running the function, until the entry expires (``expires_after``);
one made while the first still runs raises :class:`AlreadyInProgress` (under a batch decorator
that record fails alone and comes back; an API answers 409). A call that raises deletes its claim,
so the next delivery runs at once; one killed mid-call leaves its claim until its own deadline.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import Any, TypeVar

from .. import log
from ..counters.retry import Backoff
from ..trace import current_record
from .batch import defer, waiting_result
from .errors import AlreadyInProgress, IdempotencyError, PayloadMismatch
from .keys import KeySpec, fingerprint, fingerprint_reader, key_digest, key_reader
from .results import restore, store
from .table import COMPLETED, Claim, Completion, Entry, Table, entry_pk
from .writes import Writes, close_writes, open_writes

F = TypeVar("F", bound=Callable[..., Any])
Validate = bool | str | Sequence[str] | Callable[[Any], Any] | None

DEFAULT_EXPIRES_AFTER = timedelta(hours=1)
NO_CONTEXT_IN_PROGRESS = timedelta(minutes=15)
"""How long a claim lasts when the call has no Lambda context to read its deadline from: Lambda's
longest timeout, so no invocation outlives it."""


def _positive(option: str, value: object) -> timedelta:
    if not isinstance(value, timedelta) or value <= timedelta(0):
        raise TypeError(f"@idempotent: {option}= must be a positive timedelta, not {value!r}")
    return value


def _table_name(table: object) -> str:
    if not isinstance(table, str) or not table:
        raise TypeError(f"@idempotent: table= must name a DynamoDB table (a non-empty str), not {table!r}")
    return table


def _context_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The Lambda context among a call's arguments (what has ``get_remaining_time_in_millis``)."""
    for value in (*args, *kwargs.values()):
        if callable(getattr(value, "get_remaining_time_in_millis", None)):
            return value
    return None


def _request_id(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """The invocation's request id, from the Lambda context among the call's arguments."""
    request_id = getattr(_context_of(args, kwargs), "aws_request_id", None)
    return request_id if isinstance(request_id, str) else None


def _position(function: Any, argument: str | None) -> int:
    """Where the payload is among the positional arguments: the first, or ``argument``'s place."""
    if argument is None:
        return 0
    parameters = list(inspect.signature(function).parameters)
    if argument not in parameters:
        raise TypeError(
            f"@idempotent(argument={argument!r}): {function.__qualname__} has no such parameter "
            f"(it takes {', '.join(parameters) or 'none'})"
        )
    return parameters.index(argument)


class Idempotent:
    """What one ``@idempotent(...)`` was given, checked when the function is decorated."""

    def __init__(
        self,
        function: Any,
        *,
        key: KeySpec,
        table: str,
        expires_after: timedelta,
        validate: Validate,
        name: str | None,
        argument: str | None,
        in_progress_expires_after: timedelta,
        at_commit: bool,
        client: Any,
        backoff: Backoff | None,
    ) -> None:
        self.function_name = getattr(function, "__qualname__", repr(function))
        self.name = name or f"{function.__module__}.{self.function_name}"
        self.key = key_reader(key)
        self.fingerprint = fingerprint_reader(validate)
        self.argument = argument
        self.position = _position(function, argument)
        self.without_context = _positive("in_progress_expires_after", in_progress_expires_after)
        self.at_commit = bool(at_commit)
        self.table = Table(_table_name(table), client, backoff, _positive("expires_after", expires_after))

    def payload(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self.argument is not None and self.argument in kwargs:
            return kwargs[self.argument]
        if len(args) > self.position:
            return args[self.position]
        raise IdempotencyError(
            f"{self.function_name} was called without its payload (argument "
            f"{self.argument or 'number 1'}): the idempotency key is read from it"
        )

    def until_ms(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
        """The claim's deadline: the invocation's (its context's remaining time), else the fallback."""
        now_ms = int(time.time() * 1000)
        context = _context_of(args, kwargs)
        if context is not None:
            return now_ms + max(0, int(context.get_remaining_time_in_millis()))
        return now_ms + int(self.without_context.total_seconds() * 1000)

    def begin(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Claim | None, Any]:
        """``(claim, None)`` for a call to run, or ``(None, stored result)`` for a completed duplicate."""
        payload = self.payload(args, kwargs)
        pk = entry_pk(self.name, key_digest(self.key, payload))
        compared = fingerprint(self.fingerprint, payload)
        found = self.table.claim(pk, compared, self.until_ms(args, kwargs))
        if isinstance(found, Claim):
            return found, None
        return None, self.answer(found, compared)

    def answer(self, entry: Entry, compared: str | None) -> Any:
        """What a call gets from an entry another call holds: its stored result, or an error."""
        if compared is not None and entry.fingerprint is not None and entry.fingerprint != compared:
            raise PayloadMismatch(
                f"the idempotency key of this {self.function_name} call was used before with another "
                "payload: no stored result is given for it"
            )
        stored = entry.result if entry.status == COMPLETED else waiting_result(entry.owner)
        if stored is None:
            raise AlreadyInProgress(
                f"another {self.function_name} call with this idempotency key is in progress "
                f"(until its deadline, {max(0, entry.until_ms - int(time.time() * 1000))} ms from now)"
            )
        record = current_record()
        if record is not None:
            record.outcome = "duplicate"
        return restore(stored)

    def finish(self, claim: Claim, result: Any, writes: Writes, invocation: str | None = None) -> None:
        """Store the result: with the call's writes in one transaction, or alone."""
        stored = store(result, self.function_name)
        if writes.actions:
            completion = Completion(claim, stored, writes.actions)
            if self.at_commit:
                defer(self.table, completion, invocation)
                return
            for _completion, error in self.table.complete_together([completion]):
                raise error
        elif not self.table.complete(claim, stored):
            log.emit(
                "WARN",
                "an idempotent call outlived its deadline and another call claimed its key: both ran",
                fields={"function": self.function_name, "table": self.table.name},
            )

    @contextmanager
    def running(self, claim: Claim) -> Iterator[Writes]:
        """The call's writes, current while it runs; its claim released if it raises."""
        writes, token = open_writes()
        try:
            yield writes
        except BaseException:
            self.table.release(claim)
            raise
        finally:
            close_writes(token)

    def run(self, function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        claim, answer = self.begin(args, kwargs)
        if claim is None:
            return answer
        with self.running(claim) as writes:
            result = function(*args, **kwargs)
            self.finish(claim, result, writes, _request_id(args, kwargs))
        return result

    async def run_async(
        self, function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """As ``run``; the table's calls go to a thread, so the event loop runs other records meanwhile."""
        import asyncio  # 30+ ms to import: only for async def functions

        claim, answer = await asyncio.to_thread(self.begin, args, kwargs)
        if claim is None:
            return answer
        with self.running(claim) as writes:
            result = await function(*args, **kwargs)
            await asyncio.to_thread(self.finish, claim, result, writes, _request_id(args, kwargs))
        return result


def idempotent(
    *,
    key: KeySpec,
    table: str,
    expires_after: timedelta = DEFAULT_EXPIRES_AFTER,
    validate: Validate = None,
    name: str | None = None,
    argument: str | None = None,
    in_progress_expires_after: timedelta = NO_CONTEXT_IN_PROGRESS,
    at_commit: bool = False,
    client: Any = None,
    backoff: Backoff | None = None,
) -> Callable[[F], F]:
    """Run the decorated function once per key (the module's docstring says how).

    ``key``: field names of the payload (``"order_id"``, ``"customer.id"``, several for a composite
    key) or a function of it (``header()`` for an API's ``Idempotency-Key``). ``table``: the
    DynamoDB table (``PK``/``SK`` strings, TTL on ``ttl``). ``expires_after``: how long a completed
    result is kept. ``validate``: what must match for a duplicate to get the stored result (True:
    the whole payload; field names; a function of the payload); a mismatch raises
    :class:`PayloadMismatch`. ``name``: the entries' name (default: the function's module and
    qualified name; give one to keep the entries when the function moves). ``argument``: the
    parameter holding the payload (default: the first). ``in_progress_expires_after``: how long a
    claim lasts when no Lambda context is among the call's arguments. ``at_commit``: a call's writes
    and completed entry wait for the batch's commit (``commit=complete_batch``), which sends the
    whole batch's in as few transactions as they pack into. ``client``, ``backoff``: the
    boto3 DynamoDB client (default: created on first use) and the retry policy.
    """

    def decorate(function: F) -> F:
        if inspect.isgeneratorfunction(function) or inspect.isasyncgenfunction(function):
            raise TypeError(f"@idempotent cannot wrap generator function {function.__qualname__!r}")
        config = Idempotent(
            function,
            key=key,
            table=table,
            expires_after=expires_after,
            validate=validate,
            name=name,
            argument=argument,
            in_progress_expires_after=in_progress_expires_after,
            at_commit=at_commit,
            client=client,
            backoff=backoff,
        )
        if inspect.iscoroutinefunction(function):

            async def wrapper(*args: Any, **kwargs: Any) -> Any:
                return await config.run_async(function, args, kwargs)

        else:

            def wrapper(*args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
                return config.run(function, args, kwargs)

        wrapper = _marked(wrapper, function, config)
        return wrapper  # type: ignore[return-value]

    return decorate


def _marked(wrapper: Any, function: Any, config: Idempotent) -> Any:
    """``wrapper`` with ``function``'s metadata, and what ``lambda-kit check`` reads."""
    functools.update_wrapper(wrapper, function)
    wrapper.__lambda_kit_idempotency__ = {
        "table": config.table.name,
        "name": config.name,
        "at_commit": config.at_commit,
    }
    return wrapper
