"""Fault campaigns: an op case run under strace, killed or failed at each store-touching call.

One traced run (``traced_run``) starts a driver under ``strace``, pins the clock and runs one
op; ``enumerate_case`` finds its store-touching calls; ``crash_runs`` kills it at each one,
measures how long a left lock refuses a fresh writer (``outcomes.measure_outage``: the outage
is reported, then lets that time pass) and lets a fresh process recover (``recover``);
``error_runs`` fails each one with each errno and measures the outage the same way.
``CaseReport.findings`` gives every point's findings as ``Finding`` values, one per regression
key, with the rate (k of n runs) at which each happened.  ``fault_case`` is the same errno campaign in process, through ``MemFs``.
Every state is judged by ``harness.oracles.crash_judge``.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..drivers.interrupt import stopping
from ..drivers.peers import Answer, Driver, DriverError, PeerSpec, start_driver
from ..drivers.sandbox import Sandbox, remove_temp, snapshot, temp_dir
from ..oracles.crash_judge import (
    CrashFinding,
    CrashVerdict,
    Site,
    State,
    check_crash_state,
    check_settled_state,
    judge_fault,
    published_versions,
)
from ..oracles.findings import Finding
from ..oracles.spec import TEMP_SUFFIX
from . import ERRNOS, NOW
from .cases import OpCase
from .explorer import ROOT, Explorer, new_server, run_op
from .outcomes import Outage, call_name, injectable, kind_of, measure_outage, refused_write
from .strace import (
    Fault,
    Traced,
    attach_tracer,
    detach_tracer,
    parse_trace,
    rel,
    stable_python_env,
    store_calls,
    strace_command,
)

# --- one traced run -----------------------------------------------------------------------


@dataclass
class Run:
    """One traced driver run: the op's answer (None when killed), the store after, the trace."""

    answer: Answer | None
    error: str
    state: State
    calls: list[Traced]
    answers: list[tuple[int, int]]
    pid: int
    seconds: float
    impl: str = ""  # what the driver called itself in hello: the family its texts are read by


def put_state(sandbox: Sandbox, files: Mapping[str, bytes]) -> None:
    """Wipe both roots and lay down ``files`` (as the scenario runner's ``given``)."""
    for sub in ("agent", "home"):
        p = sandbox.root / sub
        shutil.rmtree(p, ignore_errors=True)
        p.mkdir()
    for extra in sandbox.root.iterdir():
        if extra.name not in ("agent", "home"):
            if extra.is_dir() and not extra.is_symlink():
                shutil.rmtree(extra, ignore_errors=True)
            else:
                extra.unlink()
    for r, data in files.items():
        sandbox.put(r, data)


def traced_run(
    spec: PeerSpec,
    sandbox: Sandbox,
    op: str,
    args: Mapping[str, Any],
    *,
    fault: Fault | None = None,
    traced: bool = True,
    timeout: float = 15.0,
    trace_dir: str | None = None,
    env: Mapping[str, str] | None = None,
    attach: bool = False,
) -> Run:
    """Start a driver (under strace), pin the clock, run ``op`` once, and stop.

    ``attach``: the driver starts untraced and strace attaches to its ``hello`` pid once the
    clock is pinned (``strace.attach_tracer``), for a driver whose store work runs in a
    backing process: the trace and the fault are then that process's alone, counted from
    just before the op."""
    started = time.monotonic()
    tmp = temp_dir("memconform-trace-", trace_dir)
    trace = tmp / "trace.txt"
    full_env = {**sandbox.env(), **stable_python_env(), **(env or {})}
    wrapper = strace_command(str(trace), fault) if traced and not attach else []
    driver: Driver | None = None
    tracer: subprocess.Popen[bytes] | None = None
    answer: Answer | None = None
    error = ""
    pid = 0
    impl = ""
    try:
        try:
            driver = start_driver(spec, full_env, cwd=str(sandbox.root), timeout=timeout, wrapper=wrapper)
            pid = driver.pid
            impl = str(driver.hello.get("impl", ""))
            clock = driver.call("set_clock", {"now": NOW, "mode": "frozen", "tz": "UTC"})
            if not clock.ok:
                raise DriverError(f"set_clock refused: {clock.error}")
            if traced and attach and (tracer := attach_tracer(pid, str(trace), fault)) is None:
                raise DriverError(f"strace could not attach to the backing process {pid}")
        except DriverError as e:
            error = f"before the operation: {e}"
        else:
            try:
                answer = driver.call(op, dict(args))
            except DriverError as e:
                error = str(e)
    finally:
        if driver is not None:
            if answer is None:
                driver.kill()
            driver.close()
        if tracer is not None:
            detach_tracer(tracer)
    text = trace.read_text(encoding="utf-8", errors="replace") if trace.exists() else ""
    remove_temp(tmp)
    calls, answers = parse_trace(text)
    return Run(answer, error, snapshot(sandbox.root), calls, answers, pid, time.monotonic() - started, impl)


