"""Which store a scheduled run writes, and what its end state is judged by beyond the race
checks (issue 29): the shared store or one tool's local store, with or without both tools'
local stores seeded for a carry-over, and the store model's linearizability of the ops.

Apart from ``scheduler`` so the situations' store setup and the generated programs' extra
verdicts grow here, not in the scheduler's loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from ..checker.history import Op
from ..checker.store_model import check
from ..drivers.peers import PeerSpec
from ..drivers.sandbox import Sandbox
from ..oracles.findings import VIOLATION, WEAKNESS, Finding
from ..oracles.spec import SENTINEL
from ..writers import carry_race
from ..writers.engine import disk_view, prepare_shared
from .slot import store_dir

CHECK_BUDGET_S = 2.0


class _Sit(Protocol):
    @property
    def store(self) -> str: ...
    @property
    def carry(self) -> bool: ...


class _RaceOp(Protocol):
    @property
    def process(self) -> str: ...
    @property
    def op(self) -> str: ...
    @property
    def args(self) -> dict[str, Any]: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int | None: ...
    @property
    def type(self) -> str: ...
    @property
    def result(self) -> Any: ...
    @property
    def outcome(self) -> str | None: ...  # the recorded outcome kind the model reads (issue 30)


def prepare(sb: Sandbox, sit: _Sit, specs: Sequence[PeerSpec]) -> tuple[Path, tuple[str, ...], dict[str, str]]:
    """Set the sandbox up for ``sit``: the directory the writers contend for, every memory
    directory the tracer holds calls in (the local stores too when a carry-over reads them),
    and the carried tokens (topic -> token) when the local stores are seeded."""
    shared = sit.store != "local"
    if shared:
        prepare_shared(sb)
    directory = store_dir(specs[0], sb, shared)
    roots = [str(directory)]
    tokens: dict[str, str] = {}
    if sit.carry and shared:
        tokens = carry_race.seed_locals(sb)
        roots += [str(sb.path(local.rstrip("/"))) for local in carry_race.LOCALS]
    return directory, tuple(roots), tokens


def linearizable(ops: Sequence[_RaceOp], *, excused: bool, impl: str, shared: bool = False) -> list[Finding]:
    """The store model over the run's ops (their intervals in steps): no order of the ops
    explains their answers is a violation, or the S-INV-9 weakness when the run planted a
    stale lock or killed a writer (the lock SPEC's window lets two writers hold).  ``shared``:
    the run wrote the shared store (its removes leave tombstones a repair must skip)."""
    history = [Op(i, o.process, o.op, dict(o.args), o.start, o.end if o.type != "info" else None, o.type, o.result,
                  o.outcome)
               for i, o in enumerate(ops) if o.op != "advance_clock"]
    verdict = check(history, budget_s=CHECK_BUDGET_S, shared=shared)
    if verdict.status != "not linearizable":
        return []
    lines = "; ".join(verdict.failing_lines[:6])
    return [Finding("not-linearizable", WEAKNESS if excused else VIOLATION, clause="S-INV-9" if excused else "S-LOCK-10",
                    impl=impl, evidence=f"no order of the {len(verdict.failing_ops)} ops explains their results: {lines}")]


def carried(directory: Path, roots: Sequence[str], tokens: dict[str, str], impl: str, *,
            excused: bool) -> list[Finding]:
    """A carried local topic lost from the shared store (S-MIGRATE-2, S-MIGRATE-3), once some
    tool's carry-over is done (its sentinel exists, S-FMT-15): a carry-over that could not take
    both locks returns without copying and retries on a later call (S-MIGRATE-2), so in a
    run that ends first nothing is owed (seen: openpi, program-carry-4, both writers' only op).
    With a planted stale lock the loss is the S-INV-9 window's (a reclaimer's index built
    before the carried entries landed: openpi, program-carry-16), as for any lost write."""
    if not tokens or not any((Path(r) / SENTINEL).exists() for r in roots if r != str(directory)):
        return []
    lost = [f for f in carry_race.findings(disk_view(directory), tokens, impl=impl) if f.kind == "lost-write"]
    if excused:
        lost = [replace(f, severity=WEAKNESS, clause="S-INV-9", evidence=f"{f.evidence}; a stale lock was planted "
                        "(two holders are SPEC's accepted window, S-INV-9 a)") for f in lost]
    return lost
