"""Bench W2 (trace): crash states per second for each implementation, from one traced run
per op case (checked, and with the implementation's own recovery), beside real kills of the
same implementation, in one run (issue 17 item 6; registered in ``harness.bench.workloads``)."""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

from ..drivers.peers import PeerSpec, configured_peers, preflight
from ..faults.cases import CASES
from ..faults.strace import strace_unavailable
from ..faults.trace_run import run_traced
from ..faults.trace_states import TRACE_MODELS, check_trace


def w2_trace(workers: int = 4, kill_case: str = "write-create", rounds: int = 5) -> dict[str, Any]:
    """Per implementation: traced states checked/s, recovered/s, and real kills/s."""
    from ..faults.campaigns import crash_runs

    reason = strace_unavailable()
    if reason:
        return {"skipped": reason}
    specs = [PeerSpec("python"), *configured_peers()]
    rows = []
    for spec in specs:
        info = preflight([spec])[0]
        impl = f"{info.name} {info.version}"
        cases = [c for c in CASES.values() if spec.kind in c.impls]
        by_name = {c.name: c for c in cases}
        checked = run_traced(spec, cases, TRACE_MODELS, impl=impl, quiet=True)
        rates = []
        for _ in range(rounds):  # checking takes ~0.1 s: the median of a few rounds, not one
            t0 = time.perf_counter()
            n = sum(check_trace(c.trace, by_name[c.name].intent, TRACE_MODELS, impl).checked for c in checked.checks)
            rates.append(n / (time.perf_counter() - t0))
        recovered = run_traced(spec, cases, TRACE_MODELS, impl=impl, recover=True, workers=workers, quiet=True)
        t0 = time.perf_counter()
        kills = crash_runs(spec, CASES[kill_case], with_recovery=False)
        kill_s = time.perf_counter() - t0
        s, r = checked.stats(), recovered.stats()
        rows.append({
            "impl": impl, "cases": s["cases"], "states": s["states"], "distinct": s["distinct_checked"],
            "record_seconds": s["record_seconds"], "checked_per_second": round(statistics.median(rates), 1),
            "recovered": r["recovered"], "recovered_per_second": r["recovered_per_second"], "workers": workers,
            "kill_runs": len(kills.points), "kill_case": kill_case,
            "kills_per_second": round(len(kills.points) / kill_s, 2) if kill_s else 0.0,
            "models": s["models"],
        })
    return {"rows": rows, "load_average": os.getloadavg(), "cpus": os.cpu_count()}


def render(data: dict[str, Any]) -> str:
    """The table the closing note quotes."""
    if "skipped" in data:
        return f"W2 trace: skipped ({data['skipped']})"
    lines = [f"W2 trace ({data['cpus']} cpus, load {', '.join(f'{x:.1f}' for x in data['load_average'])}):",
             f"  {'impl':32s} {'states':>7s} {'distinct':>8s} {'checked/s':>10s} {'recovered/s':>12s} {'kills/s':>8s}"]
    for r in data["rows"]:
        lines.append(f"  {r['impl']:32s} {r['states']:7d} {r['distinct']:8d} {r['checked_per_second']:10,.0f} "
                     f"{r['recovered_per_second']:12,.0f} {r['kills_per_second']:8.1f}")
    return "\n".join(lines)


def markdown(data: dict[str, Any]) -> list[str]:
    """The rows as the bench's results file shows them."""
    if "skipped" in data:
        return [f"Skipped: {data['skipped']}."]
    lines = ["| impl | op cases | crash states (distinct) | checked/s | recovered/s (warm drivers) | real kills/s |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in data["rows"]:
        lines.append(f"| {r['impl']} | {r['cases']} | {r['states']:,} ({r['distinct']:,}) | {r['checked_per_second']:,.0f} "
                     f"| {r['recovered_per_second']:,.0f} ({r['workers']}) | {r['kills_per_second']:.1f} ({r['kill_case']}) |")
    load = ", ".join(f"{x:.1f}" for x in data["load_average"])
    lines += ["", f"Traced: every op case recorded once under strace, its states built under strict, lost-dirent, "
                  f"torn and reorder; checked = distinct states judged per second (median of 5 rounds). "
                  f"{data['cpus']} cpus, load average {load} at the end."]
    return lines


if __name__ == "__main__":  # python -m memconform.harness.bench.trace
    import json
    import sys

    result = w2_trace(int(sys.argv[1]) if len(sys.argv) > 1 else 4)
    print(render(result))
    print(json.dumps(result))
