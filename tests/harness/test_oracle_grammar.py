"""The oracles' SPEC-written grammar against the reference's parsers (issue 11).

``harness.oracles.grammar`` and ``reference.index``/``reference.config`` were written apart
from the same clauses.  Each property says the two answer alike on generated inputs aimed at
the edges (the S-FMT-2 whitespace set with U+2028/2029/FEFF/NBSP, brackets and parentheses,
``..``, leading dots, ``MEMORY.md`` casing, control characters, comments inside strings,
unterminated literals, escaped quotes, trailing commas).  A failure means one side misreads
SPEC: find out which from the clause and keep the input below as an explicit example.

Settings come from ``harness.machines.profiles`` (``HYPOTHESIS_PROFILE``): randomised, no
example database, the reproduction blob printed on failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from memconform.harness.machines.profiles import PROFILES, profile, profile_name
from memconform.harness.oracles import grammar
from memconform.reference import config as ref_config
from memconform.reference import index as ref_index

# Cheap pure functions: several times the profile's budget (ci 80 -> 320, nightly 1000 -> 4000).
# The parser the reference reads memory.jsonc with (moving from memconform.reference.text to reference.jsjson).
json_parse: Callable[[str], object] = vars(ref_config)["json_parse"]

SETTINGS = profile(max_examples=4 * PROFILES[profile_name()].max_examples)

# Characters where Python's defaults and SPEC part ways, or where the grammar turns.
_SPACES = "\t\n\x0b\x0c\r \u00a0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_NOT_SPACES = "\x1c\x1d\x1e\x1f\x85\u200b"
_SPECIAL = "[]()-\\/.\x00\x01\x7f#*`:~"
_CASES = "aAzZ09éÉßΣς\u0130\u0131\u212a\u017fkK"
_ALPHABET = _SPACES + _NOT_SPACES + _SPECIAL + _CASES + "\U0001f600\ud83d"

chars = st.sampled_from(_ALPHABET)
odd_text = st.one_of(st.text(chars, max_size=12), st.text(max_size=16))


def _fragments(*parts: str) -> st.SearchStrategy[str]:
    """Strings glued from meaningful fragments and odd characters."""
    return st.lists(st.one_of(st.sampled_from(parts), chars), max_size=10).map("".join)


filenames = _fragments(
    ".md", ".MD", ".Md", "md", "memory", "MEMORY", "Memory", "..", ".", "a", "topic", " ", "é",
    "(", ")", "[", "]", "/", "\\", "\x00", "\x1f", "\x7f", "\u2028", "\u0130", "\u212a",
)
names = _fragments("Topic", "[", "]", "](", "(", ")", " ", "\r", "\u2028", "[x]", "a")
rests = _fragments(
    " ", " -- ", "[pin]", " [pin]", "[stale?]", "2026-01-01", "T01:02:03+05:30", "\n", "\r",
    "\u2028", "\u2029", "summary", ")", "]",
)
prefixes = _fragments("", " ", "\t", "\ufeff", "\u00a0", "\u2028", "\r", "-", "*", "\x85", "\x1c")
separators = _fragments(" ", "\t", "\ufeff", "\u00a0", "\u2028", "\r", "", "\x85", "\u200b")


@st.composite
def entry_like(draw: st.DrawFn) -> str:
    """Lines shaped like ``PREFIX- [NAME](FILE)REST``, each part perturbed."""
    opener = draw(st.sampled_from(["- [", "-[", "* [", "- ", "["]))
    sep = draw(separators)
    opener = opener.replace(" ", sep or " ") if draw(st.booleans()) else opener
    middle = draw(st.sampled_from(["](", "] (", "]", "](("]))
    closer = draw(st.sampled_from([")", "", "))"]))
    return (
        draw(prefixes) + opener + draw(names) + middle + draw(filenames) + closer + draw(rests)
    )


def _as_tuple(p: object) -> tuple[str, ...] | None:
    if p is None:
        return None
    return tuple(getattr(p, k) for k in ("prefix", "name", "mid", "filename", "rest"))


# --- index lines: S-FMT-6, S-FMT-7, S-IDX-1 ------------------------------------------------


@SETTINGS
@given(st.one_of(entry_like(), odd_text))
@example("\t- [A](a b.md)x")
@example("- [A](a.md) -- s\u2028tail")
@example("\ufeff- [A](a.md) 2026-01-01 -- bom before the first entry")
@example("- [Bracket [x]](bad.md)")
@example("- [Hidden](.hidden.md) 2026-01-01 -- x")
@example("- [Index](MEMORY.md) x")
@example("- [Index](memory.md) x")
@example("- [A](a..b.md) x")
@example("-\u2028[A](a.md)")
def test_parse_matches_reference(line: str) -> None:
    assert _as_tuple(grammar.parse(line)) == _as_tuple(ref_index.parse_index_line(line))


@SETTINGS
@given(st.one_of(filenames, odd_text))
@example("A.MD")
@example("Memory.md")
@example("MEMORY.MD")
@example(".md")
@example("a b é.md")
@example("a(1).md")
@example("x\u2028y.md")
@example("\u0130.md")
def test_safe_filename_matches_reference(name: str) -> None:
    assert grammar.safe_filename(name) is ref_index.is_safe_filename(name)


@SETTINGS
@given(entry_like())
def test_flags_match_reference(line: str) -> None:
    ours, theirs = grammar.parse(line), ref_index.parse_index_line(line)
    if ours is not None and theirs is not None:
        assert (ours.pinned, ours.stale) == (theirs.pinned, theirs.stale)
        assert ours.render() == theirs.prefix + theirs.name + theirs.mid + theirs.rest


def test_spec_examples_of_the_entry_grammar() -> None:
    """S-FMT-6 / S-IDX-1 / S-FMT-7 tests, against SPEC alone."""
    assert grammar.parse("-[A](a.md)") is None
    assert grammar.parse("* [A](a.md)") is None
    p = grammar.parse("\t- [A](a b.md)x")
    assert p is not None and (p.name, p.filename, p.rest) == ("A", "a b.md", "x")
    p = grammar.parse("- [A](a.md) -- s\u2028tail")
    assert p is not None and p.rest == " -- s"
    for unsafe in ("- [Hidden](.hidden.md) x", "- [Index](MEMORY.md) x", "- [I](memory.md) x"):
        assert grammar.parse(unsafe) is None
    assert grammar.parse("- [A](a..b.md) x") is None
    assert grammar.safe_filename("A.MD") and not grammar.safe_filename("Memory.md")
    p = grammar.parse("- [Topic](topic.md) [pin] 2026-01-01 -- summary")
    assert p is not None and p.pinned and not p.stale


# --- dates: S-FMT-11 ------------------------------------------------------------------------

two = st.integers(0, 99).map(lambda n: f"{n:02d}")
years = st.one_of(st.sampled_from(["0000", "1969", "1970", "2000", "2020", "2021", "2100"]),
                  st.integers(0, 9999).map(lambda n: f"{n:04d}"))
low_two = st.one_of(two, st.sampled_from(["00", "01", "12", "13", "23", "24", "28", "29", "30", "31", "32", "59", "60"]))


@st.composite
def stamps(draw: st.DrawFn) -> str:
    day = f"{draw(years)}-{draw(low_two)}-{draw(low_two)}"
    if draw(st.booleans()):
        sign = draw(st.sampled_from("+-"))
        day += f"T{draw(low_two)}:{draw(low_two)}:{draw(low_two)}{sign}{draw(low_two)}:{draw(low_two)}"
    return day


dated_rests = st.tuples(rests, stamps(), st.sampled_from(["", "Z", ".123", " ", "5", "T01:02"]), rests).map(
    "".join
)


@SETTINGS
@given(st.one_of(dated_rests, rests, odd_text))
@example(" 2026-01-01T01:02:03Z -- z")
@example(" 2026-01-01T01:02:03.5+00:00")
@example(" \u0662\u0660\u0662\u0660-01-01 2021-01-01")
@example("12026-01-01")
def test_first_date_matches_reference(rest: str) -> None:
    assert grammar.first_date(rest) == ref_index.find_date(rest)


@SETTINGS
@given(stamps())
@example("2026-02-30")
@example("2021-02-29")
@example("2020-04-31")
@example("2020-02-29")
@example("1900-02-29")
@example("0000-02-29")
@example("0000-01-01")
@example("2026-13-01")
@example("2026-00-10")
@example("2026-01-00")
@example("2026-01-32")
@example("2026-01-01T24:00:00+00:00")
@example("2026-01-01T24:00:01+00:00")
@example("2026-01-01T23:60:00+00:00")
@example("2026-01-01T23:00:60+00:00")
@example("2026-01-01T12:00:00+24:00")
@example("2026-01-01T12:00:00-23:59")
@example("2026-01-01T12:00:00+00:60")
def test_date_ms_matches_reference(stamp: str) -> None:
    assert grammar.date_ms(stamp) == ref_index.parse_date_ms(stamp)


def test_spec_examples_of_dates() -> None:
    """S-FMT-11 roll-over, year 0000 and hour 24, against SPEC alone."""
    day = grammar.DAY_MS
    assert grammar.date_ms("1970-01-01") == 0
    assert grammar.date_ms("2026-02-30") == grammar.date_ms("2026-03-02")
    assert grammar.date_ms("2021-02-29") == grammar.date_ms("2021-03-01")
    assert grammar.date_ms("2020-04-31") == grammar.date_ms("2020-05-01")
    assert grammar.date_ms("2026-01-01T24:00:00+00:00") == grammar.date_ms("2026-01-02")
    assert grammar.date_ms("2026-01-01T05:30:00+05:30") == grammar.date_ms("2026-01-01")
    assert grammar.date_ms("0000-03-01") == grammar.date_ms("0000-02-28") + 2 * day  # type: ignore[operator]
    assert grammar.date_ms("2026-13-01") is None
    assert grammar.first_date(" 2026-01-01T01:02:03Z") == "2026-01-01"
    assert grammar.first_date(" \u0662\u0660\u0662\u0660-01-01") is None


# --- slugs: S-FMT-8 -------------------------------------------------------------------------

topics = _fragments("PostgreSQL Setup", "Node.js & npm!", " -- ", "--", "-", "  ", "\u0130", "\u212a")


@SETTINGS
@given(st.one_of(topics, odd_text, st.text(max_size=20)))
@example("PostgreSQL Setup")
@example("Node.js & npm!")
@example("-Hello  --  World-")
@example("K\u212a\u0130")
@example("A\ufeffB")
@example("a\u001cb")
@example("a\u00a0b\ufeffc")
@example("\u2028x\u2029")
@example("ΣΑΣ a")
def test_to_slug_matches_reference(topic: str) -> None:
    assert grammar.to_slug(topic) == ref_index.to_slug(topic)


@pytest.mark.parametrize(
    ("topic", "slug"),
    [("PostgreSQL Setup", "postgresql-setup"), ("Node.js & npm!", "nodejs-npm"),
     ("-Hello  --  World-", "-hello-world-"), ("K\u212a\u0130", "kki"), ("A\ufeffB", "a-b"),
     ("a\u001cb", "ab"), ("a\u00a0b\ufeffc", "a-b-c")],
)
def test_spec_examples_of_slugs(topic: str, slug: str) -> None:
    """S-FMT-8, S-FMT-2 and S-FMT-16 tests, against SPEC alone."""
    assert grammar.to_slug(topic) == slug


# --- JSONC: S-CFG-5, S-CFG-6 ----------------------------------------------------------------

jsonc_text = _fragments(
    '"', '\\"', "\\", "\\\\", "//", "/", "/*", "*/", "\n", "\r", ",", ", ", "}", "]", "{", "[",
    ":", " ", "\u00a0", "\u2028", "\ufeff", "\x85", "a", "1", '"a"', "// c\n", ",\n}", ",]",
    "https://x//y", "true",
)


@st.composite
def commented_json(draw: st.DrawFn) -> str:
    """A real JSON value's text with comments and trailing commas sprinkled in."""
    leaves = st.one_of(st.integers(-10**20, 10**20), st.booleans(), st.none(),
                       st.text(st.sampled_from('ab"\\/, ]}\n\u2028'), max_size=6))
    value = draw(st.recursive(leaves, lambda kids: st.one_of(
        st.lists(kids, max_size=3), st.dictionaries(st.text("abc", max_size=3), kids, max_size=3)
    ), max_leaves=8))
    text = json.dumps(value, indent=draw(st.sampled_from([None, 2])), ensure_ascii=False)
    out = []
    for ch in text:
        if ch in "]}" and draw(st.booleans()):
            out.append(draw(st.sampled_from([",", ", ", ",\u00a0", ",\n  "])))
        out.append(ch)
        if ch in ",\n" and draw(st.integers(0, 3)) == 0:
            out.append(draw(st.sampled_from(["// note\n", "//", "// \"q\" ,]\n"])))
    return "".join(out)


