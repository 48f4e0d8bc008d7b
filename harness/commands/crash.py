"""``memconform crash``: kill (or fail) an operation at every store-touching syscall.

Real processes under strace for any implementation (``harness.faults.campaigns``), or, with
``--explore``, the in-process explorer of the reference with its persistence models
(``harness.faults.explorer``).  Every finding is a ``Finding`` printed by default — an op that
failed yet left the store changed (``failed-part-way``) and a left lock that refuses writes
for 60 s or more (``unavailable``) are hazards, S-INV-9 weaknesses carry the rate at which
they happened — and each is exported as a replayable regression.  The CLI loads every
command to build its parser, so the strace and explorer machinery is imported only when this
command runs.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..drivers import capabilities
from ..drivers.interrupt import stopping, work_done
from ..drivers.peers import PeerSpec, preflight
from ..faults import ERRNOS, MODELS
from ..faults.cases import CASES, OpCase
from ..gate.regressions import export
from ..gate.scenarios import ScenarioError, content_bytes, load_file
from ..oracles.crash_judge import CrashFinding, Intent
from ..oracles.findings import EXIT_USAGE, Finding, dedupe, exit_code, summary_line, verdict
from ..reports import envelope
from ..reports.progress import progress
from .common import (
    add_impl_arguments,
    add_report_arguments,
    export_dir,
    fail_on_hazard,
    interrupted_end,
    positive_int,
    publish,
    quiet,
)

if TYPE_CHECKING:
    from ..faults.campaigns import CaseReport

NAME = "crash"
HELP = "kill or fail an operation at each store-touching syscall and check the crash states"


class UsageError(Exception):
    """A bad argument found after parsing (a case name, a scenario file): one line, exit 2."""


def points_arg(text: str) -> str:
    """``publishing`` or comma-separated indexes and ranges of integers ≥ 1 (``1,4-6``)."""
    if text == "publishing":
        return text
    for part in text.split(","):
        lo, dash, hi = part.strip().partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()) or int(lo) < 1 or (hi and int(hi) < int(lo)):
            raise argparse.ArgumentTypeError(
                f"{text!r}: give call indexes as integers >= 1 and ranges (1,4-6), or 'publishing'"
            )
    return text


def topics_arg(text: str) -> int:
    """2 or 3: the alphabet grows by 5 ops a topic, the sequences by its power (issue 22)."""
    if text.strip() not in ("2", "3"):
        raise argparse.ArgumentTypeError(f"{text!r}: give 2 or 3 topics")
    return int(text)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_impl_arguments(p)
    add_report_arguments(p)
    p.add_argument(
        "--op", action="append", default=[], metavar="CASE|all|SCENARIO.json",
        help=f"op case ({', '.join(CASES)}), 'all', or a scenario file whose last step is crashed",
    )
    p.add_argument("--errors", action="store_true", help="inject errors instead of kills: the op must fail and roll back")
    p.add_argument("--errno", action="append", default=[], choices=tuple(ERRNOS), help="errors to inject (default: all)")
    p.add_argument("--points", type=points_arg,
                   help="only these call indexes (1,4-6), or 'publishing' (namespace changes and the lock)")
    p.add_argument("--no-recover", action="store_true", help="skip the recovery run after each kill")
    p.add_argument("--parallel", type=positive_int, default=1, help="cases run at once (one sandbox each)")
    p.add_argument("--explore", action="store_true", help="in-process explorer of the reference (no processes)")
    p.add_argument("--exhaustive", action="store_true", help="explorer: every sequence of <= --max-ops ops")
    p.add_argument("--topics", type=topics_arg, default=2, help="exhaustive: number of topics (2-3)")
    p.add_argument("--max-ops", type=positive_int, default=3, help="exhaustive: longest sequence")
    p.add_argument("--models", default=None,
                   help=f"persistence models: explorer {','.join(MODELS)} (default all); "
                        f"--trace also reorder (default all four)")
    p.add_argument("--trace", action="store_true",
                   help="record each op once under strace and build its crash states under the models (any impl)")
    p.add_argument("--recover", action="store_true",
                   help="--trace: run the implementation's own next ops on every distinct state (warm drivers)")
    p.add_argument("--granularity", choices=("byte", "block"), default="byte",
                   help="--trace torn model: cut unsynced data inside writes, or at 4 KiB blocks")
    p.add_argument("--workers", type=positive_int, default=4,
                   help="--trace --recover: warm drivers at once (their lock polls sleep: more than the cores pays)")
    p.add_argument("--verbose", action="store_true", help="show every point, not only those with findings")


def _points(text: str | None) -> Any:
    if not text:
        return None
    if text == "publishing":
        from ..faults.campaigns import publishing_calls

        return publishing_calls
    chosen: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        chosen.update(range(int(lo), int(hi or lo) + 1))
    return lambda i, _call: i in chosen


def case_from_scenario(path: Path) -> OpCase:
    """A scenario as an op case: its ``given`` files and its last step (other steps must be
    file actions or absent); what the op may change is taken from the scenario's intent."""
    if not path.is_file():
        raise UsageError(f"--op {path}: no such scenario file")
    try:
        sc = load_file(path)
    except ScenarioError as e:
        raise UsageError(f"--op {path}: {e}") from None
    steps = [s for s in sc.steps if s.op not in ("put_file", "delete_file", "advance_clock")]
    if len(steps) != 1:
        raise UsageError(f"--op {path}: crash needs exactly one operation step, found {len(steps)}")
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


