"""What a fault campaign tells its user: outages measured, findings, and their regressions.

A kill or an injected error can leave a lock behind; ``measure_outage`` measures how long a
fresh writer of the same implementation is refused (``harness.writers.availability``, in lock-age
time), then lets that much time pass for the lock so recovery continues — the figure is
reported, never hidden.  ``scenario_for`` turns a point of a campaign into a replayable
scenario: the store before and the op under the same ``regression.inject`` strace fault when
the faulted call names a stable path (as the hand-written A-3 and A-13 regressions do), else
the state the fault left and the next operation, which must settle.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..drivers.peers import PeerSpec
from ..drivers.sandbox import SNAPSHOT_DIR, SNAPSHOT_FIFO, SNAPSHOT_SOCKET, Sandbox, snapshot
from ..gate.regressions import content
from ..oracles.crash_judge import STORE_DIRS, State, is_lock, is_temp
from ..oracles.findings import Finding
from ..oracles.outcome_kind import KIND_OPS, UNKNOWN, classify
from ..oracles.spec import LOCK_PID
from ..writers.availability import CAP, LockState, hazard_for, measure, store_locks
from . import NOW, NOW_MS
from .cases import OpCase
from .strace import Traced, rel, stable_python_env

CLOCK = {"now": NOW, "mode": "frozen", "tz": "UTC"}  # the clock every faulted run pins
PROBE_CLOCK = {"now": NOW, "mode": "offset", "tz": "UTC"}  # moving: a busy writer's polls end
_TMP = re.compile(r"\.tmp-\d+-[0-9a-z-]+")


def kind_of(impl: str, op: str, answer: Any) -> str:
    """What an op's answer says it did, by kind (issue 30 item 1): a store op's declared
    outcome, or its text read through the tool family's table (``oracles.outcome_kind``);
    any other op is ``ok`` or ``error`` by its answer.  A store op's text no table knows
    (``unknown``) is taken at the answer's ``ok``: the judge then sees what it saw before."""
    if op not in KIND_OPS:
        return "ok" if answer.ok else "error"
    kind = classify(impl, op, answer)
    return kind if kind != UNKNOWN else ("ok" if answer.ok else "error")


def refused_write(impl: str, op: str, answer: Any) -> bool:
    """A store op the next session runs that did not go through: busy or an error (a
    refusal or not-found of the op itself is an answer, not an outage)."""
    return kind_of(impl, op, answer) in ("busy", "error")


def call_name(call: Traced, root: str) -> str:
    """``rename(agent/memory/MEMORY.md.tmp-*, agent/memory/MEMORY.md)``: stable across runs."""
    return f"{call.syscall}({', '.join(_TMP.sub('.tmp-*', rel(p, root)) for p in call.paths)})"


def _lock_kind(p: Path) -> str:
    if p.is_symlink():
        return "symlink"
    if p.is_dir():
        return "directory"
    if not p.is_file():
        return "special"
    try:
        data = p.read_bytes()
    except OSError:
        return "unreadable"
    return "pid" if LOCK_PID.match(data) else ("empty" if not data else "no-pid")


def lock_state(kinds: tuple[tuple[str, str], ...], how: str) -> LockState:
    """The left-over lock(s) in a user's words; ``how`` says what left them."""
    worst = sorted(kinds, key=lambda k: ("directory", "symlink", "special", "empty", "no-pid", "unreadable", "pid").index(k[1]))[0]
    where, kind = worst
    if kind in ("directory", "symlink", "special"):
        return LockState(where, f"a non-regular {where} {how}", "S-LOCK-2", "step 3 never reclaims a non-regular lock")
    if kind == "empty":
        clause = "A-13" if "token write" in how else "S-INV-8"
        return LockState(where, f"an empty {where} {how}", clause,
                         "no readable pid: every writer is busy until the lock is 60 s old (S-LOCK-3, S-INV-8 6)")
    if kind in ("no-pid", "unreadable"):
        return LockState(where, f"a {where} with no readable pid {how}", "S-INV-8", "alive until 60 s old (S-LOCK-3)")
    return LockState(where, f"a dead owner's {where} {how}", "S-INV-8", "reclaimable once 10 s old")


