"""Traced crash states (issue 17): the strace log parser, the four persistence models and the
``crash --trace`` command line, on hand-written logs (no strace, no peers needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memconform.harness.cli import main
from memconform.harness.drivers.sandbox import SNAPSHOT_DIR
from memconform.harness.faults.strace import strace_unavailable
from memconform.harness.faults.trace import (
    Replay,
    Trace,
    parse_log,
    split_args,
    start_tree,
    unquote,
)
from memconform.harness.faults.trace_states import (
    crash_states,
    dirent_states,
    reorder_states,
    strict_states,
    torn_states,
)

R = "/sb"
D = f"{R}/agent/memory"
BEFORE = {"agent": SNAPSHOT_DIR, "agent/memory": SNAPSHOT_DIR, "agent/memory/MEMORY.md": b"# old\n"}


def trace_of(log: str, before: dict[str, bytes] = BEFORE) -> Trace:
    tree, ino = start_tree(R, before)
    replay = Replay(R, tree, ino)
    for c in parse_log(log):
        replay.step(c)
    return Trace(R, "t", dict(before), tree, replay.ops, None)


# The publish of a temporary without fsync, as a peer might do it; threads interleave.
NO_FSYNC = f"""\
7 openat(AT_FDCWD<{R}>, "agent/memory/MEMORY.md.tmp-7-ab", O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0600) = 3<{D}/MEMORY.md.tmp-7-ab>
7 write(3<{D}/MEMORY.md.tmp-7-ab>, "# new\\n\\xe2\\x80\\x94", 9 <unfinished ...>
8 openat(AT_FDCWD<{R}>, "/etc/passwd", O_RDONLY) = 4</etc/passwd>
7 <... write resumed>) = 9
7 close(3<{D}/MEMORY.md.tmp-7-ab>) = 0
7 rename("{D}/MEMORY.md.tmp-7-ab", "{D}/MEMORY.md") = 0
7 unlink("{D}/MEMORY.md.tmp-7-ab") = -1 ENOENT (No such file or directory)
"""


def test_parser_follows_descriptors_offsets_and_resumed_calls() -> None:
    assert split_args('3<a, b>, "x, \\"y", [{iov_base="z", iov_len=1}], 4') == \
        ['3<a, b>', '"x, \\"y"', '[{iov_base="z", iov_len=1}]', "4"]
    assert unquote('"a\\n\\x00\\t\\"\\\\"') == b'a\n\x00\t"\\'
    t = trace_of(NO_FSYNC)
    assert [o.kind for o in t.ops] == ["create", "write", "close", "rename"]
    assert t.ops[3].call == "rename(agent/memory/MEMORY.md.tmp-*, agent/memory/MEMORY.md)"
    assert t.after()["agent/memory/MEMORY.md"] == "# new\n—".encode()
    log = f"""\
