"""Syscall-level faults for any implementation, through ``strace`` (DESIGN.md §5).

The driver of an implementation (``python -m reference serve`` or a node driver) runs under
``strace -f -y``; only the store-touching syscalls are traced (``open``/``openat``, the
``write`` family, ``fsync``, ``rename``, ``link``, ``unlink``, ``mkdir`` and their ``*at``
forms).  ``strace -P`` cannot select them: it matches exact paths only, never "anything under
the sandbox", and temporaries get random names.  So a fault is placed in two passes:

1. *enumerate*: run the operation once, traced, and keep the calls whose path (or, for
   descriptor-based calls, the descriptor's path that ``-y`` prints) lies inside the
   sandbox, between the answer to ``set_clock`` and the answer to the operation;
2. *inject*: run it again with ``-e inject=<syscall>:…:when=<n>``, where ``n`` is that call's
   invocation number among all calls of the same syscall in the same thread (strace counts
   per syscall and per tracee), so the interpreter's own I/O is never touched.

The second run is traced too, and the fault is verified to have hit the intended call (same
syscall, same path with temporary names normalised); a miss is reported, never counted.
Kills (``signal=SIGKILL``) stop the call before it runs; errors replace it (ENOSPC, EIO,
EACCES, EINTR); delays hold it.  ``crash_runs`` and ``error_runs`` apply one fault per
enumerated call and judge the store with ``harness.faults.crash``'s checker.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from ..peers import Answer, Driver, DriverError, PeerSpec, start_driver
from ..sandbox import Sandbox, snapshot
from .crash import (
    NOW,
    NOW_MS,
    Finding,
    OpCase,
    Site,
    State,
    Verdict,
    check_crash_state,
    check_settled_state,
    judge_fault,
    lock_age_ms,
    published_versions,
)

STRACE = shutil.which("strace") or "/usr/bin/strace"
STORE_SYSCALLS = (
    "open", "openat", "creat",
    "write", "pwrite64", "writev", "pwritev", "pwritev2",
    "fsync", "fdatasync",
    "rename", "renameat", "renameat2",
    "link", "linkat",
    "unlink", "unlinkat",
    "mkdir", "mkdirat",
)
ERRNOS = ("ENOSPC", "EIO", "EACCES", "EINTR")
PATH_ARGS = {"open": 1, "creat": 1, "openat": 1, "rename": 2, "renameat": 2, "renameat2": 2,
             "link": 2, "linkat": 2, "unlink": 1, "unlinkat": 1, "mkdir": 1, "mkdirat": 1}
TEMP = re.compile(r"\.tmp-\d+-[0-9a-z-]+$")
_LINE = re.compile(r"^(\d+)\s+(\w+)\((.*)$")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_FD = re.compile(r"(AT_FDCWD|-?\d+)<([^>]*)>")
_ANSWER = re.compile(r'^\d+\s+write\(1<pipe:\[\d+\]>, "\{\\"id\\": ?(\d+)')


@cache
def strace_unavailable() -> str | None:
    """Why syscall injection cannot run here (no strace, or ptrace not permitted), else None."""
    if not Path(STRACE).exists():
        return "strace is not installed (apt-get install strace)"
    try:
        probe = subprocess.run(
            [STRACE, "-f", "-qq", "-e", "trace=chdir", "-e", "inject=chdir:error=ENOENT", "true"],
            capture_output=True, timeout=20, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"strace cannot run: {e}"
    if probe.returncode != 0:
        why = probe.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"strace cannot trace here (ptrace not permitted?): {why[-1] if why else probe.returncode}"
    return None


@cache
def stable_python_env() -> dict[str, str]:
    """Environment that keeps the reference's start-up I/O identical between runs.

    Strace numbers calls from process start, so an import that reads a stale ``.pyc`` once
    and a fresh one the next time would shift every ``openat``.  The byte code goes to a
    private cache, compiled once here, and is never rewritten during runs.
    """
    prefix = Path(tempfile.gettempdir()) / f"memconform-pycache-{os.getuid()}"
    env = {"PYTHONPYCACHEPREFIX": str(prefix)}
    root = str(Path(__file__).resolve().parent.parent)
    subprocess.run(
        [sys.executable, "-c", "import reference.serve"],
        env={**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, **env, "PYTHONPATH": root},
        capture_output=True, check=False, timeout=60,
    )
    return {**env, "PYTHONDONTWRITEBYTECODE": "1"}


# --- faults in scenario files (regressions) ---------------------------------------------------

POKE_ARG = {"open": 1, "creat": 1, "openat": 2, "unlink": 1, "unlinkat": 2, "mkdir": 1, "mkdirat": 2,
            "newfstatat": 2, "statx": 2, "lstat": 1, "stat": 1}


def scenario_fault(data: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    """The faults of a scenario's ``regression.inject`` (one object or a list), if any."""
    regression = data.get("regression")
    fault = regression.get("inject") if isinstance(regression, Mapping) else None
    if isinstance(fault, Mapping):
        return [fault]
    if isinstance(fault, list) and fault and all(isinstance(f, Mapping) for f in fault):
        return list(fault)
    return None


