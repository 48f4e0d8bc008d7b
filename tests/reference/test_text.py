"""Text model: code units, whitespace/regex/case semantics, timestamps, slugs, JSON and numbers.

Clauses S-FMT-1, -2, -3, -4, -8, -16, -17, -18 and Appendix C-2 (time zones).  Expected values
marked "Node" were observed by running Node 20 (V8 11.3, ICU 78) on the same input.
"""

from __future__ import annotations

import json
import math
import re
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memconform.reference.clock import local_iso, parse_instant, utc_date
from memconform.reference.compaction import detect_incomplete_task
from memconform.reference.index import find_date, parse_index_line, to_slug
from memconform.reference.jsjson import JsonSyntaxError, json_parse, to_js_json
from memconform.reference.text import (
    LINE_START,
    UNDEFINED,
    WHITESPACE,
    WS_CLASS,
    collapse_whitespace,
    decode_utf8,
    encode_utf8,
    is_whitespace,
    join_surrogates,
    js_lower,
    json_string,
    number_to_string,
    to_code_units,
    to_string,
    trim,
    trim_start,
    utf16_len,
    utf16_slice,
)
from tests.conftest import NOW_MS, StoreEnv, set_tz

# The ECMAScript WhiteSpace + LineTerminator set, spelled out independently of the reference.
JS_WHITESPACE = frozenset(
    (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029)
).union((0x202F, 0x205F, 0x3000, 0xFEFF))
EMOJI = "\U0001f600"  # U+1F600, two UTF-16 code units
FFFD = b"\xef\xbf\xbd"
any_text = st.text(st.characters(exclude_categories=()))  # lone surrogates included

settings.register_profile("memconform-text", deadline=None, max_examples=300, database=None)
settings.load_profile("memconform-text")


def index_bytes(env: StoreEnv) -> bytes:
    return env.sandbox.path("agent/memory/MEMORY.md").read_bytes()


def topic_bytes(env: StoreEnv, name: str) -> bytes:
    return env.sandbox.path(f"agent/memory/{name}").read_bytes()


# --- S-FMT-1 text model ---------------------------------------------------------------------


def test_s_fmt_1_summary_cap_splits_surrogate_pair(env: StoreEnv) -> None:
    summary = "a" * 499 + EMOJI
    assert utf16_len(summary) == 501
    result = env.store.execute_write_memory("Surr", "body", summary)
    assert result == 'Created memory topic "Surr" (surr.md).'
    ts = "2026-08-07T01:02:50+00:00"
    # The index line holds 499 'a' and the lone high surrogate, written as U+FFFD.
    assert index_bytes(env) == (
        b"# Memory Index\n\n\n- [Surr](surr.md) " + ts.encode() + b" -- " + b"a" * 499 + FFFD
    )
    # The frontmatter description is JSON.stringify of the cut summary: a lowercase escape.
    assert topic_bytes(env, "surr.md") == (
        b'---\nmetadata:\n  node_type: memory\nname: "Surr"\ndescription: "'
        + b"a" * 499
        + b'\\ud83d"\nlast_updated: '
        + ts.encode()
        + b"\ncreated: "
        + ts.encode()
        + b"\n---\n\nbody\n"
    )


def test_s_fmt_1_summary_of_exactly_500_units_keeps_the_pair(env: StoreEnv) -> None:
    env.store.execute_write_memory("Pair", "x", "a" * 498 + EMOJI)
    assert index_bytes(env).endswith(b"-- " + b"a" * 498 + EMOJI.encode())
    assert b"\\ud83d" not in topic_bytes(env, "pair.md")


def test_s_fmt_1_files_decode_with_replacement_and_keep_bom(env: StoreEnv) -> None:
    # A BOM before the first index line stays U+FEFF (whitespace), so the line is an entry.
    env.put("agent/memory/MEMORY.md", b"\xef\xbb\xbf- [A](a.md) 2026-01-01 -- caf\xc3 x\n")
    env.put("agent/memory/a.md", "body\n")
    entries = env.store.read_index_entries()
    assert [(e.name, e.filename, e.summary) for e in entries] == [("A", "a.md", "caf\ufffd x")]
    assert env.store.read_memory_index(300) == "\ufeff- [A](a.md) 2026-01-01 -- caf\ufffd x\n"


