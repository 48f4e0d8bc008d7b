"""MEMORY.md line grammar, upsert, maintenance and lookup (S-FMT-5..7, S-FMT-11, S-IDX-1..8).

Expected values were taken from the JS core 0.3.9 run on the same inputs (frozen clock at
``NOW``, TZ=UTC); SPEC Appendix A-2, A-8 and B-7, B-8 are exercised here as well.
"""

from __future__ import annotations

import os

import pytest

from memconform.reference.index import (
    INITIAL_MEMORY,
    Ambiguous,
    Found,
    find_date,
    find_index_entry,
    is_safe_filename,
    maintain_index,
    parse_date_ms,
    parse_index_line,
    upsert_index_line,
)
from tests.conftest import NOW_MS, StoreEnv
from tests.support import IDX, TS


def parsed(line: str) -> dict[str, str] | None:
    p = parse_index_line(line)
    if p is None:
        return None
    return entry(p.prefix, p.name, p.filename, p.rest) | {"mid": p.mid}


def entry(prefix: str, name: str, filename: str, rest: str) -> dict[str, str]:
    return {
        "prefix": prefix,
        "name": name,
        "mid": f"]({filename})",
        "filename": filename,
        "rest": rest,
    }


def maintain(lines: list[str], stale: float, files: set[str]) -> list[str]:
    return maintain_index(lines, stale, NOW_MS, lambda f: f in files)


def settled(env: StoreEnv) -> dict[str, bytes]:
    """A snapshot taken after configuration bootstrap (which creates memory.jsonc)."""
    env.store.parse_rules()
    return env.snapshot()


def put_topics(env: StoreEnv, *names: str, where: str = "agent/memory") -> None:
    for name in names:
        env.put(f"{where}/{name}", f"{name}\n")


# --- S-FMT-5 index file -----------------------------------------------------------------


def test_s_fmt_5_initial_memory_constant() -> None:
    assert INITIAL_MEMORY == "# Memory Index\n\n"


def test_s_fmt_5_first_write_into_missing_index(env: StoreEnv) -> None:
    assert not env.exists(IDX)
    assert env.store.execute_write_memory("T", "c", "s") == 'Created memory topic "T" (t.md).'
    assert env.read(IDX) == f"# Memory Index\n\n\n- [T](t.md) {TS} -- s"


def test_s_fmt_5_first_write_into_initial_index(env: StoreEnv) -> None:
    env.put(IDX, INITIAL_MEMORY)
    env.store.execute_write_memory("T", "c", "summary text")
    assert env.read(IDX) == f"# Memory Index\n\n\n- [T](t.md) {TS} -- summary text"


def test_s_fmt_5_append_after_final_lf_and_without(env: StoreEnv) -> None:
    put_topics(env, "a.md")
    env.put(IDX, f"# Memory Index\n\n- [A](a.md) {TS} -- a\n")
    env.store.execute_write_memory("B", "c", "b")
    assert env.read(IDX) == f"# Memory Index\n\n- [A](a.md) {TS} -- a\n\n- [B](b.md) {TS} -- b"
    env.store.execute_write_memory("C", "c", "c")
    assert env.read(IDX) == (
        f"# Memory Index\n\n- [A](a.md) {TS} -- a\n\n- [B](b.md) {TS} -- b\n- [C](c.md) {TS} -- c"
    )


def test_s_fmt_5_non_entry_lines_preserved_verbatim(env: StoreEnv) -> None:
    put_topics(env, "a.md", "ind.md", ".hidden.md", "bad.md")
    env.put(
        IDX,
        "# Memory Index\r\n\r\nSome prose [x](y)\n"
        "- [Bracket [x]](bad.md) 2020-01-01 -- b\n"
        "- [H](.hidden.md) 2020-01-01 -- h\n"
        "- [A](a.md) 2026-08-01 -- s\u2028tail\n"
        "  - [Ind](ind.md) 2020-01-01 -- old\n"
        "## Heading\n\n",
    )
    assert env.store.execute_write_memory("T", "c", "s") == 'Created memory topic "T" (t.md).'
    # JS core: non-entries kept byte for byte (CRLF too); the U+2028 tail is not part of REST
    # and is lost on re-rendering; the indented entry keeps its prefix and gets stamped.
    assert env.read(IDX) == (
        "# Memory Index\r\n\r\nSome prose [x](y)\n"
        "- [Bracket [x]](bad.md) 2020-01-01 -- b\n"
        "- [H](.hidden.md) 2020-01-01 -- h\n"
        "- [A](a.md) 2026-08-01 -- s\n"
        "  - [Ind](ind.md) 2020-01-01 [stale?] -- old\n"
        "## Heading\n\n\n"
        f"- [T](t.md) {TS} -- s"
    )


