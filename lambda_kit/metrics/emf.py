"""CloudWatch Embedded Metric Format: metrics as log lines that CloudWatch Logs turns into metrics.

A document is one JSON object on one line (the writer of every lambda_kit line writes it, so the
local stack's log file has it too), with no other field around it: CloudWatch parses the whole
line. Its ``_aws`` member names the namespace, the dimension set and each metric's unit and storage
resolution; the dimensions' values and the metrics' values are members of the root::

    {"_aws": {"Timestamp": 1700000000000, "CloudWatchMetrics": [{"Namespace": "lambda_kit",
      "Dimensions": [["function_name", "source"]], "Metrics": [{"Name": "RecordsProcessed",
      "Unit": "Count"}]}]}, "function_name": "orders", "source": "sqs", "RecordsProcessed": 3}

The specification's limits are kept: at most 100 metrics in a document, 100 values for a metric
(an array), 30 dimensions in a dimension set; beyond the first two, the values go in several
documents, and every document stays under the writer's 64 KiB bound. A dimension set of more than
30 is refused when the metric is added: a metric's identity is its whole dimension set, so it
cannot be split.
"""

from __future__ import annotations

import math
import os
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import codec
from ..log import line

if TYPE_CHECKING:
    from . import Counts

MAX_METRICS = 100
MAX_VALUES = 100
MAX_DIMENSIONS = 30
MAX_NAME_CHARS = 255
MAX_DIMENSION_NAME_CHARS = 250
MAX_DIMENSION_VALUE_CHARS = 1024
MAX_DOCUMENT_BYTES = line.MAX_LINE_CHARS - 1024
"""A document is cut into several before the writer would cut it (the line bound, less a margin)."""

DEFAULT_NAMESPACE = "lambda_kit"
NAMESPACE = re.compile(r"[a-zA-Z0-9._#:/-]{1,255}")
UNITS = frozenset(
    (
        "Seconds Microseconds Milliseconds Bytes Kilobytes Megabytes Gigabytes Terabytes Bits Kilobits "
        "Megabits Gigabits Terabits Percent Count Bytes/Second Kilobytes/Second Megabytes/Second "
        "Gigabytes/Second Terabytes/Second Bits/Second Kilobits/Second Megabits/Second Gigabits/Second "
        "Terabits/Second Count/Second None"
    ).split()
)
"""CloudWatch's units (``MetricDatum.Unit``), as the EMF specification lists them."""
RESOLUTIONS = {"standard": 60, "high": 1, 60: 60, 1: 1}
"""``standard`` (one value a minute kept) or ``high`` (one a second)."""


def namespace(given: str | None = None) -> str:
    """``given``, else ``LAMBDA_KIT_METRICS_NAMESPACE``, else ``lambda_kit``; checked."""
    chosen = (
        given if given is not None else os.environ.get("LAMBDA_KIT_METRICS_NAMESPACE") or DEFAULT_NAMESPACE
    )
    if not isinstance(chosen, str) or not NAMESPACE.fullmatch(chosen):
        raise ValueError(
            f"metrics namespace {chosen!r} must be 1-255 characters of letters, digits and . _ # : / -"
        )
    return chosen


def _name(name: object) -> str:
    if not isinstance(name, str) or not 1 <= len(name) <= MAX_NAME_CHARS or name == "_aws":
        raise ValueError(f"metric name {name!r} must be a str of 1-{MAX_NAME_CHARS} characters (not _aws)")
    return name


def _value(name: str, value: object) -> float | int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"metric {name!r}: value {value!r} must be a finite int or float")
    return value


def _unit(name: str, unit: object) -> str:
    if unit not in UNITS:
        raise ValueError(
            f"metric {name!r}: unit {unit!r} is not a CloudWatch unit (Count, Milliseconds, ...)"
        )
    return unit  # type: ignore[return-value]


def _resolution(name: str, resolution: object) -> int:
    if isinstance(resolution, bool) or not isinstance(resolution, str | int) or resolution not in RESOLUTIONS:
        raise ValueError(f"metric {name!r}: resolution {resolution!r} must be 'standard' (60) or 'high' (1)")
    return RESOLUTIONS[resolution]


def dimension_set(dimensions: object) -> tuple[tuple[str, str], ...]:
    """``dimensions`` (name -> value, both text) as a checked, ordered set."""
    if dimensions is None:
        return ()
    if not isinstance(dimensions, dict):
        raise ValueError(f"metric dimensions must be a dict of str to str, not {type(dimensions).__name__}")
    if len(dimensions) > MAX_DIMENSIONS:
        raise ValueError(
            f"a metric takes at most {MAX_DIMENSIONS} dimensions, not {len(dimensions)} (CloudWatch's limit; "
            "its identity is its whole dimension set, so it cannot be split)"
        )
    for key, value in dimensions.items():
        if not isinstance(key, str) or not 1 <= len(key) <= MAX_DIMENSION_NAME_CHARS or key == "_aws":
            raise ValueError(
                f"dimension name {key!r} must be a str of 1-{MAX_DIMENSION_NAME_CHARS} characters"
            )
        if not isinstance(value, str) or not 1 <= len(value) <= MAX_DIMENSION_VALUE_CHARS:
            raise ValueError(
                f"dimension {key!r}: value {value!r:.80} must be a str of 1-{MAX_DIMENSION_VALUE_CHARS} "
                "characters"
            )
    return tuple(dimensions.items())


