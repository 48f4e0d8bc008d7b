"""``memconform conformance --impl X --with Y``: the cross-tool sequences on one pair.

Kept out of ``commands/conformance.py`` (which only dispatches here) so the single-tool run
and the pair run do not share code paths they do not need.  Known deviations of a pair are
rows ``| «implA»+«implB» | «verA»+«verB» | «scenario id» | … |`` of KNOWN_DEVIATIONS.md and of
``--deviations`` files (the pair label, in the order A, B: a sequence is not symmetric).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import replace

from ..drivers import capabilities
from ..drivers.peers import PeerSpec, preflight
from ..gate import deviations
from ..gate.cross import Pair, discover_cross, run_pair
from ..gate.runner import Outcome, coverage
from ..oracles.findings import Finding
from ..reports import scenarios as report
from ..reports.envelope import ImplInfo
from ..reports.progress import progress
from .common import SetupError, conclude, new_report


def pair_label(a: ImplInfo, b: ImplInfo) -> tuple[str, str]:
    """The (impl, version) cells a pair's KNOWN_DEVIATIONS rows carry."""
    return f"{a.name}+{b.name}", f"{a.version}+{b.version}"


def run_with(args: argparse.Namespace) -> int:
    spec, other = PeerSpec.parse(args.impl), PeerSpec.parse(args.with_impl)
    if args.against:
        raise SetupError("--with and --against do not go together (a pair on one store, or a differential)")
    scenarios = discover_cross(list(getattr(args, "scenarios", []) or []), bool(getattr(args, "only_scenarios", False)),
                               list(args.run), list(args.skip))
    if not scenarios:
        raise SetupError("no cross-tool sequence selected (scenarios/cross/ and --scenarios, by --run/--skip)")
    devs = deviations.load_all(getattr(args, "deviations", []) or [], getattr(args, "scenarios", []) or [])
    impls = preflight([spec, other], timeout=args.timeout)
    impl, version = pair_label(impls[0], impls[1])
    run_report = new_report(args, impls)
    with progress(f"cross {spec.name} + {other.name}", len(scenarios), quiet=args.quiet) as bar:
        caps = (capabilities.of_impl(impls[0]), capabilities.of_impl(impls[1]))
        outcomes = run_pair(Pair(spec, other, caps), scenarios, timeout=args.timeout, validate=args.validate_protocol,
                            strict=args.strict, on_outcome=lambda o: bar.advance(note=o.scenario.id))
    deviations.apply(outcomes, impl, version, devs)
    if not args.quiet:
        for o in outcomes:
            print(report.line(o), flush=True)
    shown = f"A={impls[0].name} {impls[0].version} ({spec.name}), B={impls[1].name} {impls[1].version} ({other.name})"
    reproduce = f"--impl {spec.name} --with {other.name}"
    by_id = {o.scenario.id: _findings(o, f"{impl} {version}", reproduce) for o in outcomes}
    found = [f for o in outcomes for f in by_id[o.scenario.id]]
    print(f"\npair: {shown}")
    report.write_text(outcomes, sys.stdout, found)
    run_report.stats = report.stats(outcomes)
    kinds = Counter(f.kind for o in outcomes for f in o.findings)
    if kinds:
        print("co-writer findings: " + ", ".join(f"{k} ×{n}" for k, n in sorted(kinds.items())))
    executed = report.executed(outcomes)
    why = f"0 of {len(outcomes)} sequences ran: " + "; ".join(sorted({o.reason for o in outcomes}))[:300]
    extra = {"impl": f"{impl} {version}", "pair": {"A": spec.name, "B": other.name},
             "scenarios": report.scenarios_json(outcomes),
             "capabilities": coverage(outcomes, caps[0], caps[0].contract) | {"declared_b": caps[1].declared()}}
    return conclude(args, run_report, found, executed=executed, extra=extra, nothing_ran="" if executed else why)


def _findings(o: Outcome, label: str, reproduce: str) -> list[Finding]:
    """``report.scenario_findings`` with the pair's reproduce line (``--run`` the sequence)."""
    found = report.scenario_findings(o, label, "")
    line = f"memconform conformance {reproduce} --run {o.scenario.id}"
    return [f if f.reproduce.startswith("memconform conformance") else replace(f, reproduce=line) for f in found]
