"""The store after writers were killed or interrupted, judged by SPEC's invariants minus what
S-INV-8 allows a crash to leave (issue 13): an oracle, so that the writers engine, the nemesis
and the scheduler judge a settled store by one rule and none of them imports another."""

from __future__ import annotations

from pathlib import Path

from .invariants import ALL_CHECKS, Violation, check_sandbox
from .spec import TEMP_NAME


def settled_violations(root: Path, killed: set[int], families: set[str]) -> list[Violation]:
    """S-INV checks, minus what S-INV-8 allows after a kill: a killed writer's temporaries,
    indexed-and-tombstoned entries, and a leftover lock once any crash-like fault ran."""
    crashy = bool(families & {"kill", "errno", "stale-lock", "foreign-lock"})
    out = []
    for v in check_sandbox(root, ALL_CHECKS):
        m = temp_owner_pid(v.path)
        if v.message == "temporary file left behind" and m is not None and m in killed:
            continue
        if v.message == "lock file left behind" and crashy:
            continue
        if v.clause == "S-INV-7" and "kill" in families:
            continue
        out.append(v)
    return out


def temp_owner_pid(path: str) -> int | None:
    m = TEMP_NAME.search(path)
    return int(m.group(1)) if m else None