@dataclass
class Metric:
    unit: str
    resolution: int
    values: list[float | int] = field(default_factory=list)

    def definition(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = {"Name": name, "Unit": self.unit}
        if self.resolution == 1:
            found["StorageResolution"] = 1
        return found


Group = tuple[str, tuple[tuple[str, str], ...]]
"""What one document's metrics share: the namespace and the dimension set (with its values)."""


class Batch:
    """The metrics of one invocation, by namespace and dimension set, until written."""

    def __init__(self) -> None:
        self.groups: dict[Group, dict[str, Metric]] = {}

    def add(
        self, name: str, value: float, unit: str, dimensions: Any, namespace_: str | None, resolution: Any
    ) -> None:
        """One value of a metric (checked: a mistake raises ``ValueError`` naming it)."""
        name = _name(name)
        value = _value(name, value)
        unit, resolution = _unit(name, unit), _resolution(name, resolution)
        dimensions = dimension_set(dimensions)
        if any(key == name for key, _ in dimensions):
            raise ValueError(f"metric {name!r} cannot also be one of its dimensions")
        metrics = self.groups.setdefault((namespace(namespace_), dimensions), {})
        metric = metrics.setdefault(name, Metric(unit, resolution))
        if (metric.unit, metric.resolution) != (unit, resolution):
            raise ValueError(
                f"metric {name!r} was added with unit {metric.unit} and resolution {metric.resolution} s in "
                f"this invocation, now with {unit} and {resolution} s: one metric has one of each"
            )
        metric.values.append(value)

    def documents(self, timestamp_ms: int | None = None) -> list[dict[str, Any]]:
        """Every document the batch makes, each within EMF's limits and the line bound."""
        stamp = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
        return [
            document
            for (space, dimensions), metrics in self.groups.items()
            for document in group_documents(space, dimensions, metrics, stamp)
        ]

    def clear(self) -> None:
        self.groups = {}


def _size(value: Any) -> int:
    return len(codec.dumps(value).encode("utf-8"))


class _Document:
    """A document being filled, and its size so far in bytes."""

    def __init__(self, space: str, dimensions: tuple[tuple[str, str], ...], stamp: int) -> None:
        directive = {"Namespace": space, "Dimensions": [[key for key, _ in dimensions]], "Metrics": []}
        self.body: dict[str, Any] = {"_aws": {"Timestamp": stamp, "CloudWatchMetrics": [directive]}}
        self.body.update(dimensions)
        self.definitions: list[dict[str, Any]] = directive["Metrics"]  # type: ignore[assignment]
        self.size = _size(self.body)

    def fits(self, name: str, cost: int) -> bool:
        return (
            name not in self.body
            and len(self.definitions) < MAX_METRICS
            and self.size + cost <= MAX_DOCUMENT_BYTES
        )

    def put(self, name: str, metric: Metric, value: Any, cost: int) -> None:
        self.definitions.append(metric.definition(name))
        self.body[name] = value
        self.size += cost


def group_documents(
    space: str, dimensions: tuple[tuple[str, str], ...], metrics: dict[str, Metric], stamp: int
) -> list[dict[str, Any]]:
    """The documents of one namespace and dimension set: each metric's values 100 at a time, each
    piece in the first document with room that does not hold that metric yet."""
    documents: list[_Document] = []
    for name, metric in metrics.items():
        for at in range(0, len(metric.values), MAX_VALUES):
            piece = metric.values[at : at + MAX_VALUES]
            value: Any = piece[0] if len(piece) == 1 else piece
            cost = _size(value) + _size(metric.definition(name)) + 2 * len(name) + 8
            document = next((doc for doc in documents if doc.fits(name, cost)), None)
            if document is None:
                document = _Document(space, dimensions, stamp)
                documents.append(document)
            document.put(name, metric, value, cost)
    return [document.body for document in documents]


def write(documents: list[dict[str, Any]]) -> None:
    """Each document as one line, through the writer of every lambda_kit line."""
    for document in documents:
        line.write(document)


_cold = True
"""No counts document was written by this process yet: the next one is its cold start's."""


def counts_metrics(counts: Counts) -> dict[str, int]:
    """The metrics of one invocation's counts (each ``Count``)."""
    if counts.refused:
        return {"EventsRefused": counts.refused}
    if counts.status_class is not None:
        return {f"Requests{status}": int(counts.status_class == status) for status in ("2xx", "4xx", "5xx")}
    return {
        "RecordsProcessed": counts.processed,
        "RecordsFailed": counts.failed,
        "RecordsRetried": counts.retried,
        "RecordsHeldBack": counts.held_back,
    }


def counts_document(function_name: str | None, source: str, counts: Counts, cold: bool) -> dict[str, Any]:
    """The one document of an invocation's counts: dimensions ``function_name`` and ``source``,
    ``ColdStart`` 1 in the first invocation of a process."""
    values = counts_metrics(counts)
    if cold:
        values["ColdStart"] = 1
    dimensions = (("function_name", function_name or "unknown"), ("source", source))
    metrics = {name: Metric("Count", 60, [value]) for name, value in values.items()}
    [document] = group_documents(namespace(), dimensions, metrics, int(time.time() * 1000))
    return document


def write_counts(function_name: str | None, source: str, counts: Counts) -> None:
    global _cold
    cold, _cold = _cold, False
    line.write(counts_document(function_name, source, counts, cold))
