"""Bench W6, widened (issue 29 item 3): time to detection per defect class, as a violation.

The defects are planted in private copies of the real peers (never in this repository):
``MEMCONFORM_BENCH_MUTANTS`` names a folder of ``<peer>-<class>`` copies laid out as the
peer's own folder (``openpi-<class>/extensions/memory-core.mjs``,
``openclaude-<class>/.opencode/plugins/ocl-memory.mjs``).  For each copy: ``races`` (every
situation and generated family, seed 0) under the random walk and under PCT, and back-to-back
random-nemesis runs (``stale-lock``, 2 writers, shared store), each until its first
*violation* (a weakness SPEC accepts is no detection of a broken step), capped at
``MEMCONFORM_BENCH_RACES_S``.  Without the variable the rows are empty and say so.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..drivers.peers import PeerSpec
from ..oracles.findings import VIOLATION, Finding

LAYOUT = {"openpi": ("pi", "extensions/memory-core.mjs"), "openclaude": ("opencode", ".opencode/plugins/ocl-memory.mjs")}
ENV = "MEMCONFORM_BENCH_MUTANTS"


def mutants() -> list[tuple[str, str, PeerSpec]]:
    """(peer, class, spec) of every planted copy under ``$MEMCONFORM_BENCH_MUTANTS``."""
    root = os.environ.get(ENV, "")
    out: list[tuple[str, str, PeerSpec]] = []
    if not root or not Path(root).is_dir():
        return out
    for d in sorted(Path(root).iterdir()):
        peer, _, cls = d.name.partition("-")
        if peer in LAYOUT and (d / LAYOUT[peer][1]).is_file():
            out.append((peer, cls, PeerSpec.parse(f"{LAYOUT[peer][0]}:{d / LAYOUT[peer][1]}")))
    return out


def _violation(f: Finding) -> bool:
    return f.severity == VIOLATION


def defect_rows(cap: float, nemesis_row: Callable[..., dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per planted copy; ``nemesis_row`` is ``bench.races``' (passed in: no cycle)."""
    from ..interleave.races import explore

    rows = []
    for peer, cls, spec in mutants():
        row: dict[str, Any] = {"peer": peer, "class": cls}
        for strategy in ("random", "pct"):
            got = explore([spec], strategy=strategy, seed=0, budget_s=cap, shrink=False)
            row[strategy] = None if got.first_violation_s is None else round(got.first_violation_s, 1)
        row["nemesis"] = nemesis_row(spec, {}, seeds=1, hit=_violation)["times"][0]
        rows.append(row)
    return rows


def render_defects(rows: list[dict[str, Any]], cap: float) -> list[str]:
    if not rows:
        return [f"\nPer defect class: no planted copies (set {ENV} to a folder of `<peer>-<class>` copies)."]
    def t(v: float | None) -> str:
        return f"> {cap:g} s" if v is None else f"{v:.1f} s"
    lines = ["", "| peer | defect class | races, random (first violation) | races, PCT | random nemesis |",
             "|---|---|---:|---:|---:|"]
    lines += [f"| {r['peer']} | {r['class']} | {t(r['random'])} | {t(r['pct'])} | {t(r['nemesis'])} |" for r in rows]
    lines.append(f"\nEach defect planted in a private copy of the peer ({ENV}); seed 0, capped at {cap:g} s; "
                 "a weakness (the S-INV-9 window) does not count as a detection.")
    return lines
