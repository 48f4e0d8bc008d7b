"""``memconform conformance``: the scenario corpus against one implementation, or two.

Every peer is started and asked ``hello`` once, up front (``preflight``), so a peer that
cannot run is one line, not a failure per scenario.  The verdict comes from findings: a
failed scenario is a violation, a listed deviation a deviation, a hazard the runner saw is
shown and counted; a run in which no scenario executed is a setup error (exit 2), never green.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

from ..drivers import capabilities, interrupt
from ..drivers.peers import PeerSpec, preflight
from ..gate import deviations, profiles, selection
from ..gate.differential import run_differential
from ..gate.runner import Outcome, run_until_interrupted
from ..gate.runner import coverage as runner_coverage
from ..gate.scenarios import PROFILES, Scenario
from ..oracles.expect import Failure
from ..oracles.findings import VIOLATION, Finding
from ..reports import scenarios as report
from ..reports.envelope import ImplInfo
from ..reports.progress import progress
from .common import (
    SetupError,
    add_impl_arguments,
    add_report_arguments,
    conclude,
    fail_on_hazard,
    hello_ops,
    new_report,
    positive_int,
)

NAME = "conformance"
HELP = "run the scenario corpus against an implementation (or --against another)"


def add_arguments(c: argparse.ArgumentParser) -> None:
    add_impl_arguments(c)
    add_report_arguments(c)
    c.add_argument("--strict", action="store_true", help="also compare error message texts")
    c.add_argument("--against", help="differential mode: compare --impl with this implementation")
    c.add_argument("--with", dest="with_impl", metavar="IMPL",
                   help="cross-tool sequences (scenarios/cross/): --impl runs the A steps, IMPL the B steps, one store")
    c.add_argument("--run", action="append", default=[], metavar="GLOB", help="only scenario ids matching")
    c.add_argument("--skip", action="append", default=[], metavar="GLOB", help="skip scenario ids matching")
    c.add_argument("--junit", type=Path, help="write a JUnit XML report (findings as failures)")
    c.add_argument("--parallel", type=positive_int, default=os.cpu_count() or 1,
                   help="worker count (one driver each; default: one per core)")
    c.add_argument("--real-time", action="store_true",
                   help="run every driver on the real clock (default: virtual time where the driver offers it)")
    selection.add_arguments(c)
    c.add_argument("--quiet", action="store_true", help="no per-scenario lines, no progress line")
    c.add_argument("--profile", metavar="NAME", help=f"contract to judge by: {' | '.join(PROFILES)} or a profile "
                   "your --scenarios name (default: openpi for python and pi:, shared-store for opencode:, else what "
                   "the driver's hello declares; docs/ARCHITECTURE.md §7)")
    deviations.add_argument(c)


def apply_deviations(outcomes: list[Outcome], impl: str, version: str, devs: list[deviations.Deviation]) -> None:
    """KNOWN_DEVIATIONS.md and ``--deviations`` applied, the glob rule included (``deviations.apply``)."""
    deviations.apply(outcomes, impl, version, devs)


def load_deviations(args: argparse.Namespace) -> list[deviations.Deviation]:
    """The packaged list and ``--deviations`` files, checked before anything runs."""
    return deviations.load_all(getattr(args, "deviations", []) or [], getattr(args, "scenarios", []) or [])


def label(info: ImplInfo) -> str:
    return f"{info.name} {info.version}"


def select(args: argparse.Namespace) -> list[Scenario]:
    """The scenarios asked for; none is a setup error naming the selection."""
    try:
        return selection.select(args)
    except selection.SelectionError as e:
        raise SetupError(str(e)) from None


def _in_profile(args: argparse.Namespace, spec: PeerSpec, scenarios: list[Scenario]) -> list[Scenario]:
    """The selected scenarios of the run's profile (``--profile`` or the implementation's default)."""
    among = profiles.known(scenarios)
    name = getattr(args, "profile", None)
    if name is not None and name not in among:
        raise SetupError(f"--profile {name!r}: no such profile (known: {', '.join(sorted(among))}; a profile of your "
                         "own is one your --scenarios name)")
    try:
        name = name or profiles.default_profile(spec, timeout=args.timeout, among=among)
    except profiles.ProfileError as e:
        raise SetupError(f"{spec.name}: {e}") from None
    chosen = profiles.select(scenarios, name)
    args.profile_name = name  # the coverage section lists the clauses of this profile
    if not chosen:
        raise SetupError(f"no scenario of profile {name!r} among the {len(scenarios)} selected")
    if not args.quiet:
        print(f"profile: {name} ({len(chosen)} of {len(scenarios)} selected scenarios)", flush=True)
    return chosen


def why_nothing_ran(outcomes: list[Outcome], spec: PeerSpec, timeout: float) -> str:
    """``0 of 663 scenarios ran: …`` with the reason the skips give."""
    head = f"0 of {len(outcomes)} scenarios ran"
    reasons = Counter(o.reason for o in outcomes)
    if all(r.startswith("driver lacks op") for r in reasons):
        listed = ", ".join(hello_ops(spec, timeout))
        return f"{head}: the driver offers none of the ops they need (hello listed: {listed})"
    common = "; ".join(f"{r} ×{n}" for r, n in reasons.most_common(3))
    return f"{head}: all skipped ({common})"


def coverage(outcomes: list[Outcome], caps: capabilities.Capabilities, profile: str) -> dict[str, object]:
    """The report's ``capabilities`` section (``runner.coverage``), and a warning per clause no
    executed scenario judged because the driver lacks an op or a capability (issue 32 item 3)."""
    section = runner_coverage(outcomes, caps, profile)
    unjudged: dict[str, str] = section["unjudged_clauses"]
    for clause, why in unjudged.items():
        print(f"warning: {clause} judged by no executed scenario ({why})")
    return section


def run(args: argparse.Namespace) -> int:
    if args.with_impl:
        from .cross_run import run_with

        return run_with(args)
    spec = PeerSpec.parse(args.impl)
    other = PeerSpec.parse(args.against) if args.against else None
    scenarios = select(args)
    devs = load_deviations(args)
    impls = preflight([spec, *([other] if other else [])], timeout=args.timeout)
    scenarios = _in_profile(args, spec, scenarios)
    if other is not None:
        return _differential(args, spec, other, impls, scenarios)
    info = impls[0]
    caps = capabilities.of_impl(info)
    run_report = new_report(args, impls)

    with progress(f"conformance {spec.name}", len(scenarios), quiet=args.quiet) as bar:
        outcomes, interrupted = run_until_interrupted(
            spec, scenarios, parallel=args.parallel, timeout=args.timeout,
            validate=args.validate_protocol, strict=args.strict, real_time=args.real_time,
            on_outcome=lambda o: bar.advance(note=o.scenario.id), caps=caps,
        )
    apply_deviations(outcomes, info.name, info.version, devs)
    if not args.quiet:
        for o in outcomes:
            print(report.line(o), flush=True)
    by_id = {o.scenario.id: report.scenario_findings(o, label(info), spec.name) for o in outcomes}
    found = [f for o in outcomes for f in by_id[o.scenario.id]]
    print(f"\nimplementation: {label(info)} ({spec.name})")
    report.write_text(outcomes, sys.stdout, found)
    run_report.stats = report.stats(outcomes)
    if run_report.stats["executed"] and not run_report.stats["passed"]:
        print("note: no scenario passed: every one that ran failed or is a listed deviation")
    if args.junit:
        stopped = (f"interrupted (Ctrl-C): {len(outcomes)} of {len(scenarios)} scenarios finished"
                   if interrupted or interrupt.stopping() else "")
        report.write_junit(outcomes, args.junit, label(info), by_id, fail_on_hazard=fail_on_hazard(args),
                           interrupted=stopped)
        print(f"memconform conformance: wrote JUnit report {args.junit}")
    executed = report.executed(outcomes)
    why = why_nothing_ran(outcomes, spec, args.timeout) if executed == 0 and not interrupted else ""
    extra = {"impl": label(info), "scenarios": report.scenarios_json(outcomes),
             "capabilities": coverage(outcomes, caps, getattr(args, "profile_name", "openpi"))}
    if args.shard:
        extra["shard"] = f"{args.shard[0]}/{args.shard[1]}"
    return conclude(args, run_report, found, executed=executed, extra=extra, nothing_ran=why,
                    interrupted=interrupted)


def _differential(
    args: argparse.Namespace, spec: PeerSpec, other: PeerSpec, impls: list[ImplInfo], scenarios: list[Scenario]
) -> int:
    """Both sides on every scenario; a difference is a ``difference`` finding (a violation:
    neither side is the oracle, but a co-writer must not differ)."""
    run_report = new_report(args, impls)
    both = set(hello_ops(spec, args.timeout)) & set(hello_ops(other, args.timeout))
    comparable = [sc for sc in scenarios if sc.driver_ops <= both]
    pair = f"{label(impls[0])} vs {label(impls[1])}"
    found: list[Finding] = []

    def show(sc: Scenario, diffs: list[Failure]) -> None:
        if not args.quiet:
            print(f"{'DIFF ' if diffs else 'SAME '} {sc.id}", flush=True)

    results = run_differential(spec, other, scenarios, timeout=args.timeout, on_result=show)
    for sc, diffs in results:
        if not diffs:
            continue
        print(f"\n--- {sc.id} [{', '.join(sc.clauses)}]: {spec.name} vs {other.name}")
        for f in diffs:
            print(f.render())
        first = diffs[0]
        found.append(Finding(
            "difference", VIOLATION, clause=",".join(sc.clauses), impl=pair,
            evidence=" ".join(f"{sc.id}: {first.where}: {first.detail or 'differs'}; "
                              f"{spec.name}: {first.expected} / {other.name}: {first.actual}".split())[:400],
            reproduce=f"memconform conformance --impl {spec.name} --against {other.name} --run {sc.id}",
            regression=report.shown_path(sc.path),
        ))
    differing = len(found)
    identical = max(0, len(comparable) - differing)
    print(f"\n{identical} identical, {differing} differing, "
          f"{len(scenarios) - len(comparable)} not compared (an op missing on one side)")
    run_report.stats = {
        "scenarios": len(scenarios), "comparable": len(comparable),
        "identical": identical, "differing": differing,
    }
    why = ""
    if not comparable:
        why = (f"0 of {len(scenarios)} scenarios ran on both sides: no scenario's ops are offered by both "
               f"drivers (common ops: {', '.join(sorted(both)) or 'none'})")
    return conclude(args, run_report, found, executed=len(comparable), nothing_ran=why)
