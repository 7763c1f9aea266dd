"""The service's own load, for ``lambda-kit run`` and ``lambda-kit soak``.

lambda_kit knows no service: what ``run`` sends into the stack and what ``soak`` checks belong to
the service, in a module of its own that its serverless.yml names::

    custom:
      lambdaKit:
        run: loads.demo     # options(parser), run(stack, args, out) -> list[str]
        soak: loads.soak    # options(parser), soak(args, out) -> list[str]

The module is imported from the service's directory (first on ``sys.path``, as its handlers
are). ``options`` (optional) adds the load's own options to the command's; ``run`` gets the
started stack, ``soak`` starts what it needs itself; each prints its figures and returns what
failed (empty: everything passed). A service that names none gets one line saying so.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

from .config import ServiceConfig
from .terminal import shown_path

ENTRY_POINTS = {"run": "run", "soak": "soak"}
"""The function each command calls in the service's module."""


class LoadError(Exception):
    """The service names no load for a command, or its module cannot be used; one line."""


def load_module(config: ServiceConfig, command: str) -> ModuleType:
    """The module ``custom.lambdaKit.<command>`` of ``config`` names, imported from the service's
    directory, with its entry point checked."""
    settings = config.custom.get("lambdaKit")
    name = settings.get(command) if isinstance(settings, dict) else None
    entry = ENTRY_POINTS[command]
    where = shown_path(config.path)
    if not isinstance(name, str) or not name:
        raise LoadError(
            f"{where} names no load for `lambda-kit {command}`: add custom.lambdaKit.{command}: MODULE "
            f"(a module beside the service with {entry}(...); see `lambda-kit help load`), "
            "or run `lambda-kit local` and send your own events"
        )
    root = str(config.project_dir)
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        raise LoadError(
            f"{where}: custom.lambdaKit.{command}: module {name!r} does not import from {root}: {exc}"
        ) from None
    if not callable(getattr(module, entry, None)):
        raise LoadError(f"{where}: custom.lambdaKit.{command}: module {name!r} has no function {entry}()")
    return module
