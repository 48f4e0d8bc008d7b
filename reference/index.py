"""``MEMORY.md`` line grammar: parse, render, upsert, maintain, find (S-FMT-5..8, S-FMT-11, S-IDX).

Pure functions over the list of LF-split pieces of the index.  The only outside fact that
maintenance needs, whether a topic file is regular, comes in as a predicate.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from .errors import JsTypeError
from .text import UNDEFINED, WS_CLASS, js_lower, trim

INITIAL_MEMORY = "# Memory Index\n\n"
PIN_TOKEN = "[pin]"
STALE_TOKEN = "[stale?]"
DAY_MS = 86_400_000

_ENTRY = re.compile(
    "(" + WS_CLASS + "*-" + WS_CLASS + "+\\[)([^\\]]+)(\\]\\(([^)]+)\\))([^\\n\\r\\u2028\\u2029]*)"
)
_DATE = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2}(?:T[0-9]{2}:[0-9]{2}:[0-9]{2}[+-][0-9]{2}:[0-9]{2})?)")
_SUMMARY = re.compile("--" + WS_CLASS + "+(.+)", re.DOTALL)
_UNSAFE_CHARS = re.compile("[\\\\/\\[\\]()\x00-\x1f\x7f]")
_SLUG_DROP = re.compile("[^a-z0-9\\-" + WS_CLASS[1:-1] + "]")
_SLUG_WS = re.compile(WS_CLASS + "+")
_HYPHENS = re.compile("-+")


@dataclass(frozen=True)
class IndexLine:
    """A parsed entry line: ``prefix + name + mid + rest`` (S-FMT-6)."""

    prefix: str
    name: str
    mid: str
    filename: str
    rest: str
    length: int = 0  # code points matched from the line start; more means text after REST
    name_lower: str = ""  # js_lower(name), for the name lookups of every write

    @property
    def pinned(self) -> bool:
        return PIN_TOKEN in self.rest

    @property
    def stale(self) -> bool:
        return STALE_TOKEN in self.rest


def is_safe_filename(name: str) -> bool:
    """S-FMT-7."""
    lowered = js_lower(name)
    return (
        lowered.endswith(".md")
        and lowered != "memory.md"
        and not name.startswith(".")
        and ".." not in name
        and _UNSAFE_CHARS.search(name) is None
    )


@lru_cache(maxsize=1 << 16)
def parse_index_line(line: str) -> IndexLine | None:
    """S-IDX-1: an entry with a safe filename, else None."""
    m = _ENTRY.match(line)
    if m is None or not is_safe_filename(m.group(4)):
        return None
    name = m.group(2)
    return IndexLine(m.group(1), name, m.group(3), m.group(4), m.group(5), m.end(), js_lower(name))


def to_slug(topic: str) -> str:
    """S-FMT-8."""
    s = _SLUG_DROP.sub("", js_lower(topic))
    s = _SLUG_WS.sub("-", trim(s))
    return _HYPHENS.sub("-", s)


def render_entry(name: str, filename: str, pinned: bool, timestamp: str, summary: str) -> str:
    """Canonical rendering written by upsert (S-FMT-6)."""
    pin = " [pin]" if pinned else ""
    return f"- [{name}]({filename}){pin} {timestamp} -- {summary}"


# --- dates (S-FMT-11) -----------------------------------------------------------------


@lru_cache(maxsize=1 << 16)
def find_date(rest: str) -> str | None:
    m = _DATE.search(rest)
    return m.group(1) if m else None


def _days_from_civil(y: int, m: int, d: int) -> int:
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def parse_date_ms(text: str) -> float | None:
    """ECMAScript ``Date.parse`` of a captured stamp; None when it is an invalid date."""
    year, month, day = int(text[0:4]), int(text[5:7]), int(text[8:10])
    if not 1 <= month <= 12 or not 1 <= day <= 31:
        return None
    hour = minute = second = 0
    offset_min = 0
    if len(text) > 10:
        hour, minute, second = int(text[11:13]), int(text[14:16]), int(text[17:19])
        oh, om = int(text[20:22]), int(text[23:25])
        if minute > 59 or second > 59 or hour > 24 or (hour == 24 and (minute or second)):
            return None
        if oh > 23 or om > 59:
            return None
        offset_min = (oh * 60 + om) * (1 if text[19] == "+" else -1)
    days = _days_from_civil(year, month, 1) + day - 1
    return float(((days * 24 + hour) * 60 + minute - offset_min) * 60_000 + second * 1000)


# --- upsert and maintenance (S-IDX-3..6) ---------------------------------------------


def upsert_index_line(
    lines: Sequence[str], filename: str, name: str, summary: str, pin: bool, timestamp: str
) -> list[str]:
    """S-IDX-3: replace the first entry for ``filename`` or append a new one."""
    out = list(lines)
    for i, line in enumerate(out):
        parsed = parse_index_line(line)
        if parsed is not None and parsed.filename == filename:
            out[i] = render_entry(name, filename, parsed.pinned or pin, timestamp, summary)
            return out
    out.append(render_entry(name, filename, pin, timestamp, summary))
    return out


def restamp(rest: str, stale_after_days: float, now_ms: int) -> str:
    """S-IDX-6: add ``[stale?]`` after an old first date, heal it otherwise."""
    if PIN_TOKEN in rest or stale_after_days <= 0:
        return rest
    date = find_date(rest)
    if date is None:
        return rest
    parsed = parse_date_ms(date)
    if parsed is not None and math.floor((now_ms - parsed) / DAY_MS) > stale_after_days:
        if STALE_TOKEN not in rest:
            return rest.replace(date, f"{date} {STALE_TOKEN}", 1)
        return rest
    return rest.replace(" " + STALE_TOKEN, "", 1)


def _best_lines(entries: list[tuple[int, IndexLine]], is_regular: Callable[[str], bool]) -> set[int]:
    """S-IDX-4 pass 1: per filename, the first line unless a later one has a greater date key."""
    best: dict[str, tuple[int, str]] = {}
    regular: dict[str, bool] = {}
    for i, entry in entries:
        fname = entry.filename
        ok = regular.get(fname)
        if ok is None:
            ok = regular[fname] = is_regular(fname)
        if not ok:
            continue
        key = find_date(entry.rest) or ""
        held = best.get(fname)
        if held is None or key > held[1]:
            best[fname] = (i, key)
    return {i for i, _ in best.values()}


def maintain_index(
    lines: Sequence[str],
    stale_after_days: float,
    now_ms: int,
    is_regular: Callable[[str], bool],
) -> list[str]:
    """S-IDX-4/5: drop orphans and non-best duplicates, then restamp what remains.

    Each filename keeps exactly one best line (its index is unique), so pass 2 emits a line
    iff it is its filename's best.  A line whose REST is unchanged and that carried nothing
    after REST is emitted as it was, without rebuilding the string.
    """
    parsed = list(map(parse_index_line, lines))
    entries = [(i, e) for i, e in enumerate(parsed) if e is not None]
    if len({e.filename for _, e in entries}) == len(entries):
        # no filename twice (the usual index): every entry with a regular file is its best
        chosen = {i for i, e in entries if is_regular(e.filename)}
    else:
        chosen = _best_lines(entries, is_regular)
    stamping = stale_after_days > 0
    out: list[str] = []
    for i, (line, entry) in enumerate(zip(lines, parsed, strict=True)):
        if entry is None:
            out.append(line)
        elif i in chosen:
            rest = restamp(entry.rest, stale_after_days, now_ms) if stamping else entry.rest
            if rest == entry.rest and len(line) == entry.length:
                out.append(line)
            else:
                out.append(entry.prefix + entry.name + entry.mid + rest)
    return out


# --- lookup (S-IDX-8) -----------------------------------------------------------------


@dataclass(frozen=True)
class Found:
    index: int
    entry: IndexLine


@dataclass(frozen=True)
class Ambiguous:
    names: list[str]


def require_string(value: object, variable: str, method: str = "toLowerCase") -> str:
    """V8's TypeError for ``«variable».«method»()`` on a non-string (S-ERR-8)."""
    if isinstance(value, str):
        return value
    if value is UNDEFINED or value is None:
        what = "undefined" if value is UNDEFINED else "null"
        raise JsTypeError(f"Cannot read properties of {what} (reading '{method}')")
    raise JsTypeError(f"{variable}.{method} is not a function")


def find_index_entry(lines: Sequence[str], search: object) -> Found | Ambiguous | None:
    """Exact name or filename first (case-insensitive), else a unique substring match."""
    s = js_lower(require_string(search, "search"))
    partial: list[Found] = []
    for i, line in enumerate(lines):
        entry = parse_index_line(line)
        if entry is None:
            continue
        name, fname = js_lower(entry.name), js_lower(entry.filename)
        if name == s or fname == s:
            return Found(i, entry)
        if s in name or s in fname:
            partial.append(Found(i, entry))
    if len(partial) == 1:
        return partial[0]
    if partial:
        return Ambiguous([f.entry.name for f in partial])
    return None


# --- display (S-DISP-2) ---------------------------------------------------------------


def summary_of(rest: str) -> str:
    m = _SUMMARY.search(rest)
    return m.group(1) if m else ""
