"""Counting many write tokens in store texts in one pass (issue 22 item 6).

``interop_checks`` asks, for every acknowledged append, how often its token occurs in what a
reader reaches: ``tok-w1-5`` counted where it is not followed by a digit (so ``tok-w1-50`` is
another token), non-overlapping, left to right — what ``re.findall(escape(token) +
"(?![0-9])", text)`` answers.  Asked once per token, that is one scan of the store per
append (and one regex compiled per token): quadratic in the history.  ``Tokens.count`` answers for
every token at once in one scan of the text: at each place a token could start (one of the
tokens' first ``PREFIX`` characters), each token length is looked up in a set.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

PREFIX = 4
"""Characters of a token that find the places it may start (``tok-``)."""
MANY_PREFIXES = 64
"""Above this many distinct prefixes, every position is a place a token may start."""
_DIGITS = frozenset("0123456789")


class Tokens:
    """A set of tokens, ready to be counted in many texts (one store file after another)."""

    def __init__(self, tokens: Iterable[str]) -> None:
        wanted = {t for t in tokens if t}  # an empty token names no write: never counted
        self.width = min(PREFIX, *map(len, wanted)) if wanted else 0
        self.prefixes = {t[:self.width] for t in wanted}
        self.lengths = sorted({len(t) for t in wanted})
        self.wanted = wanted
        self._starts: re.Pattern[str] | None = None
        if wanted and len(self.prefixes) <= MANY_PREFIXES:
            self._starts = re.compile("(?=(?:" + "|".join(re.escape(p) for p in sorted(self.prefixes)) + "))")

    def starts(self, text: str) -> Iterable[int]:
        """Every index of ``text`` where a token may begin (one of their prefixes does)."""
        if self._starts is not None:
            return (m.start() for m in self._starts.finditer(text))
        w = self.width
        return (i for i in range(len(text) - w + 1) if text[i:i + w] in self.prefixes)

    def count(self, text: str) -> dict[str, int]:
        """The tokens found in ``text`` and their counts (a token absent is absent): each
        token's non-overlapping occurrences not followed by an ASCII digit, as ``findall``
        scans them (a token found at ``i`` resumes its scan at its end)."""
        counts: dict[str, int] = {}
        if not self.wanted:
            return counts
        resume: dict[str, int] = {}  # a token's next place after its last counted occurrence
        size = len(text)
        for i in self.starts(text):
            for n in self.lengths:
                if i + n > size:
                    break
                token = text[i:i + n]
                if token not in self.wanted or (i + n < size and text[i + n] in _DIGITS) or i < resume.get(token, 0):
                    continue
                counts[token] = counts.get(token, 0) + 1
                resume[token] = i + n
        return counts
