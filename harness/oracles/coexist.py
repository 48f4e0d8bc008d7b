"""What two co-writers of one store owe each other, judged from its files (issue 14 item 4).

A cross-tool sequence runs each step on one of two implementations against one shared store.
Whatever either tool's result text says, after every mutating op the store must still hold
what the *other* writes did not aim at:

- every line of the index that is not an entry (headings, prose, entry-like lines naming
  an unsafe file), byte for byte (SS-IDX-2), and every indexed entry the op did not target (orphans and tombstoned files aside, which
  maintenance may drop), with its name, its metadata ``[pin]`` and its summary (SS-IDX-3;
  stale flags aside: stamping and healing them is maintenance, SS-IDX-6), and of duplicate
  lines the survivor's own pin (SS-IDX-4; a pin on a line that loses may go with it, as openpi
  and the reference do by S-IDX-4: a ``pin-dropped`` hazard, not a failure);
- every topic file it did not write, byte for byte (SS-FMT-3), and in the file it did write
  every frontmatter line but ``name``/``description``/``last_updated`` (``created`` and
  fields the writer does not know included, SS-FMT-1) and, for an append, the old body as a
  prefix (SS-FMT-2);
- every removal-list entry (SS-TOMB-2: only a write of that file clears it), and a removed,
  unindexed file stays unindexed (SS-TOMB-4: no repair, carry-over or write of another
  topic brings it back).

And over the whole sequence, no index line may change on every one of three or more
alternating writes of the two tools while neither aims at it, coming back to an earlier
rendering (a ``flip-flop``: SS-IDX-3 lets maintenance change a foreign line, and PEER-11
says the two tools may maintain it differently; they must not do so forever).

Clauses are docs/SHARED_STORE.md's.  Written from SPEC.md with the harness's own grammar (``oracles.grammar``), never the
reference's parsers.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .grammar import Line, parse, to_slug
from .spec import LOCK_NAME

INDEX = "MEMORY.md"
TOMBSTONES = ".ocl-removed"
MUTATING = frozenset({"write_memory", "remove_memory", "pin_memory", "repair_memory", "retire_recaps"})
RECAP_FILE = "last-session-recap.md"
_TEMP = re.compile(r"\.tmp-")
_VOLATILE_FM = ("name:", "description:", "last_updated:")

Files = Mapping[str, bytes]  # store-relative path -> bytes (one directory: the shared store)


@dataclass(frozen=True)
class Mark:
    """One driver op of a sequence and the store around it."""

    index: int  # the step number (1-based)
    role: str  # "A" | "B"
    impl: str  # who ran it, as it named itself
    op: str
    args: Mapping[str, Any]
    before: Files
    after: Files
    ok: bool  # the op answered without raising


@dataclass(frozen=True)
class Problem:
    """One thing a co-writer broke: ``kind`` is the finding kind, ``clause`` the SPEC source."""

    kind: str  # foreign-loss | removal-ignored | flip-flop | pin-dropped
    clause: str
    where: str
    expected: str
    actual: str
    fails: bool = True  # False: the contract allows it, the user still suffers (a hazard only)


def _text(files: Files, name: str) -> str | None:
    data = files.get(name)
    return None if data is None else data.decode("utf-8", "replace")


def entries(files: Files) -> dict[str, list[Line]]:
    """The parseable index entries of ``MEMORY.md``, by filename, in index order."""
    out: dict[str, list[Line]] = {}
    for raw in (_text(files, INDEX) or "").split("\n"):
        line = parse(raw)
        if line is not None:
            out.setdefault(line.filename, []).append(line)
    return out


def meta(line: Line) -> str:
    """REST before the first `` -- ``: where both tools agree the flags live (PEER-11)."""
    return line.rest.split(" -- ", 1)[0]


def summary(line: Line) -> str:
    """The summary, stale flags and spacing aside (S-IDX-6 may stamp or heal them)."""
    parts = line.rest.split(" -- ", 1)
    return " ".join(parts[1].replace("[stale?]", " ").split()) if len(parts) == 2 else ""


def _text_lines(files: Files) -> list[str]:
    """``MEMORY.md``'s non-blank lines that are not entries (headings, prose, comments,
    entry-like lines naming an unsafe file): kept byte for byte by every mutation."""
    return [ln for ln in (_text(files, INDEX) or "").split("\n") if ln.strip() and parse(ln) is None]


def tombstones(files: Files) -> set[str]:
    """The removal list's filenames, trimmed (each tool reads its own way; PEER-6)."""
    return {p.strip() for p in (_text(files, TOMBSTONES) or "").split("\n") if p.strip()}


