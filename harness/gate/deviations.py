"""``scenarios/KNOWN_DEVIATIONS.md`` and a user's ``--deviations`` files: which scenarios an
implementation is known to fail, exactly how, and why.

Rows of the Markdown tables ``| impl | version | scenario id | first difference | differing |
reason |`` are read; ``impl`` and ``version`` are what the driver's ``hello`` reports (a row
naming a version covers that version only, ``*`` every one).  A row names the difference it
expects (issue 25 item 1): the scenario's first difference (where, and its kind) and the set
of every place that differs (files, result fields, outcomes: :func:`difference`).  A listed
scenario that fails exactly so is an expected failure; one that fails in any other way stays
a failure whose reason names the unexpected difference (a listed deviation must not hide a
second bug in its scenario); one that passes is an ``xpass`` (the list must stay true); a
failure not listed stays a failure.  The list names scenarios, not areas:

- a row must name at least one scenario id of the corpus (checked when loading);
- a glob row (``*``, ``?``, ``[``) is allowed only over ids that each ran and failed with the
  row's difference (step numbers aside); a glob matching a scenario that passed, was skipped,
  or failed differently turns every scenario it matches into an error naming the row
  (checked where the list is applied, :func:`apply`).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..oracles.expect import Failure
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
HEADER = "| impl | version | scenario | first difference | differing | reason |"
PLACES_SEP = "; "
NONE = "-"  # the ``differing`` cell of an error with no failure before it


class DeviationsError(ScenarioError):
    """A malformed or stale row of the deviations list: names the file and line.  A file that
    cannot be used at all (``where`` ``$``: missing, a directory, unreadable) is a usage error
    of ``--deviations``, said so."""

    def __init__(self, path: Path | str, where: str, message: str) -> None:
        super().__init__(path, where, message)
        if where == "$":
            self.args = (f"--deviations {path}: {message}",)


@dataclass(frozen=True)
class Deviation:
    impl: str
    version: str
    pattern: str
    reason: str
    line: int = 0
    path: str = ""
    # the difference the row expects (:func:`difference`); a row read from a file always has
    # one, "" (any failure) only for rows built in code
    first: str = ""
    differing: tuple[str, ...] = ()

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

    def expects(self, o: Outcome) -> bool:
        """``o`` failed with exactly the difference this row names (a glob: step numbers aside)."""
        if not self.first:
            return True
        return _expected(self) == _got(self, o)

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


def _clip(line: str) -> str:
    return line.strip()[:60] + ("…" if len(line.strip()) > 60 else "")


def parse(text: str, path: str = "KNOWN_DEVIATIONS.md", *, require_table: bool = False) -> list[Deviation]:
    """The rows of every table in ``text``; header and separator rows are skipped.

    A table row with other than six cells is an error (a ``|`` inside a cell must be ``\\|``),
    and so is a header other than :data:`HEADER`.  ``require_table`` (a ``--deviations`` file):
    a text with no table line at all is not a deviations file, refused naming its first line.
    """
    out: list[Deviation] = []
    header = [c.strip() for c in HEADER.strip("|").split("|")]
    seen_table = False
    for number, line in enumerate(text.splitlines(), 1):
        if not line.lstrip().startswith("|"):
            continue
        seen_table = True
        cells = _cells(line)
        if all(set(c) <= set("-: ") for c in cells):
            continue
        if cells[0] == "impl":
            if cells != header:
                raise DeviationsError(path, f"line {number}", f"a header other than {HEADER}: {_clip(line)!r}")
            continue
        if len(cells) != 6:
            raise DeviationsError(path, f"line {number}", f"{len(cells)} cells, expected {HEADER}")
        impl, version, pattern, first, differing, reason = (c.strip("`") if i in (2, 3, 4) else c
                                                             for i, c in enumerate(cells))
        if not all((impl, version, pattern, first, differing, reason)):
            raise DeviationsError(path, f"line {number}", "every cell (impl, version, scenario, first difference, "
                                  "differing, reason) must be filled")
        places = () if differing == NONE else tuple(p.strip() for p in differing.split(PLACES_SEP.strip()))
        out.append(Deviation(impl, version, pattern, reason, number, path, first, tuple(sorted(places))))
    if require_table and not seen_table:
        lines = text.splitlines()
        first_line = next((i for i, ln in enumerate(lines, 1) if ln.strip()), 1)
        shown = _clip(lines[first_line - 1]) if lines else ""
        raise DeviationsError(path, f"line {first_line}", f"not a deviations file: {shown!r} begins no table headed {HEADER}")
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
    known = frozenset(ids)
    for d in devs:
        if d.pattern not in known and (not d.is_glob or not any(fnmatch.fnmatchcase(i, d.pattern) for i in known)):
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


def add_argument(p: argparse.ArgumentParser) -> None:
    """``--deviations FILE``, repeatable, for every command that applies the list."""
    p.add_argument("--deviations", type=Path, action="append", default=[], metavar="FILE",
                   help="your own known deviations (repeatable; the format of scenarios/KNOWN_DEVIATIONS.md, "
                   "rows keyed by the name and version your driver's hello reports)")


def load_all(
    extra: Iterable[Path] = (), scenario_dirs: Iterable[Path] = (), more_ids: Iterable[str] = ()
) -> list[Deviation]:
    """The packaged list and each ``--deviations`` file, under the same refusals: a row names a
    scenario of the corpus, of the ``--scenarios`` folders or ``more_ids`` (replayed files), no
    id twice for one version across all files.  A file that cannot be read is one error naming it."""
    devs = load()
    files = list(extra)
    if not files:
        return devs
    ids = set(corpus_ids()) | set(more_ids)
    for root in scenario_dirs:
        ids |= corpus_ids(Path(root))
    for f in files:
        if f.is_dir() or not f.exists():
            raise DeviationsError(f, "$", "no such file" if not f.exists() else "is a directory")
        try:
            text = f.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise DeviationsError(f, "$", f"cannot be read ({e})") from None
        devs += parse(text, str(f), require_table=True)
    check(devs, ids)
    return devs


def expected_failure(devs: list[Deviation], impl: str, version: str, scenario_id: str) -> Deviation | None:
    """The row listing ``scenario_id`` for this implementation; a row naming the id exactly
    wins over a glob."""
    matching = [d for d in devs if d.applies(impl, version, scenario_id)]
    exact = [d for d in matching if not d.is_glob]
    best = exact or matching
    return best[0] if best else None


_NUMBER = re.compile(r"\d+(\.\d+)?")
_SANDBOX = re.compile(r"/[^\s()'\"]*?/memconform-[^/\s()'\"]+")  # a run's temporary root (harness.drivers.sandbox)
_KIND_END = re.compile(r": | at | \(|;")


def _kind(detail: str) -> str:
    """A failure's kind of difference, without the texts it quotes or the byte offset it
    was seen at (its counts stay: ``4 LF-pieces expected, 3 found``, ``line 3``)."""
    head = _KIND_END.split(detail, 1)[0].strip() if detail else ""
    return head[:60] or "differs"


def difference(o: Outcome) -> tuple[str, tuple[str, ...]]:
    """What a failed or errored scenario's difference is: its first difference (where, and
    what kind, without quoted texts; an error: ``error: «reason»`` without its numbers, which
    are timings, or the sandbox's temporary path) and the set of
    every place that differs (``step 2 (write_memory) outcome``, ``store MEMORY.md``,
    ``file agent/memory/a.md`` …).  A deviation row states both (:class:`Deviation`)."""
    return difference_of(o.status, o.reason, o.impl, [(f.where, f.detail) for f in o.failures])


def difference_of(status: str, reason: str, impl: str, failures: Sequence[tuple[str, str]]) -> tuple[str, tuple[str, ...]]:
    """:func:`difference` from an outcome's parts (``failures`` as ``(where, detail)``), as a
    run has them or as its JSON report keeps them (``report deviations``)."""
    places = tuple(sorted({where for where, _ in failures}))
    if status == "error" or not failures:
        text = reason.removeprefix(f"{impl}: ")  # the driver as given (``pi:/path``): not the difference
        return "error: " + _NUMBER.sub("N", _SANDBOX.sub("…", text))[:200].strip(), places
    where, detail = failures[0]
    return f"{where}: {_kind(detail)}", places


def render_row(impl: str, version: str, scenario_id: str, first: str, places: Sequence[str], reason: str) -> str:
    """One row exactly as :func:`parse` reads it back (``|`` inside a cell escaped)."""
    cells = (impl, version, scenario_id, first, PLACES_SEP.join(places) or NONE, reason)
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


ROW_MISMATCH = "deviation "  # the ``where`` of the failure :func:`apply` adds to a listed scenario failing otherwise


def rows_from_report(data: Mapping[str, Any], reason: str) -> tuple[list[str], list[str]]:
    """The rows listing every failed or errored scenario of a conformance JSON report, each
    with ``reason``, keyed as the run's ``hello`` named the implementation (a ``cross/`` sequence:
    the pair), and the ids of listed scenarios that passed (their rows must go)."""
    impls = [i for i in data.get("impls", []) if isinstance(i, dict)]
    if not impls:
        raise ValueError("names no implementation (`impls`)")
    one = (str(impls[0].get("name", "")), str(impls[0].get("version", "")), str(impls[0].get("spec", "")))
    pair = None
    if len(impls) >= 2:
        a, b = impls[0], impls[1]
        pair = (f"{a.get('name')}+{b.get('name')}", f"{a.get('version')}+{b.get('version')}", f"{a.get('spec')}+{b.get('spec')}")
    rows, passing = [], []
    for sc in data.get("scenarios", []):
        status, sid = sc.get("status"), str(sc.get("id", ""))
        if status == "xpass":
            passing.append(sid)
        if status not in ("fail", "error"):
            continue
        name, version, spec = pair if pair is not None and sid.startswith("cross/") else one
        failures = [(str(f.get("where", "")), str(f.get("detail", ""))) for f in sc.get("failures", [])
                    if not str(f.get("where", "")).startswith(ROW_MISMATCH)]
        first, places = difference_of(str(status), str(sc.get("reason", "")), spec, failures)
        rows.append(render_row(name, version, sid, first, places, reason))
    return rows, passing


def cells(o: Outcome) -> tuple[str, str]:
    """A failed outcome's ``first difference`` and ``differing`` cells, as a row states them."""
    first, places = difference(o)
    return first.replace("|", "\\|"), PLACES_SEP.join(places).replace("|", "\\|") or NONE


