"""``memconform`` (``python -m harness``): the command line of the harness."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from . import deviations, report
from .peers import DEFAULT_TIMEOUT, PeerSpec, PeerUnavailable
from .runner import Outcome, run_all, run_differential
from .scenarios import SCENARIOS_DIR, ScenarioError, discover, load_file


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--impl", default="python", help="python | pi:<memory-core.mjs> | opencode:<ocl-memory.mjs>")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="per-op timeout in seconds")
    p.add_argument("--validate-protocol", action="store_true", help="check every message against the schema")
    p.add_argument("--strict", action="store_true", help="also compare error message texts")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="memconform", description="Conformance harness for the flat-file agent memory store.")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("conformance", help="run the scenario corpus against an implementation")
    _add_common(c)
    c.add_argument("--against", help="differential mode: compare --impl with this implementation")
    c.add_argument("--run", action="append", default=[], metavar="GLOB", help="only scenario ids matching")
    c.add_argument("--skip", action="append", default=[], metavar="GLOB", help="skip scenario ids matching")
    c.add_argument("--json", type=Path, help="write a JSON report")
    c.add_argument("--junit", type=Path, help="write a JUnit XML report")
    c.add_argument("--parallel", type=int, default=1, help="worker count (one driver each)")
    c.add_argument("--scenarios", type=Path, default=SCENARIOS_DIR / "conformance", help="corpus root")
    c.add_argument("--quiet", action="store_true", help="no per-scenario lines")
    r = sub.add_parser("replay", help="replay scenario files (e.g. a shrunk regression) on an implementation")
    _add_common(r)
    r.add_argument("files", nargs="+", type=Path)
    return p


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
    from .runner import Worker

    w = Worker(spec)
    try:
        w._start().close()
        return w.impl, w.version
    finally:
        w.close()


def cmd_conformance(args: argparse.Namespace) -> int:
    spec = PeerSpec.parse(args.impl)
    scenarios = discover(args.scenarios, args.run, args.skip)
    if not scenarios:
        print("no scenario selected", file=sys.stderr)
        return 2
    if args.against:
        other = PeerSpec.parse(args.against)
        differing = 0

        def show(sc: object, diffs: list[object]) -> None:
            nonlocal differing
            if diffs:
                differing += 1
            if not args.quiet:
                print(f"{'DIFF ' if diffs else 'SAME '} {getattr(sc, 'id')}", flush=True)

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


def cmd_replay(args: argparse.Namespace) -> int:
    spec = PeerSpec.parse(args.impl)
    scenarios = [load_file(f) for f in args.files]
    outcomes = run_all(spec, scenarios, timeout=args.timeout, validate=args.validate_protocol, strict=args.strict)
    for o in outcomes:
        print(report.line(o))
    report.write_text(outcomes, sys.stdout)
    return 1 if any(o.status != "pass" for o in outcomes) else 0


COMMANDS = {"conformance": cmd_conformance, "replay": cmd_replay}


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except ScenarioError as e:
        print(f"memconform: scenario error: {e}", file=sys.stderr)
        return 2
    except PeerUnavailable as e:
        print(f"memconform: {e}", file=sys.stderr)
        return 2
