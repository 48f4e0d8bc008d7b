"""Reports of a conformance run: one line per scenario, a summary, a per-clause table,
failure details, the run's findings, and the same as JSON (the common top of
``harness.reports.envelope`` plus a ``scenarios`` section) and JUnit XML (findings as failures)."""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from ..gate.runner import Outcome
from ..oracles.expect import UNEXPECTED_WRITE
from ..oracles.findings import DEVIATION, HAZARD, VIOLATION, Finding, summary_line
from .junit import mark_interrupted

MISMATCH = "mismatch"  # a scenario's kind of finding: what ran missed what it expects (never a severity name)
LABEL = {
    "pass": "PASS ", "fail": "FAIL ", "error": "ERROR", "xfail": "XFAIL", "xpass": "XPASS",
    "skip": "SKIP ",
}
RAN = ("pass", "fail", "error", "xfail", "xpass")
_STEP_OP = re.compile(r"\(([a-z_]+)\)")


def line(o: Outcome) -> str:
    text = f"{LABEL[o.status]} {o.scenario.id} ({o.seconds * 1000:.0f} ms)"
    if o.status == "xfail":
        text += f"  [known: {o.reason}]"
    elif o.status == "xpass":
        text += "  [listed in KNOWN_DEVIATIONS.md but passes: remove it from the list]"
    elif o.status in ("error", "skip"):
        text += f"  [{o.reason}]"
    return text


def counts(outcomes: list[Outcome]) -> dict[str, int]:
    c = {k: 0 for k in LABEL}
    for o in outcomes:
        c[o.status] += 1
    return c


def executed(outcomes: list[Outcome]) -> int:
    """Scenarios whose steps ran (a skip ran nothing)."""
    return sum(o.status in RAN for o in outcomes)


def stats(outcomes: list[Outcome]) -> dict[str, int]:
    """The ``stats`` of the JSON top for a conformance or replay run."""
    c = counts(outcomes)
    return {
        "scenarios": len(outcomes), "executed": executed(outcomes), "passed": c["pass"],
        "failed": c["fail"], "xfail": c["xfail"], "xpass": c["xpass"], "errors": c["error"],
        "skipped": c["skip"],
    }


def summary(outcomes: list[Outcome], found: Sequence[Finding] = ()) -> str:
    c = counts(outcomes)
    failed = c["fail"] + c["error"] + c["xpass"]
    text = f"{c['pass']} passed, {failed} failed, {c['xfail']} expected failures"
    text += f", {c['skip']} skipped" if c["skip"] else ""
    return f"{text}; findings: {summary_line(found)}"


def clause_table(outcomes: list[Outcome]) -> str:
    per: dict[str, dict[str, int]] = defaultdict(lambda: {k: 0 for k in LABEL})
    for o in outcomes:
        for clause in o.scenario.clauses:
            per[clause][o.status] += 1

    def key(c: str) -> tuple[str, int]:
        head, _, num = c.rpartition("-")
        return head, int(num) if num.isdigit() else 0

    rows = [
        "clause         pass  fail  xfail  skip  verdict",
        "-------------  ----  ----  -----  ----  -------",
    ]
    for clause in sorted(per, key=key):
        r = per[clause]
        bad = r["fail"] + r["error"] + r["xpass"]
        ran = sum(r[s] for s in RAN)
        verdict = "FAIL" if bad else ("known" if r["xfail"] else ("ok" if ran else "none ran"))
        rows.append(f"{clause:<13}  {r['pass']:>4}  {bad:>4}  {r['xfail']:>5}  {r['skip']:>4}  {verdict}")
    return "\n".join(rows)


def failures(outcomes: list[Outcome]) -> str:
    parts = []
    for o in outcomes:
        if o.status not in ("fail", "error", "xpass"):
            continue
        head = f"--- {o.scenario.id} [{', '.join(o.scenario.clauses)}] on {o.impl} ({o.scenario.path.name})"
        body = [f.render() for f in o.failures] or [f"  {o.reason}"]
        if o.stderr.strip():
            body.append("  driver stderr:\n    " + "\n    ".join(o.stderr.strip().splitlines()[-20:]))
        parts.append("\n".join([head, *body]))
    return "\n\n".join(parts)


# --- findings --------------------------------------------------------------------------------


