"""``memconform fuzz``: run the state machines for a time budget and report what they found.

With ``--impl python`` the in-process machines attack the reference (store vs shadow,
rollback under faults, lock protocol, S-INJECT session); with a peer
(``pi:<memory-core.mjs>`` …) the differential machine compares the reference with it through
the protocol.  Machines run in
batches of one profile's worth of examples, round robin, each batch with a fresh seed, until
the budget is spent (checked between batches).  Every failure is exported as a regression
scenario (default ``scenarios/regressions/``) and reported with its seed.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from ..machines import IN_PROCESS, MACHINES, load, profiles
from ..machines.base import Stats, run_machine
from ..machines.strategies import UNICODE_GAP_ENV
from ..peers import PeerSpec
from ..scenarios import SCENARIOS_DIR
from .common import add_impl_arguments

NAME = "fuzz"
HELP = "run the Hypothesis state machines for a time budget; export failures as regressions"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_impl_arguments(p)
    p.add_argument("--minutes", type=float, default=5.0, help="time budget (checked between batches)")
    p.add_argument("--machine", action="append", choices=sorted(MACHINES), default=[],
                   help="machine to run (repeatable; default: in-process machines for python, "
                        "differential for a peer)")
    p.add_argument("--profile", default=None, help="ci | dev | nightly (default: $HYPOTHESIS_PROFILE or ci)")
    p.add_argument("--seed", type=int, default=None, help="seed of the first batch (to rerun a failure)")
    p.add_argument("--unicode-gap", action="store_true",
                   help="also draw the Unicode 15-17 letters SPEC's corpus avoids (S-FMT-17)")
    p.add_argument("--export-dir", type=Path, default=SCENARIOS_DIR / "regressions",
                   help="where failing examples are written (default: scenarios/regressions)")


@dataclass
class Tally(Stats):
    """A machine's counters summed over the fuzz run's batches."""

    batches: int = 0

    def add(self, before: Stats, after: Stats) -> None:
        self.batches += 1
        self.examples += after.examples - before.examples
        self.steps += after.steps - before.steps
        self.executed += after.executed - before.executed
        self.seconds += after.seconds - before.seconds
        self.exported += after.exported[len(before.exported):]


def _snapshot(stats: Stats) -> Stats:
    return Stats(stats.examples, stats.steps, stats.executed, stats.seconds, list(stats.failures), list(stats.exported))


def run(args: argparse.Namespace) -> int:
    spec = PeerSpec.parse(args.impl)
    if args.unicode_gap:
        os.environ[UNICODE_GAP_ENV] = "1"
    names = args.machine or (list(IN_PROCESS) if spec.kind == "python" else ["differential"])
    profile = profiles.profile_name(args.profile)
    if "differential" in names:
        from ..machines.differential import configure_peer

        configure_peer(spec)
    found_in = "memconform-reference" if spec.kind == "python" else spec.name
    deadline = time.monotonic() + args.minutes * 60
    tallies = {n: Tally() for n in names}
    rng = random.SystemRandom()
    first_seed = args.seed
    print(f"memconform fuzz: {', '.join(names)} on {spec.name}, profile {profile}, "
          f"{args.minutes:g} min, failures to {args.export_dir}", flush=True)
    while True:
        for name in names:
            if time.monotonic() >= deadline and tallies[name].batches:
                continue
            machine = load(name)
            seed = first_seed if first_seed is not None else rng.randrange(2**32)
            before = _snapshot(machine.stats)
            try:
                run_machine(machine, profile=profile, seed_value=seed, export_to=args.export_dir,
                            found_in=found_in if name == "differential" else "memconform-reference")
            except Exception as e:
                summary = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
                tallies[name].failures.append(f"seed {seed}: {type(e).__name__}: {summary}")
                print(f"[{name}] FAILED (seed {seed}): {summary}", file=sys.stderr, flush=True)
                if not machine.stats.exported[len(before.exported):]:
                    traceback.print_exc(limit=3)
            tallies[name].add(before, machine.stats)
        first_seed = None
        if time.monotonic() >= deadline:
            break
    print(report(tallies))
    return 1 if any(t.failures for t in tallies.values()) else 0


def report(tallies: dict[str, Tally]) -> str:
    """One line per machine, then every failure with the file it was saved to."""
    lines = [f"{'machine':<14} {'examples':>8} {'steps':>8} {'steps/s':>8} {'executed':>8} {'failures':>8}"]
    for name, t in tallies.items():
        rate = t.steps / t.seconds if t.seconds else 0.0
        share = t.executed / t.steps if t.steps else 0.0
        lines.append(f"{name:<14} {t.examples:>8} {t.steps:>8} {rate:>8.0f} {share:>8.1%} {len(t.failures):>8}")
    for name, t in tallies.items():
        for f in t.failures:
            lines.append(f"  {name}: {f}")
        for path in t.exported:
            lines.append(f"  {name}: saved {path}")
    return "\n".join(lines)