def _tamper(fault: Mapping[str, Any], root: str) -> str:
    syscall, action = str(fault["syscall"]), str(fault["action"])
    if action == "error":
        what = f"error={fault['errno']}"
    elif action == "delay":
        what = f"delay_enter={int(fault['delay_ms']) * 1000}"
    elif action == "redirect":
        path = os.path.join(root, str(fault["path"])).encode()
        to = os.path.join(root, str(fault["to"])).encode()
        if len(to) != len(path) or syscall not in POKE_ARG:
            raise ValueError(f"redirect needs a path argument and a same-length target: {dict(fault)}")
        what = f"poke_enter=@arg{POKE_ARG[syscall]}={to.hex()}"
    else:
        raise ValueError(f"unknown scenario fault action {action!r} (error, delay, redirect)")
    return f"inject={syscall}:{what}:when={fault.get('nth', 1)}"


def scenario_wrapper(faults: list[Mapping[str, Any]], root: str) -> list[str]:
    """The strace prefix for a scenario's faults, deterministic in a single run.

    A scenario names stable store paths (``agent/memory/.lock``), so ``-P`` selects the calls
    and strace numbers only those: ``nth`` (a number or a range ``"1..2"``) counts the calls
    of ``syscall`` on the fault paths in the driver's life.  Actions: ``error`` (``errno``),
    ``delay`` (``delay_ms``) and ``redirect`` (``to``: a same-length sandbox path the call is
    made to use instead — a FIFO, another lock — written into its path argument at entry).
    """
    paths = sorted({os.path.join(root, str(f["path"])) for f in faults})
    syscalls = sorted({str(f["syscall"]) for f in faults})
    cmd = [STRACE, "-f", "-qq", "-e", "signal=none", "-e", "trace=" + ",".join(syscalls), "-o", os.devnull]
    for p in paths:
        cmd += ["-P", p]
    for f in faults:
        cmd += ["-e", _tamper(f, root)]
    return cmd


# --- faults and traces ---------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """One tampering: kill at, fail, or delay the ``when``-th ``syscall`` of a thread."""

    syscall: str
    when: int
    action: str = "kill"  # kill | error | delay
    errno: str = "EIO"
    delay_us: int = 0

    def expression(self) -> str:
        if self.action == "kill":
            what = "signal=SIGKILL"
        elif self.action == "error":
            what = f"error={self.errno}"
        elif self.action == "delay":
            what = f"delay_enter={self.delay_us}us"
        else:
            raise ValueError(f"unknown fault action {self.action!r}")
        return f"inject={self.syscall}:{what}:when={self.when}"


