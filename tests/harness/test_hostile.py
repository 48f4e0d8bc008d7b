"""Hostile files in place of each store file: every implementation answers in time, as SPEC says.

Each store file (index, topic, configuration, removal list, handoff, lock) is replaced by a
FIFO, a symlink into the store, a symlink out of it, a directory, a socket, an unreadable
file, a file with invalid UTF-8, and a file with a NUL byte.  The implementation runs one
operation through the peer protocol (a fresh driver each time) with a short timeout: it must
answer (no hang), with SPEC's outcome (S-IO-1..4, S-CFG-4/8, S-LOCK-2/3, S-WRITE-8, A-3), and
leave every file it must not touch byte-identical — the outside target of a symlink included.

"Unreadable" needs a process without root's DAC override: tests run as root in CI, so the
driver runs as ``nobody`` through ``setpriv`` on a sandbox chowned to it (skipped when
setpriv is missing); as a non-root user the file is simply made mode 000.

The Python reference always runs; the real JS peers run when ``MEMCONFORM_PI_CORE`` /
``MEMCONFORM_OPENCODE_PLUGIN`` name them.  Their documented deviations (A-3 for pi,
PEER-4/PEER-9 for the OpenCode plugin) are strict expected failures.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memconform.harness.drivers.peers import (
    ENV_OPENCODE,
    ENV_PI,
    Driver,
    DriverError,
    PeerSpec,
    configured_peers,
    start_driver,
)
from memconform.harness.drivers.sandbox import Sandbox, snapshot
from memconform.harness.faults import NOW
from memconform.reference.lock import LOCK_BUSY_MESSAGE

NOBODY = 65534
KINDS = ("fifo", "symlink-in", "symlink-out", "dir", "socket", "unreadable", "bad-utf8", "nul")
NON_REGULAR = frozenset({"fifo", "symlink-in", "symlink-out", "dir", "socket"})
TIMEOUT = 5.0
STAMP = "2026-08-01T00:00:00+00:00"
OUTSIDE = "outside/target"


def topic(name: str, summary: str, body: str) -> str:
    return (
        f'---\nname: "{name}"\ndescription: "{summary}"\nlast_updated: {STAMP}\n'
        f"created: {STAMP}\n---\n\n{body}\n"
    )


INDEX_A = f"# Memory Index\n\n- [A](a.md) {STAMP} -- ay\n"


@dataclass(frozen=True)
class Layout:
    local: str
    config: str
    family: str  # "spec" (reference and pi) or "opencode"


LAYOUTS = {
    "python": Layout("agent/memory", "agent/memory.jsonc", "spec"),
    "pi": Layout("agent/memory", "agent/memory.jsonc", "spec"),
    "opencode": Layout("home/.config/opencode/memory", "home/.config/opencode/memory.jsonc", "opencode"),
}


@dataclass(frozen=True)
class Target:
    """A store file to replace, the store around it, and the operation that reads it."""

    name: str
    path: str  # {L} local store, {S} shared store, {C} configuration
    valid: bytes
    bad_utf8: bytes
    nul: bytes
    given: dict[str, str]
    op: str
    args: dict[str, Any]
    clock: str = "frozen"


TARGETS = {
    t.name: t
    for t in [
        Target(
            "index", "{L}/MEMORY.md", INDEX_A.encode(),
            INDEX_A.encode() + b"- stray \xff\xfe line\n", INDEX_A.encode() + b"\x00\n",
            {"{C}": "{}\n", "{L}/a.md": topic("A", "ay", "alpha")},
            "write_memory", {"topic": "B", "content": "beta", "summary": "bee"},
        ),
        Target(
            "topic", "{L}/a.md", topic("A", "ay", "alpha").encode(),
            topic("A", "ay", "al\xffpha").encode("latin-1"), topic("A", "ay", "al\x00pha").encode(),
            {"{C}": "{}\n", "{L}/MEMORY.md": INDEX_A},
            "write_memory", {"topic": "A", "content": "more", "summary": "ay"},
        ),
        Target(
            "config", "{C}", b'{"max_lines": 123}\n',
            b'{"max_lines": 123, "always_ask": ["\xff"]}\n', b'{"max_lines": 123}\x00\n',
            {}, "parse_rules", {},
        ),
        Target(
            "tombstones", "{S}/.ocl-removed", b"a.md\n", b"a.md\n\xffx.md\n", b"a.md\n\x00x.md\n",
            {"{C}": '{"shared_dir": true}\n', "{S}/MEMORY.md": INDEX_A, "{S}/a.md": topic("A", "ay", "alpha")},
            "write_memory", {"topic": "A", "content": "back", "summary": "ay"},
        ),
        Target(
            "handoff", "agent/HANDOFF.md", b"## 2026-08-06T10:00:00+00:00 (manual)\n\n- earlier\n",
            b"## 2026-08-06T10:00:00+00:00 (manual)\n\n- ear\xffier\n",
            b"## 2026-08-06T10:00:00+00:00 (manual)\n\n- ear\x00ier\n",
            {"{C}": "{}\n"},
            "write_handoff", {"messages": [{"role": "assistant", "content": [{"type": "text", "text": "- done"}]}],
                              "reason": "manual"},
        ),
        Target(
            "lock", "{L}/.lock", b"4194305\t1\tdead", b"\xff\xfe\t1\tx", b"\x004194305\t1\tx",
            {"{C}": "{}\n", "{L}/MEMORY.md": INDEX_A, "{L}/a.md": topic("A", "ay", "alpha")},
            "write_memory", {"topic": "B", "content": "beta", "summary": "bee"}, clock="offset",
        ),
    ]
}


@dataclass(frozen=True)
class Expect:
    """SPEC's outcome: ``error`` (optionally its code), ``ok`` (result pattern or predicate),
    ``busy``; and the paths the operation may change (all others must keep their bytes)."""

    outcome: str
    result: str | None = None
    code: str | None = None
    changes: frozenset[str] = frozenset()
    max_lines: float | None = None


def spec_expect(target: str, kind: str) -> Expect:
    """What SPEC requires of the reference (and of every conforming implementation)."""
    created = r'Created memory topic "B" \(b\.md\)\.'
    updated = r'Updated memory topic "A" \(a\.md\)\.'
    if target == "index":
        if kind in NON_REGULAR:
            return Expect("error")  # S-IO-2: Unsafe non-regular file / ELOOP / ENXIO
        if kind == "unreadable":
            return Expect("error", code="EACCES")
        return Expect("ok", created, changes=frozenset({"{L}/MEMORY.md", "{L}/b.md"}))
    if target == "topic":
        if kind in NON_REGULAR:
            return Expect("ok", re.escape('Invalid topic: "a.md" is not a regular file.'))
        if kind == "unreadable":
            return Expect("error", code="EACCES")
        return Expect("ok", updated, changes=frozenset({"{L}/MEMORY.md", "{L}/a.md"}))
    if target == "config":  # S-CFG-4/8: followed symlinks (trusted dir), else the fallback record
        followed = kind in ("symlink-in", "symlink-out", "bad-utf8")
        return Expect("ok", max_lines=123 if followed else 300)
    if target == "tombstones":
        if kind in NON_REGULAR:
            return Expect("error")  # S-WRITE-11: errors reading the list propagate before any write
        if kind == "unreadable":
            return Expect("error", code="EACCES")
        return Expect("ok", updated, changes=frozenset({"{S}/.ocl-removed", "{S}/a.md", "{S}/MEMORY.md"}))
    if target == "handoff":  # A-3, the design: no-follow, non-blocking, regular only
        if kind in NON_REGULAR:
            return Expect("error")
        if kind == "unreadable":
            return Expect("error", code="EACCES")
        return Expect("ok", "written", changes=frozenset({"agent/HANDOFF.md"}))
    if target == "lock":
        if kind in NON_REGULAR:
            return Expect("busy")  # S-LOCK-2 step 3: a non-regular lock is never reclaimed
        # unreadable, undecodable or NUL-led content: no pid, 61 s old -> reclaimed (S-LOCK-3)
        return Expect("ok", created, changes=frozenset({"{L}/.lock", "{L}/MEMORY.md", "{L}/b.md"}))
    raise AssertionError(target)


def opencode_expect(target: str, kind: str) -> Expect:
    """The OpenCode peer (Section 20): its own result texts and local store."""
    exp = spec_expect(target, kind)
    created, updated = r"Memory created: .*", r"Memory updated: .*"
    if target == "topic" and kind in NON_REGULAR:
        return Expect("any")
    if exp.result is not None and exp.outcome == "ok" and target != "config":
        exp = Expect(exp.outcome, updated if "Updated" in exp.result else created, exp.code, exp.changes)
    return exp


# documented deviations: (family, target, kind) -> reason; the run must fail (strict xfail)
DEVIATIONS: dict[tuple[str, str, str], str] = {
    ("pi", "handoff", "fifo"): "A-3: the JS core reads HANDOFF.md with a blocking read (hangs)",
    ("pi", "handoff", "symlink-in"): "A-3: the JS core follows a symlinked HANDOFF.md and rewrites its target",
    ("pi", "handoff", "symlink-out"): "A-3: the JS core follows a symlinked HANDOFF.md out of the agent dir",
    ("opencode", "index", "fifo"): "PEER-4: the peer's store reads block on a FIFO",
    ("opencode", "topic", "fifo"): "PEER-4: the peer's store reads block on a FIFO",
    ("opencode", "tombstones", "fifo"): "PEER-4: the peer's store reads block on a FIFO",
    ("opencode", "config", "fifo"): "PEER-4/PEER-9: the peer reads memory.jsonc with a blocking read",
}


def impls() -> list[Any]:
    out: list[Any] = [pytest.param(PeerSpec("python"), id="python")]
    found = {p.kind: p for p in configured_peers()}
    for kind, var in (("pi", ENV_PI), ("opencode", ENV_OPENCODE)):
        reason = f"set {var} to the {kind} peer to run it"
        if kind in found:
            out.append(pytest.param(found[kind], id=kind))
        else:
            out.append(pytest.param(None, id=kind, marks=pytest.mark.skip(reason=reason)))
    return out


# --- building the hostile store ----------------------------------------------------------------


def _rel(text: str, lay: Layout) -> str:
    return text.replace("{L}", lay.local).replace("{S}", "home/.agents/memory").replace("{C}", lay.config)


@dataclass
class Case:
    sandbox: Sandbox
    lay: Layout
    target: Target
    kind: str
    wrapper: list[str] = field(default_factory=list)

    @property
    def path(self) -> Path:
        return self.sandbox.root / _rel(self.target.path, self.lay)


def build(case: Case) -> None:
    sb, t, kind, p = case.sandbox, case.target, case.kind, case.path
    for rel, text in t.given.items():
        sb.put(_rel(rel, case.lay), text)
    p.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "symlink-in":
        real = p.with_name(p.name + ".real")
        real.write_bytes(t.valid)
        os.symlink(real.name, p)
    elif kind == "symlink-out":
        outside = sb.put(OUTSIDE, t.valid)
        os.symlink(outside, p)
    elif kind == "dir":
        p.mkdir()
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        try:
            s.bind(str(p))
        finally:
            s.close()
    else:
        p.write_bytes({"unreadable": t.valid, "bad-utf8": t.bad_utf8, "nul": t.nul}[kind])
    if t.name == "lock" and kind not in NON_REGULAR:
        created = time.time() - 61  # an owner without a readable pid, past the 60 s hard age
        os.utime(p, (created, created))
    if kind == "unreadable":
        os.chmod(p, 0)
        if os.geteuid() == 0:
            if shutil.which("setpriv") is None:
                pytest.skip("running as root and setpriv is missing: cannot make a file unreadable")
            for dirpath, dirnames, filenames in os.walk(sb.root):
                for name in [*dirnames, *filenames]:
                    os.chown(os.path.join(dirpath, name), NOBODY, NOBODY, follow_symlinks=False)
            os.chown(sb.root, NOBODY, NOBODY)
            case.wrapper = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


def readable_by_others(path: Path) -> bool:
    """Whether a user who is neither the owner nor in the group reads ``path``: every folder on
    the way searchable by others, the file readable by others (a peer under /root is not)."""
    path = path.resolve()
    folders_ok = all(os.stat(folder).st_mode & 0o001 for folder in path.parents)
    return folders_ok and bool(os.stat(path).st_mode & 0o004)


@dataclass
class Outcome:
    ok: bool | None  # None: no answer (hang or crash)
    result: Any
    error: dict[str, Any] | None
    seconds: float
    before: dict[str, bytes]
    after: dict[str, bytes]


def run_case(spec: PeerSpec, case: Case) -> Outcome:
    build(case)
    before = snapshot(case.sandbox.root)
    driver: Driver | None = None
    started = time.monotonic()
    try:
        driver = start_driver(spec, case.sandbox.env(), cwd=str(case.sandbox.root), timeout=TIMEOUT,
                              wrapper=case.wrapper)
        if case.target.clock == "offset":  # lock waits need a moving clock (C-3)
            clock = driver.call("set_clock", {"now": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                              "mode": "offset", "tz": "UTC"})
        else:
            clock = driver.call("set_clock", {"now": NOW, "mode": "frozen", "tz": "UTC"})
        assert clock.ok, clock.error
        started = time.monotonic()
        answer = driver.call(case.target.op, case.target.args)
        outcome = Outcome(answer.ok, answer.result, answer.error, time.monotonic() - started, before, {})
    except DriverError as e:
        outcome = Outcome(None, str(e), None, time.monotonic() - started, before, {})
    finally:
        if driver is not None:
            driver.close()
    outcome.after = snapshot(case.sandbox.root)
    return outcome


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    sb = Sandbox.create()  # under /tmp (world-searchable) so a setpriv'd driver can enter it
    try:
        yield sb
    finally:
        for dirpath, dirnames, _ in os.walk(sb.root):
            for d in dirnames:
                p = os.path.join(dirpath, d)
                if not os.path.islink(p):
                    os.chmod(p, 0o755)
        sb.remove()


def check(outcome: Outcome, exp: Expect, case: Case) -> None:
    where = f"{case.target.name}/{case.kind}"
    assert outcome.ok is not None, f"{where}: no answer within {TIMEOUT} s: {outcome.result}"
    if exp.outcome == "error":
        assert outcome.ok is False, f"{where}: expected an error, got {outcome.result!r}"
        if exp.code is not None:
            assert (outcome.error or {}).get("code") == exp.code, f"{where}: {outcome.error}"
    elif exp.outcome == "busy":
        assert outcome.ok and outcome.result == LOCK_BUSY_MESSAGE, f"{where}: {outcome.result!r} {outcome.error}"
    elif exp.outcome == "ok":
        assert outcome.ok, f"{where}: expected a result, got {outcome.error}"
        if exp.result is not None:
            assert re.fullmatch(exp.result, str(outcome.result), re.S), f"{where}: {outcome.result!r}"
        if exp.max_lines is not None:
            assert outcome.result["maxLines"] == exp.max_lines, f"{where}: {outcome.result}"
    allowed = {_rel(c, case.lay) for c in exp.changes}
    changed = sorted(
        k for k in set(outcome.before) | set(outcome.after)
        if outcome.before.get(k) != outcome.after.get(k)
        and k not in allowed
        and not re.search(r"\.tmp-\d+-", k)
        and outcome.after.get(k) != b"<dir>"  # directories made on the way to a lock (S-PATH-8)
        and not (k.endswith("/.lock") and case.target.name != "lock" and outcome.before.get(k) is None
                 and outcome.after.get(k) is None)
    )
    if case.target.name == "config":
        changed = [k for k in changed if k != _rel("{C}", case.lay) or outcome.before.get(k) is not None]
    assert not changed, f"{where}: changed what it must not: {changed}"
    assert outcome.before.get(OUTSIDE) == outcome.after.get(OUTSIDE), f"{where}: the symlink's target was written"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("spec", impls())
def test_hostile_file(spec: PeerSpec, target: str, kind: str, sandbox: Sandbox, request: pytest.FixtureRequest) -> None:
    lay = LAYOUTS[spec.kind]
    if lay.family == "opencode" and target == "handoff":
        pytest.skip("the OpenCode peer has no HANDOFF.md")
    reason = DEVIATIONS.get((spec.kind, target, kind))
    if reason is not None:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
    exp = spec_expect(target, kind) if lay.family == "spec" else opencode_expect(target, kind)
    if kind == "unreadable" and os.geteuid() == 0 and spec.path and not readable_by_others(Path(spec.path)):
        pytest.skip(f"the unreadable cases run the peer as nobody (uid {NOBODY}), who cannot read {spec.path}: "
                    "keep the peer in a folder every user may enter (not under /root)")
    case = Case(sandbox, lay, TARGETS[target], kind)
    outcome = run_case(spec, case)
    if exp.outcome == "any":
        assert outcome.ok is not None, f"{target}/{kind}: no answer within {TIMEOUT} s"
        return
    check(outcome, exp, case)
