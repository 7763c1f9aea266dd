"""What ``lambda-kit check`` reads of a function's zip before anything runs: whether every package
its code imports is there, on Lambda.

The zip holds the project files the package patterns keep, and (with the
serverless-python-requirements plugin) what the requirements file lists (``requirements.txt``, or
``custom.pythonRequirements.fileName``), with their own dependencies (read from the installed
distributions' metadata, their markers evaluated for the function's runtime); the Lambda runtime
adds boto3, botocore, s3transfer, jmespath, python-dateutil, urllib3, six and awslambdaric with
its own dependencies, and the standard library. The handler module and the project modules it
imports are read with ``ast``: an import outside a ``try`` that handles ``ImportError`` and outside
``if TYPE_CHECKING:`` needs its top-level package in the zip. lambda_kit's own imports are its
concern (its optional packages are imported where a feature needs them); a feature the code uses is
the user's: a ``model=`` needs pydantic.

What the zip would lack is an error naming the line to add to the requirements file (the
distribution of an installed module, e.g. ``yaml`` -> ``pyyaml``); Lambda would fail the import
with ``Runtime.ImportModuleError``.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename

from .._data import mapping
from ..extras import DISTRIBUTION
from ..local.config import FunctionConfig, ServiceConfig
from ..local.runtime_libraries import PROVIDED
from ..serverless_config import ConfigError, load

PLUGIN = "serverless-python-requirements"
RUNTIME_DISTRIBUTIONS = frozenset(PROVIDED)
"""What the Lambda Python runtime has beside the standard library (the local stack links the same)."""
RUNTIME_MODULES = frozenset(
    {
        "boto3",
        "botocore",
        "s3transfer",
        "jmespath",
        "dateutil",
        "urllib3",
        "six",
        "awslambdaric",
        "runtime_client",
        "simplejson",
        "snapshot_restore_py",
    }
)
LIBRARY = "lambda_kit"
IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


# --- the requirements file --------------------------------------------------------------------


@dataclass(frozen=True)
class Listed:
    """One requirement of the file: its distribution (None: not known from the line), extras,
    marker, and the line as written."""

    name: str | None
    extras: frozenset[str]
    marker: Any
    text: str
    located: bool = False  # a path or URL (its extras written after it), not a name


_EXTRAS = re.compile(r"^(?P<target>.+?)(?:\[(?P<extras>[^\]]*)\])?$")
_EGG = re.compile(r"#egg=([A-Za-z0-9._-]+)")


def _logical_lines(text: str) -> Iterator[str]:
    """The file's lines, continuations joined, comments cut."""
    joined = re.sub(r"\\\r?\n", "", text)
    for line in joined.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if line:
            yield line


def read_requirements(path: Path, seen: frozenset[Path] = frozenset()) -> tuple[list[Listed], list[str]]:
    """The requirements of the file at ``path`` (``-r`` files followed); (requirements, problems)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [], [f"cannot read {path.name}: {exc}"]
    listed: list[Listed] = []
    problems: list[str] = []
    for line in _logical_lines(text):
        included = re.match(r"^(?:-r|--requirement)[\s=]+(\S+)$", line)
        if included is not None:
            other = (path.parent / included.group(1)).resolve()
            if other not in seen:
                more, issues = read_requirements(other, seen | {path.resolve()})
                listed += more
                problems += issues
            continue
        if line.startswith("-") and not re.match(r"^(?:-e|--editable)\s", line):
            continue  # an option of pip's (--index-url, -c, --only-binary ...): no requirement
        found = _listed(re.sub(r"^(?:-e|--editable)\s+", "", line).split(" --")[0].strip())
        if found is None:
            problems.append(f"{path.name}: {line!r} is not a requirement pip can read")
        else:
            listed.append(found)
    return listed, problems


def _listed(text: str) -> Listed | None:
    if "/" in text or text.startswith(".") or text.endswith((".whl", ".zip", ".tar.gz")):
        if " @ " not in text:
            return _located(text)
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        return None
    return Listed(
        canonicalize_name(requirement.name), frozenset(requirement.extras), requirement.marker, text
    )


def _located(text: str) -> Listed:
    """A path or URL: the distribution from ``#egg=``, or a wheel's or sdist's file name."""
    egg = _EGG.search(text)
    found = _EXTRAS.match(_EGG.sub("", text))
    target = found.group("target") if found else text
    extras = (
        frozenset(e.strip() for e in (found.group("extras") or "").split(",") if e.strip())
        if found
        else frozenset()
    )
    name = canonicalize_name(egg.group(1)) if egg else _file_distribution(target.rsplit("/", 1)[-1])
    return Listed(name, extras, None, text, located=True)


