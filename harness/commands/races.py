"""``memconform races``: the lock-protocol race suite, real writers held at every store call.

Each situation (``harness.interleave.races``) runs again and again under a scheduler that lets
one writer make one store call at a time (``harness.interleave.scheduler``), the strategy
choosing who; the store each run leaves is judged by the nemesis checks.  A finding is shrunk
to the fewest context switches that still show it, printed with the racing calls, and exported
as a ``*.race.jsonl`` regression that ``memconform replay`` enforces k of k.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..drivers import capabilities
from ..drivers.peers import PeerSpec, preflight
from ..interleave.strategies import Step
from ..oracles.findings import INTERRUPTED, Finding, summary_line, verdict
from .common import (
    SetupError,
    add_impl_arguments,
    add_quiet_argument,
    add_report_arguments,
    conclude,
    fail_on_hazard,
    new_report,
    non_negative_int,
    positive_float,
)

if TYPE_CHECKING:
    from ..interleave.scheduler import Situation

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
    from ..interleave.race_files import DEFAULT_DIR as RACE_DIR
    from ..interleave.races import SITUATIONS, STRATEGIES

    add_impl_arguments(p, many=True)
    add_report_arguments(p)
    p.set_defaults(export=RACE_DIR)  # the help says where files go (it said "default: None")
    p.add_argument("--strategy", choices=STRATEGIES, default="random",
                   help="pct (seeded, depth 3, change points on lock calls), random (seeded walk) or exhaustive (DPOR); default: %(default)s")
    p.add_argument("--seed", type=non_negative_int, default=0, help="first seed (run i of a situation uses seed + i)")
    p.add_argument("--budget", type=positive_float, default=60.0, metavar="SECONDS",
                   help="wall time for the whole run once the drivers have started: exploring, then (once something "
                        "is found) shrinking and the hardened re-check share its last 40%% (default: %(default)s)")
    p.add_argument("--situation", action="append", choices=[s.name for s in SITUATIONS + FAMILIES],
                   help="run only these situations or generated-program families (repeatable; default: all)")
    p.add_argument("--hardened", action="store_true",
                   help="run the reference with its opt-in hardened lock (MEMCONFORM_REFERENCE_HARDENED=1)")
    p.add_argument("--shard", type=_shard, default=(1, 1), metavar="K/N",
                   help="run only this shard of the schedule space (merge the reports with report merge)")
    p.add_argument("--no-shrink", action="store_true", help="keep findings as found")
    p.add_argument("--no-hardened-check", action="store_true",
                   help="do not re-run the seeds that found a race with the reference hardened (default: do, when --impl python is among the writers)")
    add_quiet_argument(p, "no progress line")
    p.add_argument("--verbose", action="store_true",
                   help="a line per schedule, and each finding's racing calls in full")


def racing_calls(steps: Sequence[Step]) -> dict[str, list[str]]:
    """Each writer's calls on the lock, the pid probe and the index, numbered by step, so
    the two sequences read side by side show where they interleaved."""
    per: dict[str, list[str]] = {}
    for i, s in enumerate(steps):
        if ".lock" in s.call or "MEMORY.md)" in s.call or "kill(" in s.call or ",MEMORY.md" in s.call:
            per.setdefault(s.writer, []).append(f"#{i} {s.call}")
    return dict(sorted(per.items()))


def _checks_hardened(args: argparse.Namespace, specs: list[PeerSpec]) -> bool:
    """The hardened re-check applies: a seeded strategy with the plain reference among the writers."""
    return not (args.hardened or args.no_hardened_check or args.strategy == "exhaustive"
                or not any(s.kind == "python" for s in specs))


def _hardened_check(args: argparse.Namespace, specs: list[PeerSpec], suite: object,
                    labels: dict[str, str], deadline: float) -> dict[str, str]:
    """For each situation a seeded strategy found a race in, the same seeds again with the
    reference hardened (MEMCONFORM_REFERENCE_HARDENED=1): what closing the race buys, as many
    seeds as fit before ``deadline`` (the budget bounds the whole run)."""
    from ..interleave.races import SuiteResult, same_seeds, target

    assert isinstance(suite, SuiteResult)
    if not _checks_hardened(args, specs) or suite.interrupted:
        return {}
    out: dict[str, str] = {}
    for hit in suite.found:
        sit = hit.original.situation
        seeds = list(range(args.seed, hit.seed + 1))
        runs = same_seeds(specs, sit, args.strategy, seeds, hardened=True, labels=labels, timeout=args.timeout,
                          deadline=deadline)
        bad = [r for r in runs if target(r.findings) is not None]
        kinds = ", ".join(sorted({f.kind for r in bad for f in r.findings})) or "nothing"
        cut = f", {len(seeds) - len(runs)} not run (budget spent)" if len(runs) < len(seeds) else ""
        out[sit.name] = f"{len(bad)} of {len(runs)} seeds show a race ({kinds}){cut}"
        print(f"  hardened reference, {sit.name}, the same seeds ({args.seed}..{hit.seed}): "
              f"{out[sit.name]}", flush=True)
    return out


def runnable(situations: Sequence[Situation], caps: Sequence[capabilities.Capabilities],
             ) -> tuple[list[Situation], list[capabilities.NotRun]]:
    """The situations every writer can run as declared, and the others with why (a skip in the
    report, never a finding: a refused ``set_clock`` is not a race)."""
    from ..interleave.programs import NAMES

    out: list[Situation] = []
    not_run: list[capabilities.NotRun] = []
    for sit in situations:
        # a generated family draws every co-writer op; a named situation needs what its scripts call
        ops = list(capabilities.STORE_OPS) if sit.name in NAMES else [op for script in sit.ops for op, _ in script]
        why = next((w for c in caps if (w := capabilities.script_needs(c, ops))), None)
        if why is None and (sit.store != "shared" or sit.carry):
            # a local store raced, or carried over: a tool that keeps none has nothing there, and
            # its first writer's append "lost" from a store it never had was a false violation
            why = next((f"needs a local store ({c.name} declares local_store: false)" for c in caps
                        if not c.local_store), None)
        if why is None:
            out.append(sit)
        else:
            not_run.append(capabilities.NotRun(sit.name, why, capabilities.cited(sit.why)))
    return out, not_run


def run(args: argparse.Namespace) -> int:
    from ..drivers.interrupt import work_done
    from ..faults.strace import STRACE
    from ..interleave import race_files
    from ..interleave.programs import FAMILIES, describe, draws_repair
    from ..interleave.race_story import story
    from ..interleave.races import SHRINK_SHARE, SITUATIONS, explore, target
    from ..interleave.strategies import switches
    from ..reports.progress import progress

    specs = [PeerSpec.parse(i) for i in (args.impl or ["python"])]
    if not Path(STRACE).exists():
        raise SetupError("races needs strace (apt-get install strace)")
    if args.hardened and not any(s.kind == "python" for s in specs):
        raise SetupError("--hardened applies to the reference (--impl python) only")
    impls = preflight(specs, timeout=args.timeout)
    labels = {i.spec: f"{i.name} {i.version}" for i in impls}
    kinds = {i.spec: i for i in impls}
    report = new_report(args, impls)
    for info in impls:  # one line naming the missing op, before any writer starts (issue 30 item 3)
        capabilities.require_command(capabilities.of_impl(info), NAME)
    asked = [s for s in SITUATIONS + FAMILIES if not args.situation or s.name in args.situation]
    situations, not_run = runnable(asked, [capabilities.of_impl(i) for i in impls])
    capabilities.say_not_run(NAME, not_run)
    # the budget starts once the drivers have said hello (a loaded machine starts node slowly):
    # exploring, shrinking and the hardened re-check all end by it
    started = time.monotonic()
    deadline = started + args.budget
    mix = ", ".join(labels.get(s.name, s.name) for s in specs)
    print(f"races: {len(situations)} situations, {args.strategy} seed {args.seed}, budget {args.budget:g} s for the "
          f"whole run, shard {args.shard[0]}/{args.shard[1]}; writers round-robin over {mix}"
          + (" (reference hardened)" if args.hardened else ""), flush=True)
    offered = frozenset.intersection(*(capabilities.of_impl(i).ops for i in impls))  # what every writer declares
    if any(draws_repair(s, offered) for s in situations):
        print("races: generated programs also draw repair (every writer declares repair_memory)", flush=True)
    # the hardened re-check runs after shrinking: keep it a share of the budget
    after = SHRINK_SHARE / 2 * args.budget if _checks_hardened(args, specs) else 0.0

    with progress(f"races {mix}", quiet=args.quiet or args.verbose) as bar:
        def said(r: object) -> None:
            from ..interleave.scheduler import RunResult

            assert isinstance(r, RunResult)
            kinds_seen = ", ".join(sorted({f.kind for f in r.findings})) or "clean"
            bar.advance(note=f"{r.situation.name}: {kinds_seen}")
            hit = target(r.findings)
            if hit is not None:  # said at once: shrinking and the details come at the end
                print(f"races: found {hit.kind} ({hit.severity}) in {r.situation.name} after "
                      f"{time.monotonic() - started:.1f} s", flush=True)
            if args.verbose:
                print(f"  {r.situation.name}: {len(r.steps)} steps, {switches(r.picks)} switches, "
                      f"{r.seconds:.1f} s: {kinds_seen}", flush=True)

        suite = explore(specs, strategy=args.strategy, seed=args.seed, budget_s=args.budget, hardened=args.hardened,
                        labels=labels, situations=situations, shard=args.shard, shrink=not args.no_shrink,
                        timeout=args.timeout, on_run=said, deadline=deadline - after, offered=offered)
    if suite.interrupted:
        work_done()  # Ctrl-C: what was found is exported and reported whole
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
        told = story(f, sh.steps)
        shrunk = (f"{len(orig.steps)} -> {len(sh.steps)} steps, {switches(orig.picks)} -> {switches(sh.picks)} "
                  f"switches ({hit.shrink_runs} shrink runs)" if sh is not orig else "not shrunk")
        evidence = (f"{f.evidence}; {'; '.join(told)}; situation {sh.situation.name}, {hit.strategy} seed {hit.seed}; "
                    f"schedule {shrunk}; racing calls: {racing}")
        found.append(Finding(f.kind, f.severity, f.clause, f.impl, f.op, f.syscall, evidence,
                             reproduce=f"memconform replay {where} --runs 10" if where else "",
                             regression=where, path=f.path))
        print(f"[{f.severity}] {f.kind} ({f.clause}) in {sh.situation.name}, {f.impl}")
        for line in told:
            print(f"  {line}")
        if sh.situation.name.startswith(tuple(x.name for x in FAMILIES)):
            print(f"  program ({sum(map(len, orig.situation.ops))} -> {sum(map(len, sh.situation.ops))} ops): "
                  f"{describe(sh.situation)} ({sh.situation.why})")
        print(f"  schedule: {hit.strategy} seed {hit.seed}, {shrunk}")
        if args.verbose:
            for w, calls in per.items():
                print(f"    {w}: {', '.join(calls)}")
        if where:
            print(f"  regression: {where} (replay: memconform replay {where} --runs 10)", flush=True)
    hardened_check = _hardened_check(args, specs, suite, labels, deadline)
    found += suite.other
    print(f"races: {suite.runs} schedules in {suite.seconds:.1f} s, {suite.held} held syscalls "
          f"({suite.held / max(suite.seconds, 1e-9):.0f}/s), first finding after "
          + (f"{suite.first_found_s:.1f} s" if suite.first_found_s is not None else "none")
          + (f", first violation after {suite.first_violation_s:.1f} s" if suite.first_violation_s is not None else "")
          + (f"; explored every schedule of {', '.join(suite.exhausted)}" if suite.exhausted else "")
          + (f"; {len(suite.void)} void runs (judged nothing)" if suite.void else "")
          + f"; {time.monotonic() - started:.1f} s in all")
    for why in suite.void[:3]:
        print(f"  void: {why}")
    if exported:
        print(f"races: exported {len(exported)} regression{'s' if len(exported) > 1 else ''} to "
              f"{Path(exported[0]).parent}: commit each as a regression, report it upstream to the implementation "
              "it names, or accept it as a SPEC weakness (docs/RACES.md, 'What to do with an exported race')")
    run_verdict = verdict(found, executed=suite.runs - len(suite.void), fail_on_hazard=fail_on_hazard(args))
    print(f"races: verdict {INTERRUPTED if suite.interrupted else run_verdict}: {summary_line(found)}")
    report.stats = {"schedules": suite.runs, "void": len(suite.void), "held_syscalls": suite.held, "steps": suite.steps,
                    "seconds": round(suite.seconds, 2), "per_situation": suite.per_situation,
                    "first_finding_s": None if suite.first_found_s is None else round(suite.first_found_s, 2),
                    "first_violation_s": None if suite.first_violation_s is None else round(suite.first_violation_s, 2),
                    "strategy": args.strategy, "seed": args.seed, "shard": f"{args.shard[0]}/{args.shard[1]}",
                    "hardened": args.hardened, "exhausted": suite.exhausted, "exported": exported,
                    "hardened_same_seeds": hardened_check, "budget": args.budget,
                    "wall_seconds": round(time.monotonic() - started, 2)}
    caps = capabilities.of_impl(impls[0]) if len(impls) == 1 else None
    extra = {"shard": f"{args.shard[0]}/{args.shard[1]}", "scenarios": suite.records,
             "capabilities": capabilities.coverage_section(caps, not_run, capabilities.of_impl(impls[0]).contract,
                                                           [capabilities.cited(s.why) for s in situations])}
    return conclude(args, report, found, executed=suite.runs - len(suite.void), extra=extra,
                    nothing_ran="no schedule ran within the budget" if situations else
                    f"no situation can run on these drivers ({not_run[0].why})", interrupted=suite.interrupted)
