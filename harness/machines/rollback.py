"""Every mutating operation with an injected failure at a chosen ``Fs`` call (S-WRITE-13).

Before each faulted step the sandbox is copied to a twin, where the same operation runs
without faults through a counting ``Fs``: that fixes the number N of mutating calls (open for
writing, write, fsync, close of a written descriptor, rename, link, unlink, mkdir) and the
fault-free outcome.  The real store then runs it with a ``NodeError`` raised at call k ≤ N
(and, sometimes, a second one a few calls later, inside the rollback).  Invariants:

* the operation raised → the whole tree equals its state before the operation, apart from
  what SPEC allows a failed operation to leave (the created memory directory, S-PATH-8; a
  shared removal's tombstone written before its index, S-REMOVE-4 / S-INV-8.3; a lock whose
  release failed, S-LOCK-5; temporaries whose own cleanup failed);
* it raised ``AggregateError`` → a second fault hit the rollback, and every file is complete:
  its version before or its fault-free version after (S-WRITE-13, S-INV-8.8);
* it returned → the result and the tree equal the twin's (the fault hit a call whose errors
  SPEC ignores, or recap retirement turned it into a diagnostic, S-RETIRE-5).

Reference only (``bind`` refuses every other implementation): the fault lands at the k-th
mutating call of the ``Fs`` seam, counted on a fault-free twin, and a second fault inside the
rollback — a peer has no such seam.  strace errno injection counts syscalls, not ``Fs`` calls,
and costs a traced process per faulted step; that attack on peers is ``memconform crash
--errors``, which enumerates the faultable syscalls instead of sampling them.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from memconform.reference.clock import ControlledClock
from memconform.reference.errors import AggregateJsError, NodeError
from memconform.reference.index import INITIAL_MEMORY
from memconform.reference.store import Store
from memconform.reference.text import decode_utf8, encode_utf8

from ..drivers.peers import PeerSpec
from ..drivers.sandbox import Sandbox, snapshot
from ..faults.doubles import Call, FaultFs
from ..gate.regressions import content
from ..gate.scenarios import DEFAULT_NOW_MS
from ..oracles.invariants import check_store
from . import strategies as S
from .base import Machine, guarded

INITIAL_BYTES = INITIAL_MEMORY.encode()

NOW_MS = DEFAULT_NOW_MS
ERRNOS = (errno.ENOSPC, errno.EIO, errno.EACCES, errno.EROFS)
TOPICS = ("Alpha", "alpha", "Beta", "Gamma Delta", "Zeta One", "Zeta Two")
LOOKUPS = (*TOPICS, "Zeta", "last-session-recap.md", "missing")
STORE_DIRS = ("agent/memory", "home/.agents/memory")


def _is_temp(rel: str) -> bool:
    return ".tmp-" in rel.rsplit("/", 1)[-1]


def bind(spec: PeerSpec, ops: frozenset[str], *, timeout: float = 15.0) -> str | None:
    """The reference in process only; a peer is refused with the command that attacks it."""
    if spec.kind == "python":
        return None
    return "needs the Fs seam (faults at the k-th Fs call, in process); for a peer use `memconform crash --errors`"


class RollbackMachine(Machine):
    """Faulted write/remove/pin/retire: the store is left as it was, or as SPEC allows."""

    NAME = "rollback"
    CLAUSES = ("S-WRITE-13", "S-INV-8")
    EXAMPLES_SCALE = 0.8

    def __init__(self) -> None:
        super().__init__()
        self.sandbox = Sandbox.create()
        self.clock = ControlledClock(NOW_MS)
        self.fs = FaultFs()
        self.diagnostics: list[str] = []
        self.store = Store(self.sandbox.env(), fs=self.fs, clock=self.clock, diagnostics=self.diagnostics.append)
        self.shared = False
        self.injects: list[dict[str, Any] | None] = []
        self.last: tuple[_Context, dict[str, bytes]] | None = None
        self.recorder.tags.append("fault-injection")

    def teardown(self) -> None:
        shutil.rmtree(self.sandbox.root, ignore_errors=True)

    @property
    def root(self) -> Path:
        return self.sandbox.root

    def _active_rel(self) -> str:
        return STORE_DIRS[1] if self.shared else STORE_DIRS[0]

    def _config(self) -> bytes:
        return b'{"shared_dir": %s}' % (b"true" if self.shared else b"false")

    # --- clean steps (they build the state the faulted ones start from) ----------------

    @initialize()
    @guarded
    def configure(self) -> None:
        (self.root / "agent/memory.jsonc").write_bytes(self._config())
        self.recorder.given_file("agent/memory.jsonc", self._config())
        self.executed("configure")

    @rule(topic=st.sampled_from(TOPICS), summary=st.sampled_from(("s", "use [pin] flag", "other")), pin=st.booleans())
    @guarded
    def clean_write(self, topic: str, summary: str, pin: bool) -> None:
        args = {"topic": topic, "content": "clean", "summary": summary, "pin": pin}
        result = self.store.execute_write_memory(topic, "clean", summary, pin)
        self.recorder.step("write_memory", args, result=result)
        self.executed("clean_write")

    @rule(kind=st.sampled_from(("recap", "invalid-utf8", "crlf", "tombstone", "toggle-shared")))
    @guarded
    def setup(self, kind: str) -> None:
        """Shared mode, and files a rollback must restore (recaps, non-UTF-8, CRLF, tombstones).

        Toggling lets carry-over complete unfaulted (S-MIGRATE-3), so faulted steps never
        include a carry-over.
        """
        if kind == "toggle-shared":
            self.shared = not self.shared
            (self.root / "agent/memory.jsonc").write_bytes(self._config())
            self.recorder.put_file("agent/memory.jsonc", self._config())
            self.store.get_memory_dir()
            self.recorder.step("memory_dir")
            return self.executed("setup", kind)
        base = self.root / self._active_rel()
        base.mkdir(parents=True, exist_ok=True)
        index = base / "MEMORY.md"
        if kind == "recap":
            old = index.read_bytes() if index.exists() else b"# Memory Index\n\n"
            data = old + b"\n- [Last Session Recap](last-session-recap.md) 2026-08-01 -- recap"
            self._put(index, data)
            self._put(base / "last-session-recap.md", b"recap body\n")
        elif kind == "invalid-utf8":
            self._put(base / "alpha.md", b"---\nname: \"Alpha\"\n---\n\xff\xfe body \xc3\n")
        elif kind == "crlf":
            self._put(base / "beta.md", b"---\r\nname: \"Beta\"\r\ncreated: x\r\n---\r\nbody\r\n")
        else:
            self._put(base / ".ocl-removed", b"alpha.md\nbeta.md\n")
        self.executed("setup", kind)

    def _put(self, path: Path, data: bytes) -> None:
        path.write_bytes(data)
        self.recorder.put_file(path.relative_to(self.root).as_posix(), data)

    # --- faulted steps ------------------------------------------------------------------

    @rule(data=st.data(), topic=st.sampled_from(TOPICS), summary=S.summaries, pin=st.booleans(), mode=S.modes)
    @guarded
    def write(self, data: st.DataObject, topic: str, summary: str, pin: bool, mode: dict[str, Any]) -> None:
        args = {"topic": topic, "content": "faulted", "summary": summary, "pin": pin, **mode}
        self._faulted(data, "write_memory", args, lambda s: s.execute_write_memory(
            topic, "faulted", summary, pin, mode.get("mode", "append"), mode.get("overwrite", False)))

    @rule(data=st.data(), topic=st.sampled_from(LOOKUPS))
    @guarded
    def remove(self, data: st.DataObject, topic: str) -> None:
        self._faulted(data, "remove_memory", {"topic": topic}, lambda s: s.execute_remove_memory(topic))

    @rule(data=st.data(), topic=st.sampled_from(LOOKUPS), on=st.booleans())
    @guarded
    def pin(self, data: st.DataObject, topic: str, on: bool) -> None:
        self._faulted(data, "pin_memory", {"topic": topic, "pin": on}, lambda s: s.execute_pin_memory(topic, on))

    @precondition(lambda self: any((self.root / d / "MEMORY.md").exists() for d in STORE_DIRS))
    @rule(data=st.data())
    @guarded
    def retire(self, data: st.DataObject) -> None:
        self._faulted(data, "retire_recaps", {}, lambda s: s.retire_recap_entries())

    def _faulted(self, data: st.DataObject, op: str, args: dict[str, Any], call: Callable[[Store], object]) -> None:
        before = snapshot(self.root)
        twin_root = Path(tempfile.mkdtemp(prefix="memconform-twin-"))
        try:
            shutil.copytree(self.root, twin_root / "t", symlinks=True)
            twin = Sandbox(twin_root / "t")
            counting = FaultFs()
            twin_store = Store(twin.env(), fs=counting, clock=ControlledClock(self.clock.now_ms()), diagnostics=lambda _: None)
            twin_result = call(twin_store)
            twin_after = snapshot(twin.root)
        finally:
            shutil.rmtree(twin_root, ignore_errors=True)
        mutating = counting.mutating()
        if not mutating:
            plain = call(self.store)
            self.recorder.step(op, args, result=plain)
            assert plain == twin_result
            return self.executed(op, "no mutating call", ran=False)
        k = data.draw(st.integers(1, len(mutating)), label="fault at call")
        err = data.draw(st.sampled_from(ERRNOS), label="errno")
        second = data.draw(st.one_of(st.none(), st.integers(1, 6)), label="second fault after")
        self.fs.calls, self.fs.fired = [], []
        self.fs.fail(nth=k, err=err, mutating=True)
        if second is not None:
            self.fs.fail(nth=k + second, err=errno.EIO, mutating=True)
        raised: Exception | None = None
        result: object = None
        try:
            result = call(self.store)
        except Exception as e:
            raised = e
        finally:
            self.fs.faults = []
        fired = list(self.fs.fired)
        fault = f"{mutating[k - 1].name} #{k} {errno.errorcode[err]}"
        self.recorder.syscall = fault
        step = self.recorder.step(op, args)
        step["note"] = f"fault injected: {fault}" + (f", then EIO {second} calls later" if second else "")
        after = snapshot(self.root)
        ctx = _Context(op, self.shared, before, after, twin_after, fired, self._own_pid_prefix())
        self.injects += [self._inject(c, e) for c, e in fired]
        self.last = (ctx, twin_after if raised is None else before)
        if raised is None:
            step["expect"] = {"result": result}
            outcome = self._check_returned(ctx, result, twin_result)
        elif isinstance(raised, AggregateJsError):
            step["expect"] = {"error": {"kind": "AggregateError"}}
            outcome = self._check_aggregate(ctx, raised)
        else:
            step["expect"] = {"error": {"kind": "Error", "code": getattr(raised, "code", None)}}
            outcome = self._check_raised(ctx, raised)
        self._clear_own_locks(after)
        self.last = None
        self.executed(op, outcome)

    def _inject(self, call: Call, err: int) -> dict[str, Any] | None:
        """The fault as a scenario's strace injection, when it is on a stable path."""
        if call.trace is None or ".tmp-" in call.trace[1]:
            return None
        syscall, path, nth = call.trace
        rel = os.path.relpath(path, self.root)
        return {"path": rel, "syscall": syscall, "nth": nth, "action": "error", "errno": errno.errorcode[err]}

    def scenario_for(self, error: BaseException) -> dict[str, Any] | None:
        """The steps, the faults as strace injections when all are expressible, the expected tree."""
        data = super().scenario_for(error)
        if data is None:
            return None
        injects = [i for i in self.injects if i is not None]
        if injects and len(injects) == len(self.injects):
            data["regression"]["inject"] = injects
        elif self.injects:
            data["tags"].append("needs-in-process-faults")
            data["description"] += (
                " Some faults hit temporaries, closes or directory creation, which a scenario's "
                "strace injection cannot name: replay it with `memconform fuzz --seed`."
            )
        if self.last is not None:
            ctx, expected = self.last
            files = {
                p: content(v) for p, v in sorted(expected.items())
                if p.startswith(tuple(d + "/" for d in STORE_DIRS)) and v != b"<dir>"
                and not p.endswith("/.lock") and not _is_temp(p) and ctx.allowance(p) is None
            }
            data["then"] = {"files": files, "absent": [f"{d}/.lock" for d in STORE_DIRS]}
        return data

    # --- verdicts -----------------------------------------------------------------------

    def _check_raised(self, c: _Context, raised: Exception) -> str:
        assert isinstance(raised, NodeError), f"{c.op}: unexpected {type(raised).__name__}: {raised}"
        assert c.fired, f"{c.op} raised {raised} although no fault fired"
        assert raised.code in {errno.errorcode[e] for _, e in c.fired}, f"{c.op} raised {raised}, not the injected error"
        labels = c.explain(c.before)
        return "raised" + "".join(f" +{x}" for x in sorted(labels))

    def _check_aggregate(self, c: _Context, raised: AggregateJsError) -> str:
        assert len(c.fired) >= 2, f"AggregateError with a single fault: {raised.message}"
        assert raised.message.startswith("Memory update and rollback failed; inspect "), raised.message
        for p in sorted(set(c.before) | set(c.after)):
            got = c.after.get(p)
            if got in (c.before.get(p), c.twin.get(p)) or c.allowance(p) is not None:
                continue
            raise AssertionError(f"after a failed rollback {p} is neither its old nor its new version: {got!r}")
        return "aggregate"

    def _check_returned(self, c: _Context, result: object, twin_result: object) -> str:
        assert result == twin_result, f"{c.op} returned {result!r}; without the fault {twin_result!r}"
        if c.op == "retire_recaps" and any("failed to retire" in d for d in self.diagnostics):
            self.diagnostics.clear()
            # S-RETIRE-5: the failing directory is left as it was, the other one is retired
            labels: set[str] = set()
            for rel in STORE_DIRS:
                try:
                    labels |= c.explain(c.before, rel)
                except AssertionError:
                    labels |= c.explain(c.twin, rel)
            return "diagnostic" + "".join(f" +{x}" for x in sorted(labels))
        labels = c.explain(c.twin)
        return "returned" + "".join(f" +{x}" for x in sorted(labels))

    def _own_pid_prefix(self) -> bytes:
        return f"{self.fs.getpid()}\t".encode()

    def _clear_own_locks(self, after: dict[str, bytes]) -> None:
        """A lock this process left behind would make every later step busy: remove it."""
        for rel in STORE_DIRS:
            data = after.get(f"{rel}/.lock")
            if data is not None and (data == b"" or data.startswith(self._own_pid_prefix())):
                (self.root / rel / ".lock").unlink()
                self.recorder.delete_file(f"{rel}/.lock")

    @invariant()
    @guarded
    def no_unexplained_leftovers(self) -> None:
        assert not self.diagnostics, f"unexpected diagnostics: {self.diagnostics}"
        for rel in STORE_DIRS:
            found = [v for v in check_store(self.root / rel, ("leftovers",)) if "temporary" not in v.message]
            assert not found, "; ".join(map(str, found))


