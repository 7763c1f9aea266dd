"""``lambda-kit new DIR``: a service of your own that tests, checks, serves and packages as it is.

The service is rendered from ``templates/`` (shipped in the wheel): each file is written where it
sits there, without its ``.tmpl`` suffix (``gitignore.tmpl`` is ``.gitignore``). A template is the
file itself, with two rules:

- lines between ``%if WORD ...`` and ``%end`` (``%else`` turns the condition round) are kept when
  every WORD holds: ``api`` when that part is chosen, ``!api`` when it is not, ``sqs|stream`` when
  either alternative holds;
- ``__SERVICE__``, ``__VERSION__`` and ``__WHEEL__`` are replaced; a template that renders to
  nothing is not written.

lambda_kit reaches the functions' zip as a wheel in the service's ``vendor/`` that its
requirements.txt names: the one ``--wheel`` gives, else a wheel of the lambda_kit this command runs
from, made from its installed files as pip recorded them (pure Python: they are the wheel's files).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import re
import shutil
import zipfile
from collections.abc import Callable, Iterator
from importlib import metadata, resources
from importlib.resources.abc import Traversable
from pathlib import Path

from ..local.terminal import printable
from ._errors import UserError

DISTRIBUTION = "lambda-event-kit"
PARTS = {
    "api": "an HTTP API (one function, routes on a Router) that takes orders",
    "sqs": "a queue of orders and its consumer (with a dead-letter queue)",
    "stream": "a Kinesis stream of orders and its consumer (with an on-failure queue)",
    "counter": "the consumers count each order once per item (lambda_kit.counters, a DynamoDB table)",
}
DEFAULT_PARTS = "api,sqs"
CONSUMERS = frozenset({"sqs", "stream"})
SERVICE_NAME = re.compile(r"(?=.{1,40}$)[a-z](?:-?[a-z0-9])*")
"""Lower-case letters, digits and single hyphens, starting with a letter and ending with neither
hyphen, at most 40: a CloudFormation stack, an npm package and each resource can take it."""
WHEEL_NAME = re.compile(r"lambda_event_kit-([^-]+)-py3-none-any\.whl")
PIP_RECORDS = frozenset({"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"})
"""What pip adds to a distribution's .dist-info when it installs it: not part of the wheel."""
DOTFILES = {"gitignore": ".gitignore"}
RUNNING = Path(__file__).resolve().parent.parent / "__init__.py"
"""lambda_kit/__init__.py of the lambda_kit running here."""
NOT_FROM_A_WHEEL = (
    f"lambda_kit is not installed from a wheel here (an editable install has no {DISTRIBUTION} files to "
    "copy): pass --wheel PATH, e.g. the one `make dist` builds in dist/"
)


# --- the command line ---------------------------------------------------------------------------


def parts(text: str) -> frozenset[str]:
    """``--with``: the comma-separated parts of the service (an argparse type)."""
    chosen = frozenset(text.replace(" ", "").split(",")) - {""}
    if not chosen or not chosen <= PARTS.keys():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a list of parts: choose from {', '.join(PARTS)}, comma-separated, e.g. api,sqs"
        )
    if "counter" in chosen and not chosen & CONSUMERS:
        raise argparse.ArgumentTypeError(
            "counter counts what a consumer takes: add sqs or stream, e.g. --with api,sqs,counter"
        )
    return chosen


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", metavar="DIR", help="the service's directory: new, or empty")
    parser.add_argument(
        "--with",
        dest="parts",
        type=parts,
        default=parts(DEFAULT_PARTS),
        metavar="PARTS",
        help="comma-separated, from: "
        + "; ".join(f"{name}: {what}" for name, what in PARTS.items())
        + f" (default: {DEFAULT_PARTS})",
    )
    parser.add_argument("--name", default=None, help="the service's name (default: DIR's name)")
    parser.add_argument(
        "--wheel",
        default=None,
        metavar="PATH",
        help="the lambda_kit wheel to put in vendor/ (default: one made from the lambda_kit installed here)",
    )


# --- checks before anything is written ------------------------------------------------------------


def _new_directory(path: Path) -> Path:
    if path.exists() and not path.is_dir():
        raise UserError(f"{path} is not a directory: give the path of a new directory")
    if path.is_dir() and any(path.iterdir()):
        raise UserError(f"{path} exists and is not empty: give a new directory, or empty this one")
    return path


def _service_name(name: str | None, directory: Path) -> str:
    chosen = name or directory.resolve().name
    if SERVICE_NAME.fullmatch(chosen):
        return chosen
    fix = "choose another --name" if name else "pass --name NAME"
    raise UserError(
        f"{chosen!r} cannot name a service (lower-case letters, digits and single hyphens, starting "
        f"with a letter, at most 40): {fix}"
    )


def _given_wheel(path: Path) -> Path:
    if not WHEEL_NAME.fullmatch(path.name):
        raise UserError(
            f"{path} is not named as a lambda_kit wheel (lambda_event_kit-VERSION-py3-none-any.whl): "
            "pass the wheel `make dist` builds"
        )
    if not path.is_file() or not zipfile.is_zipfile(path):
        raise UserError(f"{path} is not a wheel file: pass the one `make dist` builds in dist/")
    return path


def _installed_files() -> tuple[metadata.Distribution, list[metadata.PackagePath]]:
    """The distribution of the lambda_kit running here and the files its wheel installed."""
    for found in metadata.distributions(name=DISTRIBUTION):
        files = _files_from_this_wheel(found)
        if files:
            return found, files
    raise UserError(NOT_FROM_A_WHEEL)


