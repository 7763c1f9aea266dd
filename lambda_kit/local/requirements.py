"""The service's requirements, installed as serverless-python-requirements would put them in the
zip, for the interpreter that runs the workers, into a cache keyed by what they are.

Only a service using the plugin (``plugins: [serverless-python-requirements]``) gets them, as on a
deploy: its ``custom.pythonRequirements.fileName`` (default ``requirements.txt``) is installed with
``pip install --target`` (never into the development venv), then what the plugin leaves out is
removed: ``noDeploy`` packages and, with ``slim: true``, bytecode, ``*.dist-info`` and
``slimPatterns``. ``pipCmdExtraArgs`` are not passed: they choose Lambda's platform and Python,
and these wheels are for the local one.

The cache directory (``$LAMBDA_KIT_CACHE``, else ``$XDG_CACHE_HOME/lambda-kit`` or
``~/.cache/lambda-kit``) holds one directory per key: the requirements file's bytes, the files it
names by path (``./vendor/x.whl``; of a folder, its sources' sizes and times), the plugin options
above and the interpreter's version and platform. An install is made once per key (a file lock
serializes concurrent stacks), into a temporary directory renamed when complete.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from wcmatch import glob

from .._data import mapping
from .config import ServiceConfig

PLUGIN = "serverless-python-requirements"
SLIM_PATTERNS = ("**/*.py[c|o]", "**/__pycache__*", "**/*.dist-info*")
"""What ``slim: true`` removes besides ``slimPatterns`` (the plugin's defaults)."""
_PATH_LINE = re.compile(r"^\s*(\.{0,2}/[^\s\[;#]+)")


class RequirementsError(Exception):
    """The requirements could not be installed; one line."""


def cache_root() -> Path:
    explicit = os.environ.get("LAMBDA_KIT_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lambda-kit"


def requirements_file(config: ServiceConfig) -> Path | None:
    """The requirements file the plugin would install, or None (no plugin, no file)."""
    if PLUGIN not in config.plugins:
        return None
    name = mapping(config.custom.get("pythonRequirements")).get("fileName") or "requirements.txt"
    path = config.project_dir / str(name)
    return path if path.is_file() else None


def installed(config: ServiceConfig, python: str = sys.executable) -> Path | None:
    """The directory holding the service's requirements as the zip would (None: it has none)."""
    path = requirements_file(config)
    if path is None:
        return None
    options = _plugin_options(config)
    target = cache_root() / "requirements" / _key(path, options, config.project_dir)
    if (target / ".complete").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(target.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one install per key, whatever runs at the same time
        if not (target / ".complete").is_file():
            _install(path, options, target, python, config.project_dir)
    return target


def _plugin_options(config: ServiceConfig) -> dict[str, Any]:
    settings = mapping(config.custom.get("pythonRequirements"))
    return {
        "noDeploy": sorted(str(name) for name in settings.get("noDeploy") or []),
        "slim": settings.get("slim") is True,
        "slimPatterns": [str(p) for p in settings.get("slimPatterns") or []],
    }


def _key(path: Path, options: dict[str, Any], project: Path) -> str:
    digest = hashlib.sha256(path.read_bytes())
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        found = _PATH_LINE.match(line)
        named = (project / found.group(1)) if found else None
        if named is not None and named.is_file():
            digest.update(named.read_bytes())
        elif named is not None and named.is_dir():  # a project to build: its sources as they are now
            for source in _sources(named):
                stat = source.stat()
                digest.update(f"{source.relative_to(named)}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    digest.update(json.dumps(options, sort_keys=True).encode())
    digest.update(f"{sys.version_info[:2]}{platform.machine()}{sys.platform}".encode())
    return digest.hexdigest()[:16]


SKIPPED = frozenset({"node_modules", "build", "dist", "__pycache__"})


def _sources(root: Path) -> list[Path]:
    """The Python sources and build files of a project a requirement names by its folder."""
    found = []
    for folder, directories, names in os.walk(root, followlinks=True):
        directories[:] = sorted(d for d in directories if d not in SKIPPED and not d.startswith("."))
        found += [Path(folder) / n for n in sorted(names) if n.endswith((".py", ".toml", ".cfg", ".tmpl"))]
    return found


def _install(path: Path, options: dict[str, Any], target: Path, python: str, project: Path) -> None:
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    command = [
        python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile",
        "--target", str(partial), "-r", str(path),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=project, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()][-1:]
        raise RequirementsError(
            f"{path.name}: pip install failed ({' '.join(last) or f'exit {done.returncode}'}): fix the "
            "requirement or install it by hand"
        )
    _trim(partial, options)
    (partial / ".complete").write_text(str(path), encoding="utf-8")
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)


def _trim(root: Path, options: dict[str, Any]) -> None:
    """Remove what the plugin would leave out of the zip."""
    patterns = [*SLIM_PATTERNS, *options["slimPatterns"]] if options["slim"] else []
    for entry in sorted(root.iterdir()):
        if entry.name.split("-")[0].removesuffix(".py") in options["noDeploy"]:
            _remove(entry)
    flags = glob.GLOBSTAR | glob.BRACE | glob.DOTGLOB | glob.EXTGLOB
    for pattern in patterns:
        for found in sorted(glob.glob(pattern, root_dir=str(root), flags=flags), reverse=True):
            _remove(root / found)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
