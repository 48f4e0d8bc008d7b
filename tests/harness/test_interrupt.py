"""Never lose a result (issue 22 item 4): outputs checked before any work, Ctrl-C stops at
once with the partial report marked ``interrupted``, no temporary folder left behind, and
``report merge`` refuses a missing or doubled shard.

The Ctrl-C tests send a real SIGINT to a real ``memconform`` process once its own output
(a progress line) or its process tree (a driver under strace) shows the run under way, and
measure the stop: the process's own figure (``stop_seconds`` in the report, SIGINT to report
written) must be under 1 s; the wall time to exit is printed (``-s``) and bounded loosely,
as a loaded machine stretches it.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memconform.harness import cli
from memconform.harness.checker.history import History
from memconform.harness.commands.common import output_problem
from memconform.harness.drivers import interrupt
from memconform.harness.faults.strace import strace_unavailable
from memconform.harness.reports import merge

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "conformance" / "config" / "jsonc-block-comment-fails.json"


# --- outputs checked before any work ---------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["conformance", "--junit", "{file}/r.xml"],
    ["conformance", "--json", "{dir}"],
    ["conformance", "--html", "{file}/deeper/r.html"],
    ["interop", "--history", "{dir}"],
    ["crash", "--html", "{dir}"],
    ["locks", "--json", "{file}/r.json"],
    ["fuzz", "--json", "{dir}"],
    ["replay", str(SCENARIO), "--json", "{dir}"],
    ["conformance", "--export", "{file}"],
    ["report", "merge", "{file}", "--junit", "{file}/m.xml"],
])
def test_an_unwritable_output_is_refused_before_any_work(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    afile, adir = tmp_path / "afile", tmp_path / "adir"
    afile.write_text("x")
    adir.mkdir()
    args = [a.format(file=afile, dir=adir) for a in argv]

    def ran(_args: object) -> int:
        raise AssertionError("the command ran before its outputs were checked")

    module = next(m for m in cli.command_modules(args) if argv[0] == m.NAME)
    monkeypatch.setattr(module, "run", ran)
    assert cli.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"memconform {argv[0]}: --"), err
    assert "is a directory" in err[0] or "is not a directory" in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "afile"]  # nothing written


def test_output_problem_allows_a_new_path_under_a_writable_folder(tmp_path: Path) -> None:
    assert output_problem(tmp_path / "new" / "deeper" / "r.json") is None
    assert output_problem(tmp_path / "out", folder=True) is None
    (tmp_path / "f").write_text("")
    assert output_problem(tmp_path / "f") is None  # overwritten, as before
    assert output_problem(tmp_path / "f", folder=True) == "is not a directory"
    assert output_problem(tmp_path) == "is a directory"


@pytest.mark.parametrize("target", ["/sys/r.json", "/proc/version"])
def test_an_output_the_kernel_refuses_is_refused_before_any_work(
    target: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 31 item 7: permission bits said yes (root, procfs), so the whole suite ran and the
    report was lost at the end (``internal error OSError`` for /proc/version); the path is now
    opened and written to (zero bytes) up front."""
    if not Path(target).exists() and not Path(target).parent.is_dir():
        pytest.skip(f"{Path(target).parent} is not mounted here")

    def ran(_args: object) -> int:
        raise AssertionError("the command ran before its outputs were checked")

    module = next(m for m in cli.command_modules(["conformance"]) if m.NAME == "conformance")
    monkeypatch.setattr(module, "run", ran)
    assert cli.main(["conformance", "--json", target]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [err[0]] and err[0].startswith(f"memconform conformance: --json {target}: cannot be written"), err


def test_missing_output_folders_are_made_up_front_and_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--json reports/r.json`` in a fresh clone (the Makefile, docs/ci.md) needs its folder:
    it is made before the run, never silently, and the file is probed in it (not left behind)."""
    seen: list[bool] = []

    def ran(_args: object) -> int:
        seen.append((tmp_path / "reports").is_dir())
        return 0

    module = next(m for m in cli.command_modules(["conformance"]) if m.NAME == "conformance")
    monkeypatch.setattr(module, "run", ran)
    assert cli.main(["conformance", "--json", str(tmp_path / "reports" / "deep" / "r.json")]) == 0
    assert seen == [True] and list((tmp_path / "reports" / "deep").iterdir()) == []
    assert f"made folder {tmp_path / 'reports'} for --json" in capsys.readouterr().out


# --- report merge: every shard once ----------------------------------------------------------


def _shard(k: int, n: int, ids: list[str], **more: Any) -> dict[str, Any]:
    return {"impls": [{"name": "r", "version": "1"}], "verdict": "pass", "shard": f"{k}/{n}",
            "scenarios": [{"id": i, "clauses": [], "path": f"{i}.json", "status": "pass", "seconds": 0.1} for i in ids],
            **more}


def test_merge_refuses_a_missing_or_doubled_shard_unless_partial_is_allowed() -> None:
    one, two, three = _shard(1, 3, ["a"]), _shard(2, 3, ["b"]), _shard(3, 3, ["c"])
    assert merge.merge([one, two, three])["stats"]["scenarios"] == 3
    with pytest.raises(merge.MergeError, match=r"shard 3/3 missing"):
        merge.merge([one, two])
    with pytest.raises(merge.MergeError, match=r"shard 2/3 given twice"):
        merge.merge([one, two, _shard(2, 3, ["d"]), three])
    with pytest.raises(merge.MergeError, match="different splits"):
        merge.merge([one, _shard(2, 2, ["b"])])
    with pytest.raises(merge.MergeError, match="was interrupted"):
        merge.merge([one, two, _shard(3, 3, ["c"], interrupted=True, verdict="interrupted")])
    partial = merge.merge([one, two], allow_partial=True)
    assert partial["partial"] == ["shard 3/3 missing"] and partial["verdict"] == "pass"
    cut = merge.merge([one, two, _shard(3, 3, ["c"], interrupted=True)], allow_partial=True)
    assert cut["verdict"] == "interrupted" and cut["interrupted"] is True  # part of a run is never a pass


def test_report_merge_of_two_of_three_shards_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = []
    for k, ids in ((1, ["a"]), (2, ["b"])):
        p = tmp_path / f"R{k}.json"
        full = {"tool": {"name": "memconform", "version": "0"}, "command": ["memconform", "conformance"],
                "impls": [{"spec": "python", "name": "r", "version": "1"}], "started": "2026-01-01T00:00:00+00:00",
                "seconds": 1.0, "summary": {"by_severity": {}, "by_kind": {}}, "findings": [], "stats": {}}
        p.write_text(json.dumps(_shard(k, 3, ids) | full))
        paths.append(str(p))
    assert cli.main(["report", "merge", *paths]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["memconform report: shard 3/3 missing (--allow-partial merges them anyway)"]
    assert cli.main(["report", "merge", *paths, "--allow-partial"]) == 0
    assert "partial: shard 3/3 missing" in capsys.readouterr().out


# --- Ctrl-C: a real SIGINT to a real process -------------------------------------------------


def _under_way(pid: int, out: bytes, mark: str) -> bool:
    """The run is under way: ``mark`` is in its output, or ``child:WORD`` is in the command
    line of one of its processes."""
    if not mark.startswith("child:"):
        return re.search(mark.encode(), out) is not None
    for child in interrupt.descendants(pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as f:
                if mark[6:].encode() in f.read():
                    return True
        except OSError:
            continue
    return False


def interrupt_run(tmp_path: Path, mark: str, argv: list[str]) -> tuple[int, float, str, dict[str, Any]]:
    """Start ``memconform ARGV --json``, SIGINT it once under way; (rc, seconds to exit, stderr, report)."""
    tmp, fast = tmp_path / "tmp", tmp_path / "fast"
    tmp.mkdir()
    fast.mkdir()
    report = tmp_path / "r.json"
    # a progress line every 0.05 s: the mark shows up while the run has most of its work ahead
    # (python's 663 scenarios take 3 s; at the default 5 s the first line was the last one)
    env = {**os.environ, "TMPDIR": str(tmp), "MEMCONFORM_FAST_DIR": str(fast), "CI": "1",
           "MEMCONFORM_PROGRESS_EVERY": "0.05"}
    proc = subprocess.Popen([sys.executable, "-m", "memconform.harness", *argv, "--json", str(report), "--no-export"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    assert proc.stdout is not None and proc.stderr is not None
    exited: list[float] = []

    def wait_exit() -> None:  # the exit time, without reaping (communicate does that)
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        exited.append(time.monotonic())

    waiter = threading.Thread(target=wait_exit, daemon=True)
    waiter.start()
    seen = b""
    streams = {proc.stdout.fileno(): b"", proc.stderr.fileno(): b""}
    sent = 0.0
    open_fds = set(streams)
    while open_fds:
        ready, _, _ = select.select(list(open_fds), [], [], 0.05)  # a poll of /proc between reads
        for fd in ready:
            chunk = os.read(fd, 65536)
            streams[fd] += chunk
            seen += chunk
            if not chunk:
                open_fds.discard(fd)
        if not sent and not exited and _under_way(proc.pid, seen, mark):
            proc.send_signal(signal.SIGINT)
            sent = time.monotonic()
    waiter.join()
    proc.wait()  # reaped only now: the waiter saw the exit first
    assert sent, f"the run ended before it was under way: {seen[-500:]!r}"
    left = [p.name for d in (tmp, fast) for p in d.iterdir() if not p.name.startswith("memconform-pycache-")]
    assert left == [], f"temporary folders left behind: {left}"
    data = json.loads(report.read_text(encoding="utf-8"))
    return proc.returncode, exited[0] - sent, streams[proc.stderr.fileno()].decode(), data



LOAD = max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))  # runnable processes per core

CASES = {
    "conformance": ("conformance python: ([1-9]|[1-9][0-9]|[1-4][0-9][0-9])/663 ",
                    ["conformance", "--impl", "python", "--parallel", "1"]),
    "replay": ("child:memconform.reference", ["replay", str(SCENARIO), str(SCENARIO), "--impl", "python"]),
    "locks": ("locks python: [1-9]", ["locks", "--impl", "python", "--parallel", "4"]),
    "interop": ("interop: [1-9]", ["interop", "--impl", "python", "--writers", "2", "--ops", "100000",
                                   "--history", "h.jsonl"]),
    "nemesis": ("w0:", ["interop", "--impl", "python", "--writers", "2", "--nemesis", "kill", "--time-limit", "60"]),
    "fuzz": ("fuzz python", ["fuzz", "--impl", "python", "--minutes", "5"]),
    "crash": (r"crash points \(\d+ op cases\): [1-9]", ["crash", "--impl", "python", "--op", "all"]),
    # a finding is said as found: Ctrl-C after it must keep it (issue 31 item 4)
    "races": ("races: found ", ["races", "--impl", "python", "--budget", "120", "--situation", "empty-lock-aged",
                                "--situation", "stale-dead-owner", "--situation", "no-lock"]),
    # the real openclaude plugin: its driver's module mirrors live in a folder the harness removes
    "opencode": (r"conformance opencode\S*: [1-9]\d*/\d+", ["conformance", "--impl", "opencode", "--parallel", "1"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_ctrl_c_stops_at_once_with_the_partial_report_marked_interrupted(name: str, tmp_path: Path) -> None:
    if name in ("crash", "races") and strace_unavailable():
        pytest.skip(str(strace_unavailable()))
    if name == "opencode" and not os.environ.get("MEMCONFORM_OPENCODE_PLUGIN"):
        pytest.skip("MEMCONFORM_OPENCODE_PLUGIN not set")
    mark, argv = CASES[name]
    rc, seconds, stderr, data = interrupt_run(tmp_path, mark, argv)
    print(f"Ctrl-C {name}: exit {seconds:.2f} s after SIGINT, report written {data.get('stop_seconds')} s after it "
          f"(load {LOAD:.1f} per core); {data['stats']}")
    assert rc == 130, stderr[-800:]
    assert data["verdict"] == "interrupted" and data["interrupted"] is True
    # SIGINT to the report written, measured by the process: 1 s on a machine with a core free
    # (the bound grows with the load: a shared 2-core box runs ten other processes' work too)
    assert data["stop_seconds"] < 1.0 * LOAD, (data["stop_seconds"], LOAD)
    assert seconds < 5.0 * LOAD  # the whole exit: interpreter teardown included
    assert re.search(rf"memconform {argv[0]}: interrupted", stderr) and "Traceback" not in stderr, stderr[-800:]
    if name == "interop":  # the writers' partial history is checked, saved and reported
        stats = data["stats"]
        assert 0 < stats["ops"] < 200_000 and stats["checker"] == "linearizable", stats
        assert len(History.load(tmp_path / stats["history"]).ops()) == stats["ops"]
        assert stats["invariant_violations"] == stats["lost"] == 0 and data["findings"] == []
    if name == "races":  # what was found before the Ctrl-C is kept (it said stats {} and 0 findings)
        assert data["stats"]["schedules"] >= 1 and data["findings"], data["stats"]
    if name == "locks":  # the cells that finished are reported
        assert data["stats"]["executed"] > 0, data["stats"]
    if name in ("conformance", "opencode"):  # what finished is in the report, and only what finished
        assert data["scenarios"] and data["stats"]["executed"] == len(data["scenarios"]) < 663
    if name == "conformance":
        assert all(s["status"] == "pass" for s in data["scenarios"])


def _junit_errors(path: Path) -> tuple[int, list[str]]:
    """``errors`` of a JUnit suite and the names of its errored testcases."""
    import xml.etree.ElementTree as ET

    suite = ET.parse(path).getroot()
    errored = [c.get("name", "") for c in suite.iter("testcase") if c.find("error") is not None]
    return int(suite.get("errors", "0")), errored


def test_junit_of_an_interrupted_conformance_run_is_not_green(tmp_path: Path) -> None:
    """Issue 31 item 2: after Ctrl-C the JUnit said ``failures="0" errors="0"``, and a CI that
    reads JUnit showed the interrupted gate green; it carries an errored testcase now."""
    mark, argv = CASES["conformance"]
    xml = tmp_path / "r.xml"
    rc, _, stderr, data = interrupt_run(tmp_path, mark, [*argv, "--junit", str(xml)])
    assert rc == 130 and data["interrupted"] is True, stderr[-800:]
    errors, errored = _junit_errors(xml)
    assert errors >= 1 and "memconform: run interrupted" in errored, (errors, errored)


def test_junit_of_a_merge_with_an_interrupted_shard_is_not_green(tmp_path: Path) -> None:
    one, two = _shard(1, 2, ["a"]), _shard(2, 2, ["b"], interrupted=True, verdict="interrupted")
    data = merge.merge([one, two], allow_partial=True)
    errors, errored = _junit_errors(merge.write_junit(data, tmp_path / "m.xml"))
    assert errors == 1 and errored == ["memconform: run interrupted"]
    whole = merge.merge([one, _shard(2, 2, ["b"])])
    assert _junit_errors(merge.write_junit(whole, tmp_path / "w.xml")) == (0, [])


def test_merge_of_one_shard_given_twice_says_given_twice_not_overlap() -> None:
    """Issue 31 item 9: ``report merge s1 s1 s2 s3`` said "the shards overlap"."""
    one, two, three = _shard(1, 3, ["a"]), _shard(2, 3, ["b"]), _shard(3, 3, ["c"])
    with pytest.raises(merge.MergeError) as caught:
        merge.merge([one, one, two, three], ["s1", "s1", "s2", "s3"])
    assert "shard 1/3 given twice (s1, s1)" in str(caught.value) and "overlap" not in str(caught.value)
    doubled = merge.merge([one, one, two, three], allow_partial=True)
    assert doubled["stats"]["scenarios"] == 3 and doubled["partial"] == ["shard 1/3 given twice (report 1, report 2)"]


def test_merging_an_interrupted_shard_does_not_claim_a_ctrl_c(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 31 item 2's side note: ``report merge --allow-partial`` of an interrupted shard
    exits 130 (part of a run is never a pass) but said "interrupted after the run's work was
    done", a Ctrl-C nobody pressed."""
    full = {"tool": {"name": "memconform", "version": "0"}, "command": ["memconform", "conformance"],
            "impls": [{"spec": "python", "name": "r", "version": "1"}], "started": "2026-01-01T00:00:00+00:00",
            "seconds": 1.0, "summary": {"by_severity": {}, "by_kind": {}}, "findings": [], "stats": {}}
    paths = []
    for k, more in ((1, {}), (2, {"interrupted": True, "verdict": "interrupted"})):
        p = tmp_path / f"R{k}.json"
        p.write_text(json.dumps(_shard(k, 2, [f"s{k}"], **more) | full))
        paths.append(str(p))
    assert cli.main(["report", "merge", *paths, "--allow-partial"]) == 130
    out, err = capsys.readouterr()
    assert "verdict interrupted" in out and "interrupted after the run's work was done" not in err, (out, err)


GC_CALLBACK_SIGINT = """
import gc, signal, threading
from memconform.harness.drivers import interrupt

interrupt.install()
fired = []

def callback(phase, info):  # as Hypothesis's gc_callback: Python code the collector calls
    if phase == "start" and not fired:
        fired.append(1)
        signal.raise_signal(signal.SIGINT)  # the handler runs in this callback's frame
        fired.append(2)

gc.callbacks.append(callback)
try:
    gc.collect()
    threading.Event().wait(30)  # the interrupt, delivered again once the callback is over
    print("not interrupted")
except KeyboardInterrupt:
    print("interrupted", fired)
"""


def test_a_ctrl_c_inside_a_gc_callback_is_not_lost_or_printed_as_a_traceback() -> None:
    """A clean-clone run of the fuzz Ctrl-C case (issue 31) printed "Exception ignored in:
    <function gc_callback …> Traceback … KeyboardInterrupt": SIGINT landed in Hypothesis's gc
    callback, where a raised exception is swallowed and printed.  The handler now sees the
    callback and delivers the interrupt again outside it."""
    done = subprocess.run([sys.executable, "-c", GC_CALLBACK_SIGINT], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.stdout.strip() == "interrupted [1, 2]", (done.stdout, done.stderr)
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr, done.stderr