def offered(cases: list[OpCase], info: envelope.ImplInfo) -> list[OpCase]:
    """The op cases whose ops the driver declares (issue 32): the others are not run, each said
    in one line; none left is a refusal naming the missing op (exit 2), never a crash finding."""
    caps = capabilities.of_impl(info)
    keep, not_run = [], []
    for case in cases:
        lacking = caps.lacking({"set_clock", case.op, *([case.recover[0]] if case.recover else [])})
        if lacking:
            not_run.append(capabilities.NotRun(f"op case {case.name}", f"driver lacks op(s) {', '.join(lacking)}"))
        else:
            keep.append(case)
    if not keep:
        raise capabilities.Missing(f"crash: {info.spec}: {not_run[0].why} (needed by every op case asked for)")
    capabilities.say_not_run(NAME, not_run)
    return keep


def _cases(names: list[str], impl: str, ops: frozenset[str] | None = None, who: str = "") -> list[OpCase]:
    """The op cases named (``all``, a case, a kind, a scenario file) that ``impl`` can run:
    its layout is known or the case is over the shared store alone, and its hello offers the
    op.  A case named outright that it cannot run is one line saying what is missing."""
    who = who or impl
    out: list[OpCase] = []
    for name in names or ["all"]:
        if name == "all":
            out += [c for c in CASES.values() if c.applies(impl, ops)]
        elif name.endswith(".json"):
            case = case_from_scenario(Path(name))
            if not case.applies(impl, ops):
                raise UsageError(f"--op {name}: " + _why_not(case, impl, ops, who))
            out.append(case)
        elif name in CASES:
            case = CASES[name]
            if not case.applies(impl, ops):
                raise UsageError(_why_not(case, impl, ops, who))
            out.append(case)
        elif name in {c.kind for c in CASES.values()}:  # an op kind: its cases for this impl
            out += [c for c in CASES.values() if c.kind == name and c.applies(impl, ops)]
        else:
            raise UsageError(f"unknown op case {name!r} (known: {', '.join(CASES)}, a kind "
                             f"({', '.join(sorted({c.kind for c in CASES.values()}))}), all, or a scenario file)")
    if not out:
        wanted = sorted({c.op for c in CASES.values() if c.shared})
        offered = "its hello lists no ops" if ops is None else f"its hello offers {', '.join(sorted(ops)) or 'no op'}"
        raise UsageError(f"no op case of {' '.join(names or ['all'])!r} applies to {who}: the shared-store cases need "
                         f"one of {', '.join(wanted)} ({offered})")
    return out


