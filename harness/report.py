"""Reports of a conformance run: one line per scenario, a summary, a per-clause table,
failure details, and the same as JSON and JUnit XML."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from typing import TextIO

from .runner import Outcome

LABEL = {
    "pass": "PASS ", "fail": "FAIL ", "error": "ERROR", "xfail": "XFAIL", "xpass": "XPASS",
    "skip": "SKIP ",
}


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


def summary(outcomes: list[Outcome]) -> str:
    c = counts(outcomes)
    failed = c["fail"] + c["error"] + c["xpass"]
    text = f"{c['pass']} passed, {failed} failed, {c['xfail']} expected failures"
    return text + (f", {c['skip']} skipped" if c["skip"] else "")


def clause_table(outcomes: list[Outcome]) -> str:
    per: dict[str, dict[str, int]] = defaultdict(lambda: {k: 0 for k in LABEL})
    for o in outcomes:
        for clause in o.scenario.clauses:
            per[clause][o.status] += 1

    def key(c: str) -> tuple[str, int]:
        head, _, num = c.rpartition("-")
        return head, int(num) if num.isdigit() else 0

    rows = ["clause         pass  fail  xfail  verdict", "-------------  ----  ----  -----  -------"]
    for clause in sorted(per, key=key):
        r = per[clause]
        bad = r["fail"] + r["error"] + r["xpass"]
        verdict = "FAIL" if bad else ("known" if r["xfail"] else "ok")
        rows.append(f"{clause:<13}  {r['pass']:>4}  {bad:>4}  {r['xfail']:>5}  {verdict}")
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


def write_text(outcomes: list[Outcome], out: TextIO) -> None:
    detail = failures(outcomes)
    if detail:
        out.write("\nFailures:\n" + detail + "\n")
    out.write("\nPer clause:\n" + clause_table(outcomes) + "\n\n")
    out.write(summary(outcomes) + "\n")


def write_json(outcomes: list[Outcome], path: Path, impl: str) -> None:
    data = {
        "impl": impl,
        "summary": counts(outcomes),
        "scenarios": [
            {
                "id": o.scenario.id,
                "clauses": list(o.scenario.clauses),
                "status": o.status,
                "seconds": round(o.seconds, 4),
                "reason": o.reason,
                "failures": [f.__dict__ for f in o.failures],
                "stderr": o.stderr,
            }
            for o in outcomes
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False))


def write_junit(outcomes: list[Outcome], path: Path, impl: str) -> None:
    c = counts(outcomes)
    suite = ET.Element(
        "testsuite",
        name=f"memconform conformance ({impl})",
        tests=str(len(outcomes)),
        failures=str(c["fail"] + c["xpass"]),
        errors=str(c["error"]),
        skipped=str(c["xfail"]),
    )
    for o in outcomes:
        case = ET.SubElement(
            suite, "testcase", classname=", ".join(o.scenario.clauses), name=o.scenario.id,
            time=f"{o.seconds:.4f}",
        )
        if o.status in ("fail", "xpass"):
            msg = "; ".join(f.where for f in o.failures) or o.reason or "listed deviation passes"
            ET.SubElement(case, "failure", message=msg).text = "\n".join(f.render() for f in o.failures)
        elif o.status == "error":
            ET.SubElement(case, "error", message=o.reason).text = o.stderr
        elif o.status == "xfail":
            ET.SubElement(case, "skipped", message=f"known deviation: {o.reason}")
        elif o.status == "skip":
            ET.SubElement(case, "skipped", message=o.reason)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
