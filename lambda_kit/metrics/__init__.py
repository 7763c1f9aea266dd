"""Metrics: each function's counts per invocation, to Datadog, to CloudWatch (EMF), or both; and
your own metrics on CloudWatch with ``add``.

The decorators' counts are off unless ``metrics=`` turns them on: ``True`` or ``"datadog"``
(DogStatsD counters), ``"emf"`` (one Embedded Metric Format document per invocation, dimensions
``function_name`` and ``source``), or ``["datadog", "emf"]``; ``LAMBDA_KIT_METRICS`` (``1``,
``datadog``, ``emf``, ``datadog,emf``) sets it for every decorator not given ``metrics=``.

``add(name, value, unit="None", dimensions=..., namespace=..., resolution="standard")`` records
one value of your own metric; the invocation's values are written as EMF documents when the
decorated function's invocation ends (``flush()`` writes them at once, outside a decorator).

Nothing heavy is imported here: the DogStatsD client (``datadog``, ~100 ms) on the first send,
the EMF writer (``emf``) on the first metric.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from importlib import import_module
from typing import Any, NamedTuple

from .. import log
from ..errors import GroupHeldBack

__all__ = ["Counts", "add", "flush"]

BACKENDS = ("datadog", "emf")
Backends = frozenset[str]
OFF: Backends = frozenset()
_ON_WORDS = {"1": "datadog", "true": "datadog", "yes": "datadog", "datadog": "datadog", "emf": "emf"}


class Counts(NamedTuple):
    """One invocation's counts. A batch: records ``processed``, ``failed`` (``held_back`` among
    them: not run, an earlier record of their group failed), ``retried`` (redeliveries); a
    request: ``status_class`` (``"2xx"``, ``"4xx"``, ``"5xx"``), a 5xx counted failed, any other
    processed; an event no adapter recognizes: ``refused`` (one failed record)."""

    processed: int = 0
    failed: int = 0
    retried: int = 0
    held_back: int = 0
    refused: int = 0
    status_class: str | None = None


def batch_counts(outcome: Any) -> Counts:
    """The counts of a batch's ``Outcome``."""
    failures = outcome.failures
    return Counts(
        processed=outcome.processed,
        failed=len(failures),
        retried=outcome.retried,
        held_back=sum(type(error) is GroupHeldBack for _, error in failures),
    )


def counts_of(outcome: Any) -> Counts:
    """An invocation's counts: a request's (its ``Outcome`` holds the status it answered) or a
    batch's."""
    if outcome.status is not None:
        return request_counts(outcome.status, bool(outcome.failures))
    return batch_counts(outcome)


def request_counts(status: int, failed: bool) -> Counts:
    """The counts of one request answered with ``status``; ``failed``: the function failed with a
    server error (a 5xx it returned itself is an answer, processed)."""
    return Counts(processed=int(not failed), failed=int(failed), status_class=f"{status // 100}xx")


def checked(decorator: str, option: Any) -> Backends | None:
    """A decorator's ``metrics=``, checked when the function is decorated: None (the environment
    decides), or the backends it turns on."""
    if option is None:
        return None
    if option is True or option is False:
        return frozenset(["datadog"]) if option else OFF
    names = [option] if isinstance(option, str) else option
    if isinstance(names, Iterable) and all(name in BACKENDS for name in names):
        return frozenset(names)
    raise ValueError(
        f"{decorator}: metrics must be True, False, None, 'datadog', 'emf' or a list of those, not {option!r}"
    )


def from_environment(value: str) -> Backends:
    """``LAMBDA_KIT_METRICS``: 1/true/yes/datadog and emf, comma-separated; other words turn nothing on."""
    words = (word.strip().lower() for word in value.split(","))
    return frozenset(_ON_WORDS[word] for word in words if word in _ON_WORDS)


def enabled(option: Any) -> Backends:
    """The backends an invocation's counts go to (empty: none): ``option`` as ``checked`` made it
    (or a bare bool), else ``LAMBDA_KIT_METRICS``."""
    if option is None:
        value = os.environ.get("LAMBDA_KIT_METRICS")
        return from_environment(value) if value else OFF
    if option is True or option is False:
        return frozenset(["datadog"]) if option else OFF
    return option  # type: ignore[no-any-return]


def count(function_name: str | None, source: str, counts: Counts, backends: Backends) -> None:
    """Write one invocation's counts to ``backends``; a metrics failure never fails the function
    (one WARNING line says why)."""
    for backend in sorted(backends):
        try:
            # each backend's module is loaded with its first send (datadog.py imports datadog: ~100 ms)
            import_module(f"{__name__}.{backend}").write_counts(function_name, source, counts)
        except Exception as exc:  # metrics are best-effort by design
            log.emit("WARN", "could not send metrics", None, {"error": log.clean(log.safe_str(exc))})


_batch: Any = None  # the user's metrics of this invocation (an emf.Batch), made on the first add


def add(
    name: str,
    value: float,
    unit: str = "None",
    *,
    dimensions: dict[str, str] | None = None,
    namespace: str | None = None,
    resolution: str | int = "standard",
) -> None:
    """Record one value of metric ``name`` (``unit``: a CloudWatch unit such as ``"Count"``,
    ``"Milliseconds"``); ``dimensions``: up to 30 names and values; ``namespace``: default
    ``LAMBDA_KIT_METRICS_NAMESPACE``, else ``lambda_kit``; ``resolution``: ``"standard"`` (60 s)
    or ``"high"`` (1 s). A mistake raises ``ValueError`` naming it. The values are written with
    the invocation's end (``flush``)."""
    global _batch
    if _batch is None:
        _batch = _emf().Batch()
    _batch.add(name, value, unit, dimensions, namespace, resolution)


def flush() -> None:
    """Write the metrics added since the last flush as EMF documents (the decorators call it when
    an invocation ends)."""
    if _batch is None or not _batch.groups:
        return
    documents = _batch.documents()
    _batch.clear()
    _emf().write(documents)


def _emf() -> Any:
    from . import emf  # the EMF writer: loaded with the first metric

    return emf
