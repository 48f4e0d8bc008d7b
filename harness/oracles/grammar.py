"""The store's text grammar, written from SPEC.md: index lines, safe filenames, dates, slugs, JSONC.

Every oracle parses stores with these, never with ``reference.index`` or ``reference.config``:
the reference is one implementation under test, and a defect in its grammar must fail an
oracle, not pass it.  ``tests/harness/test_oracle_grammar.py`` holds each function to the
reference's on generated inputs; a difference means one of the two is wrong.  Only
``reference.text`` (ECMAScript string semantics, tested on its own) is shared.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Final

from memconform.reference.text import WHITESPACE, WS_CLASS, js_lower, trim

_WS = WS_CLASS[1:-1]
# S-FMT-6: PREFIX = ws* "-" ws+ "[", NAME = [^\]]+, MID = "](" FILE ")", FILE = [^)]+,
# REST = the longest run free of the four line terminators.
_ENTRY = re.compile(f"([{_WS}]*-[{_WS}]+\\[)([^\\]]+)(\\]\\(([^)]+)\\))([^\\n\\r\\u2028\\u2029]*)")
# S-FMT-7: none of \ / [ ] ( ), no U+0000-U+001F, no U+007F.
_UNSAFE = re.compile("[\\\\/\\[\\]()\x00-\x1f\x7f]")
# S-FMT-11: the long form is taken when present; ASCII digits only (S-FMT-16).
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}(?:T[0-9]{2}:[0-9]{2}:[0-9]{2}[+-][0-9]{2}:[0-9]{2})?")
_DATE_FULL = re.compile(_DATE.pattern + r"\Z")
# S-FMT-8 step 2: what a slug keeps.
_SLUG_KEEP: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-" + WHITESPACE)
_SLUG_WS_RUN = re.compile(WS_CLASS + "+")
_HYPHEN_RUN = re.compile("-+")
_MONTH_START: Final = (0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334)
DAY_MS: Final = 86_400_000


# --- index lines (S-FMT-6, S-FMT-7, S-IDX-1, S-IDX-2) -------------------------------------


def safe_filename(name: str) -> bool:
    """S-FMT-7: a topic filename an index entry may name (`A.MD` yes, `Memory.md` no)."""
    low = js_lower(name)
    return (
        low.endswith(".md") and low != "memory.md" and not name.startswith(".")
        and ".." not in name and _UNSAFE.search(name) is None
    )


@dataclass(frozen=True)
class Line:
    """A parsed entry: ``prefix + name + mid + rest`` re-renders it (S-FMT-6)."""

    prefix: str
    name: str
    mid: str
    filename: str
    rest: str

    @property
    def pinned(self) -> bool:
        """S-IDX-2: ``[pin]`` anywhere in REST, the summary included."""
        return "[pin]" in self.rest

    @property
    def stale(self) -> bool:
        """S-IDX-2: ``[stale?]`` anywhere in REST."""
        return "[stale?]" in self.rest

    def render(self, rest: str | None = None) -> str:
        return self.prefix + self.name + self.mid + (self.rest if rest is None else rest)


def parse(line: str) -> Line | None:
    """S-IDX-1: an entry whose FILE is safe; anything else is ordinary text (None)."""
    m = _ENTRY.match(line)
    if m is None or not safe_filename(m.group(4)):
        return None
    return Line(m.group(1), m.group(2), m.group(3), m.group(4), m.group(5))


# --- dates (S-FMT-11) ----------------------------------------------------------------------


def first_date(rest: str) -> str | None:
    """S-FMT-11: the leftmost stamp in REST, long form when present, else None."""
    m = _DATE.search(rest)
    return m.group(0) if m else None


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _days_since_year_zero(year: int, month: int, day: int) -> int:
    """Proleptic-Gregorian day count from 0000-01-01; a day past the month's end rolls on."""
    leap_years_before = (year + 3) // 4 - (year + 99) // 100 + (year + 399) // 400
    after_feb = 1 if month > 2 and _leap(year) else 0
    return 365 * year + leap_years_before + _MONTH_START[month - 1] + after_feb + day - 1


_EPOCH_DAYS: Final = _days_since_year_zero(1970, 1, 1)


def date_ms(text: str) -> int | None:
    """S-FMT-11: ECMAScript ``Date`` of a captured stamp in epoch ms; None when invalid.

    Ranges are checked by hand (not ``datetime``), since JS accepts day roll-over
    (``2026-02-30`` is 2026-03-02), year 0000 and ``T24:00:00`` (next midnight).
    """
    if _DATE_FULL.match(text) is None:
        return None
    year, month, day = int(text[0:4]), int(text[5:7]), int(text[8:10])
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    seconds = 0
    if len(text) > 10:
        hour, minute, second = int(text[11:13]), int(text[14:16]), int(text[17:19])
        off_h, off_m = int(text[20:22]), int(text[23:25])
        if hour > 24 or minute > 59 or second > 59 or off_h > 23 or off_m > 59:
            return None
        if hour == 24 and (minute or second):
            return None
        offset = (off_h * 3600 + off_m * 60) * (1 if text[19] == "+" else -1)
        seconds = hour * 3600 + minute * 60 + second - offset
    days = _days_since_year_zero(year, month, day) - _EPOCH_DAYS
    return days * DAY_MS + seconds * 1000


# --- slugs (S-FMT-8) ------------------------------------------------------------------------


