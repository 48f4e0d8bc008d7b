"""``memconform locks``: the lock adversary matrix for one implementation.

Each cell's verdict is judged by SPEC (S-LOCK-2/3/6/7); each cell that ends busy also gets the
``unavailable`` column: how long (in lock-age time, ``harness.writers.availability``) a fresh writer
of the same implementation stays refused.  A SPEC-conformant outage of 60 s or more is a
hazard, shown by default, counted in the summary and exported as a replayable regression.
"""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..drivers import capabilities
from ..drivers.interrupt import stopping, work_done
from ..drivers.peers import PeerSpec, preflight
from ..gate.profiles import ProfileError, default_profile
from ..gate.regressions import export
from ..oracles.findings import (
    VIOLATION,
    WEAKNESS,
    Finding,
    dedupe,
    exit_code,
    summary_line,
    verdict,
)
from ..reports import envelope
from ..reports.progress import Progress, progress
from ..writers.availability import hazard_for
from ..writers.locks import (
    MODES,
    Cell,
    CellResult,
    busy_clause,
    busy_window,
    cells,
    lock_state,
    run_matrix,
    scenario_for,
    spec_seconds,
    two_reclaimers_race,
)
from .common import (
    add_impl_arguments,
    add_quiet_argument,
    add_report_arguments,
    export_dir,
    fail_on_hazard,
    interrupted_end,
    positive_int,
    publish,
)

NAME = "locks"
HELP = "lock file states x holders x ages x modes: the verdict, time and outage each implementation reaches"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_impl_arguments(p)
    add_report_arguments(p)
    p.add_argument("--mode", choices=MODES, action="append", help="local and/or shared (default both)")
    p.add_argument("--parallel", type=positive_int, default=16, help="cells run at once (default: %(default)s)")
    p.add_argument("--real-time", action="store_true",
                   help="wait the lock windows out on the real clock (default: virtual time where the driver offers it)")
    add_quiet_argument(p)


def _row(r: CellResult) -> str:
    mark = "ok  " if r.ok else ("TIME" if r.verdict == r.expected else "DIFF")
    want = _want(r)
    outage = "" if r.verdict != "busy" else ("never" if r.unavailable is None else f"{r.unavailable:g}s")
    return (f"{mark} {r.cell.name:<38} spec {want:<14} got {r.verdict:<8} {r.seconds:6.2f}s "
            f"unavailable {outage:<6} {r.detail}").rstrip()


def _want(r: CellResult) -> str:
    earliest, latest = busy_window(r.cell, r.contract)
    if r.expected == "busy" and earliest != latest:
        return f"{r.expected} <={latest:.1f}s"
    return f"{r.expected} ~{spec_seconds(r.cell):.1f}s"


def reproduce(spec: PeerSpec, r: CellResult) -> str:
    return f"memconform locks --impl {spec.name} --mode {r.cell.mode}"


def findings_of(spec: PeerSpec, impl: str, results: list[CellResult]) -> list[tuple[Finding, CellResult]]:
    """The matrix's findings: a verdict SPEC forbids (violation), an outage ≥ 60 s (hazard)."""
    out: list[tuple[Finding, CellResult]] = []
    for r in results:
        if r.verdict == "skipped":
            continue
        if not r.ok:
            # a wrong verdict is one finding per cell; a busy answer outside the policy's window
            # one per mode (S-LOCK-6 local, S-LOCK-7 shared), whatever the lock state
            timing = r.verdict == r.expected
            out.append((Finding(
                "lock-verdict", VIOLATION,
                busy_clause(r.cell, r.contract) if timing else "S-LOCK-3",
                impl, f"write_memory {r.cell.mode}:busy-window" if timing else f"write_memory {r.cell.name}",
                path=".lock", reproduce=reproduce(spec, r),
                evidence=f"{r.cell.name}: {'the contract' if r.contract != 'openpi' else 'SPEC'} {_want(r)}, got {r.verdict} "
                         f"{r.seconds:.2f}s {r.detail}".rstrip(),
            ), r))
        if r.verdict == "busy":
            f = hazard_for(lock_state(r.cell), r.unavailable, impl=impl)
            if f is not None:
                # one finding per state and mode: the key's op names the cell's content and mode
                f = Finding(f.kind, f.severity, f.clause, impl, f"write_memory {r.cell.mode}:{r.cell.content}"
                            + (f"/{r.cell.holder}" if r.cell.content == "valid" else ""),
                            evidence=f.evidence, path=f.path, reproduce=reproduce(spec, r))
                out.append((f, r))
    out += [(replace(f, impl=impl, reproduce=reproduce(spec, r)), r) for r in results for f in r.leftovers]  # S-LOCK-5
    counts: dict[tuple[str, ...], int] = {}
    for f, _r in out:
        counts[f.key] = counts.get(f.key, 0) + 1
    seen = {id(f) for f in dedupe(f for f, _ in out)}
    return [(f if counts[f.key] == 1 else Finding(
        f.kind, f.severity, f.clause, f.impl, f.op, f.syscall, f"{f.evidence} (and {counts[f.key] - 1} more cells)",
        f.reproduce, path=f.path), r) for f, r in out if id(f) in seen]


