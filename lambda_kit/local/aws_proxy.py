"""The endpoint the functions' AWS calls go to: one proxy on 127.0.0.1 in front of moto's server
and the DynamoDB, authorising each call against the calling function's role.

Each function's workers get credentials of their own (``credentials``: an access key id the proxy
knows as that function's). For every request the proxy reads the SigV4 ``Credential=`` (which
function, which service), the operation (``X-Amz-Target`` of a JSON protocol, ``Action`` of a
query protocol, an S3 request's method and path), works out the IAM actions and resources it
needs (``aws_calls.iam_calls``), records them (``CallLog``) and, unless the stack runs with
``--no-iam``, evaluates the function's role (``iam_policy.py``). A denied call is answered as AWS
answers it: ``AccessDeniedException`` for the JSON protocols (DynamoDB, Kinesis, SQS, EventBridge
...), ``AuthorizationError`` for SNS and ``AccessDenied`` for other query protocols, S3's
``AccessDenied``, each with AWS's message (``User: arn:aws:sts::123456789012:assumed-role/<role>/
<function> is not authorized to perform: <action> on resource: <arn> because no identity-based
policy allows the <action> action``); the request never reaches the emulator (DynamoDB Local checks
nothing itself). Other requests are forwarded as they came (DynamoDB's to the DynamoDB, the rest to
moto's server or the endpoint the stack was given for the functions).

Requests signed with any other key (the stack's own clients never come here) are forwarded
unchecked. Call hooks (``AwsProxy.hooks``: ``hook(call, proceed)``, returning a ``Response``)
wrap each function's forwarded call: the fault soak answers some with errors, or replaces the
response after the request was carried out.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import socket
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from ..codec import loads
from ._wsgi import WsgiServer
from .aws_calls import Call, CallLog, iam_calls, s3_action
from .iam_policy import Role

HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection", "expect"}
)
QUERY_CODES = {"sns": "AuthorizationError"}
"""The error code of a denied call by a query protocol's service (AWS's own: SNS's is its own)."""
UPSTREAM_TIMEOUT = 90.0
"""Seconds a forwarded request may take (an SQS long poll waits up to 20 s)."""


@dataclass
class Response:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


@dataclass
class Caller:
    """A function as the proxy knows it: its key under ``functions``, deployed name and role."""

    key: str
    name: str
    role: Role
    access_key: str
    secret: str


@dataclass
class AwsCall:
    """One function's request, as hooks see it."""

    function: str
    service: str  # the signing name: dynamodb, sqs, sns, kinesis, s3 ...
    operation: str  # PutItem, SendMessage ... (S3: the IAM action's name)
    method: str
    target: str  # the request's path and query, as sent
    headers: list[tuple[str, str]]
    body: bytes
    pairs: list[tuple[str, str]] = field(default_factory=list)  # (IAM action, resource)
    upstream: str = ""  # where the proxy forwards it


CallHook = Callable[[AwsCall, Callable[[], Response]], Response]


def _credential(headers: dict[str, str], query: str) -> tuple[str, str, str]:
    """(access key id, region, service) of the request's SigV4 credential ("" when unsigned)."""
    authorization = headers.get("authorization", "")
    found = authorization.partition("Credential=")[2].partition(",")[0]
    if not found:
        found = dict(parse_qsl(query)).get("X-Amz-Credential", "")
    parts = found.split("/")
    return (parts[0], parts[2], parts[3]) if len(parts) >= 4 else ("", "", "")


class _Upstreams(threading.local):
    """Each serving thread's keep-alive connections, by host and port."""

    def __init__(self) -> None:
        self.connections: dict[tuple[str, int], http.client.HTTPConnection] = {}


