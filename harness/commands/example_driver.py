"""``memconform example-driver``: where the shipped example driver is, to run it or copy it.

The example (``examples/reworded_driver.mjs``, installed as ``memconform/examples``) is a Node
driver that words every result its own way and declares outcome kinds (docs/IMPLEMENTING.md);
``--deviations`` prints its own known-deviations file instead, ``--list`` every shipped example.
``memconform conformance --impl node:$(memconform example-driver)`` runs it against the
``shared-store`` profile it declares.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..oracles.findings import EXIT_OK
from .common import SetupError

NAME = "example-driver"
HELP = "print the path of the shipped example driver (rewords every result, declares outcome kinds)"

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DRIVER = EXAMPLES / "reworded_driver.mjs"
DEVIATIONS = EXAMPLES / "KNOWN_DEVIATIONS.example.md"


def add_arguments(p: argparse.ArgumentParser) -> None:
    which = p.add_mutually_exclusive_group()
    which.add_argument("--deviations", action="store_true", help="print the path of its --deviations file instead")
    which.add_argument("--list", action="store_true", help="print every shipped example file, one a line")


def run(args: argparse.Namespace) -> int:
    if args.list:
        found = sorted(p for p in EXAMPLES.glob("*") if p.suffix in (".mjs", ".md")) if EXAMPLES.is_dir() else []
        if not found:
            raise SetupError(f"no example is shipped with this installation ({EXAMPLES})")
        print("\n".join(str(p) for p in found))
        return EXIT_OK
    path = DEVIATIONS if args.deviations else DRIVER
    if not path.is_file():
        raise SetupError(f"the example is missing from this installation: {path}")
    print(path)
    return EXIT_OK
