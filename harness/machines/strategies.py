"""Strategies shared by the machines: topic names, summaries, bodies, lookups, planted lines.

Topic names are drawn so that slug collisions (``Alpha`` / ``Alpha!`` / ``alpha.``), case
variants of one name, reserved names (``Last Session Recap``, ``MEMORY``), Markdown and
newline characters, hyphen-only and non-ASCII names all come up within a few steps; small
random names from a collision-prone alphabet add the cases nobody listed.  Summaries reach
the 500-unit cap (splitting surrogate pairs) and the flag tokens SPEC A-1 is about.
"""

from __future__ import annotations

import os

from hypothesis import strategies as st

TOPIC_POOL = (
    "Alpha", "alpha", "ALPHA", "Alpha!", "alpha.", "Alpha Beta", "alpha-beta", "Alpha  Beta",
    "alpha_beta", "Zeta", "Zeta One", "Zeta Two", "zeta one", "Node.js & npm", "nodejs npm",
    "Straße", "naïve café", "Ünïcode Topic", "K\u212a", "İstanbul", "Ghost", "ghost 2",
    "Hidden", "pin", "Stale", "  padded  ", "-", "  --  ", "x-", "Last Session Recap",
    "LAST-SESSION-RECAP", "MEMORY", "memory!", "Memory", "!!!", "_", "", "   ", "\u3000",
    "你好", "a[b]", "x(y)", "Bad\nTopic", "cr\rtopic", "tab\there", "C:\\Users\\me $& $1",
)
_TOPIC_ALPHABET = "aAzZ -!._é1"

topics = st.one_of(
    st.sampled_from(TOPIC_POOL),
    st.text(alphabet=_TOPIC_ALPHABET, min_size=1, max_size=8),
)
"""Topic arguments of ``write_memory``: valid, colliding, reserved and invalid ones."""

FILENAME_POOL = ("alpha.md", "alpha-2.md", "zeta.md", "ghost.md", "last-session-recap.md", "ALPHA.MD")

lookups = st.one_of(
    st.sampled_from(TOPIC_POOL[:24]),
    st.sampled_from(FILENAME_POOL),
    st.sampled_from(("", "a", "zeta", "Zeta", "alpha", "ghost", "recap", "no such topic")),
)
"""Topic arguments of ``remove_memory`` / ``pin_memory``: exact, partial, ambiguous, absent."""

_SUMMARY_ALPHABET = st.characters(
    codec="utf-8",
    categories=("L", "N", "P", "S", "Zs"),
    include_characters="\n\t\u00a0\u2028\ufeff😀",
)

summaries = st.one_of(
    st.sampled_from((
        "s", "short summary", "  spaced \n\t out  ", "use [pin] flag", "a [stale?] b",
        "x -- y", "dated 2020-01-01", "", "line one\n- [Forged](forged.md) -- injected",
    )),
    st.text(alphabet=_SUMMARY_ALPHABET, max_size=24),
    st.text(alphabet="ab 😀", min_size=490, max_size=620),
)
"""Summaries: short, whitespace-laden, flag-bearing, and long enough to hit the cap."""

_CONTENT_ALPHABET = st.characters(
    codec="utf-8", categories=("L", "N", "P", "S", "Zs"), include_characters="\n\t#-"
)
contents = st.one_of(
    st.sampled_from(("one", "two", "line1\nline2", "", "## heading\n---\nbody", "needle body")),
    st.text(alphabet=_CONTENT_ALPHABET, max_size=40),
)

queries = st.one_of(
    st.sampled_from(("", "a", "alpha", "zeta", "needle", "summary", "pin", "😀", "---", "name:")),
    st.text(alphabet="aezn -", min_size=1, max_size=3),
)

modes = st.sampled_from(({}, {"mode": "append"}, {"mode": "replace"}, {"mode": "bogus"}, {"overwrite": True}))

PLANTED_LINES = (
    "- [Ghost](ghost.md) 2026-01-01 -- orphan entry",
    "- [Ghost Pinned](ghost-pinned.md) [pin] 2020-01-01 -- pinned orphan",
    "- [Last Session Recap](last-session-recap.md) 2026-08-01T00:00:00+00:00 -- recap",
    "- [Last Session Recap](last-session-recap.md) [pin] 2026-08-01 -- pinned recap",
    "- [Recap Text](last-session-recap.md) 2026-08-01 -- [pin] only in the summary",
    "- [Evil](../evil.md) 2026-01-01 -- traversal",
    "- [Hidden](.hidden.md) 2026-01-01 -- dotfile",
    "- [Index](MEMORY.md) 2026-01-01 -- the index itself",
    "- [Text](notes.txt) 2026-01-01 -- not markdown",
    "## Hand-written heading",
    "Some prose a human added.",
    "- [Bad Date](bad-date.md) 2026-13-01 [stale?] -- invalid month",
    "\t- [Indented](indented.md) 2020-06-01 -- indented orphan",
)
"""Index lines a human (or another tool) adds: orphans, recaps, unsafe names, prose."""

UNSAFE_FILES = (".hidden.md", "notes.txt", "evil..md", "UPPER.TXT")
"""Names the store must never index, open or search (S-FMT-7)."""

UNICODE_GAP_ENV = "MEMCONFORM_UNICODE_GAP"
_GAP = ((0x1C89, 0x1C8A), (0xA7CB, 0xA7DC), (0x10D50, 0x10D85), (0x16EA0, 0x16EDB))


def in_unicode_gap(text: str) -> bool:
    """Letters newer than Python 3.11's Unicode 14 (S-FMT-17): an accepted gap SPEC's corpus
    avoids.  The machines avoid them too unless ``MEMCONFORM_UNICODE_GAP=1``."""
    return any(lo <= ord(c) <= hi for c in text for lo, hi in _GAP)


TRICKY_CHARS = (
    "\u0130", "\u0131", "\u212a", "\u017f", "\u1e9e", "\u03a3", "\u0085", "\u001c", "\u180e",
    "\u200b", "\ufeff", "\u2028", "\u00a0", "\u3000", "e\u0301", "\U0001d518", "\U0001f600",
    "\u00df", "\u1c89", "\ua7cb", "$&", "\\", '"', "'", "--", "\t", "\x7f", "٢",
)
"""Characters where ECMAScript and Python defaults part ways (S-FMT-2, S-FMT-16/17)."""

exotic = st.lists(
    st.one_of(st.sampled_from(TRICKY_CHARS), st.characters(codec="utf-8")),
    min_size=1, max_size=6,
).map("".join).filter(lambda t: os.environ.get(UNICODE_GAP_ENV) == "1" or not in_unicode_gap(t))
"""Short strings built from the characters above and any other non-surrogate code point."""

exotic_topics = st.one_of(exotic, st.builds(lambda a, b: a + b, st.sampled_from(TOPIC_POOL[:12]), exotic))

NAME_VALUES = ("'Alpha'", '"Alpha"', '"Al\\u0070ha"', '"alpha" trailing', "Alpha", "'It's'", '"unterminated',
               "", "  Zeta One  ", '"\\ud83d"')
"""``name:`` values for hand-edited frontmatter (S-WRITE-7: JSON, quotes, empty lines)."""
