"""``make nemesis-campaign``: timed nemesis runs against the real peers, then a summary.

Every schedule (one family per run, and ``all``) runs on the shared store against pi with the
reference, OpenCode with the reference, all three, and the reference alone — the same
schedule (seed, plan) for each, so what the peers add is visible.  Rounds repeat with new
seeds until ``--until`` (a wall-clock deadline); then the distinct findings are replayed
(``nemesis_export.replay``: k of n) until ``--replay-until``.  Every finding is exported as a
nemesis regression; ``summary.md`` and ``summary.json`` land in the campaign's folder under
``reports/``: per finding its kind, severity, families, rate per nemesis-minute, regression
file and replay count — peers and reference alone apart.

Run as ``python -m memconform.harness.nemesis_campaign`` (the make target does), never in
the default test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..drivers.peers import ENV_OPENCODE, ENV_PI, PeerSpec, preflight
from ..oracles.findings import Finding
from ..reports.progress import progress
from . import export as nx

REF_ALONE = "reference alone"
REPLAY_SECONDS: dict[str, float] = {}
"""Wall seconds of replay runs per mix (they are nemesis runs too)."""


@dataclass
class Run:
    config: str
    family: str
    seed: int
    seconds: float = 0.0
    ops: int = 0
    faults: int = 0
    findings: list[Finding] = field(default_factory=list)
    history: str = ""
    error: str = ""


def configs() -> dict[str, list[str]]:
    """The implementation mixes, from the peer env vars (a missing peer drops its mixes)."""
    pi, oc = os.environ.get(ENV_PI, ""), os.environ.get(ENV_OPENCODE, "")
    out: dict[str, list[str]] = {}
    if pi:
        out["pi + reference"] = ["python", f"pi:{pi}"]
    if oc:
        out["OpenCode + reference"] = ["python", f"opencode:{oc}"]
    if pi and oc:
        out["all three"] = ["python", f"pi:{pi}", f"opencode:{oc}"]
    out[REF_ALONE] = ["python"]
    return out


def _deadline(text: str) -> float:
    """``HH:MM`` UTC today (or tomorrow, if past) as a ``time.time()`` value; ``+N`` minutes."""
    if text.startswith("+"):
        return time.time() + 60 * float(text[1:])
    hh, mm = (int(x) for x in text.split(":"))
    now = datetime.now(UTC)
    t = now.replace(hour=hh, minute=mm, second=0, microsecond=0)
    if t < now:
        t += timedelta(days=1)
    return t.timestamp()


def one_run(
    cfg: str, specs: list[str], family: str, seed: int, args: argparse.Namespace, out: Path,
    labels: dict[str, str],
) -> Run:
    from .nemesis import make_schedule
    from .run import run_nemesis

    run = Run(cfg, family, seed)
    peers = [PeerSpec.parse(s) for s in specs]
    schedule = make_schedule(seed, [family], interval=args.interval, time_limit=args.run_seconds,
                             writers=args.writers, shared=True)
    try:
        result = run_nemesis(peers, schedule, timeout=args.timeout, check_budget=args.check_budget,
                             settle_limit=args.settle_limit)
    except Exception as e:  # one broken run must not end the campaign: it is reported
        run.error = f"{type(e).__name__}: {e}"
        (out / "errors.log").open("a").write(f"{cfg} {family} {seed}\n{traceback.format_exc()}\n")
        return run
    run.seconds = result.seconds
    run.ops = result.total_ops
    run.faults = sum(c["effective"] for c in result.fault_counts().values())
    slug = "".join(c if c.isalnum() else "-" for c in cfg.lower())
    hist = out / "histories" / f"{slug}-{family}-{seed}.jsonl"
    hist.parent.mkdir(parents=True, exist_ok=True)
    result.history.save(hist)
    run.history = str(hist)
    reproduce = (f"memconform interop {' '.join('--impl ' + s for s in specs)} --shared --writers {args.writers} "
                 f"--seed {seed} --nemesis {family} --nemesis-interval {args.interval:g} --time-limit {args.run_seconds:g}")
    found = result.findings(labels, reproduce)
    run.findings = [nx.export(f, result, directory=out / "regressions", runs_seen=f"{cfg}, {family}, seed {seed}",
                              labels=labels)
                    for f in found]
    return run


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="nemesis-campaign", description=__doc__.split("\n\n")[0])
    p.add_argument("--until", default="+30", help="stop starting runs at HH:MM UTC or +MINUTES (default +30)")
    p.add_argument("--replay-until", default="", help="stop replaying at HH:MM UTC or +MINUTES after the runs")
    p.add_argument("--replay-runs", type=int, default=3)
    p.add_argument("--run-seconds", type=float, default=30.0)
    p.add_argument("--interval", type=float, default=1.0)
    p.add_argument("--writers", type=int, default=6)
    p.add_argument("--timeout", type=float, default=20.0)
    p.add_argument("--check-budget", type=float, default=10.0)
    p.add_argument("--settle-limit", type=float, default=30.0)
    p.add_argument("--families", default="", help="comma list (default: every family, then all)")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--replay-only", type=Path, metavar="DIR",
                   help="replay the findings of an earlier campaign folder and rewrite its summary")
    p.add_argument("--merge", type=Path, action="append", default=[], metavar="DIR",
                   help="merge the summaries of these campaign folders into --out (repeatable)")
    p.add_argument("--regressions", type=Path, default=None, metavar="DIR",
                   help="with --merge: the folder the merged rows' regression files are in")
    args = p.parse_args(argv)
    if args.merge:
        if args.out is None:
            p.error("--merge needs --out")
        merge(args.merge, args.out, args.regressions)
        return 0
    if args.replay_only is not None:
        return replay_summary(args.replay_only, args)
    from .nemesis import FAMILIES

    families = [f for f in args.families.split(",") if f] or [*FAMILIES, "all"]
    stop = _deadline(args.until)
    stop_replay = _deadline(args.replay_until) if args.replay_until else stop + 8 * 60
    out = args.out or Path("reports") / f"nemesis-campaign-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"
    out.mkdir(parents=True, exist_ok=True)
    mixes = configs()
    every = sorted({s for specs in mixes.values() for s in specs})
    labels = {i.spec: f"{i.name} {i.version}" for i in preflight([PeerSpec.parse(s) for s in every], timeout=args.timeout)}
    runs: list[Run] = []
    rnd = 0
    with progress("nemesis campaign runs", None) as bar:
        while time.time() < stop:
            for k, family in enumerate(families):
                seed = 1000 * rnd + k + 1
                for cfg, specs in mixes.items():
                    if time.time() >= stop:
                        break
                    run = one_run(cfg, specs, family, seed, args, out, labels)
                    runs.append(run)
                    bar.advance(note=f"{cfg} {family} seed {seed}: {len(run.findings)} findings{' ERROR' if run.error else ''}")
                    _save(out, runs, {}, args)
            rnd += 1
    replays = replay_findings(runs, mixes, labels, args, stop_replay)
    _save(out, runs, replays, args)
    print(f"summary: {out / 'summary.md'}")
    return 0


def _key(f: Finding) -> tuple[str, str, str]:
    """One row per kind, severity and set of implementations (in any order)."""
    return (f.kind, f.severity, ", ".join(sorted(x.strip() for x in f.impl.split(","))))


def replay_findings(
    runs: list[Run], mixes: dict[str, list[str]], labels: dict[str, str], args: argparse.Namespace, stop: float,
) -> dict[str, str]:
    """Replay one regression per distinct finding (violations first), k of n, until ``stop``."""
    first: dict[tuple[str, tuple[str, str, str]], Finding] = {}
    for run in runs:
        for f in run.findings:
            first.setdefault((run.config, _key(f)), f)
    order = sorted(first.items(), key=lambda kv: (kv[1].severity != "violation", kv[0]))
    out: dict[str, str] = {}
    with progress("nemesis campaign replays", len(order)) as bar:
        for (cfg, _), f in order:
            if time.time() >= stop or f.regression in out:
                bar.advance(note="skipped (time)" if time.time() >= stop else "done")
                continue
            try:
                reg = nx.load(Path(f.regression))
                peers = [PeerSpec.parse(s) for s in mixes[cfg]]
                done = nx.replay(reg, peers, runs=args.replay_runs, labels=labels, timeout=args.timeout,
                                 check_budget=args.check_budget)
                out[f.regression] = f"{sum(r.reproduced for r in done)} of {len(done)}"
                REPLAY_SECONDS[cfg] = REPLAY_SECONDS.get(cfg, 0.0) + sum(r.seconds for r in done)
            except Exception as e:  # reported, not fatal
                out[f.regression] = f"replay failed: {type(e).__name__}: {e}"
            bar.advance(note=f"{cfg} {f.kind}: {out[f.regression]}")
    return out


def regroup(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of an older summary merged per kind, severity and implementation set."""
    merged: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in rows:
        impl = ", ".join(sorted(x.strip() for x in r["impl"].split(",")))
        m = merged.setdefault((r["kind"], r["severity"], impl), {**r, "impl": impl, "count": 0, "per_minute": 0.0,
                                                                  "families": [], "mixes": [], "regressions": []})
        m["count"] += r["count"]
        m["per_minute"] = round(m["per_minute"] + r["per_minute"], 2)
        m["families"] = sorted({*m["families"], *r["families"]})
        m["mixes"] = sorted({*m["mixes"], *r["mixes"]})
        m["regressions"] = [*m["regressions"], *r.get("regressions", [r["regression"]])]
    return sorted(merged.values(), key=lambda x: (x["severity"] != "violation", x["kind"], x["impl"]))


