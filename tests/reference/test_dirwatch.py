"""The directory watch answers what a listing at the same moment answers (S-IO-1, S-IDX-4).

``reference.dirwatch.WatchingFs`` replaces the per-write listing that maintenance uses to
learn which index entries name regular files.  Real directories, real FIFOs, symlinks, hard
links, renames and forks: after every change the watch's set must equal a fresh listing.
Every watcher made here is closed: a user has 128 inotify instances, shared by every test
process on the machine.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memconform.reference import dirwatch
from memconform.reference.dirwatch import WATCHER, DirWatcher, WatchingFs
from memconform.reference.fs import Fs, list_regular
from tests.support import examples

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux-only")



@pytest.fixture
def watcher() -> Iterator[DirWatcher]:
    made = DirWatcher()
    yield made
    made.close()


NAMES = ["a.md", "b.md", "c.md", "MEMORY.md", ".lock", "x.md.tmp-1-a", "é.md"]


def mutate(d: Path, op: str, name: str, other: str) -> None:
    """One directory change; errors (the name is missing, or a directory) are just skipped."""
    p, q = d / name, d / other
    try:
        if op == "file":  # non-blocking: the name may be a FIFO without a reader
            os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK, 0o644))
        elif op == "fifo":
            os.mkfifo(p)
        elif op == "symlink":
            os.symlink(other, p)
        elif op == "dir":
            p.mkdir()
        elif op == "unlink":
            if p.is_dir() and not p.is_symlink():
                p.rmdir()
            else:
                p.unlink()
        elif op == "rename":
            os.rename(p, q)
        elif op == "link":
            os.link(p, q)
        elif op == "raw":  # a name that is not UTF-8
            raw = os.fsencode(d) + b"/\xff" + os.fsencode(name)
            os.close(os.open(raw, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK, 0o644))
    except OSError:
        pass


ops = st.lists(
    st.tuples(
        st.sampled_from(["file", "fifo", "symlink", "dir", "unlink", "rename", "link", "raw"]),
        st.sampled_from(NAMES),
        st.sampled_from(NAMES),
        st.booleans(),  # ask the watch after this change?
    ),
    max_size=25,
)


@settings(max_examples=examples(120), deadline=None)
@given(ops)
def test_s_io_1_the_watch_equals_a_listing_after_any_changes(tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, str, str, bool]]) -> None:
    """S-IO-1: regular files only (FIFOs, symlinks, directories are not), at every look."""
    d = tmp_path_factory.mktemp("watched")
    watcher = DirWatcher()
    try:
        assert watcher.regular_names(str(d)) == set()
        for op, name, other, look in steps:
            mutate(d, op, name, other)
            if look:
                assert watcher.regular_names(str(d)) == list_regular(str(d))
        assert watcher.regular_names(str(d)) == list_regular(str(d))
    finally:
        watcher.close()


def test_s_io_1_a_directory_replaced_at_its_path_is_watched_afresh(watcher: DirWatcher, tmp_path: Path) -> None:
    """S-IO-1: the watch follows the inode; a new directory at the path is listed anew."""
    d = tmp_path / "memory"
    d.mkdir()
    (d / "a.md").write_text("x")
    assert watcher.regular_names(str(d)) == {"a.md"}
    d.rename(tmp_path / "old")
    d.mkdir()
    (d / "b.md").write_text("x")
    assert watcher.regular_names(str(d)) == {"b.md"}
    (tmp_path / "old" / "c.md").write_text("x")  # the old inode's events change nothing here
    assert watcher.regular_names(str(d)) == {"b.md"}


def test_s_io_1_the_same_directory_under_two_paths_shares_one_answer(watcher: DirWatcher, tmp_path: Path) -> None:
    d = tmp_path / "memory"
    d.mkdir()
    (tmp_path / "alias").symlink_to(d)
    assert watcher.regular_names(str(d)) == set()
    assert watcher.regular_names(str(tmp_path / "alias")) == set()
    (d / "a.md").write_text("x")
    assert watcher.regular_names(str(tmp_path / "alias")) == {"a.md"}
    assert watcher.regular_names(str(d)) == {"a.md"}


def test_s_io_1_a_forked_child_does_not_steal_the_parents_events(tmp_path: Path) -> None:
    """S-IO-1: after fork the child starts its own watch; the parent's queue stays its own."""
    (tmp_path / "a.md").write_text("x")
    assert WATCHER.regular_names(str(tmp_path)) == {"a.md"}
    (tmp_path / "b.md").write_text("x")  # queued for the parent
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        ok = False
        try:
            ok = WATCHER.regular_names(str(tmp_path)) == {"a.md", "b.md"}
            os.mkfifo(tmp_path / "c.md")
            ok = ok and WATCHER.regular_names(str(tmp_path)) == {"a.md", "b.md"}
        finally:
            os.write(w, b"1" if ok else b"0")
            os._exit(0)
    os.close(w)
    assert os.read(r, 1) == b"1"
    os.waitpid(pid, 0)
    os.close(r)
    assert WATCHER.regular_names(str(tmp_path)) == {"a.md", "b.md"}


