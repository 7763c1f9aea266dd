"""What a function's zip would hold, as a directory its workers run from (``LAMBDA_TASK_ROOT``).

The files are chosen as osls chooses them for ``serverless package``: every file of the project,
then osls's default excludes (``.git/**``, ``.serverless/**`` ... and the config file itself),
``package.exclude``, then ``package.include`` and ``package.patterns`` in order (a ``!pattern``
excludes, any other includes; a later pattern wins over an earlier one), with the function's own
``package.patterns`` after the service's when it is packaged individually (``package.individually``
on the service or the function). Patterns are micromatch globs, matched here with wcmatch
(``**`` any depth, ``*`` within one folder, braces, dot files matched). The local stack's own
folder (``.lambda-kit``) and ``node_modules`` are never copied.

Functions packaged together share one task root. Each stack builds its own under
``.lambda-kit/stacks/<id>/`` (two stacks of one project may run at once) and removes it when it
stops; a rebuild after a file changed is a new directory, so warm workers keep the files they
were started with.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wcmatch import glob

from .._data import mapping
from .config import FunctionConfig, ServiceConfig

DEFAULT_EXCLUDES = (
    ".git/**",
    ".gitignore",
    ".DS_Store",
    "npm-debug.log",
    "yarn-*.log",
    ".serverless/**",
    ".serverless_plugins/**",
)
"""What osls leaves out of every zip (``package-service.js``)."""
NEVER_COPIED = (".lambda-kit", "node_modules")
"""Top-level folders never copied: the local stack's own, and Node's (osls drops its dev packages)."""
FLAGS = glob.GLOBSTAR | glob.BRACE | glob.DOTGLOB | glob.EXTGLOB


@dataclass(frozen=True)
class Artifact:
    """One zip's selection: its name (the service's, or the function's when individually) and patterns."""

    name: str
    patterns: tuple[str, ...]


def artifact_of(config: ServiceConfig, function: FunctionConfig) -> Artifact:
    """The zip ``function`` runs from, as osls packages it."""
    service = mapping(config.package)
    own = mapping(function.setting("package"))
    patterns = [
        *(f"!{p}" for p in (*DEFAULT_EXCLUDES, config.path.name)),
        *(f"!{p}" for p in _strings(service.get("exclude"))),
        *_strings(service.get("include")),
        *_strings(service.get("patterns")),
    ]
    if own.get("individually") or service.get("individually"):
        patterns += [
            *(f"!{p}" for p in _strings(own.get("exclude"))),
            *_strings(own.get("include")),
            *_strings(own.get("patterns")),
        ]
        return Artifact(function.key, tuple(patterns))
    return Artifact(config.service or "service", tuple(patterns))


def _strings(value: Any) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


def selected_files(project: Path, patterns: Iterable[str]) -> list[str]:
    """The project's files (relative, ``/``-separated) the patterns keep, in order."""
    patterns = list(patterns)
    files = list(_project_files(project, patterns))
    kept = dict.fromkeys(files, True)
    for pattern in patterns:
        exclude = pattern.startswith("!")
        body = pattern[1:] if exclude else pattern
        for path in glob.globfilter(files, body, flags=FLAGS):
            kept[path] = not exclude
    return [path for path, keep in kept.items() if keep]


GLOB_CHARACTERS = frozenset("*?[]{}!()@+")


def _excluded_whole(folder: str, patterns: list[str]) -> bool:
    """Whether the patterns leave out every file under the top-level ``folder``: one excludes it
    whole (``!**``, ``!folder/**``) and none after it could bring a file of it back. Such a folder
    (a venv, ``.git``) is not walked at all."""
    for index, pattern in enumerate(patterns):
        if pattern in ("!**", f"!{folder}/**"):
            later = [p for p in patterns[index + 1 :] if not p.startswith("!")]
            head = [p.split("/", 1)[0] for p in later]
            if not any(h == folder or GLOB_CHARACTERS & set(h) for h in head):
                return True
    return False


def _project_files(project: Path, patterns: list[str]) -> Iterable[str]:
    for folder, directories, names in os.walk(project, followlinks=True):
        relative = Path(folder).relative_to(project)
        if relative == Path("."):
            directories[:] = [
                d for d in directories if d not in NEVER_COPIED and not _excluded_whole(d, patterns)
            ]
        directories.sort()
        for name in sorted(names):
            yield (relative / name).as_posix()


def build(project: Path, artifact: Artifact, into: Path) -> tuple[Path, list[str]]:
    """Copy the artifact's files from ``project`` into a new directory under ``into``: its path,
    and the files (relative to ``project``)."""
    files = selected_files(project, artifact.patterns)
    digest = hashlib.sha256()
    for path in files:
        stat = (project / path).stat()
        digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    root = into / f"{artifact.name}-{digest.hexdigest()[:12]}"
    if root.is_dir():
        return root, files
    partial = root.with_name(root.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    for path in files:
        target = partial / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(project / path, target)
    partial.mkdir(parents=True, exist_ok=True)  # an artifact may hold no file (patterns left none)
    partial.rename(root)
    return root, files
