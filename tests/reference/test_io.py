"""Safe I/O: regular-file probe, store reads, bounded reads, atomic writes, exclusive publish,
modes, listing order, non-atomic lock creation (S-IO-1..8).

Real files, FIFOs, symlinks and a real second process; fault injection through ``Fs``
subclasses passed to the store.
"""

from __future__ import annotations

import errno
import os
import re
import socket
import stat
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from memconform.reference.errors import NodeError, UnsafeFileError
from memconform.reference.fs import (
    MAX_BYTES,
    Fs,
    atomic_write,
    bounded_read,
    exclusive_publish,
    is_regular_file,
    store_read,
)
from tests.conftest import StoreEnv
from tests.support import IDX, FaultFs, RecordingFs, run_promptly, store_with, temps_in


def mode_of(path: str | Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def d(tmp_path: Path) -> Path:
    p = tmp_path / "dir"
    p.mkdir()
    return p


# --- S-IO-1 regular-file probe ---------------------------------------------------------


def test_s_io_1_regular_file_probe(d: Path) -> None:
    fs = Fs()
    (d / "reg.md").write_text("x")
    os.symlink(d / "reg.md", d / "link.md")
    os.symlink(d / "none.md", d / "dangling.md")
    (d / "sub.md").mkdir()
    os.mkfifo(d / "fifo.md")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(d / "sock.md"))
        assert is_regular_file(fs, str(d / "reg.md"))
        for name in ["link.md", "dangling.md", "sub.md", "fifo.md", "sock.md", "missing.md"]:
            assert not is_regular_file(fs, str(d / name)), name
        assert not is_regular_file(fs, str(d / "reg.md" / "x.md"))  # ENOTDIR
        assert not is_regular_file(fs, "")
    finally:
        sock.close()


# --- S-IO-2 store read ------------------------------------------------------------------


def test_s_io_2_fifo_index_refused_promptly(env: StoreEnv) -> None:
    os.makedirs(env.local)
    fifo = os.path.join(env.local, "MEMORY.md")
    os.mkfifo(fifo)
    env.store.parse_rules()
    before = env.snapshot()
    box = run_promptly(lambda: env.store.execute_write_memory("T", "c", "s"), fifo)
    err = box.get("error")
    assert isinstance(err, UnsafeFileError)
    assert err.message == f"Unsafe non-regular file: {fifo}"
    assert re.search("regular", err.message)
    assert env.snapshot() == before


def test_s_io_2_refusals(d: Path) -> None:
    fs = Fs()
    (d / "reg").write_bytes(b"data")
    os.symlink(d / "reg", d / "link")
    os.mkfifo(d / "fifo")
    (d / "sub").mkdir()
    with pytest.raises(NodeError) as e:
        store_read(fs, str(d / "link"))
    assert e.value.code == "ELOOP"
    assert e.value.message == f"ELOOP: too many symbolic links encountered, open '{d / 'link'}'"
    with pytest.raises(NodeError) as e:
        store_read(fs, str(d / "missing"))
    assert e.value.code == "ENOENT"
    assert e.value.message == f"ENOENT: no such file or directory, open '{d / 'missing'}'"
    for name in ["fifo", "sub"]:
        path = str(d / name)
        box = run_promptly(partial(store_read, fs, path), str(d / "fifo"))
        err = box.get("error")
        assert isinstance(err, UnsafeFileError)
        assert err.message == f"Unsafe non-regular file: {path}"
    # configuration reads may follow symlinks, but still only to regular files
    assert store_read(fs, str(d / "link"), follow=True) == "data"
    os.symlink(d / "fifo", d / "fifolink")
    box = run_promptly(lambda: store_read(fs, str(d / "fifolink"), follow=True), str(d / "fifo"))
    assert isinstance(box.get("error"), UnsafeFileError)


def test_s_io_2_decoding(d: Path) -> None:
    p = d / "t.md"
    p.write_bytes(
        b"\xef\xbb\xbfA\xc3 \xed\xa0\x80 \xc0\xaf \xf0\x9f\x98\x80 \xf4\x90\x80\x80 B\xe2\x82"
    )
    assert store_read(Fs(), str(p)) == (
        "\ufeffA\ufffd \ufffd\ufffd\ufffd \ufffd\ufffd \U0001f600 \ufffd\ufffd\ufffd\ufffd B\ufffd"
    )
    big = "é" * 70000  # more than one read chunk
    p.write_text(big, encoding="utf-8")
    assert store_read(Fs(), str(p)) == big


