"""The manual (README.md and docs/) read as tests: its fenced blocks, their markers, links and anchors.

Conventions (docs/contributing.md says them for writers): a ```python block runs as a script; one whose
first line is a comment naming a file (``# app.py``) is that file, and a ``test_*.py`` file is run with
pytest; a ```sh block runs in the page's shell session; any other block needs a marker, an HTML
comment right before it such as ``<!-- docs-test: output -->`` or ``<!-- docs-test: skip (why) -->``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.anchors import anchors_plugin

ROOT = Path(__file__).resolve().parent.parent

PYTHON = {"python", "py", "python3"}
SHELL = {"sh", "bash", "shell"}
# a block whose first line is a comment naming a file (a path with an extension) is that file
FILE_COMMENT = re.compile(r"#\s*([\w.-]+(?:/[\w.-]+)*\.[A-Za-z]\w*)\s*")
MARKER = re.compile(r"<!--\s*docs-test:(.*?)-->", re.S)
DIRECTIVE = re.compile(r"\s*(?P<name>[a-z-]+)(?P<args>(?:\s+[^\s()]+)*)\s*(?:\((?P<note>[^()]*)\))?\s*")
# name -> (the arguments it takes, whether the note in parentheses is required)
DIRECTIVES = {
    "skip": (0, True),  # not run; the note says why
    "output": (0, False),  # what the block before printed; the note may be "numbers vary"
    "exit": (1, False),  # the exit status the block ends with (default 0)
    "with": (None, False),  # a fixture the block needs: `with local-stack`, `with table ViewStats`
    "file": (1, False),  # the block is this file (for languages without # comments)
    "page": (0, False),  # the block is a Markdown page itself, run the same way
    "continue": (0, False),  # a python block that runs after the one before it, in its namespace
}
NUMBERS_VARY = "numbers vary"


class MarkupError(ValueError):
    """A marker or block the test cannot make sense of; the message names the page and line."""


Mark = tuple[str, list[str], str]  # (directive, its arguments, the note in parentheses)


@dataclass
class Block:
    page: Path
    line: int  # the opening fence's line, 1-based
    language: str
    text: str
    marks: list[Mark] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{relative(self.page)}:{self.line}"

    def mark(self, name: str) -> Mark | None:
        return next((mark for mark in self.marks if mark[0] == name), None)

    @property
    def fixtures(self) -> list[list[str]]:
        """Each `with NAME ARGS...` directive's words."""
        return [args for name, args, _ in self.marks if name == "with"]

    @property
    def file(self) -> str | None:
        """The path a file block is written to (relative to the page's directory), else None."""
        named = self.mark("file")
        if named:
            return named[1][0]
        match = FILE_COMMENT.fullmatch(self.text.split("\n", 1)[0])
        return match.group(1) if match and self.language not in SHELL else None

    @property
    def kind(self) -> str:
        """skip, output, page, file, python or shell."""
        for kind in ("skip", "output", "page"):
            if self.mark(kind):
                return kind
        if self.file is not None:
            return "file"
        if self.language in PYTHON:
            return "python"
        if self.mark("continue"):
            raise MarkupError(f"{self.where}: `continue` is for ```python blocks")
        if self.language in SHELL:
            return "shell"
        raise MarkupError(
            f"{self.where}: a ```{self.language or '(no language)'} block the test cannot run: mark it "
            "<!-- docs-test: output --> (checked against the block before) or <!-- docs-test: skip (why) -->"
        )


@dataclass
class Page:
    path: Path
    blocks: list[Block]
    links: list[tuple[int, str]]  # (line, href)
    anchors: set[str]