def _file_distribution(file_name: str) -> str | None:
    try:
        if file_name.endswith(".whl"):
            return str(parse_wheel_filename(file_name)[0])
        return str(parse_sdist_filename(file_name)[0])
    except ValueError:
        return None


# --- what the zip holds -------------------------------------------------------------------------


def runtime_environment(config: ServiceConfig) -> dict[str, str]:
    """The marker environment of the function's runtime (``python3.12`` on Linux)."""
    environment = dict(default_environment())
    runtime = str(config.provider.get("runtime") or "")
    version = (
        runtime.removeprefix("python") if runtime.startswith("python3.") else environment["python_version"]
    )
    arm = str(config.provider.get("architecture")) == "arm64"
    environment.update(
        python_version=version,
        python_full_version=f"{version}.0",
        sys_platform="linux",
        platform_system="Linux",
        os_name="posix",
        platform_machine="aarch64" if arm else "x86_64",
    )
    return environment


def _applies(marker: Any, environment: dict[str, str], extras: frozenset[str]) -> bool:
    if marker is None:
        return True
    return any(marker.evaluate({**environment, "extra": extra}) for extra in (extras or {""}))


def _installed(name: str) -> metadata.Distribution | None:
    try:
        return metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None


def bundled(listed: list[Listed], environment: dict[str, str]) -> set[str]:
    """The distributions the requirements bring (each with its dependencies, where installed here)."""
    seen: set[tuple[str, frozenset[str]]] = set()
    waiting = [
        (item.name, item.extras)
        for item in listed
        if item.name and _applies(item.marker, environment, frozenset())
    ]
    while waiting:
        wanted = waiting.pop()
        if wanted not in seen:
            seen.add(wanted)  # type: ignore[arg-type]
            waiting += _dependencies(*wanted, environment)  # type: ignore[arg-type]
    return {name for name, _ in seen}


def _dependencies(
    name: str, extras: frozenset[str], environment: dict[str, str]
) -> list[tuple[str, frozenset[str]]]:
    """What the installed distribution ``name`` with ``extras`` requires on the runtime (nothing
    known when it is not installed here)."""
    distribution = _installed(name)
    requirements = [Requirement(text) for text in (distribution.requires or [])] if distribution else []
    return [
        (canonicalize_name(requirement.name), frozenset(requirement.extras))
        for requirement in requirements
        if _applies(requirement.marker, environment, extras)
    ]


@cache
def _modules_of_distributions() -> dict[str, set[str]]:
    """{distribution: its top-level modules} of what is installed here."""
    found: dict[str, set[str]] = {}
    for module, names in metadata.packages_distributions().items():
        for name in names:
            found.setdefault(canonicalize_name(name), set()).add(module)
    return found


def modules_of(distributions: set[str]) -> set[str]:
    """The top-level modules the distributions install (their own name's, where not installed here)."""
    known = _modules_of_distributions()
    return {module for name in distributions for module in known.get(name, {name.replace("-", "_")})}


def distribution_of(module: str) -> str | None:
    """The distribution that installs ``module`` here, canonical (``yaml`` -> ``pyyaml``)."""
    names = metadata.packages_distributions().get(module)
    return canonicalize_name(names[0]) if names else None


# --- the package patterns ----------------------------------------------------------------------


def _glob(pattern: str) -> re.Pattern[str]:
    """A package pattern (``handlers/**``, ``!**/*.pyc``, ``{a,b}``) as a regular expression."""
    out = []
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
            continue
        char = pattern[index]
        out.append(
            ".*"
            if pattern.startswith("**", index)
            else "[^/]*"
            if char == "*"
            else "[^/]"
            if char == "?"
            else "(?:"
            if char == "{"
            else ")"
            if char == "}"
            else "|"
            if char == ","
            else re.escape(char)
        )
        index += 2 if pattern.startswith("**", index) else 1
    return re.compile("".join(out))


def in_package(patterns: list[str], relative: str) -> bool:
    """Whether the project file at ``relative`` is in the zip: every file, then each pattern in
    order (``!``: out)."""
    kept = True
    for pattern in patterns:
        negated = pattern.startswith("!")
        if _glob(pattern.removeprefix("!").removeprefix("./")).fullmatch(relative):
            kept = not negated
    return kept


def _patterns(document: dict[str, Any], function: FunctionConfig) -> list[str]:
    package = document.get("package") if isinstance(document.get("package"), dict) else {}
    own = function.setting("package") if isinstance(function.setting("package"), dict) else {}
    found = [*(package.get("patterns") or []), *(own.get("patterns") or [])]
    return [pattern for pattern in found if isinstance(pattern, str)]


# --- the imports of the code -------------------------------------------------------------------


@dataclass(frozen=True)
class Imported:
    module: str  # absolute, dotted
    line: int


