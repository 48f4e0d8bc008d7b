"""The scheduler's side of the lock-protocol oracle (``harness.oracles.lock_protocol``):
each writer's held calls cut into its ops, judged, and a race that arose where a step was
skipped told from the S-INV-9 window SPEC accepts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Protocol

from ..oracles import lock_protocol
from ..oracles.findings import VIOLATION, Finding
from .tracer import Call

RACE_KINDS = ("double-holder", "lost-write", "duplicated-write", "split-topic", "not-linearizable")


class _Op(Protocol):
    @property
    def process(self) -> str: ...
    @property
    def op(self) -> str: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int | None: ...


def op_traces(ops: Sequence[_Op], trace: Sequence[tuple[int, str, Call]], pids: Mapping[str, int],
              impl_of: Mapping[str, str]) -> list[lock_protocol.OpTrace]:
    """Each op with the calls its writer made between its start and its answer."""
    out = []
    for o in ops:
        end = o.end if o.end is not None else 1 << 60
        calls = [(i, c) for i, w, c in trace if w == o.process and o.start <= i <= end]
        out.append(lock_protocol.OpTrace(o.process, impl_of.get(o.process, o.process), pids.get(o.process, 0),
                                         o.op, calls))
    return out


def judge(ops: Sequence[_Op], trace: Sequence[tuple[int, str, Call]], pids: Mapping[str, int],
          impl_of: Mapping[str, str], roots: Sequence[str], races: Sequence[Finding]) -> list[Finding]:
    """The protocol breaches of a run, and its race findings re-judged: a race in a run where
    a required step was skipped is that skip's consequence, a violation, not the weakness."""
    breaches = lock_protocol.judge(op_traces(ops, trace, pids, impl_of), roots)
    if not breaches:
        return list(races)
    why = "; ".join(sorted({f"{b.clause} {b.syscall}" for b in breaches})[:3])
    out = [replace(f, severity=VIOLATION, evidence=f"{f.evidence}; the run skipped a required lock step ({why}), "
                                                   f"so this is not the S-INV-9 window")
           if f.kind in RACE_KINDS and f.severity != VIOLATION else f for f in races]
    return breaches + out
