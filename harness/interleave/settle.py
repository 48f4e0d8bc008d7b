"""The settled store, judged: the lock timeline, the lock left behind, the invariants a
nemesis run may still demand (issue 13; the invariants themselves are
``oracles.settled``).  Split from ``run`` (the engine)."""

from __future__ import annotations

import os
import stat
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..oracles import interop_checks as checks
from ..oracles.settled import settled_violations
from . import nemesis as nm
from .slot import Slot


def lock_spans(slots: list[Slot], traces: list[Path], ops: list[Any], wall_minus_mono: int) -> list[checks.LockSpan]:
    """Each acknowledged op's hold of its lock, from the writers' lock traces: from its
    create (or link) to its own next unlink, cut at the op's answer (a holder whose lock was
    replaced under it does not unlink, yet has left the critical section when it answers)."""
    by_pid = {pid: s for s in slots for pid in s.pids}
    by_writer: dict[str, list[Any]] = defaultdict(list)
    for o in ops:
        by_writer[o.process].append(o)
    spans: list[checks.LockSpan] = []
    for log in traces:
        try:
            events = nm.lock_events(log.read_text("utf-8", "replace"))
        except OSError:
            continue
        for i, (pid, what, wall) in enumerate(events):
            slot = by_pid.get(pid)
            if what != "acquire" or slot is None:
                continue
            t = wall - wall_minus_mono
            op = next((o for o in by_writer[slot.name] if o.start <= t and (o.end is None or t <= o.end)), None)
            if op is None or op.type != "ok" or op.end is None:
                continue
            unlink = next((w for p, k, w in events[i + 1:] if p == pid and k == "unlink"), None)
            end = op.end if unlink is None else min(op.end, unlink - wall_minus_mono)
            spans.append(checks.LockSpan(slot.name, str(slot.directory / nm.LOCK), t, end))
    return spans


def describe_lock(directory: Path, slots: list[Slot]) -> str:
    """What ``D/.lock`` was when the faults ended: whose pid (which writer), its age, or its
    kind; empty when there was none."""
    path = directory / nm.LOCK
    try:
        st = os.lstat(path)
    except OSError:
        return ""
    age = time.time() - st.st_mtime
    if not stat.S_ISREG(st.st_mode):
        return f"was a non-regular file ({stat.filemode(st.st_mode)}), {age:.1f} s old"
    pid = nm.lock_holder_pid(directory)
    if pid is None:
        return f"was {'empty' if st.st_size == 0 else 'without a readable pid'}, {age:.1f} s old"
    owner = next((f"{s.name} ({s.spec.name})" for s in slots if pid in s.pids), "no writer of the run")
    return f"held pid {pid} of {owner}, {age:.1f} s old"


__all__ = ["describe_lock", "lock_spans", "settled_violations"]