class _Imports(ast.NodeVisitor):
    """The imports a module makes whatever happens, as absolute names (``package``: the module's
    own package, for relative imports)."""

    def __init__(self, package: str) -> None:
        self.package = package
        self.found: list[Imported] = []

    def visit_Try(self, node: ast.Try) -> None:
        guarded = any(_catches_import_error(handler) for handler in node.handlers)
        for child in node.body if not guarded else []:
            self.visit(child)
        for child in [*node.handlers, *node.orelse, *node.finalbody]:
            self.visit(child)

    visit_TryStar = visit_Try  # type: ignore[assignment]

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node.test):
            for child in node.body:
                self.visit(child)
        for child in node.orelse:
            self.visit(child)

    def visit_Import(self, node: ast.Import) -> None:
        self.found += [Imported(alias.name, node.lineno) for alias in node.names]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = _absolute(node.module or "", node.level, self.package)
        if base is None or base == "__future__":
            return
        self.found.append(Imported(base, node.lineno))
        self.found += [
            Imported(f"{base}.{alias.name}", node.lineno) for alias in node.names if alias.name != "*"
        ]


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(name, ast.Name) and name.id in IMPORT_ERRORS for name in names)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _absolute(module: str, level: int, package: str) -> str | None:
    if level == 0:
        return module
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, module] if module else base) or None


