"""Bench W6 (issue 24 item 6): time to first detection of the stale-lock reclaim race, the
scheduler against the random nemesis, on the same writers, in one run.

- scheduler: ``races.explore`` of ``stale-dead-owner`` (2 writers, a dead owner's lock) under
  the random walk and under PCT, from 5 seeds each, until the first two-holders-or-lost-write;
- nemesis: back-to-back nemesis runs of the ``stale-lock`` family (the same 2 writers on the
  shared store, a fresh seed each run) until one shows the same, timed from the first start.

Both are capped at ``MEMCONFORM_BENCH_RACES_S`` seconds per seed (default 60); a seed that
finds nothing counts as "> cap" (the median is then a lower bound, said so).  Also: schedules
and held syscalls per second, and the scheduler's overhead per op (a scheduled run's wall time
per op against the same ops run straight through one driver).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from ..drivers.peers import PeerSpec, configured_peers, preflight, start_driver
from ..drivers.sandbox import Sandbox
from ..oracles.findings import Finding
from .race_defects import defect_rows, render_defects

SEEDS = 5
TARGET = {"lost-write", "double-holder"}


def _cap() -> float:
    return float(os.environ.get("MEMCONFORM_BENCH_RACES_S", "60"))


def scheduler_row(spec: PeerSpec, strategy: str, labels: dict[str, str]) -> dict[str, Any]:
    from ..interleave.races import explore, situation

    times: list[float | None] = []
    runs = held = steps = 0
    seconds = 0.0
    for seed in range(SEEDS):
        got = explore([spec], strategy=strategy, seed=seed * 1000, budget_s=_cap(), labels=labels,
                      situations=[situation("stale-dead-owner")], shrink=False)
        times.append(got.first_found_s)
        runs, held, steps, seconds = runs + got.runs, held + got.held, steps + got.steps, seconds + got.seconds
    return {"impl": labels.get(spec.name, spec.name), "how": f"scheduler ({strategy})", "times": times,
            "schedules_per_s": round(runs / seconds, 2) if seconds else 0.0,
            "held_per_s": round(held / seconds, 1) if seconds else 0.0,
            "ms_per_op": round(1000 * seconds / max(runs * 2, 1), 1)}


def nemesis_row(spec: PeerSpec, labels: dict[str, str], *, seeds: int = SEEDS,
                hit: Callable[[Finding], bool] | None = None) -> dict[str, Any]:
    """Back-to-back nemesis runs per seed until one shows ``hit`` (default: the race's kinds)."""
    from ..interleave.nemesis import make_schedule
    from ..interleave.run import run_nemesis

    seen = hit or (lambda f: f.kind in TARGET)
    times: list[float | None] = []
    ops = 0
    seconds = 0.0
    for seed in range(seeds):
        t0 = time.monotonic()
        found = None
        n = 0
        while time.monotonic() - t0 < _cap():
            schedule = make_schedule(seed * 1000 + n, ["stale-lock"], interval=0.5, time_limit=5.0, writers=2, shared=True)
            res = run_nemesis([spec], schedule, settle_limit=15.0)
            ops += res.total_ops
            n += 1
            if any(seen(f) for f in res.findings(labels)):
                found = time.monotonic() - t0
                break
        seconds += time.monotonic() - t0
        times.append(found)
    return {"impl": labels.get(spec.name, spec.name), "how": "random nemesis (stale-lock)", "times": times,
            "schedules_per_s": None, "held_per_s": None, "ms_per_op": round(1000 * seconds / max(ops, 1), 1)}


def plain_ms_per_op(spec: PeerSpec, n: int = 40) -> float:
    """One driver, the suite's op (an append), straight through: the cost the scheduler adds to."""
    sb = Sandbox.create()
    try:
        d = start_driver(spec, sb.env(), cwd=str(sb.root))
        try:
            t0 = time.perf_counter()
            for i in range(n):
                d.call("write_memory", {"topic": f"Race {i % 2}", "content": f"tok-w0-{i}", "summary": "s"})
            return round(1000 * (time.perf_counter() - t0) / n, 2)
        finally:
            d.close()
    finally:
        sb.remove()


def w6_races() -> dict[str, Any]:
    specs = [PeerSpec("python"), *(p for p in configured_peers() if p.kind == "pi")]
    labels = {i.spec: f"{i.name} {i.version}" for i in preflight(specs)}
    rows = []
    for spec in specs:
        plain = plain_ms_per_op(spec)
        for strategy in ("random", "pct"):
            rows.append(scheduler_row(spec, strategy, labels) | {"plain_ms_per_op": plain})
        rows.append(nemesis_row(spec, labels) | {"plain_ms_per_op": plain})
    return {"cap_s": _cap(), "seeds": SEEDS, "rows": rows, "defects": defect_rows(_cap(), nemesis_row)}


def _median(times: list[float | None], cap: float) -> str:
    vals = [cap if t is None else t for t in times]
    med = statistics.median(vals)
    missed = sum(t is None for t in times)
    text = f"> {cap:g} s" if med >= cap else f"{med:.1f} s"
    return text + (f" ({missed} of {len(times)} seeds found nothing in {cap:g} s)" if missed else "")


def render(data: dict[str, Any]) -> list[str]:
    cap = float(data["cap_s"])
    lines = [
        "| implementation | how | time to first detection (median) | per seed (s) | schedules/s | held syscalls/s | ms per op (plain) |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for r in data["rows"]:
        per = ", ".join("—" if t is None else f"{t:.1f}" for t in r["times"])
        sps = "—" if r["schedules_per_s"] is None else f"{r['schedules_per_s']:.2f}"
        hps = "—" if r["held_per_s"] is None else f"{r['held_per_s']:.0f}"
        lines.append(f"| {r['impl']} | {r['how']} | {_median(r['times'], cap)} | {per} | {sps} | {hps} | "
                     f"{r['ms_per_op']:.1f} ({r['plain_ms_per_op']:.1f}) |")
    lines.append(f"\nThe reclaim race (two holders of a stale lock, an acknowledged write lost): {data['seeds']} seeds "
                 f"each, capped at {cap:g} s per seed (MEMCONFORM_BENCH_RACES_S); `—` found nothing within the cap. "
                 "Scheduler: `races --situation stale-dead-owner`, pooled drivers; nemesis: back-to-back 5 s "
                 "`stale-lock` runs of 2 writers on the shared store, each with a fresh seed.")
    return lines + render_defects(data.get("defects", []), cap)