def _steps_aside(text: str) -> str:
    return _STEP_NO.sub("step N", text)


def _expected(d: Deviation) -> tuple[str, tuple[str, ...]]:
    if d.is_glob:
        return _steps_aside(d.first), tuple(sorted({_steps_aside(p) for p in d.differing}))
    return d.first, d.differing


def _got(d: Deviation, o: Outcome) -> tuple[str, tuple[str, ...]]:
    first, places = difference(o)
    if d.is_glob:
        return _steps_aside(first), tuple(sorted({_steps_aside(p) for p in places}))
    return first, places


def signature(o: Outcome) -> str:
    """A failing scenario's first difference with its step numbers aside (what a glob's ids share)."""
    return _steps_aside(difference(o)[0])


def unexpected(d: Deviation, o: Outcome) -> str:
    """Why ``o`` is not the deviation ``d`` lists: the difference expected and the one seen."""
    want_first, want = _expected(d)
    got_first, got = _got(d, o)
    extra, gone = sorted(set(got) - set(want)), sorted(set(want) - set(got))
    parts = [f"expected first difference {want_first!r}, got {got_first!r}"] if want_first != got_first else []
    parts += [f"also differs: {PLACES_SEP.join(extra)}"] if extra else []
    parts += [f"no longer differs: {PLACES_SEP.join(gone)}"] if gone else []
    return f"{d.row()} lists another difference; " + "; ".join(parts)