def merge(folders: list[Path], out: Path, regressions: Path | None = None) -> dict[str, Any]:
    """One summary of several campaign folders (runs interrupted and resumed, other seeds):
    minutes and counts added, rows merged per kind, severity and implementation set, rates
    per minute of the merged minutes; regression paths into ``regressions`` when given."""
    parts = [json.loads((f / "summary.json").read_text()) for f in folders]
    mixes: dict[str, dict[str, Any]] = {}
    for d in parts:
        for name, m in d["mixes"].items():
            t = mixes.setdefault(name, {"runs": 0, "minutes": 0.0, "ops": 0, "faults": 0, "errors": 0, "families": []})
            for k in ("runs", "ops", "faults", "errors"):
                t[k] += m[k]
            t["minutes"] = round(t["minutes"] + m["minutes"], 2)
            t["families"] = sorted({*t["families"], *m["families"]})
    data: dict[str, Any] = {
        "mixes": mixes,
        "peer_minutes": round(sum(d["peer_minutes"] for d in parts), 2),
        "reference_minutes": round(sum(d["reference_minutes"] for d in parts), 2),
        "findings": {}, "errors": [e for d in parts for e in d["errors"]],
        "replay_minutes": {}, "merged_from": [str(f) for f in folders],
    }
    for group, minutes in (("peers", data["peer_minutes"]), ("reference alone", data["reference_minutes"])):
        rows = regroup([r for d in parts for r in d["findings"].get(group, [])])
        for r in rows:
            r["per_minute"] = round(r["count"] / minutes, 2) if minutes else 0.0
            if regressions is not None:
                r["regressions"] = sorted({str(regressions / Path(x).name) for x in r["regressions"]})
            r["regression"] = r["regressions"][0]
            r["replay"] = "not replayed"
        data["findings"][group] = rows
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    (out / "summary.md").write_text(render(data))
    return data


