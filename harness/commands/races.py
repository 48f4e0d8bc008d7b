"""``memconform races``: the lock-protocol race suite, real writers held at every store call.

Each situation (``harness.interleave.races``) runs again and again under a scheduler that lets
one writer make one store call at a time (``harness.interleave.scheduler``), the strategy
choosing who; the store each run leaves is judged by the nemesis checks.  A finding is shrunk
to the fewest context switches that still show it, printed with the racing calls, and exported
as a ``*.race.jsonl`` regression that ``memconform replay`` enforces k of k.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from ..drivers.peers import PeerSpec, preflight
from ..interleave.strategies import Step
from ..oracles.findings import Finding, summary_line
from .common import (
    SetupError,
    add_impl_arguments,
    add_quiet_argument,
    add_report_arguments,
    conclude,
    new_report,
    non_negative_int,
    positive_float,
    wrote,
)

NAME = "races"
HELP = "the lock-protocol race suite: writers held at each store syscall, schedules explored, findings replayable k of k"


def _shard(text: str) -> tuple[int, int]:
    k, sep, n = text.partition("/")
    try:
        kk, nn = int(k), int(n)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not K/N (e.g. 2/4)") from None
    if not sep or nn < 1 or not 1 <= kk <= nn:
        raise argparse.ArgumentTypeError(f"{text!r}: need 1 <= K <= N")
    return kk, nn


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..interleave.programs import FAMILIES
    from ..interleave.races import SITUATIONS, STRATEGIES

    add_impl_arguments(p, many=True)
    add_report_arguments(p)
    p.set_defaults(export=None)
    p.add_argument("--strategy", choices=STRATEGIES, default="random",
                   help="pct (seeded, depth 3, change points on lock calls), random (seeded walk) or exhaustive (DPOR); default: %(default)s")
    p.add_argument("--seed", type=non_negative_int, default=0, help="first seed (run i of a situation uses seed + i)")
    p.add_argument("--budget", type=positive_float, default=60.0, metavar="SECONDS",
                   help="wall time for the whole suite (default: %(default)s)")
    p.add_argument("--situation", action="append", choices=[s.name for s in SITUATIONS + FAMILIES],
                   help="run only these situations or generated-program families (repeatable; default: all)")
    p.add_argument("--hardened", action="store_true",
                   help="run the reference with its opt-in hardened lock (MEMCONFORM_REFERENCE_HARDENED=1)")
    p.add_argument("--shard", type=_shard, default=(1, 1), metavar="K/N",
                   help="run only this shard of the schedule space (merge the reports with report merge)")
    p.add_argument("--no-shrink", action="store_true", help="keep findings as found")
    p.add_argument("--no-hardened-check", action="store_true",
                   help="do not re-run the seeds that found a race with the reference hardened (default: do, when --impl python is among the writers)")
    add_quiet_argument(p, "no line per schedule")


def racing_calls(steps: Sequence[Step]) -> dict[str, list[str]]:
    """Each writer's calls on the lock, the pid probe and the index, numbered by step, so
    the two sequences read side by side show where they interleaved."""
    per: dict[str, list[str]] = {}
    for i, s in enumerate(steps):
        if ".lock" in s.call or "MEMORY.md)" in s.call or "kill(" in s.call or ",MEMORY.md" in s.call:
            per.setdefault(s.writer, []).append(f"#{i} {s.call}")
    return dict(sorted(per.items()))


def _hardened_check(args: argparse.Namespace, specs: list[PeerSpec], suite: object,
                    labels: dict[str, str]) -> dict[str, str]:
    """For each situation a seeded strategy found a race in, the same seeds again with the
    reference hardened (MEMCONFORM_REFERENCE_HARDENED=1): what closing the race buys."""
    from ..interleave.races import SuiteResult, same_seeds, target

    assert isinstance(suite, SuiteResult)
    if args.hardened or args.no_hardened_check or args.strategy == "exhaustive" or not any(s.kind == "python" for s in specs):
        return {}
    out: dict[str, str] = {}
    for hit in suite.found:
        sit = hit.original.situation
        seeds = list(range(args.seed, hit.seed + 1))
        runs = same_seeds(specs, sit, args.strategy, seeds, hardened=True, labels=labels, timeout=args.timeout)
        bad = [r for r in runs if target(r.findings) is not None]
        kinds = ", ".join(sorted({f.kind for r in bad for f in r.findings})) or "nothing"
        out[sit.name] = f"{len(bad)} of {len(runs)} seeds show a race ({kinds})"
        print(f"  hardened reference, {sit.name}, the same {len(runs)} seeds ({args.seed}..{hit.seed}): "
              f"{out[sit.name]}", flush=True)
    return out


def run(args: argparse.Namespace) -> int:
    from ..faults.strace import STRACE
    from ..interleave import race_files
    from ..interleave.programs import FAMILIES, describe
    from ..interleave.races import SITUATIONS, explore
    from ..interleave.strategies import switches

    specs = [PeerSpec.parse(i) for i in (args.impl or ["python"])]
    if not Path(STRACE).exists():
        raise SetupError("races needs strace (apt-get install strace)")
    if args.hardened and not any(s.kind == "python" for s in specs):
        raise SetupError("--hardened applies to the reference (--impl python) only")
    impls = preflight(specs, timeout=args.timeout)
    labels = {i.spec: f"{i.name} {i.version}" for i in impls}
    kinds = {i.spec: i for i in impls}
    report = new_report(args, impls)
    situations = [s for s in SITUATIONS + FAMILIES if not args.situation or s.name in args.situation]
    mix = ", ".join(labels.get(s.name, s.name) for s in specs)
    print(f"races: {len(situations)} situations, {args.strategy} seed {args.seed}, budget {args.budget:g} s, "
          f"shard {args.shard[0]}/{args.shard[1]}; writers round-robin over {mix}"
          + (" (reference hardened)" if args.hardened else ""), flush=True)

    def said(r: object) -> None:
        from ..interleave.scheduler import RunResult

        assert isinstance(r, RunResult)
        if not args.quiet:
            kinds_seen = ", ".join(sorted({f.kind for f in r.findings})) or "clean"
            print(f"  {r.situation.name}: {len(r.steps)} steps, {switches(r.picks)} switches, "
                  f"{r.seconds:.1f} s: {kinds_seen}", flush=True)

    suite = explore(specs, strategy=args.strategy, seed=args.seed, budget_s=args.budget, hardened=args.hardened,
                    labels=labels, situations=situations, shard=args.shard, shrink=not args.no_shrink,
                    timeout=args.timeout, on_run=said)
    found: list[Finding] = []
    exported = []
    for hit in suite.found:
        sh, orig = hit.shrunk, hit.original
        writers = [kinds[n] for n in sh.impls]
        k = [{"kind": PeerSpec.parse(i.spec).kind, "name": i.name, "version": i.version} for i in writers]
        where = ""
        if not args.no_export:
            where = str(race_files.export(hit.finding, sh, orig, k, args.hardened, args.export))
            exported.append(where)
        per = racing_calls(sh.steps)
        racing = " | ".join(f"{w}: {', '.join(c)}" for w, c in per.items())
        f = hit.finding
        evidence = (f"{f.evidence}; situation {sh.situation.name}, {hit.strategy} seed {hit.seed}; schedule shrunk "
                    f"{len(orig.steps)} -> {len(sh.steps)} steps, {switches(orig.picks)} -> {switches(sh.picks)} "
                    f"switches; racing calls: {racing}")
        found.append(Finding(f.kind, f.severity, f.clause, f.impl, f.op, f.syscall, evidence,
                             reproduce=f"memconform replay {where} --runs 10" if where else "",
                             regression=where, path=f.path))
        print(f"[{f.severity}] {f.kind} in {sh.situation.name}: {f.evidence}")
        if sh.situation.name.startswith(tuple(x.name for x in FAMILIES)):
            print(f"  program ({sum(map(len, orig.situation.ops))} -> {sum(map(len, sh.situation.ops))} ops): "
                  f"{describe(sh.situation)} ({sh.situation.why})")
        print(f"  shrunk {len(orig.steps)} -> {len(sh.steps)} steps, {switches(orig.picks)} -> {switches(sh.picks)} "
              f"switches ({hit.shrink_runs} shrink runs); racing calls:")
        for w, calls in per.items():
            print(f"    {w}: {', '.join(calls)}")
        if where:
            wrote(args, "race regression", where)
    hardened_check = _hardened_check(args, specs, suite, labels)
    found += suite.other
    print(f"races: {suite.runs} schedules in {suite.seconds:.1f} s, {suite.held} held syscalls "
          f"({suite.held / max(suite.seconds, 1e-9):.0f}/s), first finding after "
          + (f"{suite.first_found_s:.1f} s" if suite.first_found_s is not None else "none")
          + (f", first violation after {suite.first_violation_s:.1f} s" if suite.first_violation_s is not None else "")
          + (f"; explored every schedule of {', '.join(suite.exhausted)}" if suite.exhausted else "")
          + (f"; {len(suite.void)} void runs (judged nothing)" if suite.void else ""))
    for why in suite.void[:3]:
        print(f"  void: {why}")
    print(summary_line(found))
    report.stats = {"schedules": suite.runs, "void": len(suite.void), "held_syscalls": suite.held, "steps": suite.steps,
                    "seconds": round(suite.seconds, 2), "per_situation": suite.per_situation,
                    "first_finding_s": None if suite.first_found_s is None else round(suite.first_found_s, 2),
                    "first_violation_s": None if suite.first_violation_s is None else round(suite.first_violation_s, 2),
                    "strategy": args.strategy, "seed": args.seed, "shard": f"{args.shard[0]}/{args.shard[1]}",
                    "hardened": args.hardened, "exhausted": suite.exhausted, "exported": exported,
                    "hardened_same_seeds": hardened_check}
    extra = {"shard": f"{args.shard[0]}/{args.shard[1]}", "scenarios": suite.records}
    return conclude(args, report, found, executed=suite.runs - len(suite.void), extra=extra,
                    nothing_ran="no schedule ran within the budget")