# --- enumerate, then one fault per call -------------------------------------------------------


@dataclass
class Enumeration:
    """The fault-free run of an op case: its store-touching calls and the states around it."""

    case: OpCase
    before: State
    after: State
    answer: Answer | None
    calls: list[Traced]
    pid: int
    attach: bool = False  # the store work runs in a backing process: trace and fault it alone
    elsewhere: int = 0  # store-touching calls of processes other than the hello pid's

    def note(self) -> str:
        """Why a case has no crash point although the op touched the store."""
        if self.calls or not self.elsewhere:
            return ""
        return (f"no store-touching call by the driver's hello pid {self.pid}, {self.elsewhere} by other processes "
                "(one started per op?): kills and errors aim at the hello pid; crash --trace follows every process")

    def target(self, call: Traced, action: str, errno: str = "EIO", delay_us: int = 0) -> Fault:
        return Fault(call.syscall, call.nth, action, errno, delay_us)


def enumerate_case(spec: PeerSpec, sandbox: Sandbox, case: OpCase, *, timeout: float = 15.0,
                   attach: bool | None = None) -> Enumeration:
    """The op's store-touching calls in a fault-free traced run.  A driver whose ``hello``
    pid is not the process it started (the example driver keeps the reference behind it)
    is enumerated again with strace attached to that pid (``attach``): strace counts a
    syscall per tracee, so a fault aimed at the backing process's n-th ``write`` would also
    hit the driver's own n-th ``write`` (issue 30 item 1)."""
    root = str(sandbox.root)
    put_state(sandbox, case.files(spec.kind))
    before = snapshot(sandbox.root)
    run = traced_run(spec, sandbox, case.op, case.args, timeout=timeout, attach=bool(attach))
    if attach is None and run.calls and run.calls[0].tid != run.pid:  # the first tracee is the one started
        return enumerate_case(spec, sandbox, case, timeout=timeout, attach=True)
    after = None if attach else 1
    touching = store_calls(run.calls, run.answers, root, after_id=after)
    calls = [c for c in touching if c.tid == run.pid]
    return Enumeration(case, before, run.state, run.answer, calls, run.pid, bool(attach), len(touching) - len(calls))


def _hit(run: Run, want: Traced, root: str, action: str) -> str | None:
    """None when the fault landed on ``want``'s counterpart in this run, else what happened."""
    if run.error.startswith("before the operation"):
        return run.error
    mine = [c for c in run.calls if c.tid == run.pid]
    got = next((c for c in mine if c.syscall == want.syscall and c.nth == want.nth), None)
    if got is None:
        return f"the run never reached {want.syscall} #{want.nth}"
    if got.key(root) != want.key(root):
        return f"{want.syscall} #{want.nth} was {got.key(root)}, not {want.key(root)}"
    if action == "kill" and (mine[-1] is not got or not got.unfinished):
        return "the process did not die at the target call"
    if action == "error" and not got.injected:
        return "no error was injected at the target call"
    return None


@dataclass
class Point:
    """The outcome at one crash or fault point."""

    index: int
    call: str
    fault: str
    verdict: CrashVerdict
    recovery: list[CrashFinding] = field(default_factory=list)
    missed: str | None = None
    answer: str = ""
    outage: Outage | None = None  # a left lock's measured outage (None: no lock left)
    name: str = ""  # the call, stable across runs (temporaries as .tmp-*)
    inject: dict[str, Any] | None = None  # the call as a scenario's strace fault, when selectable
    left: State = field(default_factory=dict)  # the store the fault left

    @property
    def violations(self) -> list[CrashFinding]:
        return [*self.verdict.violations, *[f for f in self.recovery if f.severity == "violation"]]


