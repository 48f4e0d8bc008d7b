"""``memconform interop``: many writer processes of one or more implementations on one store."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..peers import PeerSpec
from ..writers import ADVERSARIAL_TOPICS, TOPICS, WriterStats, interop
from .common import add_impl_arguments

NAME = "interop"
HELP = "parallel real-process writers on one store: throughput, lost updates, linearizability"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_impl_arguments(p, many=True)
    p.add_argument("--writers", type=int, default=8)
    p.add_argument("--ops", type=int, default=100, help="ops per writer")
    p.add_argument("--shared", action="store_true", help="write the shared store (~/.agents/memory)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--adversarial", action="store_true", help="case variants and slug collisions")
    p.add_argument("--check-budget", type=float, default=10.0, help="linearizability budget (s)")
    p.add_argument("--history", type=Path, default=Path("reports/interop-history.jsonl"))


def _progress(stats: list[WriterStats]) -> None:
    line = " ".join(f"{s.name}:{s.done}" for s in stats)
    print(f"\r{line}"[:200], end="", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    peers = [PeerSpec.parse(i) for i in (args.impl or ["python"])]
    result = interop(
        peers, writers=args.writers, ops=args.ops, shared=args.shared, seed=args.seed,
        timeout=args.timeout, check_budget=args.check_budget, progress=_progress,
        topics=ADVERSARIAL_TOPICS if args.adversarial else TOPICS,
    )
    print(file=sys.stderr)
    result.history.save(args.history)
    print(f"{'writer':<6} {'impl':<40} {'ops':>5} {'ok':>5} {'busy':>5} {'info':>5}")
    for s in result.stats:
        print(f"{s.name:<6} {s.impl[-40:]:<40} {s.done:>5} {s.ok:>5} {s.busy:>5} {s.info:>5}")
    rate = result.total_ops / result.seconds if result.seconds else 0.0
    print(f"\n{result.total_ops} ops in {result.seconds:.2f} s: {rate:.1f} ops/s, busy share {result.busy_share:.1%}")
    print(f"lost updates: {len(result.lost)}, duplicated updates: {len(result.duplicated)}")
    for item in result.lost[:20] + result.duplicated[:20]:
        print(f"  {item}")
    print(f"invariant violations: {len(result.violations)}")
    for v in result.violations[:20]:
        print(f"  {v}")
    for e in result.errors[:20]:
        print(f"writer error: {e}")
    verdict = result.verdict
    print(f"checker: {verdict.summary() if verdict else 'not run'}")
    print(f"history saved to {args.history} (memconform check-history {args.history})")
    bad = result.lost or result.duplicated or result.violations or (verdict and verdict.status != "linearizable")
    return 1 if bad else 0
