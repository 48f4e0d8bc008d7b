"""``memconform locks``: the lock adversary matrix for one implementation."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from ..locks import MODES, CellResult, cells, run_matrix, spec_seconds, two_reclaimers_race
from ..peers import PeerSpec
from .common import add_impl_arguments

NAME = "locks"
HELP = "lock file states x holders x ages x modes: the verdict and time each implementation reaches"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_impl_arguments(p)
    p.add_argument("--mode", choices=MODES, action="append", help="local and/or shared (default both)")
    p.add_argument("--parallel", type=int, default=16)


def _row(r: CellResult) -> str:
    mark = "ok  " if r.ok else ("TIME" if r.verdict == r.expected else "DIFF")
    want = f"{r.expected} ~{spec_seconds(r.cell):.1f}s"
    return f"{mark} {r.cell.name:<38} spec {want:<14} got {r.verdict:<8} {r.seconds:6.2f}s {r.detail}"


def run(args: argparse.Namespace) -> int:
    spec = PeerSpec.parse(args.impl)
    selected = cells(tuple(args.mode or MODES))
    results = run_matrix(spec, selected, parallel=args.parallel)
    for r in results:
        print(_row(r))
    differing = [r for r in results if not r.ok]
    print(f"\n{len(results) - len(differing)} cells as SPEC says, {len(differing)} differ")
    if spec.kind == "python":
        with tempfile.TemporaryDirectory() as d:
            race = two_reclaimers_race(Path(d))
        print(
            "two reclaimers of one stale lock (A paused between recheck and unlink): "
            f"both hold it: {race.both_hold} (documented weakness S-INV-9 a)"
        )
    return 1 if differing else 0
