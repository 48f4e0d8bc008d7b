"""Syscall-level faults through strace (faults/strace.py, faults/campaigns.py) on real driver processes.

CI runs the reference (``python -m memconform.reference serve`` under strace): every op kind is killed at
its publishing calls (namespace changes and the lock) and must leave an allowed crash state and
recover; injected errors must roll back; the regression scenarios replay.  Set
``MEMCONFORM_CRASH_FULL=1`` to kill at every store-touching call instead.  The JS peers run
when ``MEMCONFORM_PI_CORE`` / ``MEMCONFORM_OPENCODE_PLUGIN`` name them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memconform.harness.cli import main
from memconform.harness.drivers.peers import ENV_OPENCODE, ENV_PI, PeerSpec
from memconform.harness.faults import campaigns
from memconform.harness.faults.campaigns import crash_runs, error_runs
from memconform.harness.faults.cases import CASES
from memconform.harness.faults.strace import (
    Traced,
    parse_trace,
    scenario_wrapper,
    store_calls,
    strace_unavailable,
)
from memconform.harness.gate.runner import Worker
from memconform.harness.gate.scenarios import SCENARIOS_DIR, load_file

needs_strace = pytest.mark.skipif(
    strace_unavailable() is not None, reason=f"no syscall injection: {strace_unavailable()}"
)
FULL = os.environ.get("MEMCONFORM_CRASH_FULL") == "1"
REGRESSIONS = sorted((SCENARIOS_DIR / "regressions").glob("*.json"))
PYTHON = PeerSpec("python")


# --- trace parsing and fault expressions (no strace needed) ------------------------------------

TRACE = """\
100 openat(AT_FDCWD</r>, "/usr/lib/x.so", O_RDONLY|O_CLOEXEC) = 3</usr/lib/x.so>
100 write(1<pipe:[7]>, "{\\"id\\": 1, \\"ok\\": true, \\"result\\": "..., 38) = 38
100 openat(AT_FDCWD</r>, "/r/agent/memory/.lock", O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0666) = 3</r/agent/memory/.lock>
101 write(5<anon_inode:[eventfd]>, "\\1\\0\\0\\0\\0\\0\\0\\0", 8) = 8
100 write(3</r/agent/memory/.lock>, "100\\t1\\tx", 7) = 7
100 rename("/r/agent/memory/a.md.tmp-100-abc", "/r/agent/memory/a.md") = ?
100 renameat2(AT_FDCWD</r>, "agent/x.tmp-100-q", AT_FDCWD</r>, "agent/x", RENAME_NOREPLACE) = 0
"""


def test_parse_trace_numbers_calls_per_thread_and_finds_store_paths() -> None:
    calls, answers = parse_trace(TRACE)
    assert answers == [(1, 1)]
    lock_open, lock_write = calls[2], calls[4]
    assert (lock_open.syscall, lock_open.nth, lock_open.creates) == ("openat", 2, True)
    assert lock_write.paths == ("/r/agent/memory/.lock",) and lock_write.nth == 2  # thread 100's 2nd write
    assert calls[3].nth == 1  # thread 101 counts separately
    assert calls[5].unfinished and calls[5].key("/r") == ("rename", ("agent/memory/a.md.tmp-*", "agent/memory/a.md"))
    assert calls[6].paths == ("/r/agent/x.tmp-100-q", "/r/agent/x")
    store = store_calls(calls, answers, "/r", after_id=1)
    assert [c.syscall for c in store] == ["openat", "write", "rename", "renameat2"]


def test_scenario_wrapper_filters_by_path_and_pokes_same_length_paths() -> None:
    cmd = scenario_wrapper([{"path": "a/.lock", "syscall": "openat", "nth": 2, "action": "redirect", "to": "a/.lonk"}], "/r")
    assert cmd[cmd.index("-P") + 1] == "/r/a/.lock"
    assert cmd[-1] == f"inject=openat:poke_enter=@arg2={b'/r/a/.lonk'.hex()}:when=2"
    with pytest.raises(ValueError, match="same-length"):
        scenario_wrapper([{"path": "a/.lock", "syscall": "openat", "action": "redirect", "to": "a/x"}], "/r")
    cmd = scenario_wrapper([{"path": "a/.lock", "syscall": "write", "action": "error", "errno": "ENOSPC"}], "/r")
    assert cmd[-1] == "inject=write:error=ENOSPC:when=1"


def test_publishing_subset() -> None:
    def mk(name: str, path: str, creates: bool = False) -> Traced:
        return Traced(1, name, (path,), creates, 1, "")

    assert campaigns.publishing_calls(1, mk("rename", "/r/a.md"))
    assert campaigns.publishing_calls(1, mk("write", "/r/agent/memory/.lock"))
    assert campaigns.publishing_calls(1, mk("openat", "/r/agent/memory/.lock", True))
    assert not campaigns.publishing_calls(1, mk("openat", "/r/agent/memory/.lock"))
    assert not campaigns.publishing_calls(1, mk("fsync", "/r/a.md.tmp-1-x"))
    assert not campaigns.publishing_calls(1, mk("unlink", "/r/a.md.tmp-1-x"))
    assert campaigns.publishing_calls(1, mk("unlink", "/r/agent/memory/.lock"))


# --- the reference under strace -----------------------------------------------------------------


@needs_strace
def test_enumeration_sees_the_store_calls_and_nothing_else() -> None:
    from memconform.harness.drivers.sandbox import Sandbox

    sb = Sandbox.create()
    try:
        en = campaigns.enumerate_case(PYTHON, sb, CASES["write-create"])
        keys = [c.key(str(sb.root)) for c in en.calls]
        assert all(p.startswith(str(sb.root)) for c in en.calls for p in c.paths)
        assert ("rename", ("agent/memory/a.md.tmp-*", "agent/memory/a.md")) in keys
        assert ("rename", ("agent/memory/MEMORY.md.tmp-*", "agent/memory/MEMORY.md")) in keys
        assert keys[-1] == ("unlink", ("agent/memory/.lock",))
        assert en.answer is not None and en.answer.result == 'Created memory topic "A" (a.md).'
    finally:
        sb.remove()


# the shared twins of local cases run the reference's same code over another directory
# (issue 30's cases for any driver): a full run only, to keep the default suite's minutes
TWINS = frozenset({"write-shared-append", "write-shared-replace", "unpin-shared"})


@needs_strace
@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.applies("python") and (FULL or n not in TWINS)])
def test_reference_killed_at_each_publishing_call_recovers(name: str) -> None:
    report = crash_runs(PYTHON, CASES[name], only=None if FULL else campaigns.publishing_calls)
    assert report.points, "no crash point was selected"
    missed = [p for p in report.points if p.missed]
    assert not missed, report.render(verbose=True)
    assert report.violations == 0, report.render(verbose=True)


@needs_strace
@pytest.mark.parametrize("name", ["write-replace", "write-shared-tombstoned", "handoff-write"])
def test_reference_rolls_back_injected_errors_at_publishing_calls(name: str) -> None:
    def renames(i: int, call: Traced) -> bool:
        return call.syscall.startswith("rename") or call.syscall.startswith("link")

    report = error_runs(PYTHON, CASES[name], errnos=("EIO", "ENOSPC"), only=renames)
    assert report.points and not [p for p in report.points if p.missed]
    assert report.violations == 0, report.render(verbose=True)
    assert all("failed and rolled back" in p.verdict.allowed for p in report.points), report.render(True)


@needs_strace
def test_a13_reference_unlinks_its_lock_when_the_token_write_fails() -> None:
    def token_write(i: int, call: Traced) -> bool:
        return call.syscall.startswith("write") and call.paths[0].endswith("/.lock")

    report = error_runs(PYTHON, CASES["write-create"], errnos=("ENOSPC", "EIO"), only=token_write)
    assert len(report.points) == 2 and report.violations == 0, report.render(verbose=True)


@needs_strace
@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.stem for p in REGRESSIONS])
def test_regression_scenario_passes_on_the_reference(path: Path) -> None:
    worker = Worker(PYTHON, timeout=15.0)
    try:
        outcome = worker.run(load_file(path))
    finally:
        worker.close()
    detail = "\n".join(f.render() for f in outcome.failures) or outcome.reason
    assert outcome.status == "pass", f"{detail}\n{outcome.stderr}"


@needs_strace
def test_cli_crash_runs_and_reports(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    argv = ["crash", "--impl", "python", "--op", "pin", "--points", "publishing", "--json", str(out),
            "--export", str(tmp_path / "regs")]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "python pin [kill]" in text and "0 with violations" in text
    report = json.loads(out.read_text())
    assert report["verdict"] in ("pass", "hazard") and report["stats"]["runs"] > 0
    assert [c["case"] for c in report["cases"]] == ["pin"]


# --- the JS peers, when present -------------------------------------------------------------------


def _peer(kind: str, var: str) -> PeerSpec:
    path = os.environ.get(var)
    if not path or not Path(path).is_file():
        pytest.skip(f"set {var} to the {kind} peer to run it")
    return PeerSpec(kind, str(Path(path).resolve()))


@needs_strace
def test_pi_defects_are_found() -> None:
    """openpi 0.3.9: A-13 (empty lock after a failed token write) and A-3 (HANDOFF.md torn by a kill)."""
    pi = _peer("pi", ENV_PI)

    def token_write(i: int, call: Traced) -> bool:
        return call.syscall.startswith("write") and call.paths[0].endswith("/.lock")

    a13 = error_runs(pi, CASES["write-create"], errnos=("ENOSPC",), only=token_write)
    assert [f.clause for p in a13.points for f in p.violations] == ["A-13"]
    a3 = crash_runs(pi, CASES["handoff-write"], with_recovery=False)
    assert any(f.clause == "A-3" and f.kind == "torn" for p in a3.points for f in p.violations)


@needs_strace
def test_opencode_survives_kills_at_publishing_calls() -> None:
    oc = _peer("opencode", ENV_OPENCODE)
    report = crash_runs(oc, CASES["write-create"], only=campaigns.publishing_calls)
    assert report.violations == 0, report.render(verbose=True)


def test_exported_faults_name_only_paths_strace_can_select() -> None:
    """A regression's ``inject`` names a stable path and counts that path's calls (``-P``);
    a temporary's random name, or a rename (selected by its source), cannot be replayed."""
    from memconform.harness.faults.outcomes import call_name, injectable
    from memconform.harness.faults.strace import Traced

    root = "/s"
    lock, idx = f"{root}/agent/memory/.lock", f"{root}/agent/memory/MEMORY.md"
    tmp = f"{idx}.tmp-12-abc"
    calls = [
        Traced(1, "openat", (lock,), True, 1, ""), Traced(1, "write", (lock,), False, 1, ""),
        Traced(1, "openat", (idx,), False, 2, ""), Traced(1, "openat", (tmp,), True, 3, ""),
        Traced(1, "rename", (tmp, idx), False, 1, ""), Traced(1, "openat", (lock,), False, 4, ""),
    ]
    assert injectable(2, calls, root) == {"path": "agent/memory/.lock", "syscall": "write", "nth": 1}
    assert injectable(6, calls, root) == {"path": "agent/memory/.lock", "syscall": "openat", "nth": 2}
    assert injectable(4, calls, root) is None and injectable(5, calls, root) is None
    assert call_name(calls[4], root) == "rename(agent/memory/MEMORY.md.tmp-*, agent/memory/MEMORY.md)"