def replay_summary(folder: Path, args: argparse.Namespace) -> int:
    """Replay one regression per row of ``folder``'s summary (violations first, each against
    the mix that recorded its file) until ``--replay-until``; rewrite the summary with k of n."""
    data = json.loads((folder / "summary.json").read_text())
    stop = _deadline(args.replay_until or "+10")
    mixes = configs()
    every = sorted({s for specs in mixes.values() for s in specs})
    labels = {i.spec: f"{i.name} {i.version}" for i in preflight([PeerSpec.parse(s) for s in every], timeout=args.timeout)}
    seconds: dict[str, float] = defaultdict(float)
    for group in data["findings"]:
        data["findings"][group] = regroup(data["findings"][group])
    rows = [r for group in data["findings"].values() for r in group]
    with progress("nemesis campaign replays", len(rows)) as bar:
        for r in sorted(rows, key=lambda x: x["severity"] != "violation"):
            if time.time() >= stop:
                r["replay"] = "not replayed (time)"
                bar.advance(note="skipped (time)")
                continue
            try:
                reg = nx.load(Path(r["regressions"][0]))
                cfg = str(reg.finding.get("seen", "")).split(",")[0] or r["mixes"][0]
                specs = mixes.get(cfg, reg.specs)  # the mix that recorded this file
                done = nx.replay(reg, [PeerSpec.parse(spec) for spec in specs], runs=args.replay_runs, labels=labels,
                                 timeout=args.timeout, check_budget=args.check_budget)
                r["replay"] = f"{sum(x.reproduced for x in done)} of {len(done)} ({cfg})"
                seconds[cfg] += sum(x.seconds for x in done)
            except Exception as e:  # reported, not fatal
                r["replay"] = f"replay failed: {type(e).__name__}: {e}"
            bar.advance(note=f"{r['kind']}: {r['replay']}")
    data["replay_minutes"] = {k: round(v / 60, 2) for k, v in seconds.items()}
    (folder / "summary.json").write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    (folder / "summary.md").write_text(render(data))
    print(f"summary: {folder / 'summary.md'}")
    return 0


