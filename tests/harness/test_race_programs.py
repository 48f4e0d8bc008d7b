"""Generated race programs (issue 29 item 1): drawn from a seed over topics the writers
share, shrunk to the fewest ops, exported with their store, and run on the reference clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from memconform.harness.drivers.peers import PeerSpec
from memconform.harness.faults.strace import strace_unavailable
from memconform.harness.interleave import programs
from memconform.harness.interleave import race_files as rf
from memconform.harness.interleave.scheduler import RunResult, Situation, run_schedule
from memconform.harness.interleave.strategies import DONE, RandomWalk, Step
from memconform.harness.interleave.tracer import Call
from memconform.harness.oracles.findings import VIOLATION, Finding

PY = [PeerSpec.parse("python")]
SHARED, CARRY = programs.FAMILIES[0], programs.FAMILIES[2]


def test_a_seed_reproduces_a_program_and_the_writers_share_topics() -> None:
    assert programs.generate(SHARED, 7, PY) == programs.generate(SHARED, 7, PY)
    drawn = [programs.generate(SHARED, s, PY) for s in range(40)]
    assert len({programs.describe(p) for p in drawn}) > 30
    assert any(len({a["topic"] for s in p.ops for _, a in s}) == 1 for p in drawn), "all writers on one topic"
    shown = " ".join(programs.describe(p) for p in drawn)
    for how in ("append", "replace", "append+pin", "remove", "pin", "unpin"):
        assert f"{how} '" in shown
    assert {p.lock for p in drawn} == {"none", "dead", "empty"}


def test_a_local_program_falls_back_to_the_shared_store_when_the_writers_have_two_local_stores() -> None:
    local = programs.FAMILIES[1]
    mixed = [PeerSpec.parse("pi:/x/memory-core.mjs"), PeerSpec.parse("opencode:/y/ocl-memory.mjs")]
    assert programs.generate(local, 3, PY).store == "local"
    assert all(programs.generate(local, s, mixed).store == "shared" for s in range(10) if
               programs.generate(local, s, mixed).writers > 1)
    assert programs.generate(CARRY, 1, PY).carry


def _run(sit: Situation, found: list[Finding]) -> RunResult:
    return RunResult(sit, ["python"] * sit.writers, {}, [Step("w0", DONE, ("w0",))], [], found, 1, 0, 0.0)


def test_a_finding_shrinks_to_the_fewest_ops_that_still_show_it() -> None:
    sit = Situation("program-shared-9", "none", 0.0,
                    ((("remove_memory", {"topic": "A"}), ("write_memory", {"topic": "A", "content": "tok"})),
                     (("pin_memory", {"topic": "A", "pin": True}),)), "")
    bad = Finding("lock-protocol", VIOLATION, clause="S-LOCK-2")

    def run(cand: Situation) -> RunResult:  # the breach needs the remove, nothing else
        has = any(op == "remove_memory" for s in cand.ops for op, _ in s)
        return _run(cand, [bad] if has else [])

    small, tries = programs.shrink_ops(run, _run(sit, [bad]), "lock-protocol", budget_s=5.0)
    assert small.situation.ops == ((("remove_memory", {"topic": "A"}),),) and tries >= 2
    assert programs.op_count(sit) == 3 and programs.op_count(small.situation) == 1


def test_a_program_regression_keeps_its_store_and_carry(tmp_path: Path) -> None:
    sit = programs.generate(CARRY, 2, PY)
    run = _run(sit, [])
    kinds = [{"kind": "python", "name": "memconform-reference", "version": "0"}] * sit.writers
    path = rf.export(Finding("lock-protocol", VIOLATION), run, run, kinds, False, tmp_path)
    again = rf.load(path).situation
    assert (again.store, again.carry, again.ops) == (sit.store, sit.carry, sit.ops)


def test_a_second_stores_names_are_tagged_so_two_locks_never_read_as_one() -> None:
    roots = ("/s/home/.agents/memory", "/s/agent/memory")
    assert Call(1, "openat", ("/s/agent/memory/.lock",), "3", True).short(roots) == "create(L1:.lock) = ok"
    assert Call(1, "openat", ("/s/home/.agents/memory/.lock",), "3", True).short(roots) == "create(.lock) = ok"


@pytest.mark.skipif(strace_unavailable() is not None, reason=f"{strace_unavailable()}")
def test_a_carry_over_program_runs_clean_on_the_reference_and_traces_the_local_store() -> None:
    sit = programs.generate(CARRY, 2, PY)
    r = run_schedule(PY, sit, RandomWalk(2), timeout=20.0)
    assert not r.void and r.held > 0
    assert any("/agent/memory/" in p for _, _, c in r.trace for p in c.paths), "the local store is traced"
    assert any(s.call.startswith("create(L1:.lock)") for s in r.steps), "the carry-over took the local lock"
    assert [f for f in r.findings if f.severity == VIOLATION] == []


def test_the_bench_finds_planted_copies_by_layout_and_renders_a_row_per_class(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from memconform.harness.bench import race_defects as rd

    monkeypatch.delenv(rd.ENV, raising=False)
    assert rd.mutants() == [] and "no planted copies" in rd.render_defects([], 60.0)[0]
    (tmp_path / "openpi-no-excl" / "extensions").mkdir(parents=True)
    (tmp_path / "openpi-no-excl" / "extensions" / "memory-core.mjs").write_text("")
    (tmp_path / "stray").mkdir()
    monkeypatch.setenv(rd.ENV, str(tmp_path))
    [(peer, cls, spec)] = rd.mutants()
    assert (peer, cls, spec.kind) == ("openpi", "no-excl", "pi")
    lines = rd.render_defects([{"peer": peer, "class": cls, "random": 1.25, "pct": None, "nemesis": None}], 60.0)
    assert "| openpi | no-excl | 1.2 s | > 60 s | > 60 s |" in lines