def to_slug(topic: str) -> str:
    """S-FMT-8: lowercase, keep a-z 0-9 whitespace and ``-``, trim, runs to one ``-``.

    Leading and trailing hyphens stay (``-Hello  --  World-`` → ``-hello-world-``).
    """
    kept = "".join(c for c in js_lower(topic) if c in _SLUG_KEEP)
    return _HYPHEN_RUN.sub("-", _SLUG_WS_RUN.sub("-", trim(kept)))


# --- configuration text (S-CFG-5, S-CFG-6) --------------------------------------------------


def _string_end(text: str, start: int) -> int:
    """The index after the string literal opened at ``start``; unterminated runs to the end."""
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return i + 1
        else:
            i += 1
    return len(text)


def _drop_comments(text: str) -> str:
    """S-CFG-5 step 1: outside strings, ``//`` through the next LF becomes one LF."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == '"':
            end = _string_end(text, i)
            out.append(text[i:end])
            i = end
        elif text.startswith("//", i):
            lf = text.find("\n", i)
            out.append("\n")
            i = len(text) if lf < 0 else lf + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _next_solid(text: str, i: int) -> str:
    """The first character at or after ``i`` outside the S-FMT-2 whitespace set, or ''."""
    while i < len(text) and text[i] in WHITESPACE:
        i += 1
    return text[i] if i < len(text) else ""


def _drop_trailing_commas(text: str) -> str:
    """S-CFG-5 step 2: outside strings, a ``,`` before ws* ``}`` or ``]`` goes."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == '"':
            end = _string_end(text, i)
            out.append(text[i:end])
            i = end
            continue
        if not (text[i] == "," and _next_solid(text, i + 1) in ("}", "]")):
            out.append(text[i])
        i += 1
    return "".join(out)


def strip_jsonc(text: str) -> str:
    """S-CFG-5: comments, then trailing commas; strings are kept whole. No ``/* */``, no BOM."""
    return _drop_trailing_commas(_drop_comments(text))


_JSON_WS = re.compile("[ \t\n\r]*")  # S-FMT-18: the only whitespace JSON.parse allows
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_LITERALS: Final[dict[str, object]] = {"true": True, "false": False, "null": None}
_Open = list[object] | dict[str, object]


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _skip(text: str, i: int) -> int:
    return _JSON_WS.match(text, i).end()  # type: ignore[union-attr]  # ``*`` always matches


def _json_string(text: str, i: int) -> tuple[str, int]:
    """The string literal opening at ``i`` (validated by ``json``: it nests nothing)."""
    end = _string_end(text, i)
    return str(json.loads(text[i:end])), end


def _key(text: str, i: int) -> tuple[str, int]:
    """An object key and the index after its ``:`` and the whitespace there."""
    if not text.startswith('"', i):
        raise ValueError(f"expected a key at {i}")
    key, i = _json_string(text, i)
    i = _skip(text, i)
    if not text.startswith(":", i):
        raise ValueError(f"expected ':' at {i}")
    return key, _skip(text, i + 1)


def _deep_json(text: str) -> object:
    """``JSON.parse`` without recursion: V8 parses nesting Python's ``json`` cannot."""
    open_: list[tuple[_Open, str]] = []
    i = _skip(text, 0)
    while True:
        value: object
        if text.startswith("[", i) or text.startswith("{", i):
            container: _Open = [] if text[i] == "[" else {}
            i = _skip(text, i + 1)
            if not text.startswith("]" if isinstance(container, list) else "}", i):
                key, i = ("", i) if isinstance(container, list) else _key(text, i)
                open_.append((container, key))
                continue
            value, i = container, i + 1
        elif text.startswith('"', i):
            value, i = _json_string(text, i)
        elif (m := _NUMBER.match(text, i)) is not None:
            value, i = float(m.group()), m.end()
        elif (word := next((w for w in _LITERALS if text.startswith(w, i)), None)) is not None:
            value, i = _LITERALS[word], i + len(word)
        else:
            raise ValueError(f"expected a value at {i}")
        while True:  # hand the value to the innermost open container, closing as we go
            i = _skip(text, i)
            if not open_:
                if i != len(text):
                    raise ValueError(f"extra data at {i}")
                return value
            top, key = open_[-1]
            if isinstance(top, list):
                top.append(value)
            else:
                top[key] = value
            if text.startswith(",", i):
                i = _skip(text, i + 1)
                if isinstance(top, dict):
                    key, i = _key(text, i)
                    open_[-1] = (top, key)
                break
            if not text.startswith("]" if isinstance(top, list) else "}", i):
                raise ValueError(f"expected ',' or a closer at {i}")
            value, i = open_.pop()[0], i + 1


def config_values(text: str) -> object:
    """S-CFG-5/6: the parsed value of a configuration text, numbers as IEEE doubles.

    Two configurations that differ only in comments and layout give equal values (S-CFG-3:
    conformance compares values and key order).  Raises ``ValueError`` where ``JSON.parse``
    would throw (``NaN``/``Infinity`` included).
    """
    stripped = strip_jsonc(text)
    try:
        return json.loads(stripped, parse_constant=_no_constant, parse_int=float)
    except RecursionError:
        return _deep_json(stripped)


def frontmatter_name(raw: str) -> str:
    """S-WRITE-7: a frontmatter ``name:`` value as written: JSON when quoted (kept raw when it
    does not decode to a string), else one leading and one trailing single quote dropped."""
    value = trim(raw)
    if value.startswith('"'):
        try:
            decoded = json.loads(value)
        except ValueError:
            return value
        return decoded if isinstance(decoded, str) else value
    value = value[1:] if value.startswith("'") else value
    return value[:-1] if value.endswith("'") else value