def test_s_io_2_symlinked_config_is_followed(env: StoreEnv, tmp_path: Path) -> None:
    real = tmp_path / "real.jsonc"
    real.write_text('{"max_lines": 77}')
    os.symlink(real, os.path.join(env.agent, "memory.jsonc"))
    assert env.store.parse_rules().max_lines == 77
    assert env.diagnostics == []


def test_s_io_2_symlinked_index_raises_eloop(env: StoreEnv, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("# Memory Index\n")
    os.makedirs(env.local)
    os.symlink(outside, os.path.join(env.local, "MEMORY.md"))
    with pytest.raises(NodeError) as e:
        env.store.execute_write_memory("T", "c", "s")
    assert e.value.code == "ELOOP"
    assert outside.read_text() == "# Memory Index\n"
    assert sorted(os.listdir(env.local)) == ["MEMORY.md"]


# --- S-IO-3 bounded read ----------------------------------------------------------------


def test_s_io_3_bound_and_split_utf8(d: Path) -> None:
    fs = Fs()
    p = str(d / "t.md")
    Path(p).write_bytes(b"x" * 51199 + "é".encode())
    assert bounded_read(fs, p) == ("x" * 51199 + "\ufffd", True)
    Path(p).write_bytes(b"x" * 51198 + "é".encode())
    assert bounded_read(fs, p) == ("x" * 51198 + "é", False)
    Path(p).write_bytes(b"x" * 51198 + "\U0001f600".encode())
    assert bounded_read(fs, p) == ("x" * 51198 + "\ufffd", True)
    Path(p).write_bytes(b"")
    assert bounded_read(fs, p) == ("", False)
    assert MAX_BYTES == 51200


def test_s_io_3_single_positional_read(d: Path) -> None:
    p = str(d / "t.md")
    Path(p).write_bytes(b"y" * 100000)
    fs = RecordingFs()
    text, truncated = bounded_read(fs, p)
    assert truncated and text == "y" * 51200
    calls = fs.resolved()
    assert [c for c in calls if c[0] in ("read", "pread")] == [("pread", p, 51200, 0)]
    opened = calls[0]
    assert opened[0] == "open" and opened[1] == p
    flags = opened[2]
    assert flags & os.O_NONBLOCK and flags & os.O_NOFOLLOW
    assert flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) == 0
    assert fs.names() == ["open", "fstat", "pread", "close"]
    Path(p).write_bytes(b"z" * 10)
    fs = RecordingFs()
    assert bounded_read(fs, p) == ("z" * 10, False)
    assert [c for c in fs.resolved() if c[0] == "pread"] == [("pread", p, 10, 0)]


def test_s_io_3_refusals_are_prompt(d: Path) -> None:
    fs = Fs()
    (d / "reg").write_text("x")
    os.symlink(d / "reg", d / "link")
    os.mkfifo(d / "fifo")
    box = run_promptly(lambda: bounded_read(fs, str(d / "fifo")), str(d / "fifo"))
    assert isinstance(box.get("error"), UnsafeFileError)
    with pytest.raises(NodeError) as e:
        bounded_read(fs, str(d / "link"))
    assert e.value.code == "ELOOP"
    with pytest.raises(UnsafeFileError):
        bounded_read(fs, str(d))


def test_s_io_3_search_never_sees_past_the_bound(env: StoreEnv) -> None:
    env.put("agent/memory/edge.md", "x" * 51195 + "TOKEN")
    env.put("agent/memory/past.md", "x" * 51196 + "TOKEN")
    env.put("agent/memory/later.md", "x" * 51200 + "\nTOKEN\n")
    hits = env.store.search_memory("token")
    assert [(h.filename, h.match_type) for h in hits] == [("edge.md", "body")]


def test_s_io_3_topic_display_marks_truncation(env: StoreEnv) -> None:
    env.put("agent/memory/big.md", b"x" * 51199 + "é".encode())
    assert env.store.read_topic_content("big.md") == (
        "x"
        * 51199
        + "\ufffd\n\n<!-- memory truncated: topic exceeds size limit; read the file directly for "
        "the full body -->"
    )


# --- S-IO-4 atomic write ----------------------------------------------------------------


