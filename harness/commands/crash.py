"""``memconform crash``: kill (or fail) an operation at every store-touching syscall.

Real processes under strace for any implementation (``harness.faults.campaigns``), or, with
``--explore``, the in-process explorer of the reference with its persistence models
(``harness.faults.explorer``).  Exit status 1 when any run shows a violation.  The CLI loads
every command to build its parser, so the strace and explorer machinery is imported only when
this command runs.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..faults import ERRNOS, MODELS
from ..faults.cases import CASES, OpCase
from ..oracles.crash_judge import Intent
from ..peers import PeerSpec
from ..scenarios import content_bytes, load_file
from .common import add_impl_arguments

if TYPE_CHECKING:
    from ..faults.campaigns import CaseReport

NAME = "crash"
HELP = "kill or fail an operation at each store-touching syscall and check the crash states"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_impl_arguments(p)
    p.add_argument(
        "--op", action="append", default=[], metavar="CASE|all|SCENARIO.json",
        help=f"op case ({', '.join(CASES)}), 'all', or a scenario file whose last step is crashed",
    )
    p.add_argument("--errors", action="store_true", help="inject errors instead of kills: the op must fail and roll back")
    p.add_argument("--errno", action="append", default=[], choices=tuple(ERRNOS), help="errors to inject (default: all)")
    p.add_argument("--points", help="only these call indexes (1,4-6), or 'publishing' (namespace changes and the lock)")
    p.add_argument("--no-recover", action="store_true", help="skip the recovery run after each kill")
    p.add_argument("--parallel", type=int, default=1, help="cases run at once (one sandbox each)")
    p.add_argument("--explore", action="store_true", help="in-process explorer of the reference (no processes)")
    p.add_argument("--exhaustive", action="store_true", help="explorer: every sequence of <= --max-ops ops")
    p.add_argument("--topics", type=int, default=2, help="exhaustive: number of topics (2-3)")
    p.add_argument("--max-ops", type=int, default=3, help="exhaustive: longest sequence")
    p.add_argument("--models", default=",".join(MODELS), help="explorer persistence models")
    p.add_argument("--verbose", action="store_true", help="show every point, not only failing ones")
    p.add_argument("--json", type=Path, help="write a JSON report")


def _points(text: str | None) -> Any:
    if not text:
        return None
    if text == "publishing":
        from ..faults.campaigns import publishing_calls

        return publishing_calls
    chosen: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        chosen.update(range(int(lo), int(hi or lo) + 1))
    return lambda i, _call: i in chosen


def case_from_scenario(path: Path) -> OpCase:
    """A scenario as an op case: its ``given`` files and its last step (other steps must be
    file actions or absent); what the op may change is taken from the scenario's intent."""
    sc = load_file(path)
    steps = [s for s in sc.steps if s.op not in ("put_file", "delete_file", "advance_clock")]
    if len(steps) != 1:
        raise SystemExit(f"{path}: crash needs exactly one operation step, found {len(steps)}")
    step = steps[-1]
    given = {rel: content_bytes(c).decode("utf-8", "replace") for rel, c in sc.data.get("given", {}).get("files", {}).items()}
    op, args = step.op, dict(step.args)
    kind = {"write_memory": "write", "remove_memory": "remove", "pin_memory": "pin", "retire_recaps": "retire",
            "memory_dir": "carry-over", "parse_rules": "config"}.get(op, "handoff" if "handoff" in op else op)
    topic = str(args.get("topic", ""))
    slug = re.sub(r"[^a-z0-9]+", "-", topic.lower()).strip("-")
    writes = frozenset({slug + ".md"}) if kind == "write" and slug else frozenset()
    removes = frozenset({"*"}) if kind in ("remove", "retire") else frozenset()
    return OpCase(sc.id, kind, given, op, args, Intent(kind, writes, removes))