@SETTINGS
@given(st.one_of(jsonc_text, commented_json(), odd_text))
@example('{"url": "https://example.com//x"}')
@example('{ "max_lines": 75, }')
@example('{"max_lines": 120}// x')
@example('{"a": "\\"// not a comment", }')
@example('{"a": "unterminated // still a string, ]')
@example('"\\')
@example("// comment at the end")
@example('{"a": 1 /* block */}')
@example("\ufeff{}")
@example('{"a": [1,\u00a0]}')
@example('{"a": [1,,]}')
@example(',\u2028}')
def test_strip_jsonc_matches_reference(text: str) -> None:
    assert grammar.strip_jsonc(text) == ref_config.strip_jsonc(text)


def _reference_values(text: str) -> tuple[bool, object]:
    try:
        return True, json_parse(ref_config.strip_jsonc(text))
    except ValueError:
        return False, None


def _oracle_values(text: str) -> tuple[bool, object]:
    try:
        return True, grammar.config_values(text)
    except ValueError:
        return False, None


@SETTINGS
@given(st.one_of(commented_json(), jsonc_text))
@example('{"max_lines": NaN}')
@example('{"max_lines": -Infinity}')
@example('{"max_lines": 1e400}')
@example('{"a": 12345678901234567890}')
@example('{"a": 1, "a": 2, "b": 3}')
def test_config_values_match_reference(text: str) -> None:
    assert _oracle_values(text) == _reference_values(text)