def _project_file(root: Path, module: str) -> Path | None:
    """The file of ``module`` in the project, if it is the project's."""
    path = root.joinpath(*module.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _module_name(root: Path, path: Path) -> tuple[str, str]:
    """(the module's dotted name, its package) for a project file."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
        return ".".join(parts), ".".join(parts)
    return ".".join(parts), ".".join(parts[:-1])


def _read_imports(root: Path, path: Path) -> list[Imported]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return []  # the import itself fails, and check says so
    visitor = _Imports(_module_name(root, path)[1])
    visitor.visit(tree)
    return visitor.found


@dataclass
class Walk:
    """The project files a handler reaches, and the outside modules they import (first seen where)."""

    files: list[Path] = field(default_factory=list)
    outside: dict[str, tuple[Path, int]] = field(default_factory=dict)  # top-level module -> (file, line)


def walk(root: Path, start: Path) -> Walk:
    """The project modules ``start`` imports (followed), and the top-level packages from outside."""
    found = Walk()
    waiting = [start]
    while waiting:
        path = waiting.pop(0)
        if path in found.files:
            continue
        found.files.append(path)
        for imported in _read_imports(root, path):
            top = imported.module.partition(".")[0]
            package = None if top == LIBRARY else _project_file(root, top)
            if top in sys.stdlib_module_names:
                continue
            if package is None:
                found.outside.setdefault(top, (path, imported.line))
                continue
            own = _project_file(root, imported.module)
            waiting += [package] if own is None else [package, own]
    return found


# --- the findings ------------------------------------------------------------------------------


@dataclass
class Zip:
    """What the service's zip holds, as far as check can tell."""

    root: Path
    requirements: str  # the file's name, as serverless.yml names it
    listed: list[Listed]
    problems: list[str]
    plugin: bool
    modules: set[str]  # top-level modules the requirements and the runtime bring
    document: dict[str, Any]

    def lacks(self, module: str) -> bool:
        return module not in self.modules and module not in RUNTIME_MODULES


def service_zip(config: ServiceConfig) -> Zip | None:
    """What the zip holds; None where check cannot tell (the plugin reads a Pipfile or Poetry's
    pyproject.toml, or serverless.yml cannot be read again)."""
    try:
        document = load(config.path)
    except ConfigError:
        return None
    settings = config.custom.get("pythonRequirements")
    settings = settings if isinstance(settings, dict) else {}
    name = str(settings.get("fileName") or "requirements.txt")
    root = config.project_dir
    plugin = _uses_plugin(document)
    if plugin and _other_manifest(root, settings):
        return None
    listed, problems = read_requirements(root / name) if (root / name).is_file() else ([], [])
    distributions = bundled(listed, runtime_environment(config)) if plugin else set()
    removed = {canonicalize_name(str(n)) for n in settings.get("noDeploy") or [] if isinstance(n, str)}
    return Zip(root, name, listed, problems, plugin, modules_of(distributions - removed), document)


def _uses_plugin(document: dict[str, Any]) -> bool:
    """Whether serverless-python-requirements is among the plugins (a list, or ``modules:``)."""
    plugins = document.get("plugins")
    plugins = plugins.get("modules") if isinstance(plugins, dict) else plugins
    return isinstance(plugins, list) and PLUGIN in plugins


def _other_manifest(root: Path, settings: dict[str, Any]) -> bool:
    """Whether the plugin reads a Pipfile or Poetry's pyproject.toml instead of the requirements file."""
    pipfile = (root / "Pipfile").is_file() and settings.get("usePipenv", True) is not False
    pyproject = root / "pyproject.toml"
    poetry = (
        pyproject.is_file()
        and settings.get("usePoetry", True) is not False
        and "[tool.poetry" in pyproject.read_text(encoding="utf-8", errors="replace")
    )
    return pipfile or poetry


def _where(root: Path, path: Path, line: int) -> str:
    return f"{path.relative_to(root).as_posix()}:{line}"


def _unbundled(zip_: Zip) -> str:
    if zip_.plugin:
        return f"{zip_.requirements} does not bring it"
    return f"nothing of {zip_.requirements} reaches the zip ({PLUGIN} is not among the plugins)"


def import_findings(zip_: Zip, function: FunctionConfig, handler_file: Path) -> list[str]:
    """One error for each package the handler's code imports that the zip would lack."""
    try:
        handler_file.relative_to(zip_.root)
    except ValueError:
        return []  # the handler module is not the project's: nothing check can read
    reached = walk(zip_.root, handler_file)
    patterns = _patterns(zip_.document, function)
    relative = [path.relative_to(zip_.root) for path in reached.files]
    found = [
        f"{path.as_posix()} is imported by the handler, but the package patterns leave it out of the zip: "
        f"Lambda fails the import with Runtime.ImportModuleError; add {_pattern_for(path)} to "
        "package.patterns"
        for path in relative
        if not in_package(patterns, path.as_posix())
    ]
    if function.setting("layers") or mapping(zip_.document.get("provider")).get("layers"):
        return found  # a layer may bring any package: check cannot see inside one
    return found + [
        f"{_where(zip_.root, path, line)} imports {module}, which the zip would not hold "
        f"({_unbundled(zip_)}, nor the package patterns or the Lambda runtime): Lambda fails the "
        f"import with Runtime.ImportModuleError; {_fix(zip_, module)}"
        for module, (path, line) in sorted(reached.outside.items())
        if not _holds(zip_, patterns, module)
    ]


def _holds(zip_: Zip, patterns: list[str], module: str) -> bool:
    """Whether the zip holds the top-level package ``module`` from outside the handler's code
    (lambda_kit as project code, where the project has it, as this repository does)."""
    if module == LIBRARY and _project_file(zip_.root, LIBRARY) is not None:
        return in_package(patterns, f"{LIBRARY}/__init__.py")
    return not zip_.lacks(module)


def _pattern_for(path: Path) -> str:
    """The pattern that keeps a project file: its top folder's, or the file itself."""
    return f"{path.parts[0]}/**" if len(path.parts) > 1 else path.as_posix()


def _fix(zip_: Zip, module: str) -> str:
    if not zip_.plugin:
        return f"add {PLUGIN} to plugins, and {_line_for(module)} to {zip_.requirements}"
    distribution = distribution_of(module)
    if distribution is None:
        return f"add the distribution that provides {module} to {zip_.requirements}"
    return f"add the line {_line_for(module)} to {zip_.requirements}"


def _line_for(module: str) -> str:
    return DISTRIBUTION if module == LIBRARY else distribution_of(module) or module


def model_findings(zip_: Zip, models: list[str]) -> list[str]:
    """``model=`` needs pydantic: one error per model when the zip would not hold it."""
    if not models or not zip_.lacks("pydantic"):
        return []
    fix = _pydantic_line(zip_)
    return [
        f"{model} needs pydantic, which the zip would not hold ({_unbundled(zip_)}): on Lambda the import "
        f"fails with Runtime.ImportModuleError (No module named 'pydantic'); {fix}"
        for model in models
    ]


def _pydantic_line(zip_: Zip) -> str:
    """The line that brings pydantic: lambda_kit's line with its pydantic extra, else pydantic's own."""
    own = next((item for item in zip_.listed if item.name == DISTRIBUTION), None)
    prefix = f"add {PLUGIN} to plugins, and " if not zip_.plugin else ""
    if own is None:
        return f"{prefix}add the line {_pydantic_requirement()} to {zip_.requirements}"
    extras = sorted(own.extras | {"pydantic"})
    if own.located:
        target = _EXTRAS.match(_EGG.sub("", own.text))
        line = f"{target.group('target') if target else own.text}[{','.join(extras)}]"
    else:
        requirement = Requirement(own.text)
        requirement.extras = set(extras)
        line = str(requirement)
    return f"{prefix}write its lambda_kit line as {line} in {zip_.requirements}"


def _pydantic_requirement() -> str:
    """pydantic as lambda_kit's pydantic extra requires it (``pydantic>=2.10``)."""
    for text in metadata.requires(DISTRIBUTION) or []:
        requirement = Requirement(text)
        if requirement.name == "pydantic":
            return f"pydantic{requirement.specifier}"
    return "pydantic"
