"""``--shard K/N``: a stable split of the corpus into N parts of about equal running time.

A CI matrix runs one part per job and ``memconform report merge`` joins the reports, so the
merged run must hold every scenario exactly once.  The split is a pure function of the
selected scenario ids and the recorded costs (``scenario_costs.json``, package data measured
from a reference run with ``memconform report costs``): scenarios in decreasing cost (ties by
id) each go to the part that is lightest so far (ties to the lowest part).  Every job of one
matrix runs the same memconform version, so every job computes the same split; a scenario
without a recorded cost (a user's own, from ``--scenarios``) counts as the median cost.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

COSTS_FILE = "scenario_costs.json"
T = TypeVar("T")


def parse(text: str) -> tuple[int, int]:
    """``K/N`` with 1 ≤ K ≤ N (an argparse ``type=``)."""
    head, sep, tail = text.partition("/")
    try:
        k, n = int(head), int(tail)
    except ValueError:
        k = n = 0
    if not sep or n < 1 or not 1 <= k <= n:
        raise argparse.ArgumentTypeError(f"{text!r} is not K/N with 1 <= K <= N (e.g. 2/3)")
    return k, n


def load_costs(path: Path | None = None) -> dict[str, float]:
    """Recorded seconds per scenario id (empty when the file is absent)."""
    if path is None:
        source = resources.files("memconform") / "harness" / "gate" / COSTS_FILE
        if not source.is_file():
            return {}
        text = source.read_text(encoding="utf-8")
    else:
        text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    return {str(k): float(v) for k, v in data.get("seconds", {}).items()}


def split(ids: Sequence[str], n: int, costs: Mapping[str, float]) -> list[list[str]]:
    """``ids`` in ``n`` parts balanced by cost; each part sorted by id."""
    known = [costs[i] for i in ids if i in costs]
    default = statistics.median(known) if known else 1.0
    cost = {i: costs.get(i, default) for i in ids}
    parts: list[list[str]] = [[] for _ in range(n)]
    loads = [0.0] * n
    for i in sorted(set(ids), key=lambda s: (-cost[s], s)):
        lightest = min(range(n), key=lambda p: (loads[p], p))
        parts[lightest].append(i)
        loads[lightest] += cost[i]
    return [sorted(p) for p in parts]


def select(items: Sequence[T], ids: Sequence[str], k: int, n: int, costs: Mapping[str, float]) -> list[T]:
    """The items (in their order) whose id falls in part ``k`` of ``n``."""
    mine = set(split(ids, n, costs)[k - 1])
    return [item for item, i in zip(items, ids, strict=True) if i in mine]


def costs_from_report(data: Mapping[str, Any]) -> dict[str, Any]:
    """A cost file from a conformance JSON report: its scenarios' seconds, rounded."""
    seconds = {s["id"]: round(float(s.get("seconds", 0.0)), 4) for s in data.get("scenarios", [])}
    return {"about": "seconds per scenario on the reference, for --shard balancing; "
                     "regenerate with `memconform report costs REPORT.json`",
            "seconds": dict(sorted(seconds.items()))}
