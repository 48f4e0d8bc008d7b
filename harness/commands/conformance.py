"""``memconform conformance``: the scenario corpus against one implementation, or two."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import deviations, report
from ..differential import run_differential
from ..oracles.expect import Failure
from ..peers import PeerSpec
from ..runner import Outcome, run_all
from ..scenarios import SCENARIOS_DIR, Scenario, discover
from .common import add_impl_arguments

NAME = "conformance"
HELP = "run the scenario corpus against an implementation (or --against another)"


def add_arguments(c: argparse.ArgumentParser) -> None:
    add_impl_arguments(c)
    c.add_argument("--strict", action="store_true", help="also compare error message texts")
    c.add_argument("--against", help="differential mode: compare --impl with this implementation")
    c.add_argument("--run", action="append", default=[], metavar="GLOB", help="only scenario ids matching")
    c.add_argument("--skip", action="append", default=[], metavar="GLOB", help="skip scenario ids matching")
    c.add_argument("--json", type=Path, help="write a JSON report")
    c.add_argument("--junit", type=Path, help="write a JUnit XML report")
    c.add_argument("--parallel", type=int, default=1, help="worker count (one driver each)")
    c.add_argument("--scenarios", type=Path, default=SCENARIOS_DIR / "conformance", help="corpus root")
    c.add_argument("--quiet", action="store_true", help="no per-scenario lines")


def apply_deviations(outcomes: list[Outcome], impl: str, version: str) -> None:
    devs = deviations.load()
    for o in outcomes:
        d = deviations.expected_failure(devs, impl, version, o.scenario.id)
        if d is None:
            continue
        if o.status in ("fail", "error"):
            o.status, o.reason = "xfail", d.reason
        elif o.status == "pass":
            o.status = "xpass"


def _impl_identity(spec: PeerSpec) -> tuple[str, str]:
    from ..runner import Worker

    w = Worker(spec)
    try:
        w._start().close()
        return w.impl, w.version
    finally:
        w.close()


def run(args: argparse.Namespace) -> int:
    spec = PeerSpec.parse(args.impl)
    scenarios = discover(args.scenarios, args.run, args.skip)
    if not scenarios:
        print("no scenario selected", file=sys.stderr)
        return 2
    if args.against:
        other = PeerSpec.parse(args.against)
        differing = 0

        def show(sc: Scenario, diffs: list[Failure]) -> None:
            nonlocal differing
            if diffs:
                differing += 1
            if not args.quiet:
                print(f"{'DIFF ' if diffs else 'SAME '} {sc.id}", flush=True)

        results = run_differential(spec, other, scenarios, timeout=args.timeout, on_result=show)
        for sc, diffs in results:
            if diffs:
                print(f"\n--- {sc.id} [{', '.join(sc.clauses)}]: {spec.name} vs {other.name}")
                for f in diffs:
                    print(f.render())
        print(f"\n{len(results) - differing} identical, {differing} differing")
        return 1 if differing else 0
    impl, version = _impl_identity(spec)

    def show_one(o: Outcome) -> None:
        if not args.quiet:
            print(report.line(o), flush=True)

    outcomes = run_all(
        spec, scenarios, parallel=args.parallel, timeout=args.timeout,
        validate=args.validate_protocol, strict=args.strict, on_outcome=None,
    )
    apply_deviations(outcomes, impl, version)
    for o in outcomes:
        show_one(o)
    print(f"\nimplementation: {impl} {version} ({spec.name})")
    report.write_text(outcomes, sys.stdout)
    if args.json:
        report.write_json(outcomes, args.json, f"{impl} {version}")
    if args.junit:
        report.write_junit(outcomes, args.junit, f"{impl} {version}")
    bad = sum(o.status in ("fail", "error", "xpass") for o in outcomes)
    return 1 if bad else 0