@dataclass(frozen=True)
class Outage:
    """A measured outage after a fault: the lock-age seconds (``None`` = never within the cap)."""

    seconds: float | None
    state: LockState
    waited: float = 0.0  # lock age the recovery met: the outage, or a lock's reclaim age if longer

    def hazard(self, impl: str, op: str) -> Finding | None:
        return hazard_for(self.state, self.seconds, impl=impl, op=op)


def restore(sandbox: Sandbox, state: State) -> None:
    """Lay a snapshot back down (directories, FIFOs, symlinks and files)."""
    for sub in ("agent", "home"):
        shutil.rmtree(sandbox.root / sub, ignore_errors=True)
    for r, data in sorted(state.items()):
        p = sandbox.root / r
        if data == SNAPSHOT_DIR:
            p.mkdir(parents=True, exist_ok=True)
        elif data == SNAPSHOT_FIFO:
            p.parent.mkdir(parents=True, exist_ok=True)
            os.mkfifo(p)
        elif data.startswith(b"-> "):
            p.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.fsdecode(data[3:]), p)
        elif data != SNAPSHOT_SOCKET:
            sandbox.put(r, data)


def measure_outage(
    spec: PeerSpec, sandbox: Sandbox, memo: dict[tuple[tuple[str, str], ...], float | None], how: str,
    *, timeout: float = 15.0,
) -> Outage | None:
    """Measure how long the locks a fault left refuse a fresh writer, then age them by it.

    The probe's write is undone (the snapshot is laid back) and the locks are aged by the
    measured outage (the cap when it never ends), so the recovery that follows meets the store
    as a user would after waiting that long.  Outages are memoised per lock state within one
    case (same paths, same kind of content: the rules of S-LOCK-2/3 decide on nothing else).
    """
    locks = [p for p in store_locks(sandbox.root) if os.path.relpath(p.parent, sandbox.root) in STORE_DIRS]
    if not locks:
        return None
    kinds = tuple((os.path.relpath(p, sandbox.root), _lock_kind(p)) for p in locks)
    if kinds not in memo:
        before = snapshot(sandbox.root)
        env = {**sandbox.env(), **stable_python_env()}
        memo[kinds] = measure(spec, sandbox, locks, env=env, clock=PROBE_CLOCK, writer_now=lambda: NOW_MS / 1000,
                              timeout=timeout).seconds
        restore(sandbox, before)
    seconds = memo[kinds]
    # A lock the probe's write never meets (carry-over's local lock while writes go to the
    # shared store) still blocks its own op until its reclaim age: recovery waits that long
    # too, and says so (``Outage.waited``).
    reclaim = max(_RECLAIM.get(kind, CAP) for _where, kind in kinds)
    waited = CAP if seconds is None else max(seconds, reclaim)
    for p in locks:
        if os.path.lexists(p):
            t = NOW_MS / 1000 - waited
            os.utime(p, (t, t), follow_symlinks=False)
    return Outage(seconds, lock_state(kinds, how), waited)


_RECLAIM = {"pid": 11.0, "empty": 61.0, "no-pid": 61.0, "unreadable": 61.0}  # S-LOCK-1/3 ages, just past


# --- regressions ------------------------------------------------------------------------------


def given_of(state: Mapping[str, bytes], *, locks: bool = True) -> dict[str, Any]:
    """A snapshot as a scenario's ``given`` (files, empty directories, FIFOs, symlinks);
    without ``locks`` the left-over locks are dropped (recovery met them aged away)."""
    files: dict[str, Any] = {}
    dirs, fifos, links = [], [], {}
    for r, data in sorted(state.items()):
        if not locks and is_lock(r):
            continue
        if data == SNAPSHOT_DIR:
            if not any(k.startswith(r + "/") for k in state):
                dirs.append(r)
        elif data == SNAPSHOT_FIFO:
            fifos.append(r)
        elif data.startswith(b"-> "):
            links[r] = os.fsdecode(data[3:])
        elif data != SNAPSHOT_SOCKET:
            files[r] = content(data)
    out: dict[str, Any] = {"files": files}
    if dirs:
        out["dirs"] = dirs
    if fifos:
        out["fifos"] = fifos
    if links:
        out["symlinks"] = links
    return out