SHARED_STORE = "home/.agents/memory/"  # the shared store, relative to a sandbox's root


def store_files(files: Mapping[str, bytes]) -> dict[str, bytes]:
    """The shared store's own files (top level) of a sandbox snapshot, store-relative."""
    n = len(SHARED_STORE)
    return {k[n:]: v for k, v in files.items() if k.startswith(SHARED_STORE) and "/" not in k[n:]}


def removal_undone(before: Files, after: Files) -> list[str]:
    """Files a run newly listed in the removal list that the index still names afterwards: the
    user's removal did not take (SS-REMOVE-1; openpi's and the reference's S-REMOVE-4 drops only
    the line it found, so a second line for the file survives).  Judged from bytes alone."""
    listed = tombstones(after) - tombstones(before)
    return sorted(f for f in listed if f in entries(after))


def _topic_files(files: Files) -> set[str]:
    return {
        n for n in files
        if "/" not in n and n.lower().endswith(".md") and n != INDEX and not n.startswith(".")
        and n != LOCK_NAME and not _TEMP.search(n)
    }


def targets(op: str, args: Mapping[str, Any], index: Mapping[str, list[Line]]) -> set[str]:
    """Filenames the op may legitimately change: every entry whose name equals or contains
    the topic (S-IDX-8 lookups), and the topic's slug file with any numeric or carry-over
    suffix (S-WRITE-6/7).  Generous on purpose: an unjust accusation is worse than a miss."""
    topic = args.get("topic")
    if op == "retire_recaps":
        return {RECAP_FILE}
    if not isinstance(topic, str) or not topic.strip():
        return set()
    low = topic.strip().lower()
    hit = {f for f, lines in index.items() if any(low in ln.name.lower() or ln.name.lower() in low for ln in lines)}
    slug = to_slug(topic)
    pattern = re.compile(re.escape(slug) + r"(-[0-9]+|-o[a-z]+m(-[0-9]+)?)?\.md", re.I) if slug else None
    hit |= {f for f in index if pattern is not None and pattern.fullmatch(f)}
    return hit


def _frontmatter(data: bytes | None) -> tuple[list[str], str] | None:
    """(frontmatter lines, body) of a topic file with a ``---`` block, else None."""
    if data is None:
        return None
    text = data.decode("utf-8", "replace")
    if not text.startswith("---\n"):
        return None
    end = text.find("\n---\n", 3)
    if end < 0:
        return None
    return text[4:end].split("\n"), text[end + 5:]


