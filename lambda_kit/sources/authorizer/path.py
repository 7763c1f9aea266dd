"""One invocation of ``authorizer_handler``: the request is one record on the record path.

``AuthorizerPath`` is ``RecordPath`` with the authorizer's steps: the ``request received`` line
(never the token; secret headers masked), ``model=`` validating the event itself (the request's
``model``), the function's decision checked and written as its API's answer (``answer.answer``),
and every failure turned into a deny (``answer.denial``, or the error ``Unauthorized`` a REST or
WebSocket API answers 401 to) with an ERROR line that says why. An explicit ``Unauthorized`` is a
decision, logged at INFO.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import log
from ...context import LambdaContext
from ...errors import InvalidPayload, UndecodableRecord
from ...loop.invocation import Invocation
from ...loop.options import Options
from ...loop.path import Function, RecordPath, duration_ms, run_now
from ...record import Record
from . import AuthorizerSource
from .answer import MalformedAnswer, Unauthorized, answer, decision_of, denial, raises_unauthorized
from .request import AuthorizerRequest, shape_of


def run_authorization(
    adapters: Sequence[AuthorizerSource],
    function: Function,
    options: Options,
    trace_header: str,
    simple: bool,
    event: object,
    context: LambdaContext | None,
) -> dict[str, Any]:
    """One authorization: the answer API Gateway reads, or (a REST or WebSocket API's request
    refused as unauthenticated, or failed) the error ``Unauthorized``, raised once the lines are out."""
    with Invocation(options, context) as invocation:
        adapter = invocation.recognize(adapters, event)
        path = AuthorizerPath(function, context, options, adapter, simple)
        invocation.outcome = path.outcome
        run_now(path.run_record(adapter.record(event, context, trace_header), 0))
    if path.unauthorized:
        raise Unauthorized() from None  # API Gateway reads the message: exactly "Unauthorized"
    return path.response


class AuthorizerPath(RecordPath):
    """The record path of one authorization request; ``response`` is the answer, unless
    ``unauthorized`` says the error ``Unauthorized`` goes back instead."""

    received_message = "request received"
    processed_message = "request processed"

    def __init__(
        self,
        function: Function,
        context: LambdaContext | None,
        options: Options,
        adapter: AuthorizerSource,
        simple: bool,
    ) -> None:
        super().__init__(function, context, options, adapter, 1)
        self.simple = simple
        self.response: dict[str, Any] = {}
        self.unauthorized = False
        self.decision = "deny"

    def received_fields(self, record: Record) -> dict[str, Any]:
        request: AuthorizerRequest = record.payload
        return {  # never the token: it is a credential (secret headers are masked by their names)
            "source": "authorizer",
            "shape": request.shape,
            "arn": log.clean(request.arn),
            "method": log.clean(request.method),
            "path": log.clean(request.path or request.route_key),
            "headers": log.clean(dict(request.headers)),
        }

    def call(self, record: Record) -> Any:
        if record.error is not None:
            raise UndecodableRecord(record.error)
        request: AuthorizerRequest = record.payload
        if self.options.validate is not None:
            request.model = self.options.validate(request.event)
        return self.function(request, self.context)

    def returned(self, record: Record, result: Any, started: float) -> None:
        """The decision, checked (``MalformedAnswer`` fails the request: a deny)."""
        self.response = answer(record.payload, result, self.simple)
        self.decided(record, decision_of(self.response), started)

    def decided(self, record: Record, decision: str, started: float, note: str | None = None) -> None:
        self.decision = decision
        self.outcome.processed += 1
        if self.log_result:
            fields = {
                "source": "authorizer",
                "outcome": "ok",
                "decision": decision,
                "duration_ms": duration_ms(started),
            }
            principal = self.response.get("principalId")
            if principal is not None:
                fields["principal_id"] = log.clean(principal)
            if note is not None:
                fields["reason"] = log.clean(note)
            log.emit("INFO", self.processed_message, fields=fields)

    def failed(self, record: Record, error: BaseException, started: float, index: int) -> None:
        """A deny, whatever failed: ``Unauthorized`` raised by the function is its decision (INFO);
        anything else is the request's failure, with an ERROR line (the exception's text and
        traceback there, never in the answer)."""
        event = record.raw
        shape = shape_of(event)
        if raises_unauthorized(shape):
            self.unauthorized = True
        else:
            arn = event.get("routeArn" if shape == "http-2.0" else "methodArn")
            self.response = denial(shape, str(arn), self.simple)
        if type(error) is Unauthorized:
            self.decided(record, "unauthorized", started, log.safe_str(error))
            return
        self.decision = "deny"
        self.outcome.failures.append((record, error))
        fields = {
            "source": "authorizer",
            "shape": shape,
            "outcome": "failed",
            "decision": "deny",
            "duration_ms": duration_ms(started),
            **log.error_fields(error),
        }
        if isinstance(error, MalformedAnswer | InvalidPayload | UndecodableRecord):
            del fields["traceback"]  # the reason says it all; the stack is lambda_kit's
        if type(error) is InvalidPayload:
            fields["invalid"] = log.clean(error.problems)
        log.emit("ERROR", "request failed: denied", fields=fields)

    def span_outcome(self, error: BaseException | None) -> str | None:
        return self.decision