7 openat(AT_FDCWD<{R}>, "{D}/MEMORY.md", O_WRONLY|O_APPEND) = 3<{D}/MEMORY.md>
7 write(3<{D}/MEMORY.md>, "ab", 2) = 2
7 pwrite64(3<{D}/MEMORY.md>, "X", 1, 0) = 1
7 writev(3<{D}/MEMORY.md>, [{{iov_base="c", iov_len=1}}, {{iov_base="d", iov_len=1}}], 2) = 2
7 openat(AT_FDCWD<{R}>, "{D}/b.md", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 4<{D}/b.md>
7 write(4<{D}/b.md>, "0123456789", 10) = 10
7 lseek(4<{D}/b.md>, 2, SEEK_SET) = 2
7 write(4<{D}/b.md>, "zz", 2) = 2
7 ftruncate(4<{D}/b.md>, 6) = 0
7 fsync(4<{D}/b.md>) = 0
7 mkdirat(AT_FDCWD<{R}>, "home/x", 0777) = 0
7 renameat2(AT_FDCWD<{R}>, "{D}/b.md", AT_FDCWD<{R}>, "home/x/c.md", RENAME_NOREPLACE) = 0
7 unlinkat(AT_FDCWD<{R}>, "home/x/c.md", 0) = 0
7 unlinkat(AT_FDCWD<{R}>, "home/x", AT_REMOVEDIR) = 0
"""
    t = trace_of(log)
    after = t.after()
    assert after["agent/memory/MEMORY.md"] == b"# old\nabXcd"  # Linux: pwrite on O_APPEND appends
    assert "home/x" not in after and "agent/memory/b.md" not in after
    assert [o.kind for o in t.ops][-4:] == ["mkdir", "rename", "unlink", "rmdir"]


def test_strict_prefixes_and_torn_cuts() -> None:
    t = trace_of(NO_FSYNC)
    strict = [cs.state.get("agent/memory/MEMORY.md") for cs in crash_states(t, ["strict"])]
    assert strict == [b"# old\n"] * 4 + ["# new\n—".encode()]
    torn = {cs.state["agent/memory/MEMORY.md"] for cs in crash_states(t, ["torn"])}
    assert torn == {b"# old\n", b"", b"# ne"}  # nothing was fsynced: cut at 0 and half-way (9 bytes)
    _k, start = next(strict_states(t))
    assert list(torn_states(t, 0, start, "block")) == []  # before the op nothing is unsynced


def test_lost_dirent_respects_a_directory_fsync() -> None:
    t = trace_of(NO_FSYNC)
    lost = [cs for cs in dirent_states(t) if cs.state.get("agent/memory/MEMORY.md") == b"# old\n"]
    assert lost and lost[-1].syscalls == ("rename(agent/memory/MEMORY.md.tmp-*, agent/memory/MEMORY.md)",)
    synced = NO_FSYNC + f'7 openat(AT_FDCWD<{R}>, "{D}", O_RDONLY|O_DIRECTORY) = 5<{D}>\n7 fsync(5<{D}>) = 0\n'
    t2 = trace_of(synced)
    final = [cs for cs in dirent_states(t2) if cs.position == len(t2.ops)]
    assert final == []  # the directory fsync made the rename durable


def test_reorder_persists_a_rename_before_the_data_it_publishes() -> None:
    t = trace_of(NO_FSYNC)
    states = list(reorder_states(t))
    empty = [cs for cs in states if cs.state.get("agent/memory/MEMORY.md") == b""]
    assert empty, "a rename may reach the disk before the temporary's data"
    assert "write(agent/memory/MEMORY.md.tmp-*)" in empty[0].syscalls
    fsynced = NO_FSYNC.replace("7 close(3<", f"7 fsync(3<{D}/MEMORY.md.tmp-7-ab>) = 0\n7 close(3<", 1)
    t2 = trace_of(fsynced)
    assert not [cs for cs in reorder_states(t2) if cs.state.get("agent/memory/MEMORY.md") == b""]


def test_crash_trace_usage_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["crash", "--impl", "python", "--trace", "--models", "strict,bogus", "--no-export"]) == 2
    assert "unknown model(s) bogus" in capsys.readouterr().err
    assert main(["crash", "--impl", "python", "--trace", "--op", "nonesuch", "--no-export"]) == 2
    assert "unknown op case 'nonesuch'" in capsys.readouterr().err


needs_strace = pytest.mark.skipif(strace_unavailable() is not None, reason=f"needs strace: {strace_unavailable()}")


@needs_strace
def test_crash_trace_on_the_reference_exports_replayable_crash_states(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    code = main(["crash", "--impl", "python", "--trace", "--op", "write-create", "--recover",
                 "--json", str(out), "--export", str(tmp_path / "reg")])
    assert code == 0  # lost directory entries are S-INV-8 power-loss weaknesses, never violations
    report = json.loads(out.read_text())
    stats = report["stats"]
    assert stats["distinct_checked"] > 20 and stats["recovered"] > 10 and stats["untraced"] == []
    assert set(stats["models"]) == {"strict", "lost-dirent", "torn", "reorder"}
    lost = [f for f in report["findings"] if "[lost-dirent]" in f["op"]]
    assert lost and lost[0]["severity"] == "weakness" and "trace position" in lost[0]["evidence"]
    files = sorted((tmp_path / "reg").glob("*.json"))
    assert files, "every finding is exported"
    scenario = json.loads(files[0].read_text())
    assert scenario["steps"][0]["op"] == "write_memory" and "agent/memory/MEMORY.md" in scenario["given"]["files"]
    assert scenario["regression"]["fault"]["model"] == "lost-dirent"
    assert main(["replay", str(files[0]), "--impl", "python", "--no-export"]) == 0


def test_a_topic_the_next_session_loses_for_good_is_named() -> None:
    from memconform.harness.faults.recovery import lost_topics
    from memconform.harness.oracles.crash_judge import Intent

    idx = b"# Memory Index\n\n- [A](a.md) 2026-08-01T00:00:00+00:00 -- ay\n"
    final = {"home/.agents/memory/MEMORY.md": idx, "home/.agents/memory/a.md": b"alpha", "agent/memory/a.md": b"alpha"}
    after = {"home/.agents/memory/MEMORY.md": b"# Memory Index\n\n", "agent/memory/a.md": b"alpha"}
    [f] = lost_topics(after, final, Intent("carry-over"), "lost-dirent")
    assert (f.kind, f.severity, f.path) == ("lost-after-recovery", "weakness", "home/.agents/memory/a.md")
    assert "a copy survives at agent/memory/a.md" in f.detail
    assert lost_topics(after, final, Intent("carry-over"), "strict")[0].severity == "violation"
    assert lost_topics(final, final, Intent("carry-over"), "strict") == []
    assert lost_topics(after, final, Intent("remove", removes=frozenset({"a.md"})), "strict") == []


def test_recovery_names_a_store_that_refuses_writes() -> None:
    from memconform.harness.drivers.peers import PeerSpec
    from memconform.harness.faults.cases import CASES
    from memconform.harness.faults.recovery import Worker
    from memconform.harness.faults.trace_states import CrashState

    case = CASES["write-create"]
    state = {**case.files("python"), "agent/memory/.lock": SNAPSHOT_DIR}  # never reclaimed (S-LOCK-2)
    worker = Worker(PeerSpec("python"))
    try:
        stuck = worker.run(case, CrashState("strict", state, 0, "a directory named .lock"))
        fine = worker.run(case, CrashState("strict", case.files("python"), 0, "before the op"))
    finally:
        worker.close()
    assert [f.kind for f in stuck.findings if f.severity == "hazard"] == ["unavailable"]
    assert fine.findings == [] and worker.starts == 1  # one warm driver, renewed between states


def test_block_granularity_and_the_capped_reorder() -> None:
    big = "A" * 10000
    log = f'7 openat(AT_FDCWD<{R}>, "{D}/big.md", O_WRONLY|O_CREAT|O_EXCL, 0600) = 3<{D}/big.md>\n' \
          f'7 write(3<{D}/big.md>, "{big}", 10000) = 10000\n'
    t = trace_of(log)
    _k, snap = list(strict_states(t))[-1]
    cuts = sorted(len(cs.state["agent/memory/big.md"]) for cs in torn_states(t, len(t.ops), snap, "block"))
    assert cuts == [0, 4096, 5000, 8192]  # synced length, half-way (as the explorer), 4 KiB blocks
    t2 = trace_of(NO_FSYNC)
    capped = {cs.key() for cs in reorder_states(t2, cap=1)}
    strict = {hash(frozenset(tr.state(R).items())) for _k, tr in strict_states(t2)}
    assert strict <= capped and len(capped) > len(strict)  # every prefix, and one file cut short