def _cases(names: list[str], impl: str) -> list[OpCase]:
    out: list[OpCase] = []
    for name in names or ["all"]:
        if name == "all":
            out += [c for c in CASES.values() if impl in c.impls]
        elif name.endswith(".json"):
            out.append(case_from_scenario(Path(name)))
        elif name in CASES:
            out.append(CASES[name])
        else:
            raise SystemExit(f"unknown op case {name!r} (known: {', '.join(CASES)}, all, or a scenario file)")
    return out


def _explore(args: argparse.Namespace, cases: list[OpCase]) -> int:
    models = [m for m in args.models.split(",") if m]
    unknown = set(models) - set(MODELS)
    if unknown:
        raise SystemExit(f"unknown model(s) {', '.join(sorted(unknown))}; known: {', '.join(MODELS)}")
    from ..faults.campaigns import fault_case
    from ..faults.explorer import Explorer

    ex = Explorer(recover=not args.no_recover, models=models)
    if args.exhaustive:
        result = ex.exhaustive(topics=args.topics, max_ops=args.max_ops)
        print(f"bounded exhaustive: {args.topics} topics, sequences of <= {args.max_ops} ops")
    else:
        for case in cases:
            ex.explore_case(case)
        result = ex.result
    print(result.render())
    fault_violations = 0
    if args.errors:
        for case in cases:
            report = fault_case(case, tuple(args.errno) or tuple(ERRNOS))
            fault_violations += sum(f.severity == "violation" for _where, f in report.findings)
            print(report.render())
    if args.json:
        data = {m: {"states": s.states, "distinct": s.distinct, "violating": s.violating,
                    "violations": dict(s.by_clause), "weaknesses": dict(s.weakness), "allowed": dict(s.allowed)}
                for m, s in result.models.items()}
        args.json.write_text(json.dumps({"seconds": result.seconds, "models": data}, indent=2))
    return 1 if result.violations or fault_violations else 0


def run(args: argparse.Namespace) -> int:
    spec = PeerSpec.parse(args.impl)
    cases = _cases(args.op, spec.kind)
    if args.explore or args.exhaustive:
        if spec.kind != "python":
            raise SystemExit("--explore runs the reference in process; use --impl python")
        return _explore(args, cases)
    from ..faults.campaigns import crash_runs, error_runs
    from ..faults.strace import strace_unavailable

    reason = strace_unavailable()
    if reason:
        print(f"memconform crash: {reason}", file=sys.stderr)
        return 2
    only = _points(args.points)
    started = time.monotonic()

    def one(case: OpCase) -> CaseReport:
        if args.errors:
            errnos = tuple(args.errno) or tuple(ERRNOS)
            return error_runs(spec, case, errnos=errnos, only=only, timeout=args.timeout)
        return crash_runs(spec, case, only=only, timeout=args.timeout, with_recovery=not args.no_recover)

    with ThreadPoolExecutor(max_workers=max(1, args.parallel)) as pool:
        reports = list(pool.map(one, cases))
    runs = sum(len(r.points) for r in reports)
    bad = sum(r.violations for r in reports)
    for r in reports:
        print(r.render(args.verbose), flush=True)
    elapsed = time.monotonic() - started
    print(f"\n{spec.name}: {len(reports)} op cases, {runs} runs in {elapsed:.1f} s "
          f"({runs / elapsed if elapsed else 0:.1f} runs/s), {bad} with violations")
    if args.json:
        args.json.write_text(json.dumps([
            {"impl": r.impl, "case": r.case, "mode": r.mode, "calls": r.calls, "seconds": r.seconds,
             "points": [{"index": p.index, "call": p.call, "fault": p.fault, "answer": p.answer, "missed": p.missed,
                         "allowed": sorted(p.verdict.allowed),
                         "findings": [str(f) for f in [*p.verdict.findings, *p.recovery]]} for p in r.points]}
            for r in reports], indent=2))
    return 1 if bad else 0