def test_s_fmt_5_remove_and_pin_keep_other_lines(env: StoreEnv) -> None:
    put_topics(env, "a.md", "b.md")
    text = (
        "# Memory Index\n\nprose line\n"
        f"- [A](a.md) {TS} -- a\n"
        "* [X](x.md) not an entry\n"
        f"- [B](b.md) {TS} -- b\n\n"
    )
    env.put(IDX, text)
    assert env.store.execute_pin_memory("B", True).startswith('Pinned "B".')
    assert env.read(IDX) == text.replace("(b.md)", "(b.md) [pin]")
    assert env.store.execute_remove_memory("A").startswith('Removed "A"')
    assert env.read(IDX) == text.replace("(b.md)", "(b.md) [pin]").replace(
        f"- [A](a.md) {TS} -- a\n", ""
    )


# --- S-FMT-6 entry grammar (table checked against the JS core's parseIndexLine) ----------

PARSE_CASES: list[tuple[str, dict[str, str] | None]] = [
    ("- [A](a.md) x", entry("- [", "A", "a.md", " x")),
    ("-[A](a.md)", None),
    ("* [A](a.md)", None),
    ("\t- [A](a b.md)x", entry("\t- [", "A", "a b.md", "x")),
    ("- [A](a.md) -- s\u2028tail", entry("- [", "A", "a.md", " -- s")),
    ("\ufeff- [A](a.md) x", entry("\ufeff- [", "A", "a.md", " x")),
    ("\u00a0-\u00a0[A](a.md)", entry("\u00a0-\u00a0[", "A", "a.md", "")),
    ("-\r[A](a.md)", entry("-\r[", "A", "a.md", "")),
    ("-\u2028[A](a.md)", entry("-\u2028[", "A", "a.md", "")),
    ("\u3000-\u1680[N](n.md)", entry("\u3000-\u1680[", "N", "n.md", "")),
    ("-  \t [A](a.md)", entry("-  \t [", "A", "a.md", "")),
    ("\x1c- [A](a.md)", None),
    ("\x85- [A](a.md)", None),
    ("-\x1c[A](a.md)", None),
    ("-\x85[A](a.md)", None),
    ("- [Bracket [x]](bad.md)", None),
    ("- [A]](a.md) x", None),
    ("- [[A]](a.md)", None),
    ("- [A [b](a.md) r", entry("- [", "A [b", "a.md", " r")),
    ("- [A(b](a.md) r", entry("- [", "A(b", "a.md", " r")),
    ("- [A\rB](a.md) r", entry("- [", "A\rB", "a.md", " r")),
    ("- [A\u2028B](a.md) r", entry("- [", "A\u2028B", "a.md", " r")),
    ("- [A](a\u2028b.md) r", entry("- [", "A", "a\u2028b.md", " r")),
    ("- [A](a\x85.md) r", entry("- [", "A", "a\x85.md", " r")),
    ("  -  [A](é ü.md) tail  ", entry("  -  [", "A", "é ü.md", " tail  ")),
    ("- [é](\U0001f600.md) z", entry("- [", "é", "\U0001f600.md", " z")),
    ("- [A](a.md) x\ry", entry("- [", "A", "a.md", " x")),
    ("- [A](a.md) x\u2029y", entry("- [", "A", "a.md", " x")),
    ("- [A](a.md) x\ny", entry("- [", "A", "a.md", " x")),
    (" - [A](a.md)\r", entry(" - [", "A", "a.md", "")),
    ("- [A](a.md)", entry("- [", "A", "a.md", "")),
    ("- [A](a.md)) x", entry("- [", "A", "a.md", ") x")),
    ("- [A](a.md)x)y", entry("- [", "A", "a.md", "x)y")),
    ("- [A](a.md)[pin]", entry("- [", "A", "a.md", "[pin]")),
    ("- [A](a.md.md) x", entry("- [", "A", "a.md.md", " x")),
    ("- [A](A.MD) x", entry("- [", "A", "A.MD", " x")),
    ("- [A](x.Md)", entry("- [", "A", "x.Md", "")),
    ("- [A] (a.md) x", None),
    ("- [A](a.md", None),
    ("- [](a.md) x", None),
    ("- [A]() x", None),
    ("-- [A](a.md)", None),
    ("- - [A](a.md)", None),
    ("x - [A](a.md)", None),
]


@pytest.mark.parametrize(("line", "expected"), PARSE_CASES)
def test_s_fmt_6_parse_grammar(line: str, expected: dict[str, str] | None) -> None:
    assert parsed(line) == expected


def test_s_fmt_6_spec_examples() -> None:
    assert parse_index_line("-[A](a.md)") is None
    assert parse_index_line("* [A](a.md)") is None
    p = parse_index_line("\t- [A](a b.md)x")
    assert p is not None and (p.name, p.filename, p.rest) == ("A", "a b.md", "x")
    p = parse_index_line("- [A](a.md) -- s\u2028tail")
    assert p is not None and p.rest == " -- s"
    assert parse_index_line("- [Bracket [x]](bad.md)") is None


def test_s_fmt_6_canonical_rendering_by_upsert() -> None:
    out = upsert_index_line(["# Memory Index", ""], "n.md", "N", "sum", False, TS)
    assert out == ["# Memory Index", "", f"- [N](n.md) {TS} -- sum"]
    out = upsert_index_line([], "n.md", "N", "sum", True, TS)
    assert out == [f"- [N](n.md) [pin] {TS} -- sum"]