def _contract(spec: PeerSpec, hello: dict[str, Any]) -> str:
    """The profile the implementation is judged by (``conformance``'s default): a co-writer of
    the shared-store profile answers busy within SS-LOCK-5's bound, not openpi's exact window."""
    try:
        return default_profile(spec, hello)
    except ProfileError:  # profiles of its own: lock timing is still openpi's
        return "openpi"


def _applicable(selected: list[Cell], caps: capabilities.Capabilities, *, asked: bool,
                ) -> tuple[list[Cell], list[capabilities.NotRun]]:
    """The cells that apply to the tool: the local mode only for a tool with a local store (a
    skip with the reason; refused when ``--mode local`` asked for nothing else)."""
    if caps.local_store:
        return selected, []
    why = "not applicable: the driver declares no local store (local_store: false)"
    keep = [c for c in selected if c.mode != "local"]
    if not keep and asked:
        raise capabilities.Missing(f"{NAME} --mode local: {caps.name}: {why}")
    skipped = [c for c in selected if c.mode == "local"]
    return keep, [capabilities.NotRun(f"{len(skipped)} local-mode cells", why, ("S-LOCK-6",))] if skipped else []


def run(args: argparse.Namespace) -> int:
    spec = PeerSpec.parse(args.impl)
    report = envelope.RunReport(command=envelope.argv())
    report.impls = preflight([spec], timeout=args.timeout)
    impl = f"{report.impls[0].name} {report.impls[0].version}"
    caps = capabilities.of_impl(report.impls[0])
    capabilities.require_command(caps, NAME)
    contract = _contract(spec, report.impls[0].hello)
    selected, not_run = _applicable(cells(tuple(args.mode or MODES)), caps, asked=bool(args.mode))
    capabilities.say_not_run(NAME, not_run, most=1)
    done: dict[str, CellResult] = {}

    def seen(r: CellResult, bar: Progress) -> None:
        if stopping():
            return  # cut by Ctrl-C (its processes were killed): not a result
        done[r.cell.name] = r
        bar.advance(note=r.cell.name)

    interrupted = False
    with progress(f"locks {spec.name}", len(selected), quiet=args.quiet) as bar:
        try:
            results = run_matrix(spec, selected, parallel=args.parallel, real_time=args.real_time,
                                 on_result=lambda r: seen(r, bar))
            work_done()
            if stopping():
                raise KeyboardInterrupt
        except KeyboardInterrupt:
            work_done()  # Ctrl-C: the cells that finished are the report
            interrupted = True
            results = [done[c.name] for c in selected if c.name in done]
    results = [replace(r, contract=contract) for r in results]
    for r in results:
        print(_row(r))
    differing = [r for r in results if not r.ok and r.verdict != "skipped"]
    print(f"\n{len(results) - len(differing)} cells as SPEC says, {len(differing)} differ")
    found = findings_of(spec, impl, results)
    if spec.kind == "python" and not interrupted:
        with tempfile.TemporaryDirectory() as d:
            race = two_reclaimers_race(Path(d))
        print(
            "two reclaimers of one stale lock (A paused between recheck and unlink): "
            f"both hold it: {race.both_hold} (documented weakness S-INV-9 a)"
        )
        if race.both_hold:
            found.append((Finding(
                "two-holders", WEAKNESS, "S-INV-9", impl, "stale reclaim",
                evidence="two reclaimers of one stale lock both hold it (no atomic compare-and-unlink, S-INV-9 a); "
                         "shown in process through the reference's Fs seam, 1 of 1 paused runs",
            ), results[0]))
    directory = export_dir(args)
    findings: list[Finding] = []
    for f, r in found:
        if directory is not None and f.kind != "two-holders" and r.store:
            f = export(f, scenario_for(r.cell, r.store, r.expected if f.kind == "lock-verdict" else "busy"), directory)
        findings.append(f)
    for f in findings:
        print(f.line() + (f" -> {f.regression}" if f.regression else ""))
    executed = sum(r.verdict != "skipped" for r in results)
    run_verdict = verdict(findings, executed=executed, fail_on_hazard=fail_on_hazard(args))
    report.findings = findings
    report.stats = {
        "cells": len(results), "executed": executed, "as_spec": len(results) - len(differing),
        "differ": len(differing), "busy": sum(r.verdict == "busy" for r in results),
        "never_available": sum(r.verdict == "busy" and r.unavailable is None for r in results),
    }
    report.finish(run_verdict)
    print(f"{spec.name}: {summary_line(findings)}; verdict {run_verdict} ({report.seconds:.1f} s)")
    cells_json = [{"cell": r.cell.name, "expected": r.expected, "verdict": r.verdict, "seconds": round(r.seconds, 3),
                   "unavailable": r.unavailable if r.verdict == "busy" else 0.0, "detail": r.detail}
                  for r in results]
    section = capabilities.coverage_section(caps, not_run, contract,
                                            [(busy_clause(r.cell, r.contract), "S-LOCK-3") for r in results
                                             if r.verdict != "skipped"])
    if interrupted:
        return interrupted_end(args, report, {"cells": cells_json, "capabilities": section})
    publish(args, report, {"cells": cells_json, "capabilities": section})
    return exit_code(run_verdict, fail_on_hazard=fail_on_hazard(args))
