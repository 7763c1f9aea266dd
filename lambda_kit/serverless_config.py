"""Read the files a user names to ``lambda-kit``: ``serverless.yml`` as plain data, and any other
file, refusing what would hang or flood the command.

``open_regular(path, fix)`` opens a regular file and nothing else: a FIFO, a device
(``/dev/zero``), a socket or a directory is refused before a byte is read, and an OS error
(``Permission denied``) is one line naming the file. ``read_text(path, limit, fix)`` reads one of
at most ``limit`` bytes.

``load(path)`` returns ``serverless.yml`` as written: ``${...}`` variables are left as strings for
the caller to resolve, and CloudFormation short tags become their long form (``!GetAtt
Table.Arn`` -> ``{"Fn::GetAtt": ["Table", "Arn"]}``, ``!Ref Queue`` -> ``{"Ref": "Queue"}``, ``!Sub
s`` -> ``{"Fn::Sub": s}``), the same data the framework itself sees. The YAML has limits: at
most ``MAX_YAML_BYTES``, ``MAX_DEPTH`` levels of nesting and ``MAX_NODES`` values once its aliases
are expanded (a few hundred bytes of nested aliases can stand for billions of values).
"""

from __future__ import annotations

import functools
import os
import stat
from typing import IO, Any

from .extras import import_optional

MAX_YAML_BYTES = 1_000_000
"""CloudFormation's own limit for a template (uploaded through S3); serverless.yml is far smaller."""
MAX_DEPTH = 100
"""Levels of nesting, aliases expanded (a deep CloudFormation policy takes about 15)."""
MAX_NODES = 250_000
"""Values (mappings, lists, scalars) once aliases are expanded."""

TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels"
TOO_MANY = f"more than {MAX_NODES:,} values once its aliases are expanded"
SERVERLESS_YML_FIX = "run in the service directory or pass the path to serverless.yml"

_KINDS = {
    stat.S_ISDIR: "a directory",
    stat.S_ISFIFO: "a FIFO (named pipe)",
    stat.S_ISCHR: "a character device",
    stat.S_ISBLK: "a block device",
    stat.S_ISSOCK: "a socket",
}


class ConfigError(Exception):
    """A file the user named is missing, unreadable or invalid; the message is one line naming
    what to fix."""


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS.items() if test(mode)), "not a regular file")


def open_regular(path: str | os.PathLike[str], fix: str) -> IO[bytes]:
    """``path`` opened for reading in binary, if it is a regular file; else ``ConfigError`` (one
    line, ending with ``fix`` where the user can act). Opened without blocking, so a FIFO is
    refused instead of waiting for a writer."""
    name = os.fspath(path)
    try:
        descriptor = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ConfigError(f"{name} not found: {fix}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {name}: {exc.strerror or exc}") from None
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        raise ConfigError(f"{name} is {_kind(mode)}, not a file: {fix}")
    return os.fdopen(descriptor, "rb")