def test_s_fmt_6_crlf_entry_rerendered_without_cr_b7(env: StoreEnv) -> None:
    put_topics(env, "c.md")
    env.put(IDX, "# Memory Index\r\n\r\n- [C](c.md) 2026-08-01 -- crlf\r\nprose\r\n")
    env.store.execute_write_memory("N", "n", "s")
    assert env.read(IDX) == (
        f"# Memory Index\r\n\r\n- [C](c.md) 2026-08-01 -- crlf\nprose\r\n\n- [N](n.md) {TS} -- s"
    )


def test_b_7_maintenance_drops_cr_of_entries_only() -> None:
    lines = ["# Memory Index\r", "\r", "- [C](c.md) 2026-08-01 -- crlf\r", "prose\r", ""]
    assert maintain(lines, 180, {"c.md"}) == [
        "# Memory Index\r",
        "\r",
        "- [C](c.md) 2026-08-01 -- crlf",
        "prose\r",
        "",
    ]


# --- S-FMT-7 safe filenames -------------------------------------------------------------

SAFE = ["a.md", "A.MD", "x.Md", "a b.md", "é.md", "\U0001f600.md", "a.md.md", "-.md", "a\u2028.md"]
UNSAFE = [
    "a..b.md",
    "..md",
    ".hidden.md",
    ".md",
    "MEMORY.md",
    "memory.md",
    "Memory.md",
    "MEMORY.MD",
    "a/b.md",
    "a\\b.md",
    "a[b.md",
    "a]b.md",
    "a(b.md",
    "a)b.md",
    "a\x00.md",
    "a\t.md",
    "a\x1f.md",
    "a\x7f.md",
    "a.txt",
    "a.mdx",
    "",
]


@pytest.mark.parametrize("name", SAFE)
def test_s_fmt_7_safe_names(name: str) -> None:
    assert is_safe_filename(name)
    assert parse_index_line(f"- [N]({name}) x") is not None


@pytest.mark.parametrize("name", UNSAFE)
def test_s_fmt_7_unsafe_names(name: str) -> None:
    assert not is_safe_filename(name)


def test_s_fmt_7_spec_example() -> None:
    assert parse_index_line("- [A](a..b.md) x") is None


def test_s_fmt_7_unsafe_entry_is_inert_in_maintenance(env: StoreEnv) -> None:
    put_topics(env, ".hidden.md", "x..y.md")
    lines = "- [H](.hidden.md) 2020-01-01 -- x\n- [D](x..y.md) 2020-01-01 -- y\n- [D](x..y.md) dup"
    env.put(IDX, lines)
    env.store.execute_write_memory("T", "c", "s")
    assert env.read(IDX) == lines + f"\n- [T](t.md) {TS} -- s"


# --- S-FMT-11 dates ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rest", "date"),
    [
        (" 2026-01-01T10:00:00+08:00 -- x", "2026-01-01T10:00:00+08:00"),
        (" 2026-01-01T10:00:00-05:30 [stale?]", "2026-01-01T10:00:00-05:30"),
        (" 2020-01-01T00:00:00Z -- z", "2020-01-01"),
        (" 2020-01-01T00:00:00.123+00:00", "2020-01-01"),
        (" 2020-01-01T00:00+00:00", "2020-01-01"),
        (" 2020-01-01 2021-02-02T00:00:00+00:00", "2020-01-01"),
        (" 12026-01-01 x", "2026-01-01"),
        (" -- updated 2020-01-01", "2020-01-01"),
        (" 2026-13-01", "2026-13-01"),
        (" ٢٠٢٠-01-01", None),
        (" 2020-1-01", None),
        (" 2020/01/01", None),
        ("", None),
    ],
)
def test_s_fmt_11_date_capture(rest: str, date: str | None) -> None:
    assert find_date(rest) == date


# Epoch milliseconds as ECMAScript ``new Date(s).getTime()`` gives them (None: NaN).
@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("2026-01-01", 1767225600000),
        ("2026-02-30", 1772409600000),  # = 2026-03-02
        ("2021-02-29", 1614556800000),  # = 2021-03-01
        ("2020-04-31", 1588291200000),  # = 2020-05-01
        ("0000-01-01", -62167219200000),
        ("0000-02-29", -62162121600000),
        ("1900-02-29", -2203891200000),  # = 1900-03-01
        ("2026-01-01T24:00:00+00:00", 1767312000000),
        ("2026-12-31T24:00:00-00:00", 1798761600000),
        ("2026-02-31T24:00:00+05:30", 1772562600000),
        ("2026-01-01T10:00:00+08:00", 1767232800000),
        ("2026-01-01T00:00:00-23:59", 1767311940000),
        ("9999-12-31T23:59:59-23:59", 253402387139000),
        ("2026-13-01", None),
        ("2026-00-10", None),
        ("2026-01-00", None),
        ("2026-01-32", None),
        ("2026-01-01T24:00:01+00:00", None),
        ("2026-01-01T24:01:00+00:00", None),
        ("2026-01-01T25:00:00+00:00", None),
        ("2026-01-01T23:60:00+00:00", None),
        ("2026-01-01T23:59:60+00:00", None),
        ("2026-01-01T00:00:00+24:00", None),
        ("2026-01-01T00:00:00+00:60", None),
    ],
)
def test_s_fmt_11_date_parse_like_ecmascript(text: str, ms: int | None) -> None:
    assert parse_date_ms(text) == ms