def strace_command(trace_file: str, fault: Fault | None = None) -> list[str]:
    """The wrapper for a driver: follow threads, print descriptor paths, store calls only."""
    cmd = [STRACE, "-f", "-y", "-qq", "-e", "signal=none",
           "-e", "trace=" + ",".join(STORE_SYSCALLS), "-o", trace_file]
    if fault is not None:
        cmd += ["-e", fault.expression()]
    return cmd


@dataclass(frozen=True)
class Traced:
    """One traced call: thread, syscall, the paths it touches, its per-thread number."""

    tid: int
    syscall: str
    paths: tuple[str, ...]
    creates: bool
    nth: int
    line: str

    @property
    def injected(self) -> bool:
        return "(INJECTED)" in self.line

    @property
    def unfinished(self) -> bool:
        return self.line.rstrip().endswith(("= ?", "<unfinished ...>"))

    def key(self, root: str) -> tuple[str, tuple[str, ...]]:
        """Comparable across runs: syscall and sandbox-relative paths, temporaries normalised."""
        return self.syscall, tuple(TEMP.sub(".tmp-*", rel(p, root)) for p in self.paths)


def rel(path: str, root: str) -> str:
    return path[len(root) + 1 :] if path.startswith(root + "/") else path


def _unescape(text: str) -> str:
    return text.encode("latin-1", "backslashreplace").decode("unicode_escape").encode("latin-1").decode("utf-8", "replace")


def _paths(syscall: str, args: str) -> tuple[tuple[str, ...], bool]:
    """The absolute paths a traced call names (its descriptor's for fd-based calls)."""
    fds = _FD.findall(args)
    if syscall not in PATH_ARGS:
        return ((fds[0][1],) if fds else ()), False
    quoted = [_unescape(q) for q in _QUOTED.findall(args)][: PATH_ARGS[syscall]]
    dirs = [d for f, d in fds]
    out = []
    for i, p in enumerate(quoted):
        if p.startswith("/"):
            out.append(os.path.normpath(p))
        else:
            base = dirs[i] if syscall.endswith("at") or syscall == "renameat2" else (dirs[0] if dirs else os.sep)
            out.append(os.path.normpath(os.path.join(base or os.sep, p)))
    return tuple(out), "O_CREAT" in args


def parse_trace(text: str) -> tuple[list[Traced], list[tuple[int, int]]]:
    """Every entry line of an ``strace -f -y`` log, numbered per (thread, syscall), and the
    positions (index into the list, request id) of the driver's answers on stdout."""
    calls: list[Traced] = []
    answers: list[tuple[int, int]] = []
    counts: dict[tuple[int, str], int] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        tid, name, args = int(m.group(1)), m.group(2), m.group(3)
        n = counts[(tid, name)] = counts.get((tid, name), 0) + 1
        a = _ANSWER.match(line)
        if a is not None:
            answers.append((len(calls), int(a.group(1))))
        paths, creates = _paths(name, args)
        calls.append(Traced(tid, name, paths, creates, n, line))
    return calls, answers


def store_calls(calls: list[Traced], answers: list[tuple[int, int]], root: str, after_id: int) -> list[Traced]:
    """The calls touching the sandbox after the answer to request ``after_id``."""
    start = next((i for i, rid in answers if rid == after_id), None)
    if start is None:
        return []
    return [c for c in calls[start + 1 :] if any(p == root or p.startswith(root + "/") for p in c.paths)]


# --- one traced session -----------------------------------------------------------------------


@dataclass
class Run:
    """A driver session: the op's answer (None when killed), the store after, the trace."""

    answer: Answer | None
    error: str
    state: State
    calls: list[Traced]
    answers: list[tuple[int, int]]
    pid: int
    seconds: float


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