def _loads(parse: Callable[[str], object], text: str) -> tuple[bool, object]:
    try:
        return True, parse(text)
    except ValueError:
        return False, None


@SETTINGS
@given(st.one_of(commented_json(), jsonc_text).map(grammar.strip_jsonc))
@example('{"a": 1, "a": [2, {"b": "\\u00e9\\"x"}], "c": -0.5e-3}')
@example("[1e400, -0, 01]")
@example('["\\ud83d", "tab\there"]')
def test_deep_parser_matches_json(text: str) -> None:
    """The recursion-free parser answers as ``json`` does wherever ``json`` does not overflow."""
    fast = _loads(lambda t: json.loads(t, parse_constant=grammar._no_constant, parse_int=float), text)
    assert _loads(grammar._deep_json, text) == fast


def test_config_values_of_deep_nesting() -> None:
    """Found by comparing with the reference: ``json`` overflows on nesting JSON.parse accepts.

    ``config_values("[" * 5000 + "]" * 5000)`` raised where the reference (V8's parser,
    S-CFG-6) returns the nested list; the oracle now falls back to a parser without recursion.
    """
    def spine(parsed: tuple[bool, object]) -> tuple[bool, int, object]:
        """Success, depth and innermost value, walked without recursion (== would overflow)."""
        ok, value, depth = parsed[0], parsed[1], 0
        while isinstance(value, (list, dict)) and value:
            value = value[0] if isinstance(value, list) else next(iter(value.values()))
            depth += 1
        return ok, depth, value

    for text in ("[" * 5000 + "]" * 5000, '{"a": ' * 3000 + "1" + "}" * 3000, "[" * 5000 + "]" * 4999):
        assert spine(_oracle_values(text)) == spine(_reference_values(text))
    assert spine(_oracle_values("[" * 5000 + "]" * 5000)) == (True, 4999, [])


