"""The shared-store profile's two checks, as the expectation oracle calls them.

An op's outcome by kind (``outcome_kind``) and the store by its normalised bytes
(``store_norm``); kept here so that ``expect.py`` gains only two call lines.  Each check
returns ``(where, expected, actual, detail)`` rows that ``expect.Failure`` is built from.
"""

from __future__ import annotations

from typing import Any

from ..gate.scenarios import Content, content_bytes
from . import outcome_kind, store_norm

Row = tuple[str, str, str, str]


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 400 else text[:400] + "…"


def outcome_failures(where: str, impl: str, op: str, answer: outcome_kind.Reply, wanted: tuple[str, ...]) -> list[Row]:
    """The answer's kind is not among ``wanted`` (nothing asked: no failure)."""
    if not wanted:
        return []
    kind = outcome_kind.outcome_of(impl, op, answer)
    if outcome_kind.matches(kind, wanted):
        return []
    got = answer.result if answer.ok else answer.error
    detail = f"outcome {kind}" + _why(kind, answer)
    return [(where + " outcome", " or ".join(wanted), f"{kind}: {_show(got)}", detail)]


def _why(kind: str, answer: outcome_kind.Reply) -> str:
    if kind == outcome_kind.MISSING:
        return " (the driver declares outcome_kinds in hello, but this answer carries no outcome)"
    if kind != outcome_kind.UNKNOWN:
        return ""
    if getattr(answer, "outcome", None) is not None:
        return f" (a declared outcome outside the vocabulary: {_show(getattr(answer, 'outcome', None))})"
    return " (a text no classifier table knows)"


def store_failures(store: dict[str, Content], after: dict[str, bytes]) -> list[Row]:
    """Every store file that differs from ``store`` beyond the normalisation."""
    out: list[Row] = []
    for rel, content in store.items():
        want = content_bytes(content)
        got = store_norm.find(after, rel)
        diffs = store_norm.differences(rel, want, got)
        if diffs:
            out.append((f"store {rel}", _show(want), "<absent>" if got is None else _show(got), "; ".join(diffs)[:600]))
    return out


CARRY_TAGS = {"opencode": "oclm"}
"""The suffix tag a tool's carry-over gives a colliding copy (``«base»-«tag».md``): OpenCode's
``oclm`` (PEER-7); openpi's and the reference's ``opim`` (S-MIGRATE-4) otherwise."""


def carry_placeholders(**kinds: str) -> dict[str, str]:
    """``${CARRY…}`` for each role's implementation kind: ``carry_placeholders(CARRY="pi")``."""
    return {role: CARRY_TAGS.get(kind, "opim") for role, kind in kinds.items()}