def _why_not(case: OpCase, impl: str, ops: frozenset[str] | None, who: str) -> str:
    if ops is not None and case.op not in ops:
        return f"op case {case.name} needs {case.op}, which {who} does not offer (its hello ops)"
    runs = ", ".join(c.name for c in CASES.values() if c.applies(impl, ops)) or "none"
    return (f"op case {case.name} is laid out over the JS tools' private stores, not {who}'s; "
            f"the cases over the shared store it can run: {runs}")


def _explorer_findings(result: Any, impl: str, reproduce: str) -> list[Finding]:
    out: list[Finding] = []
    for model, m in result.models.items():
        for counter, severity, prefix in ((m.by_clause, "violation", ""), (m.weakness, "weakness", "weakness ")):
            for key, n in sorted(counter.items()):
                clause, _, kind = key.partition(" ")
                out.append(Finding(kind, severity, clause, impl, f"explore [{model}]",
                                   evidence=f"{m.examples[prefix + key]} ({n} of {m.states} states)", reproduce=reproduce))
    return out


def _fault_findings(case: OpCase, where_findings: list[tuple[str, CrashFinding]], runs: int, impl: str,
                    reproduce: str) -> list[Finding]:
    counts: dict[tuple[str, ...], int] = {}
    firsts: dict[tuple[str, ...], Finding] = {}
    for where, cf in where_findings:
        f = cf.finding(impl=impl, op=f"{case.name} (in process)", syscall=where.split(" at call ")[-1], reproduce=reproduce)
        counts[f.key] = counts.get(f.key, 0) + 1
        firsts.setdefault(f.key, f)
    return [Finding(f.kind, f.severity, f.clause, f.impl, f.op, f.syscall, f"{f.evidence} ({counts[k]} of {runs} runs)",
                    f.reproduce, path=f.path) for k, f in firsts.items()]


def _explore(args: argparse.Namespace, cases: list[OpCase], impl: str, reproduce: str) -> tuple[list[Finding], int, dict[str, Any]]:
    models = [m for m in (args.models or ",".join(MODELS)).split(",") if m]
    unknown = set(models) - set(MODELS)
    if unknown:
        raise UsageError(f"unknown model(s) {', '.join(sorted(unknown))}; known: {', '.join(MODELS)}")
    from ..faults.campaigns import fault_case
    from ..faults.explorer import Explorer, exhaustive_size

    total = exhaustive_size(args.topics, args.max_ops) if args.exhaustive else len(cases)
    with progress("crash explore", total, quiet=quiet(args)) as bar:
        ex = Explorer(recover=not args.no_recover, models=models, advance=bar.advance)
        if args.exhaustive:
            result = ex.exhaustive(topics=args.topics, max_ops=args.max_ops)
        else:
            for case in cases:
                ex.explore_case(case)
            result = ex.result
    if args.exhaustive:
        print(f"bounded exhaustive: {args.topics} topics, sequences of <= {args.max_ops} ops")
    print(result.render())
    findings = _explorer_findings(result, impl, reproduce)
    executed = result.states
    if args.errors:
        for case in cases:
            report = fault_case(case, tuple(args.errno) or tuple(ERRNOS))
            findings += _fault_findings(case, report.findings, report.runs, impl, reproduce)
            executed += report.runs
            print(report.render())
    stats = {"seconds": result.seconds, "states": result.states,
             "models": {m: {"states": s.states, "distinct": s.distinct, "violating": s.violating,
                            "allowed": dict(s.allowed)} for m, s in result.models.items()}}
    return findings, executed, stats