def test_s_fmt_11_invalid_calendar_dates_in_maintenance() -> None:
    files = {"s.md"}
    # 2026-13-01 is invalid: never stamped; an existing flag is healed (first one only).
    assert maintain(["- [S](s.md) 2020-13-01 -- x"], 180, files) == ["- [S](s.md) 2020-13-01 -- x"]
    assert maintain(["- [S](s.md) 2026-13-01 [stale?] -- x [stale?]"], 180, files) == [
        "- [S](s.md) 2026-13-01 -- x [stale?]"
    ]
    # 2020-02-30 rolls over to 2020-03-01 and is stale against the 2026 clock.
    assert maintain(["- [S](s.md) 2020-02-30 -- x"], 180, files) == [
        "- [S](s.md) 2020-02-30 [stale?] -- x"
    ]


# --- S-IDX-1 parse ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "- [Hidden](.hidden.md) 2026-01-01 -- x",
        "- [Index](MEMORY.md) 2026-01-01 -- x",
        "- [Index](memory.md) 2026-01-01 -- x",
        "- [Up](../up.md) 2026-01-01 -- x",
        "- [Abs](/etc/passwd.md) 2026-01-01 -- x",
    ],
)
def test_s_idx_1_unsafe_targets_parse_to_none(line: str) -> None:
    assert parse_index_line(line) is None


def test_s_idx_1_unsafe_lines_never_opened_or_listed(env: StoreEnv) -> None:
    put_topics(env, "ok.md")
    env.put(
        IDX,
        "- [Index](MEMORY.md) 2026-01-01 -- idx\n- [Up](../up.md) 2026-01-01 -- up\n"
        "- [Ok](ok.md) 2026-08-01 -- fine",
    )
    entries = env.store.read_index_entries()
    assert [(e.name, e.filename, e.date, e.summary) for e in entries] == [
        ("Ok", "ok.md", "2026-08-01", "fine")
    ]
    # "Index" is not an entry, so remove cannot find it and the index stays as it was.
    before = settled(env)
    assert env.store.execute_remove_memory("Index") == 'No entry found matching "Index".'
    assert env.snapshot() == before


# --- S-IDX-2 flags ----------------------------------------------------------------------


def test_s_idx_2_flags_anywhere_in_rest(env: StoreEnv) -> None:
    p = parse_index_line("- [Topic](topic.md) [pin] 2026-01-01 -- summary")
    assert p is not None and p.pinned and not p.stale
    p = parse_index_line("- [Topic](topic.md) 2026-01-01 -- use [pin] flag [stale?]")
    assert p is not None and p.pinned and p.stale
    p = parse_index_line("- [Topic](topic.md) 2026-01-01 -- [pin ] [stale] [PIN] [Stale?]")
    assert p is not None and not p.pinned and not p.stale
    put_topics(env, "a.md", "b.md")
    env.put(
        IDX,
        "- [A](a.md) [pin] 2026-01-01 [stale?] -- a\n- [B](b.md) 2026-01-01 -- b [pin] [stale?]",
    )
    got = [(e.name, e.pinned, e.stale) for e in env.store.read_index_entries()]
    assert got == [("A", True, True), ("B", True, True)]


def test_s_idx_2_a1_pin_in_summary_blocks_remove(env: StoreEnv) -> None:
    env.store.execute_write_memory("Flag", "c", "use [pin] flag")
    assert env.read(IDX).endswith(f"- [Flag](flag.md) {TS} -- use [pin] flag")
    before = settled(env)
    assert env.store.execute_remove_memory("Flag") == (
        'Cannot remove "Flag" — it is pinned. Unpin it first with: /memory unpin Flag'
    )
    assert env.store.execute_pin_memory("Flag", True) == '"Flag" is already pinned.'
    assert env.snapshot() == before


def test_s_idx_2_pinned_entry_not_stamped() -> None:
    lines = ["- [S](s.md) 2020-01-01 -- use [pin] flag", "- [P](p.md) [pin] 2020-01-01 -- x"]
    assert maintain(lines, 180, {"s.md", "p.md"}) == lines


# --- S-IDX-3 upsert ---------------------------------------------------------------------


def test_s_idx_3_existing_pin_preserved() -> None:
    lines = ["- [Topic](t.md) [pin] 2025-01-01 -- summary"]
    out = upsert_index_line(lines, "t.md", "Topic", "new", False, TS)
    assert out == [f"- [Topic](t.md) [pin] {TS} -- new"]
    assert lines == ["- [Topic](t.md) [pin] 2025-01-01 -- summary"]


