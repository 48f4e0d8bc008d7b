"""The shared store compared by its bytes, under the normalisation SPEC §20 allows.

Two co-writers may render one fact differently (docs/SHARED_STORE.md SS-NORM-1…4); nothing
else may differ.  What is normalised, and nothing more:

- index entries (``MEMORY.md``) are compared by parsed fields where PEER-10/PEER-11 permit
  another rendering: the flags and the stamp of an entry's metadata part may come in any
  order (PEER-11 "stamps only the metadata part"), so an entry is its indentation, name,
  filename, pin flag, stale flag, stamp, the metadata's other text, and its summary; every
  other index line, and the number and order of lines, compares byte for byte;
- a temporary's name is ``«file».tmp-*`` whichever suffix form the writer uses (S-IO-4,
  PEER-5);
- in an expected text ``${TS}`` stands for any local timestamp (S-FMT-3), ``${DATE}`` for
  any calendar date (S-FMT-4) and ``${STAMP}`` for either (an append's heading line, whose
  rendering SS-FMT-2 leaves free: openpi's UTC date, OpenCode's timestamp, PEER-12); a
  literal stamp must be equal.

Topic files and the removal list compare byte for byte (with those two tokens).  Written from
SPEC.md with this wing's own grammar (``oracles.grammar``), never the reference's parsers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .grammar import first_date, parse
from .spec import INDEX_NAME, TEMP_SUFFIX

TS_TOKEN, DATE_TOKEN, STAMP_TOKEN = "${TS}", "${DATE}", "${STAMP}"
TS_PATTERN = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[+-][0-9]{2}:[0-9]{2}"
DATE_PATTERN = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
_TOKENS = {TS_TOKEN: TS_PATTERN, DATE_TOKEN: DATE_PATTERN, STAMP_TOKEN: f"(?:{TS_PATTERN}|{DATE_PATTERN})"}
_FLAGS = ("[pin]", "[stale?]")
_SPACES = re.compile(" +")


def temp_name(rel: str) -> str:
    """``…/MEMORY.md.tmp-*`` for either temporary form (``-pid-rand`` or ``-pid-ms-rand``)."""
    return TEMP_SUFFIX.sub(".tmp-*", rel)


def _pattern(expected: str) -> re.Pattern[str]:
    """An expected text as a full-match pattern: literal except the stamp tokens."""
    parts = re.split(r"(\$\{TS\}|\$\{DATE\}|\$\{STAMP\})", expected)
    return re.compile("".join(_TOKENS.get(p, re.escape(p)) for p in parts), re.S)


def text_equal(expected: str, actual: str) -> bool:
    """Equal, a ``${TS}``/``${DATE}``/``${STAMP}`` in ``expected`` matching any stamp of that format."""
    if not any(token in expected for token in _TOKENS):
        return expected == actual
    return _pattern(expected).fullmatch(actual) is not None


@dataclass(frozen=True)
class EntryFields:
    """What an index entry says, whatever order its metadata part is rendered in."""

    lead: str  # the text before ``- [`` (indentation)
    name: str
    filename: str
    pinned: bool
    stale: bool
    stamp: str
    other: str  # the metadata part's remaining text, spaces collapsed
    summary: str | None  # after the first `` -- ``; None when there is none
    tail: str  # anything after the entry on the same LF-line (after a CR or U+2028)


def entry_fields(line: str) -> EntryFields | None:
    """The fields of an index entry line (S-FMT-6, S-IDX-1), or None for any other line."""
    e = parse(line)
    if e is None:
        return None
    tail = line[len(e.render()):]
    meta, sep, summary = e.rest.partition(" -- ")
    stamp = first_date(meta) or next((t for t in (TS_TOKEN, DATE_TOKEN) if t in meta), "")
    other = meta.replace(stamp, "", 1) if stamp else meta
    for flag in _FLAGS:
        other = other.replace(flag, "")
    lead = e.prefix[: e.prefix.index("-")]
    return EntryFields(
        lead, e.name, e.filename, "[pin]" in meta, "[stale?]" in meta, stamp,
        _SPACES.sub(" ", other).strip(), summary if sep else None, tail,
    )


def _entry_diff(expected: EntryFields, actual: EntryFields) -> str:
    out = []
    for key in ("lead", "name", "filename", "pinned", "stale", "other", "summary", "tail"):
        want, got = getattr(expected, key), getattr(actual, key)
        if want != got:
            out.append(f"{key} {want!r} ≠ {got!r}")
    if not text_equal(expected.stamp, actual.stamp):
        out.append(f"stamp {expected.stamp!r} ≠ {actual.stamp!r}")
    return "; ".join(out)


def index_differences(expected: str, actual: str) -> list[str]:
    """Every difference between two index texts that the normalisation does not allow."""
    want, got = expected.split("\n"), actual.split("\n")
    out: list[str] = []
    if len(want) != len(got):
        out.append(f"{len(want)} LF-pieces expected, {len(got)} found")
    for number, (w, g) in enumerate(zip(want, got, strict=False), 1):
        ew, eg = entry_fields(w), entry_fields(g)
        if ew is not None and eg is not None:
            if diff := _entry_diff(ew, eg):
                out.append(f"line {number}: entry {diff}")
        elif ew is not None or eg is not None or not text_equal(w, g):
            out.append(f"line {number}: expected {w!r}, found {g!r}")
    return out


def differences(rel: str, expected: bytes, actual: bytes | None) -> list[str]:
    """Why ``actual`` (None: absent) is not ``expected`` at ``rel`` under the normalisation."""
    if actual is None:
        return ["missing"]
    try:
        want, got = expected.decode("utf-8"), actual.decode("utf-8")
    except UnicodeDecodeError:
        return [] if expected == actual else ["bytes differ (not UTF-8)"]
    if rel.rsplit("/", 1)[-1] == INDEX_NAME:
        return index_differences(want, got)
    return [] if text_equal(want, got) else ["bytes differ"]


def find(files: dict[str, bytes], rel: str) -> bytes | None:
    """The content at ``rel`` in a snapshot, a ``….tmp-*`` name matching any temporary of it."""
    if rel in files:
        return files[rel]
    if rel.endswith(".tmp-*"):
        hits = [v for k, v in files.items() if temp_name(k) == rel]
        return hits[0] if hits else None
    return None
