"""``memconform fuzz``: run the state machines against one implementation for a time budget.

Every machine either drives the implementation ``--impl`` names or is refused for it with a
one-line reason (``harness.machines.bind``), and the table says which: ``ran against`` is the
implementation as it named itself in ``hello`` (``peers.preflight``), never the reference
standing in for a peer.  Today ``store_model`` drives ``python`` in process and ``pi:``
through its driver; ``differential`` compares the reference with any peer; ``rollback``,
``lock_holders`` and ``session`` need the reference's in-process seams and are refused for
peers, each naming the command that does attack peers; ``shared_store`` drives any co-writer
(OpenCode included, the reference through its server process) judged by the shared-store
contract; ``lock_protocol`` runs any implementation's real writers under the syscall
scheduler, and reports what it finds with the nemesis checks' own kind and severity.
``--impl pi-host:EXTDIR`` / ``opencode-host:PLUGIN`` name an extension in its real
host: only ``session`` drives one (host actions, ``harness.hosts.machine``), under the
``host`` profile unless one is named.  Machines run in batches of one
profile's worth of examples, round robin, each batch with a fresh seed, until the budget is
spent (checked between batches).  Each failure is a ``Finding`` with its seed and rerun
command, its shrunk example exported as a regression scenario (``--export``, default
``scenarios/regressions/`` in a clone, ``./memconform-regressions`` when installed).  A run in
which no machine ran is a usage error (exit 2).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from ..drivers import capabilities
from ..drivers.interrupt import stopping, work_done
from ..drivers.peers import DriverError, PeerSpec, PeerUnavailable, preflight
from ..hosts.cache import DEFAULT_PI
from ..hosts.run import HostSpec
from ..hosts.script import HOST_KINDS
from ..machines import IN_PROCESS, MACHINES, bind, load, profiles, unbind
from ..machines.base import EXPORT_NOTE, Stats, run_machine
from ..machines.strategies import UNICODE_GAP_ENV
from ..oracles.findings import (
    EXIT_CODES_HELP,
    EXIT_USAGE,
    VIOLATION,
    Finding,
    exit_code,
    summary_line,
    verdict,
)
from ..reports import envelope
from ..reports.progress import progress
from .common import (
    add_impl_arguments,
    add_quiet_argument,
    add_report_arguments,
    export_dir,
    fail_on_hazard,
    interrupted_end,
    non_negative_int,
    positive_float,
    publish,
)
from .host import parse_impl

NAME = "fuzz"
HELP = "run the Hypothesis state machines against one implementation for a time budget"
SELF_DIFF = ("compares the reference with a peer; on python it would compare the reference with "
             "itself (ask for it with --machine differential)")


def _one_line_error(message: str) -> NoReturn:
    """argparse's error, as the single line every memconform command prints (exit 2)."""
    print(f"memconform {NAME}: {message}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = EXIT_CODES_HELP
    setattr(p, "error", _one_line_error)  # noqa: B010 - an instance's error, not the class's
    add_impl_arguments(p)
    p.add_argument("--minutes", type=positive_float, default=5.0, help="time budget in minutes (> 0); batches are sized to fit it at each machine's measured speed")
    p.add_argument("--machine", action="append", default=[],
                   help=f"machine to run (repeatable; {', '.join(MACHINES)}; default: every machine)")
    p.add_argument("--profile", default=None,
                   help=f"{' | '.join(profiles.PROFILES)} (default: ${profiles.ENV} or {profiles.DEFAULT})")
    p.add_argument("--seed", type=non_negative_int, default=None, help="seed of the first batch (to rerun a failure)")
    p.add_argument("--unicode-gap", action="store_true",
                   help="also draw the Unicode 15-17 letters SPEC's corpus avoids (S-FMT-17)")
    add_report_arguments(p)
    add_quiet_argument(p)
    p.add_argument("--export-dir", dest="export", type=Path, default=argparse.SUPPRESS, help=argparse.SUPPRESS)


@dataclass
class Tally(Stats):
    """A machine's counters summed over the run's batches, and what it ran against."""

    batches: int = 0
    ran_against: str = ""
    refused: str = ""
    findings: list[Finding] = field(default_factory=list)

    def add(self, before: Stats, after: Stats) -> None:
        self.batches += 1
        self.examples += after.examples - before.examples
        self.steps += after.steps - before.steps
        self.executed += after.executed - before.executed
        self.seconds += after.seconds - before.seconds
        self.exported += after.exported[len(before.exported):]

    @property
    def rate(self) -> float:
        return self.steps / self.seconds if self.seconds else 0.0

    def row(self, name: str) -> dict[str, Any]:
        return {
            "machine": name, "ran_against": self.ran_against, "refused": self.refused,
            "batches": self.batches, "examples": self.examples, "steps": self.steps,
            "executed": self.executed, "seconds": round(self.seconds, 3),
            "steps_per_second": round(self.rate, 1), "findings": len(self.findings),
        }


def _snapshot(stats: Stats) -> Stats:
    return Stats(stats.examples, stats.steps, stats.executed, stats.seconds, list(stats.failures), list(stats.exported))


def _fail(message: str) -> int:
    print(f"memconform {NAME}: {message}", file=sys.stderr)
    return EXIT_USAGE


def run(args: argparse.Namespace) -> int:
    unknown = [m for m in args.machine if m not in MACHINES]
    if unknown:
        return _fail(f"unknown machine {unknown[0]!r} (known: {', '.join(MACHINES)})")
    try:
        profile = profiles.profile_name(args.profile)
    except ValueError as e:
        return _fail(str(e))
    spec: PeerSpec | HostSpec
    if args.impl.partition(":")[0] in HOST_KINDS:  # a real host: only the session machine drives one
        spec = parse_impl(args.impl, DEFAULT_PI)
        info, ops, impl = envelope.ImplInfo(spec.name, spec.kind, spec.label.split(" ", 1)[1]), frozenset[str](), spec.label
        profile = profiles.profile_name(args.profile or os.environ.get(profiles.ENV) or "host")
    else:
        try:
            spec = PeerSpec.parse(args.impl)
            info = preflight([spec], timeout=args.timeout)[0]
            ops = capabilities.of_impl(info).ops  # what its hello declared: no second driver start
        except (PeerUnavailable, DriverError) as e:
            return _fail(str(e).splitlines()[0] if str(e) else type(e).__name__)
        impl = f"{info.name} {info.version}"
    if args.unicode_gap:
        os.environ[UNICODE_GAP_ENV] = "1"
    names = list(dict.fromkeys(args.machine)) or list(MACHINES)
    tallies = {n: Tally(ran_against=impl) for n in names}
    try:
        for name in names:
            reason = SELF_DIFF if (name == "differential" and spec.kind == "python" and not args.machine) else None
            reason = reason or bind(name, spec, ops, timeout=args.timeout)
            if reason:
                tallies[name].ran_against, tallies[name].refused = "", reason
            elif spec.kind == "python" and name in IN_PROCESS:
                tallies[name].ran_against = f"{impl} (in process)"
        return _run(args, spec, info, profile, tallies)
    finally:
        unbind()


def _run(args: argparse.Namespace, spec: PeerSpec | HostSpec, info: envelope.ImplInfo, profile: str,
         tallies: dict[str, Tally]) -> int:
    report = envelope.RunReport(command=envelope.argv(), impls=[info])
    runnable = [n for n, t in tallies.items() if not t.refused]
    target = export_dir(args)
    print(f"memconform fuzz: {spec.name} ({info.name} {info.version}), profile {profile}, "
          f"{args.minutes:g} min, failures to {target or '(not exported)'}", flush=True)
    deadline = time.monotonic() + args.minutes * 60
    rng = random.SystemRandom()
    first_seed = args.seed
    interrupted = False
    with progress(f"fuzz {spec.name} (batches)", None, quiet=args.quiet) as bar:
        try:
            while runnable:
                for i, name in enumerate(runnable):
                    left = deadline - time.monotonic()
                    if left <= 0 and tallies[name].batches:
                        continue
                    size = batch_size(tallies[name], left / (len(runnable) - i), _profile_examples(name, profile))
                    _batch(name, args, spec, profile, tallies[name], first_seed, rng, target, size)
                    steps = sum(t.steps for t in tallies.values())
                    found = sum(len(t.findings) for t in tallies.values())
                    bar.advance(note=f"{name}; {steps} steps, {found} findings, {max(0.0, left):.0f}s left")
                    if stopping():
                        raise KeyboardInterrupt
                first_seed = None
                if time.monotonic() >= deadline:
                    break
        except KeyboardInterrupt:  # Ctrl-C: the batches that finished are the report
            interrupted = True
        work_done()
    findings = [f for t in tallies.values() for f in t.findings]
    print(table(tallies))
    executed = sum(t.executed for t in tallies.values())
    run_verdict = verdict(findings, executed=executed, fail_on_hazard=fail_on_hazard(args))
    print(f"memconform fuzz: {summary_line(findings)}; verdict {run_verdict}")
    if not runnable:
        print(f"memconform fuzz: no machine ran: every machine was refused for {spec.name}", file=sys.stderr)
    elif not executed:
        print(f"memconform fuzz: no machine executed a step against {spec.name}", file=sys.stderr)
    report.stats = {"profile": profile, "minutes": args.minutes, "executed": executed,
                    "steps": sum(t.steps for t in tallies.values())}
    section = _coverage(info, tallies)
    report.findings = findings
    report.finish(run_verdict)
    if interrupted:
        return interrupted_end(args, report, {"machines": [t.row(n) for n, t in tallies.items()], "capabilities": section})
    publish(args, report, {"machines": [t.row(n) for n, t in tallies.items()], "capabilities": section})
    return exit_code(run_verdict, fail_on_hazard=fail_on_hazard(args))


def _coverage(info: envelope.ImplInfo, tallies: dict[str, Tally]) -> dict[str, Any]:
    """The report's ``capabilities`` section: each refused machine and each race situation the
    ``lock_protocol`` machine could not run on the driver as declared, with why."""
    from ..interleave.races import SITUATIONS
    from ..machines import lock_protocol

    not_run = [capabilities.NotRun(f"machine {n}", t.refused, tuple(load(n).CLAUSES)) for n, t in tallies.items()
               if t.refused]
    if "lock_protocol" in tallies and not tallies["lock_protocol"].refused:
        not_run += [capabilities.NotRun(f"lock_protocol situation {s.name}", why, capabilities.cited(s.why)) for s in SITUATIONS
                    if (why := lock_protocol.not_runnable(s))]
    ran = [load(n).CLAUSES for n, t in tallies.items() if not t.refused and t.executed]
    caps = capabilities.of_impl(info) if info.hello else None
    return capabilities.coverage_section(caps, not_run, caps.contract if caps else "openpi", ran)


PROBE_EXAMPLES = 5
"""A machine's first batch: enough examples to learn its speed, few enough to fit any budget."""


def batch_size(tally: Tally, seconds: float, most: int) -> int:
    """Examples for the next batch of a machine: what fits ``seconds`` at its measured speed.

    The budget is honoured by sizing batches, not by stopping Hypothesis mid-batch: the first
    batch is a small probe, later ones are as many examples as the machine's time per example
    so far fits in its share of what is left (at least one, at most the profile's count).
    """
    if tally.examples == 0 or tally.seconds <= 0:
        return max(1, min(PROBE_EXAMPLES, most))
    per_example = tally.seconds / tally.examples
    return max(1, min(most, int(seconds / per_example)))


def _profile_examples(name: str, profile: str) -> int:
    return max(1, round(profiles.profile(profile).max_examples * getattr(load(name), "EXAMPLES_SCALE", 1.0)))


def _batch(name: str, args: argparse.Namespace, spec: PeerSpec | HostSpec, profile: str, tally: Tally,
           first_seed: int | None, rng: random.SystemRandom, target: Path | None, size: int) -> None:
    """One batch of ``size`` examples of one machine; a failure becomes a Finding."""
    machine = load(name)
    seed = first_seed if first_seed is not None else rng.randrange(2**32)
    before = _snapshot(machine.stats)
    try:
        run_machine(machine, profile=profile, seed_value=seed, export_to=target, export=target is not None,
                    found_in=tally.ran_against, max_examples=size)
    except Exception as e:
        tally.add(before, machine.stats)
        saved = machine.stats.exported[len(before.exported):]
        # Hypothesis reports distinct failures of one batch as a group: one finding each
        errors = list(e.exceptions) if isinstance(e, BaseExceptionGroup) else [e]
        for error in errors:
            text = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
            print(f"[{name}] FAILED (seed {seed}): {text}", file=sys.stderr, flush=True)
            judged = getattr(error, "finding", None)  # a machine judged by oracles' findings (lock_protocol)
            tally.findings.append(Finding(
                kind=judged.kind if isinstance(judged, Finding) else
                "driver-error" if isinstance(error, DriverError) else "machine-failure",
                severity=judged.severity if isinstance(judged, Finding) else VIOLATION,
                clause=judged.clause if isinstance(judged, Finding) else machine.CLAUSES[0],
                impl=tally.ran_against,
                op=name,
                evidence=f"seed {seed}: {type(error).__name__}: {text}",
                reproduce=f"memconform fuzz --impl {spec.name} --machine {name} --seed {seed} --profile {profile}",
                regression=_saved_path(error, saved if len(errors) == 1 else []),
            ))
        return
    tally.add(before, machine.stats)


def _saved_path(error: BaseException, saved: list[Path]) -> str:
    """The scenario ``Machine.on_failure`` wrote for this error (it says so in a note)."""
    for note in getattr(error, "__notes__", []):
        if isinstance(note, str) and note.startswith(EXPORT_NOTE):
            return note.removeprefix(EXPORT_NOTE).strip()
    return str(saved[-1]) if saved else ""


def table(tallies: dict[str, Tally]) -> str:
    """One line per machine — what it ran against or why it was refused — then the findings."""
    width = max([len("ran against"), *(len(t.ran_against) for t in tallies.values() if not t.refused)])
    lines = [f"{'machine':<14} {'ran against':<{width}} {'examples':>8} {'steps':>8} {'steps/s':>8} "
             f"{'executed':>8} {'findings':>8}"]
    for name, t in tallies.items():
        if t.refused:
            lines.append(f"{name:<14} refused: {t.refused}")
            continue
        share = t.executed / t.steps if t.steps else 0.0
        lines.append(f"{name:<14} {t.ran_against:<{width}} {t.examples:>8} {t.steps:>8} {t.rate:>8.0f} "
                     f"{share:>8.1%} {len(t.findings):>8}")
    for t in tallies.values():
        for f in t.findings:
            lines.append(f"  {f.line()}")
            lines.append(f"    rerun: {f.reproduce}")
            if f.regression:
                lines.append(f"    saved: {f.regression}")
    return "\n".join(lines)