def test_spec_examples_of_jsonc() -> None:
    """S-CFG-5 / S-CFG-6 tests, against SPEC alone."""
    assert grammar.config_values('{"u": "https://example.com//x"}') == {"u": "https://example.com//x"}
    assert grammar.config_values('{ "max_lines": 75, }') == {"max_lines": 75.0}
    assert grammar.config_values('{"max_lines": 120}// x') == {"max_lines": 120.0}
    assert grammar.strip_jsonc("a// x\nb") == "a\nb"
    assert grammar.strip_jsonc(",\u00a0}") == "\u00a0}"
    for bad in ('{"a": NaN}', "{/* c */}", "\ufeff{}", "{,\u00a0}"):
        with pytest.raises(ValueError):
            grammar.config_values(bad)
    assert grammar.config_values('{"a": 12345678901234567890}') == {"a": 12345678901234567000.0}


# --- the JS core itself, when given (MEMCONFORM_PI_CORE) -------------------------------------

_NODE_LOOP = r"""
import readline from 'node:readline';
const core = await import(process.argv[1]);
const answer = ({fn, arg}) => fn === 'slug' ? core.toSlug(arg)
  : fn === 'line' ? core.parseIndexLine(arg)
  : (t => Number.isNaN(t) ? null : t)(new Date(arg).getTime());
for await (const line of readline.createInterface({input: process.stdin})) {
  process.stdout.write(JSON.stringify(answer(JSON.parse(line)) ?? null) + '\n');
}
"""