def test_s_idx_3_replaces_first_match_only() -> None:
    lines = [
        "# Memory Index",
        "- [Other](o.md) 2020-01-01 -- o",
        "  - [Old](t.md) 2020-01-01 [stale?] -- x trailing",
        "- [Old2](t.md) 2026-08-01 -- y",
        "",
    ]
    out = upsert_index_line(lines, "t.md", "New", "s", False, TS)
    assert out == [
        "# Memory Index",
        "- [Other](o.md) 2020-01-01 -- o",
        f"- [New](t.md) {TS} -- s",
        "- [Old2](t.md) 2026-08-01 -- y",
        "",
    ]


def test_s_idx_3_filename_match_is_case_sensitive_and_appends_after_empty_pieces() -> None:
    lines = ["# Memory Index", "", "- [T](T.md) 2020-01-01 -- x", "", ""]
    out = upsert_index_line(lines, "t.md", "t", "s", True, TS)
    assert out == [*lines, f"- [t](t.md) [pin] {TS} -- s"]
    # an unsafe entry-like line with the same target is not an entry
    out = upsert_index_line(["- [M](MEMORY.md) x"], "MEMORY.md", "M", "s", False, TS)
    assert out == ["- [M](MEMORY.md) x", f"- [M](MEMORY.md) {TS} -- s"]


def test_s_idx_3_store_write_keeps_pin_and_resolves_duplicates(env: StoreEnv) -> None:
    put_topics(env, "t.md", "p.md")
    env.put(
        IDX,
        "# Memory Index\n\n  - [Old](t.md) 2020-01-01 [stale?] -- x\n"
        "- [Old2](t.md) 2026-08-01 -- y\n"
        "- [P](p.md) [pin] 2025-01-01 -- summary\n",
    )
    assert env.store.execute_write_memory("Old2", "c", "s") == 'Updated memory topic "Old2" (t.md).'
    assert env.store.execute_write_memory("P", "c", "s2", pin=False) == (
        'Updated memory topic "P" (p.md).'
    )
    assert env.read(IDX) == (
        f"# Memory Index\n\n- [Old2](t.md) {TS} -- s\n- [P](p.md) [pin] {TS} -- s2\n"
    )


# --- S-IDX-4 pass 1 (best line per filename) -------------------------------------------


def test_s_idx_4_newer_date_string_wins() -> None:
    lines = ["- [Dup v1](dup.md) 2025-01-01 -- older", "- [Dup v2](dup.md) 2026-01-01 -- newer"]
    assert maintain(lines, 0, {"dup.md"}) == ["- [Dup v2](dup.md) 2026-01-01 -- newer"]


def test_s_idx_4_a2_string_order_not_time() -> None:
    lines = [
        "- [A1](alpha.md) 2026-01-01T10:00:00+08:00 -- one",
        "- [A2](alpha.md) 2026-01-01T05:00:00-05:00 -- two",
    ]
    assert maintain(lines, 0, {"alpha.md"}) == [lines[0]]
    assert maintain(lines, 180, {"alpha.md"}) == [
        "- [A1](alpha.md) 2026-01-01T10:00:00+08:00 [stale?] -- one"
    ]


def test_s_idx_4_ties_keep_earlier_and_missing_date_loses() -> None:
    lines = ["- [D1](dup.md) 2026-01-01 -- a", "- [D2](dup.md) 2026-01-01 -- b"]
    assert maintain(lines, 0, {"dup.md"}) == [lines[0]]
    lines = [
        "- [D1](dup.md) -- a",
        "- [D2](dup.md) 2020-01-01 -- b",
        "x",
        "- [D3](dup.md) 2020-01-01T00:00:00+00:00 -- c",
    ]
    assert maintain(lines, 0, {"dup.md"}) == ["x", lines[3]]
    lines = ["- [E1](e.md) -- a", "- [E2](e.md) -- b"]
    assert maintain(lines, 0, {"e.md"}) == [lines[0]]


def test_s_idx_4_non_regular_files_are_orphans(env: StoreEnv) -> None:
    d = env.local
    put_topics(env, "real.md", "target.md")
    os.symlink(os.path.join(d, "target.md"), os.path.join(d, "link.md"))
    os.symlink(os.path.join(d, "nowhere.md"), os.path.join(d, "dangling.md"))
    os.mkdir(os.path.join(d, "dir.md"))
    os.mkfifo(os.path.join(d, "fifo.md"))
    env.put(
        IDX,
        "# Memory Index\n\n"
        "- [Missing](missing.md) 2026-08-01 -- m\n"
        "- [Link](link.md) 2026-08-01 -- l\n"
        "- [Dangling](dangling.md) 2026-08-01 -- d\n"
        "- [Dir](dir.md) 2026-08-01 -- d\n"
        "- [Fifo](fifo.md) 2026-08-01 -- f\n"
        "- [Real](real.md) 2026-08-01 -- r\n",
    )
    assert env.store.execute_write_memory("New", "c", "n") == 'Created memory topic "New" (new.md).'
    assert env.read(IDX) == (
        f"# Memory Index\n\n- [Real](real.md) 2026-08-01 -- r\n\n- [New](new.md) {TS} -- n"
    )
    assert os.path.islink(os.path.join(d, "link.md"))
    assert env.read("agent/memory/target.md") == "target.md\n"


