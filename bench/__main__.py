"""``make bench``: every benchmark section in one run, then the targets with PASS/FAIL.

Sections are modules of this package with a ``run()`` function; ``run()`` prints its own
tables and may return targets as ``(name, passed, detail)`` tuples. Optional sections that are
not written yet are skipped with a note.
"""

from __future__ import annotations

import importlib
import sys
import traceback
from typing import Any

SECTIONS = (
    ("core", "lambda_kit vs Powertools vs the floor; cold start", True),
    ("runtime", "per record under Lambda's runtime (awslambdaric): µs, writes, log bytes; cold init", True),
    ("api", "one request: api_handler vs Powertools' APIGatewayHttpResolver", True),
    ("memory", "peak RSS of a 10,000-record batch; growth over warm invocations", True),
    ("async_io", "async def with max_concurrency vs Powertools' AsyncBatchProcessor", True),
    ("cost", "DynamoDB counter costs", False),
    ("idempotency", "DynamoDB idempotency costs beside Powertools' (the cost section's second part)", False),
    ("local", "end to end on the local stack", False),
    ("windows", "tumbling windows and CloudWatch Logs subscriptions, per record", False),
)


def _load(name: str, required: bool) -> Any:
    try:
        return importlib.import_module(f"bench.{name}")
    except ModuleNotFoundError as exc:
        if required or exc.name != f"bench.{name}":
            raise
        return None


def main() -> int:
    targets: list[tuple[str, bool, str]] = []
    broken: list[str] = []
    for name, what, required in SECTIONS:
        try:
            module = _load(name, required)
            if module is None:
                print(f"\n== {name}: skipped (bench/{name}.py not present yet: {what}) ==")
                continue
            result = module.run()
        except Exception:
            traceback.print_exc()
            print(f"\n== {name}: FAILED to run (traceback above) ==")
            broken.append(name)
            continue
        for target in result or ():
            if isinstance(target, tuple | list) and len(target) >= 2:
                label, passed, *detail = target
                targets.append((f"{name}: {label}", bool(passed), str(detail[0]) if detail else ""))
        sys.stdout.flush()

    print("\n== targets ==")
    width = max((len(label) for label, _, _ in targets), default=0)
    for label, passed, detail in targets:
        print(f"  {'PASS' if passed else 'FAIL'}  {label.ljust(width)}  {detail}")
    for name in broken:
        print(f"  FAIL  {name}: the section did not run")
    failed = sum(not passed for _, passed, _ in targets) + len(broken)
    print(
        f"  {sum(passed for _, passed, _ in targets)} of {len(targets)} targets met"
        + (f"; {len(broken)} section(s) broken" if broken else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