def check_step(mark: Mark) -> list[Problem]:
    """What ``mark``'s op broke of what it did not aim at (empty: it kept everything)."""
    if mark.op not in MUTATING:
        return []
    before_idx, after_idx = entries(mark.before), entries(mark.after)
    aimed = targets(mark.op, mark.args, before_idx) | targets(mark.op, mark.args, after_idx)
    changed = {n for n in set(mark.before) | set(mark.after) if mark.before.get(n) != mark.after.get(n)}
    written = _written(mark, aimed, changed)
    aimed |= written
    dead = tombstones(mark.before)
    where = f"step {mark.index} ({mark.op} by {mark.role}: {mark.impl})"
    out: list[Problem] = []
    for f, lines in before_idx.items():
        if f in aimed or f in dead or f not in mark.before or f not in mark.after:
            continue  # targeted, tombstoned, or an orphan maintenance may drop
        kept = after_idx.get(f)
        if not kept:
            out.append(Problem("foreign-loss", "SS-IDX-3", where, f"entry {lines[0].render()!r} kept",
                               "dropped from MEMORY.md"))
            continue
        pinned = [ln for ln in lines if "[pin]" in meta(ln)]
        if pinned and not any("[pin]" in meta(ln) for ln in kept):
            # SS-IDX-4: the line kept keeps its own pin; a losing duplicate's pin may go with it
            own = any((ln.name, summary(ln)) == (kept[0].name, summary(kept[0])) for ln in pinned)
            out.append(Problem("foreign-loss" if own else "pin-dropped", "SS-IDX-4", where,
                               f"{f} stays pinned ({pinned[0].render()!r})", kept[0].render(), fails=own))
        if len(lines) > 1:
            continue  # duplicates: maintenance keeps one best line (SS-IDX-5), its fields
        if not any("[pin]" in ln.rest for ln in lines) and any("[pin]" in meta(ln) for ln in kept):
            out.append(Problem("foreign-loss", "SS-IDX-3", where, f"{f} stays unpinned ({lines[0].render()!r})",
                               kept[0].render()))
        if len(kept) == 1:
            old, new = lines[0], kept[0]
            if old.name != new.name or summary(old) != summary(new):
                out.append(Problem("foreign-loss", "SS-IDX-3", where, f"name and summary of {old.render()!r}",
                                   new.render()))
    text_after = Counter(_text_lines(mark.after))
    for line, n in sorted(Counter(_text_lines(mark.before)).items()):
        if text_after[line] < n:
            out.append(Problem("foreign-loss", "SS-IDX-2", where, f"index text line {line!r} kept", "dropped"))
    for f in sorted(_topic_files(mark.before) - aimed):
        if mark.after.get(f) != mark.before[f]:
            got = "deleted" if f not in mark.after else "rewritten"
            out.append(Problem("foreign-loss", "SS-FMT-3", where, f"topic file {f} unchanged", got))
    for f in sorted(written):
        out += _kept_frontmatter(where, f, mark)
    gone = dead - tombstones(mark.after) - (aimed if mark.op == "write_memory" else set())
    for f in sorted(gone):
        out.append(Problem("foreign-loss", "SS-TOMB-2", where, f"{f} stays in {TOMBSTONES}", "dropped from it"))
    for f in sorted(dead - set(before_idx) - aimed):
        if f in after_idx:
            out.append(Problem("removal-ignored", "SS-TOMB-4", where, f"removed {f} stays out of the index",
                               after_idx[f][0].render()))
    return out


def _written(mark: Mark, aimed: set[str], changed: set[str]) -> set[str]:
    """The topic files a write wrote: changed ones it aimed at, or new ones."""
    if mark.op != "write_memory":
        return set()
    created = _topic_files(mark.after) - _topic_files(mark.before)
    return changed & (aimed | created)


def split_topics(marks: Sequence[Mark]) -> list[Problem]:
    """One topic (its name, case aside) that the two tools wrote into different files, both
    kept: each tool's readers now see half of it (SS-WRITE-1: a topic matching an entry's
    name updates that entry's file)."""
    files: dict[str, dict[str, set[str]]] = {}
    made: dict[str, tuple[Mark, list[str]]] = {}  # file -> the write that first wrote it, the topic's files before it
    for m in marks:
        topic = m.args.get("topic")
        if m.op != "write_memory" or not m.ok or not isinstance(topic, str):
            continue
        key = " ".join(topic.lower().split())
        changed = {n for n in set(m.before) | set(m.after) if m.before.get(n) != m.after.get(n)}
        aimed = targets(m.op, m.args, entries(m.before)) | targets(m.op, m.args, entries(m.after))
        # a file the step created counts for this topic only if it is not indexed under another name
        wrote = {f for f in _written(m, aimed, changed) if _named(entries(m.after).get(f, []), key)}
        had = sorted(f for f, lines in entries(m.before).items() if _named(lines, key, unindexed=False))
        for f in wrote:
            made.setdefault(f, (m, had))
        files.setdefault(key, {}).setdefault(m.role, set()).update(wrote)
    out = []
    last = marks[-1].after if marks else {}
    for topic, by_role in sorted(files.items()):
        both = set().union(*by_role.values())
        kept = {f for f in both if f in last}
        if len(by_role) > 1 and len(kept) > 1:
            shown = "; ".join(f"{role}: {', '.join(sorted(fs))}" for role, fs in sorted(by_role.items()))
            out.append(Problem("split-topic", "SS-WRITE-1", f"topic {topic!r}", "both tools write one file",
                               shown + _split_by(kept, made)))
    return out


