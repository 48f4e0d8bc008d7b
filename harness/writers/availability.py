"""How long a store stays unavailable after a planted lock state or an injected fault.

A SPEC-conformant store can still refuse every write for a minute or for ever: a directory
at ``.lock`` is never reclaimed (S-LOCK-2 step 3), an empty ``.lock`` has no readable pid and
blocks until it is 60 s old (S-LOCK-3, S-INV-8 6, A-13).  ``measure`` starts a fresh writer
(a driver process of the same implementation), tries ``write_memory`` and, while the answer
is busy, makes time pass *for the lock*: S-LOCK-2 ages a lock as ``now − mtime``, so setting
the lock's mtime back by ``a`` seconds is the same, for every rule of S-LOCK, as ``a``
seconds passing.  The figure is therefore a measurement in lock-age time (issue 15 brings
true virtual time through the drivers); the first lock age at which a write succeeds is the
outage, ``None`` when no write succeeds within ``CAP`` (an hour).  The figure is always
reported — aging the lock is the measurement, never a hidden recovery step.

``hazard_for`` is the pure decision: an outage of 60 s or more (or for ever) is an
``unavailable`` hazard naming the state and the time.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..drivers.peers import Driver, DriverError, PeerSpec, start_driver
from ..drivers.sandbox import Sandbox
from ..oracles import lock_leftover
from ..oracles.findings import HAZARD, WEAKNESS, Finding
from ..oracles.kind_model import BUSY, answer_kind

STEPS = (0, 5, 11, 30, 59, 61, 120, 600, 3600)
"""Lock ages (s) at which the fresh writer tries: around the 10 s and 60 s thresholds of
S-LOCK-1 and then coarser up to the cap."""
CAP = 3600.0
THRESHOLD = 60.0
PROBE = {"topic": "Availability probe", "content": "probe", "summary": "probe"}
KIND = "unavailable"


@dataclass(frozen=True)
class LockState:
    """A state that may block a store, in the words a user understands.

    ``what`` names the state ("a directory at .lock"), ``clause`` and ``why`` the SPEC rule
    that makes it last; ``live_owner`` marks a lock whose owner really runs (its outage is
    the owner's critical section, not a hazard); ``weakness`` an outage SPEC documents as
    accepted (S-INV-9 c, a reused pid).
    """

    name: str
    what: str
    clause: str
    why: str = ""
    live_owner: bool = False
    weakness: bool = False


@dataclass
class Availability:
    """The measured outage: lock age (s) at the first success, or ``None`` within ``CAP``."""

    seconds: float | None
    attempts: list[tuple[float, str]] = field(default_factory=list)
    leftovers: list[Finding] = field(default_factory=list)  # a lock an attempt left behind (S-LOCK-5)

    def text(self) -> str:
        if self.seconds is None:
            return "never"
        return f"{self.seconds:g}s"


def describe(seconds: float | None) -> str:
    return "for ever" if seconds is None else f"for {seconds:g} s"


def hazard_for(state: LockState, seconds: float | None, *, impl: str = "", op: str = "write_memory") -> Finding | None:
    """An outage of ``THRESHOLD`` seconds or more, or one that never ends, is a hazard."""
    if state.live_owner:
        return None
    if seconds is not None and seconds < THRESHOLD:
        return None
    why = f" (SPEC {state.clause}{': ' + state.why if state.why else ''})"
    refused = "every write busy" if seconds is None else "every write refused"
    return Finding(
        kind=KIND,
        severity=WEAKNESS if state.weakness else HAZARD,
        clause=state.clause,
        impl=impl,
        op=op,
        path=".lock",
        evidence=f"{state.what}: {refused}, {describe(seconds)}{why}",
    )


def store_locks(root: Path) -> list[Path]:
    """Every ``.lock`` entry (file, directory, link or FIFO) under a sandbox."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            if name == ".lock":
                out.append(Path(dirpath) / name)
    return sorted(out)


def _age(locks: Sequence[Path], mtime: float) -> None:
    for lock in locks:
        if os.path.lexists(lock):
            os.utime(lock, (mtime, mtime), follow_symlinks=False)


def measure(
    spec: PeerSpec,
    sandbox: Sandbox,
    locks: Sequence[Path],
    *,
    env: Mapping[str, str] | None = None,
    clock: Mapping[str, Any] | None = None,
    writer_now: Callable[[], float] = time.time,
    from_age: float = 0.0,
    steps: Sequence[float] = STEPS,
    timeout: float = 15.0,
    wrapper: Sequence[str] = (),
    args: Mapping[str, Any] | None = None,
) -> Availability:
    """Try ``write_memory`` from a fresh writer at each lock age of ``steps`` past ``from_age``.

    ``writer_now`` is the writer's idea of now (the instant ``clock`` pins through
    ``set_clock`` before each attempt); each lock's mtime is set to ``writer_now() − age``
    before the attempt.  The clock should move (``offset``): a busy writer under a frozen
    clock may poll for ever.
    With the real clock the lock also ages while the writer polls, so the outage is the age
    at the start of the successful attempt plus its duration.
    Ages below ``from_age`` (the state's age already) are skipped.  The store is changed by
    the successful write; callers that continue from the state restore it themselves.
    """
    result = Availability(None)
    ages = [a for a in steps if a >= from_age and a <= CAP] or [from_age]
    driver: Driver | None = None
    full_env = dict(env if env is not None else sandbox.env())
    try:
        for age in ages:
            try:
                if driver is None:
                    driver = start_driver(spec, full_env, cwd=str(sandbox.root), timeout=timeout, wrapper=list(wrapper))
                if clock is not None:  # re-pinned before each attempt: the writer's now is the instant
                    driver.call("set_clock", dict(clock))
            except DriverError as e:
                result.attempts.append((age, f"driver failed: {e}"))
                if driver is not None:
                    driver.kill()
                    driver.close()
                driver = None
                continue
            _age(locks, writer_now() - age)
            held = lock_leftover.lock_files(sandbox.root)
            started = time.monotonic()
            try:
                answer = driver.call("write_memory", dict(args or PROBE))
            except DriverError as e:
                result.attempts.append((age, f"no answer: {e}"))
                driver.kill()
                driver.close()
                driver = None
                continue
            result.leftovers += lock_leftover.check(
                sandbox.root, held, {driver.pid}, op=f"write_memory (a fresh writer at lock age {age:g} s)",
                answer=repr(str(answer.result)[:60]) if answer.ok else "an error")
            if not answer.ok:
                result.attempts.append((age, f"error {answer.error}"))
                continue
            kind = answer_kind(answer)
            result.attempts.append((age, kind))
            if kind not in (BUSY, "error", "other"):
                # a moving clock ages the lock while the writer polls (3 s in shared mode)
                waited = time.monotonic() - started if clock is None or clock.get("mode") != "frozen" else 0.0
                if clock is not None and clock.get("mode") == "virtual" and answer.clock_ms is not None:
                    waited = answer.clock_ms / 1000 - writer_now()  # the virtual time it polled
                result.seconds = round(age + waited, 1)
                return result
    finally:
        if driver is not None:
            driver.close()
    return result
