"""``memconform report``: work on JSON reports already written (no implementation runs).

``merge R1.json R2.json …`` joins the shards of one ``conformance --shard K/N`` matrix into
the report the unsharded run would write, and gates on it (exit 1 on a violation), so a CI
merge job is the one required check.  ``html R.json`` renders any command's JSON report as
the self-contained HTML page; ``costs R.json`` writes the cost file ``--shard`` balances by;
``deviations R.json`` prints the rows of a run's failures exactly as ``--deviations FILE`` reads
them back (issue 30 item 7), so the first difference and the differing places are copied, never
guessed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..drivers.validation import first_error
from ..gate import deviations, shards
from ..oracles.findings import exit_code
from ..reports import html as html_report
from ..reports import markdown as markdown_report
from ..reports import merge
from ..reports.envelope import SCHEMA_PATH
from .common import SetupError, wrote

NAME = "report"
HELP = ("merge shard reports (merge), render a JSON report as HTML (html), record scenario costs (costs), "
        "print a run's failures as deviation rows (deviations)")
DEFAULT_REASON = "interop: TODO say why (a shared-store row's reason starts harmless: or interop:)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", required=True, metavar="{merge,html,costs,deviations}", parser_class=type(p))
    m = sub.add_parser("merge", help="join the JSON reports of a sharded conformance run and gate on the result")
    m.add_argument("reports", type=Path, nargs="+", metavar="REPORT.json", help="one JSON report per shard")
    m.add_argument("--json", type=Path, metavar="PATH", help="write the merged JSON report")
    m.add_argument("--junit", type=Path, metavar="PATH", help="write the merged JUnit XML report")
    m.add_argument("--html", type=Path, metavar="PATH", help="write the merged HTML report")
    m.add_argument("--allow-partial", action="store_true",
                   help="merge even when a shard is missing, given twice or interrupted (the report says so)")
    h = sub.add_parser("html", help="render a JSON report as a self-contained HTML page")
    h.add_argument("report", type=Path, metavar="REPORT.json")
    h.add_argument("--out", type=Path, metavar="PATH", help="HTML file (default: REPORT.html beside the JSON)")
    c = sub.add_parser("costs", help="write the per-scenario cost file --shard balances by")
    c.add_argument("report", type=Path, metavar="REPORT.json", help="an unsharded conformance JSON report")
    c.add_argument("--out", type=Path, required=True, metavar="PATH", help="cost file to write")
    d = sub.add_parser("deviations", help="print the rows of a run's failures in the form --deviations FILE accepts")
    d.add_argument("report", type=Path, metavar="REPORT.json", help="a conformance JSON report")
    d.add_argument("--reason", default=DEFAULT_REASON, help="the reason cell of every row (default: a TODO to replace)")


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise SetupError(f"{path}: not JSON (line {e.lineno}: {e.msg})") from None
    if not isinstance(data, dict) or "verdict" not in data:
        raise SetupError(f"{path}: not a memconform JSON report")
    return data


def _deviations(args: argparse.Namespace) -> int:
    """The header and one row per failure on stdout (a whole ``--deviations`` file); listed
    scenarios that now pass on stderr, since their rows must go."""
    data = _load(args.report)
    if "scenarios" not in data:
        raise SetupError(f"{args.report}: not a conformance report (no scenarios)")
    if "|" in args.reason or not args.reason.strip():
        raise SetupError("--reason: one non-empty cell, without '|'")
    try:
        rows, passing = deviations.rows_from_report(data, args.reason.strip())
    except ValueError as e:
        raise SetupError(f"{args.report}: {e}") from None
    print(deviations.HEADER)
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(row)
    if passing:
        print(f"{len(passing)} listed scenarios now pass; remove their rows: {', '.join(passing)}", file=sys.stderr)
    print(f"{len(rows)} rows", file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    if args.action == "html":
        out = args.out or args.report.with_suffix(".html")
        wrote(args, "HTML report", html_report.write(out, _load(args.report)))
        return 0
    if args.action == "deviations":
        return _deviations(args)
    if args.action == "costs":
        args.out.parent.mkdir(parents=True, exist_ok=True)
        costs = shards.costs_from_report(_load(args.report))
        args.out.write_text(json.dumps(costs, indent=0) + "\n", encoding="utf-8")
        wrote(args, f"costs of {len(costs['seconds'])} scenarios", args.out)
        return 0
    datas = [_load(p) for p in args.reports]
    try:
        data = merge.merge(datas, [str(p) for p in args.reports], allow_partial=args.allow_partial)
    except merge.MergeError as e:
        raise SetupError(str(e)) from None
    error = first_error(SCHEMA_PATH, data)
    if error is not None:  # pragma: no cover - a merge bug, not the user's
        raise SetupError(f"merged report breaks the report schema at {error[0]}: {error[1]}")
    stats = data["stats"]
    print(f"merged {len(datas)} reports: {stats['scenarios']} scenarios, {stats['passed']} passed, "
          f"{stats['failed'] + stats['errors'] + stats['xpass']} failed, {stats['xfail']} expected failures, "
          f"{stats['skipped']} skipped; verdict {data['verdict']}")
    for problem in data.get("partial", []):
        print(f"partial: {problem}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        wrote(args, "JSON report", args.json)
    if args.junit:
        wrote(args, "JUnit report", merge.write_junit(data, args.junit))
    if args.html:
        wrote(args, "HTML report", html_report.write(args.html, data))
    summary_path = markdown_report.step_summary(data)
    if summary_path is not None:
        wrote(args, "step summary", summary_path)
    return exit_code(data["verdict"], fail_on_hazard=merge.gates_hazard(data))
