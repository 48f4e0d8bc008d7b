"""Joining the JSON reports of a sharded run into the report one unsharded run would write.

Scenarios are concatenated (sorted by id; an id in two shards means the shards overlap and
is refused, as is a report of another implementation), findings concatenated, the counts
recomputed from the scenarios, the verdict recomputed from the findings (``--fail-on hazard``
carried when any shard ran with it).  ``started`` is the earliest shard's start; ``seconds``
the sum of the shards' durations (the machine time the gate cost); ``stats.shards`` says how
many joined.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

from ..oracles.findings import HAZARD, INTERRUPTED, VIOLATION, Finding, summary, verdict
from .junit import mark_interrupted

STAT_OF_STATUS = {"pass": "passed", "fail": "failed", "xfail": "xfail", "xpass": "xpass", "error": "errors",
                  "skip": "skipped"}
RAN = ("pass", "fail", "error", "xfail", "xpass")


class MergeError(Exception):
    """Reports that cannot be joined (overlap, other implementations, not conformance)."""


def scenario_stats(scenarios: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """The ``stats`` a conformance run writes, from its ``scenarios`` section."""
    c = Counter(str(s["status"]) for s in scenarios)
    out = {"scenarios": len(scenarios), "executed": sum(c[s] for s in RAN)}
    out |= {STAT_OF_STATUS[s]: c[s] for s in STAT_OF_STATUS}
    return out


def shard_problems(reports: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> list[str]:
    """What keeps ``reports`` from being the whole of one sharded run: a shard missing, one
    given twice, shards of different splits, an unsharded report among shards, a shard that
    was interrupted.  Each report records ``"shard": "K/N"`` (``conformance --shard``)."""
    problems: list[str] = []
    shards = [str(d.get("shard", "")) for d in reports]
    for d, name in zip(reports, labels, strict=True):
        if d.get("interrupted") or d.get("verdict") == INTERRUPTED:
            problems.append(f"{name} was interrupted (it holds part of its shard)")
    if not any(shards):
        return problems + ([f"{len(reports)} reports without a shard (not from conformance --shard K/N)"]
                           if len(reports) > 1 else [])
    parsed: list[tuple[str, tuple[int, int]]] = []  # a list: the same file may be given twice
    for shard, name in zip(shards, labels, strict=True):
        index, _, count = shard.partition("/")
        if not (index.isdigit() and count.isdigit()):
            problems.append(f"{name} records no shard (\"shard\": \"K/N\")")
            continue
        parsed.append((name, (int(index), int(count))))
    totals = sorted({n for _, (_, n) in parsed})
    if len(totals) > 1:
        problems.append(f"shards of different splits: {', '.join(f'/{n}' for n in totals)}")
        return problems
    if not totals:
        return problems
    total = totals[0]
    seen: dict[int, str] = {}
    for name, (k, _) in parsed:
        if k in seen:
            problems.append(f"shard {k}/{total} given twice ({seen[k]}, {name})")
        seen.setdefault(k, name)
    missing = [f"{k}/{total}" for k in range(1, total + 1) if k not in seen]
    if missing:
        problems.append(f"shard{'s' if len(missing) > 1 else ''} {', '.join(missing)} missing")
    return problems


def merge(reports: Sequence[Mapping[str, Any]], names: Sequence[str] = (), *, allow_partial: bool = False) -> dict[str, Any]:
    """One report from several shards' reports; every shard of the split exactly once, unless
    ``allow_partial`` (then the report says what is missing under ``partial``)."""
    if not reports:
        raise MergeError("no report to merge")
    labels = list(names) or [f"report {i + 1}" for i in range(len(reports))]
    first = reports[0]
    impls = [(i.get("name"), i.get("version")) for i in first.get("impls", [])]
    seen: dict[str, str] = {}
    shards_taken: set[str] = set()
    scenarios: list[Mapping[str, Any]] = []
    for data, name in zip(reports, labels, strict=True):
        if "scenarios" not in data:
            raise MergeError(f"{name}: not a conformance report (no scenarios section)")
        other = [(i.get("name"), i.get("version")) for i in data.get("impls", [])]
        if other != impls:
            raise MergeError(f"{name}: implementation {other} differs from {impls} of {labels[0]}")
        shard = str(data.get("shard", ""))
        if shard and shard in shards_taken:
            continue  # a shard given twice is said so below (``shard_problems``), not as an overlap
        shards_taken.add(shard)
        for s in data["scenarios"]:
            sid = str(s["id"])
            if sid in seen:
                raise MergeError(f"{name}: scenario {sid} also in {seen[sid]}: the shards overlap")
            seen[sid] = name
            scenarios.append(s)
    problems = shard_problems(reports, labels)
    if problems and not allow_partial:
        raise MergeError("; ".join(problems) + " (--allow-partial merges them anyway)")
    scenarios.sort(key=lambda s: str(s["id"]))
    findings = [Finding.from_json(f) for data in reports for f in data.get("findings", [])]
    stats = scenario_stats(scenarios) | {"shards": len(reports)}
    hazard_gates = any(gates_hazard(d) for d in reports)
    out: dict[str, Any] = {
        "tool": first.get("tool", {}),
        "command": ["memconform", "report", "merge", *labels, *(["--fail-on", "hazard"] if hazard_gates else [])],
        "impls": first.get("impls", []),
        "started": min(str(d.get("started", "")) for d in reports),
        "seconds": round(sum(float(d.get("seconds", 0.0)) for d in reports), 3),
        "verdict": verdict(findings, executed=stats["executed"], fail_on_hazard=hazard_gates),
        "summary": summary(findings),
        "stats": stats,
        "findings": [f.to_json() for f in findings],
    }
    keys = {k for d in reports for k in d} - set(out) - {"scenarios", "shard"}
    for k in sorted(keys):  # a command's own sections (e.g. ``impl``): the first shard's
        out[k] = next(d[k] for d in reports if k in d)
    if problems:
        out["partial"] = problems
    if any(d.get("interrupted") or d.get("verdict") == INTERRUPTED for d in reports):
        out["interrupted"], out["verdict"] = True, INTERRUPTED  # part of a run is never a pass
    out["scenarios"] = scenarios
    out["merged"] = [{"report": name, "shard": d.get("shard", ""), "scenarios": len(d["scenarios"])}
                     for d, name in zip(reports, labels, strict=True)]
    return out


def gates_hazard(data: Mapping[str, Any]) -> bool:
    """The report's command ran with ``--fail-on hazard``."""
    command = [str(a) for a in data.get("command", [])]
    pairs = pairwise(command)  # each argument with the next
    return "--fail-on=hazard" in command or any(a == "--fail-on" and b == "hazard" for a, b in pairs)