def read_text(path: str | os.PathLike[str], limit: int, fix: str) -> str:
    """The UTF-8 text of the regular file ``path``, of at most ``limit`` bytes; else ``ConfigError``."""
    name = os.fspath(path)
    with open_regular(name, fix) as file:
        try:
            data = file.read(limit + 1)
        except OSError as exc:
            raise ConfigError(f"cannot read {name}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise ConfigError(
            f"{name} is larger than {limit:,} bytes, more than lambda-kit reads: pass a smaller file"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{name} is not UTF-8 text (byte {exc.start}): {fix}") from None


# --- the YAML loader ------------------------------------------------------------------------------


@functools.cache
def _yaml() -> Any:
    """PyYAML and its safe loader (libyaml's C one where PyYAML has it: ten times faster) made
    strict; built on first use, since PyYAML comes with the ``local`` extra and the decorators
    never need it."""
    yaml = import_optional("yaml", "reading serverless.yml")
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = type("ServerlessLoader", (base,), {"construct_mapping": _construct_mapping})
    # Every `!Name` tag (Ref, GetAtt, Sub, Join, If, Select, ImportValue, ...) -> its long form.
    loader.add_multi_constructor("!", _construct_tag)
    return yaml, loader


class _Measure:
    """The document's size and depth with its aliases expanded, read from its parsing events (one
    pass, no recursion) before it is built: a bomb or a deep nesting is refused at the event that
    crosses the limit."""

    def __init__(self) -> None:
        # per collection being read: [values, depth of its deepest child, anchor]
        self.open: list[list[Any]] = []
        self.anchors: dict[str, tuple[int, int]] = {}  # anchor -> (values, depth) of its node

    def event(self, yaml: Any, event: Any) -> None:
        if isinstance(event, yaml.CollectionStartEvent):
            self.limit(len(self.open) < MAX_DEPTH, TOO_DEEP, event)
            self.open.append([1, 0, event.anchor])
        elif isinstance(event, yaml.CollectionEndEvent):
            values, depth, anchor = self.open.pop()
            self.finished(values, depth + 1, anchor, event)
        elif isinstance(event, yaml.ScalarEvent):
            self.finished(1, 1, event.anchor, event)
        elif isinstance(event, yaml.AliasEvent):
            self.aliased(event)

    def aliased(self, event: Any) -> None:
        opened = {anchor for _, _, anchor in self.open}
        self.limit(event.anchor not in opened, "an alias refers to the value that holds it", event)
        if event.anchor in self.anchors:  # an undefined one: the composer says so
            self.finished(*self.anchors[event.anchor], None, event)

    def finished(self, values: int, depth: int, anchor: str | None, event: Any) -> None:
        """A node read: its anchor remembered, its size and depth added to its collection's."""
        if anchor is not None:
            self.anchors[anchor] = (values, depth)
        if self.open:
            parent = self.open[-1]
            parent[0] += values
            parent[1] = max(parent[1], depth)
            self.limit(parent[0] <= MAX_NODES, TOO_MANY, event)
            self.limit(len(self.open) + parent[1] <= MAX_DEPTH, TOO_DEEP, event)

    @staticmethod
    def limit(kept: bool, problem: str, event: Any) -> None:
        if not kept:
            raise _yaml()[0].composer.ComposerError(None, None, problem, event.start_mark)


def _construct_mapping(loader: Any, node: Any, deep: bool = False) -> dict[Any, Any]:
    """SafeLoader's mapping, with a duplicate key an error, as in the framework."""
    yaml, _ = _yaml()
    seen: set[Any] = set()
    for key_node, _value in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        if not _hashable(key):
            continue
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return yaml.constructor.SafeConstructor.construct_mapping(loader, node, deep=deep)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:  # an unhashable key: SafeLoader reports it
        return False
    return True


def _construct_tag(loader: Any, suffix: str, node: Any) -> dict[str, Any]:
    value = _node_value(loader, node)
    if suffix in ("Ref", "Condition"):
        return {suffix: value}
    if suffix == "GetAtt" and isinstance(value, str):
        resource, _, attribute = value.partition(".")
        return {"Fn::GetAtt": [resource, attribute]}
    return {f"Fn::{suffix}": value}


def _node_value(loader: Any, node: Any) -> Any:
    yaml, _ = _yaml()
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_mapping(node, deep=True)


def load(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The service configuration at ``path`` as plain data; ``ConfigError`` if missing or invalid."""
    name = os.fspath(path)
    text = read_text(name, MAX_YAML_BYTES, SERVERLESS_YML_FIX)
    config = _parse(name, text)
    if not isinstance(config, dict):
        kind = "empty" if config is None else f"a {type(config).__name__}, not a mapping"
        raise ConfigError(f"{name} is {kind}: expected service, provider and functions keys")
    return config


def _parse(name: str, text: str) -> Any:
    yaml, loader = _yaml()
    measure = _Measure()
    try:
        for event in yaml.parse(text, Loader=loader):
            measure.event(yaml, event)
        return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = exc.problem or exc.context or "invalid YAML"
        raise ConfigError(f"{name} is not valid YAML: {problem}{where}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{name} is not valid YAML: {' '.join(str(exc).split())}") from None
