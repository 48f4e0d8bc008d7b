"""``memconform facade-path``: where the reference's JS facade is, to point a JS suite at it.

The facade (``harness/drivers/node/reference-core.mjs``) exports openpi 0.3.9's ``memory-core.mjs``
API and answers every call through a ``serve`` process of the python named by
``MEMCONFORM_PYTHON`` (else ``python3``); ``--python`` prints the interpreter this command runs
under, which imports memconform, e.g. ``export MEMCONFORM_PYTHON=$(memconform facade-path
--python)``. Nothing is baked into the facade.
"""

from __future__ import annotations

import argparse
import sys

from ..drivers.peer_suites import FACADE
from ..oracles.findings import EXIT_OK
from .common import SetupError

NAME = "facade-path"
HELP = "print the path of the JS facade (openpi's memory-core.mjs API over the reference)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--python",
        action="store_true",
        help="print the python for MEMCONFORM_PYTHON (the one running memconform) instead",
    )


def run(args: argparse.Namespace) -> int:
    if args.python:
        print(sys.executable)
        return EXIT_OK
    if not FACADE.is_file():
        raise SetupError(f"the facade is missing from this installation: {FACADE}")
    print(FACADE)
    return EXIT_OK