def _named(lines: Sequence[Line], key: str, *, unindexed: bool = True) -> bool:
    """Entries ``lines`` (of one file) name the topic ``key`` (case and spacing aside); a file
    with no entry counts when ``unindexed``."""
    if not lines:
        return unindexed
    return any(" ".join(ln.name.lower().split()) == key for ln in lines)


def _split_by(kept: set[str], made: Mapping[str, tuple[Mark, list[str]]]) -> str:
    """The step that made a split: the latest first write of a kept file, and the topic's
    files the index named before it (so a second file made beside them shows): the verdict
    names the step and its tool, not only the pair (issue 30 item 4)."""
    known = [(made[f][0].index, f) for f in kept if f in made]
    if not known:
        return ""
    _, f = max(known)
    m, had = made[f]
    before = [h for h in had if h != f]
    beside = f" while the index already named the topic in {', '.join(before)}" if before else ""
    return f"; split made by step {m.index} ({m.op} by {m.role}, {m.impl}), which wrote {f}{beside}"


def _kept_frontmatter(where: str, f: str, mark: Mark) -> list[Problem]:
    """A write into an existing topic keeps its frontmatter (``created`` and unknown fields)
    and, unless it replaces, the old body as a prefix (S-WRITE-9/10)."""
    old, new = _frontmatter(mark.before.get(f)), _frontmatter(mark.after.get(f))
    if old is None:
        return []
    if new is None:
        return [Problem("foreign-loss", "SS-FMT-1", where, f"{f} keeps its frontmatter block", "no frontmatter")]
    out = []
    lost = [ln for ln in old[0] if not ln.startswith(_VOLATILE_FM) and ln not in new[0]]
    if lost:
        out.append(Problem("foreign-loss", "SS-FMT-1", where, f"{f} frontmatter keeps {lost!r}", repr(new[0])))
    replacing = mark.args.get("mode") == "replace" or mark.args.get("overwrite") is True
    if not replacing and not new[1].startswith(old[1].rstrip("\n")):
        out.append(Problem("foreign-loss", "SS-FMT-2", where, f"{f} body starts with the old body {old[1]!r}",
                           repr(new[1][:200])))
    return out


def _render(files: Files, f: str) -> str:
    return "\n".join(ln.render() for ln in entries(files).get(f, []))


def flip_flops(marks: Sequence[Mark], min_changes: int = 3) -> list[Problem]:
    """Index lines that change on every write of a run of alternating tools (at least
    ``min_changes`` in a row, none aimed at the line) and come back to an earlier rendering."""
    writes = [m for m in marks if m.op in MUTATING and m.ok]
    out: list[Problem] = []
    seen: set[str] = set()
    for m in writes:
        seen |= set(entries(m.after))
    for f in sorted(seen):
        run: list[Mark] = []
        for m in writes:
            before, after = _render(m.before, f), _render(m.after, f)
            if before == after or not before or not after or f in targets(m.op, m.args, entries(m.before)):
                run = []
                continue
            if run and run[-1].role == m.role:
                run = []
            run.append(m)
            renders = [_render(run[0].before, f)] + [_render(x.after, f) for x in run]
            if len(run) >= min_changes and len(set(renders)) < len(renders):
                out.append(Problem(
                    "flip-flop", "SS-IDX-3",
                    f"index line of {f} over steps " + ", ".join(f"{x.index} ({x.role}: {x.impl})" for x in run),
                    "a line neither tool aims at settles after one rewrite",
                    " -> ".join(repr(r) for r in renders),
                ))
                break
    return out
