"""The lock adversary matrix: lock file states × holders × ages × store modes (issue 4).

Each cell plants a ``.lock`` in the memory directory an implementation will write, starts that
implementation's driver, asks for one ``write_memory`` and records the verdict it reached
(acquire, reclaim, busy) and how long it took, next to the verdict SPEC requires
(S-LOCK-2/3/6/7).  EPERM is made for real: as root, the holder runs as an unprivileged user and
the prober is root without CAP_KILL (so signal 0 fails with EPERM); "vice versa", a full root
prober probes the same holder (signal 0 succeeds); as a normal user pid 1 is the foreign holder.

Every implementation, the reference included, is driven through the protocol and judged by
SPEC alone (``spec_verdict``, the oracles' result kinds), so this module imports nothing of
``reference/`` at its top.  The one exception is ``two_reclaimers_race``, which drives the
reference's own lock in process through its ``Fs`` seam (the only way to pause a reclaimer
between its recheck and its unlink); what it returns is judged from the tokens and the file's
bytes only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ..drivers.interrupt import stopping
from ..drivers.peers import DriverError, PeerSpec, start_driver
from ..drivers.procs import dead_pid
from ..drivers.sandbox import Sandbox
from ..oracles import lock_leftover
from ..oracles.findings import Finding
from ..oracles.kind_model import BUSY, answer_kind
from ..oracles.spec import LOCK_NAME
from .availability import LockState, measure
from .engine import prepare_shared

NOBODY = 65534
REPLAY_SLACK_S = {"local": 2.5, "shared": 1.0}
"""Seconds an exported busy regression may take beyond the lock policy's window: room for a
loaded CI machine locally (0.5 s window); in shared mode the bound must stay under 5 s, where
openclaude 0.6.6 answers busy instead of at ~3 s (S-LOCK-7)."""
CONTENTS = ("valid", "empty", "garbage", "partial", "huge", "symlink", "fifo", "directory")
HOLDERS = ("alive", "foreign-user", "holder-other-uid", "dead", "reused")
AGES = (0, 20, 61)
MODES = ("local", "shared")


@dataclass(frozen=True)
class Cell:
    content: str
    holder: str  # for "valid" tokens; "-" otherwise
    age: int
    mode: str

    @property
    def name(self) -> str:
        holder = f"/{self.holder}" if self.content == "valid" else ""
        return f"{self.mode}:{self.content}{holder}@{self.age}s"


def cells(modes: tuple[str, ...] = MODES) -> list[Cell]:
    out = [Cell("absent", "-", 0, m) for m in modes]
    for mode in modes:
        for age in AGES:
            out += [Cell("valid", h, age, mode) for h in HOLDERS]
            out += [Cell(c, "-", age, mode) for c in CONTENTS if c != "valid"]
    return out


def spec_verdict(cell: Cell) -> str:
    """What SPEC requires: S-LOCK-2 (non-regular → busy), S-LOCK-3 (liveness, 60 s hard stale)."""
    if cell.content == "absent":
        return "acquire"
    if cell.content in ("symlink", "fifo", "directory") or cell.age <= 10:
        return "busy"
    if cell.content == "valid":
        return "reclaim" if cell.holder == "dead" else "busy"
    return "reclaim" if cell.age > 60 else "busy"  # no readable pid: alive until 60 s


VIRTUAL_SLACK_S = 0.05  # in virtual time a busy answer comes at the window, at most a poll or two late


def spec_seconds(cell: Cell) -> float:
    if spec_verdict(cell) != "busy":
        return 0.0
    return 0.5 if cell.mode == "local" else 3.0


SHARED_BUSY_BOUND_S = 5.0  # SS-LOCK-5: a co-writer answers busy in the shared store within about 5 s


def _co_writer_bound(cell: Cell, contract: str) -> bool:
    """A co-writer judged by the shared-store profile, in the shared store: SS-LOCK-5's bound."""
    return contract == "shared-store" and cell.mode == "shared"


def busy_window(cell: Cell, contract: str) -> tuple[float, float]:
    """The (earliest, latest) second of a busy answer the contract allows, before slack: openpi's
    exact window (S-LOCK-6 local, S-LOCK-7 shared), or for a co-writer judged by the shared-store
    profile, SS-LOCK-5's bound in the shared store (OpenCode waits 2 + 1 + 2 s, PEER-2)."""
    if _co_writer_bound(cell, contract):
        return 0.0, SHARED_BUSY_BOUND_S
    window = spec_seconds(cell)
    return window, window


