"""``memconform replay FILE.nemesis.jsonl`` / ``FILE.race.jsonl``: re-run a nemesis
regression's schedule, or enforce a race regression's schedule, k of n.

Not a command of its own (``NAME`` is absent, so the CLI does not list it): ``replay`` hands
these files here, so a plain scenario replay never loads the fault machinery.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..commands.common import SetupError, conclude, new_report
from ..drivers import capabilities
from ..drivers.peers import PeerSpec, PeerUnavailable, preflight
from ..oracles.findings import Finding
from . import export as nx
from . import race_files as rf
from . import slot


def _stands(args: argparse.Namespace, path: Path, f: dict[str, Any], k: int, n: int, impl: str) -> list[Finding]:
    """"reproduced k of n runs", and the recorded finding when any run showed it again."""
    print(f"  reproduced {k} of {n} runs")
    if not k:
        return []
    return [Finding(str(f.get("kind")), str(f.get("severity")), clause=str(f.get("clause", "")), impl=impl,
                    op=str(f.get("op", "")), evidence=f"reproduced {k} of {n} runs: {f.get('evidence', '')}",
                    reproduce=f"memconform replay {path} --runs {args.runs}", regression=str(path))]


def run_nemesis_replay(args: argparse.Namespace, files: list[Path]) -> int:
    try:
        regs = [nx.load(f) for f in files]
    except nx.NemesisFileError as e:
        raise SetupError(str(e)) from None
    found: list[Finding] = []
    report_runs = []
    executed = 0
    run_report = None
    for reg in regs:
        if args.nemesis_impl:  # other implementations than recorded, round-robin over the slots
            peers = list(dict.fromkeys(PeerSpec.parse(n) for n in args.nemesis_impl))
        else:  # the recorded kinds, found here through --impl
            try:
                peers = list(dict.fromkeys(slot.resolve(reg.specs, [PeerSpec.parse(i) for i in args.impl])))
            except PeerUnavailable as e:  # say which writers need it, not only that a kind needs a path
                ran = ", ".join(f"{w} {k}" for w, k in reg.impls.items())
                raise SetupError(f"{reg.path.name} ran these writers: {ran}; {e}") from None
        impls = preflight(peers, timeout=args.timeout)
        labels = {i.spec: f"{i.name} {i.version}" for i in impls}
        if run_report is None:
            run_report = new_report(args, impls)
        print(f"{reg.path}: {nx.describe(reg)}")
        held = reg.scheduled
        print(f"  schedule: seed {reg.schedule.get('seed')}, {', '.join(reg.schedule.get('families', []))}, "
              f"{reg.schedule.get('time_limit')} s, {reg.schedule.get('writers')} writers; "
              f"against {', '.join(labels.get(p.name, p.name) for p in peers)}"
              + (f"; {len(held['steps'])} store calls enforced ({held.get('strategy')} seed {held.get('seed')})"
                 if held else ""))

        def said(run: nx.ReplayRun) -> None:
            kinds = ", ".join(sorted({f.kind for f in run.seen})) or "nothing"
            why = f"diverged at {run.diverged}" if run.diverged else f"saw {kinds}"
            print(f"  run {run.n}/{args.runs}: {'reproduced' if run.reproduced else 'not reproduced'} "
                  f"({run.seconds:.0f} s; {why})", flush=True)

        runs = nx.replay(reg, peers, runs=args.runs, labels=labels, timeout=args.timeout, on_run=said)
        k = sum(r.reproduced for r in runs)
        executed += len(runs)
        found += _stands(args, reg.path, reg.finding, k, len(runs), str(reg.finding.get("impl", "")))
        report_runs.append({"file": str(reg.path), "reproduced": k, "runs": len(runs), "detail": nx.to_json(runs)})
    assert run_report is not None
    run_report.stats = {"nemesis_regressions": len(regs), "runs": executed,
                        "reproduced": {r["file"]: f"{r['reproduced']} of {r['runs']}" for r in report_runs}}
    return conclude(args, run_report, found, executed=executed, extra={"nemesis": report_runs},
                    nothing_ran="no nemesis run executed")


def run_race_replay(args: argparse.Namespace, files: list[Path]) -> int:
    """Each race regression's picks, enforced ``--runs`` times on the implementations
    ``--impl`` names (by kind; the recorded name and version say which one it was)."""
    try:
        regs = [rf.load(f) for f in files]
    except rf.RaceFileError as e:
        raise SetupError(str(e)) from None
    given = [PeerSpec.parse(i) for i in args.impl]
    found: list[Finding] = []
    detail = []
    executed = 0
    run_report = None
    for reg in regs:
        peers = rf.resolve(reg, given)
        impls = preflight(list(dict.fromkeys(peers)), timeout=args.timeout)
        for info in impls:  # a refused set_clock replayed is no race: refuse up front (issue 32)
            if why := capabilities.script_needs(capabilities.of_impl(info), [o for w in reg.situation.ops for o, _ in w]):
                raise capabilities.Missing(f"replay {reg.path.name} on {info.spec}: {why}")
        labels = {i.spec: f"{i.name} {i.version}" for i in impls}
        if run_report is None:
            run_report = new_report(args, impls)
        print(f"{reg.path}: {rf.describe(reg)}")
        for want, here in zip(reg.impls, peers, strict=True):
            got = labels.get(here.name, here.name)
            if got != f"{want.get('name')} {want.get('version')}":
                print(f"  note: recorded {want.get('name')} {want.get('version')}, replaying on {got}")

        def said(run: rf.ReplayRun) -> None:
            why = f"diverged at {run.diverged}" if run.diverged else f"saw {', '.join(run.seen) or 'nothing'}"
            print(f"  run {run.n}/{args.runs}: {'reproduced' if run.reproduced else 'not reproduced'} "
                  f"({run.seconds:.1f} s; {why})", flush=True)

        runs = rf.replay(reg, peers, runs=args.runs, labels=labels, timeout=args.timeout, on_run=said)
        k = sum(r.reproduced for r in runs)
        executed += len(runs)
        found += _stands(args, reg.path, reg.finding, k, len(runs),
                         ", ".join(dict.fromkeys(labels.get(p.name, p.name) for p in peers)))
        detail.append({"file": str(reg.path), "reproduced": k, "runs": len(runs),
                       "diverged": [r.diverged for r in runs if r.diverged]})
    assert run_report is not None
    run_report.stats = {"race_regressions": len(regs), "runs": executed,
                        "reproduced": {d["file"]: f"{d['reproduced']} of {d['runs']}" for d in detail}}
    return conclude(args, run_report, found, executed=executed, extra={"races": detail},
                    nothing_ran="no race replay executed")
