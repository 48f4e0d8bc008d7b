"""``memconform check-history``: the linearizability verdict of a saved history."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..history import History, HistoryError
from ..linearize import LINEARIZABLE
from ..store_checker import check

NAME = "check-history"
HELP = "check a saved JSON Lines history for linearizability against the model"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=Path)
    p.add_argument("--budget", type=float, default=10.0, help="seconds before answering unknown")
    p.add_argument("--whole-store", action="store_true", help="do not partition by topic")


def run(args: argparse.Namespace) -> int:
    try:
        ops = History.load(args.file).ops()
    except (HistoryError, OSError) as e:
        print(f"memconform: {e}", file=sys.stderr)
        return 2
    verdict = check(ops, budget_s=args.budget, partition=not args.whole_store)
    print(f"{len(ops)} ops: {verdict.summary()}")
    return 0 if verdict.status == LINEARIZABLE else 1