def busy_clause(cell: Cell, contract: str) -> str:
    """The clause a late or early busy answer breaks (see ``busy_window``)."""
    if _co_writer_bound(cell, contract):
        return "SS-LOCK-5"
    return "S-LOCK-6" if cell.mode == "local" else "S-LOCK-7"


@dataclass
class CellResult:
    cell: Cell
    expected: str
    verdict: str
    seconds: float
    detail: str = ""
    unavailable: float | None = 0.0  # lock age (s) at a fresh writer's first success; None: never
    store: str = ""  # the locked directory, relative to the sandbox
    virtual: bool = False  # ``seconds`` is the driver's virtual clock, not the wall clock
    leftovers: list[Finding] = field(default_factory=list)  # locks an answer left behind (S-LOCK-5)
    contract: str = "openpi"  # the profile the busy window is judged by (``busy_window``)

    @property
    def timely(self) -> bool:
        """Busy within the policy's window (S-LOCK-6/7): in virtual time exactly (at most one
        poll interval late), in real time give or take scheduling."""
        if self.verdict != "busy":
            return True
        earliest, latest = busy_window(self.cell, self.contract)
        if self.virtual:
            return earliest <= self.seconds <= latest + VIRTUAL_SLACK_S
        return earliest * 0.9 <= self.seconds <= latest + 1.0

    @property
    def ok(self) -> bool:
        return self.verdict == self.expected and self.timely


def _pause_child(uid: int | None = None) -> subprocess.Popen[bytes]:
    """A live process that waits on its stdin (no sleeping), optionally as another user."""
    return subprocess.Popen(
        ["sh", "-c", "read _"],
        stdin=subprocess.PIPE, user=uid, group=uid, extra_groups=[] if uid is not None else None,
    )


NO_CAP_KILL = ["setpriv", "--bounding-set=-kill", "--inh-caps=-kill"]


@contextmanager
def _holder(kind: str) -> Iterator[tuple[int, list[str]]]:
    """The holder pid, and the command prefix the prober must run under."""
    if kind == "dead":
        yield dead_pid(), []
        return
    root = os.geteuid() == 0
    if kind == "foreign-user" and not root:
        yield 1, []  # pid 1 belongs to root: a non-root prober gets EPERM
        return
    other_user = kind in ("foreign-user", "holder-other-uid") and root
    child = _pause_child(NOBODY if other_user else None)
    try:
        yield child.pid, NO_CAP_KILL if kind == "foreign-user" else []
    finally:
        if child.stdin is not None:
            child.stdin.close()
        child.wait()


def _plant(lock: Path, cell: Cell, pid: int, outside: Path, now_ms: int) -> None:
    created = now_ms / 1000 - cell.age
    token = f"{pid}\t{int(created * 1000)}\tmatrix"
    if cell.content == "valid":
        lock.write_text(token)
    elif cell.content == "empty":
        lock.write_bytes(b"")
    elif cell.content == "garbage":
        lock.write_text("garbage")
    elif cell.content == "partial":
        lock.write_text("\t\tmatrix")  # pid and time fields lost: no readable pid
    elif cell.content == "huge":
        lock.write_bytes(b"x" * (2 << 20))
    elif cell.content == "symlink":
        outside.write_text(token)
        os.symlink(outside, lock)
    elif cell.content == "fifo":
        os.mkfifo(lock)
    elif cell.content == "directory":
        lock.mkdir()
    if cell.content != "absent":
        ns = (now_ms - round(cell.age * 1000)) * 1_000_000  # exact: the virtual clock reads ms
        os.utime(lock, ns=(ns, ns), follow_symlinks=False)


def store_dir(sb: Sandbox, mode: str, kind: str) -> Path | None:
    """Where the store of ``mode`` lives for a driver that does not offer ``memory_dir``: the
    shared store is the contract's (SS-LAYOUT-1); a local store is openpi's layout for the
    reference and openpi, and unknown for any other tool (None)."""
    if mode == "shared":
        return Path(sb.shared_dir)
    return Path(sb.local_dir) if kind in ("python", "pi") else None


