"""Fail when a MUST clause of SPEC.md has no test naming it (``def test_s_<area>_<n>_…``).

SPEC.md is found at ``$MEMCONFORM_SPEC`` or ``../shared/SPEC.md`` beside the repository.  The
clause list is also frozen in ``tests/spec_clauses.txt`` so the check runs where SPEC.md is not.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FROZEN = ROOT / "tests" / "spec_clauses.txt"
CLAUSE = re.compile(r"\*\*(S-[A-Z]+-\d+) \(([^)]*)\)")
TEST_NAME = re.compile(r"def (test_s_([a-z]+)_(\d+))(?:_|\b)")


def spec_path() -> Path:
    return Path(os.environ.get("MEMCONFORM_SPEC", ROOT.parent / "shared" / "SPEC.md"))


def clauses_from_spec(text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in CLAUSE.finditer(text)]


def must_clauses() -> list[str]:
    spec = spec_path()
    if spec.exists():
        found = clauses_from_spec(spec.read_text(encoding="utf-8"))
        FROZEN.write_text("".join(f"{cid}\t{strength}\n" for cid, strength in found))
    rows = [line.split("\t") for line in FROZEN.read_text().splitlines() if line]
    return [cid for cid, strength in rows if "MUST" in strength]


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
