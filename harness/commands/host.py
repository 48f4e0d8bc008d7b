"""``memconform host``: the host scenarios on a real host with an extension loaded.

``--impl pi-host:EXTDIR`` runs pi (``--pi`` picks the pinned version, 1.6.0 by default) with
EXTDIR's ``index.ts`` loaded against the scripted model, and judges every scenario of
``scenarios/hosts`` (or ``--scenarios``) against the reference's session model on the same
script (``harness.hosts``).  A host that is not installed is one line naming the ``python -m memconform.harness.hosts.cache install`` command (a wheel has no Makefile)
(exit 2); a scenario the host could not finish is an error outcome, never a pass; a failing
scenario is exported as a replayable host scenario.
"""

from __future__ import annotations

import argparse
import fnmatch
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..gate.regressions import DEFAULT_DIR, export, file_stem
from ..gate.scenarios import SCENARIOS_DIR, Scenario, discover, load_file
from ..hosts import offline
from ..hosts.cache import (
    DEFAULT_PI,
    HOSTS,
    OPENCODE_VERSION,
    HostMissing,
    node_bin_dir,
    opencode_binary,
    opencode_plugin_deps,
    pi_cli,
)
from ..hosts.cross import is_cross, run_cross
from ..hosts.run import HostOutcome, HostSpec, run_scenario
from ..hosts.script import is_host_scenario
from ..oracles.findings import VIOLATION, Finding
from ..reports.envelope import ImplInfo
from .common import (
    SetupError,
    add_quiet_argument,
    add_report_arguments,
    conclude,
    export_dir,
    fail_on_hazard,
    new_report,
    positive_float,
)

NAME = "host"
HELP = "run host scenarios on a real host (pi) with an extension loaded, against a scripted model"
KINDS = ("pi-host", "opencode-host")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--impl", action="append", default=[], metavar="KIND:PATH",
                   help="pi-host:EXTDIR (the folder holding index.ts) | opencode-host:PLUGIN (repeatable)")
    p.add_argument("--pi", choices=[h for h in HOSTS if h.startswith("pi-")], default=DEFAULT_PI,
                   help="the pinned pi the pi-host runs (default: %(default)s)")
    p.add_argument("--scenarios", type=Path, action="append", default=[], metavar="PATH",
                   help="a host scenario file or folder (default: scenarios/hosts)")
    p.add_argument("--run", action="append", default=[], metavar="GLOB", help="only scenario ids matching")
    p.add_argument("--skip", action="append", default=[], metavar="GLOB", help="leave out scenario ids matching")
    p.add_argument("--timeout", type=positive_float, default=90.0, help="seconds a host may take per step")
    p.add_argument("--keep", action="store_true", help="keep each sandbox (host stderr, store) for inspection")
    p.add_argument("--offline", action="store_true",
                   help="run inside a network namespace with only loopback (unshare -n): any other address fails")
    add_report_arguments(p)
    p.set_defaults(export=DEFAULT_DIR / "hosts")
    add_quiet_argument(p)


def parse_impl(text: str, pi: str) -> HostSpec:
    kind, sep, path = text.partition(":")
    if not sep or kind not in KINDS or not path:
        raise SetupError(f"--impl {text!r}: expected pi-host:EXTDIR or opencode-host:PLUGIN")
    target = Path(path)
    if target.is_dir():
        target = target / "index.ts"
    if not target.is_file():
        raise SetupError(f"--impl {text!r}: no extension at {target}")
    try:
        if kind == "opencode-host":
            opencode_binary()
            opencode_plugin_deps()
            return HostSpec(kind, target.resolve(), HOSTS[f"opencode-{OPENCODE_VERSION}"].name)
        node_bin_dir(HOSTS[pi])
        pi_cli(HOSTS[pi])
    except HostMissing as e:
        raise SetupError(str(e)) from None
    return HostSpec(kind, target.resolve(), pi)


def scenarios(paths: list[Path], run: list[str], skip: list[str]) -> list[Scenario]:
    found: list[Scenario] = []
    for path in paths or [SCENARIOS_DIR / "hosts"]:
        if path.is_dir():
            found += [sc for sc in discover(path) if is_host_scenario(sc)]
        else:
            sc = load_file(path)
            if not is_host_scenario(sc):
                raise SetupError(f"{path}: not a host scenario (no 'host' block)")
            found.append(sc)
    return [sc for sc in found
            if (not run or any(fnmatch.fnmatchcase(sc.id, g) for g in run))
            and not any(fnmatch.fnmatchcase(sc.id, g) for g in skip)]