def run_cell(spec: PeerSpec, cell: Cell, timeout: float = 15.0, *, real_time: bool = False) -> CellResult:
    """One cell; in virtual time where the driver offers it (its waits cost no wall time and
    are measured exactly), on the real clock with ``real_time``.  The store's folder is what
    ``memory_dir`` answers, or without that op the contract's shared store (issue 30 item 3)."""
    sb = Sandbox.create()
    expected = spec_verdict(cell)
    try:
        if cell.mode == "shared":
            prepare_shared(sb)
        with _holder(cell.holder if cell.content == "valid" else "dead") as (pid, wrapper):
            if wrapper and shutil.which(wrapper[0]) is None:
                return CellResult(cell, expected, "skipped", 0.0, f"{wrapper[0]} is missing")
            env = sb.env()
            probe = start_driver(spec, env, cwd=str(sb.root), timeout=timeout)
            reuse = not wrapper and "reset" in probe.ops  # reset: as good as a fresh writer
            left: list[Finding] = []
            found = store_dir(sb, cell.mode, spec.kind)
            try:
                held = lock_leftover.lock_files(sb.root)
                if "memory_dir" in probe.ops:
                    found = Path(str(probe.call("memory_dir").result))
                    left += lock_leftover.check(sb.root, held, {probe.pid}, op=f"memory_dir {cell.name}")
            finally:
                if not reuse or found is None:
                    probe.close()
            if found is None:
                return CellResult(cell, expected, "skipped", 0.0,
                                  "its local store's folder is unknown: the driver offers no memory_dir")
            directory = found
            directory.mkdir(parents=True, exist_ok=True)
            lock = directory / LOCK_NAME
            if lock.exists() or lock.is_symlink():
                lock.unlink()
            now_ms = int(time.time() * 1000)
            _plant(lock, cell, pid, sb.root / "outside-target", now_ms)
            before = _lock_state(lock)
            if reuse and probe.call("reset").ok:
                driver = probe
            else:
                probe.close()
                driver = start_driver(spec, env, cwd=str(sb.root), timeout=timeout, wrapper=wrapper)
            clock = None if real_time or "virtual" not in driver.clock_modes else {
                "now": datetime.fromtimestamp(now_ms / 1000, UTC).isoformat(timespec="milliseconds"),
                "mode": "virtual"}
            try:
                if clock is not None:
                    driver.call("set_clock", clock)
                held = lock_leftover.lock_files(sb.root)
                t0 = time.monotonic()
                answer = driver.call("write_memory", {"topic": "Matrix", "content": "x", "summary": "s"})
                seconds = time.monotonic() - t0
                said = "an error" if not answer.ok else repr(str(answer.result)[:60])
                left += lock_leftover.check(sb.root, held, {driver.pid}, op=f"write_memory {cell.name}", answer=said)
                if clock is not None and answer.clock_ms is not None:
                    seconds = (answer.clock_ms - now_ms) / 1000
            finally:
                driver.close()
            virtual = clock is not None
            if not answer.ok:
                return CellResult(cell, expected, "error", seconds, str(answer.error), leftovers=left)
            kind = answer_kind(answer)
            if kind == BUSY:
                intact = _lock_state(lock) == before
                outage = measure(spec, sb, [lock], env=env, from_age=cell.age + 1, timeout=timeout, wrapper=wrapper,
                                 clock=clock, writer_now=(lambda: now_ms / 1000) if virtual else time.time)
                return CellResult(
                    cell, expected, "busy", seconds, "" if intact else "lock changed while busy", outage.seconds,
                    os.path.relpath(directory, sb.root), virtual, left + outage.leftovers,
                )
            if kind == "created":
                verdict, stays = _created(cell, lock, before)
                return CellResult(cell, expected, verdict, seconds, stays, virtual=virtual, leftovers=left)
            return CellResult(cell, expected, "error", seconds, str(answer.result), virtual=virtual, leftovers=left)
    except DriverError as e:
        return CellResult(cell, expected, "error", 0.0, str(e))
    finally:
        shutil.rmtree(sb.root, ignore_errors=True)


