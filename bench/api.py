"""One HTTP request: lambda_kit ``api_handler`` vs Powertools ``APIGatewayHttpResolver`` + ``Logger``.

Both answer the same HTTP API (payload 2.0) POST with a JSON body and write the same three lines:
the request on arrival (method, path, query, headers, body), one line the function writes itself
(``get_logger().info`` / ``logger.info``), and the outcome (status, duration, result), with the
request's trace id (``X-Trace-Id``) as correlation id. CPU time per request, lines to /dev/null,
interleaved rounds, median of per-round ratios.

Two cases: one function for one route (``@api_handler`` vs the resolver with one route), and one
function behind 20 routes (``api_handler(Router())`` vs the resolver with the same 20 routes), the
request's route registered last on both sides.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable
from time import perf_counter
from typing import Any

from bench.core import LONGEST, ROUNDS, stdout_to_devnull, table, time_per_record

REQUESTS = int(os.environ.get("BENCH_REQUESTS", "3000"))  # per variant, per round
TARGET_RATIO = 5.0  # Powertools / lambda_kit at least

Target = tuple[str, bool, str]


def _event() -> dict[str, Any]:
    from lambda_kit.testing import api_event

    return api_event(
        "POST",
        "/articles/a1",
        body={"url": "myblog.com/article-17", "clientId": "adidOIkenODSksi92LHd6"},
        headers={"content-type": "application/json", "x-trace-id": "trace-api-1", "user-agent": "bench"},
        query={"ref": "home"},
        path_params={"slug": "a1"},
        route="POST /articles/{slug}",
    )


ROUTES = 20  # in the router case, on both sides: 19 others, then the request's


def _lambda_kit(routes: int = 0) -> Callable[[Any, Any], Any]:
    from lambda_kit import Router, api_handler, get_logger

    log = get_logger("bench.api")

    def article(request: Any, context: Any) -> Any:
        log.info("counting", extra={"url": request.json["url"]})
        return {"url": request.json["url"], "views": 3}

    if not routes:
        return api_handler(article)  # type: ignore[no-any-return]
    router = Router()
    for number in range(routes - 1):
        router.get(f"/things{number}/{{id}}")(lambda request, context: {"id": request.path_params["id"]})
    router.post("/articles/{slug}")(article)
    return api_handler(router)  # type: ignore[no-any-return]


def _powertools(stream: Any, routes: int = 0) -> Callable[[Any, Any], Any]:
    from aws_lambda_powertools import Logger
    from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

    logger = Logger(service=f"bench.api.powertools.{routes}", stream=stream)  # one per case: its own stream
    app = APIGatewayHttpResolver()
    for number in range(routes - 1):
        app.get(f"/things{number}/<id>")(lambda id: {"id": id})

    @app.post("/articles/<slug>")
    def article(slug: str) -> Any:
        body = app.current_event.json_body
        logger.info("counting", extra={"url": body["url"]})
        return {"url": body["url"], "views": 3}

    @logger.inject_lambda_context
    def handler(event: Any, context: Any) -> Any:
        started = perf_counter()
        trace_id = event["headers"].get("x-trace-id") or event["requestContext"]["requestId"]
        logger.set_correlation_id(trace_id)
        logger.append_keys(trace_id=trace_id)
        http = event["requestContext"]["http"]
        logger.info(
            "request received",
            extra={
                "source": "api",
                "record_id": event["requestContext"]["requestId"],
                "method": http["method"],
                "path": http["path"],
                "query": event.get("queryStringParameters"),
                "headers": event["headers"],
                "body": event.get("body"),
            },
        )
        response = app.resolve(event, context)
        response.setdefault("headers", {})["X-Trace-Id"] = trace_id
        logger.info(
            "request processed",
            extra={
                "source": "api",
                "record_id": event["requestContext"]["requestId"],
                "status": response["statusCode"],
                "outcome": "ok",
                "duration_ms": round((perf_counter() - started) * 1000, 3),
                "result": response.get("body"),
            },
        )
        return response

    return handler


def run() -> list[Target]:
    print("== api: one request, lambda_kit api_handler vs Powertools APIGatewayHttpResolver + Logger ==")
    return [_compare("one route", 0), _compare(f"a router of {ROUTES} routes", ROUTES)]


def _compare(case: str, routes: int) -> Target:
    from lambda_kit.testing import lambda_context

    event, context = _event(), lambda_context("articles", timeout=LONGEST)
    samples: dict[str, list[float]] = {"lambda_kit": [], "powertools": []}
    with stdout_to_devnull() as devnull:
        variants = {"lambda_kit": _lambda_kit(routes), "powertools": _powertools(devnull, routes)}
        for name, handler in variants.items():  # warm up, and both answer the request
            response = handler(event, context)
            if response["statusCode"] != 200 or '"views":3' not in response["body"].replace(" ", ""):
                raise RuntimeError(f"bench: {name} did not answer the request: {response}")
        for round_ in range(ROUNDS):
            items = list(variants.items())
            for name, handler in items if round_ % 2 == 0 else items[::-1]:
                samples[name].append(time_per_record(lambda h=handler: h(event, context), REQUESTS, 1))
    ratios = [p / k for p, k in zip(samples["powertools"], samples["lambda_kit"], strict=True)]
    rows = [
        [name, f"{statistics.median(values):.1f}", f"{min(values):.1f}-{max(values):.1f}"]
        for name, values in samples.items()
    ]
    rows.append(
        [
            "Powertools / lambda_kit (median of per-round ratios)",
            f"{statistics.median(ratios):.1f}x",
            f"{min(ratios):.1f}-{max(ratios):.1f}x",
        ]
    )
    table(
        f"API request, {case} (HTTP API v2 POST, 3 log lines), CPU µs per request, {ROUNDS} interleaved "
        f"rounds of {REQUESTS} requests",
        ["variant", "median", "min-max"],
        rows,
    )
    ratio = statistics.median(ratios)
    return (
        f"api_handler, {case}, >= {TARGET_RATIO:g}x faster than APIGatewayHttpResolver + Logger",
        ratio >= TARGET_RATIO,
        f"{ratio:.1f}x",
    )
