"""``memconform`` (``python -m harness``): the command line of the harness.

Each subcommand lives in its own module under ``harness/commands/``.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from types import ModuleType

from . import commands
from .peers import PeerUnavailable
from .scenarios import ScenarioError


def command_modules() -> list[ModuleType]:
    found = []
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        if hasattr(module, "NAME") and hasattr(module, "run"):
            found.append(module)
    return found


def _parser(modules: list[ModuleType]) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="memconform", description="Conformance harness for the flat-file agent memory store."
    )
    sub = p.add_subparsers(dest="command", required=True)
    for m in modules:
        m.add_arguments(sub.add_parser(m.NAME, help=m.HELP, description=m.HELP))
    return p


def main(argv: Sequence[str] | None = None) -> int:
    modules = command_modules()
    args = _parser(modules).parse_args(argv)
    by_name = {m.NAME: m for m in modules}
    try:
        return int(by_name[args.command].run(args))
    except ScenarioError as e:
        print(f"memconform: scenario error: {e}", file=sys.stderr)
        return 2
    except PeerUnavailable as e:
        print(f"memconform: {e}", file=sys.stderr)
        return 2