def test_s_fmt_1_numbers_in_text_use_number_to_string(env: StoreEnv) -> None:
    env.put("agent/memory/MEMORY.md", "\n".join(f"l{i}" for i in range(60)))
    out = env.store.read_memory_index(50.0)
    assert out is not None
    assert out.endswith(
        "\n\n<!-- memory truncated: MEMORY.md exceeds 50-line limit; shorten the index -->"
    )
    assert "50.0" not in out
    assert to_string(UNDEFINED) == "undefined"
    assert to_string(None) == "null"


def test_s_fmt_1_unpaired_surrogates_encode_as_replacement() -> None:
    assert encode_utf8("a\ud83d") == b"a" + FFFD
    assert encode_utf8("\ude00\ud83d") == FFFD + FFFD
    # A pair given as two separate halves is one character (JS strings are code units).
    assert encode_utf8("\ud83d\ude00") == EMOJI.encode()
    assert encode_utf8("x" + EMOJI) == b"x\xf0\x9f\x98\x80"


# --- S-FMT-2 character classes and regex semantics -------------------------------------------


def test_s_fmt_2_whitespace_set_is_exactly_ecmascript() -> None:
    assert {ord(c) for c in WHITESPACE} == JS_WHITESPACE
    for cp in range(0x10000):
        assert is_whitespace(chr(cp)) == (cp in JS_WHITESPACE), hex(cp)
    assert not is_whitespace("")
    assert re.fullmatch(WS_CLASS, "\u0085") is None
    assert re.fullmatch(WS_CLASS, "\x1c") is None
    assert re.fullmatch(WS_CLASS, "\ufeff") is not None


def test_s_fmt_2_trim_and_collapse() -> None:
    assert trim("\ufeff\u00a0 a b \u2028\u3000") == "a b"
    assert trim("\u0085a\x1c") == "\u0085a\x1c"
    assert trim_start("\ufeff\t a ") == "a "
    assert collapse_whitespace("a\u00a0\ufeff b\n\u2029c\u0085d") == "a b c\u0085d"


def test_s_fmt_2_slug_and_keyword_examples() -> None:
    assert to_slug("a\u00a0b\ufeffc") == "a-b-c"
    assert detect_incomplete_task("épending") is True  # \b is ASCII-only: é is not a word char
    assert detect_incomplete_task("xpending") is False
    assert detect_incomplete_task("PENDING") is True


def test_s_fmt_2_lowercasing_is_full_and_locale_independent() -> None:
    assert js_lower("\u0130") == "i\u0307"
    assert js_lower("\u212a") == "k"
    assert js_lower("ΑΣ") == "ας"  # final sigma
    assert js_lower("ΑΣΑ") == "ασα"
    assert js_lower("Σ") == "σ"
    assert js_lower("I") == "i"  # no Turkish dotless-i tailoring


def test_s_fmt_2_multiline_line_start_honours_four_terminators() -> None:
    text = "x\rx\u2028x\u2029x\nx\x0bx\x85x"
    starts = [m.start() for m in re.finditer(LINE_START + "x", text)]
    assert starts == [0, 2, 4, 6, 8]
    # Not multi-line: $ is the very end, never before a final LF.
    assert re.search(r"a\Z", "a\n") is None


def test_s_fmt_2_index_rest_stops_at_line_terminators() -> None:
    for term in ("\r", "\u2028", "\u2029", "\n"):
        p = parse_index_line(f"- [A](a.md) -- s{term}tail")
        assert p is not None
        assert p.rest == " -- s"
    p = parse_index_line("\t- [A](a b.md)x")
    assert p is not None and (p.name, p.filename, p.rest) == ("A", "a b.md", "x")


def test_s_fmt_2_split_on_lf_only() -> None:
    assert ["a\rb\u2028c", "d\x0be\x85f"] == ["a\rb\u2028c", "d\x0be\x85f"]


# --- S-FMT-3 local timestamp and C-2 time zones -------------------------------------------


