"""``memconform check-history``: the linearizability verdict of a saved history.

A missing, unreadable or garbled file is one line (exit 2); an empty history checks nothing
and is a setup error, not a pass; a checker out of budget is ``unknown`` (exit 3).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..checker.history import History, HistoryError
from ..checker.linearize import NOT_LINEARIZABLE, UNKNOWN
from ..checker.store_model import check
from ..oracles.findings import VIOLATION, Finding
from .common import SetupError, add_report_arguments, conclude, new_report, positive_float

NAME = "check-history"
HELP = "check a saved JSON Lines history for linearizability against the model"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_report_arguments(p)
    p.add_argument("file", type=Path, help="a history written by memconform interop")
    p.add_argument("--budget", type=positive_float, default=10.0, help="seconds before answering unknown")
    p.add_argument("--whole-store", action="store_true", help="do not partition by topic")


def run(args: argparse.Namespace) -> int:
    path: Path = args.file
    if path.is_dir():
        raise SetupError(f"{path}: is a directory; give a history file (.jsonl)")
    if not path.exists():
        raise SetupError(f"{path}: no such file")
    try:
        ops = History.load(path).ops()
    except UnicodeDecodeError as e:
        raise SetupError(f"{path}: not a history (not UTF-8 text: {e.reason} at byte {e.start})") from None
    except HistoryError as e:
        raise SetupError(f"{path}: not a history: {e}") from None
    if not ops:  # said before any verdict: "0 ops: linearizable" then an error read as both
        raise SetupError(f"{path}: the history holds no op")
    run_report = new_report(args)
    verdict = check(ops, budget_s=args.budget, partition=not args.whole_store)
    print(f"{len(ops)} ops: {verdict.summary()}")
    found = []
    if verdict.status == NOT_LINEARIZABLE:
        found.append(Finding(
            "not-linearizable", VIOLATION, path=str(path),
            evidence=f"no order of the {len(verdict.failing_ops)} ops explains their results: "
                     + "; ".join(verdict.failing_lines[:6]),
            reproduce=f"memconform check-history {path}",
        ))
    run_report.stats = {"ops": len(ops), "checker": verdict.status, "states": verdict.explored,
                        "seconds": round(verdict.seconds, 3), "partitioned": verdict.partitioned}
    return conclude(args, run_report, found, executed=len(ops), unknown=verdict.status == UNKNOWN,
                    nothing_ran=f"{path}: the history holds no op")