@pytest.mark.parametrize("existing", [False, True])
def test_s_io_4_exact_sequence(d: Path, existing: bool) -> None:
    target = str(d / "t.md")
    if existing:
        Path(target).write_text("old")
        os.chmod(target, 0o644)
    tmp_modes: list[int] = []
    fs = FaultFs()
    fs.hook("fsync", run=lambda path: tmp_modes.append(mode_of(path)), nth=None)
    atomic_write(fs, target, "héllo \ud83d")
    assert fs.names() == ["lstat", "open", "write", "fsync", "close", "lstat", "rename", "unlink"]
    calls = fs.resolved()
    tmp = calls[1][1]
    assert re.fullmatch(re.escape(target) + rf"\.tmp-{os.getpid()}-[0-9a-z]+", tmp)
    assert calls[0] == ("lstat", target)
    _, _, flags, mode = calls[1]
    assert flags & os.O_CREAT and flags & os.O_EXCL and flags & os.O_WRONLY
    assert mode == 0o600
    assert calls[2] == ("write", tmp, "héllo \ufffd".encode())
    assert calls[3:6] == [("fsync", tmp), ("close", tmp), ("lstat", target)]
    assert calls[6:] == [("rename", tmp, target), ("unlink", tmp)]
    assert tmp_modes == [0o600]
    assert Path(target).read_bytes() == "héllo \ufffd".encode()
    assert mode_of(target) == 0o600
    assert temps_in(d) == []


def test_s_io_4_temp_names_are_fresh(d: Path) -> None:
    fs = RecordingFs()
    target = str(d / "t.md")
    atomic_write(fs, target, "a")
    atomic_write(fs, target, "b")
    tmps = [src for _, src, _ in fs.named("rename")]
    assert len(set(tmps)) == 2


def test_s_io_4_unsafe_targets_refused(d: Path) -> None:
    os.mkfifo(d / "fifo.md")
    (d / "dir.md").mkdir()
    (d / "real.md").write_text("real")
    os.symlink(d / "real.md", d / "link.md")
    os.symlink(d / "none.md", d / "dangling.md")
    for name in ["fifo.md", "dir.md", "link.md", "dangling.md"]:
        target = str(d / name)
        fs = RecordingFs()
        box = run_promptly(partial(atomic_write, fs, target, "x"), str(d / "fifo.md"))
        err = box.get("error")
        assert isinstance(err, UnsafeFileError), name
        assert err.message == f"Unsafe non-regular file: {target}"
        assert fs.names() == ["lstat"]
    assert (d / "real.md").read_text() == "real"
    assert not (d / "none.md").exists()
    assert temps_in(d) == []


def test_s_io_4_other_lstat_errors_propagate(d: Path) -> None:
    (d / "file").write_text("x")
    target = str(d / "file" / "t.md")
    with pytest.raises(NodeError) as e:
        atomic_write(Fs(), target, "x")
    assert e.value.code == "ENOTDIR"
    assert e.value.message == f"ENOTDIR: not a directory, lstat '{target}'"


def test_s_io_4_recheck_after_temp(d: Path) -> None:
    target = str(d / "t.md")
    Path(target).write_text("old")
    (d / "elsewhere").write_text("elsewhere")

    def swap(path: str | None) -> None:
        os.unlink(target)
        os.symlink(d / "elsewhere", target)

    fs = FaultFs()
    fs.hook("close", run=swap, nth=None)
    with pytest.raises(UnsafeFileError) as e:
        atomic_write(fs, target, "new")
    assert e.value.message == f"Unsafe non-regular file: {target}"
    assert "rename" not in fs.names()
    assert fs.names()[-1] == "unlink"
    assert os.readlink(target) == str(d / "elsewhere")
    assert (d / "elsewhere").read_text() == "elsewhere"
    assert temps_in(d) == []


def test_s_io_4_write_and_fsync_failures_close_and_clean(d: Path) -> None:
    target = str(d / "t.md")
    Path(target).write_text("old")
    for op in ["write", "fsync"]:
        fs = FaultFs()
        fs.fail(op, err=errno.EIO, nth=None)
        with pytest.raises(NodeError) as e:
            atomic_write(fs, target, "new")
        assert e.value.code == "EIO"
        names = fs.names()
        assert "close" in names and names.index("close") > names.index(op)
        assert "rename" not in names and names[-1] == "unlink"
        assert Path(target).read_text() == "old"
        assert temps_in(d) == []