@pytest.mark.parametrize(
    ("tz", "instant", "expected"),
    [
        ("UTC", "2026-08-07T01:02:50Z", "2026-08-07T01:02:50+00:00"),
        ("Asia/Kolkata", "2026-08-07T01:02:50Z", "2026-08-07T06:32:50+05:30"),
        ("Asia/Kolkata", "2026-01-15T12:00:00.999Z", "2026-01-15T17:30:00+05:30"),
        ("America/St_Johns", "2026-01-15T12:00:00.999Z", "2026-01-15T08:30:00-03:30"),
        ("America/St_Johns", "2026-08-07T01:02:50Z", "2026-08-06T22:32:50-02:30"),
        # Before 1935 St John's kept LMT -03:30:52; getTimezoneOffset truncates to -03:30.
        ("America/St_Johns", "1920-01-15T12:00:00Z", "1920-01-15T08:29:08-03:30"),
        ("America/St_Johns", "1920-06-01T12:00:00Z", "1920-06-01T09:29:08-02:30"),
        ("UTC", "0999-03-04T05:06:07Z", "999-03-04T05:06:07+00:00"),
    ],
)
def test_s_fmt_3_c_2_local_timestamp(tz: str, instant: str, expected: str) -> None:
    set_tz(tz)
    assert local_iso(parse_instant(instant)) == expected


def test_s_fmt_3_milliseconds_truncated_and_negative_epoch() -> None:
    assert local_iso(999) == "1970-01-01T00:00:00+00:00"
    assert local_iso(-1) == "1969-12-31T23:59:59+00:00"
    assert local_iso(NOW_MS + 999) == "2026-08-07T01:02:50+00:00"


@pytest.mark.parametrize(
    ("tz", "stamp"),
    [
        ("UTC", "2026-08-07T01:02:50+00:00"),
        ("Asia/Kolkata", "2026-08-07T06:32:50+05:30"),
        ("America/St_Johns", "2026-08-06T22:32:50-02:30"),
    ],
)
def test_s_fmt_3_c_2_store_stamps_use_host_zone(env: StoreEnv, tz: str, stamp: str) -> None:
    set_tz(tz)
    env.store.execute_write_memory("Z", "c", "s")
    assert index_bytes(env) == f"# Memory Index\n\n\n- [Z](z.md) {stamp} -- s".encode()
    text = topic_bytes(env, "z.md").decode()
    assert f"\nlast_updated: {stamp}\ncreated: {stamp}\n" in text


def test_s_fmt_3_c_2_st_johns_winter_offset(env: StoreEnv) -> None:
    set_tz("America/St_Johns")
    env.clock.advance(parse_instant("2026-01-15T12:00:00.999Z") - NOW_MS)
    env.store.execute_write_memory("Z", "c", "s")
    assert index_bytes(env) == b"# Memory Index\n\n\n- [Z](z.md) 2026-01-15T08:30:00-03:30 -- s"


# --- S-FMT-4 UTC date -------------------------------------------------------------------


def test_s_fmt_4_append_heading_is_utc_date(env: StoreEnv) -> None:
    set_tz("Asia/Kolkata")
    env.clock.advance(parse_instant("2026-03-01T02:00:00+05:30") - NOW_MS)
    assert env.store.execute_write_memory("T", "one", "s") == 'Created memory topic "T" (t.md).'
    assert env.store.execute_write_memory("T", "two", "s2") == 'Updated memory topic "T" (t.md).'
    assert topic_bytes(env, "t.md") == (
        b'---\nmetadata:\n  node_type: memory\nname: "T"\ndescription: "s2"\n'
        b"last_updated: 2026-03-01T02:00:00+05:30\ncreated: 2026-03-01T02:00:00+05:30\n"
        b"---\n\none\n\n## 2026-02-28\n\ntwo\n"
    )
    assert index_bytes(env) == b"# Memory Index\n\n\n- [T](t.md) 2026-03-01T02:00:00+05:30 -- s2"


@pytest.mark.parametrize(
    ("ms", "expected"),
    [
        (0, "1970-01-01"),
        (-1, "1969-12-31"),
        (NOW_MS, "2026-08-07"),
        (parse_instant("2026-02-28T23:59:59.999Z"), "2026-02-28"),
        (-62167219200000, "0000-01-01"),
        # toISOString uses the extended year form outside 0000-9999; slice(0, 10) cuts it.
        (253402300800000, "+010000-01"),
        (-62167219200001, "-000001-12"),
    ],
)
def test_s_fmt_4_utc_date_values(ms: int, expected: str) -> None:
    set_tz("Asia/Kolkata")
    assert utc_date(ms) == expected