def test_s_idx_4_orphan_duplicate_does_not_shadow(env: StoreEnv) -> None:
    lines = ["- [B](b.md) 2026-01-01", "- [Gone](gone.md) 2026-01-01", "- [A](a.md) 2026-01-01"]
    lines.append("- [B2](b.md) 2026-01-02")
    assert maintain(lines, 0, {"a.md", "b.md"}) == [lines[2], lines[3]]


# --- S-IDX-5 pass 2 -------------------------------------------------------------------


def test_s_idx_5_orphan_removed_heading_and_blanks_kept(env: StoreEnv) -> None:
    put_topics(env, "keep.md")
    env.put(
        IDX,
        "# Memory Index\n\n- [Gone](gone.md) 2026-08-01 -- g\n\n## Section\n"
        "- [Keep](keep.md) 2026-08-01 -- k\n",
    )
    assert env.store.execute_remove_memory("Keep") == (
        'Removed "Keep" from the index. Topic file is preserved on disk.'
    )
    assert env.read(IDX) == "# Memory Index\n\n\n## Section\n"


def test_s_idx_5_best_line_emitted_at_its_own_position() -> None:
    lines = [
        "head",
        "- [Old](d.md) 2020-01-01 -- old",
        "middle",
        "\t- [New](d.md) 2026-08-01 -- new  ",
        "tail",
    ]
    assert maintain(lines, 180, {"d.md"}) == ["head", "middle", lines[3], "tail"]


# --- S-IDX-6 stale stamping and healing ------------------------------------------------

STAMP_CASES: list[tuple[str, float, str]] = [
    ("- [S](s.md) 2026-02-08 -- x", 180, "- [S](s.md) 2026-02-08 -- x"),  # age 180
    ("- [S](s.md) 2026-02-08 -- x", 179, "- [S](s.md) 2026-02-08 [stale?] -- x"),
    ("- [S](s.md) 2026-02-08 -- x", 179.5, "- [S](s.md) 2026-02-08 [stale?] -- x"),
    ("- [S](s.md) 2026-02-08 [stale?] -- x", 180, "- [S](s.md) 2026-02-08 -- x"),
    ("- [S](s.md) 2026-02-30 -- x", 157, "- [S](s.md) 2026-02-30 [stale?] -- x"),
    ("- [S](s.md) 2026-02-30 -- x", 158, "- [S](s.md) 2026-02-30 -- x"),
    (
        "- [S](s.md) 2026-02-08T24:00:00+00:00 -- x",
        178,
        "- [S](s.md) 2026-02-08T24:00:00+00:00 [stale?] -- x",
    ),
    (
        "- [S](s.md) 2026-02-08T24:00:00+00:00 -- x",
        179,
        "- [S](s.md) 2026-02-08T24:00:00+00:00 -- x",
    ),
    ("- [S](s.md) 0000-01-01 -- y0", 180, "- [S](s.md) 0000-01-01 [stale?] -- y0"),
    ("- [S](s.md) 2020-01-01 -- x [stale?]", 180, "- [S](s.md) 2020-01-01 -- x [stale?]"),
    ("- [S](s.md) 2026-08-01 -- a [stale?] b", 180, "- [S](s.md) 2026-08-01 -- a b"),
    ("- [S](s.md) 2026-08-01 -- no flag", 180, "- [S](s.md) 2026-08-01 -- no flag"),
    ("- [S](s.md) -- no date [stale?]", 180, "- [S](s.md) -- no date [stale?]"),
    (f"- [S](s.md) {TS} -- now", 0.5, f"- [S](s.md) {TS} -- now"),
    (
        "\t-  [S](s.md)  2020-01-01T23:59:59+23:59 r",
        180,
        "\t-  [S](s.md)  2020-01-01T23:59:59+23:59 [stale?] r",
    ),
]


@pytest.mark.parametrize(("line", "stale", "expected"), STAMP_CASES)
def test_s_idx_6_stamping_and_healing(line: str, stale: float, expected: str) -> None:
    assert maintain([line], stale, {"s.md"}) == [expected]


def test_s_idx_6_spec_example(env: StoreEnv) -> None:
    line = "- [Stale](stale-topic.md) 2020-01-01 -- very old"
    assert maintain([line], 180, {"stale-topic.md"}) == [
        "- [Stale](stale-topic.md) 2020-01-01 [stale?] -- very old"
    ]
    assert maintain([line], 0, {"stale-topic.md"}) == [line]


def test_s_idx_6_a8_stamp_lands_inside_timestamp_or_summary() -> None:
    assert maintain(["- [Q](9.md) 2020-01-01T00:00:00Z -- z"], 180, {"9.md"}) == [
        "- [Q](9.md) 2020-01-01 [stale?]T00:00:00Z -- z"
    ]
    assert maintain(["- [Z](zeta.md) -- updated 2020-01-01"], 180, {"zeta.md"}) == [
        "- [Z](zeta.md) -- updated 2020-01-01 [stale?]"
    ]
    # fractional seconds: date-only capture, stamped after it
    assert maintain(["- [F](f.md) 2020-01-01T00:00:00.5+00:00 -- f"], 180, {"f.md"}) == [
        "- [F](f.md) 2020-01-01 [stale?]T00:00:00.5+00:00 -- f"
    ]