def session(
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
) -> Run:
    """Start a driver (under strace), pin the clock, run ``op`` once, and stop."""
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="memconform-trace-", dir=trace_dir))
    trace = tmp / "trace.txt"
    full_env = {**sandbox.env(), **stable_python_env(), **(env or {})}
    wrapper = strace_command(str(trace), fault) if traced else []
    driver: Driver | None = None
    answer: Answer | None = None
    error = ""
    pid = 0
    try:
        try:
            driver = start_driver(spec, full_env, cwd=str(sandbox.root), timeout=timeout, wrapper=wrapper)
            pid = driver.pid
            clock = driver.call("set_clock", {"now": NOW, "mode": "frozen", "tz": "UTC"})
            if not clock.ok:
                raise DriverError(f"set_clock refused: {clock.error}")
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
    text = trace.read_text(encoding="utf-8", errors="replace") if trace.exists() else ""
    shutil.rmtree(tmp, ignore_errors=True)
    calls, answers = parse_trace(text)
    return Run(answer, error, snapshot(sandbox.root), calls, answers, pid, time.monotonic() - started)


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

    def target(self, call: Traced, action: str, errno: str = "EIO", delay_us: int = 0) -> Fault:
        return Fault(call.syscall, call.nth, action, errno, delay_us)


def enumerate_case(spec: PeerSpec, sandbox: Sandbox, case: OpCase, *, timeout: float = 15.0) -> Enumeration:
    put_state(sandbox, case.files(spec.kind))
    before = snapshot(sandbox.root)
    run = session(spec, sandbox, case.op, case.args, timeout=timeout)
    root = str(sandbox.root)
    calls = [c for c in store_calls(run.calls, run.answers, root, after_id=1) if c.tid == run.pid]
    return Enumeration(case, before, run.state, run.answer, calls, run.pid)


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
    verdict: Verdict
    recovery: list[Finding] = field(default_factory=list)
    missed: str | None = None
    answer: str = ""

    @property
    def violations(self) -> list[Finding]:
        return [*self.verdict.violations, *[f for f in self.recovery if f.severity == "violation"]]


@dataclass
class CaseReport:
    impl: str
    case: str
    mode: str
    points: list[Point] = field(default_factory=list)
    calls: int = 0
    seconds: float = 0.0

    @property
    def violations(self) -> int:
        return sum(bool(p.violations) for p in self.points)

    def render(self, verbose: bool = False) -> str:
        missed = sum(p.missed is not None for p in self.points)
        head = (
            f"{self.impl} {self.case} [{self.mode}]: {self.calls} store-touching calls, "
            f"{len(self.points)} runs, {self.violations} with violations, {missed} missed, {self.seconds:.1f} s"
        )
        lines = [head]
        for p in self.points:
            bad = p.violations
            if not (bad or verbose or p.missed):
                continue
            lines.append(f"  #{p.index} {p.fault} at {p.call}: {p.answer}")
            if p.missed:
                lines.append(f"      missed: {p.missed}")
            if verbose and p.verdict.allowed:
                lines.append(f"      allowed: {', '.join(sorted(p.verdict.allowed))}")
            for f in [*p.verdict.findings, *p.recovery]:
                lines.append(f"      {f}")
        return "\n".join(lines)


def _describe(c: Traced, root: str) -> str:
    return f"{c.syscall}({', '.join(rel(p, root) for p in c.paths)})"


def age_locks(sandbox: Sandbox) -> None:
    """A killed owner's lock, aged past its reclaim threshold against the pinned clock (C-4)."""
    for dirpath, _dirs, files in os.walk(sandbox.root):
        for name in files:
            if name == ".lock":
                p = Path(dirpath) / name
                try:
                    data = p.read_bytes()
                except OSError:
                    continue
                t = (NOW_MS - lock_age_ms(data)) / 1000
                os.utime(p, (t, t), follow_symlinks=False)


