"""``memconform interop``: many writer processes of one or more implementations on one store.

Every ``--impl`` is asked ``hello`` up front; each run writes a fresh history file (unless
``--history`` names one) and says where; what it saw are findings (lost or duplicated writes,
broken invariants, a non-linearizable history), and a checker out of budget is ``unknown``
(exit 3), never a pass.  Ctrl-C stops the writers (their drivers killed); what they
finished is checked, saved and reported, marked ``interrupted`` (exit 130).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..checker.linearize import UNKNOWN
from ..drivers import capabilities
from ..drivers.peers import PeerSpec, preflight
from ..oracles.findings import summary_line
from ..reports.progress import Progress, progress
from ..writers.engine import (
    ADVERSARIAL_TOPICS,
    SAVING,
    TOPICS,
    WriterStats,
    findings,
    fresh_history_path,
    interop,
    timed,
)
from .common import (
    SetupError,
    add_impl_arguments,
    add_quiet_argument,
    add_report_arguments,
    conclude,
    new_report,
    non_negative_int,
    positive_float,
    positive_int,
)

HARDENED_ENV = "MEMCONFORM_REFERENCE_HARDENED"
NAME = "interop"
HELP = "parallel real-process writers on one store: throughput, lost updates, linearizability"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_impl_arguments(p, many=True)
    add_report_arguments(p)
    p.add_argument("--writers", type=positive_int, default=8, help="writer processes (at least 1)")
    p.add_argument("--ops", type=positive_int, default=100, help="ops per writer (at least 1)")
    add_quiet_argument(p)
    p.add_argument("--shared", action="store_true", help="write the shared store (~/.agents/memory)")
    p.add_argument("--seed", type=non_negative_int, default=0)
    p.add_argument("--adversarial", action="store_true", help="case variants and slug collisions")
    p.add_argument("--carry-over", action="store_true",
                   help="with --shared: seeded local stores, so each fresh writer's carry-over races the others' writes")
    p.add_argument("--check-budget", type=positive_float, default=10.0, help="linearizability budget (s)")
    p.add_argument(
        "--history", type=Path, metavar="PATH",
        help="where to save the history (default: a fresh reports/interop-history-<time>-<pid>.jsonl)",
    )
    nemesis = p.add_argument_group("nemesis (faults while the writers race; docs/NEMESIS.md)")
    nemesis.add_argument(
        "--nemesis", metavar="FAMILIES",
        help="comma-separated fault families: kill, pause, stale-lock, foreign-lock, slow, errno, clock, "
             "or all (every family in turn); writers then run for --time-limit instead of --ops",
    )
    nemesis.add_argument("--nemesis-interval", type=positive_float, default=1.0, metavar="S",
                         help="seconds between faults (each drawn ±50%%, seeded by --seed)")
    nemesis.add_argument("--time-limit", type=positive_float, default=30.0, metavar="S",
                         help="seconds the writers race under the nemesis")
    nemesis.add_argument("--settle-limit", type=positive_float, default=75.0, metavar="S",
                         help="how long a fresh writer may try after the faults before the store counts as unavailable")
    nemesis.add_argument("--hardened", action="store_true",
                         help=f"run the reference writers in their opt-in hardened mode ({HARDENED_ENV}=1)")
    nemesis.add_argument("--scheduler", choices=("random", "pct"),
                         help="hold every writer at each store call and let one run at a time, picked by this "
                              "strategy (seeded by --seed): time counts store calls (1000 a second), and a "
                              "finding replays its recorded schedule k of k (docs/NEMESIS.md)")


class _WriterProgress:
    """The writers' polled counts into the one progress reporter (``harness.reports.progress``), so
    a CI log gets plain lines, not a 200-column line rewritten with ``\\r``."""

    def __init__(self, bar: Progress) -> None:
        self.bar, self.seen = bar, 0

    def __call__(self, stats: list[WriterStats]) -> None:
        done = sum(s.done for s in stats)
        self.bar.advance(done - self.seen, note=" ".join(f"{s.name}:{s.done}" for s in stats))
        self.seen = done


def _reproduce(args: argparse.Namespace, peers: list[PeerSpec]) -> str:
    parts = ["memconform interop", *(f"--impl {p.name}" for p in peers),
             f"--writers {args.writers} --ops {args.ops} --seed {args.seed}"]
    parts += [flag for flag, on in (("--shared", args.shared), ("--adversarial", args.adversarial), ("--carry-over", args.carry_over)) if on]
    return " ".join(parts)


def run(args: argparse.Namespace) -> int:
    peers = list(dict.fromkeys(PeerSpec.parse(i) for i in (args.impl or ["python"])))
    if args.carry_over and (not args.shared or args.nemesis is not None):
        raise SetupError("--carry-over races carry-over into the shared store: it needs --shared and no --nemesis")
    if args.scheduler is not None and args.nemesis is None:
        raise SetupError("--scheduler holds a nemesis run's writers: give --nemesis FAMILIES too")
    if args.nemesis is not None:
        from ..interleave.cli import run_with_nemesis

        return run_with_nemesis(args, peers)
    impls = preflight(peers, timeout=args.timeout)
    for info in impls:  # one line naming the missing op, before any writer starts (issue 30 item 3)
        capabilities.require_command(capabilities.of_impl(info), NAME)
    labels = {i.spec: f"{i.name} {i.version}" for i in impls}
    history_path: Path = args.history or fresh_history_path()
    run_report = new_report(args, impls)
    with progress("interop", args.writers * args.ops, quiet=args.quiet) as bar:

        def phase(name: str, total: int | None) -> Progress:
            bar.close()  # the writers are done: each check after them gets its own line
            return progress(f"interop {name}", total, quiet=args.quiet)

        result = interop(
            peers, writers=args.writers, ops=args.ops, shared=args.shared, seed=args.seed,
            timeout=args.timeout, check_budget=args.check_budget, progress=_WriterProgress(bar),
            topics=ADVERSARIAL_TOPICS if args.adversarial else TOPICS, phase=phase, carry_over=args.carry_over,
        )
        with timed(SAVING, len(result.history.events), phase, result.phases, "events") as tick:
            result.history.save(history_path, tick)
    print(f"{'writer':<6} {'impl':<40} {'ops':>5} {'ok':>5} {'busy':>5} {'info':>5}")
    for s in result.stats:
        print(f"{s.name:<6} {s.impl[-40:]:<40} {s.done:>5} {s.ok:>5} {s.busy:>5} {s.info:>5}")
    rate = result.total_ops / result.seconds if result.seconds else 0.0
    print(f"\n{result.total_ops} ops in {result.seconds:.2f} s: {rate:.1f} ops/s, busy share {result.busy_share:.1%}")
    if result.interrupted:
        print(f"interrupted: the writers stopped after {result.total_ops} of {args.writers * args.ops} ops; "
              "the checks below judge those")
    print("after the writers: " + ", ".join(f"{name} {s:.1f} s" for name, s in result.phases.items()))
    print(f"lost updates: {len(result.lost)}, duplicated updates: {len(result.duplicated)}")
    print(f"invariant violations: {len(result.violations)}")
    verdict = result.verdict
    print(f"checker: {verdict.summary() if verdict else 'not run'}")
    found = findings(result, labels, _reproduce(args, peers))
    for f in found:
        print(f"  {f.line()}")
    print(f"history saved to {history_path} (memconform check-history {history_path})")
    unknown = verdict is not None and verdict.status == UNKNOWN
    run_report.stats = {
        "writers": args.writers, "ops_per_writer": args.ops, "ops": result.total_ops,
        "seconds": round(result.seconds, 3), "ops_per_second": round(rate, 1),
        "busy_share": round(result.busy_share, 4), "lost": len(result.lost),
        "duplicated": len(result.duplicated), "invariant_violations": len(result.violations),
        "checker": verdict.status if verdict else "not run",
        "checker_states": verdict.explored if verdict else 0, "history": str(history_path),
        "phase_seconds": {name: round(s, 3) for name, s in result.phases.items()},
    }
    print(f"findings: {summary_line(found)}{'; checker: unknown (out of budget)' if unknown else ''}")
    return conclude(args, run_report, found, executed=result.total_ops, unknown=unknown,
                    nothing_ran="no op executed: every writer's driver failed before its first op",
                    interrupted=result.interrupted)
