"""What the Lambda Python runtime provides besides the zip, as one directory of links.

AWS's base images put boto3, botocore, s3transfer, jmespath, python-dateutil, urllib3 and six
(and the runtime interface client, awslambdaric, with its own dependencies) in ``/var/runtime``.
The local stack links the same distributions, as this interpreter has them installed, into a
directory of their own, so a worker's ``sys.path`` holds the task root, the requirements and this
directory, and nothing else of the development venv: a package the zip would lack does not import.
"""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

PROVIDED = (
    "boto3",
    "botocore",
    "s3transfer",
    "jmespath",
    "python-dateutil",
    "urllib3",
    "six",
    "awslambdaric",
    "simplejson",
    "snapshot-restore-py",
)
"""The distributions the runtime provides: the SDK and its dependencies, the runtime client and its."""


class RuntimeUnavailable(Exception):
    """A distribution the runtime provides is not installed here; one line naming the fix."""


def top_level(distribution: str) -> list[Path]:
    """The top-level modules, packages and metadata folders ``distribution`` installed."""
    try:
        found = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        raise RuntimeUnavailable(
            f"{distribution} is not installed: the local stack needs it to run functions as Lambda's "
            "runtime does (pip install 'lambda-event-kit[local]')"
        ) from None
    base = Path(str(found.locate_file("")))
    names = {Path(str(file)).parts[0] for file in found.files or [] if not str(file).startswith("..")}
    return sorted(base / name for name in names if name not in ("__pycache__", "bin"))


def assemble(into: Path) -> Path:
    """A directory of links to the runtime's distributions (made once per ``into``)."""
    into.mkdir(parents=True, exist_ok=True)
    for distribution in PROVIDED:
        for source in top_level(distribution):
            link = into / source.name
            if source.exists() and not os.path.lexists(link):
                link.symlink_to(source, target_is_directory=source.is_dir())
    return into
