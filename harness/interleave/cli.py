"""``memconform interop --nemesis …``: the command's side of a nemesis run (issue 13).

Kept out of ``commands/interop.py`` so the CLI loads the fault machinery only when a nemesis
is asked for (a plain run imports no ``harness.faults`` module).
"""

from __future__ import annotations

import argparse
import sys

from ..checker.linearize import UNKNOWN
from ..commands.common import SetupError, conclude, export_dir, new_report
from ..drivers import capabilities
from ..drivers.peers import PeerSpec, preflight
from ..oracles.findings import summary_line
from ..writers.engine import ADVERSARIAL_TOPICS, TOPICS, WriterStats, fresh_history_path
from .nemesis import Schedule, ScheduleError, make_schedule
from .run import NemesisResult, NemesisUnavailable, run_nemesis


def _progress(stats: list[WriterStats]) -> None:
    line = " ".join(f"{s.name}:{s.done}" for s in stats)
    print(f"\r{line}"[:200], end="", file=sys.stderr, flush=True)


def reproduce_command(args: argparse.Namespace, peers: list[PeerSpec]) -> str:
    parts = ["memconform interop", *(f"--impl {p.name}" for p in peers),
             f"--writers {args.writers} --seed {args.seed} --nemesis {args.nemesis}",
             f"--nemesis-interval {args.nemesis_interval:g} --time-limit {args.time_limit:g}"]
    parts += [flag for flag, on in (("--shared", args.shared), ("--adversarial", args.adversarial),
                                    ("--hardened", args.hardened)) if on]
    if getattr(args, "scheduler", None):
        parts.append(f"--scheduler {args.scheduler}")
    return " ".join(parts)


def _run(args: argparse.Namespace, peers: list[PeerSpec], schedule: Schedule) -> tuple[NemesisResult, str]:
    """The timed engine, or the same schedule under the syscall scheduler (``--scheduler``)."""
    topics = ADVERSARIAL_TOPICS if args.adversarial else TOPICS
    tally = None if getattr(args, "quiet", False) else _progress  # --quiet: stderr stays empty, as without --nemesis
    if args.scheduler is None:
        return run_nemesis(peers, schedule, timeout=args.timeout, check_budget=args.check_budget,
                           hardened=args.hardened, settle_limit=args.settle_limit, topics=topics,
                           progress=tally), ""
    from .scheduled import ScheduledUnavailable, run_scheduled
    from .strategies import PCT, RandomWalk, Strategy

    strategy: Strategy = (RandomWalk(args.seed) if args.scheduler == "random"
                          else PCT(args.seed, [f"w{i}" for i in range(args.writers)]))
    try:
        done = run_scheduled(peers, schedule, strategy, seed=args.seed, timeout=args.timeout,
                             check_budget=args.check_budget, hardened=args.hardened, topics=topics,
                             progress=tally)
    except ScheduledUnavailable as e:
        raise NemesisUnavailable(str(e)) from None
    line = f"scheduler: {args.scheduler} seed {args.seed}, {len(done.steps)} steps, {done.held} held store calls"
    if done.void:
        line += f"; the run is void ({done.void}): nothing judged"
        done.result.errors.append(f"the scheduled run is void: {done.void}")
    return done.result, line


def run_with_nemesis(args: argparse.Namespace, peers: list[PeerSpec]) -> int:
    try:
        schedule = make_schedule(args.seed, [args.nemesis], interval=args.nemesis_interval,
                                 time_limit=args.time_limit, writers=args.writers, shared=args.shared)
    except ScheduleError as e:
        raise SetupError(str(e)) from None
    impls = preflight(peers, timeout=args.timeout)
    for info in impls:  # one line naming the missing op, before any writer starts (issue 30 item 3)
        capabilities.require_command(capabilities.of_impl(info), "interop")
    labels = {i.spec: f"{i.name} {i.version}" for i in impls}
    history_path = args.history or fresh_history_path()
    run_report = new_report(args, impls)
    try:
        result, scheduled = _run(args, peers, schedule)
    except NemesisUnavailable as e:
        raise SetupError(str(e)) from None
    if not getattr(args, "quiet", False):
        print(file=sys.stderr)  # ends the counters' line
    if scheduled:
        print(scheduled)
    result.history.save(history_path)
    print(f"{'writer':<6} {'impl':<40} {'ops':>5} {'ok':>5} {'busy':>5} {'info':>5}")
    for s in result.stats:
        print(f"{s.name:<6} {s.impl[-40:]:<40} {s.done:>5} {s.ok:>5} {s.busy:>5} {s.info:>5}")
    # a scheduled run's faults fire at store-call counts: per minute of the schedule, not of the wall
    minutes = (schedule.time_limit if args.scheduler else max(result.seconds, 1e-9)) / 60
    rate = result.total_ops / result.seconds if result.seconds else 0.0
    print(f"\n{result.total_ops} ops in {result.seconds:.2f} s: {rate:.1f} ops/s")
    counts = result.fault_counts()
    effective = sum(c["effective"] for c in counts.values())
    print(f"faults: {effective} effective of {len(result.outcomes)} planned ({effective / minutes:.1f}/min): "
          + ", ".join(f"{f} {c['effective']}/{c['planned']}" for f, c in counts.items()))
    for spec, (seconds, busy) in result.unavailable.items():
        took = f"{seconds:.1f} s" if seconds is not None else f"not within {args.settle_limit:g} s"
        print(f"settle: a fresh {labels.get(spec, spec)} writer succeeded after {took} ({busy} busy)")
    for d, verdict in result.verdicts.items():
        print(f"checker {d}: {verdict.summary()}")
    reproduce = reproduce_command(args, peers)
    found = result.findings(labels, reproduce)
    if result.interrupted:
        print(f"interrupted after {result.seconds:.1f} s: judged the history up to the stop, from the disk")
    target = export_dir(args)
    if target is not None and found and not (result.interrupted and args.scheduler):
        # each finding replays: its schedule and minimal history (a scheduled run cut by Ctrl-C
        # has steps no replay can follow to the end: not exported)
        from .export import export

        found = [export(f, result, directory=target / "nemesis", labels=labels) for f in found]
    for f in found:
        print(f"  {f.line()}")
    print(f"history saved to {history_path} (schedule in its first line)")
    unknown = any(v.status == UNKNOWN for v in result.verdicts.values())
    run_report.stats = {
        "writers": args.writers, "ops": result.total_ops, "seconds": round(result.seconds, 3),
        "ops_per_second": round(rate, 1), "nemesis": list(schedule.families), "seed": args.seed,
        "faults": counts, "faults_per_minute": round(effective / minutes, 2), "hardened": args.hardened,
        "unavailable_s": {labels.get(k, k): (None if v[0] is None else round(v[0], 2)) for k, v in result.unavailable.items()},
        "checker": {d: v.status for d, v in result.verdicts.items()}, "history": str(history_path),
    }
    print(f"findings: {summary_line(found)}{'; checker: unknown (out of budget)' if unknown else ''}")
    return conclude(args, run_report, found, executed=result.total_ops, unknown=unknown,
                    nothing_ran="no op executed: every writer's driver failed before its first op",
                    interrupted=result.interrupted)
