"""``scenarios/KNOWN_DEVIATIONS.md``: which scenarios a peer is known to fail, and why.

Rows of the Markdown tables ``| impl | version | scenario id | reason |`` are read.  A listed
scenario that fails is an expected failure; one that passes is an ``xpass`` (the list must stay
true); a failure not listed stays a failure.  The list names scenarios, not areas, so that it
cannot hide a new failure:

- a row must name at least one scenario id of the corpus (checked when loading);
- a glob row (``*``, ``?``, ``[``) is allowed only over ids that each ran and failed with one
  and the same first difference (:func:`signature`); a glob matching a scenario that passed,
  was skipped, or failed differently turns every scenario it matches into an error naming the
  row (checked where the list is applied, :func:`apply`).
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from .scenarios import SCENARIOS_DIR, ScenarioError

if TYPE_CHECKING:
    from .runner import Outcome

DEVIATIONS_PATH = SCENARIOS_DIR / "KNOWN_DEVIATIONS.md"
GLOB_CHARS = frozenset("*?[")
# A shared-store deviation is either another rendering both tools read alike, or a
# difference that breaks the other tool (its reason says how).
CLASSES = ("harmless", "interop")
SHARED_STORE_PREFIX = "shared-store/"
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_STEP_NO = re.compile(r"\bstep \d+\b")


class DeviationsError(ScenarioError):
    """A malformed or stale row of the deviations list: names the file and line."""


@dataclass(frozen=True)
class Deviation:
    impl: str
    version: str
    pattern: str
    reason: str
    line: int = 0
    path: str = ""

    @property
    def klass(self) -> str | None:
        """``harmless`` or ``interop`` when the reason starts ``harmless:``/``interop:``
        (required for shared-store scenarios, docs/SHARED_STORE.md), else None."""
        head = self.reason.split(":", 1)[0].strip()
        return head if head in CLASSES else None

    @property
    def is_glob(self) -> bool:
        return any(c in GLOB_CHARS for c in self.pattern)

    def row(self) -> str:
        """How an error names this row: ``KNOWN_DEVIATIONS.md:12 (impl version pattern)``."""
        where = f"{Path(self.path).name or 'KNOWN_DEVIATIONS.md'}:{self.line}"
        return f"{where} ({self.impl} {self.version} {self.pattern})"

    def applies(self, impl: str, version: str, scenario_id: str) -> bool:
        return (
            self.impl == impl
            and self.version in (version, "*")
            and fnmatch.fnmatchcase(scenario_id, self.pattern)
        )


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [c.strip().replace("\\|", "|") for c in _CELL_SPLIT.split(body)]


def parse(text: str, path: str = "KNOWN_DEVIATIONS.md") -> list[Deviation]:
    """The rows of every table in ``text``; header and separator rows are skipped.

    A table row with other than four cells is an error (a reason's ``|`` must be ``\\|``).
    """
    out: list[Deviation] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.lstrip().startswith("|"):
            continue
        cells = _cells(line)
        if all(set(c) <= set("-: ") for c in cells) or cells[0] == "impl":
            continue
        if len(cells) != 4:
            raise DeviationsError(path, f"line {number}", f"{len(cells)} cells, expected | impl | version | scenario | reason |")
        impl, version, pattern, reason = cells
        pattern = pattern.strip("`")
        if not (impl and version and pattern and reason):
            raise DeviationsError(path, f"line {number}", "every cell (impl, version, scenario, reason) must be filled")
        out.append(Deviation(impl, version, pattern, reason, number, path))
    return out


@lru_cache(maxsize=4)
def corpus_ids(root: Path = SCENARIOS_DIR) -> frozenset[str]:
    """Every scenario id under ``root`` (read from the files' ``id``; cached per process)."""
    ids = set()
    for p in root.rglob("*.json"):
        if p.name.endswith(".schema.json"):
            continue
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            ids.add(data["id"])
    return frozenset(ids)


def check(devs: list[Deviation], ids: Collection[str]) -> None:
    """Every row names a scenario of the corpus, and no id is listed twice for one version."""
    seen: dict[tuple[str, str, str], Deviation] = {}
    for d in devs:
        if not any(fnmatch.fnmatchcase(i, d.pattern) for i in ids):
            raise DeviationsError(d.path, f"line {d.line}", f"{d.pattern!r} names no scenario of the corpus")
        if d.pattern.startswith(SHARED_STORE_PREFIX) and d.klass is None:
            raise DeviationsError(d.path, f"line {d.line}", f"{d.pattern!r}: a shared-store row's reason must start "
                                  "'harmless:' or 'interop:'")
        key = (d.impl, d.version, d.pattern)
        if key in seen:
            raise DeviationsError(d.path, f"line {d.line}", f"{d.pattern!r} is listed twice (also line {seen[key].line})")
        seen[key] = d


def load(path: Path | None = None, ids: Collection[str] | None = None) -> list[Deviation]:
    """The rows of ``path`` (default :data:`DEVIATIONS_PATH`), checked against ``ids``
    (default: the whole corpus)."""
    path = DEVIATIONS_PATH if path is None else path
    if not path.exists():
        return []
    devs = parse(path.read_text(encoding="utf-8"), str(path))
    check(devs, corpus_ids() if ids is None else ids)
    return devs


def expected_failure(devs: list[Deviation], impl: str, version: str, scenario_id: str) -> Deviation | None:
    """The row listing ``scenario_id`` for this implementation; a row naming the id exactly
    wins over a glob."""
    matching = [d for d in devs if d.applies(impl, version, scenario_id)]
    exact = [d for d in matching if not d.is_glob]
    best = exact or matching
    return best[0] if best else None


def signature(o: Outcome) -> str:
    """What a failing scenario's first difference is, without its numbers: where it was seen
    and what kind of difference (a glob's ids must share it)."""
    if o.status == "error" or not o.failures:
        return "error: " + re.sub(r"\d+(\.\d+)?", "N", o.reason.split(":", 1)[-1].strip())[:80]
    f = o.failures[0]
    kind = f.detail.split(" at ", 1)[0] if f.detail else "differs"
    return f"{_STEP_NO.sub('step N', f.where)}: {kind}"


def _glob_problem(matched: list[Outcome]) -> str:
    """Why a glob row may not stand over these outcomes ('' if it may)."""
    not_failed = [f"{o.scenario.id} ({o.status})" for o in matched if o.status not in ("fail", "error")]
    if not_failed:
        return "it matches scenarios that did not fail: " + ", ".join(not_failed[:5])
    sigs = sorted({signature(o) for o in matched})
    if len(sigs) > 1:
        return "its scenarios fail for different reasons: " + " / ".join(sigs[:4])
    return ""


def apply(
    outcomes: Iterable[Outcome], impl: str, version: str, devs: list[Deviation] | None = None
) -> list[str]:
    """Mark listed failures ``xfail`` and listed passes ``xpass``; a glob row whose scenarios
    did not all fail with one first difference makes each of them an ``error`` naming the row.
    Returns the glob violations, one line each."""
    devs = load() if devs is None else devs
    outcomes = list(outcomes)
    chosen: dict[int, Deviation] = {}
    for i, o in enumerate(outcomes):
        d = expected_failure(devs, impl, version, o.scenario.id)
        if d is not None:
            chosen[i] = d
    problems: list[str] = []
    broken: set[int] = set()
    for d in sorted({d for d in chosen.values() if d.is_glob}, key=lambda d: d.line):
        idx = [i for i, dd in chosen.items() if dd == d]
        why = _glob_problem([outcomes[i] for i in idx])
        if why:
            line = f"{d.row()}: a glob row must cover only scenarios that ran and failed for one reason; {why}"
            problems.append(line)
            for i in idx:
                outcomes[i].status, outcomes[i].reason = "error", line
            broken.update(idx)
    for i, d in chosen.items():
        if i in broken:
            continue
        o = outcomes[i]
        if o.status in ("fail", "error"):
            o.status, o.reason = "xfail", d.reason
        elif o.status == "pass":
            o.status = "xpass"
    return problems
