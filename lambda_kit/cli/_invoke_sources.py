"""What ``lambda-kit invoke`` knows of the sources that answer per record or per request beyond
HTTP: an authorizer's event in the shape its wiring gives it, and the failures a Firehose or S3
Batch Operations response reports without raising.

``--event authorizer`` sends the shape of the first event that names the function as its
authorizer (an ``http`` event's ``type: token`` or ``request``, an ``httpApi`` authorizer's
payload version, a ``websocket`` ``$connect``), for that route's method and path; ``--body`` is the
token. With no such event, an HTTP API payload 2.0 request.
"""

from __future__ import annotations

from typing import Any

from .._data import mapping
from ..local.authorizers import named_authorizers
from ..local.config import FunctionConfig, ServiceConfig


def event_options(kind: str, config: ServiceConfig, function: FunctionConfig) -> dict[str, Any]:
    """The ``lambda_kit.testing`` options of an event of ``kind`` for ``function`` (none but for
    an authorizer)."""
    if kind != "authorizer":
        return {}
    for _, event, name, settings in named_authorizers(config):
        if name not in (function.key, function.name):
            continue
        spec = event.spec
        path = "/" + str(spec.get("path", "")).lstrip("/") if spec.get("path") not in (None, "*") else "/"
        method = str(spec.get("method", "GET")).upper().replace("*", "GET").replace("ANY", "GET")
        if event.kind == "websocket":
            return {"shape": "websocket"}
        if event.kind == "httpApi":
            version = str(settings.get("payloadVersion", "2.0"))
            return {"shape": "http-1.0" if version == "1.0" else "http-2.0", "method": method, "path": path}
        shape = "rest-request" if str(settings.get("type", "token")).lower() == "request" else "rest-token"
        return {"shape": shape, "method": method, "path": path}
    return {}


def answered_failure(response: Any) -> str | None:
    """The failures a response answers instead of raising: Firehose records ``ProcessingFailed``, an
    S3 Batch Operations task not ``Succeeded``; None for any other response."""
    found = mapping(response)
    records, results = found.get("records"), found.get("results")
    if isinstance(records, list) and records and all("recordId" in mapping(r) for r in records):
        return _firehose_failures(records)
    if "invocationSchemaVersion" in found and isinstance(results, list):
        return _s3_batch_failures(results)
    return None


def _firehose_failures(records: list[Any]) -> str | None:
    failed = sum(mapping(record).get("result") == "ProcessingFailed" for record in records)
    return f"{failed} of {len(records)} records ProcessingFailed" if failed else None


def _s3_batch_failures(results: list[Any]) -> str | None:
    codes = [str(mapping(result).get("resultCode")) for result in results]
    failed = [code for code in codes if code != "Succeeded"]
    return f"the task answered {', '.join(failed)}" if failed else None
