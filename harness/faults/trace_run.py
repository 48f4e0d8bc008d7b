"""``memconform crash --trace``: record each op case once, judge every crash state, recover.

The campaign of issue 17: ``trace.record_cases`` (one traced warm driver), then
``trace_states.check_trace`` per case and model, then with ``recover`` the implementation's
own next operations on every distinct state (``recovery.recover_all``).  Findings are
``Finding`` values carrying the model, the trace position and the calls lost or torn; each
exports as a regression whose ``given`` is the crash state and whose steps are the recovery.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..drivers.peers import PeerSpec
from ..gate.regressions import export
from ..oracles.crash_judge import CrashFinding
from ..oracles.findings import Finding
from ..reports.progress import progress
from .cases import OpCase
from .outcomes import CLOCK, given_of
from .recovery import Recovered, recover_all, recovery_ops
from .trace import Trace, record_cases
from .trace_states import CrashState, TraceCheck, check_trace


@dataclass
class TraceCampaign:
    """What one ``--trace`` run of one implementation did, with its rates."""

    impl: str
    checks: list[TraceCheck] = field(default_factory=list)
    failed: list[Trace] = field(default_factory=list)
    recovered: list[Recovered] = field(default_factory=list)
    record_seconds: float = 0.0
    check_seconds: float = 0.0
    recover_seconds: float = 0.0
    drivers: int = 0

    @property
    def checked(self) -> int:
        return sum(c.checked for c in self.checks)

    @property
    def states(self) -> int:
        return sum(m.states for c in self.checks for m in c.models.values())

    def stats(self) -> dict[str, Any]:
        rate = self.checked / self.check_seconds if self.check_seconds else 0.0
        rrate = len(self.recovered) / self.recover_seconds if self.recover_seconds else 0.0
        return {
            "cases": len(self.checks), "untraced": [t.name for t in self.failed],
            "states": self.states, "distinct_checked": self.checked,
            "record_seconds": round(self.record_seconds, 3), "check_seconds": round(self.check_seconds, 3),
            "checked_per_second": round(rate, 1),
            "recovered": len(self.recovered), "recover_seconds": round(self.recover_seconds, 3),
            "recovered_per_second": round(rrate, 1), "recovery_drivers": self.drivers,
            "models": {
                model: {"states": sum(c.models[model].states for c in self.checks),
                        "distinct": sum(c.models[model].distinct for c in self.checks),
                        "violating": sum(c.models[model].violating for c in self.checks)}
                for model in (self.checks[0].models if self.checks else {})
            },
        }

    def render(self) -> str:
        lines = []
        for c in self.checks:
            per = ", ".join(f"{m} {t.distinct}/{t.states}" + (f" ({t.violating} violating)" if t.violating else "")
                            for m, t in c.models.items())
            lines.append(f"  {c.name}: {len(c.trace.ops)} traced effects ({c.trace.syscalls} calls); distinct/all states: {per}")
        for t in self.failed:
            lines.append(f"  {t.name}: not traced: {t.error}")
        s = self.stats()
        lines.append(
            f"{self.impl}: {s['states']} crash states ({s['distinct_checked']} distinct) checked in "
            f"{self.check_seconds:.2f} s ({s['checked_per_second']:,.0f} distinct states/s), recorded in {self.record_seconds:.1f} s"
            + (f"; recovery on {len(self.recovered)} states in {self.recover_seconds:.1f} s "
               f"({s['recovered_per_second']:,.0f}/s, {self.drivers} warm drivers)" if self.recovered else "")
        )
        return "\n".join(lines)


def run_traced(
    spec: PeerSpec,
    cases: Sequence[OpCase],
    models: Sequence[str],
    *,
    impl: str,
    recover: bool = False,
    workers: int = 2,
    granularity: str = "byte",
    timeout: float = 15.0,
    quiet: bool = False,
) -> TraceCampaign:
    """Record, build, judge and (optionally) recover every op case of one implementation."""
    camp = TraceCampaign(impl)
    traces, camp.record_seconds = record_cases(spec, list(cases), timeout=timeout)
    by_name = {c.name: c for c in cases}
    t0 = time.perf_counter()
    with progress(f"{impl}: crash states of each op", len(traces), quiet=quiet) as bar:
        for trace in traces:
            bar.advance(0, note=trace.name)
            if trace.error or trace.answer is None:
                camp.failed.append(trace)
            elif not trace.answer.ok and (trace.answer.error or {}).get("kind") == "unsupported":
                trace.error = f"the implementation has no {by_name[trace.name].op}: {(trace.answer.error or {}).get('message')}"
                camp.failed.append(trace)
            else:
                camp.checks.append(check_trace(trace, by_name[trace.name].intent, models, impl, granularity=granularity))
            bar.advance(1)
    camp.check_seconds = time.perf_counter() - t0
    if recover:
        jobs = [(by_name[c.name], cs) for c in camp.checks for cs in c.distinct.values()]
        with progress(f"{impl}: recovery on each distinct crash state", len(jobs), quiet=quiet) as bar:
            camp.recovered, camp.recover_seconds, camp.drivers = recover_all(
                spec, jobs, {c.name: c.trace.after() for c in camp.checks}, workers=workers, timeout=timeout,
                advance=lambda n: bar.advance(n))
    return camp


def _recovery_findings(camp: TraceCampaign, reproduce: str) -> list[tuple[Finding, OpCase | None, CrashState]]:
    seen: dict[tuple[str, ...], tuple[CrashFinding, Recovered, int]] = {}
    totals: dict[tuple[str, str], int] = {}
    for r in camp.recovered:
        totals[(r.case, r.state.model)] = totals.get((r.case, r.state.model), 0) + 1
        for f in r.findings:
            key = (r.case, r.state.model, f.clause, f.kind, f.path)
            first = seen.get(key)
            seen[key] = (f, r, 1) if first is None else (first[0], first[1], first[2] + 1)
    out: list[tuple[Finding, OpCase | None, CrashState]] = []
    for (case, model, clause, kind, path), (f, r, n) in seen.items():
        cs = r.state
        evidence = (f"{f.detail}; recovery on the state {cs.what} (trace position {cs.position}); "
                    f"{n} of {totals[(case, model)]} recovered {model} states")
        syscall = ", ".join(cs.syscalls[:3]) if cs.syscalls else cs.what
        out.append((Finding(kind, f.severity, clause, camp.impl, f"{case} [{model}] recovery", syscall, evidence,
                            reproduce, path=path), None, cs))
    return out


def scenario_of(finding: Finding, case: OpCase, kind: str, cs: CrashState, total: int) -> dict[str, Any]:
    """The crash state as ``given``, the recovery ops as steps, the invariants after."""
    steps = [{"op": op, "args": args, "note": "the next session on the crash state"}
             for op, args in recovery_ops(case, kind)]
    return {
        "clauses": list(dict.fromkeys(c for c in (finding.clause, "S-INV-8") if c.startswith(("S-", "A-", "PEER-")))),
        "clock": dict(CLOCK),
        "tags": ["fault-injection", "crash", "trace", f"model:{cs.model}"],
        "given": given_of(cs.state, locks=False),
        "steps": steps,
        "then": {"invariants": "all", "ignore": [
            {"path": "*", "reason": "the recovery's own changes: judged by the invariants, not pinned"}]},
        "regression": {
            "model": f"trace {cs.model} (found); the crash state (replayed)",
            "fault": {"model": cs.model, "position": cs.position, "of": total, "state": cs.what,
                      "lost_or_torn": list(cs.syscalls), "case": case.name},
        },
    }


def findings_of(camp: TraceCampaign, cases: Sequence[OpCase], kind: str, reproduce: str,
                directory: Path | None) -> list[Finding]:
    """Every crash-state and recovery finding, exported when ``directory`` is given."""
    by_name = {c.name: c for c in cases}
    totals = {c.name: len(c.trace.ops) for c in camp.checks}
    rows: list[tuple[Finding, str, CrashState]] = []
    for c in camp.checks:
        rows += [(f, c.name, cs) for f, cs in c.findings(reproduce)]
    rows += [(f, f.op.split(" [", 1)[0], cs) for f, _none, cs in _recovery_findings(camp, reproduce)]
    out = []
    for f, name, cs in rows:
        if directory is not None:
            f = export(f, scenario_of(f, by_name[name], kind, cs, totals.get(name, 0)), directory)
        out.append(f)
    return out