def write_junit(data: Mapping[str, Any], path: Path) -> Path:
    """JUnit XML of a (merged) conformance JSON report: one testcase per scenario."""
    scenarios = list(data.get("scenarios", []))
    c = Counter(str(s["status"]) for s in scenarios)
    impl = data.get("impl") or ", ".join(f"{i.get('name')} {i.get('version')}" for i in data.get("impls", []))
    gating = {VIOLATION, HAZARD} if gates_hazard(data) else {VIOLATION}
    by_path: dict[str, list[Mapping[str, Any]]] = {}
    for f in data.get("findings", []):
        by_path.setdefault(str(f.get("regression", "")), []).append(f)
    suite = ET.Element("testsuite", name=f"memconform conformance ({impl})", tests=str(len(scenarios)),
                       failures=str(c["fail"] + c["xpass"]), errors=str(c["error"]), skipped=str(c["xfail"] + c["skip"]))
    for s in scenarios:
        case = ET.SubElement(suite, "testcase", classname=", ".join(s.get("clauses", [])), name=str(s["id"]),
                             time=f"{float(s.get('seconds', 0.0)):.4f}")
        mine = by_path.get(str(s.get("path", "")), [])
        gate = [f for f in mine if f.get("severity") in gating]
        text = "\n".join(f"  {f.get('where')}: {f.get('detail') or 'differs'}\n    expected: {f.get('expected')}\n"
                         f"    actual:   {f.get('actual')}" for f in s.get("failures", []))
        status = s["status"]
        if status == "error":
            ET.SubElement(case, "error", message=str(s.get("reason", ""))).text = str(s.get("stderr", ""))
        elif status in ("fail", "xpass") or gate:
            message = str(gate[0].get("evidence", "")) if gate else str(s.get("reason") or "failed")
            ET.SubElement(case, "failure", message=message).text = text
        elif status == "xfail":
            ET.SubElement(case, "skipped", message=f"known deviation: {s.get('reason', '')}")
        elif status == "skip":
            ET.SubElement(case, "skipped", message=str(s.get("reason", "")))
    if data.get("interrupted") or data.get("verdict") == INTERRUPTED:
        mark_interrupted(suite, "interrupted: a shard of this run stopped early (Ctrl-C); "
                                f"{len(scenarios)} scenarios finished")
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
    return path