# --- S-FMT-8 slugs --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("topic", "slug"),
    [
        ("PostgreSQL Setup", "postgresql-setup"),
        ("Node.js & npm!", "nodejs-npm"),
        ("-Hello  --  World-", "-hello-world-"),
        ("K\u212aİ", "kki"),
        ("A\ufeffB", "a-b"),
        ("a\u001cb", "ab"),
        ("a\u0085b", "ab"),
        ("  x\t\n y  ", "x-y"),
        ("Émile Zola", "mile-zola"),
        ("C:\\Users\\me $& $1 $$", "cusersme-1"),
        ("ﬀ", ""),
        ("-", "-"),
        ("  --  ", "-"),
        ("pendıng", "pendng"),
        ("next ſtep", "next-tep"),
    ],
)
def test_s_fmt_8_slug_examples(topic: str, slug: str) -> None:
    assert to_slug(topic) == slug


@given(st.text())
def test_s_fmt_8_slug_shape(topic: str) -> None:
    slug = to_slug(topic)
    assert re.fullmatch(r"[a-z0-9-]*", slug, re.ASCII)
    assert "--" not in slug
    assert to_slug(slug) == slug


# --- S-FMT-16 pattern semantics -------------------------------------------------------


def test_s_fmt_16_pattern_examples(env: StoreEnv) -> None:
    assert to_slug("A\ufeffB") == "a-b"
    assert detect_incomplete_task("pendıng") is False
    assert detect_incomplete_task("next ſtep") is False
    assert detect_incomplete_task("ne\u212ad to") is False  # KELVIN SIGN lowercases to k
    assert detect_incomplete_task("NEED TO") is True
    assert find_date("\u0662\u0660\u0662\u0660-01-01") is None
    assert find_date("x 2020-01-01T10:00:00Z") == "2020-01-01"
    # A whitespace run in the topic becomes one hyphen, U+FEFF included, U+001C dropped.
    env.store.execute_write_memory("A\ufeffB", "c", "s")
    env.store.execute_write_memory("a\u001cb", "c", "s")
    assert env.exists("agent/memory/a-b.md")
    assert env.exists("agent/memory/ab.md")


def test_s_fmt_16_summary_whitespace_is_folded_with_js_set(env: StoreEnv) -> None:
    env.store.execute_write_memory("W", "c", "\ufeff a\u00a0\u2028b\x1cc\u0085 ")
    assert index_bytes(env).endswith(" -- a b\x1cc\u0085".encode())


# --- S-FMT-17 string primitives -------------------------------------------------------


def test_s_fmt_17_code_units() -> None:
    assert utf16_len("a" + EMOJI + "é") == 4
    assert utf16_slice("a" + EMOJI + "b", 0, 2) == "a\ud83d"
    assert utf16_slice("a" + EMOJI + "b", 2) == "\ude00b"
    assert utf16_slice("a" + EMOJI + "b", 1, 3) == EMOJI
    assert to_code_units(EMOJI) == "\ud83d\ude00"
    assert to_code_units("é") == "é"


@given(any_text, st.integers(0, 40), st.integers(0, 40))
def test_s_fmt_17_slice_matches_code_unit_model(s: str, a: int, b: int) -> None:
    units = to_code_units(s)
    assert utf16_len(s) == len(units)
    cut = utf16_slice(s, a, b)
    assert to_code_units(cut) == units[a:b]


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (b"\xef\xbb\xbfx", "\ufeffx"),
        (b"\xf0\x9f\x98", "\ufffd"),
        (b"\xed\xa0\x80", "\ufffd\ufffd\ufffd"),
        (b"\xc0\xaf", "\ufffd\ufffd"),
        (b"\xf4\x90\x80\x80", "\ufffd\ufffd\ufffd\ufffd"),
        (b"\xe2\x82a", "\ufffda"),
        (b"\xff\xc3\xa9", "\ufffdé"),
    ],
)
def test_s_fmt_17_decoding_maximal_subparts(raw: bytes, text: str) -> None:
    assert decode_utf8(raw) == text