def _export(spec: PeerSpec, reports: list[CaseReport], cases: list[OpCase], impl: str, reproduce: str,
            directory: Path | None) -> list[Finding]:
    from ..faults.outcomes import scenario_for

    by_name = {c.name: c for c in cases}
    out: list[Finding] = []
    for r in reports:
        case = by_name[r.case]
        before = case.files(spec.kind)
        for f, p in r.findings(impl, reproduce):
            if directory is not None:
                fault: dict[str, Any] = {"syscall": p.name, "index": p.index,
                                         "action": "kill" if p.fault == "SIGKILL" else "error"}
                if p.fault != "SIGKILL":
                    fault["errno"] = p.fault
                scenario = scenario_for(f, case, spec.kind, before=before, left=p.left,
                                        inject=p.inject, fault=fault)
                f = export(f, scenario, directory)
            out.append(f)
    return out


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except UsageError as e:
        sys.stdout.flush()
        print(f"memconform crash: {e}", file=sys.stderr)
        return EXIT_USAGE


def _run(args: argparse.Namespace) -> int:
    spec = PeerSpec.parse(args.impl)
    report = envelope.RunReport(command=envelope.argv())
    reproduce = " ".join(report.command)
    on_hazard = fail_on_hazard(args)
    if args.explore or args.exhaustive:
        if spec.kind != "python":
            raise UsageError("--explore runs the reference in process; use --impl python")
        cases = _cases(args.op, spec.kind)
        report.impls = [envelope.ImplInfo("python", "memconform-reference (in process)", "unknown")]
        findings, executed, stats = _explore(args, cases, "reference (in process)", reproduce)
        return _finish(args, report, dedupe(findings), executed, stats, on_hazard)
    from ..faults.strace import strace_unavailable

    reason = strace_unavailable()
    if reason:
        raise UsageError(reason)
    report.impls = preflight([spec], timeout=args.timeout)
    cases = offered(_cases(args.op, spec.kind, capabilities.of_impl(report.impls[0]).ops, spec.name), report.impls[0])
    if args.trace:
        return _trace(args, spec, cases, report, reproduce, on_hazard)
    from ..faults.campaigns import crash_runs, error_runs

    impl = f"{report.impls[0].name} {report.impls[0].version}"
    only: Callable[[int, Any], bool] | None = _points(args.points)

    def one(case: OpCase) -> CaseReport:
        def tick(n: int) -> None:
            bar.advance(n, note=case.name)

        if args.errors:
            errnos = tuple(args.errno) or tuple(ERRNOS)
            return error_runs(spec, case, errnos=errnos, only=only, timeout=args.timeout, advance=tick)
        return crash_runs(spec, case, only=only, timeout=args.timeout, with_recovery=not args.no_recover, advance=tick)

    with progress(f"crash points ({len(cases)} op cases)", None, quiet=quiet(args)) as bar:
        reports, interrupted = _run_cases(one, cases, args.parallel)
    runs = sum(len(r.points) for r in reports)
    for r in reports:
        print(r.render(args.verbose), flush=True)
    elapsed = report.finish("error").seconds
    print(f"\n{spec.name}: {len(reports)} op cases, {runs} runs in {elapsed:.1f} s "
          f"({runs / elapsed if elapsed else 0:.1f} runs/s), {sum(r.violations for r in reports)} with violations")
    findings = _export(spec, reports, cases, impl, reproduce, export_dir(args))
    stats = {"cases": len(reports), "runs": runs, "runs_per_second": round(runs / elapsed, 2) if elapsed else 0.0,
             "missed": sum(p.missed is not None for r in reports for p in r.points),
             "unavailable": {f"{r.case} #{p.index} {p.fault}": p.outage.seconds
                             for r in reports for p in r.points if p.outage is not None}}
    extra = {"cases": [
        {"impl": r.impl, "case": r.case, "mode": r.mode, "calls": r.calls, "seconds": r.seconds,
         "points": [{"index": p.index, "call": p.call, "fault": p.fault, "answer": p.answer, "missed": p.missed,
                     "allowed": sorted(p.verdict.allowed),
                     "unavailable": None if p.outage is None else p.outage.seconds,
                     "lock_left": p.outage is not None} for p in r.points]}
        for r in reports]}
    return _finish(args, report, findings, runs, stats, on_hazard, extra, interrupted=interrupted)


