"""Store invariants checked on a directory after a run (SPEC S-INV).

Each check returns violations naming the clause they break, so a report can say which
guarantee an implementation lost, not just that "something differs".
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .grammar import Line, parse
from .spec import FRONTMATTER_KEYS, INDEX_NAME, LOCK_NAME, TEMP_NAME, TOMBSTONES


@dataclass(frozen=True)
class Violation:
    clause: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.clause} {self.path}: {self.message}"


def _index_lines(directory: Path) -> list[str] | None:
    index = directory / INDEX_NAME
    try:
        if not stat.S_ISREG(index.lstat().st_mode):
            return None
        return index.read_bytes().decode("utf-8", "replace").split("\n")
    except OSError:
        return None


def no_leftovers(directory: Path) -> list[Violation]:
    """S-INV-2: no lock and no temporary survives a completed operation."""
    out: list[Violation] = []
    if not directory.is_dir():
        return out
    for name in sorted(os.listdir(directory)):
        if name == LOCK_NAME:
            out.append(Violation("S-INV-2", str(directory / name), "lock file left behind"))
        elif TEMP_NAME.search(name):
            out.append(Violation("S-INV-2", str(directory / name), "temporary file left behind"))
    return out


def unique_filenames(directory: Path) -> list[Violation]:
    """S-INV-2: each filename occurs in at most one parseable index entry."""
    lines = _index_lines(directory)
    if lines is None:
        return []
    counts = Counter(p.filename for p in map(parse, lines) if p is not None)
    return [
        Violation("S-INV-2", str(directory / INDEX_NAME), f"{name} indexed {n} times")
        for name, n in sorted(counts.items())
        if n > 1
    ]


def entries_regular(directory: Path) -> list[Violation]:
    """S-INV-2: every parseable entry names a regular file in the directory."""
    lines = _index_lines(directory)
    if lines is None:
        return []
    out = []
    for p in map(parse, lines):
        if p is None:
            continue
        try:
            regular = stat.S_ISREG((directory / p.filename).lstat().st_mode)
        except OSError:
            regular = False
        if not regular:
            out.append(
                Violation("S-INV-2", str(directory / INDEX_NAME), f"{p.filename} is not a regular file")
            )
    return out


def _indexed_topics(directory: Path) -> list[tuple[Line, str]]:
    """Each parseable index entry with its topic file's text (entries without a file skipped)."""
    lines = _index_lines(directory)
    out = []
    for p in map(parse, lines or []):
        if p is None:
            continue
        try:
            out.append((p, (directory / p.filename).read_bytes().decode("utf-8", "replace")))
        except OSError:
            continue
    return out


def frontmatter_complete(directory: Path) -> list[Violation]:
    """S-INV-2: indexed topics carry name, description, last_updated and a created line."""
    out = []
    for p, text in _indexed_topics(directory):
        head = text.split("\n---", 1)[0]
        for key in FRONTMATTER_KEYS:
            if f"\n{key}" not in head:
                out.append(Violation("S-INV-2", str(directory / p.filename), f"no {key} line"))
    return out


def names_match(directory: Path) -> list[Violation]:
    """Issue 4: an indexed topic's frontmatter ``name`` is its index entry's name."""
    out = []
    for p, text in _indexed_topics(directory):
        m = re.search(r"^name: (.*)$", text.split("\n---", 1)[0], re.M)
        if m is None:
            continue
        try:
            name = json.loads(m.group(1))
        except ValueError:
            name = m.group(1)
        if name != p.name:
            out.append(Violation("S-WRITE-9", str(directory / p.filename), f"name {name!r} but indexed as {p.name!r}"))
    return out


def not_tombstoned(directory: Path) -> list[Violation]:
    """S-INV-7 at quiescence: no indexed entry is listed in ``.ocl-removed``.

    Allowed after a crash (S-INV-8.2/8.3) and after A-5's duplicate lines, so it is not
    among the default checks; interop runs without crashes use it.
    """
    lines = _index_lines(directory)
    try:
        removed = set((directory / TOMBSTONES).read_text("utf-8", "replace").split("\n"))
    except OSError:
        return []
    if lines is None:
        return []
    return [
        Violation("S-INV-7", str(directory / INDEX_NAME), f"{p.filename} is indexed and tombstoned")
        for p in map(parse, lines)
        if p is not None and p.filename in removed
    ]


CHECKS = {
    "leftovers": no_leftovers,
    "unique": unique_filenames,
    "regular": entries_regular,
    "frontmatter": frontmatter_complete,
    "names": names_match,
    "tombstones": not_tombstoned,
}
ALL_CHECKS = tuple(CHECKS)
DEFAULT_CHECKS = ("leftovers", "unique", "regular")


def check_store(directory: str | os.PathLike[str], names: tuple[str, ...] = DEFAULT_CHECKS) -> list[Violation]:
    d = Path(directory)
    return [v for name in names for v in CHECKS[name](d)]


def check_sandbox(root: str | os.PathLike[str], names: tuple[str, ...] = DEFAULT_CHECKS) -> list[Violation]:
    """Both memory directories of a sandbox (local and shared)."""
    base = Path(root)
    out: list[Violation] = []
    for d in (base / "agent" / "memory", base / "home" / ".agents" / "memory"):
        out.extend(check_store(d, names))
    return out
