"""The lock-protocol oracle (issue 29): one test per rule, on call sequences written out and
on a real node writer whose broken step is planted (tests/harness/lock_writer.mjs); the same
runs of the reference show no breach."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from memconform.harness.drivers.peers import PeerSpec
from memconform.harness.faults.strace import strace_unavailable
from memconform.harness.interleave.scheduler import Situation, run_schedule
from memconform.harness.interleave.strategies import RandomWalk
from memconform.harness.interleave.tracer import Call, LineParser
from memconform.harness.oracles.lock_protocol import OpTrace, judge

D = "/s/memory"
PID = 4242
LOCK = f"{D}/.lock"
INDEX = f"{D}/MEMORY.md"


def c(name: str, path: str, ret: str = "0", flags: str = "", data: str = "", *more: str) -> Call:
    excl = "O_EXCL" in flags and "O_CREAT" in flags
    return Call(1, name, (path, *more), ret, excl, flags, data)


TAKE = [c("openat", LOCK, "3", "O_WRONLY|O_CREAT|O_EXCL"), c("write", LOCK, "20")]
RELEASE = [c("openat", LOCK, "4", "O_RDONLY"), c("read", LOCK, "20", data=f"{PID}\t17"), c("unlink", LOCK)]
WORK = [c("openat", INDEX, "5", "O_RDONLY"), c("read", INDEX, "72", data="# Memory"),
        c("openat", f"{INDEX}.tmp-1-a", "5", "O_WRONLY|O_CREAT|O_EXCL"), c("write", f"{INDEX}.tmp-1-a", "80"),
        Call(1, "rename", (f"{INDEX}.tmp-1-a", INDEX), "0")]
FAILED = [c("openat", LOCK, "-1 EEXIST (File exists)", "O_WRONLY|O_CREAT|O_EXCL")]
OBSERVE = [c("newfstatat", LOCK, "0", "AT_SYMLINK_NOFOLLOW"), c("openat", LOCK, "4", "O_RDONLY"),
           c("read", LOCK, "20", data="4194305\t")]
PROBE = [Call(1, "kill", ("signal 0",), "-1 ESRCH (No such process)")]
RECHECK = [c("newfstatat", LOCK, "0", "AT_SYMLINK_NOFOLLOW")]
UNLINK = [c("unlink", LOCK)]


def breaches(calls: list[Call], op: str = "write_memory") -> list[tuple[str, str]]:
    found = judge([OpTrace("w0", "impl", PID, op, list(enumerate(calls)))], (D,))
    return [(f.clause, f.evidence) for f in found]


def test_the_protocol_followed_step_by_step_is_no_breach() -> None:
    assert breaches(TAKE + WORK + RELEASE) == []
    assert breaches(FAILED + OBSERVE + PROBE + RECHECK + UNLINK + TAKE + WORK + RELEASE) == []


def test_a_change_without_the_lock_is_s_inv_3() -> None:
    found = breaches(WORK)
    assert [cl for cl, _ in found] == ["S-INV-3", "S-LOCK-2"]
    assert "openat(s/memory/MEMORY.md.tmp-1-a" in found[0][1] and "without holding its .lock" in found[0][1]


def test_a_read_that_feeds_a_write_before_the_lock() -> None:
    found = breaches(WORK[:2] + TAKE + WORK[2:] + RELEASE)
    assert [cl for cl, _ in found] == ["S-LOCK-2"] and "read(s/memory/MEMORY.md)" in found[0][1]
    # read again under the lock: the early read fed nothing; a read-only op is no breach either
    assert breaches(WORK[:2] + TAKE + WORK + RELEASE) == []
    assert breaches(WORK[:2], op="read_index") == []


def test_a_lock_created_without_o_excl() -> None:
    plain = [c("openat", LOCK, "3", "O_WRONLY|O_CREAT|O_TRUNC"), c("write", LOCK, "20")]
    found = breaches(FAILED + OBSERVE + PROBE + RECHECK + UNLINK + plain + WORK + RELEASE)
    assert [cl for cl, _ in found] == ["S-LOCK-2"] and "without O_EXCL" in found[0][1]


def test_a_reclaim_without_the_recheck_or_the_probe() -> None:
    assert [cl for cl, _ in breaches(FAILED + OBSERVE + PROBE + UNLINK + TAKE + RELEASE)] == ["S-LOCK-4"]
    no_probe = breaches(FAILED + OBSERVE + RECHECK + UNLINK + TAKE + RELEASE)
    assert [cl for cl, _ in no_probe] == ["S-LOCK-2"] and "liveness probe" in no_probe[0][1]
    alive = [Call(1, "kill", ("signal 0",), "0")]
    assert [cl for cl, _ in breaches(FAILED + OBSERVE + alive + RECHECK + UNLINK + TAKE + RELEASE)] == ["S-LOCK-3"]
    # an empty lock names no pid: its age alone decides, no probe is owed (S-LOCK-3)
    empty = [c("newfstatat", LOCK, "0", "AT_SYMLINK_NOFOLLOW"), c("openat", LOCK, "4", "O_RDONLY"),
             c("read", LOCK, "0")]
    assert breaches(FAILED + empty + RECHECK + UNLINK + TAKE + RELEASE) == []


def test_a_release_without_the_token_check() -> None:
    found = breaches(TAKE + WORK + UNLINK)
    assert [cl for cl, _ in found] == ["S-LOCK-5"] and "without reading" in found[0][1]
    other = [c("openat", LOCK, "4", "O_RDONLY"), c("read", LOCK, "20", data="777\t17"), c("unlink", LOCK)]
    assert [cl for cl, _ in breaches(TAKE + WORK + other)] == ["S-LOCK-5"]


def test_the_tracer_keeps_flags_and_a_reads_first_bytes() -> None:
    p = LineParser(5)
    made = p.feed('openat(AT_FDCWD</s>, "/s/memory/.lock", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0666) = 3</s/memory/.lock>')
    assert isinstance(made, Call) and made.flags == "O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC" and not made.excl
    got = p.feed('read(3</s/memory/.lock>, "4194305\\t"..., 1024) = 20')
    assert isinstance(got, Call) and got.data == "4194305\t"


# --- real writers under the scheduler ----------------------------------------------------------

WRITER = Path(__file__).resolve().parent / "lock_writer.mjs"
_NEEDS = strace_unavailable() or (None if shutil.which("node") else "no node")


def _append(w: int, topic: str, n: int) -> tuple[str, dict[str, str]]:
    return ("write_memory", {"topic": topic, "content": f"tok-w{w}-{n}", "summary": f"w{w} {n}"})


SAME_TOPIC = Situation("t-same-topic", "dead", 20.0,
                       ((_append(0, "Shared", 0), _append(0, "Shared", 1)), (_append(1, "Shared", 0),)),
                       "a dead owner's lock, then appends to one topic")


def _clauses(spec: str, seed: int = 0) -> set[str]:
    r = run_schedule([PeerSpec.parse(spec)], SAME_TOPIC, RandomWalk(seed), timeout=20.0)
    assert not r.void, r.void
    assert r.held > 0  # something was judged
    return {f.clause for f in r.findings if f.kind == "lock-protocol"}


@pytest.mark.skipif(_NEEDS is not None, reason=f"needs strace and node: {_NEEDS}")
@pytest.mark.parametrize(("broken", "clause"), [
    ("read-before-lock", "S-LOCK-2"), ("no-lock", "S-INV-3"), ("no-excl", "S-LOCK-2"),
    ("no-probe", "S-LOCK-2"), ("no-recheck", "S-LOCK-4"), ("no-token-check", "S-LOCK-5"),
])
def test_a_planted_broken_step_is_a_violation(broken: str, clause: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCONFORM_BREAK", broken)
    assert clause in _clauses(f"node:{WRITER}")


@pytest.mark.skipif(_NEEDS is not None, reason=f"needs strace and node: {_NEEDS}")
def test_the_unbroken_writer_and_the_reference_show_no_breach(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMCONFORM_BREAK", raising=False)
    assert _clauses(f"node:{WRITER}") == set()
    assert _clauses("python") == set()


@pytest.mark.skipif(_NEEDS is not None, reason=f"needs strace and node: {_NEEDS}")
def test_races_names_a_skipped_recheck_a_violation_exports_it_and_replay_enforces_it_k_of_k(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The command end to end: the writer that skips S-LOCK-4's recheck fails the run (the
    double holder SPEC accepts would have passed it), the run is exported, and replay
    reproduces it 3 of 3."""
    import json

    from memconform.harness.cli import main

    monkeypatch.setenv("MEMCONFORM_BREAK", "no-recheck")
    report = tmp_path / "r.json"
    rc = main(["races", "--impl", f"node:{WRITER}", "--situation", "stale-dead-owner", "--seed", "0", "--budget", "30", "--no-shrink",
               "--export", str(tmp_path / "out"), "--json", str(report), "--quiet"])
    data = json.loads(report.read_text())
    assert rc == 1, data["verdict"]
    [found] = [f for f in data["findings"] if f["kind"] == "lock-protocol"]
    assert found["severity"] == "violation" and found["clause"] == "S-LOCK-4"
    assert data["stats"]["first_violation_s"] is not None
    [path] = list((tmp_path / "out").glob("lock-protocol-*.race.jsonl"))
    capsys.readouterr()
    assert main(["replay", str(path), "--runs", "3", "--impl", f"node:{WRITER}"]) == 1  # the violation, each time
    assert "reproduced 3 of 3 runs" in capsys.readouterr().out