def test_s_io_4_rename_failure_removes_temp(d: Path) -> None:
    target = str(d / "t.md")
    Path(target).write_text("old")
    fs = FaultFs()
    fs.fail("rename", err=errno.EXDEV, nth=None)
    with pytest.raises(NodeError) as e:
        atomic_write(fs, target, "new")
    assert e.value.code == "EXDEV"
    assert Path(target).read_text() == "old"
    assert temps_in(d) == []


def test_s_io_4_unlink_errors_other_than_enoent_propagate(d: Path) -> None:
    target = str(d / "t.md")
    fs = FaultFs()
    fs.fail("unlink", err=errno.EPERM, nth=None)
    with pytest.raises(NodeError) as e:
        atomic_write(fs, target, "new")
    assert e.value.code == "EPERM"
    assert Path(target).read_text() == "new"  # the rename had happened


def test_s_io_4_existing_temp_name_is_not_reused(d: Path) -> None:
    class FixedFs(RecordingFs):
        def random_token(self) -> str:
            return "fixed"

    target = str(d / "t.md")
    tmp = f"{target}.tmp-{os.getpid()}-fixed"
    Path(tmp).write_text("someone else's")
    with pytest.raises(NodeError) as e:
        atomic_write(FixedFs(), target, "new")
    assert e.value.code == "EEXIST"
    assert not Path(target).exists()
    assert not Path(tmp).exists()  # step 6 unlinks the temporary path in all cases


def test_s_io_4_store_write_leaves_no_temporaries(env: StoreEnv) -> None:
    env.shared_mode()
    env.store.execute_write_memory("A", "a", "a")
    env.store.execute_remove_memory("A")
    env.store.execute_write_memory("A", "a", "a")
    assert temps_in(env.shared) == []
    assert sorted(os.listdir(env.shared)) == [".ocl-removed", "MEMORY.md", "a.md"]


# --- S-IO-5 exclusive publish ----------------------------------------------------------


def test_s_io_5_sequence_and_result(d: Path) -> None:
    target = str(d / "pub.jsonc")
    fs = RecordingFs()
    exclusive_publish(fs, target, "content")
    assert fs.names() == ["open", "write", "fsync", "close", "link", "unlink"]
    tmp = fs.calls[0][1]
    assert re.fullmatch(re.escape(target) + rf"\.tmp-{os.getpid()}-[0-9a-z]+", tmp)
    assert fs.calls[0][3] == 0o600
    assert fs.calls[4] == ("link", tmp, target)
    st = os.lstat(target)
    assert st.st_nlink == 1 and stat.S_IMODE(st.st_mode) == 0o600
    assert Path(target).read_text() == "content"
    assert temps_in(d) == []


def test_s_io_5_existing_target_never_replaced(d: Path) -> None:
    target = d / "pub.jsonc"
    target.write_text("theirs")
    os.symlink(d / "nowhere", d / "dangling")
    for t in [target, d / "dangling"]:
        fs = RecordingFs()
        with pytest.raises(NodeError) as e:
            exclusive_publish(fs, str(t), "ours")
        assert e.value.code == "EEXIST"
        tmp = fs.calls[0][1]
        assert e.value.message == f"EEXIST: file already exists, link '{tmp}' -> '{t}'"
        assert "lstat" not in fs.names()
    assert target.read_text() == "theirs"
    assert os.readlink(d / "dangling") == str(d / "nowhere")
    assert temps_in(d) == []


def test_s_io_5_racing_creator_wins(env: StoreEnv) -> None:
    rules = os.path.join(env.agent, "memory.jsonc")
    racer = "import sys; open(sys.argv[1], 'x').write('{\"max_lines\": 77}')"

    def race(_dst: str) -> None:
        subprocess.run([sys.executable, "-c", racer, rules], check=True)

    fs = FaultFs()
    fs.hook("link", run=race, match=lambda p: p == rules, nth=None)
    store = store_with(env, fs)
    rules_obj = store.parse_rules()
    assert rules_obj.max_lines == 77
    assert env.read("agent/memory.jsonc") == '{"max_lines": 77}'
    assert env.diagnostics == []
    assert temps_in(env.agent) == []


