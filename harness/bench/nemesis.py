"""Bench W3, nemesis rows (issue 13 item 5): racing writers while faults fire, the reference
alone and mixed with the JS peers, side by side in one run.

Per (mix, family): ops/s of the writers, faults that took effect per minute, the findings
(by severity, and their kinds) and the checker's verdict and time.  The same schedule (seed,
plan) runs for each mix, so the columns compare implementations, not luck.  Registered in
``harness.bench.workloads.WORKLOADS`` as ``w3_nemesis``; ``MEMCONFORM_BENCH_NEMESIS_S`` sets the seconds
of the ``all`` run (each single family runs a third of it).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from typing import Any

from ..drivers.peers import PeerSpec, configured_peers, preflight


def mixes() -> list[tuple[str, list[PeerSpec]]]:
    out = [("reference alone", [PeerSpec("python")])]
    peers = configured_peers()
    if peers:
        out.append(("reference + " + " + ".join(p.kind for p in peers), [PeerSpec("python"), *peers]))
    return out


def w3_nemesis(seconds: float | None = None, writers: int = 6, seed: int = 7) -> list[dict[str, Any]]:
    from ..interleave.nemesis import FAMILIES, make_schedule
    from ..interleave.run import run_nemesis

    total = seconds if seconds is not None else float(os.environ.get("MEMCONFORM_BENCH_NEMESIS_S", "30"))
    plan = [("all", total), *((f, max(3.0, total / 3)) for f in FAMILIES)]
    every = list(dict.fromkeys(p for _, peers in mixes() for p in peers))
    labels = {i.spec: f"{i.name} {i.version}" for i in preflight(every)}
    rows = []
    for family, limit in plan:
        schedule = make_schedule(seed, [family], interval=1.0, time_limit=limit, writers=writers, shared=True)
        for name, peers in mixes():
            t0 = time.perf_counter()
            res = run_nemesis(peers, schedule, settle_limit=20.0)
            found = res.findings(labels)
            effective = sum(c["effective"] for c in res.fault_counts().values())
            minutes = max(res.seconds, 1e-9) / 60
            verdicts = sorted({v.status for v in res.verdicts.values()})
            rows.append({
                "mix": name, "family": family, "seconds": round(res.seconds, 2),
                "wall_s": round(time.perf_counter() - t0, 2), "ops": res.total_ops,
                "ops_per_s": round(res.total_ops / res.seconds, 1) if res.seconds else 0.0,
                "faults_per_min": round(effective / minutes, 1),
                "findings": dict(Counter(f.severity for f in found)),
                "kinds": sorted({f.kind for f in found}),
                "checker": verdicts, "check_s": round(max((v.seconds for v in res.verdicts.values()), default=0.0), 3),
            })
    return rows


def render(data: list[dict[str, Any]]) -> list[str]:
    """The W3 nemesis table: one row per (family, mix), mixes side by side."""
    lines = [
        "| family | mix | ops/s | faults/min | findings (V/H/W) | kinds | checker | check s |",
        "|---|---|---:|---:|---:|---|---|---:|",
    ]
    for r in data:
        f = r["findings"]
        counts = f"{f.get('violation', 0)}/{f.get('hazard', 0)}/{f.get('weakness', 0)}"
        lines.append(f"| {r['family']} | {r['mix']} | {r['ops_per_s']:,.1f} | {r['faults_per_min']:.1f} | {counts} | "
                     f"{', '.join(r['kinds']) or '—'} | {', '.join(r['checker'])} | {r['check_s']:.3f} |")
    lines.append("\nThe same seeded schedule for every mix of a family; 6 writers on the shared store, "
                 "implementations round-robin over the slots; `all` runs every family in turn.")
    return lines