@dataclass
class CaseReport:
    impl: str
    case: str
    mode: str
    points: list[Point] = field(default_factory=list)
    calls: int = 0
    seconds: float = 0.0
    note: str = ""  # why nothing could be aimed at (``Enumeration.note``)

    @property
    def violations(self) -> int:
        return sum(bool(p.violations) for p in self.points)

    def findings(self, impl: str, reproduce: str) -> list[tuple[Finding, Point]]:
        """Every point's findings (judge, recovery, outage) as ``Finding`` values: one per
        regression key (impl, kind, clause, op, syscall), the first point kept, with the rate
        — k of n runs of this case — at which it happened.  A missed point (the fault hit
        another call) yields none: it is counted under ``missed``."""
        seen: dict[tuple[str, ...], tuple[Finding, Point, int]] = {}
        for p in self.points:
            if p.missed is not None:  # the fault landed elsewhere: shown as missed, judged nothing
                continue
            found = [c.finding(impl=impl, op=self.case, syscall=p.name, reproduce=reproduce)
                     for c in [*p.verdict.findings, *p.recovery]]
            if p.outage is not None and (h := p.outage.hazard(impl, self.case)) is not None:
                found.append(Finding(h.kind, h.severity, h.clause, impl, self.case, p.name,
                                     f"{h.evidence}; {p.fault} at {p.name}", reproduce, path=p.outage.state.name))
            for f in found:
                if f.key in seen:
                    first, point, k = seen[f.key]
                    seen[f.key] = (first, point, k + 1)
                else:
                    seen[f.key] = (f, p, 1)
        n = len(self.points)
        return [(Finding(f.kind, f.severity, f.clause, f.impl, f.op, f.syscall, f"{f.evidence} ({k} of {n} runs)",
                         f.reproduce, path=f.path), p) for f, p, k in seen.values()]

    def render(self, verbose: bool = False) -> str:
        missed = sum(p.missed is not None for p in self.points)
        head = (
            f"{self.impl} {self.case} [{self.mode}]: {self.calls} store-touching calls, "
            f"{len(self.points)} runs, {self.violations} with violations, {missed} missed, {self.seconds:.1f} s"
        )
        lines = [head] + ([f"  {self.note}"] if self.note else [])
        for p in self.points:
            bad = p.violations
            if not (bad or verbose or p.missed):
                continue
            lines.append(f"  #{p.index} {p.fault} at {p.call}: {p.answer}")
            if p.missed:
                lines.append(f"      missed: {p.missed}")
            if p.outage is not None and verbose:
                lines.append(f"      unavailable: {p.outage.state.what}: "
                             f"{'never' if p.outage.seconds is None else f'{p.outage.seconds:g} s'} for a write; "
                             f"recovery ran at lock age {p.outage.waited:g} s")
            if verbose and p.verdict.allowed:
                lines.append(f"      allowed: {', '.join(sorted(p.verdict.allowed))}")
            for f in [*p.verdict.findings, *p.recovery]:
                lines.append(f"      {f}")
        return "\n".join(lines)


def _describe(c: Traced, root: str) -> str:
    return f"{c.syscall}({', '.join(rel(p, root) for p in c.paths)})"


def recover(spec: PeerSpec, sandbox: Sandbox, case: OpCase, before: State, *, timeout: float = 15.0) -> list[CrashFinding]:
    """A fresh driver process runs the next operation on the crashed store; check it settles.

    Any left lock has been aged by its measured outage first (``measure_outage``), never
    silently."""
    op, args = case.recovery()
    run = traced_run(spec, sandbox, op, args, traced=False, timeout=timeout)
    out = check_settled_state(run.state, before, case.intent, live_pids=(run.pid,))
    a = run.answer
    if a is None or not a.ok or refused_write(run.impl, op, a):
        what = run.error if a is None else (a.result if a.ok else a.error)
        out.append(CrashFinding("S-INV-8", "not-recoverable", op, f"recovery answered {what!r}"))
    return out