@pytest.mark.parametrize(
    ("upper", "lower"),
    [
        ("\u0130", "i\u0307"),
        ("\u212a", "k"),
        ("ß", "ß"),  # never casefold
        ("ẞ", "ß"),
        ("ǅ", "ǆ"),
        ("\u03aa\u0301", "\u03ca\u0301"),
        # Letters of Unicode 15-17 that Node 20 (ICU 78) lowercases.
        ("\u1c89", "\u1c8a"),
        ("\ua7cb", "\u0264"),
        ("\ua7cc", "\ua7cd"),
        ("\ua7ce", "\ua7cf"),
        ("\ua7d2", "\ua7d3"),
        ("\ua7d4", "\ua7d5"),
        ("\ua7da", "\ua7db"),
        ("\ua7dc", "\u019b"),
        ("\U00010d50", "\U00010d70"),
        ("\U00010d65", "\U00010d85"),
        ("\U00016ea0", "\U00016ebb"),
        ("\U00016eb8", "\U00016ed3"),
        ("\ud83d", "\ud83d"),
    ],
)
def test_s_fmt_17_lowercasing(upper: str, lower: str) -> None:
    assert js_lower(upper) == lower


def test_s_fmt_17_lowercase_can_change_length(env: StoreEnv) -> None:
    assert utf16_len(js_lower("İ")) == 2
    # Name matching lowercases both sides: "İ" finds an entry named "i̇".
    env.store.execute_write_memory("x\u0130", "one", "s")
    assert env.store.execute_write_memory("xi\u0307", "two", "s2") == (
        'Updated memory topic "xi\u0307" (xi.md).'
    )


def test_s_fmt_17_replacement_is_literal(env: StoreEnv) -> None:
    topic = "C:\\Users\\me $& $1 $$"
    assert env.store.execute_write_memory(topic, "x $& y", "s $1") == (
        f'Created memory topic "{topic}" (cusersme-1.md).'
    )
    assert env.store.execute_write_memory(topic, "more $$", "s2 $&") == (
        f'Updated memory topic "{topic}" (cusersme-1.md).'
    )
    assert index_bytes(env) == (
        b"# Memory Index\n\n\n- [C:\\Users\\me $& $1 $$](cusersme-1.md) "
        b"2026-08-07T01:02:50+00:00 -- s2 $&"
    )
    assert topic_bytes(env, "cusersme-1.md") == (
        b'---\nmetadata:\n  node_type: memory\nname: "C:\\\\Users\\\\me $& $1 $$"\n'
        b'description: "s2 $&"\nlast_updated: 2026-08-07T01:02:50+00:00\n'
        b"created: 2026-08-07T01:02:50+00:00\n---\n\nx $& y\n\n## 2026-08-07\n\nmore $$\n"
    )


# --- S-FMT-18 JSON and number text ---------------------------------------------------


@pytest.mark.parametrize(
    ("s", "expected"),
    [  # Node: JSON.stringify(s)
        ("plain", '"plain"'),
        ('q"b\\s', '"q\\"b\\\\s"'),
        ("\b\f\n\r\t", '"\\b\\f\\n\\r\\t"'),
        ("\x00\x01\x1f", '"\\u0000\\u0001\\u001f"'),
        ("\x7f\u2028\u2029", '"\x7f\u2028\u2029"'),
        ("é中" + EMOJI, '"é中' + EMOJI + '"'),
        ("\ud83d", '"\\ud83d"'),
        ("a\ude00b", '"a\\ude00b"'),
        ("\ude00\ud83d", '"\\ude00\\ud83d"'),
        ("\ud83dx", '"\\ud83dx"'),
        ("\ud83d\ude00", '"' + EMOJI + '"'),
        ("/", '"/"'),
    ],
)
def test_s_fmt_18_json_string(s: str, expected: str) -> None:
    assert json_string(s) == expected


