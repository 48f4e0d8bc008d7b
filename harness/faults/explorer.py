"""The in-process explorer: the reference on ``MemFs``, every crash state of an op checked.

Each op runs once in process; its effects are replayed to every crash point and each state
is judged under the persistence models of ``harness.faults.memfs`` (strict, lost-dirent,
torn).  With recovery a fresh store runs the case's next op on each distinct strict state.
The bounded-exhaustive mode explores every short sequence over a small op alphabet.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memconform.reference.clock import ControlledClock
from memconform.reference.serve import Server
from memconform.reference.store import Store

from ..drivers.sandbox import SNAPSHOT_DIR
from ..oracles.crash_judge import (
    SHARED_REL,
    CrashFinding,
    CrashVerdict,
    Intent,
    State,
    check_crash_state,
    check_settled_state,
    is_lock,
    lock_age_ms,
)
from ..oracles.spec import INITIAL_INDEX, TOMBSTONES
from . import MODELS, NOW_MS
from .cases import HANDOFF_OLD, MESSAGES, SHARED_CFG, OpCase, entry, topic_text
from .doubles import Call
from .memfs import Effect, MemFs, Tree, dirent_variants, torn_variants

ROOT = "/mem"


def new_server(fs: MemFs, clock: ControlledClock) -> Server:
    """A fresh reference store on ``fs``, as a fresh process would load it (S-INV-10)."""
    env = {
        "PI_CODING_AGENT_DIR": f"{ROOT}/agent",
        "PI_SHARED_MEMORY_HOME": f"{ROOT}/home",
        "HOME": f"{ROOT}/home",
    }
    return Server(Store(env, fs=fs, clock=clock, diagnostics=lambda _line: None))


def run_op(server: Server, op: str, args: Mapping[str, Any]) -> tuple[bool, object]:
    """One protocol op in process: ``(ok, result or error dict)``, exactly as a driver answers."""
    answer, _ = server.answer(json.dumps({"id": 1, "op": op, "args": dict(args)}))
    ok = bool(answer.get("ok"))
    return ok, answer.get("result") if ok else answer.get("error")


@dataclass
class Recording:
    """A recorded run: the durable start, every effect since, and where the explored op begins."""

    start: Tree
    effects: list[Effect]
    calls: list[Call]
    effect_call: list[int]
    first: int
    result: tuple[bool, object]

    def crash_point(self, k: int) -> str:
        if k >= len(self.effects):
            return "after its last call"
        c = self.calls[self.effect_call[k]]
        return f"crash at {c.name}({(c.path or '').replace(ROOT + '/', '')})"


@dataclass
class ModelStats:
    """Counts for one persistence model."""

    states: int = 0
    distinct: int = 0
    violating: int = 0
    by_clause: Counter[str] = field(default_factory=Counter)
    weakness: Counter[str] = field(default_factory=Counter)
    allowed: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    recovered: int = 0
    recovery_failures: int = 0

    def add(self, verdict: CrashVerdict, where: str) -> None:
        self.states += 1
        bad = False
        for f in verdict.findings:
            key = f"{f.clause} {f.kind}"
            if f.severity == "violation":
                self.by_clause[key] += 1
                bad = True
                self.examples.setdefault(key, f"{where}: {f}")
            else:
                self.weakness[key] += 1
                self.examples.setdefault("weakness " + key, f"{where}: {f}")
        self.violating += bad
        for label in verdict.allowed:
            self.allowed[label] += 1


@dataclass
class Exploration:
    """Totals of an exploration, per model."""

    models: dict[str, ModelStats]
    sequences: int = 0
    crash_points: int = 0
    seconds: float = 0.0
    check_seconds: float = 0.0

    @property
    def states(self) -> int:
        return sum(m.states for m in self.models.values())

    @property
    def violations(self) -> int:
        return sum(m.violating + m.recovery_failures for m in self.models.values())

    def render(self) -> str:
        rate = self.states / self.check_seconds if self.check_seconds else 0.0
        lines = [
            f"{self.sequences} op sequences, {self.crash_points} crash points, {self.states} crash "
            f"states checked in {self.seconds:.1f} s ({rate:,.0f} states/s materialise+check)"
        ]
        for name, m in self.models.items():
            extra = f"; recovery run on {m.recovered}, {m.recovery_failures} failed" if m.recovered else ""
            lines.append(f"  {name:12s} {m.states:8d} states ({m.distinct} distinct), {m.violating} violating{extra}")
            for key, n in sorted(m.by_clause.items()):
                lines.append(f"      violation {key}: {n}  e.g. {m.examples[key]}")
            for key, n in sorted(m.weakness.items()):
                lines.append(f"      weakness  {key}: {n}  e.g. {m.examples['weakness ' + key]}")
            for key, n in sorted(m.allowed.items()):
                lines.append(f"      allowed   {key}: {n}")
        return "\n".join(lines)


def _touched(tree: Tree, e: Effect) -> list[str]:
    """Paths whose binding or content an effect changes."""
    op = e[0]
    if op == "write":
        return [p for p, ino in tree.names.items() if ino == e[1]]
    if op in ("rename", "link"):
        return [e[1], e[2]]
    if op == "fsync":
        return []
    return [e[1]]


class Explorer:
    """Runs ops on MemFs and checks every crash state of the explored op under each model.

    With ``recover`` each distinct strict state also gets a fresh store (the dead owner's lock
    aged 11 s, C-4) that runs the case's recovery op; the settled store is checked as well.
    """

    def __init__(
        self, *, recover: bool = True, models: Sequence[str] = MODELS, advance: Callable[[int], None] | None = None
    ) -> None:
        self.recover = recover
        self.models = tuple(models)
        self.advance = advance  # told of each op case or sequence explored (a progress line)
        self.result = Exploration({m: ModelStats() for m in self.models})
        self._seen: dict[str, set[int]] = {m: set() for m in self.models}

    @staticmethod
    def new_fs(state: Mapping[str, bytes]) -> tuple[MemFs, ControlledClock]:
        clock = ControlledClock(NOW_MS)
        return MemFs(ROOT, clock.now_ms).load(state), clock

    def record_case(self, case: OpCase) -> Recording:
        fs, clock = self.new_fs(case.files("python"))
        start = fs.tree.copy()
        result = run_op(new_server(fs, clock), case.op, case.args)
        return Recording(start, fs.effects, fs.calls, fs.effect_call, 0, result)

    # --- the states of one op ------------------------------------------------------------

    def explore(
        self, rec: Recording, intent: Intent, recovery: tuple[str, Mapping[str, Any]] | None, label: str
    ) -> None:
        """Every crash point of the op that starts at effect ``rec.first``, under each model."""
        t0 = time.perf_counter()
        tree = rec.start.copy()
        history: dict[str, set[bytes | None]] = {}
        for p, ino in tree.names.items():
            if tree.kinds[ino] == "file":
                history[p[len(ROOT) + 1 :]] = {tree.data[ino]}

        def step(e: Effect, versions: dict[str, set[bytes | None]], synced_only: bool) -> None:
            tree.apply(e)
            for p in _touched(tree, e):
                rel = p[len(ROOT) + 1 :]
                history.setdefault(rel, {None})
                ino = tree.names.get(p)
                seen = versions.setdefault(rel, set())
                if ino is None:
                    seen.add(None)
                elif tree.kinds[ino] == "file" and (not synced_only or tree.synced.get(ino, 0) == len(tree.data[ino])):
                    seen.add(tree.data[ino])

        for e in rec.effects[: rec.first]:
            step(e, history, False)
        before = tree.state(ROOT)
        published: dict[str, set[bytes | None]] = {}
        points: list[tuple[int, State, Tree]] = [(rec.first, before, tree.copy())]
        for k in range(rec.first, len(rec.effects)):
            step(rec.effects[k], published, True)
            points.append((k + 1, tree.state(ROOT), tree.copy()))
        final = points[-1][1]
        for rel in set(before) | set(final):
            if before.get(rel) != final.get(rel):
                published.setdefault(rel, set()).add(final.get(rel))
        pub = {k: frozenset(v) for k, v in published.items()}
        hist = {k: frozenset(v) for k, v in history.items()}
        # binding history per path up to each crash point (for the lost-dirent model)
        btree = rec.start.copy()
        bhist: dict[str, list[int | None]] = {}
        marks: list[dict[str, list[int | None]]] = []
        for k, e in enumerate(rec.effects):
            if k >= rec.first:
                marks.append({p: list(v) for p, v in bhist.items()})
            if e[0] in ("create", "rename", "link", "unlink", "mkdir", "put"):
                paths = [e[1], e[2]] if e[0] in ("rename", "link") else [e[1]]
                for p in paths:
                    if e[0] == "put":
                        bhist.pop(p, None)
                    else:
                        bhist.setdefault(p, [btree.names.get(p)])
                btree.apply(e)
                for p in paths:
                    if e[0] != "put":
                        bhist[p].append(btree.names.get(p))
            else:
                btree.apply(e)
        marks.append(bhist)
        self.result.check_seconds += time.perf_counter() - t0
        for i, (k, state, snap) in enumerate(points):
            self.result.crash_points += 1
            where = f"{label} {rec.crash_point(k)}"
            if "strict" in self.result.models:
                self._check("strict", state, before, pub, hist, intent, where, False, recovery)
            if "torn" in self.result.models:
                for variant, what in torn_variants(snap, ROOT):
                    self._check("torn", variant, before, pub, hist, intent, f"{where}, {what}", False, None)
            if "lost-dirent" in self.result.models:
                for variant, what in dirent_variants(snap, marks[i], ROOT):
                    self._check("lost-dirent", variant, before, pub, hist, intent, f"{where}, {what}", True, None)

    def _check(
        self,
        model: str,
        state: State,
        before: State,
        published: Mapping[str, frozenset[bytes | None]],
        history: Mapping[str, frozenset[bytes | None]],
        intent: Intent,
        where: str,
        power_loss: bool,
        recovery: tuple[str, Mapping[str, Any]] | None,
    ) -> None:
        t0 = time.perf_counter()
        stats = self.result.models[model]
        key = hash((frozenset(state.items()), frozenset(before.items())))
        fresh = key not in self._seen[model]
        if fresh:
            self._seen[model].add(key)
            stats.distinct += 1
        verdict = check_crash_state(state, before, published, intent, history=history, power_loss=power_loss)
        stats.add(verdict, where)
        self.result.check_seconds += time.perf_counter() - t0
        if fresh and self.recover and recovery is not None:
            stats.recovered += 1
            findings = self.recover_from(state, before, intent, recovery)
            if findings:
                stats.recovery_failures += 1
                for f in findings:
                    key2 = f"recovery {f.clause} {f.kind}"
                    stats.by_clause[key2] += 1
                    stats.examples.setdefault(key2, f"{where}: {f}")

    def recover_from(
        self, state: State, before: State, intent: Intent, recovery: tuple[str, Mapping[str, Any]]
    ) -> list[CrashFinding]:
        """A fresh process after the crash: age the dead owner's lock (C-4), run, check."""
        fs, clock = self.new_fs(state)
        fs.pid += 1  # the crashed process is gone; this is another one
        for rel, data in state.items():
            if is_lock(rel):
                fs.set_mtime(rel, clock.now_ms() - lock_age_ms(data))
        ok, result = run_op(new_server(fs, clock), *recovery)
        out = check_settled_state(fs.state(), before, intent, live_pids=(fs.pid,))
        if not ok or (isinstance(result, str) and "busy" in result):
            out.append(CrashFinding("S-INV-8", "not-recoverable", recovery[0], f"recovery answered {result!r}"))
        return out

    # --- drivers ---------------------------------------------------------------------------

    def explore_case(self, case: OpCase) -> Exploration:
        """All crash states of one op case."""
        started = time.perf_counter()
        rec = self.record_case(case)
        self.result.sequences += 1
        self.explore(rec, case.intent, case.recovery(), case.name)
        self.result.seconds += time.perf_counter() - started
        if self.advance is not None:
            self.advance(1)
        return self.result

    def exhaustive(self, topics: int = 2, max_ops: int = 3, starts: Sequence[str] | None = None) -> Exploration:
        """Every sequence of ≤ ``max_ops`` ops over ``topics`` topics from each start state,
        every crash point of its last op (crashes inside earlier ops are those of the shorter
        sequences), every model; power-loss models may lose any earlier op's entries too."""
        started = time.perf_counter()
        alphabet = sequence_alphabet([chr(ord("A") + i) for i in range(topics)])
        for name in starts or tuple(START_STATES):
            fs, clock = self.new_fs(START_STATES[name])
            self._dfs(fs, clock, fs.tree.copy(), alphabet, [], max_ops, name)
        self.result.seconds += time.perf_counter() - started
        return self.result

    def _dfs(
        self,
        fs: MemFs,
        clock: ControlledClock,
        start: Tree,
        alphabet: Sequence[SeqOp],
        done: list[str],
        depth: int,
        name: str,
    ) -> None:
        if depth == 0:
            return
        for sop in alphabet:
            child = fs.clone()
            if sop.prepare is not None:
                sop.prepare(child)
            first = len(child.effects)
            result = run_op(new_server(child, clock), sop.op, sop.args)
            rec = Recording(start, child.effects, child.calls, child.effect_call, first, result)
            self.result.sequences += 1
            self.explore(rec, sop.intent, sop.recovery, f"[{name}] " + " ; ".join([*done, sop.label]))
            if self.advance is not None:
                self.advance(1)
            self._dfs(child, clock, start, alphabet, [*done, sop.label], depth - 1, name)