def run(args: argparse.Namespace) -> int:
    if not args.impl:
        raise SetupError("name a host: --impl pi-host:EXTDIR")
    if args.offline and not offline.inside():
        try:
            return offline.reexec(list(args.argv))
        except offline.NoNamespace as e:
            raise SetupError(f"--offline: {e}") from None
    if offline.inside():
        try:
            print(f"host: offline: only loopback ({offline.PROBE_ADDRESS[0]} unreachable: {offline.probe()})", flush=True)
        except offline.NoNamespace as e:
            raise SetupError(f"--offline: {e}") from None
    specs = [parse_impl(i, args.pi) for i in args.impl]
    selected = scenarios(list(args.scenarios), list(args.run), list(args.skip))
    if not selected:
        raise SetupError("no host scenario selected")
    report = new_report(args, [ImplInfo(s.kind + ":" + str(s.path), s.kind, s.host) for s in specs])
    found: list[Finding] = []
    outcomes: list[tuple[HostSpec, HostOutcome]] = []
    pis = [s for s in specs if s.kind == "pi-host"]
    ocs = [s for s in specs if s.kind == "opencode-host"]
    for spec in specs:
        for sc in selected:
            if pis and ocs and is_cross(sc):
                continue  # runs once, for the pair, below (not a skip row per host)
            o = run_scenario(spec, sc, timeout=args.timeout, keep=args.keep)
            o.findings = _exported(o, export_dir(args))
            outcomes.append((spec, o))
            found += o.findings
            if not args.quiet:
                print(f"{_label(o, args):6} {spec.kind} {spec.host} {sc.id} ({o.seconds:.1f} s){' ' + o.reason if o.reason else ''}",
                      flush=True)
                for f in o.findings:
                    print(f"      {f.line()}", flush=True)
    for sc in (sc for sc in selected if is_cross(sc)) if pis and ocs else ():
        o = run_cross(pis[0], ocs[0], sc, timeout=args.timeout)
        o.findings = _exported(o, export_dir(args))
        outcomes.append((pis[0], o))
        found += o.findings
        if not args.quiet:
            print(f"{_label(o, args):6} cross {pis[0].host} + {ocs[0].host} {sc.id} ({o.seconds:.1f} s)"
                  f"{' ' + o.reason if o.reason else ''}", flush=True)
            for f in o.findings:
                print(f"      {f.line()}", flush=True)
    for spec, o in outcomes:
        if o.status == "error":  # ran, but judged nothing: never a green
            found.append(Finding("host-error", VIOLATION, "", spec.label, o.scenario.id, evidence=o.reason))
    executed = sum(1 for _, o in outcomes if o.status in ("pass", "hazard", "fail"))
    report.stats = _stats(outcomes)
    print(f"host: {report.stats['passed']} passed, {report.stats['hazards']} with hazards only, "
          f"{report.stats['failed']} failed, "
          f"{report.stats['errors']} errors, {report.stats['skipped']} skipped")
    extra: dict[str, Any] = {"scenarios": [{"impl": s.label, "id": o.scenario.id, "status": o.status,
                                            "seconds": round(o.seconds, 2), "reason": o.reason} for s, o in outcomes]}
    return conclude(args, report, found, executed=executed, extra=extra,
                    nothing_ran="" if executed else "no host scenario ran: " + "; ".join({o.reason for _, o in outcomes})[:300])


def _exported(o: HostOutcome, directory: Path | None) -> list[Finding]:
    """The outcome's findings, all pointing at one exported replay of its scenario."""
    key = next((f for f in o.findings if f.severity == VIOLATION or f.kind == "host-stuck"), None)
    if key is None or directory is None:
        return o.findings
    data = {k: v for k, v in o.scenario.data.items() if k not in ("id", "description", "tags", "regression")}
    target = (directory / (file_stem(key) + ".json")).resolve()
    shown = f"scenarios/{target.relative_to(SCENARIOS_DIR.resolve())}" if target.is_relative_to(SCENARIOS_DIR.resolve()) else target
    again = f"memconform host --impl {key.impl.split(' ', 1)[0]}:… --scenarios {shown}"
    path = export(replace(key, reproduce=again), data, directory).regression
    return [replace(f, regression=path, reproduce=again) for f in o.findings]


def _label(o: HostOutcome, args: argparse.Namespace) -> str:
    """The outcome's line label: HAZARD gates (FAIL) only under ``--fail-on hazard``, so a
    FAIL line always comes with exit 1."""
    return "FAIL" if o.status == "hazard" and fail_on_hazard(args) else o.status.upper()


def _stats(outcomes: list[tuple[HostSpec, HostOutcome]]) -> dict[str, Any]:
    count = {s: sum(1 for _, o in outcomes if o.status == s) for s in ("pass", "hazard", "fail", "error", "skip")}
    ran = [o.seconds for _, o in outcomes if o.status in ("pass", "hazard", "fail")]
    return {"passed": count["pass"], "hazards": count["hazard"], "failed": count["fail"], "errors": count["error"], "skipped": count["skip"],
            "seconds_per_scenario": round(sum(ran) / len(ran), 2) if ran else 0.0}