def _store_files(state: Mapping[str, bytes]) -> dict[str, Any]:
    return {
        r: content(d) for r, d in sorted(state.items())
        if r.rsplit("/", 1)[0] in STORE_DIRS and not is_temp(r) and not is_lock(r)
        and d not in (SNAPSHOT_DIR, SNAPSHOT_FIFO, SNAPSHOT_SOCKET) and not d.startswith(b"-> ")
    }


def injectable(index: int, calls: list[Traced], root: str) -> dict[str, Any] | None:
    """The ``regression.inject`` of a call whose path is stable (no temporary), else None:
    ``nth`` counts the calls of that syscall on that path, as ``strace -P`` numbers them;
    ``index`` is the call's 1-based place in ``calls``."""
    call = calls[index - 1]
    if not call.paths or any(_TMP.search(p) for p in call.paths):
        return None  # strace -P selects exact paths only (and a rename by its source)
    target = call.paths[0]
    nth = sum(1 for c in calls[:index] if c.syscall == call.syscall and target in c.paths)
    return {"path": rel(target, root), "syscall": call.syscall, "nth": nth}


_OUTSIDE = {"path": "*", "reason": "the store files pinned above are the finding; configuration and the rest follow"}


def scenario_for(
    finding: Finding,
    case: OpCase,
    impl_kind: str,
    *,
    before: Mapping[str, bytes],
    left: Mapping[str, bytes],
    inject: dict[str, Any] | None,
    fault: dict[str, Any],
) -> dict[str, Any]:
    """The replayable scenario of a campaign finding.

    With ``inject`` (an error at a stable path): the store before, the op under that fault;
    a violation expects what SPEC requires (the store as it was), a hazard pins what SPEC
    allows and the user suffers (the store as the fault left it).  Otherwise (a kill, or a
    fault at a temporary's random name, which ``strace -P`` cannot select): the state the
    fault left, then the next operation, which must settle (S-INV-2) — or, for an
    ``unavailable`` hazard, is refused busy (``expect.outcome``, so it replays on any driver).
    """
    clauses = [c for c in (finding.clause, "S-INV-8") if re.match(r"^(S-[A-Z]+-[0-9]+|PEER-[0-9]+|[ABC]-[0-9]+)$", c)]
    data: dict[str, Any] = {"clauses": list(dict.fromkeys(clauses)), "clock": dict(CLOCK),
                            "tags": ["fault-injection", "crash" if fault.get("action") == "kill" else "errno"]}
    # By kind, not by the busy text (issue 30): a driver that declares ``outcome_kinds`` says
    # busy in its own words, and a driver that does not is busy only by the exact text
    # (oracles.outcome_kind), so the reference and openpi are held to it as before.
    busy = {"outcome": "busy"}
    if inject is not None and fault.get("action") == "error":
        data["given"] = given_of(before)
        steps: list[dict[str, Any]] = [{"op": case.op, "args": dict(case.args), "note": f"{fault['errno']} at {finding.syscall}"}]
        if finding.kind == "unavailable":
            data["clock"] = dict(PROBE_CLOCK)
            steps.append({"op": "write_memory", "args": {"topic": "Probe", "content": "p", "summary": "p"},
                          "expect": busy, "note": "the left lock refuses the next write"})
            data["then"] = {}
        elif finding.severity == "violation":
            data["then"] = {"files": _store_files(before), "invariants": "all", "ignore": [_OUTSIDE]}
        else:
            data["then"] = {"files": _store_files(left), "ignore": [_OUTSIDE]}
        data["steps"] = steps
        data["regression"] = {"inject": {**inject, "action": "error", "errno": fault["errno"]}, "model": "strace error injection"}
        return data
    op, args = case.recovery()
    refused = finding.kind == "unavailable" and op in ("write_memory", "remove_memory", "pin_memory")
    data["given"] = given_of(left, locks=refused)
    step: dict[str, Any] = {"op": op, "args": dict(args), "note": "the next operation on the state the fault left"}
    if refused:
        step["expect"] = busy
        data["clock"] = dict(PROBE_CLOCK)  # moving, so a busy writer's polls end
        data["then"] = {}
    else:
        data["then"] = {"invariants": "all", "ignore": [
            {"path": "*", "reason": "the next operation's own changes: judged by the invariants, not pinned"}]}
    data["steps"] = [step]
    data["regression"] = {"fault": fault, "model": "strace " + ("kill" if fault.get("action") == "kill" else "error injection")
                          + " (found); the state it left (replayed)"}
    return data
