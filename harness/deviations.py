"""``scenarios/KNOWN_DEVIATIONS.md``: which scenarios a peer is known to fail, and why.

Rows of the Markdown table ``| impl | version | scenario glob | reason |`` are read; a failing
listed scenario is an expected failure, a passing one is an error (the list must stay true).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

from .scenarios import SCENARIOS_DIR

DEVIATIONS_PATH = SCENARIOS_DIR / "KNOWN_DEVIATIONS.md"


@dataclass(frozen=True)
class Deviation:
    impl: str
    version: str
    pattern: str
    reason: str


def load(path: Path = DEVIATIONS_PATH) -> list[Deviation]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not line.lstrip().startswith("|"):
            continue
        impl, version, pattern, reason = cells
        if impl in ("impl", "") or set(impl) <= set("-: "):
            continue
        out.append(Deviation(impl, version, pattern.strip("`"), reason))
    return out


def expected_failure(devs: list[Deviation], impl: str, version: str, scenario_id: str) -> Deviation | None:
    for d in devs:
        if d.impl == impl and d.version in (version, "*") and fnmatch.fnmatchcase(scenario_id, d.pattern):
            return d
    return None
