"""Which scenarios a run takes: the built-in corpus, a user's own folders, globs, a shard.

``--scenarios DIR`` (repeatable) adds a user's scenarios to the corpus shipped in the wheel
(``memconform.scenarios``, read through ``importlib.resources`` from any working directory);
``--only-scenarios`` drops the built-in corpus, so only the named folders run.  An id in two
folders is an error, as within one folder.  ``--run``/``--skip`` globs apply to the union, then
``--shard K/N`` keeps one balanced part of what is left (``harness.gate.shards``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from . import shards
from .scenarios import SCENARIOS_DIR, Scenario, ScenarioError, discover

BUILTIN = SCENARIOS_DIR / "conformance"


class SelectionError(Exception):
    """Nothing to select from, or nothing selected (the caller's setup error, exit 2)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scenarios", type=Path, action="append", default=[], metavar="DIR",
                   help="also run the scenarios under DIR (repeatable); with --only-scenarios, only those")
    p.add_argument("--only-scenarios", action="store_true",
                   help="leave the built-in corpus out: run only the --scenarios folders")
    p.add_argument("--shard", type=shards.parse, metavar="K/N",
                   help="run part K of N (a stable split balanced by recorded cost; join with `report merge`)")


def roots(extra: list[Path], only: bool) -> list[Path]:
    if only and not extra:
        raise SelectionError("--only-scenarios needs at least one --scenarios DIR")
    chosen = [*([] if only else [BUILTIN]), *extra]
    for root in chosen:
        if not root.is_dir():
            raise SelectionError(f"{root}: no such scenario directory")
    return chosen


def select(args: argparse.Namespace) -> list[Scenario]:
    """The scenarios ``args`` asks for, sorted by id; an empty selection is an error."""
    run: list[str] = list(getattr(args, "run", []) or [])
    skip: list[str] = list(getattr(args, "skip", []) or [])
    chosen = roots(list(getattr(args, "scenarios", []) or []), bool(getattr(args, "only_scenarios", False)))
    found: dict[str, Scenario] = {}
    for root in chosen:
        # the built-in corpus is schema-checked by the test suite before it ships; a user's is checked here
        for sc in discover(root, run, skip, validate=root != BUILTIN):
            if sc.id in found and found[sc.id].path.resolve() != sc.path.resolve():
                raise ScenarioError(sc.path, "$.id", f"duplicate id {sc.id!r} (also {found[sc.id].path})")
            found[sc.id] = sc
    scenarios = [found[i] for i in sorted(found)]
    shard = getattr(args, "shard", None)
    if shard is not None:
        k, n = shard
        scenarios = shards.select(scenarios, [s.id for s in scenarios], k, n, shards.load_costs())
    if not scenarios:
        chosen_text = " ".join([*(f"--run {g}" for g in run), *(f"--skip {g}" for g in skip)])
        where = ", ".join(str(r) for r in chosen)
        raise SelectionError(f"no scenario selected under {where}" + (f" by {chosen_text}" if chosen_text else "")
                             + (f" in shard {shard[0]}/{shard[1]}" if shard else ""))
    return scenarios