def _faulted(
    spec: PeerSpec, sb: Sandbox, case: OpCase, en: Enumeration, i: int, action: str, errno: str, timeout: float
) -> tuple[Run, str | None]:
    """One faulted run at the ``i``-th enumerated call; when it missed (the interpreter's own
    I/O shifted the numbering), enumerate again and retry once."""
    root = str(sb.root)
    for attempt in range(2):
        call = en.calls[i - 1]
        put_state(sb, case.files(spec.kind))
        run = traced_run(spec, sb, case.op, case.args, fault=en.target(call, action, errno), timeout=timeout,
                         attach=en.attach)
        missed = _hit(run, call, root, action)
        if missed is None or attempt == 1:
            return run, missed
        fresh = enumerate_case(spec, sb, case, timeout=timeout, attach=en.attach)
        if [c.key(root) for c in fresh.calls] != [c.key(root) for c in en.calls]:
            return run, missed + " (and the call sequence changed between runs)"
        en.calls = fresh.calls
    raise AssertionError("unreachable")


Only = Callable[[int, Traced], bool]  # (1-based index, call) -> run a fault there?


def _select(calls: list[Traced], only: Only | None) -> Iterator[tuple[int, Traced]]:
    for i, c in enumerate(calls, 1):
        if only is None or only(i, c):
            yield i, c


NAMESPACE = frozenset({"rename", "renameat", "renameat2", "link", "linkat", "unlink", "unlinkat", "mkdir", "mkdirat"})


def publishing_calls(i: int, call: Traced) -> bool:
    """A cheap subset of crash points: the namespace changes that publish something (renames,
    links, unlinks of real files) and the lock's creation and token write (A-13 lives there).
    Skipped points repeat a neighbour's state: a temporary's unlink after its rename finds
    nothing, a recursive mkdir of an existing directory changes nothing."""
    on_lock = any(p.endswith("/.lock") for p in call.paths)
    if call.syscall.startswith("unlink"):
        return not TEMP_SUFFIX.search(call.paths[0]) if call.paths else False
    if call.syscall.startswith("mkdir"):
        return False
    return call.syscall in NAMESPACE or (on_lock and (call.creates or call.syscall.startswith("write")))


@contextmanager
def _campaign(
    spec: PeerSpec, case: OpCase, kind: str, sandbox: Sandbox | None, timeout: float
) -> Iterator[tuple[Sandbox, Enumeration, CaseReport]]:
    """What every real-process campaign shares: a sandbox (its own unless given), the op's
    enumerated calls, and a report timed from the start to the last point."""
    sb = sandbox or Sandbox.create()
    started = time.monotonic()
    try:
        en = enumerate_case(spec, sb, case, timeout=timeout)
        report = CaseReport(spec.name, case.name, kind, calls=len(en.calls), note=en.note())
        yield sb, en, report
        report.seconds = time.monotonic() - started
    finally:
        if sandbox is None:
            sb.remove()


def crash_runs(
    spec: PeerSpec,
    case: OpCase,
    *,
    sandbox: Sandbox | None = None,
    only: Only | None = None,
    timeout: float = 15.0,
    with_recovery: bool = True,
    advance: Callable[[int], None] | None = None,
) -> CaseReport:
    """Kill the op at each store-touching call, check the crash state, then recover;
    ``advance(1)`` after each point (a progress line: a case may take half a minute)."""
    with _campaign(spec, case, "kill", sandbox, timeout) as (sb, en, report):
        published = published_versions(en.before, en.after)
        root = str(sb.root)
        memo: dict[tuple[tuple[str, str], ...], float | None] = {}
        for i, call in _select(en.calls, only):
            if stopping():  # Ctrl-C: this case is cut (its report is not used)
                break
            run, missed = _faulted(spec, sb, case, en, i, "kill", "", timeout)
            verdict = check_crash_state(run.state, en.before, published, case.intent)
            answer = "killed" if run.answer is None else f"answered {run.answer.result!r}"
            name = call_name(call, root)
            point = Point(i, _describe(call, root), "SIGKILL", verdict, missed=missed, answer=answer, name=name,
                          left=run.state)
            if with_recovery:
                point.outage = measure_outage(spec, sb, memo, f"left by a kill at {name}", timeout=timeout)
                point.recovery = recover(spec, sb, case, en.before, timeout=timeout)
            report.points.append(point)
            if advance is not None:
                advance(1)
    return report


