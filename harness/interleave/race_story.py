"""A race finding in a maintainer's words: what was lost, by which writer, through which two
calls (issue 31 item 10).

The nemesis checks say *that* a write was lost or two writers held the lock; the shrunk
schedule says *how*.  These functions read the schedule's steps (``Step.writer``,
``Step.call`` as ``rename(MEMORY.md.tmp-*,MEMORY.md) = 0``) and name the two calls whose order
made the difference, with their step numbers, so the story can be checked against the
exported schedule.  Pure functions: nothing here runs a writer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..oracles.findings import Finding
from .strategies import Step

_WRITER = re.compile(r"\b(w\d+)\b")
_TOKEN = re.compile(r"\b(tok-w\d+-\d+)\b")
_TOPIC = re.compile(r"'([^']+)'")


def _ok(call: str) -> bool:
    """The call succeeded (``= 0``, ``= ok``, ``= 3``), not ``= -1 EEXIST``."""
    return "= -1" not in call


def _publishes_index(step: Step) -> bool:
    return step.call.startswith("rename(") and ",MEMORY.md)" in step.call and _ok(step.call)


def _reads_index(step: Step) -> bool:
    return "MEMORY.md)" in step.call and not step.call.startswith(("rename(", "unlink("))


def _show(i: int, step: Step) -> str:
    return f"{step.writer} #{i} {step.call}"


def lost(finding: Finding) -> str:
    """What was lost and whose it was, from the finding's evidence."""
    writer = _WRITER.search(finding.evidence)
    token = _TOKEN.search(finding.evidence)
    topic = _TOPIC.search(finding.evidence)
    what = " ".join(x for x in (f"'{topic.group(1)}'" if topic else "", token.group(1) if token else "") if x)
    return f"{writer.group(1) if writer else 'a writer'}'s {finding.op or 'write'} {what}".strip()


def lost_update(steps: Sequence[Step], victim: str) -> str | None:
    """The victim's index publish and the other writer's publish over it, made from an index
    read before the victim's: the classic lost update through ``MEMORY.md``."""
    mine = [i for i, s in enumerate(steps) if s.writer == victim and _publishes_index(s)]
    for i in reversed(mine):
        for j in range(i + 1, len(steps)):
            other = steps[j]
            if other.writer == victim or not _publishes_index(other):
                continue
            read = next((k for k in range(i - 1, -1, -1) if steps[k].writer == other.writer and _reads_index(steps[k])),
                        None)
            before = f", from its read of the index before it ({_show(read, steps[read])})" if read is not None else ""
            return f"{_show(i, steps[i])}, then {_show(j, other)} over it{before}"
    return None


def two_holders(steps: Sequence[Step]) -> str | None:
    """The two lock acquisitions that overlapped: a writer created ``.lock`` while another
    still believed it held it (it had created the lock and not yet released it)."""
    holding: dict[str, int] = {}
    for i, s in enumerate(steps):
        if ".lock" not in s.call or not _ok(s.call):
            continue
        if s.call.startswith("create(") or (s.call.startswith("rename(") and s.call.rstrip().split(",")[-1].startswith(".lock")):
            other = next((w for w in holding if w != s.writer), None)
            if other is not None:
                return f"{_show(holding[other], steps[holding[other]])}, then {_show(i, s)} while {other} still held it"
            holding[s.writer] = i
        elif s.call.startswith("unlink(") and s.writer in holding:
            del holding[s.writer]
    return None


def story(finding: Finding, steps: Sequence[Step]) -> list[str]:
    """Lines for one finding: what was lost (or broken), by which writer, through which two calls."""
    lines: list[str] = []
    if finding.kind in ("lost-write", "duplicated-write", "split-topic"):
        victim = _WRITER.search(finding.evidence)
        lines.append(f"lost: {lost(finding)}" if finding.kind == "lost-write" else f"broken: {finding.evidence[:160]}")
        through = lost_update(steps, victim.group(1)) if victim else None
        lines.append(f"through: {through}" if through else "through: see the racing calls (--verbose)")
    elif finding.kind == "double-holder":
        through = two_holders(steps)
        lines.append("two writers held the lock at once")
        lines.append(f"through: {through}" if through else "through: see the racing calls (--verbose)")
    else:
        lines.append(finding.evidence[:200])
    return lines