class JsCore:
    """One node process answering ``toSlug``, ``parseIndexLine`` and ``new Date`` per line."""

    def __init__(self, core: str, home: Path) -> None:
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home),
               "PI_CODING_AGENT_DIR": str(home / "agent"), "PI_SHARED_MEMORY_HOME": str(home), "TZ": "UTC"}
        self.proc = subprocess.Popen(
            ["node", "--input-type=module", "-e", _NODE_LOOP, Path(core).resolve().as_uri()],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True, encoding="utf-8",
        )

    def ask(self, fn: str, arg: str) -> object:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"fn": fn, "arg": arg}) + "\n")  # ASCII: no line breaks
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())


@pytest.fixture(scope="module")
def js_core(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JsCore]:
    core = os.environ.get("MEMCONFORM_PI_CORE")
    if not core or shutil.which("node") is None:
        pytest.skip("no peer: set MEMCONFORM_PI_CORE=<memory-core.mjs> to hold the grammar to the JS core")
    js = JsCore(core, tmp_path_factory.mktemp("js-core-home"))
    yield js
    js.proc.kill()
    js.proc.wait()


@SETTINGS
@given(st.one_of(entry_like(), odd_text, topics))
@example("\ufeff- [A](a.md) x")
@example("- [A](a.md) -- s\u2028tail")
def test_grammar_matches_the_js_core(js_core: JsCore, text: str) -> None:
    """Truth for both sides: the JS core's own parseIndexLine/toSlug and ECMAScript Date."""
    assert grammar.to_slug(text) == js_core.ask("slug", text)
    p = grammar.parse(text)
    expected = None if p is None else {k: getattr(p, k) for k in ("prefix", "name", "mid", "filename", "rest")}
    assert expected == js_core.ask("line", text)


@SETTINGS
@given(stamps())
@example("2026-02-30")
@example("0000-01-01")
@example("2026-01-01T24:00:00+00:00")
@example("2026-01-01T24:00:01+00:00")
@example("2026-01-01T12:00:00+24:00")
def test_date_ms_matches_ecmascript_date(js_core: JsCore, stamp: str) -> None:
    assume(not _v8_legacy_date(stamp))
    assert grammar.date_ms(stamp) == js_core.ask("date", stamp)


def _v8_legacy_date(stamp: str) -> bool:
    """A date-only stamp V8 rescues with its legacy parser after the ISO form fails (see below)."""
    if len(stamp) != 10:
        return False
    year, month, day = int(stamp[0:4]), int(stamp[5:7]), int(stamp[8:10])
    iso_valid = 1 <= month <= 12 and 1 <= day <= 31
    return not iso_valid and 1 <= year <= 12 and 1 <= month <= 31


@pytest.mark.parametrize(
    ("stamp", "v8"),
    [("0001-01-00", "2000-01-01"), ("0001-13-01", "2001-01-13"), ("0012-12-40", "2040-12-12"),
     ("0002-30-01", "2001-03-02"), ("0001-01-50", "1950-01-01")],
)
def test_v8_legacy_date_fallback_is_outside_spec(js_core: JsCore, stamp: str, v8: str) -> None:
    """Found against the JS core: a difference of SPEC (S-FMT-11) and V8, not of the oracle.

    S-FMT-11 makes a stamp with month ∉ 01–12 or day ∉ 01–31 invalid, and the reference and
    this oracle follow it.  V8's ``new Date`` (which the JS core's stale check uses) falls back
    to its legacy parser when the ISO form fails: ``YYYY-MM-DD`` with YYYY 0001–0012 and
    MM 01–31 is then read as month YYYY, day MM, two-digit year DD (00–49 → 20DD, 50–99 →
    19DD), with roll-over; the long form stays invalid.  So `- [T](t.md) 0001-13-01 -- x` is
    stale-flagged by the JS core (2001-01-13) and healed by SPEC.  Exhaustive over YYYY 0001–0012
    × MM 00–99 × DD 00–99, that rule and V8 agree on every stamp.
    """
    assert grammar.date_ms(stamp) is None
    assert js_core.ask("date", stamp) == grammar.date_ms(v8)
