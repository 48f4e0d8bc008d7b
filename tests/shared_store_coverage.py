"""Fail when a clause of docs/SHARED_STORE.md is not covered, or a citation is dangling.

Every ``SS-…`` clause must be named in ``clauses`` by at least one scenario of the
``shared-store`` profile, except the clauses marked *(harness)*, which describe how the gate
judges: a test ``def test_ss_<area>_<n>_…`` must name each of those.  Every clause a
shared-store scenario cites must exist in the document, and every ``S-…`` clause the
document cites must exist in docs/SPEC.md (read by ``tests.clause_coverage``).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from tests.clause_coverage import spec_ids

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "SHARED_STORE.md"
CORPUS = ROOT / "scenarios" / "conformance"
CLAUSE = re.compile(r"^- \*\*(SS-[A-Z]+-\d+)\*\*( \*\(harness\)\*)?(.*?)(?=^- \*\*|^## |\Z)", re.M | re.S)
TEST_NAME = re.compile(r"def test_(ss_[a-z]+_\d+)(?:_|\b)")


def doc_clauses(text: str) -> dict[str, tuple[bool, str]]:
    """``{id: (is_harness, body)}`` of every clause in the document."""
    return {m.group(1): (m.group(2) is not None, m.group(3)) for m in CLAUSE.finditer(text)}


def scenario_citations(root: Path = CORPUS) -> dict[str, set[str]]:
    """``{clause: scenario ids}`` over the shared-store scenarios."""
    cited: dict[str, set[str]] = {}
    for path in root.rglob("*.json"):
        if path.name.endswith(".schema.json"):
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        if "shared-store" not in data.get("profiles", ()):
            continue
        for c in data.get("clauses", ()):
            cited.setdefault(c, set()).add(data["id"])
    return cited


def tested(root: Path = ROOT / "tests") -> set[str]:
    names = set()
    for path in root.rglob("test_*.py"):
        for m in TEST_NAME.finditer(path.read_text(encoding="utf-8")):
            names.add(m.group(1).upper().replace("_", "-"))
    return names


def problems() -> list[str]:
    clauses = doc_clauses(DOC.read_text(encoding="utf-8"))
    cited, tests = scenario_citations(), tested()
    spec = spec_ids()
    out = []
    for cid, (harness, body) in clauses.items():
        if harness and cid not in tests:
            out.append(f"{cid} (harness): no test named test_{cid.lower().replace('-', '_')}_…")
        if not harness and cid not in cited:
            out.append(f"{cid}: no shared-store scenario cites it")
        if not re.search(r"\((?:S-|PEER-)[^)]*\)\s*$", body.strip()):
            out.append(f"{cid}: cites no SPEC clause or PEER item at its end")
        for ref in re.findall(r"\bS-[A-Z]+-\d+\b", body):
            if ref not in spec:
                out.append(f"{cid}: cites {ref}, which SPEC.md does not have")
    for c in sorted(cited):
        if c.startswith("SS-") and c not in clauses:
            out.append(f"{c}: cited by {sorted(cited[c])[0]} but not in docs/SHARED_STORE.md")
    return out


def main() -> int:
    clauses = doc_clauses(DOC.read_text(encoding="utf-8"))
    found = problems()
    print(f"shared-store coverage: {len(clauses)} SS clauses, {len(found)} problems")
    for p in found:
        print("  " + p, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
