"""``make mutate [MODULE=lambda_kit/codec.py]``: mutation testing with mutmut, one target at a time.

Each target runs in its own scratch copy (``.mutate/<target>/``: the package, the tests, a
``[tool.mutmut]`` section made here), so the work tree is never mutated and two targets never share
results. mutmut first runs the target's tests once to learn which tests call each function, then
runs, for each mutant, only those tests (fastest first, stopping at the first failure), in children
forked from a server that has collected the tests but run none of them: nothing a test caches (the
codec's converters, the chosen codec) survives into a mutant's run. Then this prints every
surviving mutant's diff and the score per module. A mutant whose child found none of its tests
counts as surviving ("not run"), never as killed.

Not part of ``make test``: a full run takes tens of minutes on two cores. ``--children=N`` (``make
mutate CHILDREN=1``) caps how many mutants run at once (default: one per core), for a shared machine.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = ROOT / ".mutate"
MAX_SURVIVING = 0.10  # per module

# target (a module or a package folder) -> the tests that exercise it; mutmut narrows them per mutant
TARGETS: dict[str, list[str]] = {
    "lambda_kit/codec.py": [
        "tests/test_codec_parity.py",
        "tests/test_logging.py",
        "tests/test_hostile_core.py",
    ],
    "lambda_kit/log/": [
        "tests/test_logging.py",
        "tests/test_hostile_logs.py",
        "tests/test_codec_parity.py",
        "tests/test_hostile_core.py",
        "tests/test_api.py",
        "tests/test_log_levels.py",
        "tests/test_log_short_path.py",
        "tests/test_sqs.py",
        "tests/test_commit.py",
        "tests/test_tracing_write.py",
        "tests/test_tracing_otel.py",
    ],
    "lambda_kit/loop/": [
        "tests/test_sqs.py",
        "tests/test_sns.py",
        "tests/test_streams.py",
        "tests/test_decorators.py",
        "tests/test_hostile_core.py",
        "tests/test_api.py",
        "tests/test_router.py",
        "tests/test_hostile_events.py",
        "tests/test_event_boundary.py",
        "tests/test_async.py",
        "tests/test_model.py",
        "tests/test_metrics.py",
        "tests/test_commit.py",
        "tests/test_logging.py",
        "tests/test_tracing_otel.py",
    ],
    "lambda_kit/sources/": [
        "tests/test_sqs.py",
        "tests/test_sns.py",
        "tests/test_streams.py",
        "tests/test_api.py",
        "tests/test_decorators.py",
        "tests/test_hostile_events.py",
        "tests/test_hostile_api.py",
        "tests/test_event_boundary.py",
        "tests/test_kafka.py",
        "tests/test_eventbridge.py",
        "tests/test_s3.py",
        "tests/test_pipes.py",
        "tests/test_kpl.py",
        "tests/test_cloudwatch_logs.py",
        "tests/test_async.py",
        "tests/test_model.py",
        "tests/test_tracing_read.py",
        "tests/test_api_samples.py",
        "tests/test_kinesis_source.py",
        "tests/test_windows.py",
        "tests/test_api_source.py",
        "tests/test_source_base.py",
        "tests/test_dynamodb_source.py",
        "tests/test_sns_source.py",
        "tests/test_source_registry.py",
        "tests/test_s3_source.py",
        "tests/test_hostile_trace.py",
        "tests/test_log_mask.py",
    ],
    "lambda_kit/counters/": [
        "tests/test_counters.py",
        "tests/test_counters_rules.py",
        "tests/test_counters_faults.py",
    ],
}
# One file of a folder target, run alone (``make mutate MODULE=lambda_kit/loop/path.py``): the fewer,
# faster tests that reach it (mutmut's first run, which maps tests to functions, runs all of them).
NARROW: dict[str, list[str]] = {
    "lambda_kit/loop/path.py": [
        "tests/test_runtime_contract.py",
        "tests/test_sqs.py",
        "tests/test_commit.py",
        "tests/test_decorators.py",
        "tests/test_streams.py",
        "tests/test_logging.py",
        "tests/test_async.py",
        "tests/test_pipes.py",
        "tests/test_model.py",
        "tests/test_hostile_core.py",
    ],
    "lambda_kit/loop/invocation.py": [
        "tests/test_runtime_contract.py",
        "tests/test_sqs.py",
        "tests/test_decorators.py",
        "tests/test_event_boundary.py",
        "tests/test_metrics.py",
        "tests/test_api.py",
    ],
    "lambda_kit/loop/batch.py": [
        "tests/test_sqs.py",
        "tests/test_decorators.py",
        "tests/test_event_boundary.py",
        "tests/test_metrics.py",
        "tests/test_streams.py",
        "tests/test_pipes.py",
    ],
    "lambda_kit/loop/options.py": [
        "tests/test_decorators.py",
        "tests/test_async.py",
        "tests/test_model.py",
        "tests/test_commit.py",
    ],
    "lambda_kit/log/line.py": [
        "tests/test_runtime_contract.py",
        "tests/test_logging.py",
        "tests/test_log_levels.py",
        "tests/test_log_short_path.py",
        "tests/test_hostile_logs.py",
        "tests/test_tracing_write.py",
    ],
    "lambda_kit/log/mask.py": [
        "tests/test_logging.py",
        "tests/test_hostile_logs.py",
        "tests/test_log_short_path.py",
        "tests/test_log_levels.py",
        "tests/test_hostile_core.py",
        "tests/test_decorators.py",
        "tests/test_event_boundary.py",
        "tests/test_hostile_trace.py",
        "tests/test_log_mask.py",
    ],
    "lambda_kit/loop/concurrent.py": [
        "tests/test_async.py",
        "tests/test_streams.py",
        "tests/test_hostile_core.py",
        "tests/test_event_boundary.py",
        "tests/test_hostile_trace.py",
    ],
    "lambda_kit/sources/api/path.py": [
        "tests/test_metrics_emf.py",
        "tests/test_idempotency.py",
        "tests/test_hostile_responses.py",
        "tests/test_api.py",
        "tests/test_api_source.py",
        "tests/test_hostile_api.py",
        "tests/test_hostile_core.py",
        "tests/test_decorators.py",
        "tests/test_metrics.py",
        "tests/test_model.py",
        "tests/test_async.py",
    ],
    "lambda_kit/log/logger.py": [
        "tests/test_logging.py",
        "tests/test_log_levels.py",
        "tests/test_log_short_path.py",
        "tests/test_hostile_logs.py",
        "tests/test_tracing_write.py",
    ],
}
# mutmut's exit code for a mutant whose child ran no test (it files it as a "timeout"): its tests could
# not be found, e.g. a test id that comes out differently in the fork server's second pytest session.
NOT_RUN = 255
# Tests that look at what a fresh interpreter imports: mutmut's instrumented copy imports more.
DESELECT = [
    "tests/test_codec_parity.py::test_no_codec_library_is_imported_until_first_use",
]
# The scratch copy's own conftest. Each test starts from a cold lambda_kit: a cache an earlier test
# filled would hide a path from mutmut's record of which tests reach it (and so from the tests it
# runs against that path's mutants). mutmut adds three frames to every call: the nesting tests
# (254 levels) need more stack, but not so much that a 5,000-level DynamoDB image
# (tests/test_hostile_events.py), which must fail on the recursion limit, decodes.
CONFTEST = """import sys

