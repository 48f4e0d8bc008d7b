"""``memconform replay``: replay scenario files (a shrunk regression) on any implementation."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import report
from ..peers import PeerSpec
from ..runner import run_all
from ..scenarios import load_file
from .common import add_impl_arguments

NAME = "replay"
HELP = "replay scenario files (e.g. a shrunk regression) on an implementation"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_impl_arguments(p)
    p.add_argument("--strict", action="store_true", help="also compare error message texts")
    p.add_argument("files", nargs="+", type=Path)


def run(args: argparse.Namespace) -> int:
    spec = PeerSpec.parse(args.impl)
    scenarios = [load_file(f) for f in args.files]
    outcomes = run_all(spec, scenarios, timeout=args.timeout, validate=args.validate_protocol, strict=args.strict)
    for o in outcomes:
        print(report.line(o))
    report.write_text(outcomes, sys.stdout)
    return 1 if any(o.status != "pass" for o in outcomes) else 0

