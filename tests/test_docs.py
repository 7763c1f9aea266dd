"""README.md and docs/ as tests: every command and code example runs, every output block is
compared with what its command printed, every relative link and anchor resolves. How to write a
page so that this works: docs/contributing.md."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _docs import (
    NUMBERS_VARY,
    ROOT,
    Block,
    MarkupError,
    Page,
    output_matches,
    pages,
    read_page,
    relative,
    screen,
)

from lambda_kit.log import SECRET_KEY_PARTS
from lambda_kit.testing import create_counter_table

README_LIMIT = 15_000  # bytes
DOCS_PORT = 3000  # the port the pages show `lambda-kit local` on: its default
BLOCK_TIMEOUT = 300  # seconds for one block; `make run` takes ~40 s on 2 busy cores
VENV_BIN = Path(sys.executable).parent
# what a page's directory leaves out of the repository: the state of its own runs and builds
LEFT_OUT = {
    ".git",
    ".lambda-kit",
    ".serverless",
    ".mutate",
    ".pytest_cache",
    ".hypothesis",
    "dist",
    "build",
    "__pycache__",
}
# python -c MARKER FILE PAGE [FILE PAGE ...]: run the snippet files in one namespace, each under the
# name of its page (so a traceback points at the page), printing MARKER before the last one
RUN_SNIPPETS = """
import sys
marker, *files = sys.argv[1:]
namespace = {"__name__": "__main__"}
for index in range(0, len(files), 2):
    path, name = files[index : index + 2]
    if index == len(files) - 2:
        print(marker, flush=True)
    sys.argv, namespace["__file__"] = [name], name
    exec(compile(open(path, encoding="utf-8").read(), name, "exec"), namespace)
"""


# --- the environment a reader has ------------------------------------------------------------------


def reader_environment() -> dict[str, str]:
    """A fresh terminal's environment: no AWS endpoint or credentials, no log level, no venv active."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(
            ("AWS_", "LAMBDA_KIT_", "PYTEST_", "COV_", "MAKE")
        )  # MAKELEVEL: make test's own make
        and key not in ("LOG_LEVEL", "VIRTUAL_ENV", "PYTHONPATH", "MFLAGS")
    }
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if Path(p) != VENV_BIN and p
    )
    env["PYTHONUNBUFFERED"] = "1"  # stdout and stderr interleave as on a terminal
    return env


def checkout(into: Path) -> Path:
    """A directory that looks like the repository, where a page's commands run, so what they write
    (.lambda-kit/, .serverless/, the page's files) stays there: its folders are linked, its files
    copied (with their times, which make compares), so paths print as in a checkout."""
    into.mkdir(parents=True, exist_ok=True)
    for entry in ROOT.iterdir():
        if entry.name in LEFT_OUT:
            continue
        if entry.is_dir():
            (into / entry.name).symlink_to(entry, target_is_directory=True)
        else:
            shutil.copy2(entry, into / entry.name)
    return into


def stale_setup(checkout: Path) -> str | None:
    """`make run` in a page's checkout would reinstall the venv or node_modules (the repository's,
    linked) under the running tests if either is older than what it is built from."""
    targets = [".venv/.installed", "node_modules/.installed"]
    if subprocess.run(["make", "-q", *targets], cwd=checkout, capture_output=True).returncode == 0:
        return None
    return f"{' or '.join(targets)} is out of date: run `make test` (it sets them up first)"


# --- fixtures a block can ask for with `with NAME ARGS...` ----------------------------------------


