"""Byte differences the corpus once left unpinned (issue 12 item 8), fixed in the reference.

After the last entry is removed the index is ``""``, which reads back as one empty piece
(S-FMT-5); a write then appends after that piece (S-IDX-3): ``\\n- [A](a.md) …``, as the JS core
writes.  The view engine used to remember the published no-piece view for ``""`` and append
without the LF; both engines must give the same bytes.
"""

from __future__ import annotations

import pytest

from memconform.reference.index_engine import Index, PlainEngine
from memconform.reference.index_view import ViewEngine

ENTRY = "- [A](a.md) 2026-08-01T00:00:00+00:00 -- a"


@pytest.mark.parametrize("engine", [PlainEngine(), ViewEngine()], ids=["plain", "view"])
def test_write_into_index_emptied_by_remove_appends_after_the_empty_piece(engine: PlainEngine | ViewEngine) -> None:
    index: Index = engine.read(ENTRY)
    pos = index.first_pos("a.md")
    assert pos == 0
    emptied = engine.publishing(index.without(pos))
    assert emptied == ""
    again = engine.read(emptied)  # the next operation reads what was published
    written = engine.publishing(again.upserted("a.md", "A", "a2", False, "2026-08-07T01:02:50+00:00"))
    assert written == "\n- [A](a.md) 2026-08-07T01:02:50+00:00 -- a2"


def test_both_engines_agree_on_an_empty_text() -> None:
    plain, view = PlainEngine(), ViewEngine()
    stamp = "2026-08-07T01:02:50+00:00"
    assert plain.read("").upserted("b.md", "B", "b", False, stamp).text == view.read("").upserted(
        "b.md", "B", "b", False, stamp
    ).text == f"\n- [B](b.md) {stamp} -- b"