@dataclass
class _Context:
    """One faulted step: the three snapshots and the faults that fired."""

    op: str
    shared: bool
    before: dict[str, bytes]
    after: dict[str, bytes]
    twin: dict[str, bytes]
    fired: list[tuple[Call, int]]
    own_pid: bytes

    def allowance(self, p: str) -> str | None:
        """Why ``p`` may differ from the expected tree, or None (SPEC clause in the label)."""
        got = self.after.get(p)
        calls = [c for c, _ in self.fired]
        if got == b"<dir>" and p in ("agent/memory", "home/.agents", "home/.agents/memory"):
            return "S-PATH-8 directory created"
        if _is_temp(p) and len(self.fired) >= 2:
            return "temporary whose cleanup failed"
        if (
            p.endswith("/.lock")
            and got is not None
            and got.startswith(self.own_pid)
            and any(c.name == "unlink" and (c.path or "").endswith("/.lock") for c in calls)
        ):
            return "S-LOCK-5 release (or A-13 cleanup) unlink failed, lock left"
        if p.endswith("/.lock") and got == b"" and any(
            c.name == "unlink" and (c.path or "").endswith("/.lock") for c in calls
        ):
            return "A-13 cleanup failed: empty lock (S-LOCK-3, 60 s)"
        if (
            p.startswith("home/.agents/memory/.ocl-removed")
            and self.op in ("remove_memory", "retire_recaps")
            and got == self.twin.get(p)
        ):
            return "S-INV-8.3 tombstone before index"
        if got is not None and got == self.twin.get(p) and any(
            c.name == "unlink" and f"/{p}.tmp-" in (c.path or "") for c in calls
        ):
            # S-IO-4 step 6: the rename published the file, then unlinking the (gone)
            # temporary failed with something other than ENOENT and the error propagated
            if self.op == "write_memory" and p.endswith("/MEMORY.md"):
                return "KNOWN write: index published, then rollback skipped it (S-IO-4.6, S-WRITE-13)"
            return "S-IO-4.6 published, then its temp cleanup failed"
        before = self.before.get(p)
        if self.op == "write_memory" and p.endswith("/MEMORY.md") and before is None and got == INITIAL_BYTES:
            return "S-WRITE-13 rollback writes RAW back: the initial index when none existed (S-WRITE-5)"
        if before is not None and got == encode_utf8(decode_utf8(before)) and got != before:
            return "S-WRITE-13 rollback re-encodes PREV"
        if (
            p.endswith("/.ocl-removed")
            and before is not None
            and got is not None
            and sorted(got.split(b"\n")) == sorted(before.split(b"\n"))
        ):
            return "S-WRITE-13 (c) re-adds the tombstone at the end of the list (S-TOMB-3)"
        return None

    def explain(self, expected: dict[str, bytes], under: str = "") -> set[str]:
        """Every difference from ``expected`` must have an allowance; returns their labels."""
        labels: set[str] = set()
        for p in sorted(set(expected) | set(self.after)):
            if not p.startswith(under) or self.after.get(p) == expected.get(p):
                continue
            why = self.allowance(p)
            if why is None:
                raise AssertionError(
                    f"{self.op} with fault(s) {[(c.name, c.path) for c, _ in self.fired]}: "
                    f"{p} is {self.after.get(p)!r}, expected {expected.get(p)!r}"
                )
            labels.add(why)
        return labels


