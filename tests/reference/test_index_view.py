"""The index view answers exactly what the line scans answer (S-IDX-3..8, S-WRITE-6).

``reference.index_view`` exists for speed: a write reuses the parsed index it published.
These tests hold it to the plain engine (``reference.index_engine.PlainIndex``, the scans of
``reference.index``) through the ``Index`` seam a ``Store`` asks through, on random indexes
(repeated names and filenames, orphans, pins, stale marks, invalid dates, text after REST,
non-entry lines) and random edit sequences, so an optimisation can never change a byte.
``test_engines.py`` does the same for a whole ``Store``.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memconform.reference.index import (
    DAY_MS,
    Found,
    IndexLine,
    find_index_entry,
    maintain_index,
    parse_index_line,
    upsert_index_line,
)
from memconform.reference.index_engine import Index, PlainEngine, PlainIndex
from memconform.reference.index_view import IndexView, ViewEngine
from memconform.reference.text import js_lower
from tests.conftest import NOW_MS
from tests.support import examples

NAMES = ["Alpha", "alpha", "Beta", "b.md", "Gamma ray", "ΣΑΣ"]
FILES = ["a.md", "b.md", "c.md", "B.md", "gamma-ray.md", "σας.md"]
DATES = [
    "2026-08-07T01:02:50+00:00",
    "2026-08-01",
    "2025-01-01T00:00:00+00:00",
    "2020-02-30",  # an invalid date: restamp heals it
    "2026-02-09T00:00:00+00:00",
    "",
]


@st.composite
def index_lines(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 7)) == 0:
        return draw(st.sampled_from(["# Memory Index", "", "not an entry", "- [x](../up.md) 2026-01-01"]))
    name, fname, date = draw(st.sampled_from(NAMES)), draw(st.sampled_from(FILES)), draw(st.sampled_from(DATES))
    pin = draw(st.sampled_from(["", " [pin]"]))
    stale = draw(st.sampled_from(["", " [stale?]", "[stale?]"]))
    tail = draw(st.sampled_from(["", "", "\r trailing", "\u2028x"]))
    return f"- [{name}]({fname}){pin} {date}{stale} -- summary{tail}"


stale_days = st.sampled_from([0, -1, 1, 30, 180, 0.5, 1e9, float("inf")])
now_ms = st.sampled_from([NOW_MS, NOW_MS + 400 * DAY_MS, NOW_MS - 3 * DAY_MS])
regular_sets = st.sets(st.sampled_from(FILES), max_size=len(FILES))


def same_as_fresh(view: IndexView) -> None:
    """A derived view answers every question as a view built from its lines does."""
    fresh = IndexView(list(view.lines))
    assert view.text == "\n".join(view.lines)
    assert view.parsed == fresh.parsed
    assert len(view.ids) == len(view.lines) and view.ids == sorted(set(view.ids))

    def positions(v: IndexView, d: dict[str, int]) -> dict[str, int]:
        return {k: v.pos(i) for k, i in d.items()}

    assert positions(view, view.first_at) == positions(fresh, fresh.first_at)
    assert positions(view, view.exact) == positions(fresh, fresh.exact)
    assert (view.last_named, view.entry_count) == (fresh.last_named, fresh.entry_count)
    assert view.entry_count == len(view.entries())
    for attr in ("unmarked", "marked"):
        ours = [(ms, view.pos(i)) for ms, i in getattr(view.stamps, attr)]
        assert ours == [(ms, fresh.pos(i)) for ms, i in getattr(fresh.stamps, attr)], attr
    for attr in ("healing", "cut"):
        assert {view.pos(i) for i in getattr(view.stamps, attr)} == {fresh.pos(i) for i in getattr(fresh.stamps, attr)}, attr


edits = st.lists(
    st.one_of(
        st.tuples(st.just("upsert"), st.sampled_from(FILES), st.sampled_from(NAMES), st.booleans()),
        st.tuples(st.just("maintain"), stale_days, now_ms, regular_sets),
        st.tuples(st.just("remove"), st.integers(0, 40)),
        st.tuples(st.just("patch"), st.integers(0, 40), index_lines()),
        st.tuples(st.just("drop"), st.sampled_from(FILES), st.booleans()),
    ),
    max_size=8,
)

SEARCHES = NAMES + FILES + ["zzz", "ALPHA", "B.MD", "a", ".md"]


def same_answers(view: Index, plain: Index) -> None:
    """Every question of the ``Index`` seam gets the same answer from both engines."""
    assert list(view.lines) == list(plain.lines) and view.text == plain.text
    assert view.entries() == plain.entries()
    for search in SEARCHES:
        assert view.find(search) == plain.find(search), search
        assert view.file_named(search) == plain.file_named(search), search
    for fname in FILES:
        assert view.first_pos(fname) == plain.first_pos(fname), fname


def step_both(view: Index, plain: Index, step: tuple) -> tuple[Index, Index]:  # type: ignore[type-arg]
    """One edit through the seam, on both engines."""
    kind = step[0]
    if kind == "upsert":
        _, fname, name, pin = step
        stamp = "2026-08-07T01:02:50+00:00"
        return view.upserted(fname, name, "s", pin, stamp), plain.upserted(fname, name, "s", pin, stamp)
    if kind == "maintain":
        _, stale, now, regular = step
        return view.maintained(stale, now, set(regular)), plain.maintained(stale, now, set(regular))
    if kind == "drop":
        _, fname, pinned_only = step

        def drop(entry: IndexLine) -> bool:
            return not pinned_only or entry.pinned

        return view.dropping(fname, drop), plain.dropping(fname, drop)
    if not view.lines:
        return view, plain
    pos = step[1] % len(view.lines)
    if kind == "remove":
        return view.without(pos), plain.without(pos)
    return view.replaced(pos, step[2]), plain.replaced(pos, step[2])


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(index_lines(), max_size=14), edits)
def test_s_idx_3_to_6_view_edits_equal_the_line_scans(lines: list[str], steps: list[tuple]) -> None:  # type: ignore[type-arg]
    """S-IDX-3/4/5/6: upsert, maintenance and removal through the view give the scans' bytes."""
    view = IndexView(list(lines))
    same_as_fresh(view)
    view_index: Index = view
    plain: Index = PlainIndex(list(lines))
    for step in steps:
        view_index, plain = step_both(view_index, plain, step)
        same_answers(view_index, plain)
        assert isinstance(view_index, IndexView)
        same_as_fresh(view_index)
    for step in steps:
        expected_lines = list(view.lines)
        if step[0] == "upsert":
            _, fname, name, pin = step
            view = view.upserted(fname, name, "s", pin, "2026-08-07T01:02:50+00:00")
            expected_lines = upsert_index_line(expected_lines, fname, name, "s", pin, "2026-08-07T01:02:50+00:00")
        elif step[0] == "maintain":
            _, stale, now, regular = step
            view = view.maintained(stale, now, set(regular))
            expected_lines = maintain_index(expected_lines, stale, now, regular.__contains__)
            # the predicate form (an unlistable directory) takes the full path: same bytes
            assert IndexView(list(lines)).maintained(stale, now, regular.__contains__).lines == maintain_index(
                lines, stale, now, regular.__contains__
            )
        elif step[0] == "remove":
            if not view.lines:
                continue
            pos = step[1] % len(view.lines)
            view = view.without(pos)
            del expected_lines[pos]
        elif step[0] == "patch":
            if not view.lines:
                continue
            pos = step[1] % len(view.lines)
            view = view.patched({pos: step[2]})
            expected_lines[pos] = step[2]
        else:
            continue  # dropping: compared with the plain engine above
        assert view.lines == expected_lines
        same_as_fresh(view)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(index_lines(), max_size=14), st.sampled_from(NAMES + FILES + ["zzz", "ALPHA", "B.MD"]))