# --- the bounded-exhaustive alphabet ---------------------------------------------------------


@dataclass(frozen=True)
class SeqOp:
    """One step of an explored sequence; ``prepare`` edits the store as a user would (not
    recorded, so it is durable and never a crash point)."""

    label: str
    op: str
    args: dict[str, Any]
    intent: Intent
    recovery: tuple[str, dict[str, Any]] | None
    prepare: Callable[[MemFs], None] | None = None


def _enable_shared(fs: MemFs) -> None:
    fs.put("agent/memory.jsonc", SHARED_CFG.encode())


def exhaustive_size(topics: int, max_ops: int, starts: int = 0) -> int:
    """How many sequences ``Explorer.exhaustive`` explores (its progress total): every
    sequence of 1 to ``max_ops`` letters of the alphabet, from each start state."""
    letters = len(sequence_alphabet([chr(ord("A") + i) for i in range(topics)]))
    per_start, sequences_of_d = 0, 1
    for _ in range(max_ops):
        sequences_of_d *= letters
        per_start += sequences_of_d
    return (starts or len(START_STATES)) * per_start


def sequence_alphabet(topics: Sequence[str]) -> list[SeqOp]:
    ops: list[SeqOp] = []
    for t in topics:
        fname = t.lower() + ".md"
        w = Intent("write", writes=frozenset({fname}))
        args = {"topic": t, "content": f"{t} body", "summary": f"about {t}"}
        ops.append(SeqOp(f"write {t}", "write_memory", args, w, ("write_memory", args)))
        rargs = {**args, "content": f"{t} new", "mode": "replace"}
        ops.append(SeqOp(f"replace {t}", "write_memory", rargs, w, ("write_memory", rargs)))
        rm = Intent("remove", removes=frozenset({"*"}))
        ops.append(SeqOp(f"remove {t}", "remove_memory", {"topic": t}, rm, ("remove_memory", {"topic": t})))
        for flag in (True, False):
            pargs = {"topic": t, "pin": flag}
            ops.append(SeqOp(f"{'pin' if flag else 'unpin'} {t}", "pin_memory", pargs, Intent("pin"), ("pin_memory", pargs)))
    retire = Intent("retire", removes=frozenset({"last-session-recap.md"}))
    ops.append(SeqOp("retire", "retire_recaps", {}, retire, ("retire_recaps", {})))
    ops.append(SeqOp("handoff", "write_handoff", {"messages": MESSAGES, "reason": "manual"}, Intent("handoff"), ("read_handoff", {})))
    ops.append(SeqOp("consolidate", "replace_latest_handoff", {"summary": "S", "reason": "threshold"}, Intent("handoff"), ("read_handoff", {})))
    ops.append(SeqOp("enable shared", "memory_dir", {}, Intent("carry-over"), ("memory_dir", {}), _enable_shared))
    return ops


START_STATES: dict[str, State] = {
    "fresh": {"agent": SNAPSHOT_DIR, "home": SNAPSHOT_DIR},
    "shared": {
        "agent/memory.jsonc": SHARED_CFG.encode(),
        f"{SHARED_REL}/MEMORY.md": (
            INITIAL_INDEX + entry("Recap", "last-session-recap.md", "r") + "\n"
        ).encode(),
        f"{SHARED_REL}/last-session-recap.md": topic_text("Recap", "r", "recap").encode(),
        f"{SHARED_REL}/{TOMBSTONES}": b"b.md\n",
        f"{SHARED_REL}/b.md": topic_text("B", "old b", "old").encode(),
        "agent/HANDOFF.md": HANDOFF_OLD.encode(),
    },
}
