"""``.ocl-removed``: the removal-intent list of a memory directory (S-TOMB-1..5, S-FMT-14)."""

from __future__ import annotations

from .errors import NodeError
from .fs import Fs, atomic_write, store_read
from .index import is_safe_filename
from .paths import tombstones_path


def parse_tombstones(text: str) -> list[str]:
    """S-TOMB-2: safe filenames in order, no trimming, duplicates once."""
    return list(dict.fromkeys(p for p in text.split("\n") if is_safe_filename(p)))


def render_tombstones(names: list[str]) -> str:
    """S-FMT-14: entries joined by LF plus a final LF; the empty set is an empty file."""
    return "".join(f"{n}\n" for n in names)


def read_tombstones(fs: Fs, directory: str) -> list[str]:
    try:
        text = store_read(fs, tombstones_path(directory))
    except NodeError as e:
        if e.code == "ENOENT":
            return []
        raise
    return parse_tombstones(text)


def add_tombstone(fs: Fs, directory: str, filename: str) -> None:
    """S-TOMB-3: no write when already listed."""
    names = read_tombstones(fs, directory)
    if filename in names:
        return
    atomic_write(fs, tombstones_path(directory), render_tombstones([*names, filename]))


def clear_tombstone(fs: Fs, directory: str, filename: str) -> None:
    """S-TOMB-4: no write when not listed."""
    names = read_tombstones(fs, directory)
    if filename not in names:
        return
    atomic_write(
        fs, tombstones_path(directory), render_tombstones([n for n in names if n != filename])
    )
