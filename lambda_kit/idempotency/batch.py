"""A batch's idempotent calls completed together, in the batch's commit, as the counters count a batch.

With ``@idempotent(..., at_commit=True)`` under a batch decorator given ``commit=complete_batch``
(or a commit that calls it), a call that added writes does not send its transaction when it
returns: its writes and completed entry wait for the commit, which sends every record's in as few
transactions as they pack into (100 actions each; a call's actions are never split), and reports
the records whose claim was lost or whose write was refused (they fail alone and come back). A call
without writes completes at once, with one ``PutItem``: in a transaction its entry would cost twice
the write units.

Lambda runs one invocation at a time in a process, so the calls waiting are this invocation's: the
commit takes them all, and releases the claims of records it was not given (they failed after
their function returned).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from .. import log
from ..trace import current_record
from .errors import IdempotencyError

if TYPE_CHECKING:
    from .results import Stored
    from .table import Completion, Table

_waiting: list[tuple[Table, Completion]] = []
_lock = threading.Lock()


def defer(table: Table, completion: Completion, invocation: str | None) -> None:
    """Keep ``completion`` for the batch's commit (``complete_batch``). Calls still waiting from
    another invocation (``invocation``: its request id) were never completed: their claims are
    released and one ERROR line says so (``lambda-kit check`` reports the usual cause, a decorator
    without ``commit=complete_batch``)."""
    record = current_record()
    if record is None:
        raise IdempotencyError(
            "@idempotent(at_commit=True) completes calls in a batch decorator's commit: this call runs "
            "for no record (drop at_commit, or decorate the record's function)"
        )
    completion.record, completion.invocation = record, invocation
    with _lock:
        stale = [entry for entry in _waiting if entry[1].invocation != invocation]
        _waiting[:] = [entry for entry in _waiting if entry[1].invocation == invocation]
        _waiting.append((table, completion))
    for table_, waiting in stale:
        table_.release(waiting.claim)
    if stale:
        log.emit(
            "ERROR",
            "idempotent calls of an earlier invocation were never completed: their writes were not made",
            fields={
                "calls": len(stale),
                "fix": "give the batch decorator commit=complete_batch (or call it from your commit)",
                "trace_ids": [waiting.record.trace_id for _, waiting in stale[:20]],
            },
        )


def waiting_result(owner: str | None) -> Stored | None:
    """The result of this invocation's call that holds claim ``owner`` and waits for the commit: a
    record of the same batch with the same key is its duplicate (if the commit fails that call, its
    record comes back and runs again)."""
    with _lock:
        return next((c.stored for _, c in _waiting if c.claim.owner == owner), None)


def complete_batch(results: list[tuple[Any, Any]]) -> list[Any]:
    """A batch decorator's ``commit``: complete the calls of the records the function accepted;
    returns the records that fail (their claim lost, a write refused), each with one WARNING line."""
    with _lock:
        waiting = list(_waiting)
        _waiting.clear()
    accepted = {id(record) for record, _ in results}
    by_table: dict[int, tuple[Table, list[Completion]]] = {}
    for table, completion in waiting:
        if id(completion.record) in accepted:
            by_table.setdefault(id(table), (table, []))[1].append(completion)
        else:
            table.release(completion.claim)
    failed = []
    for table, completions in by_table.values():
        try:
            refused = table.complete_together(completions)
        except BaseException:
            # the commit fails them all; a release never deletes a completed entry (some may be)
            for completion in completions:
                table.release(completion.claim)
            raise
        for completion, error in refused:
            table.release(completion.claim)  # the next delivery runs at once (a lost claim is not ours)
            log.emit(
                "WARN",
                "idempotent call not completed at commit",
                completion.record.trace_id,
                {"error_type": type(error).__name__, "error": log.clean(str(error))},
            )
            failed.append(completion.record)
    return failed