def _run_cases(one: Callable[[OpCase], CaseReport], cases: list[OpCase], parallel: int) -> tuple[list[CaseReport], bool]:
    """Every case's report in case order; on Ctrl-C the cases that finished, and True (the
    queued ones are cancelled, the running one ends with its killed driver)."""
    done: dict[int, CaseReport] = {}
    interrupted = False
    pool = ThreadPoolExecutor(max_workers=max(1, parallel))
    futures = {pool.submit(one, case): i for i, case in enumerate(cases)}
    try:
        for future in as_completed(futures):
            done[futures[future]] = future.result()
    except KeyboardInterrupt:
        interrupted = True
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        work_done()
    return [done[i] for i in sorted(done)], interrupted or stopping()


def _trace(args: argparse.Namespace, spec: PeerSpec, cases: list[OpCase], report: envelope.RunReport,
           reproduce: str, on_hazard: bool) -> int:
    """``--trace``: one recording per case, every model's states judged, recovery on request."""
    from ..faults.trace_run import findings_of, run_traced
    from ..faults.trace_states import TRACE_MODELS

    models = [m for m in (args.models or ",".join(TRACE_MODELS)).split(",") if m]
    unknown = set(models) - set(TRACE_MODELS)
    if unknown:
        raise UsageError(f"unknown model(s) {', '.join(sorted(unknown))}; known: {', '.join(TRACE_MODELS)}")
    impl = f"{report.impls[0].name} {report.impls[0].version}"
    camp = run_traced(spec, cases, models, impl=impl, recover=args.recover, workers=args.workers,
                      granularity=args.granularity, timeout=args.timeout, quiet=bool(getattr(args, "quiet", False)))
    print(camp.render(), flush=True)
    findings = findings_of(camp, cases, spec.kind, reproduce, export_dir(args))
    executed = camp.checked + len(camp.recovered)
    extra = {"traces": [{"case": c.name, "effects": [o.call for o in c.trace.ops],
                         "models": {m: {"states": t.states, "distinct": t.distinct, "violating": t.violating,
                                        "allowed": dict(t.allowed)} for m, t in c.models.items()}}
                        for c in camp.checks]}
    return _finish(args, report, dedupe(findings), executed, camp.stats(), on_hazard, extra)


def _finish(args: argparse.Namespace, report: envelope.RunReport, findings: list[Finding], executed: int,
            stats: dict[str, Any], on_hazard: bool, extra: dict[str, Any] | None = None, *,
            interrupted: bool = False) -> int:
    for f in findings:
        print(f.line() + (f" -> {f.regression}" if f.regression else ""))
    run_verdict = verdict(findings, executed=executed, fail_on_hazard=on_hazard)
    report.findings = findings
    report.stats = stats
    report.finish(run_verdict)
    if interrupted:
        return interrupted_end(args, report, extra)
    weak = any(f.severity == "weakness" for f in findings)  # a pass may carry weaknesses SPEC accepts
    what = {"pass": "only weaknesses SPEC accepts" if weak else "no finding", "hazard": "hazards SPEC allows (exit 0 unless --fail-on hazard)",
            "fail": "violations" if any(f.severity == "violation" for f in findings) else "hazards (--fail-on hazard)",
            "error": "nothing ran"}.get(run_verdict, run_verdict)
    print(f"{summary_line(findings)}; verdict {run_verdict}: {what}")
    publish(args, report, extra)
    return exit_code(run_verdict, fail_on_hazard=on_hazard)