def shown_path(path: Path) -> str:
    """Relative to the working directory when under it, else absolute (an installed corpus
    lies in site-packages: ``../../venv/lib/…`` would be harder to open)."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # pragma: no cover - another drive on Windows
        return str(path)
    return str(Path(path).absolute()) if rel.startswith("..") else rel


def _clip(text: str, limit: int = 400) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def scenario_findings(o: Outcome, impl: str, spec: str) -> list[Finding]:
    """What one scenario's outcome says, as findings.

    A failed or errored scenario is a ``mismatch`` violation (what ran missed what the scenario
    expects; ``scenario-error`` when the runner found the scenario itself broken), a listed
    deviation that fails as listed a ``mismatch`` of severity deviation, one that passes (the
    list is stale) a ``stale-deviation`` violation; hazards the runner saw (``Outcome.findings``) come along.
    The scenario file is already the replayable regression.
    """
    path = shown_path(o.scenario.path)
    base = {
        "clause": ",".join(o.scenario.clauses), "impl": impl, "path": "",
        "reproduce": f"memconform replay {path} --impl {spec}", "regression": path,
    }
    found: list[Finding] = []
    if o.status in ("fail", "error", "xfail"):
        first = o.failures[0] if o.failures else None
        if first is not None:
            m = _STEP_OP.search(first.where)
            op = m.group(1) if m else ""
            what = f"{first.where}: {first.detail or 'differs'}; expected {first.expected} / got {first.actual}"
        else:
            op, what = "", o.reason or "error"
        more = f" (+{len(o.failures) - 1} more)" if len(o.failures) > 1 else ""
        evidence = _clip(f"{o.scenario.id}: {what}") + more
        if o.status == "xfail":
            evidence = _clip(f"{o.scenario.id}: known: {o.reason}")
        severity = DEVIATION if o.status == "xfail" else VIOLATION
        # a scenario the runner finds broken (``then`` leaves a changed file out) is the
        # corpus's error, not the implementation's deviation: named so, still gating
        kind = "scenario-error" if o.reason.startswith("scenario error") else MISMATCH
        if first is not None and first.detail.startswith(UNEXPECTED_WRITE + ":"):
            kind = UNEXPECTED_WRITE  # the tool changed a file no step may change: named as such
        found.append(Finding(kind, severity, op=op, evidence=evidence, **base))
    elif o.status == "xpass":
        found.append(Finding(
            "stale-deviation", VIOLATION,
            evidence=f"{o.scenario.id}: listed in KNOWN_DEVIATIONS.md but passes: remove it from the list",
            **base,
        ))
    extra = getattr(o, "findings", None) or []
    found.extend(f if f.regression else replace(f, regression=path) for f in extra if isinstance(f, Finding))
    return found


def write_findings(found: Sequence[Finding], out: TextIO) -> None:
    """Every finding but the expected deviations, one line each (hazards shown by default)."""
    shown = [f for f in found if f.severity != DEVIATION]
    if shown:
        out.write("\nFindings:\n" + "\n".join(f"  {f.line()}" for f in shown) + "\n")


def write_text(outcomes: list[Outcome], out: TextIO, found: Sequence[Finding] = ()) -> None:
    detail = failures(outcomes)
    if detail:
        out.write("\nFailures:\n" + detail + "\n")
    write_findings(found, out)
    out.write("\nPer clause:\n" + clause_table(outcomes) + "\n\n")
    out.write(summary(outcomes, found) + "\n")


def scenarios_json(outcomes: list[Outcome]) -> list[dict[str, Any]]:
    """The per-scenario section of the JSON report (under ``scenarios``)."""
    return [
        {
            "id": o.scenario.id,
            "clauses": list(o.scenario.clauses),
            "path": shown_path(o.scenario.path),
            "status": o.status,
            "seconds": round(o.seconds, 4),
            "reason": o.reason,
            "failures": [f.__dict__ for f in o.failures],
            "stderr": o.stderr,
        }
        for o in outcomes
    ]


def write_junit(
    outcomes: list[Outcome], path: Path, impl: str,
    found: Mapping[str, Sequence[Finding]] | None = None, *, fail_on_hazard: bool = False,
    interrupted: str = "",
) -> None:
    """One testcase per scenario; each finding of it is a failure (violations, and hazards
    under ``--fail-on hazard``) or a property, with the finding's line as the message; an
    ``interrupted`` run (its words) also gets an errored testcase, never a green suite."""
    by_id = found or {}
    gating = {VIOLATION, HAZARD} if fail_on_hazard else {VIOLATION}
    c = counts(outcomes)
    failing = sum(any(f.severity in gating for f in by_id.get(o.scenario.id, ())) for o in outcomes
                  if o.status != "error")
    suite = ET.Element(
        "testsuite",
        name=f"memconform conformance ({impl})",
        tests=str(len(outcomes)),
        failures=str(failing if by_id else c["fail"] + c["xpass"]),
        errors=str(c["error"]),
        skipped=str(c["xfail"] + c["skip"]),
    )
    for o in outcomes:
        case = ET.SubElement(
            suite, "testcase", classname=", ".join(o.scenario.clauses), name=o.scenario.id,
            time=f"{o.seconds:.4f}",
        )
        mine = list(by_id.get(o.scenario.id, ()))
        if mine:
            props = ET.SubElement(case, "properties")
            for f in mine:
                ET.SubElement(props, "property", name=f"finding:{f.severity}", value=f.line())
        gate = [f for f in mine if f.severity in gating]
        if o.status == "error":
            ET.SubElement(case, "error", message=gate[0].line() if gate else o.reason).text = o.stderr
        elif o.status in ("fail", "xpass") or gate:
            msg = gate[0].line() if gate else ("; ".join(f.where for f in o.failures) or o.reason)
            ET.SubElement(case, "failure", message=msg).text = "\n".join(
                [f.line() for f in gate] + [f.render() for f in o.failures]
            )
        elif o.status == "xfail":
            ET.SubElement(case, "skipped", message=f"known deviation: {o.reason}")
        elif o.status == "skip":
            ET.SubElement(case, "skipped", message=o.reason)
    if interrupted:
        mark_interrupted(suite, interrupted)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
