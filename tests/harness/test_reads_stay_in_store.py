"""Reads never leave the store (issue 25 item 5, SS-IO-3, SS-NAME-1): the
``shared-store/reads/*`` scenarios pass on the reference and fail on a reference whose
filesystem layer follows symlinks (planted through a driver shim: ``open`` without
``O_NOFOLLOW``, ``lstat`` as ``stat``), or that opens an index line's ``../`` name."""

from __future__ import annotations

from pathlib import Path

import pytest

from .shims import failures, plant

ROOT = Path(__file__).resolve().parents[2]
READS = ROOT / "scenarios/conformance/shared-store/reads"
FOLLOWS = (
    "import os, memconform.reference.fs as f\n"
    "_open, _stat = f.Fs.open, f.Fs.stat\n"
    "f.Fs.open = lambda self, path, flags, mode=0o666: _open(self, path, flags & ~os.O_NOFOLLOW, mode)\n"
    "f.Fs.lstat = lambda self, path: _stat(self, path)\n"
)
CAUGHT = ["symlinked-index-not-followed-by-read-index", "symlinked-index-not-followed-by-search",
          "symlinked-topic-not-followed-by-topic-content", "symlinked-topic-not-followed-by-search",
          "symlinked-removal-list-not-followed-by-write"]


@pytest.mark.parametrize("name", CAUGHT)
def test_ss_io_3_reads_pass_on_the_reference_and_fail_when_symlinks_are_followed(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = READS / f"{name}.json"
    assert failures(path) == []
    plant(tmp_path, monkeypatch, FOLLOWS)
    assert failures(path), f"a symlink-following store passes {name}"


def test_ss_name_1_a_parent_entry_opened_by_topic_content_leaks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reference that opens whatever filename it is given (no safe-name check) reads ../up.md."""
    path = READS / "parent-entry-never-followed-by-topic-content.json"
    assert failures(path) == []
    plant(tmp_path, monkeypatch, "import memconform.reference.index as i\ni.is_safe_filename = lambda name: True\n")
    assert failures(path), "a store that opens ../up.md passes"