# --- S-IO-6 modes -----------------------------------------------------------------------


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_s_io_6_published_files_are_0600(env: StoreEnv, umask: int) -> None:
    os.umask(umask)
    env.put("agent/memory/RULES.jsonc", '{ "max_lines": 123 }')
    env.put(IDX, "- [T](t.md) 2026-08-01 -- s")
    env.put("agent/memory/t.md", "old\n")
    for rel in [IDX, "agent/memory/t.md"]:
        os.chmod(env.sandbox.path(rel), 0o664)
    outside = env.sandbox.path("alias.md")
    os.link(env.sandbox.path("agent/memory/t.md"), outside)
    ino = os.lstat(env.sandbox.path("agent/memory/t.md")).st_ino
    assert env.store.execute_write_memory("T", "c", "s") == 'Updated memory topic "T" (t.md).'
    for rel in [IDX, "agent/memory/t.md", "agent/memory.jsonc", "agent/memory/RULES.jsonc.bak"]:
        assert mode_of(env.sandbox.path(rel)) == 0o600, rel
    assert os.lstat(env.sandbox.path("agent/memory/t.md")).st_ino != ino
    assert outside.read_text() == "old\n"  # a new inode was published
    assert mode_of(env.sandbox.path("agent/memory/RULES.jsonc")) == 0o666 & ~umask


# --- S-IO-7 listing order ---------------------------------------------------------------


def test_s_io_7_body_search_order(env: StoreEnv) -> None:
    names = ["zeta.md", "alpha.md", "Beta.md", "10.md", "9.md", "Zz.md", "_u.md", "~t.md"]
    names += ["\u00e9x.md", "\uff21x.md", "\U0001f600x.md"]
    for n in names:
        env.put(f"agent/memory/{n}", "body with needle here\n")
    hits = env.store.search_memory("needle")
    assert [h.filename for h in hits] == [
        "10.md",
        "9.md",
        "Beta.md",
        "Zz.md",
        "_u.md",
        "alpha.md",
        "zeta.md",
        "~t.md",
        "\u00e9x.md",
        "\uff21x.md",
        "\U0001f600x.md",
    ]
    assert [h.name for h in hits][:3] == ["10", "9", "Beta"]


def test_s_io_7_scandir_sorts_raw_bytes(d: Path) -> None:
    raw = [b"\xff.md", "\U0001f600.md".encode(), "\uff21.md".encode(), b"b.md", b"A.md"]
    for name in reversed(raw):
        with open(os.path.join(os.fsencode(d), name), "wb"):
            pass
    got = Fs().scandir(str(d))
    # sorted by raw bytes; a name that is not UTF-8 is decoded as Node does, with U+FFFD
    assert got == [n.decode("utf-8", "replace") for n in sorted(raw)]
    assert got == ["A.md", "b.md", "\uff21.md", "\U0001f600.md", "\ufffd.md"]


# --- S-IO-8 non-atomic lock, no directory fsync, no OS locks ------------------------------


def test_s_io_8_lock_created_in_place_and_only_temps_fsynced(env: StoreEnv) -> None:
    env.store.parse_rules()  # configuration bootstrap happens before, outside the count
    fs = RecordingFs()
    store = store_with(env, fs)
    assert store.execute_write_memory("T", "c", "s") == 'Created memory topic "T" (t.md).'
    lock = os.path.join(env.local, ".lock")
    calls = fs.resolved()
    lock_opens = [args for name, *args in calls if name == "open" and args[0] == lock]
    assert len(lock_opens) == 2  # exclusive creation, then the release read
    _, flags, mode = lock_opens[0]
    assert flags & os.O_CREAT and flags & os.O_EXCL and mode == 0o666
    token_write = next(c for c in calls if c[0] == "write" and c[1] == lock)
    assert token_write[2].startswith(f"{os.getpid()}\t".encode())
    for name, *args in calls:
        if name in ("rename", "link"):
            assert args[1] != lock
        if name == "fsync":
            assert ".tmp-" in args[0]
    opened = [args[0] for name, *args in calls if name == "open"]
    assert all(not os.path.isdir(p) for p in opened)
    fsynced = {args[0] for name, *args in calls if name == "fsync"}
    assert len(fsynced) == 2  # topic and index temporaries, nothing else


def test_s_io_8_no_os_level_file_locks(env: StoreEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    import fcntl

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("OS-level lock used")

    for name in ["flock", "lockf", "fcntl"]:
        monkeypatch.setattr(fcntl, name, forbidden)
    env.shared_mode()
    assert env.store.execute_write_memory("T", "c", "s") == 'Created memory topic "T" (t.md).'
    assert env.store.execute_pin_memory("T", True).startswith('Pinned "T".')
    assert env.store.execute_remove_memory("T").startswith("Cannot remove")