import pytest

sys.setrecursionlimit(4_000)


@pytest.fixture(autouse=True)
def _cold_lambda_kit():
    from lambda_kit import codec
    from lambda_kit.log import line, mask

    codec._converters.clear()
    for name in ("loads", "dumps", "name"):
        vars(codec).pop(name, None)
    mask._secret_keys.clear()
    line._stamp = (-1, "")
"""


def _target_of(module: str) -> tuple[str, list[str]]:
    module = module.rstrip("/") + ("/" if (ROOT / module).is_dir() else "")
    if module in NARROW:
        return module, NARROW[module]
    for target, tests in TARGETS.items():
        if module == target or module.startswith(target):
            return module, tests
    known = ", ".join(TARGETS)
    raise SystemExit(
        f"make mutate: MODULE={module} is not a mutation target; use one of {known} (or a file in a folder)"
    )


def _config(module: str, tests: list[str]) -> str:
    pytest_args = ["-p", "no:cacheprovider", "-p", "no:xdist", "-x", "-q"]
    for test in DESELECT:
        pytest_args += ["--deselect", test]
    only = f"{module}*" if module.endswith("/") else module

    def toml(items: list[str]) -> str:
        return "[" + ", ".join(f'"{item}"' for item in items) + "]"

    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["lambda_kit"]\n'
        f"only_mutate = {toml([only])}\n"
        f"pytest_add_cli_args_test_selection = {toml(tests)}\n"
        f"pytest_add_cli_args = {toml(pytest_args)}\n"
        'also_copy = ["conftest.py"]\n'
        'process_isolation = "forkserver"\n'
    )


def _prepare(module: str, tests: list[str]) -> Path:
    """A fresh scratch copy: results never outlive the code and tests they were measured on."""
    place = SCRATCH / module.strip("/").replace("/", "_")
    shutil.rmtree(place, ignore_errors=True)
    place.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "lambda_kit", place / "lambda_kit", ignore=ignore)
    shutil.copytree(ROOT / "tests", place / "tests", ignore=ignore)
    (place / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text() + _config(module, tests))
    (place / "conftest.py").write_text(CONFTEST)
    return place


def _mutmut(place: Path, *args: str, log: Path | None = None) -> str:
    mutmut = Path(sys.executable).parent / "mutmut"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("LAMBDA_KIT_JSON", None)
    # moto's DynamoDB (the counters' tests run on both; DynamoDB Local's own cases are left to make
    # test): each mutant's run is a new test session, and a Java server started for each costs
    # more than its tests (loop.py's run went ~8x faster without it).
    env["LAMBDA_KIT_DYNAMODB_LOCAL"] = "off"
    if log is None:
        return subprocess.run(
            [mutmut, *args], cwd=place, env=env, capture_output=True, text=True, check=True
        ).stdout
    with log.open("w") as out:  # the progress spinner, kept out of the report
        subprocess.run([mutmut, *args], cwd=place, env=env, stdout=out, stderr=subprocess.STDOUT, check=True)
    return ""


def _module_of(mutant: str) -> str:
    return re.split(r"\.x_|\.xǁ", mutant, maxsplit=1)[0]


def run(module: str, children: int) -> dict[str, Counter[str]]:
    module, tests = _target_of(module)
    print(f"== mutate {module} (tests: {' '.join(tests)}) ==", flush=True)
    place = _prepare(module, tests)
    _mutmut(place, "run", "--max-children", str(children), log=place / "run.log")
    statuses: dict[str, Counter[str]] = defaultdict(Counter)
    survivors: list[str] = []
    not_run = _not_run(place)
    for line in _mutmut(place, "results", "--all", "true").splitlines():
        name, _, status = line.strip().rpartition(": ")
        if not name:
            continue
        if name in not_run:
            status = "not run"
        statuses[_module_of(name)][status] += 1
        if status in ("survived", "no tests", "not run"):
            survivors.append(name)
    if not_run:
        print(
            f"!! {len(not_run)} mutants ran no test (their children found none of the tests recorded "
            "for them); counted as surviving",
            flush=True,
        )
    for name in survivors:
        print(_mutmut(place, "show", name).rstrip() + "\n")
    return statuses


def _not_run(place: Path) -> set[str]:
    """The mutants whose child exited with ``NOT_RUN``, which mutmut files as timeouts."""
    names: set[str] = set()
    for meta in (place / "mutants").rglob("*.meta"):
        codes = json.loads(meta.read_text()).get("exit_code_by_key", {})
        names.update(name for name, code in codes.items() if code == NOT_RUN)
    return names


def _report(scores: dict[str, Counter[str]]) -> bool:
    print(
        "== mutation score per module (killed: a test failed; timeout: counted as killed; "
        "not run: as surviving) =="
    )
    print(
        f"  {'module':32} {'mutants':>7} {'killed':>7} {'survived':>8} {'no tests':>8} "
        f"{'not run':>7} {'other':>6} {'survive %':>9}"
    )
    ok = True
    for module, counts in sorted(scores.items()):
        total = sum(counts.values())
        killed = counts["killed"] + counts["timeout"]
        surviving = counts["survived"] + counts["no tests"] + counts["not run"]
        share = surviving / total if total else 0.0
        ok &= share <= MAX_SURVIVING
        print(
            f"  {module:32} {total:7} {killed:7} {counts['survived']:8} {counts['no tests']:8} "
            f"{counts['not run']:7} {total - killed - surviving:6} {share:9.1%}"
            f"{'' if share <= MAX_SURVIVING else '  > 10%'}"
        )
    return ok


def main(argv: list[str]) -> int:
    children = os.cpu_count() or 2
    modules = []
    for arg in argv:
        if arg.startswith("--children="):
            value = arg.removeprefix("--children=")
            if not value.isdigit() or int(value) < 1:
                raise SystemExit(f"make mutate: CHILDREN={value} is not a positive whole number")
            children = int(value)
        else:
            modules.append(arg)
    scores: dict[str, Counter[str]] = {}
    for module in modules or list(TARGETS):
        scores.update(run(module, children))
    return 0 if _report(scores) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