def _save(out: Path, runs: list[Run], replays: dict[str, str], args: argparse.Namespace) -> None:
    data = summarise(runs, replays)
    (out / "summary.json").write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    (out / "summary.md").write_text(render(data))


def summarise(runs: list[Run], replays: dict[str, str]) -> dict[str, Any]:
    """Minutes, ops and faults per mix; per (mix group, finding kind/severity/impl) the families
    that trigger it, how often per nemesis-minute, its regression file and replay count."""
    mixes: dict[str, dict[str, Any]] = defaultdict(lambda: {"runs": 0, "minutes": 0.0, "ops": 0, "faults": 0,
                                                           "errors": 0, "families": set()})
    for r in runs:
        m = mixes[r.config]
        m["runs"] += 1
        m["minutes"] += r.seconds / 60
        m["ops"] += r.ops
        m["faults"] += r.faults
        m["errors"] += bool(r.error)
        m["families"].add(r.family)
    groups = {"peers": [r for r in runs if r.config != REF_ALONE], "reference alone": [r for r in runs if r.config == REF_ALONE]}
    table: dict[str, list[dict[str, Any]]] = {}
    for group, rs in groups.items():
        minutes = sum(r.seconds for r in rs) / 60
        rows: dict[tuple[str, str, str], dict[str, Any]] = {}
        for r in rs:
            for f in r.findings:
                row = rows.setdefault(_key(f), {"kind": f.kind, "severity": f.severity, "impl": _key(f)[2], "count": 0,
                                                "families": set(), "mixes": set(), "regression": f.regression,
                                                "example": f.evidence[:200]})
                row["count"] += 1
                row["families"].add(r.family)
                row["mixes"].add(r.config)
        table[group] = [
            {**row, "families": sorted(row["families"]), "mixes": sorted(row["mixes"]),
             "per_minute": round(row["count"] / minutes, 2) if minutes else 0.0,
             "replay": replays.get(row["regression"], "not replayed")}
            for row in sorted(rows.values(), key=lambda x: (x["severity"] != "violation", x["kind"], x["impl"]))
        ]
    return {
        "mixes": {k: {**v, "minutes": round(v["minutes"], 2), "families": sorted(v["families"])} for k, v in mixes.items()},
        "peer_minutes": round(sum(r.seconds for r in groups["peers"]) / 60, 2),
        "reference_minutes": round(sum(r.seconds for r in groups["reference alone"]) / 60, 2),
        "findings": table,
        "errors": [f"{r.config} {r.family} {r.seed}: {r.error}" for r in runs if r.error],
        "replay_minutes": {k: round(v / 60, 2) for k, v in REPLAY_SECONDS.items()},
    }


def render(data: dict[str, Any]) -> str:
    lines = ["# Nemesis campaign", "",
             f"Nemesis minutes against the peers: {data['peer_minutes']}; the reference alone under the same "
             f"schedules: {data['reference_minutes']}; replay runs (wall minutes, per mix): "
             f"{data['replay_minutes'] or 'none'}.", "",
             "| mix | runs | minutes | ops | faults | faults/min | families | errors |", "|---|---|---|---|---|---|---|---|"]
    for name, m in data["mixes"].items():
        rate = m["faults"] / m["minutes"] if m["minutes"] else 0.0
        lines.append(f"| {name} | {m['runs']} | {m['minutes']} | {m['ops']} | {m['faults']} | {rate:.1f} | "
                     f"{', '.join(m['families'])} | {m['errors']} |")
    for group, rows in data["findings"].items():
        lines += ["", f"## Findings: {group}", ""]
        if not rows:
            lines.append("none")
            continue
        lines += ["| kind | severity | impl | families | mixes | count | per min | regression | replay | example |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            ex = r["example"].replace("|", "\\|").replace("\n", " ")
            regs = ", ".join(Path(x).name for x in r.get("regressions", [r["regression"]]))
            lines.append(f"| {r['kind']} | {r['severity']} | {r['impl']} | {', '.join(r['families'])} | "
                         f"{', '.join(r['mixes'])} | {r['count']} | {r['per_minute']} | {regs} | "
                         f"{r['replay']} | {ex} |")
    if data["errors"]:
        lines += ["", "## Runs that failed", "", *(f"- {e}" for e in data["errors"])]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