def test_s_idx_6_a8_through_a_write(env: StoreEnv) -> None:
    put_topics(env, "9.md", "zeta.md")
    env.put(IDX, "- [Q](9.md) 2020-01-01T00:00:00Z -- z\n- [Z](zeta.md) -- updated 2020-01-01")
    env.store.execute_write_memory("N", "c", "n")
    assert env.read(IDX) == (
        "- [Q](9.md) 2020-01-01 [stale?]T00:00:00Z -- z\n"
        "- [Z](zeta.md) -- updated 2020-01-01 [stale?]\n"
        f"- [N](n.md) {TS} -- n"
    )


def test_s_idx_6_b8_flags_kept_when_pinned_or_disabled() -> None:
    pinned = "- [S](s.md) [pin] 2026-08-01 [stale?] -- x"
    assert maintain([pinned], 180, {"s.md"}) == [pinned]
    flagged = "- [S](s.md) 2020-08-01 [stale?] -- x"
    assert maintain([flagged], 0, {"s.md"}) == [flagged]
    plain = "- [S](s.md) 2020-08-01 -- x"
    assert maintain([plain], -5, {"s.md"}) == [plain]
    # unparseable first date: exactly one " [stale?]" removed
    assert maintain(["- [S](s.md) 2026-13-01 [stale?] [stale?] -- x"], 180, {"s.md"}) == [
        "- [S](s.md) 2026-13-01 [stale?] -- x"
    ]
    # healing removes the token only with its leading space
    assert maintain(["- [S](s.md) 2026-08-01[stale?] -- x"], 180, {"s.md"}) == [
        "- [S](s.md) 2026-08-01[stale?] -- x"
    ]


def test_s_idx_6_a1_heal_removes_flag_from_summary(env: StoreEnv) -> None:
    env.store.execute_write_memory("Odd", "c", "a [stale?] b")
    assert env.read(IDX).endswith(f"- [Odd](odd.md) {TS} -- a b")
    assert 'description: "a [stale?] b"' in env.read("agent/memory/odd.md")


# --- S-IDX-7 when maintenance runs ------------------------------------------------------


def test_s_idx_7_reads_never_maintain(env: StoreEnv) -> None:
    put_topics(env, "old.md")
    text = "- [Old](old.md) 2020-01-01 -- old\n- [Gone](gone.md) 2020-01-01 -- gone"
    env.put(IDX, text)
    before = settled(env)
    entries = env.store.read_index_entries()
    assert [(e.name, e.stale) for e in entries] == [("Old", False), ("Gone", False)]
    assert env.store.read_memory_index(300) == text
    assert env.store.search_memory("old")
    assert env.snapshot() == before


def test_s_idx_7_every_mutation_maintains(env: StoreEnv) -> None:
    put_topics(env, "old.md", "a.md")
    env.put(IDX, "- [Old](old.md) 2020-01-01 -- old\n- [A](a.md) 2026-08-01 -- a")
    env.store.execute_pin_memory("A", True)
    assert env.read(IDX) == (
        "- [Old](old.md) 2020-01-01 [stale?] -- old\n- [A](a.md) [pin] 2026-08-01 -- a"
    )
    env.put(IDX, "- [Old](old.md) 2020-01-01 -- old\n- [A](a.md) 2026-08-01 -- a")
    env.store.execute_remove_memory("A")
    assert env.read(IDX) == "- [Old](old.md) 2020-01-01 [stale?] -- old"
    env.put(IDX, "- [Old](old.md) 2020-01-01 -- old\n- [A](a.md) 2026-08-01 -- a")
    env.store.execute_write_memory("B", "b", "b")
    assert env.read(IDX) == (
        "- [Old](old.md) 2020-01-01 [stale?] -- old\n- [A](a.md) 2026-08-01 -- a\n"
        f"- [B](b.md) {TS} -- b"
    )


def test_s_idx_7_refused_mutations_do_not_maintain(env: StoreEnv) -> None:
    put_topics(env, "old.md", "p.md")
    env.put(
        IDX, "- [Old](old.md) 2020-01-01 -- old\n- [P](p.md) [pin] 2026-08-01 -- p\n- [G](g.md) x"
    )
    before = settled(env)
    assert env.store.execute_remove_memory("nothing") == 'No entry found matching "nothing".'
    assert env.store.execute_remove_memory("P").startswith('Cannot remove "P" — it is pinned.')
    assert env.store.execute_pin_memory("P", True) == '"P" is already pinned.'
    assert env.snapshot() == before