def recover(spec: PeerSpec, sandbox: Sandbox, case: OpCase, before: State, *, timeout: float = 15.0) -> list[Finding]:
    """A fresh driver process runs the next operation on the crashed store; check it settles."""
    age_locks(sandbox)
    op, args = case.recovery()
    run = session(spec, sandbox, op, args, traced=False, timeout=timeout)
    out = check_settled_state(run.state, before, case.intent, live_pids=(run.pid,))
    a = run.answer
    if a is None or not a.ok or (isinstance(a.result, str) and "busy" in a.result):
        what = run.error if a is None else (a.result if a.ok else a.error)
        out.append(Finding("S-INV-8", "not-recoverable", op, f"recovery answered {what!r}"))
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
        run = session(spec, sb, case.op, case.args, fault=en.target(call, action, errno), timeout=timeout)
        missed = _hit(run, call, root, action)
        if missed is None or attempt == 1:
            return run, missed
        fresh = enumerate_case(spec, sb, case, timeout=timeout)
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
        return not TEMP.search(call.paths[0]) if call.paths else False
    if call.syscall.startswith("mkdir"):
        return False
    return call.syscall in NAMESPACE or (on_lock and (call.creates or call.syscall.startswith("write")))


def crash_runs(
    spec: PeerSpec,
    case: OpCase,
    *,
    sandbox: Sandbox | None = None,
    only: Only | None = None,
    timeout: float = 15.0,
    with_recovery: bool = True,
) -> CaseReport:
    """Kill the op at each store-touching call, check the crash state, then recover."""
    own = sandbox is None
    sb = sandbox or Sandbox.create()
    started = time.monotonic()
    try:
        en = enumerate_case(spec, sb, case, timeout=timeout)
        report = CaseReport(spec.name, case.name, "kill", calls=len(en.calls))
        published = published_versions(en.before, en.after)
        root = str(sb.root)
        for i, call in _select(en.calls, only):
            run, missed = _faulted(spec, sb, case, en, i, "kill", "", timeout)
            verdict = check_crash_state(run.state, en.before, published, case.intent)
            answer = "killed" if run.answer is None else f"answered {run.answer.result!r}"
            point = Point(i, _describe(call, root), "SIGKILL", verdict, missed=missed, answer=answer)
            if with_recovery:
                point.recovery = recover(spec, sb, case, en.before, timeout=timeout)
            report.points.append(point)
        report.seconds = time.monotonic() - started
        return report
    finally:
        if own:
            sb.remove()


def error_runs(
    spec: PeerSpec,
    case: OpCase,
    *,
    errnos: tuple[str, ...] = ERRNOS,
    sandbox: Sandbox | None = None,
    only: Only | None = None,
    timeout: float = 15.0,
) -> CaseReport:
    """Fail each store-touching call with each errno; the op must fail and roll back."""
    own = sandbox is None
    sb = sandbox or Sandbox.create()
    started = time.monotonic()
    try:
        en = enumerate_case(spec, sb, case, timeout=timeout)
        report = CaseReport(spec.name, case.name, "errors", calls=len(en.calls))
        root = str(sb.root)
        for i, call in _select(en.calls, only):
            site = Site(call.syscall, rel(call.paths[-1], root) if call.paths else "", call.creates)
            for errno in errnos:
                run, missed = _faulted(spec, sb, case, en, i, "error", errno, timeout)
                if run.answer is None:
                    verdict = Verdict(findings=[Finding("S-ERR-3", "driver-died", site.path, run.error)])
                    answer = run.error
                else:
                    result = run.answer.result if run.answer.ok else run.answer.error
                    verdict = judge_fault(case.intent, site, en.before, en.after, run.state, run.answer.ok, result)
                    answer = f"{'ok' if run.answer.ok else 'error'} {str(result)[:70]!r}"
                report.points.append(Point(i, _describe(call, root), errno, verdict, missed=missed, answer=answer))
        report.seconds = time.monotonic() - started
        return report
    finally:
        if own:
            sb.remove()