def error_runs(
    spec: PeerSpec,
    case: OpCase,
    *,
    errnos: tuple[str, ...] = tuple(ERRNOS),
    sandbox: Sandbox | None = None,
    only: Only | None = None,
    timeout: float = 15.0,
    advance: Callable[[int], None] | None = None,
) -> CaseReport:
    """Fail each store-touching call with each errno; the op must fail and roll back;
    ``advance(1)`` after each point and errno."""
    with _campaign(spec, case, "errors", sandbox, timeout) as (sb, en, report):
        root = str(sb.root)
        memo: dict[tuple[tuple[str, str], ...], float | None] = {}
        for i, call in _select(en.calls, only):
            site = Site(call.syscall, rel(call.paths[-1], root) if call.paths else "", call.creates)
            name = call_name(call, root)
            token_write = site.path.endswith("/.lock") and (call.syscall.startswith("write") or call.creates)
            for errno in errnos:
                if stopping():  # Ctrl-C: this case is cut (its report is not used)
                    return report
                run, missed = _faulted(spec, sb, case, en, i, "error", errno, timeout)
                if run.answer is None:
                    verdict = CrashVerdict(findings=[CrashFinding("S-ERR-3", "driver-died", site.path, run.error)])
                    answer = run.error
                else:
                    result = run.answer.result if run.answer.ok else run.answer.error
                    kind = kind_of(run.impl, case.op, run.answer)  # a refusal in its own words is a failure
                    verdict = judge_fault(case.intent, site, en.before, en.after, run.state, kind == "ok", result)
                    answer = f"{kind} {str(result)[:70]!r}"
                how = f"left by a failed token write ({errno} at {name})" if token_write else f"left by {errno} at {name}"
                point = Point(i, _describe(call, root), errno, verdict, missed=missed, answer=answer, name=name,
                              inject=injectable(i, en.calls, root), left=run.state)
                point.outage = measure_outage(spec, sb, memo, how, timeout=timeout)
                report.points.append(point)
                if advance is not None:
                    advance(1)
    return report


# --- in process: each errno at each call, through MemFs -------------------------------------

@dataclass
class FaultReport:
    """Outcomes of one op with an error injected at each store-touching call."""

    case: str
    runs: int = 0
    allowed: Counter[str] = field(default_factory=Counter)
    findings: list[tuple[str, CrashFinding]] = field(default_factory=list)

    def render(self) -> str:
        lines = [f"{self.case}: {self.runs} faulted runs, {len(self.findings)} findings"]
        lines += [f"    allowed {k}: {n}" for k, n in sorted(self.allowed.items())]
        lines += [f"    {where}: {f}" for where, f in self.findings]
        return "\n".join(lines)


def fault_case(case: OpCase, errnos: Sequence[str] = tuple(ERRNOS)) -> FaultReport:
    """In-process ``--errors`` through the Fs seam: each errno at each store-touching call."""
    files = case.files("python")
    fs, clock = Explorer.new_fs(files)
    before = fs.state()
    run_op(new_server(fs, clock), case.op, case.args)
    completed, calls = fs.state(), list(fs.calls)
    report = FaultReport(case.name)
    for k, call in enumerate(calls, 1):
        site = Site(call.name, (call.path or "").replace(ROOT + "/", ""), call.creates)
        for name in errnos:
            fs, clock = Explorer.new_fs(files)
            fs.fail = (k, ERRNOS[name])
            ok, result = run_op(new_server(fs, clock), case.op, case.args)
            verdict = judge_fault(case.intent, site, before, completed, fs.state(), ok, result)
            report.runs += 1
            report.allowed.update(verdict.allowed)
            report.findings += [(f"{name} at call {k} {site}", f) for f in verdict.findings]
    return report