def relative(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def pages() -> list[Path]:
    """README.md and every Markdown page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    anchors_plugin(md, min_level=1, max_level=6)  # GitHub's heading ids
    return md


def parse_marks(text: str, where: str) -> list[Mark]:
    found: list[Mark] = []
    for part in re.split(r";(?![^(]*\))", text):  # a `;` inside a (note) separates nothing
        if not part.strip():
            continue
        match = DIRECTIVE.fullmatch(part)
        if not match or match.group("name") not in DIRECTIVES:
            raise MarkupError(
                f"{where}: unknown docs-test directive {part.strip()!r} (known: {', '.join(DIRECTIVES)})"
            )
        name, args, note = (
            match.group("name"),
            match.group("args").split(),
            (match.group("note") or "").strip(),
        )
        arity, note_required = DIRECTIVES[name]
        if arity is not None and len(args) != arity:
            raise MarkupError(f"{where}: `{name}` takes {arity} argument{'s' * (arity != 1)}, not {args}")
        if name == "with" and not args:
            raise MarkupError(f"{where}: `with` names a fixture, e.g. `with local-stack`")
        if note_required and not note:
            raise MarkupError(
                f"{where}: `{name}` needs its reason in parentheses, e.g. `{name} (needs an AWS account)`"
            )
        found.append((name, args, note))
    return found


def _links(tokens: list[Token]) -> list[tuple[int, str]]:
    links = []
    line = 0
    for token in tokens:
        if token.map:
            line = token.map[0] + 1
        for child in token.children or ():
            if child.type == "link_open":
                links.append((line, str(child.attrGet("href"))))
            elif child.type == "image":
                links.append((line, str(child.attrGet("src"))))
    return links


@cache
def read_page(path: Path) -> Page:
    tokens = _markdown().parse(path.read_text(encoding="utf-8"))
    blocks: list[Block] = []
    pending: tuple[int, list[Mark]] | None = None
    for token in tokens:
        line = token.map[0] + 1 if token.map else 0
        if token.type == "html_block" and MARKER.search(token.content):
            if pending is not None:
                raise MarkupError(
                    f"{relative(path)}:{pending[0]}: "
                    "a docs-test marker that is not right before a fenced block"
                )
            marks = [
                mark
                for text in MARKER.findall(token.content)
                for mark in parse_marks(text, f"{relative(path)}:{line}")
            ]
            pending = (line, marks)
            continue
        if token.type == "fence":
            language = token.info.split()[0] if token.info.strip() else ""
            block = Block(path, line, language, token.content, pending[1] if pending else [])
            block.kind  # noqa: B018 -- an unmarked block the test cannot run fails here
            blocks.append(block)
            pending = None
        elif pending is not None and token.type not in ("html_block",):
            raise MarkupError(
                f"{relative(path)}:{pending[0]}: a docs-test marker that is not right before a fenced block"
            )
    if pending is not None:
        raise MarkupError(
            f"{relative(path)}:{pending[0]}: a docs-test marker at the end of the page, before no block"
        )
    anchors = {str(t.attrGet("id")) for t in tokens if t.type == "heading_open"}
    return Page(path, blocks, _links(tokens), anchors)


# --- comparing what a block printed with the output block after it -------------------------------


def screen(text: str) -> str:
    """What a terminal shows: a carriage return rewrites its line; trailing blanks dropped."""
    return "\n".join(line.rsplit("\r", 1)[-1].rstrip() for line in text.split("\n")).strip("\n")


_NUMBER = r"\d+(?:[.,]\d+)*"


def output_pattern(expected: str, numbers_vary: bool = False) -> re.Pattern[str]:
    """`...` stands for anything (also several lines), any run of blanks for any other run of
    blanks; with ``numbers_vary``, any number for any number."""
    parts = []
    for piece in re.split(r"(\.\.\.|\s+|" + _NUMBER + ")", expected.strip()):
        if not piece:
            continue
        if piece == "...":
            parts.append(r"[\s\S]*?")
        elif piece.isspace():
            parts.append(r"\s+")
        elif numbers_vary and re.fullmatch(_NUMBER, piece):
            parts.append(_NUMBER)
        else:
            parts.append(re.escape(piece))
    return re.compile(r"\s*" + "".join(parts) + r"\s*")


def output_matches(expected: str, actual: str, numbers_vary: bool = False) -> bool:
    return output_pattern(expected, numbers_vary).fullmatch(screen(actual)) is not None
