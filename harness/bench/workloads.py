"""Benchmarks (``make bench``): every comparison measured side by side in one run (issue 7).

Each workload runs in its own subprocess (so its peak RSS is its own) and prints one JSON
object; the orchestrator renders ``benchmarks/RESULTS.md`` with median, min and max over the
rounds, and ratios computed from figures of the same run on the same machine.
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memconform.reference import Store
from memconform.reference.clock import ControlledClock
from memconform.reference.edge import edge_fs, edge_index_engine
from memconform.reference.fs import Fs
from memconform.reference.index_engine import IndexEngine, PlainEngine
from memconform.reference.index_view import ViewEngine

from ..drivers.peers import PeerSpec, configured_peers, start_driver
from ..drivers.sandbox import Sandbox
from ..gate.scenarios import DEFAULT_NOW, DEFAULT_NOW_MS

ROUNDS = 5
NOW = DEFAULT_NOW_MS


@dataclass
class Series:
    """Seconds per round of one measured thing; ``per`` ops per round."""

    name: str
    seconds: list[float] = field(default_factory=list)
    per: int = 1

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    def ops_per_s(self) -> float:
        return self.per / self.median if self.median else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "seconds": self.seconds, "per": self.per}


# --- index seeding -------------------------------------------------------------------------


def seed_store(root: Path, entries: int, directory: str = "agent/memory") -> list[str]:
    """A store of ``entries`` topics written directly (fast), valid for every implementation."""
    d = root / directory
    d.mkdir(parents=True, exist_ok=True)
    (root / "agent" / "memory.jsonc").write_text('{"stale_after_days": 0}\n')
    names = [f"Topic {i:05d}" for i in range(entries)]
    lines = ["# Memory Index", "", ""]
    for i, name in enumerate(names):
        fname = f"topic-{i:05d}.md"
        (d / fname).write_text(
            f'---\nmetadata:\n  node_type: memory\nname: "{name}"\ndescription: "s"\n'
            f"last_updated: 2026-08-07T01:02:50+00:00\ncreated: 2026-08-07T01:02:50+00:00\n---\n\nbody {i}\n"
        )
        lines.append(f"- [{name}]({fname}) 2026-08-07T01:02:50+00:00 -- summary of {name}")
    (d / "MEMORY.md").write_text("\n".join(lines))
    return names


def _write_args(names: list[str], n: int) -> list[tuple[str, dict[str, Any]]]:
    return [("write_memory", {"topic": names[i % len(names)], "content": f"c{i}", "summary": "s"}) for i in range(n)]


def _pin_args(names: list[str], n: int) -> list[tuple[str, dict[str, Any]]]:
    return [("pin_memory", {"topic": names[i % len(names)], "pin": (i // len(names)) % 2 == 0}) for i in range(n)]


def _remove_args(names: list[str], n: int) -> list[tuple[str, dict[str, Any]]]:
    return [("remove_memory", {"topic": names[i]}) for i in range(n)]


# --- W0: the floors --------------------------------------------------------------------------

TOPIC_BYTES = b'---\nname: "x"\n---\n\n' + b"body\n" * 20


def index_bytes(entries: int) -> bytes:
    lines = (f"- [Topic {i:05d}](topic-{i:05d}.md) 2026-08-07T01:02:50+00:00 -- summary of Topic {i:05d}" for i in range(entries))
    return ("# Memory Index\n\n" + "\n".join(lines)).encode()


def floor_dir(entries: int) -> Path:
    """A directory holding as many topic files as the store: a write publishes into one."""
    d = Path(tempfile.mkdtemp(prefix="memconform-floor-"))
    for i in range(entries):
        (d / f"topic-{i:05d}.md").write_bytes(TOPIC_BYTES)
    (d / "memory.jsonc").write_bytes(b'{"stale_after_days": 0}\n')
    return d


def _publish(d: str, name: str, data: bytes, k: int, checked: bool = False) -> None:
    """fsync'd temp-then-rename; ``checked`` adds S-IO-4's target re-checks and temp unlink."""
    target = f"{d}/{name}"
    if checked:
        os.lstat(target)
    tmp = f"{target}.tmp-{k}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, data)
    os.fsync(fd)
    os.close(fd)
    if checked:
        os.lstat(target)
    os.rename(tmp, target)
    if checked:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass


def floor_op(d: str, topic: str, topic_bytes: bytes, index: bytes, k: int) -> None:
    """What a write cannot avoid: lock create+unlink, two fsync'd temp-then-rename publishes."""
    fd = os.open(f"{d}/.lock", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    os.write(fd, b"1\t2\t3")
    os.close(fd)
    _publish(d, topic, topic_bytes, k)
    _publish(d, "MEMORY.md", index, k)
    os.unlink(f"{d}/.lock")


def _read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    data = os.read(fd, os.fstat(fd).st_size + 1)
    os.close(fd)
    return data


def spec_floor_op(d: str, topic: str, topic_bytes: bytes, index: bytes, k: int) -> None:
    """The floor plus every other syscall SPEC makes a write issue, with no logic between.

    The configuration is probed and read twice (S-CFG-9, S-IDX-7), the directory created
    (S-PATH-8), index and topic probed and read (S-WRITE-5..8), each publish checks its target
    before and after and unlinks its temporary (S-IO-4), and the release reads the lock back
    (S-LOCK-5).  No implementation that follows SPEC can do less.
    """
    cfg = f"{d}/memory.jsonc"
    os.stat(cfg)
    _read(cfg)
    try:
        os.mkdir(d)
    except FileExistsError:
        os.stat(d)
    fd = os.open(f"{d}/.lock", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    os.write(fd, b"1\t2\t3")
    os.close(fd)
    os.stat(f"{d}/MEMORY.md")
    _read(f"{d}/MEMORY.md")
    os.stat(f"{d}/{topic}")
    os.lstat(f"{d}/{topic}")
    _read(f"{d}/{topic}")
    _publish(d, topic, topic_bytes, k, checked=True)
    os.stat(cfg)
    _read(cfg)
    _publish(d, "MEMORY.md", index, k, checked=True)
    _read(f"{d}/.lock")
    os.unlink(f"{d}/.lock")


FloorOp = Callable[[str, str, bytes, bytes, int], None]


def floor_round(entries: int, ops: int, op: FloorOp = floor_op) -> float:
    d = floor_dir(entries)
    index = index_bytes(entries)
    _publish(str(d), "MEMORY.md", index, -1)
    names = [f"topic-{i % max(entries, 1):05d}.md" for i in range(ops)]
    t0 = time.perf_counter()
    for k, name in enumerate(names):
        op(str(d), name, TOPIC_BYTES, index, k)
    seconds = time.perf_counter() - t0
    shutil.rmtree(d)
    return seconds


def w0_floor(entries: int, ops: int) -> list[Series]:
    floor, spec = Series(f"floor@{entries}", per=ops), Series(f"spec floor@{entries}", per=ops)
    for _ in range(ROUNDS):
        floor.seconds.append(floor_round(entries, ops))
        spec.seconds.append(floor_round(entries, ops, spec_floor_op))
    return [floor, spec]


# --- W1: store ops ---------------------------------------------------------------------------


# The in-process contenders and the seams each one runs (reference.edge chooses the first).
IN_PROCESS = {
    "reference": "index views and the directory watch, as serve runs them",
    "reference-listing": "index views, one directory listing per maintenance",
    "reference-plain": "the plain S-IDX scans over the plain Fs (no index views, no watch)",
}


def in_process_store(impl: str, env: dict[str, str]) -> Store:
    """The reference as ``impl`` names it (``IN_PROCESS``), on a frozen clock, silent."""
    fs: Fs
    engine: IndexEngine
    if impl == "reference":
        fs, engine = edge_fs(os.environ), edge_index_engine(os.environ)
    elif impl == "reference-listing":
        fs, engine = Fs(), ViewEngine()
    else:
        fs, engine = Fs(), PlainEngine()
    return Store(env, fs=fs, clock=ControlledClock(NOW), diagnostics=lambda _line: None, index_engine=engine)


def _in_process(root: Path, impl: str) -> Callable[[str, dict[str, Any]], object]:
    store = in_process_store(impl, Sandbox(root).env())
    calls: dict[str, Callable[..., object]] = {
        "write_memory": lambda a: store.execute_write_memory(a["topic"], a["content"], a["summary"]),
        "pin_memory": lambda a: store.execute_pin_memory(a["topic"], a["pin"]),
        "remove_memory": lambda a: store.execute_remove_memory(a["topic"]),
    }
    return lambda op, args: calls[op](args)


Script = Callable[[list[str]], list[tuple[str, dict[str, Any]]]]


def phase_round(impl: str, entries: int, script_for: Script) -> tuple[float, int]:
    """Seconds for one phase on a freshly seeded store, and its number of ops."""
    root = Path(tempfile.mkdtemp(prefix="memconform-bench-"))
    (root / "agent").mkdir()
    (root / "home").mkdir()
    names = seed_store(root, entries)
    script = script_for(names)
    try:
        if impl in IN_PROCESS:
            call = _in_process(root, impl)
            t0 = time.perf_counter()
            for op, a in script:
                call(op, a)
            return time.perf_counter() - t0, len(script)
        spec = PeerSpec("python") if impl == "serve" else PeerSpec.parse(impl)
        with start_driver(spec, Sandbox(root).env(), cwd=str(root), timeout=60) as d:
            d.call("set_clock", {"now": DEFAULT_NOW, "mode": "frozen", "tz": "UTC"})
            t0 = time.perf_counter()
            for op, a in script:
                d.call(op, a)
            return time.perf_counter() - t0, len(script)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def interleaved(entries: int, ops: int, contenders: dict[str, tuple[str, Script]], floors: bool = True) -> list[Series]:
    """Every contender once per round, floors first: drift on a noisy machine hits all alike."""
    out: dict[str, Series] = {}
    for _ in range(ROUNDS):
        if floors:
            for name, op in (("floor", floor_op), ("spec floor", spec_floor_op)):
                out.setdefault(name, Series(f"{name}@{entries}", per=ops)).seconds.append(floor_round(entries, ops, op))
        for name, (impl, script_for) in contenders.items():
            seconds, n = phase_round(impl, entries, script_for)
            out.setdefault(name, Series(name, per=n)).seconds.append(seconds)
    return list(out.values())


def w1(impls: list[str], ops: int = 1000) -> list[Series]:
    phases: dict[str, tuple[str, Script]] = {}
    for impl in impls:
        phases[f"{impl}:write"] = (impl, lambda n: _write_args(n, ops))
        phases[f"{impl}:pin"] = (impl, lambda n: _pin_args(n, ops))
    series = interleaved(300, ops, phases)
    removes = {f"{impl}:remove": (impl, lambda n: _remove_args(n, ops)) for impl in impls}
    return series + interleaved(300 + ops, ops, removes, floors=False)


def w1_curve(impls: list[str], ops: int = 200) -> list[Series]:
    out = []
    for entries in (10, 100, 300, 1000):
        contenders = {f"{impl}:write@{entries}": (impl, lambda n: _write_args(n, ops)) for impl in impls}
        out += interleaved(entries, ops, contenders)
    return out


PHASES: dict[str, Callable[[list[str], int], list[tuple[str, dict[str, Any]]]]] = {
    "write": _write_args, "pin": _pin_args, "remove": _remove_args,
}


def syscalls_per_op(impl: str, phase: str, entries: int = 300, ops: int = 100) -> dict[str, float]:
    """``strace -c -f`` over a serve/driver run, minus a run with no ops, per op."""
    if shutil.which("strace") is None:
        return {}

    def count(n: int) -> dict[str, int]:
        root = Path(tempfile.mkdtemp(prefix="memconform-strace-"))
        (root / "agent").mkdir()
        (root / "home").mkdir()
        names = seed_store(root, entries)
        out = root / "strace.txt"
        spec = PeerSpec("python") if impl == "serve" else PeerSpec.parse(impl)
        wrapper = ["strace", "-f", "-c", "-o", str(out)]
        with start_driver(spec, Sandbox(root).env(), cwd=str(root), timeout=60, wrapper=wrapper) as d:
            for op, a in PHASES[phase](names, n):
                d.call(op, a)
        calls: dict[str, int] = {}
        for line in out.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 5 and parts[-1].isidentifier() and parts[3].isdigit():
                calls[parts[-1]] = int(parts[3])
            elif len(parts) >= 4 and parts[-1].isidentifier() and parts[2].isdigit():
                calls[parts[-1]] = int(parts[2])
        shutil.rmtree(root, ignore_errors=True)
        return calls

    base, loaded = count(0), count(ops)
    per = {k: (loaded.get(k, 0) - base.get(k, 0)) / ops for k in loaded}
    per = {k: round(v, 2) for k, v in per.items() if v > 0.05}
    per["total"] = round(sum(per.values()), 1)
    return per


# --- W2: crash exploration ---------------------------------------------------------------


def w2() -> dict[str, Any]:
    """States per second of the in-process explorer, crash points per second with real kills,
    and the bounded exhaustive run (2 topics, up to 3 ops, every crash point, every model)."""
    from ..faults.campaigns import crash_runs
    from ..faults.cases import CASES
    from ..faults.explorer import Explorer
    from ..faults.strace import strace_unavailable

    explorer = Series("explorer: crash states checked, all op kinds, 3 models (one core)")
    for _ in range(ROUNDS):
        ex = Explorer(recover=False)
        t0 = time.perf_counter()
        for case in CASES.values():
            ex.explore_case(case)
        explorer.seconds.append(time.perf_counter() - t0)
        explorer.per = ex.result.states
    t0 = time.perf_counter()
    exhaustive = Explorer(recover=False).exhaustive(topics=2, max_ops=3)
    out: dict[str, Any] = {
        "series": [explorer.as_dict()],
        "exhaustive": {
            "states": exhaustive.states, "crash_points": exhaustive.crash_points,
            "sequences": exhaustive.sequences, "seconds": time.perf_counter() - t0,
            "violations": exhaustive.violations,
        },
    }
    if strace_unavailable() is None:
        kills = Series("real kills: crash points (python serve, write-create, no recovery)")
        for _ in range(ROUNDS):
            t0 = time.perf_counter()
            report = crash_runs(PeerSpec("python"), CASES["write-create"], with_recovery=False)
            kills.seconds.append(time.perf_counter() - t0)
            kills.per = len(report.points)
        out["series"].append(kills.as_dict())
    return out


# --- W3: writers ----------------------------------------------------------------------------


def w3(ops: int = 200, rounds: int = ROUNDS) -> list[dict[str, Any]]:
    from ..writers.engine import interop

    rows = []
    configs: list[tuple[str, list[PeerSpec]]] = [(str(n), [PeerSpec("python")]) for n in (1, 2, 4, 8, 16)]
    if configured_peers():
        configs.append(("16 mixed (python + JS peers)", [PeerSpec("python"), *configured_peers()]))
    for n, peers in configs:
        writers = int(n.split()[0])
        rates, busy, check_s, lost, dup, verdicts = [], [], [], 0, 0, set()
        for r in range(rounds):
            res = interop(peers, writers=writers, ops=ops, seed=r, check_budget=30, shared=len(peers) > 1)
            rates.append(res.total_ops / res.seconds)
            busy.append(res.busy_share)
            lost += len(res.lost)
            dup += len(res.duplicated)
            if res.verdict is not None:
                check_s.append(res.verdict.seconds)
                verdicts.add(res.verdict.status)
        rows.append({
            "writers": n, "ops_per_s": rates, "busy_share": busy, "lost": lost, "duplicated": dup,
            "check_s": check_s, "verdicts": sorted(verdicts),
        })
    return rows


# --- W4: history checking ---------------------------------------------------------------------


def synthetic_history(n_ops: int, topics: int, writers: int, seed: int) -> list[Any]:
    """A linearizable history: ops applied to the model in a random order, with overlapping
    intervals around their linearization points (so the checker has real choices)."""
    from ..checker.history import Op
    from ..oracles import kind_model as model

    rng = random.Random(seed)
    names = [f"Topic {chr(65 + i)}{i}" for i in range(topics)]
    state = model.State()
    ops: list[Op] = []
    t = 0
    for i in range(n_ops):
        topic = rng.choice(names)
        roll = rng.random()
        args: dict[str, Any]
        if roll < 0.6:
            op, args = "write_memory", {"topic": topic, "content": f"c{i}", "summary": "s"}
        elif roll < 0.8:
            op, args = "remove_memory", {"topic": topic}
        else:
            op, args = "pin_memory", {"topic": topic, "pin": rng.random() < 0.5}
        state, kind = model.apply(state, op, args)
        point = t + 10
        text = {
            "created": f'Created memory topic "{topic}" (x.md).', "updated": f'Updated memory topic "{topic}" (x.md).',
            "removed": f'Removed "{topic}" from the index. Topic file is preserved on disk.',
            "not_found": f'No entry found matching "{topic}".', "no_index": "No memory index found.",
            "pinned_refused": f'Cannot remove "{topic}" — it is pinned.', "pinned": f'Pinned "{topic}".',
            "unpinned": f'Unpinned "{topic}".', "already_pinned": f'"{topic}" is already pinned.',
            "already_unpinned": f'"{topic}" is already unpinned.',
        }[kind]
        ops.append(Op(i, f"p{i % writers}", op, args, point - rng.randint(1, 15), point + rng.randint(1, 15), "ok", text))
        t += 10
    return ops


def w4() -> list[Series]:
    from ..checker.store_model import check

    out = []
    for n, partition in ((1000, True), (10000, True), (100000, True), (1000, False)):
        s = Series(f"{n // 1000}k ops {'partitioned' if partition else 'whole store'}", per=n)
        for r in range(ROUNDS):
            ops = synthetic_history(n, 8 if partition else 3, 16, r)
            t0 = time.perf_counter()
            verdict = check(ops, budget_s=120, partition=partition, shrink=False)
            s.seconds.append(time.perf_counter() - t0)
            assert verdict.status == "linearizable", verdict.summary()
        out.append(s)
    return out


# --- W5: the corpus ------------------------------------------------------------------------


def w5() -> list[dict[str, Any]]:
    """Corpus wall time per implementation, virtual and real time side by side (bench.corpus)."""
    from .corpus import w5 as corpus

    return corpus()


# --- orchestration -----------------------------------------------------------------------------


def impls() -> list[str]:
    found = [*IN_PROCESS, "serve"]
    found += [p.name for p in configured_peers() if p.kind == "pi"]
    return found


WORKLOADS: dict[str, Callable[[], Any]] = {
    "w0": lambda: [s.as_dict() for s in w0_floor(300, 1000)],
    "w1": lambda: [s.as_dict() for s in w1(impls())],
    "w1_curve": lambda: [s.as_dict() for s in w1_curve(impls())],
    "w1_syscalls": lambda: {
        f"{i}:{phase}": syscalls_per_op(i, phase) for i in impls() if not i.startswith("reference") for phase in PHASES
    },
    "w2": w2,
    "w2_trace": lambda: __import__("memconform.harness.bench.trace", fromlist=["w2_trace"]).w2_trace(),
    "w3": w3,
    "w3_nemesis": lambda: __import__("memconform.harness.bench.nemesis", fromlist=["w3_nemesis"]).w3_nemesis(),
    "w6_races": lambda: __import__("memconform.harness.bench.races", fromlist=["w6_races"]).w6_races(),
    "w4": lambda: [s.as_dict() for s in w4()],
    "w5": w5,
}


def run_workload(name: str) -> dict[str, Any]:
    """Run one workload in a subprocess; its result with the peak RSS of it and its children."""
    proc = subprocess.run(
        [sys.executable, "-m", "memconform.harness.bench.workloads", name], capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[3])},
    )
    if proc.returncode != 0:
        return {"error": proc.stderr[-2000:]}
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def _main_workload(name: str) -> None:
    data = WORKLOADS[name]()
    self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    child_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(json.dumps({"data": data, "rss_kb": self_kb, "children_rss_kb": child_kb}))


if __name__ == "__main__":
    _main_workload(sys.argv[1])