class AwsProxy:
    def __init__(
        self,
        upstream: str,
        dynamodb_upstream: str,
        region: str,
        calls: CallLog,
        enforce: bool = True,
        threads: int = 32,
    ) -> None:
        self.upstream = urlsplit(upstream)
        self.dynamodb_upstream = urlsplit(dynamodb_upstream)
        self.region = region
        self.calls = calls
        self.enforce = enforce
        self.hooks: list[CallHook] = []
        self.callers: dict[str, Caller] = {}
        self._local = _Upstreams()
        self.server = WsgiServer(self._app, "127.0.0.1", 0, name="aws proxy", threads=threads)
        self.url = self.server.url

    def start(self) -> AwsProxy:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()

    def credentials(self, key: str, name: str, role: Role) -> dict[str, str]:
        """The environment's credentials for function ``key``: an access key the proxy knows as it."""
        digest = hashlib.sha256(f"{id(self)}:{key}".encode()).hexdigest().upper()
        caller = Caller(key, name, role, f"ASIA{digest[:16]}", digest[16:56])
        self.callers[caller.access_key] = caller
        return {
            "AWS_ACCESS_KEY_ID": caller.access_key,
            "AWS_SECRET_ACCESS_KEY": caller.secret,
            "AWS_SESSION_TOKEN": f"lambda-kit-local-{digest[56:]}",
        }

    # --- one request --------------------------------------------------------------------------------

    def _app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        headers = _headers(environ)
        target = str(environ.get("REQUEST_URI") or environ.get("PATH_INFO") or "/")
        method = str(environ["REQUEST_METHOD"])
        lowered = {name.lower(): value for name, value in headers}
        access_key, region, service = _credential(lowered, urlsplit(target).query)
        caller = self.callers.get(access_key)
        upstream = self.dynamodb_upstream if service == "dynamodb" else self.upstream
        if caller is None:
            response = self._forward(upstream, method, target, headers, body)
        else:
            response = self._call(
                caller, service, region or self.region, method, target, headers, body, upstream
            )
        start_response(
            f"{response.status} {http.client.responses.get(response.status, '')}", response.headers
        )
        return [response.body]

    def _call(
        self,
        caller: Caller,
        service: str,
        region: str,
        method: str,
        target: str,
        headers: list[tuple[str, str]],
        body: bytes,
        upstream: Any,
    ) -> Response:
        lowered = {name.lower(): value for name, value in headers}
        operation, params, protocol = _operation(service, method, target, lowered, body)
        if service == "s3":
            pairs = [s3_action(method, target)]
        else:
            pairs = iam_calls(service, operation, params, region) if operation else [(f"{service}:*", "*")]
        call = AwsCall(
            caller.key, service, operation, method, target, headers, body, pairs, upstream.geturl()
        )
        denied = self._authorise(caller, pairs)
        if denied is not None:
            return _denial(protocol, service, denied)
        proceed = self._through_hooks(call, lambda: self._forward(upstream, method, target, headers, body))
        return proceed()

    def _authorise(self, caller: Caller, pairs: list[tuple[str, str]]) -> str | None:
        """Record the call; the denial's message when the role does not allow it."""
        denial = None
        for action, resource in pairs:
            decision = caller.role.decide(action, resource) if caller.role.known else None
            allowed = decision is None or decision.allowed
            self.calls.record(Call(caller.key, action, resource), allowed)
            if not allowed and self.enforce and denial is None and decision is not None:
                why = (
                    "with an explicit deny in an identity-based policy"
                    if decision.explicit
                    else f"because no identity-based policy allows the {action} action"
                )
                denial = (
                    f"User: {caller.role.principal(caller.name)} is not authorized to perform: {action} "
                    f"on resource: {resource} {why}"
                )
        return denial

    def _through_hooks(self, call: AwsCall, forward: Callable[[], Response]) -> Callable[[], Response]:
        proceed = forward
        for hook in reversed(self.hooks):
            proceed = _bind(hook, call, proceed)
        return proceed

    def _forward(
        self, upstream: Any, method: str, target: str, headers: list[tuple[str, str]], body: bytes
    ) -> Response:
        """Send the request on upstream (a kept connection, made again once if it went stale)."""
        address = (upstream.hostname or "127.0.0.1", upstream.port or 80)
        sent = [(name, value) for name, value in headers if name.lower() not in HOP_BY_HOP]
        for attempt in (1, 2):
            connection = self._local.connections.get(address)
            if connection is None:
                connection = http.client.HTTPConnection(*address, timeout=UPSTREAM_TIMEOUT)
                connection.connect()
                connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no delayed-ACK waits
                self._local.connections[address] = connection
            try:
                connection.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
                for name, value in sent:
                    connection.putheader(name, value)
                connection.putheader("Content-Length", str(len(body)))
                connection.endheaders(body)
                answer = connection.getresponse()
                data = answer.read()
            except (http.client.HTTPException, OSError):
                connection.close()
                del self._local.connections[address]
                if attempt == 2:
                    raise
                continue
            kept = [(n, v) for n, v in answer.getheaders() if n.lower() not in HOP_BY_HOP]
            return Response(answer.status, [*kept, ("Content-Length", str(len(data)))], data)
        raise AssertionError("unreachable")