def test_s_idx_8_s_write_6_view_lookups_equal_the_scans(lines: list[str], search: str) -> None:
    """S-IDX-8 exact step and S-WRITE-6: the view's maps name the line the scans find."""
    view = IndexView(list(lines))
    scan = find_index_entry(lines, search)
    pos = view.exact_pos(js_lower(search))
    if pos is not None:
        assert scan == Found(pos, view.parsed[pos])  # type: ignore[arg-type]
    else:
        assert not isinstance(scan, Found) or js_lower(search) not in (
            scan.entry.name_lower, js_lower(scan.entry.filename),
        )
    last = None
    for line in lines:
        p = parse_index_line(line)
        if p is not None and p.name_lower == js_lower(search):
            last = p.filename
    assert view.last_named.get(js_lower(search)) == last


def test_s_idx_3_the_view_of_a_published_text_is_reused() -> None:
    """S-IDX-3: a write's published text, read back, finds the derived view (no re-parse)."""
    engine = ViewEngine()
    view = engine.read("# Memory Index\n\n- [A](a.md) 2026-08-07T01:02:50+00:00 -- s")
    updated = view.upserted("b.md", "B", "s", False, "2026-08-07T01:02:50+00:00")
    assert engine.publishing(updated) == updated.text
    read_back = "".join(updated.text)  # an equal string, not the same object
    assert engine.read(read_back) is updated
    assert engine.read(view.text) is view  # a rollback republishing the old text finds its view
    assert ViewEngine().read(read_back) is not updated  # each engine keeps its own views


def test_an_engine_keeps_a_bounded_number_of_views() -> None:
    engine = ViewEngine(keep=2)
    texts = [f"- [T{i}](t{i}.md) 2026-08-07 -- s" for i in range(3)]
    first = engine.read(texts[0])
    for text in texts[1:]:
        engine.read(text)
    assert engine.read(texts[0]) is not first  # forgotten, parsed anew: the same answers
    assert engine.read(texts[0]).lines == first.lines
    assert engine.publishing(PlainIndex(["x"])) == "x"  # any index publishes its text


def test_the_plain_engine_reads_and_publishes_text_as_is() -> None:
    engine = PlainEngine()
    index = engine.read("# Memory Index\n\n- [A](a.md) 2026-08-07 -- s")
    assert isinstance(index, PlainIndex) and index.lines == ["# Memory Index", "", "- [A](a.md) 2026-08-07 -- s"]
    assert engine.publishing(index.replaced(0, "# Index")) == "# Index\n\n- [A](a.md) 2026-08-07 -- s"
    assert index.maintained(0, NOW_MS, lambda name: name == "a.md").lines == index.lines