def _files_from_this_wheel(found: metadata.Distribution) -> list[metadata.PackagePath]:
    """The files ``found``'s wheel installed, if it is the lambda_kit running here ([] otherwise: an
    editable install, an .egg-info in a checkout, another environment's)."""
    files = [file for file in found.files or () if _in_wheel(file)]
    names = {str(file): file for file in files}
    init = names.get("lambda_kit/__init__.py")
    if init is None or f"lambda_event_kit-{found.version}.dist-info/WHEEL" not in names:
        return []
    return files if Path(str(init.locate())).resolve() == RUNNING else []


def _in_wheel(file: metadata.PackagePath) -> bool:
    """Whether an installed file came from the wheel (not a script, bytecode or pip's own record)."""
    top, name = file.parts[0], file.parts[-1]
    if top == ".." or "__pycache__" in file.parts:
        return False
    return not (top.endswith(".dist-info") and name in PIP_RECORDS)


# --- the wheel in vendor/ -----------------------------------------------------------------------------


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(distribution: metadata.Distribution, files: list[metadata.PackagePath], into: Path) -> Path:
    """The installed distribution as a wheel in ``into`` (its files, and a RECORD of them)."""
    stem = f"lambda_event_kit-{distribution.version}"
    path = into / f"{stem}-py3-none-any.whl"
    record = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        for file in files:
            data = file.read_binary()
            wheel.writestr(str(file), data)
            record.append(_record_line(str(file), data))
        record.append(f"{stem}.dist-info/RECORD,,")
        wheel.writestr(f"{stem}.dist-info/RECORD", "\n".join(record) + "\n")
    return path


# --- the templates --------------------------------------------------------------------------------


def _holds(word: str, chosen: frozenset[str]) -> bool:
    """``api`` holds when api is chosen, ``!api`` when it is not, ``sqs|stream`` when either holds."""
    return any((name.removeprefix("!") in chosen) != name.startswith("!") for name in word.split("|"))


def _kept_lines(text: str, chosen: frozenset[str]) -> Iterator[str]:
    """The lines of ``text`` its ``%if`` conditions keep for the ``chosen`` parts."""
    branches: list[bool] = []  # whether each open %if keeps its lines now
    for line in text.splitlines(keepends=True):
        directive, _, words = line.strip().partition(" ")
        if directive == "%if":
            branches.append(all(_holds(word, chosen) for word in words.split()))
        elif directive == "%else":
            branches[-1] = not branches[-1]
        elif directive == "%end":
            branches.pop()
        elif all(branches):
            yield line


def render(text: str, chosen: frozenset[str], values: dict[str, str]) -> str:
    """A template's text for the ``chosen`` parts, with ``values`` put in (see the module's doc);
    "" when nothing is left."""
    result = "".join(_kept_lines(text, chosen)).strip()
    for name, value in values.items():
        result = result.replace(name, value)
    return result + "\n" if result else ""


def _templates(folder: Traversable, prefix: str = "") -> Iterator[tuple[str, str]]:
    """(the path a template is written to, its text), for every template under ``folder``."""
    for entry in sorted(folder.iterdir(), key=lambda entry: entry.name):
        if entry.is_dir():
            yield from _templates(entry, f"{prefix}{entry.name}/")
        elif entry.name.endswith(".tmpl"):
            name = entry.name.removesuffix(".tmpl")
            yield prefix + DOTFILES.get(name, name), entry.read_text(encoding="utf-8")


def _write_service(directory: Path, chosen: frozenset[str], values: dict[str, str]) -> list[str]:
    written = []
    for name, template in _templates(resources.files(__package__) / "templates"):
        text = render(template, chosen, values)
        if text:
            (directory / name).parent.mkdir(parents=True, exist_ok=True)
            (directory / name).write_text(text, encoding="utf-8")
            written.append(name)
    return written


# --- the command ----------------------------------------------------------------------------------


def _wheel_maker(given: str | None) -> Callable[[Path], Path]:
    """What puts lambda_kit's wheel in vendor/: checked now, so a wrong one stops before any write."""
    if given is not None:
        wheel = _given_wheel(Path(given))
        return lambda vendor: Path(shutil.copy(wheel, vendor))
    distribution, files = _installed_files()
    return lambda vendor: _write_wheel(distribution, files, vendor)


def cmd_new(args: argparse.Namespace) -> int:
    directory = _new_directory(Path(args.directory))
    name = _service_name(args.name, directory)
    make_wheel = _wheel_maker(args.wheel)
    (directory / "vendor").mkdir(parents=True, exist_ok=True)
    wheel = make_wheel(directory / "vendor")
    version = wheel.name.split("-")[1]  # lambda_event_kit-VERSION-py3-none-any.whl
    values = {"__SERVICE__": name, "__VERSION__": version, "__WHEEL__": wheel.name}
    written = [*_write_service(directory, args.parts, values), f"vendor/{wheel.name}"]
    chosen = ", ".join(part for part in PARTS if part in args.parts)
    lines = [f"lambda-kit new: {directory}/ holds the service {name} ({chosen}), lambda_kit {version}:"]
    lines += [f"  {path}" for path in sorted(written)]
    lines.append(f"Next, in {directory}/: its README.md's three commands (test, check and serve, package)")
    for line in lines:
        print(printable(line))
    return 0