def _glob_problem(d: Deviation, matched: list[Outcome]) -> str:
    """Why a glob row may not stand over these outcomes ('' if it may)."""
    not_failed = [f"{o.scenario.id} ({o.status})" for o in matched if o.status not in ("fail", "error")]
    if not_failed:
        return "it matches scenarios that did not fail: " + ", ".join(not_failed[:5])
    sigs = sorted({signature(o) for o in matched})
    if len(sigs) > 1:
        return "its scenarios fail for different reasons: " + " / ".join(sigs[:4])
    other = [o.scenario.id for o in matched if not d.expects(o)]
    if other:
        return "its scenarios fail otherwise than the row says: " + ", ".join(other[:5])
    return ""


def apply(
    outcomes: Iterable[Outcome], impl: str, version: str, devs: list[Deviation] | None = None
) -> list[str]:
    """Mark listed failures that fail as the row says ``xfail`` and listed passes ``xpass``;
    a listed scenario that fails otherwise stays failed, its reason (and a last failure line)
    naming the unexpected difference; a glob row whose scenarios did not all fail with its
    difference makes each of them an ``error`` naming the row.  Returns the glob violations,
    one line each."""
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
        why = _glob_problem(d, [outcomes[i] for i in idx])
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
        if o.status in ("fail", "error") and d.expects(o):
            o.status, o.reason = "xfail", d.reason
        elif o.status in ("fail", "error"):
            why = unexpected(d, o)
            if o.status == "fail":
                o.failures.append(Failure(f"{ROW_MISMATCH}{d.row()}", f"{d.first} at {PLACES_SEP.join(d.differing) or NONE}",
                                          "; ".join(cells(o)), "a difference the row does not list"))
            o.reason = why if o.status == "fail" else f"{why}; {o.reason}"
        elif o.status == "pass":
            o.status = "xpass"
    return problems