def test_s_io_1_a_full_queue_makes_the_watch_list_again(watcher: DirWatcher, tmp_path: Path) -> None:
    """S-IO-1: after IN_Q_OVERFLOW nothing is trusted: the next look lists."""
    assert watcher.regular_names(str(tmp_path)) == set()
    (tmp_path / "a.md").write_text("x")
    watcher._drain()
    overflow = dirwatch._EVENT.pack(-1, dirwatch.IN_Q_OVERFLOW, 0, 0)
    watcher._apply(overflow)
    assert all(not w.valid for w in watcher._by_wd.values())
    assert watcher.regular_names(str(tmp_path)) == {"a.md"}


def test_s_io_1_a_filesystem_the_watch_cannot_vouch_for_is_listed() -> None:
    """S-IO-1: procfs (like NFS or FUSE) is not on the local list: the caller lists."""
    assert WATCHER.regular_names("/proc/self") is None
    assert WatchingFs().regular_names("/proc/self") == list_regular("/proc/self")


def test_s_io_1_fs_answers_the_same_with_and_without_the_watch(tmp_path: Path, watcher: DirWatcher) -> None:
    for name in ("a.md", "b.md"):
        (tmp_path / name).write_text("x")
    os.mkfifo(tmp_path / "f.md")
    watched = WatchingFs(watcher).regular_names(str(tmp_path))
    assert watcher._by_path  # the watch answered, not the listing
    assert Fs().regular_names(str(tmp_path)) == watched == {"a.md", "b.md"}


def test_s_io_1_many_directories_keep_a_bounded_number_of_watches(watcher: DirWatcher, tmp_path: Path) -> None:
    for i in range(dirwatch._KEEP + 10):
        d = tmp_path / f"d{i}"
        d.mkdir()
        (d / "a.md").write_text("x")
        assert watcher.regular_names(str(d)) == {"a.md"}
    assert len(watcher._by_path) == dirwatch._KEEP
    assert len(watcher._by_wd) == dirwatch._KEEP


def test_s_io_1_paths_the_watch_cannot_take_fall_back_to_the_listing_and_its_error(tmp_path: Path) -> None:
    """S-IO-1: a missing directory or a file is not watched; the listing names the failure."""
    from memconform.reference.errors import NodeError

    (tmp_path / "file.md").write_text("x")
    for path, code in ((tmp_path / "missing", "ENOENT"), (tmp_path / "file.md", "ENOTDIR")):
        assert WATCHER.regular_names(str(path)) is None
        with pytest.raises(NodeError) as info:
            WatchingFs().regular_names(str(path))
        assert (info.value.code, info.value.syscall) == (code, "scandir")


def test_s_io_1_a_probe_that_fails_for_another_reason_than_a_missing_name_lists(watcher: DirWatcher, tmp_path: Path) -> None:
    """S-IO-1: ENAMETOOLONG on a changed name: the watch steps aside, the listing answers."""
    d = tmp_path
    while len(str(d)) < 3800:  # deep enough that directory + a long name exceeds PATH_MAX
        d = d / ("d" * 200)
        d.mkdir()
    assert watcher.regular_names(str(d)) == set()
    long_name = "n" * 250 + ".md"
    dfd = os.open(d, os.O_RDONLY)
    os.close(os.open(long_name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=dfd))  # the full path is too long
    os.close(dfd)
    assert watcher.regular_names(str(d)) is None
    assert WatchingFs(watcher).regular_names(str(d)) == {long_name}


def test_s_io_1_without_inotify_the_watch_always_defers_to_the_listing(watcher: DirWatcher, tmp_path: Path) -> None:
    watcher._broken = True  # as on a platform without inotify
    assert watcher.regular_names(str(tmp_path)) is None


# --- the seam: chosen at the edge ---------------------------------------------------------


def test_the_watch_is_chosen_at_the_edge_and_off_with_dirwatch_0(tmp_path: Path) -> None:
    """A ``Store`` alone lists; ``serve``/the CLI/the bench watch unless MEMCONFORM_DIRWATCH=0."""
    from memconform.reference.edge import edge_fs, edge_store
    from memconform.reference.store import Store

    assert type(Store({"HOME": str(tmp_path)}).fs) is Fs
    assert type(edge_fs({})) is WatchingFs
    assert type(edge_fs({"MEMCONFORM_DIRWATCH": "1"})) is WatchingFs
    assert type(edge_fs({"MEMCONFORM_DIRWATCH": "0"})) is Fs
    store = edge_store({"HOME": str(tmp_path), "MEMCONFORM_DIRWATCH": "0"})
    assert type(store.fs) is Fs and store.paths.shared_home == str(tmp_path)


def test_the_fs_seam_neither_imports_the_watch_nor_reads_the_environment() -> None:
    """``reference.fs`` is the plain seam: the watch is a subclass elsewhere, nothing read at import."""
    import ast
    import subprocess

    from memconform.reference import fs as reference_fs

    tree = ast.parse(Path(reference_fs.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "dirwatch" not in imported and "memconform.reference.dirwatch" not in imported
    names = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert not names & {"environ", "getenv"}
    code = "import sys, memconform.reference.fs, memconform.reference.store; print(sorted(m for m in sys.modules if m in ('memconform.reference.dirwatch', 'memconform.reference.index_view')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"  # a Store alone loads no speed path
