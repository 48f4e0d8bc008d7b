"""Bench W5: the gate's own cost - the corpus per implementation, virtual and real time side
by side in one run, and the share of the wall time its operations take (issue 15 item 5).

Each implementation runs the scenarios of its default profile (as ``memconform conformance
--impl …`` does) with one worker per core, once on virtual time (where its driver offers it)
and once with ``--real-time``; the verdicts of both runs are compared, so a row also says
whether virtual time changed any.  Ops share = Σ op seconds / (workers × wall): the part of the
workers' time spent inside the implementation's own operations, the rest being driver starts,
sandbox set-up, judging and waiting.
"""

from __future__ import annotations

import os
import time
from typing import Any

from ..drivers.peers import PeerSpec, configured_peers
from ..gate.runner import Outcome, run_all


def _profiled(spec: PeerSpec) -> tuple[str, list[Any]]:
    from ..gate import profiles
    from ..gate.scenarios import discover

    name = profiles.default_profile(spec)
    return name, profiles.select(discover(), name)


def _one(spec: PeerSpec, scenarios: list[Any], parallel: int, real_time: bool) -> tuple[float, list[Outcome]]:
    t0 = time.perf_counter()
    outcomes = run_all(spec, scenarios, parallel=parallel, real_time=real_time)
    return time.perf_counter() - t0, outcomes


def _verdicts(outcomes: list[Outcome]) -> dict[str, str]:
    return {o.scenario.id: o.status for o in outcomes}


def w5(specs: list[PeerSpec] | None = None, parallel: int | None = None) -> list[dict[str, Any]]:
    """One row per implementation: both walls, ops shares, the slowest scenarios, verdicts equal?"""
    workers = parallel or os.cpu_count() or 1
    rows = []
    for spec in specs if specs is not None else [PeerSpec("python"), *configured_peers()]:
        profile, scenarios = _profiled(spec)
        load = os.getloadavg()[0]
        vwall, virtual = _one(spec, scenarios, workers, False)
        rwall, real = _one(spec, scenarios, workers, True)
        v, r = _verdicts(virtual), _verdicts(real)
        slow = sorted(virtual, key=lambda o: -o.seconds)[:3]
        rows.append({
            "impl": spec.kind, "profile": profile, "scenarios": len(scenarios), "workers": workers,
            "virtual_s": round(vwall, 2), "real_s": round(rwall, 2),
            "virtual_ops_share": round(sum(o.op_seconds for o in virtual) / (workers * vwall), 3),
            "real_ops_share": round(sum(o.op_seconds for o in real) / (workers * rwall), 3),
            "same_verdicts": v == r,
            "differ": [f"{k}: virtual {v.get(k)}, real {r.get(k)}" for k in sorted(v) if v.get(k) != r.get(k)][:5],
            "slowest_virtual": [f"{o.scenario.id} {o.seconds:.2f} s" for o in slow],
            "load": load, "load_after": os.getloadavg()[0],
        })
    return rows


def render(rows: list[dict[str, Any]]) -> list[str]:
    """The W5 table of the results file."""
    lines = [
        "| impl | profile | scenarios | workers | virtual time s | real time s | speed-up | ops share virtual | ops share real | same verdicts | load before/after |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        speed = r["real_s"] / r["virtual_s"] if r["virtual_s"] else 0.0
        lines.append(
            f"| {r['impl']} | {r['profile']} | {r['scenarios']} | {r['workers']} | {r['virtual_s']:.2f} | "
            f"{r['real_s']:.2f} | {speed:.1f}× | {r['virtual_ops_share']:.0%} | {r['real_ops_share']:.0%} | "
            f"{'yes' if r['same_verdicts'] else 'NO'} | {r['load']:.1f}/{r.get('load_after', r['load']):.1f} |"
        )
    for r in rows:
        if r.get("differ"):
            lines.append(f"\n{r['impl']}: verdicts that differ: {'; '.join(r['differ'])}")
    lines.append("")
    lines.append("Ops share: Σ op seconds / (workers × wall). Slowest in virtual time: " + "; ".join(
        f"{r['impl']}: {', '.join(r['slowest_virtual'])}" for r in rows))
    return lines