_WHAT = {
    "empty": ("an empty .lock (as a failed token write or a kill before it leaves)", "S-LOCK-3",
              "no readable pid, the owner counts as alive until the lock is 60 s old"),
    "garbage": ("a .lock holding garbage", "S-LOCK-3", "no readable pid, alive until 60 s old"),
    "partial": ("a .lock whose pid and time fields are lost", "S-LOCK-3", "no readable pid, alive until 60 s old"),
    "huge": ("a 2 MiB .lock with no pid", "S-LOCK-3", "no readable pid, alive until 60 s old"),
    "symlink": ("a symlink at .lock", "S-LOCK-2", "step 3 never reclaims a non-regular lock"),
    "fifo": ("a FIFO at .lock", "S-LOCK-2", "step 3 never reclaims a non-regular lock"),
    "directory": ("a directory at .lock (a mkdir-style lock or a backup restore)", "S-LOCK-2",
                  "step 3 never reclaims a non-regular lock"),
}
_HOLDER = {
    "alive": "a live owner's .lock",
    "foreign-user": "a .lock whose owner runs as another user (EPERM counts as alive)",
    "holder-other-uid": "a live owner's .lock (another uid)",
    "dead": "a dead owner's .lock",
    "reused": "a dead owner's .lock whose pid a live process reuses",
}


def lock_state(cell: Cell) -> LockState:
    """The cell's planted state in a user's words, with the clause that makes it last."""
    if cell.content == "valid":
        what = _HOLDER[cell.holder]
        if cell.holder == "reused":
            return LockState(cell.name, what, "S-INV-9", "(c) a reused pid makes a dead owner look alive", weakness=True)
        live = cell.holder in ("alive", "foreign-user", "holder-other-uid")
        return LockState(cell.name, what, "S-LOCK-3", "", live_owner=live)
    what, clause, why = _WHAT.get(cell.content, (f"a {cell.content} .lock", "S-LOCK-2", ""))
    return LockState(cell.name, what, clause, why)


def scenario_for(cell: Cell, store: str, verdict: str = "busy") -> dict[str, object]:
    """A replayable scenario planting the cell's lock in ``store`` (relative to the sandbox),
    then writing: the write must answer busy (the outage a hazard names, or SPEC's busy
    within its window), or — where SPEC reclaims — create the topic."""
    lock = f"{store}/{LOCK_NAME}"
    steps: list[dict[str, object]] = []
    given: dict[str, object] = {}
    if cell.mode == "shared":
        given = {"files": {"agent/memory.jsonc": '{"shared_dir": true}\n',
                           "home/.config/opencode/memory.jsonc": '{"shared_dir": true}\n'}}
    plant: dict[str, dict[str, object]] = {
        "empty": {"op": "plant_lock", "args": {"dir": store, "content": "", "age_seconds": cell.age}},
        "garbage": {"op": "plant_lock", "args": {"dir": store, "content": "garbage", "age_seconds": cell.age}},
        "partial": {"op": "plant_lock", "args": {"dir": store, "content": "\t\tmatrix", "age_seconds": cell.age}},
        "huge": {"op": "plant_lock", "args": {"dir": store, "content": "x" * 4096, "age_seconds": cell.age}},
        "directory": {"op": "mkdir", "args": {"path": lock}},
        "fifo": {"op": "mkfifo", "args": {"path": lock}},
        "symlink": {"op": "symlink", "args": {"path": lock, "target": "${ROOT}/outside-target"}},
    }
    if cell.content == "valid":
        pid = "dead" if cell.holder == "dead" else "self"  # any live pid stands for a live holder
        steps.append({"op": "plant_lock", "args": {"dir": store, "pid": pid, "age_seconds": cell.age}})
    else:
        steps.append(plant[cell.content])
    write: dict[str, object] = {"op": "write_memory", "args": {"topic": "Matrix", "content": "x", "summary": "s"}}
    if verdict == "busy":
        window = spec_seconds(cell) or (0.5 if cell.mode == "local" else 3.0)
        # a store that waits out a reclaim age (10 s, 60 s) or hangs still fails the bound;
        # busy by kind (issue 30): a driver declaring outcome_kinds words it itself, the others
        # are busy only by the exact busy text (oracles.outcome_kind)
        write["expect"] = {"outcome": "busy", "max_seconds": window + REPLAY_SLACK_S[cell.mode]}
        write["note"] = "the planted lock state refuses the write (S-LOCK-8) within the policy's window"
        then: dict[str, object] = {"absent": [f"{store}/matrix.md"]}
    else:
        write["expect"] = {"outcome": "ok:created"}
        write["note"] = "SPEC reclaims this lock (S-LOCK-2/3): the write goes through"
        then = {"present": [f"{store}/matrix.md"], "ignore": [
            {"path": f"{store}/*", "reason": "the write's own index and topic: the finding is the lock's verdict"}]}
    steps.append(write)
    return {"clock": {"mode": "offset"}, "given": given, "steps": steps, "then": then}



