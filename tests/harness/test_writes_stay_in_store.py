"""Writes never leave the store (issue 30 item 6, SS-IO-2): the ``shared-store/io/symlinked-*-outside-*``
scenarios pass on the reference and fail on a reference that writes through a symlink (planted
through a driver shim: store files written in place, following links, and ``lstat`` as ``stat``
so the regular-file probes see the link's target).  The verdict comes from bytes alone: the
outside file's, and no outside text in any store file (``then.excludes``), never a reader op.
A temporary whose name is taken (a planted symlink) fails the write without following it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memconform.reference import Store
from memconform.reference.errors import AggregateJsError
from memconform.reference.fs import Fs, NodeError

from .shims import failures, plant

ROOT = Path(__file__).resolve().parents[2]
IO = ROOT / "scenarios/conformance/shared-store/io"
WRITES_THROUGH = (
    "import os, memconform.reference.fs as f, memconform.reference.store as s, memconform.reference.tombstones as t\n"
    "_open, _stat = f.Fs.open, f.Fs.stat\n"
    "f.Fs.open = lambda self, path, flags, mode=0o666: _open(self, path, flags & ~os.O_NOFOLLOW, mode)\n"
    "f.Fs.lstat = lambda self, path: _stat(self, path)\n"
    "def inplace(fs, target, content):\n"
    "    with open(target, 'w', encoding='utf-8') as fh:\n"
    "        fh.write(content)\n"
    "s.atomic_write = t.atomic_write = inplace\n"
)
CAUGHT = ["symlinked-topic-outside-write-append", "symlinked-topic-outside-write-replace",
          "symlinked-removal-list-outside-remove", "symlinked-removal-list-outside-write-replace",
          "symlinked-index-outside-write-new", "symlinked-index-outside-pin"]


def test_every_written_file_meets_a_symlink_out_of_the_store_in_every_writing_op() -> None:
    """The matrix is whole: index, removal list and topic × write new/append/replace, remove, pin, repair."""
    names = {p.stem for p in IO.glob("symlinked-*-outside-*.json")}
    want = {f"symlinked-{t}-outside-{o}" for t in ("index", "removal-list", "topic")
            for o in ("write-new", "write-append", "write-replace", "remove", "pin", "repair")}
    assert names == want
    for name in names:
        then = json.loads((IO / f"{name}.json").read_text(encoding="utf-8"))["then"]
        assert then["unchanged"] and then["excludes"], name  # judged from bytes, outside and in


@pytest.mark.parametrize("name", CAUGHT)
def test_ss_io_2_writes_pass_on_the_reference_and_fail_when_written_through_a_link(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = IO / f"{name}.json"
    assert failures(path) == []
    plant(tmp_path, monkeypatch, WRITES_THROUGH)
    assert failures(path), f"a store that writes through symlinks passes {name}"


class TakenTemp(Fs):
    """Every temporary name the store picks is already a symlink to ``outside`` (a collision)."""

    def __init__(self, outside: Path) -> None:
        super().__init__()
        self.outside = outside
        self.planted: list[str] = []

    def random_token(self) -> str:
        return "taken"

    def open(self, path: str, flags: int, mode: int = 0o666) -> int:
        if ".tmp-" in path and not os.path.lexists(path):
            os.symlink(self.outside, path)
            self.planted.append(path)
        return super().open(path, flags, mode)


@pytest.mark.parametrize("op", ["write-new", "write-append", "remove", "pin"])
def test_ss_io_2_a_taken_temporary_name_is_never_written_through(op: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    store_dir = home / ".agents" / "memory"
    store_dir.mkdir(parents=True)
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "memory.jsonc").write_text('{"shared_dir": true}\n')
    index = "# Memory Index\n\n- [Kept](kept.md) 2026-08-01T00:00:00+00:00 -- kept"
    (store_dir / "MEMORY.md").write_text(index)
    (store_dir / "kept.md").write_text("kept\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("OUTSIDE-SECRET-7f3a\n")
    fs = TakenTemp(outside)
    env = {"PI_CODING_AGENT_DIR": str(agent), "PI_SHARED_MEMORY_HOME": str(home), "HOME": str(home)}
    store = Store(env, fs=fs)
    with pytest.raises((NodeError, AggregateJsError)) as raised:
        if op == "write-new":
            store.execute_write_memory("Fresh", "fresh", "fresh")
        elif op == "write-append":
            store.execute_write_memory("Kept", "more", "more")
        elif op == "remove":
            store.execute_remove_memory("Kept")
        else:
            store.execute_pin_memory("Kept", True)
    # EEXIST, or (an append restoring the topic it never changed meets a taken name again) SS-WRITE-3's aggregate
    assert "EEXIST" in repr(raised.value) or isinstance(raised.value, AggregateJsError)
    assert fs.planted, "no temporary was attempted"
    assert outside.read_text() == "OUTSIDE-SECRET-7f3a\n"
    assert (store_dir / "MEMORY.md").read_text() == index
    assert (store_dir / "kept.md").read_text() == "kept\n"
    for p in store_dir.iterdir():
        assert "OUTSIDE-SECRET" not in (p.read_text() if not p.is_symlink() else ""), p


def test_then_excludes_finds_outside_text_in_any_store_file_and_nothing_else(tmp_path: Path) -> None:
    from memconform.harness.gate.scenarios import Then
    from memconform.harness.oracles.expect import check_then

    then = Then(excludes={"home/.agents/memory": ("OUTSIDE-SECRET",)})
    clean = {"home/.agents/memory/a.md": b"a\n", "home/outside/x": b"OUTSIDE-SECRET\n"}
    assert check_then(then, clean, clean, tmp_path) == []
    leaked = {**clean, "home/.agents/memory/kept.md": b"---\nname: x\n---\nOUTSIDE-SECRET body\n"}
    (f,) = check_then(then, clean, leaked, tmp_path)
    assert f.where == "file home/.agents/memory/kept.md" and f.detail == "outside text in the store"