class LocalStack:
    """`lambda-kit local`, started once per test session on a free port, as a reader starts it."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = checkout(workdir)
        self.logs = self.workdir / ".lambda-kit" / "logs.jsonl"
        self.process = subprocess.Popen(
            [str(VENV_BIN / "lambda-kit"), "local", "--port", "0"],
            cwd=self.workdir,
            env=reader_environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.output: list[str] = []
        self.address = self._wait_until_serving()

    def _wait_until_serving(self) -> str:
        assert self.process.stdout is not None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            self.output.append(line)
            if "serving until Ctrl-C" in line:
                return line.split("http://", 1)[1].split(")", 1)[0]
        self.stop()
        raise AssertionError("lambda-kit local did not start serving:\n" + "".join(self.output))

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)  # Ctrl-C
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


@pytest.fixture(scope="session")
def docs_local_stack(tmp_path_factory) -> Iterator[LocalStack]:
    usage = subprocess.run(
        [str(VENV_BIN / "lambda-kit"), "local", "--help"], capture_output=True, text=True, check=True
    ).stdout
    port_help = " ".join(usage.split("--port PORT", 2)[-1].split())
    assert f"default: {DOCS_PORT})" in port_help, (
        f"the pages show `lambda-kit local` on its default port: {port_help}"
    )
    stack = LocalStack(tmp_path_factory.mktemp("local-stack"))
    yield stack
    stack.stop()
    rest = stack.process.stdout.read() if stack.process.stdout else ""
    assert stack.process.returncode == 0, (
        "lambda-kit local did not stop cleanly on Ctrl-C:\n" + "".join(stack.output) + rest
    )


def use_local_stack(page_run: PageRun, args: list[str]) -> None:
    """`with local-stack`: `localhost:3000` in the block is the session's `lambda-kit local`, and
    the page's `.lambda-kit/logs.jsonl` is its log file."""
    stack: LocalStack = page_run.request.getfixturevalue("docs_local_stack")
    for host in ("localhost", "127.0.0.1"):
        page_run.replacements[f"{host}:{DOCS_PORT}"] = stack.address
    logs = page_run.workdir / ".lambda-kit" / "logs.jsonl"
    if not logs.exists():
        logs.parent.mkdir(exist_ok=True)
        logs.symlink_to(stack.logs)


def use_table(page_run: PageRun, args: list[str]) -> None:
    """`with table NAME`: a DynamoDB table NAME as lambda_kit.counters wants it (PK/SK, stream, TTL
    on `ttl`), empty, on the tests' DynamoDB."""
    (name,) = args
    client = page_run.request.getfixturevalue("dynamodb")
    if name in client.list_tables()["TableNames"]:
        client.delete_table(TableName=name)
    create_counter_table(client, name)


FIXTURES: dict[str, Callable[[PageRun, list[str]], None]] = {
    "local-stack": use_local_stack,
    "table": use_table,
}


# --- running a page ---------------------------------------------------------------------------------


