"""Differential mode: the same scenarios on two implementations, answers and files compared.

Neither side is the oracle: a difference is reported with both sides, after the
normalisation of ``oracles.expect`` (sandbox roots as placeholders, volatile lock and
temporary names, the configuration by value).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..drivers.peers import PeerSpec
from ..oracles.expect import Failure, first_difference, normalise_answer, normalise_files, show
from .runner import Outcome, Worker
from .scenarios import Scenario


def diff_outcomes(a: Outcome, b: Outcome, names_a: dict[str, str], names_b: dict[str, str]) -> list[Failure]:
    """Where two runs of one scenario differ: per step answer, then per file."""
    out: list[Failure] = []
    for i, (x, y) in enumerate(zip(a.answers, b.answers, strict=False)):
        nx, ny = normalise_answer(x, names_a), normalise_answer(y, names_b)
        if nx != ny:
            out.append(Failure(f"step {i + 1} ({a.scenario.steps[i].op})", str(nx), str(ny), "results differ"))
    fa, fb = normalise_files(a.files, names_a), normalise_files(b.files, names_b)
    for rel in sorted(set(fa) | set(fb)):
        da, db = fa.get(rel), fb.get(rel)
        if da != db:
            detail = first_difference(da, db) if da is not None and db is not None else "only on one side"
            out.append(Failure(f"file {rel}", show(da), show(db), detail))
    return out


def run_differential(
    a: PeerSpec, b: PeerSpec, scenarios: Iterable[Scenario], *, timeout: float = 10.0,
    on_result: Callable[[Scenario, list[Failure]], None] | None = None,
) -> list[tuple[Scenario, list[Failure]]]:
    """Each scenario on ``a`` then ``b``; a scenario one side skips is not compared."""
    wa, wb = Worker(a, timeout=timeout), Worker(b, timeout=timeout)
    results: list[tuple[Scenario, list[Failure]]] = []
    try:
        for sc in scenarios:
            oa, ob = wa.run(sc), wb.run(sc)
            if "skip" in (oa.status, ob.status):
                results.append((sc, []))  # one side cannot run it: nothing to compare
                if on_result is not None:
                    on_result(sc, [])
                continue
            diffs = diff_outcomes(oa, ob, wa.sandbox.placeholders(), wb.sandbox.placeholders())
            for o, label in ((oa, a.name), (ob, b.name)):
                if o.status == "error":
                    diffs.append(Failure(f"driver {label}", "runs", o.reason))
            results.append((sc, diffs))
            if on_result is not None:
                on_result(sc, diffs)
    finally:
        wa.close()
        wb.close()
    return results