def _created(cell: Cell, lock: Path, before: bytes | str) -> tuple[str, str]:
    """A write that went through: the verdict and what it left, in true words.  The planted lock
    still there byte for byte means the tool never took the lock (issue 30: not a reclaim)."""
    present = lock.exists() or lock.is_symlink()
    if cell.content != "absent" and present and _lock_state(lock) == before:
        return "ignored", "wrote past the planted lock without taking it; the planted lock is still there"
    verdict = "acquire" if cell.content == "absent" else "reclaim"
    return verdict, "a lock of its own left behind" if present else ""


def _lock_state(lock: Path) -> bytes | str:
    if lock.is_symlink():
        return "symlink:" + os.readlink(lock)
    if lock.is_dir():
        return "dir"
    if lock.exists() and not lock.is_file():
        return "special"
    return lock.read_bytes() if lock.exists() else "absent"


def run_matrix(
    spec: PeerSpec,
    selected: list[Cell],
    *,
    parallel: int = 16,
    on_result: Callable[[CellResult], None] | None = None,
    real_time: bool = False,
) -> list[CellResult]:
    """Cells run concurrently: a busy cell mostly waits on its lock window (in real time)."""
    results: dict[Cell, CellResult] = {}
    lock = threading.Lock()

    def one(cell: Cell) -> None:
        if stopping():  # Ctrl-C: the queued cells do not start
            return
        r = run_cell(spec, cell, real_time=real_time)
        with lock:
            results[cell] = r
            if on_result is not None:
                on_result(r)

    with ThreadPoolExecutor(max_workers=parallel) as pool:
        list(pool.map(one, selected))
    return [results[c] for c in selected if c in results]  # all, unless Ctrl-C cut the run


# --- the documented race: two reclaimers, no atomic compare-and-unlink (S-INV-9a) --------


@dataclass
class RaceResult:
    """What each reclaimer believed (the token it holds, or None) and what the file holds."""

    first_token: str | None
    second_token: str | None
    lock_content: str

    @property
    def both_hold(self) -> bool:
        """Two holders at once: the S-INV-9 (a) weakness, judged from the tokens alone."""
        return self.first_token is not None and self.second_token is not None


def two_reclaimers_race(directory: Path) -> RaceResult:
    """Pause reclaimer A between its recheck and its unlink; let B reclaim; resume A.

    Deterministic through the reference's ``Fs`` seam: A then unlinks B's fresh lock and
    creates its own, so both believe they hold the lock — the weakness SPEC S-INV-9 (a)
    documents.  This drives ``reference.lock`` in process (hence the imports here, not at the
    top); peers have no such seam, so the race is shown on the reference only.
    """
    from memconform.reference.clock import SystemClock
    from memconform.reference.fs import Fs
    from memconform.reference.lock import try_acquire

    from ..faults.doubles import FaultFs

    reached, go = threading.Event(), threading.Event()

    def pause(_path: str) -> None:
        reached.set()
        go.wait()

    paused = FaultFs()  # A: stops at its first unlink of a ``.lock`` (after the recheck)
    paused.hook("unlink", run=pause, match=lambda p: p.endswith("/" + LOCK_NAME))
    directory.mkdir(parents=True, exist_ok=True)
    lock = directory / LOCK_NAME
    stale = time.time() - 30
    lock.write_text(f"{dead_pid()}\t{int(stale * 1000)}\tstale")
    os.utime(lock, (stale, stale))
    clock = SystemClock()
    first: list[str | None] = []
    a = threading.Thread(target=lambda: first.append(try_acquire(paused, clock, str(lock))))
    a.start()
    reached.wait()
    second = try_acquire(Fs(), clock, str(lock))
    go.set()
    a.join()
    return RaceResult(first[0], second, lock.read_text())