class PageRun:
    """One page's blocks, in order, in one directory and one shell session (as a reader who keeps one
    terminal open: `cd`, `export` and `source .venv/bin/activate` carry over to the next block)."""

    def __init__(self, page: Page, workdir: Path, request: pytest.FixtureRequest) -> None:
        self.page = page
        self.workdir = checkout(workdir / "checkout")
        self.scratch = workdir / "scratch"
        self.scratch.mkdir()
        self.request = request
        self.env = reader_environment()
        self.cwd = self.workdir
        self.replacements: dict[str, str] = {}
        self.last: tuple[Block, str] | None = None  # the last block run and what it printed
        self.chain: list[tuple[Block, str]] = []  # the python blocks the next `continue` block runs after
        self.ran = 0

    def run(self) -> None:
        skipped = False  # the block before was skipped: so is its output
        for block in self.page.blocks:
            kind = block.kind
            if kind == "skip" or (kind == "output" and skipped):
                self.last, skipped = None, True
                continue
            skipped = False
            if kind == "output":
                self.compare(block)
                continue
            self.replacements = {}
            for name, *args in block.fixtures:
                if name not in FIXTURES:
                    raise MarkupError(f"{block.where}: no fixture {name!r} (known: {', '.join(FIXTURES)})")
                FIXTURES[name](self, args)
            text = block.text
            for old, new in self.replacements.items():
                text = text.replace(old, new)
            run = {
                "file": self.write_file,
                "python": self.python,
                "shell": self.shell,
                "page": self.inner_page,
            }[kind]
            status, output = run(block, text)
            expected = int(block.mark("exit")[1][0]) if block.mark("exit") else 0  # type: ignore[index]
            if status != expected:
                raise AssertionError(
                    f"{block.where}: exit status {status}, expected {expected}:\n{text}\n"
                    f"--- printed:\n{screen(output)}"
                )
            self.last = (block, output)
            self.ran += 1

    def compare(self, block: Block) -> None:
        if self.last is None:
            raise MarkupError(
                f"{block.where}: an output block must follow a block that runs (or mark it skip with why)"
            )
        ran, output = self.last
        numbers_vary = block.mark("output")[2] == NUMBERS_VARY  # type: ignore[index]
        if not output_matches(block.text, output, numbers_vary):
            raise AssertionError(
                f"{block.where}: the output shown is not what {ran.where} printed"
                f"{' (numbers may vary)' if numbers_vary else ''}:\n--- shown:\n{block.text}\n"
                f"--- printed:\n{screen(output)}"
            )

    def _process(self, command: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        try:
            output, _ = process.communicate(timeout=BLOCK_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            raise AssertionError(f"still running after {BLOCK_TIMEOUT} s:\n{command}\n{output}") from None
        return process.returncode, output

    def inner_page(self, block: Block, text: str) -> tuple[int, str]:
        path = self.scratch / f"page-{block.line}" / "page.md"
        path.parent.mkdir()
        path.write_text(text, encoding="utf-8")
        inner = PageRun(read_page(path), path.parent, self.request)
        inner.run()
        return 0, ""

    def write_file(self, block: Block, text: str) -> tuple[int, str]:
        path = self.workdir / str(block.file)
        if path.parent.is_symlink():
            raise MarkupError(
                f"{block.where}: {block.file} would write into the repository's {path.parent.name}/: "
                "choose another folder"
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if path.suffix != ".py":
            return 0, ""
        if path.name.startswith("test_"):
            # plain pytest: the venv's plugins (hypothesis, xdist ...) cost ~1.5 s to load and no example
            # uses them
            env = {**self.python_environment(), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
            return self._process(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", path.name], env, path.parent
            )
        return self._snippet([(block, text)], path.parent)

    def python(self, block: Block, text: str) -> tuple[int, str]:
        """A block marked `continue` runs after the page's python blocks before it, back to one
        that is not marked, in the same namespace (in a fresh interpreter: they run again)."""
        if block.mark("continue"):
            if not self.chain:
                raise MarkupError(f"{block.where}: `continue` needs a python block before it on the page")
        else:
            self.chain = []
        self.chain.append((block, text))
        return self._snippet(self.chain, self.workdir)

    def python_environment(self) -> dict[str, str]:
        """Python examples talk to AWS: here to the tests' endpoints on loopback (the session's
        `aws_endpoint` fixture sets AWS_ENDPOINT_URL and dummy credentials)."""
        self.request.getfixturevalue("aws_endpoint")
        return {**reader_environment(), **{k: v for k, v in os.environ.items() if k.startswith("AWS_")}}

    def _snippet(self, blocks: list[tuple[Block, str]], cwd: Path) -> tuple[int, str]:
        """Run the blocks in one namespace; what the last one printed."""
        marker = f"--- docs-test: {uuid.uuid4().hex} ---"
        command = [sys.executable, "-c", RUN_SNIPPETS, marker]
        for block, text in blocks:
            source = self.scratch / f"block-{block.line}.py"
            source.write_text("\n" * block.line + text, encoding="utf-8")  # line numbers as on the page
            command += [str(source), str(block.page)]
        status, output = self._process(command, self.python_environment(), cwd)
        before, found, after = output.partition(marker + "\n")
        return status, after if found else before

    def shell(self, block: Block, text: str) -> tuple[int, str]:
        state = self.scratch / "shell-state"
        script = self.scratch / f"block-{block.line}.sh"
        script.write_text(
            f"trap 'status=$?; env -0 > {state}.env; pwd > {state}.cwd; exit $status' EXIT\n"
            f"set -eo pipefail\n{text}",
            encoding="utf-8",
        )
        status, output = self._process(["bash", "--noprofile", "--norc", str(script)], self.env, self.cwd)
        if (state.parent / f"{state.name}.env").exists():
            raw = (state.parent / f"{state.name}.env").read_text(encoding="utf-8")
            self.env = dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)
            self.cwd = Path((state.parent / f"{state.name}.cwd").read_text(encoding="utf-8").strip())
        return status, output


# --- the tests ----------------------------------------------------------------------------------------


PAGES = pages()


@pytest.mark.parametrize("path", PAGES, ids=relative)
def test_examples_run(path: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    page = read_page(path)
    run = PageRun(page, tmp_path, request)
    if any(block.kind == "shell" and "make " in block.text for block in page.blocks) and (
        reason := stale_setup(run.workdir)
    ):
        pytest.fail(reason)
    run.run()


@pytest.mark.parametrize("path", PAGES, ids=relative)
def test_links_resolve(path: Path) -> None:
    page = read_page(path)
    broken = []
    for line, href in page.links:
        if "://" in href or href.startswith("mailto:"):
            continue
        target, _, anchor = href.partition("#")
        file = (path.parent / target).resolve() if target else path
        if not file.exists():
            broken.append(f"{relative(path)}:{line}: {href}: no file {relative(file)}")
        elif anchor and file.suffix == ".md" and anchor not in read_page(file).anchors:
            broken.append(f"{relative(path)}:{line}: {href}: no heading #{anchor} in {relative(file)}")
    assert not broken, "\n".join(broken)


def test_readme_is_short() -> None:
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_LIMIT, (
        f"README.md is {size} bytes: move reference text to a page under docs/ (limit {README_LIMIT})"
    )


def test_every_page_is_linked_from_the_readme_or_the_index() -> None:
    linked = set()
    for home in (ROOT / "README.md", ROOT / "docs" / "index.md"):
        linked |= {
            (home.parent / href.partition("#")[0]).resolve()
            for _, href in read_page(home).links
            if "://" not in href
        }
    orphans = [relative(page) for page in PAGES[1:] if page.resolve() not in linked]
    assert not orphans, f"pages no reader can reach: link them from docs/index.md: {orphans}"


def test_the_secret_key_list_is_documented_once_as_the_code_has_it() -> None:
    """docs/guarantees.md states lambda_kit.log.SECRET_KEY_PARTS, in its order; no other page lists it."""
    stated = ", ".join(f"`{part}`" for part in SECRET_KEY_PARTS)
    pages_with_list = [
        relative(page) for page in PAGES if stated in " ".join(page.read_text(encoding="utf-8").split())
    ]
    assert pages_with_list == ["docs/guarantees.md"], (
        f"the secret key list {stated} must be stated once, in docs/guarantees.md: found in {pages_with_list}"
    )


# --- the harness itself: it fails where the pages are wrong ---------------------------------------------


def _page(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "page.md"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "text, message",
    [
        ("```text\nsome output\n```\n", "block the test cannot run"),
        ("```\nno language\n```\n", "block the test cannot run"),
        ("<!-- docs-test: skip -->\n```sh\nnpx serverless deploy\n```\n", "needs its reason"),
        ("<!-- docs-test: sometimes -->\n```sh\ntrue\n```\n", "unknown docs-test directive"),
        (
            "<!-- docs-test: output -->\n\nSome prose.\n\n```sh\ntrue\n```\n",
            "not right before a fenced block",
        ),
    ],
)
def test_a_block_the_test_cannot_run_must_be_marked(tmp_path, text, message):
    with pytest.raises(MarkupError, match=message):
        read_page(_page(tmp_path, text))


@pytest.mark.parametrize(
    "text",
    [
        "```python\nraise SystemExit('stale example')\n```\n",
        "```sh\nfalse\necho never reached\n```\n",
        "```sh\nlambda-kit --help\n```\n",  # the venv is not active in a fresh terminal
        "```sh\necho 2 errors\n```\n<!-- docs-test: output -->\n```\n0 errors\n```\n",
        "```sh\necho 2 errors\n```\n<!-- docs-test: output (numbers vary) -->\n```\n0 warnings\n```\n",
        "<!-- docs-test: exit 1 -->\n```sh\ntrue\n```\n",
        "```python\n# test_app.py\ndef test_fails():\n    assert 1 == 2\n```\n",
        "```python\nx = 6\n```\n```python\nprint(x * 7)\n```\n",  # each block alone, unless marked `continue`
    ],
)
def test_a_wrong_example_fails_its_page(tmp_path, request, text):
    run = PageRun(read_page(_page(tmp_path, text)), tmp_path, request)
    with pytest.raises(AssertionError, match="exit status|not what"):
        run.run()


def test_the_shell_session_carries_over_and_numbers_may_vary(tmp_path, request):
    text = """\
    ```sh
    cd handlers && export GREETING=hello
    ```
    ```sh
    echo "$GREETING from $(basename "$PWD"), $((6 * 7)) ms"
    ```
    <!-- docs-test: output (numbers vary) -->
    ```
    hello from handlers, 12 ms
    ```
    <!-- docs-test: exit 3 -->
    ```sh
    exit 3
    ```
    """
    run = PageRun(read_page(_page(tmp_path, text)), tmp_path, request)
    run.run()
    assert run.ran == 3


def test_a_python_block_can_continue_the_one_before(tmp_path, request):
    text = """\
    ```python
    x = 6
    print("first")
    ```
    Some prose, and a block that is not Python:
    <!-- docs-test: skip (a part of serverless.yml) -->
    ```yaml
    functions: {}
    ```
    <!-- docs-test: continue -->
    ```python
    print(x * 7)
    ```
    <!-- docs-test: output -->
    ```
    42
    ```
    """
    run = PageRun(read_page(_page(tmp_path, text)), tmp_path, request)
    run.run()
    assert run.ran == 2
    alone = tmp_path / "alone"
    alone.mkdir()
    with pytest.raises(MarkupError, match="needs a python block before it"):
        PageRun(
            read_page(_page(alone, "<!-- docs-test: continue -->\n```python\nprint(1)\n```\n")),
            alone,
            request,
        ).run()