def _bind(hook: CallHook, call: AwsCall, proceed: Callable[[], Response]) -> Callable[[], Response]:
    return lambda: hook(call, proceed)


def _headers(environ: dict[str, Any]) -> list[tuple[str, str]]:
    found = [
        (key[5:].replace("_", "-").title(), str(value))
        for key, value in environ.items()
        if key.startswith("HTTP_")
    ]
    for key, name in (("CONTENT_TYPE", "Content-Type"),):
        if environ.get(key):
            found.append((name, str(environ[key])))
    return found


def _operation(
    service: str, method: str, target: str, headers: dict[str, str], body: bytes
) -> tuple[str, dict[str, Any], str]:
    """(operation, parameters, protocol) of a request: ``json``, ``query``, ``rest-xml`` or ``rest-json``."""
    amz_target = headers.get("x-amz-target")
    if amz_target:
        try:
            params = loads(body or b"{}")
        except ValueError:
            params = {}
        return amz_target.rpartition(".")[2], params if isinstance(params, dict) else {}, "json"
    form = dict(parse_qsl(body.decode("utf-8", "replace"))) if b"Action=" in body else {}
    form = form or dict(parse_qsl(urlsplit(target).query))
    if "Action" in form:
        return form["Action"], form, "query"
    return "", {}, "rest-xml" if service == "s3" else "rest-json"


def _denial(protocol: str, service: str, message: str) -> Response:
    request_id = str(uuid.uuid4())
    if protocol == "json":
        body = json.dumps(
            {"__type": "com.amazon.coral.service#AccessDeniedException", "Message": message}
        ).encode()
        headers = [("Content-Type", "application/x-amz-json-1.0"), ("x-amzn-RequestId", request_id)]
        if service == "sqs":  # SQS's JSON protocol names its query protocol's code too
            headers.append(("x-amzn-query-error", "AccessDenied;Sender"))
        return Response(400, [*headers, ("Content-Length", str(len(body)))], body)
    if protocol == "query":
        code = QUERY_CODES.get(service, "AccessDenied")
        text = (
            f"<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>{_xml(message)}</Message>"
            f"</Error><RequestId>{request_id}</RequestId></ErrorResponse>"
        )
        return _xml_response(text)
    if protocol == "rest-xml":
        text = (
            '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
            f"<Message>{_xml(message)}</Message><RequestId>{request_id}</RequestId></Error>"
        )
        return _xml_response(text)
    body = json.dumps({"Message": message}).encode()
    headers = [("Content-Type", "application/json"), ("x-amzn-ErrorType", "AccessDeniedException")]
    return Response(
        403, [*headers, ("x-amzn-RequestId", request_id), ("Content-Length", str(len(body)))], body
    )


def _xml_response(text: str) -> Response:
    body = text.encode()
    return Response(403, [("Content-Type", "text/xml"), ("Content-Length", str(len(body)))], body)


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
