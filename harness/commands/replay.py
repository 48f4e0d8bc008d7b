"""``memconform replay``: replay scenario files (a shrunk regression) on any implementation.

The files are checked before any peer starts (a missing file, a directory or bad JSON is one
line, exit 2); the peer is asked ``hello`` up front; the verdict and ``--json`` are those of
every command (a failing scenario a ``deviation`` violation, a hazard shown and counted).
Known deviations (KNOWN_DEVIATIONS.md and ``--deviations FILE``) apply as in ``conformance``:
a replayed scenario that fails exactly as its row says is an expected failure.

A nemesis regression (``*.nemesis.jsonl``, ``harness.interleave.export``) re-runs its recorded
schedule ``--runs`` times against the recorded implementations and says "reproduced k of n
runs"; the finding stands when k > 0.  Regressions record each writer's implementation by its
kind, never a machine path: ``--impl pi:/path/memory-core.mjs`` says where it is here (else
``$MEMCONFORM_PI_CORE`` / ``$MEMCONFORM_OPENCODE_PLUGIN``).  A race regression
(``*.race.jsonl``, ``harness.interleave.race_files``) enforces its recorded schedule the same
way, on the implementations ``--impl`` names (repeatable).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..drivers import capabilities
from ..drivers.peers import PeerSpec, preflight
from ..gate import deviations
from ..gate.runner import run_until_interrupted
from ..gate.scenarios import Scenario, load_file
from ..reports import scenarios as report
from .common import (
    SetupError,
    add_impl_arguments,
    add_report_arguments,
    conclude,
    hello_ops,
    new_report,
    positive_int,
)
from .conformance import coverage

NAME = "replay"
HELP = "replay scenario files (e.g. a shrunk regression) on an implementation"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_impl_arguments(p, many=True)
    add_report_arguments(p)
    p.add_argument("--strict", action="store_true", help="also compare error message texts")
    p.add_argument("--runs", type=positive_int, default=3, help="nemesis regressions: how many re-runs (default 3)")
    p.add_argument(
        "--nemesis-impl", action="append", default=[], metavar="IMPL",
        help="nemesis regressions: implementations to run the schedule against instead (repeatable; default: as recorded)",
    )
    deviations.add_argument(p)
    p.add_argument("files", nargs="+", type=Path, metavar="FILE", help="scenario JSON files")


def load(files: list[Path]) -> list[Scenario]:
    """Each file as a scenario; the first unusable one is a setup error naming it."""
    out = []
    for f in files:
        if f.is_dir():
            raise SetupError(f"{f}: is a directory; give scenario files (e.g. {f}/*.json)")
        if not f.exists():
            raise SetupError(f"{f}: no such file")
        out.append(load_file(f))
    return out


def run(args: argparse.Namespace) -> int:
    races = [f for f in args.files if f.name.endswith(".race.jsonl")]
    if races:
        if len(races) < len(args.files):
            raise SetupError("give scenario files or race regressions (*.race.jsonl), not both at once")
        from ..interleave.replay import run_race_replay

        return run_race_replay(args, races)
    nemesis = [f for f in args.files if f.name.endswith(".nemesis.jsonl")]
    if nemesis:
        if len(nemesis) < len(args.files):
            raise SetupError("give scenario files or nemesis regressions (*.nemesis.jsonl), not both at once")
        from ..interleave.replay import run_nemesis_replay

        return run_nemesis_replay(args, nemesis)
    if len(args.impl) > 1:
        raise SetupError("scenario files replay on one implementation: give --impl once")
    spec = PeerSpec.parse(args.impl[0] if args.impl else "python")
    scenarios = load(args.files)
    devs = deviations.load_all(args.deviations, more_ids=[sc.id for sc in scenarios])
    impls = preflight([spec], timeout=args.timeout)
    info = impls[0]
    caps = capabilities.of_impl(info)
    run_report = new_report(args, impls)
    outcomes, interrupted = run_until_interrupted(spec, scenarios, timeout=args.timeout,
                                                  validate=args.validate_protocol, strict=args.strict, caps=caps)
    deviations.apply(outcomes, info.name, info.version, devs)
    impl = f"{info.name} {info.version}"
    found = [f for o in outcomes for f in report.scenario_findings(o, impl, spec.name)]
    for o in outcomes:
        print(report.line(o))
    report.write_text(outcomes, sys.stdout, found)
    run_report.stats = report.stats(outcomes)
    executed = report.executed(outcomes)
    why = ""
    if executed == 0 and not interrupted:
        reasons = "; ".join(sorted({o.reason for o in outcomes}))
        why = f"0 of {len(outcomes)} scenarios ran: {reasons} (hello listed: {', '.join(hello_ops(spec, args.timeout))})"
    extra = {"impl": impl, "scenarios": report.scenarios_json(outcomes),
             "capabilities": coverage(outcomes, caps, caps.contract)}
    return conclude(args, run_report, found, executed=executed, extra=extra, nothing_ran=why,
                    interrupted=interrupted)