def test_s_fmt_18_json_string_escapes_every_control_character() -> None:
    short = {8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r"}
    for cp in range(0x20):
        assert json_string(chr(cp)) == '"' + short.get(cp, f"\\u{cp:04x}") + '"'
    for cp in (0x7F, 0x80, 0xA0, 0x2028, 0xFEFF, 0xFFFF):
        assert json_string(chr(cp)) == '"' + chr(cp) + '"'


@given(any_text)
def test_s_fmt_18_json_string_round_trips(s: str) -> None:
    out = json_string(s)
    assert json.loads(out) == join_surrogates(s)
    # Only the JS escapes appear; a surrogate never appears raw in the output.
    assert re.search("[\ud800-\udfff\x00-\x1f]", out) is None
    assert out == json.dumps(join_surrogates(s), ensure_ascii=False) or re.search(
        "[\ud800-\udfff]", join_surrogates(s)
    )


@pytest.mark.parametrize(
    ("value", "text"),
    [  # Node: String(value)
        (0.0, "0"),
        (-0.0, "0"),
        (1.0, "1"),
        (-1.0, "-1"),
        (1.5, "1.5"),
        (75.5, "75.5"),
        (300.0, "300"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1 / 3, "0.3333333333333333"),
        (1e16, "10000000000000000"),
        (1e20, "100000000000000000000"),
        (123456789012345680000.0, "123456789012345680000"),
        (1e21, "1e+21"),
        (-1e21, "-1e+21"),
        (2.0**70, "1.1805916207174113e+21"),
        (1.5e300, "1.5e+300"),
        (5e-7, "5e-7"),
        (1e-6, "0.000001"),
        (1.5e-6, "0.0000015"),
        (1e-7, "1e-7"),
        (1e-5, "0.00001"),
        (123e-20, "1.23e-18"),
        (12345678901234567890.0, "12345678901234567000"),
        (2.0**53 + 2, "9007199254740994"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (4.35, "4.35"),
        (math.inf, "Infinity"),
        (-math.inf, "-Infinity"),
        (math.nan, "NaN"),
    ],
)
def test_s_fmt_18_number_to_string(value: float, text: str) -> None:
    assert number_to_string(value) == text


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_s_fmt_18_number_to_string_is_shortest_round_trip(x: float) -> None:
    text = number_to_string(x)
    assert float(text) == x or (x == 0 and text == "0")
    digits = re.sub(r"e.*$", "", text).replace("-", "").replace(".", "").strip("0")
    shortest = re.sub(r"e.*$", "", repr(abs(x))).replace(".", "").strip("0")
    assert digits == shortest or x == 0
    if x != 0 and (abs(x) >= 1e21 or abs(x) < 1e-6):
        assert re.fullmatch(r"-?\d(\.\d+)?e[+-][1-9]\d*", text), text
    else:
        assert re.fullmatch(r"-?\d+(\.\d+)?", text), text
        assert not text.endswith(".0")


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_s_fmt_18_number_to_string_of_random_bit_patterns(bits: int) -> None:
    (x,) = struct.unpack(">d", bits.to_bytes(8, "big"))
    if math.isnan(x):
        assert number_to_string(x) == "NaN"
        return
    text = number_to_string(x)
    assert math.isinf(x) or float(text) == x


def test_s_fmt_18_render_rule_items(env: StoreEnv) -> None:
    env.config('{"always_persist": [1.0, -0, 1e16, 1e21, 5e-7, 12345678901234567890]}')
    from memconform.reference.config import render_rules_to_markdown

    md = render_rules_to_markdown(env.store.parse_rules())
    assert md == (
        "## Always persist\n- 1\n- 0\n- 10000000000000000\n- 1e+21\n- 5e-7\n- 12345678901234567000"
    )


def test_s_fmt_18_reading_json_numbers_are_doubles() -> None:
    assert json_parse("12345678901234567890") == 12345678901234567890.0
    assert isinstance(json_parse("7"), float)
    assert json_parse("1e400") == math.inf
    assert json_parse("-0") == 0 and math.copysign(1, json_parse("-0")) == -1  # type: ignore[arg-type]
    assert json_parse('{"a": 1, "a": 2}') == {"a": 2.0}
    assert json_parse('"\\ud83d"') == "\ud83d"
    assert json_parse('"\\ud83d\\ude00"') == EMOJI


def test_s_fmt_18_json_text_of_results() -> None:
    out = json.dumps(to_js_json([12345678901234567890.0, -0.0, 1e20, 5.0, 1e21, 0.5, math.inf]))
    assert out == "[12345678901234567000, 0, 100000000000000000000, 5, 1e+21, 0.5, null]"
    assert to_js_json({"a": UNDEFINED, "b": [UNDEFINED, math.nan]}) == {"b": [None, None]}


@pytest.mark.parametrize(
    ("text", "message"),
    [  # Node 20: JSON.parse(text) -> SyntaxError message
        ("", "Unexpected end of JSON input"),
        (" ", "Unexpected end of JSON input"),
        ("{", "Expected property name or '}' in JSON at position 1"),
        ("[", "Unexpected end of JSON input"),
        ('{"a":1,}', "Expected double-quoted property name in JSON at position 7"),
        ('{"a":1 "b":2}', "Expected ',' or '}' after property value in JSON at position 7"),
        ("[1 2]", "Expected ',' or ']' after array element in JSON at position 3"),
        ("[1,]", "Unexpected token ']', \"[1,]\" is not valid JSON"),
        ('{"a"}', "Expected ':' after property name in JSON at position 4"),
        ('{"a":1,"b" 1}', "Unexpected number in JSON at position 11"),
        ("{'a':1}", "Expected property name or '}' in JSON at position 1"),
        ("NaN", '"NaN" is not valid JSON'),
        ("Infinity", '"Infinity" is not valid JSON'),
        ("-Infinity", "No number after minus sign in JSON at position 1"),
        ('{"max_lines": NaN}', 'Unexpected token \'N\', "{"max_lines": NaN}" is not valid JSON'),
        (
            '{"max_lines": Infinity}',
            'Unexpected token \'I\', ..."x_lines": Infinity}" is not valid JSON',
        ),
        ('{"max_lines": -Infinity}', "No number after minus sign in JSON at position 15"),
        ("01", "Unexpected number in JSON at position 1"),
        ("1.", "Unterminated fractional number in JSON at position 2"),
        ("1e", "Exponent part is missing a number in JSON at position 2"),
        ("-", "No number after minus sign in JSON at position 1"),
        ('"abc', "Unterminated string in JSON at position 4"),
        ('"\\x"', "Bad escaped character in JSON at position 2"),
        ('"\\u12G4"', "Bad Unicode escape in JSON at position 5"),
        ('"a\x01"', "Bad control character in string literal in JSON at position 2"),
        ("nul", "Unexpected end of JSON input"),
        ("trux", "Unexpected token 'x', \"trux\" is not valid JSON"),
        ("null x", "Unexpected non-whitespace character after JSON at position 5"),
        ("\ufeff{}", "Unexpected token '\ufeff', \"\ufeff{}\" is not valid JSON"),
        (
            '{"max_lines": 60 /* c */}',
            "Expected ',' or '}' after property value in JSON at position 17",
        ),
        (
            '{"a":1,"b":2,"c":3,"d":[1,2,3,x]}',
            'Unexpected token \'x\', ..."d":[1,2,3,x]}" is not valid JSON',
        ),
        (
            '{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa": tru}',
            'Unexpected token \'}\', ..."aaaa": tru}" is not valid JSON',
        ),
        (
            '{"a": "' + EMOJI * 6 + '", "b": x}',
            "Unexpected token 'x', ...\"" + EMOJI + '", "b": x}" is not valid JSON',
        ),
        (
            '{"a": 1, "b": x, "c": "0123456789"}',
            'Unexpected token \'x\', ...": 1, "b": x, "c": "0"... is not valid JSON',
        ),
        ("x" + "1" * 30, "Unexpected token 'x', \"x111111111\"... is not valid JSON"),
        ("undefined", '"undefined" is not valid JSON'),
        ("[object Object]", '"[object Object]" is not valid JSON'),
        ('"\\', "Unexpected end of JSON input"),
        ('"\\中"', 'Unexpected token \'中\', ""\\中"" is not valid JSON'),
        ('{"a": tr"}', "Unexpected string in JSON at position 8"),
    ],
)
def test_s_fmt_18_json_parse_error_messages(text: str, message: str) -> None:
    with pytest.raises(JsonSyntaxError) as caught:
        json_parse(text)
    assert str(caught.value) == message
    assert caught.value.kind == "SyntaxError"


def test_s_fmt_18_json_parse_has_no_depth_limit() -> None:
    deep = "[" * 5000 + "]" * 5000
    value = json_parse(deep)
    for _ in range(4999):
        assert isinstance(value, list) and len(value) == 1
        value = value[0]
    assert value == []
    with pytest.raises(JsonSyntaxError, match="^Expected ',' or ']' after array element"):
        json_parse("[" * 5000 + "]" * 4999)


json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_s_fmt_18_json_parse_round_trips_python_json(value: object) -> None:
    text = json.dumps(value, ensure_ascii=False)
    assert json_parse(text) == json.loads(text, parse_int=float)
