"""Fail when a MUST clause of docs/SPEC.md has no test naming it (``def test_s_<area>_<n>_…``).

docs/SPEC.md is the one list of clause ids: this module's parser is what every other check
(clause citations in tests/harness/test_citations.py, tests/shared_store_coverage.py, the corpus
test) reads it with.  Run as ``python -m tests.clause_coverage`` from the repository root.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "docs" / "SPEC.md"
CLAUSE = re.compile(r"\*\*(S-[A-Z]+-\d+) \(([^)]*)\)")
# informative items outside the clause scheme: PEER-1…, A-1… (deviations), B-… (quirks), C-… (clock)
ITEM = re.compile(r"^(?:- )?\*\*((?:PEER|[ABC])-\d+)\b", re.M)
TEST_NAME = re.compile(r"def (test_s_([a-z]+)_(\d+))(?:_|\b)")


def clauses_from_spec(text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in CLAUSE.finditer(text)]


def spec_clauses() -> list[tuple[str, str]]:
    """``(id, strength)`` of every ``S-`` clause of docs/SPEC.md, in order."""
    return clauses_from_spec(SPEC.read_text(encoding="utf-8"))


def spec_ids() -> set[str]:
    """Every id docs/SPEC.md defines: the ``S-`` clauses and the informative items."""
    text = SPEC.read_text(encoding="utf-8")
    return {cid for cid, _ in clauses_from_spec(text)} | set(ITEM.findall(text))


def must_clauses() -> list[str]:
    return [cid for cid, strength in spec_clauses() if "MUST" in strength]


def tested_clauses(root: Path) -> set[str]:
    names: set[str] = set()
    for path in root.rglob("test_*.py"):
        for m in TEST_NAME.finditer(path.read_text(encoding="utf-8")):
            names.add(f"S-{m.group(2).upper()}-{m.group(3)}")
    return names


def main() -> int:
    must = must_clauses()
    tested = tested_clauses(ROOT / "tests")
    missing = [c for c in must if c not in tested]
    print(f"clause coverage: {len(must) - len(missing)}/{len(must)} MUST clauses have a test")
    if missing:
        print("missing: " + ", ".join(missing), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