def test_s_idx_7_fresh_config_read_at_maintenance(env: StoreEnv) -> None:
    put_topics(env, "old.md")
    env.put(IDX, "- [Old](old.md) 2026-02-08 -- old")  # 180 days old
    env.config('{"stale_after_days": 180}')
    env.store.execute_write_memory("A", "a", "a")
    assert env.read(IDX).startswith("- [Old](old.md) 2026-02-08 -- old\n")
    env.config('{"stale_after_days": 179}')
    env.store.execute_write_memory("B", "b", "b")
    assert env.read(IDX).startswith("- [Old](old.md) 2026-02-08 [stale?] -- old\n")
    env.config('{"stale_after_days": 181}')
    env.store.execute_write_memory("C", "c", "c")
    assert env.read(IDX).startswith("- [Old](old.md) 2026-02-08 -- old\n")


def test_s_idx_7_clock_advance_is_seen(env: StoreEnv) -> None:
    put_topics(env, "old.md")
    env.put(IDX, "- [Old](old.md) 2026-02-08 -- old")
    env.store.execute_write_memory("A", "a", "a")
    assert "[stale?]" not in env.read(IDX)
    env.clock.advance(86_400_000)
    env.store.execute_write_memory("A", "a", "a")
    assert env.read(IDX).startswith("- [Old](old.md) 2026-02-08 [stale?] -- old\n")


def test_s_idx_7_never_adds_entries(env: StoreEnv) -> None:
    put_topics(env, "unindexed.md")
    env.put(IDX, "# Memory Index\n")
    env.store.execute_write_memory("A", "a", "a")
    assert env.read(IDX) == f"# Memory Index\n\n- [A](a.md) {TS} -- a"


# --- S-IDX-8 lookup ---------------------------------------------------------------------

LOOKUP = [
    "# Memory Index",
    "- [Zeta One](zeta-one.md) 2026-01-01 -- needle",
    "- [Zeta Two](zeta-two.md) 2026-01-01 -- two",
    "- [Dup](d1.md) 2026-01-01 -- first",
    "- [Dup](d2.md) 2026-01-01 -- second",
]


def test_s_idx_8_ambiguous_then_exact() -> None:
    assert find_index_entry(LOOKUP, "Zeta") == Ambiguous(["Zeta One", "Zeta Two"])
    lines = [*LOOKUP, "- [Zeta](zeta.md) 2026-01-01 -- z"]
    got = find_index_entry(lines, "Zeta")
    assert isinstance(got, Found) and got.index == 5


def test_s_idx_8_rules() -> None:
    got = find_index_entry(LOOKUP, "ZETA-ONE.MD")
    assert isinstance(got, Found) and got.index == 1
    # an exact filename match beats an earlier substring match
    got = find_index_entry(["- [Beta](xa.md) x", "- [Alpha](a.md) y"], "A.MD")
    assert isinstance(got, Found) and got.index == 1
    got = find_index_entry(LOOKUP, "one")
    assert isinstance(got, Found) and got.index == 1
    got = find_index_entry(LOOKUP, "dup")
    assert isinstance(got, Found) and got.index == 3  # first exact match wins (B-11)
    assert find_index_entry(LOOKUP, "needle") is None  # summaries are never searched
    assert find_index_entry(LOOKUP, "") == Ambiguous(["Zeta One", "Zeta Two", "Dup", "Dup"])
    got = find_index_entry(["x", "- [Only](only.md) y"], "")
    assert isinstance(got, Found) and got.index == 1
    # an exact match later in the file beats earlier substring matches
    lines = ["- [Kelvin Long](k1.md) x", "- [\u212aelvin](k2.md) y"]
    got = find_index_entry(lines, "kelvin")
    assert isinstance(got, Found) and got.index == 1


def test_s_idx_8_through_remove_and_pin(env: StoreEnv) -> None:
    put_topics(env, "zeta-one.md", "zeta-two.md", "zeta.md")
    env.put(IDX, "\n".join(LOOKUP[:3]))
    before = settled(env)
    assert env.store.execute_remove_memory("Zeta") == (
        'Multiple entries match "Zeta", be more specific: Zeta One, Zeta Two'
    )
    assert env.store.execute_pin_memory("Zeta", True) == (
        'Multiple entries match "Zeta", be more specific: Zeta One, Zeta Two'
    )
    assert env.store.execute_remove_memory("needle") == 'No entry found matching "needle".'
    assert env.snapshot() == before
    env.put(IDX, "\n".join([*LOOKUP[:3], "- [Zeta](zeta.md) 2026-01-01 -- z"]))
    assert env.store.execute_remove_memory("Zeta") == (
        'Removed "Zeta" from the index. Topic file is preserved on disk.'
    )
    assert env.read(IDX) == "\n".join(
        [
            "# Memory Index",
            "- [Zeta One](zeta-one.md) 2026-01-01 [stale?] -- needle",
            "- [Zeta Two](zeta-two.md) 2026-01-01 [stale?] -- two",
        ]
    )


def test_s_idx_8_empty_search_selects_single_entry(env: StoreEnv) -> None:
    put_topics(env, "only.md")
    env.put(IDX, "- [Only](only.md) 2026-08-01 -- o")
    assert env.store.execute_pin_memory("", True) == (
        'Pinned "Only".\nBefore: - [Only](only.md) 2026-08-01 -- o\n'
        " After: - [Only](only.md) [pin] 2026-08-01 -- o"
    )
