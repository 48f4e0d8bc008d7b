"""Nemesis findings as regressions: the finding, its minimal history and the schedule that
made it, in one file that ``memconform replay`` re-runs (issue 13 item 4).

A nemesis finding is not a scenario (no single implementation, no fixed steps: writers race
while faults fire), so it is not written through the scenario schema.  The file is a history
(``History.load`` and ``memconform check-history`` read it): its first line is the meta —
the schedule, which implementation each slot ran, the topics, and the finding — and then the
events of the ops the finding names and the faults that overlapped them (for a
non-linearizable store, the checker's smallest failing sub-history).  It is named like every
regression (``regressions.file_stem``: one file per regression key) and ends in
``.nemesis.jsonl``, so the scenario corpus (``*.json``) never picks it up.

Replaying re-runs the schedule against the same implementations ``n`` times: timing is never
the same twice, so the answer is "reproduced k of n runs", not a pass/fail of one run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..checker.history import Event, History, Op
from ..checker.linearize import LinearizabilityVerdict
from ..gate.regressions import DEFAULT_DIR as SCENARIO_REGRESSIONS
from ..gate.regressions import file_stem
from ..oracles.findings import Finding

if TYPE_CHECKING:  # the fault machinery loads only when a nemesis run is replayed
    from ..drivers.peers import PeerSpec

SUFFIX = ".nemesis.jsonl"
DEFAULT_DIR = SCENARIO_REGRESSIONS / "nemesis"
FORMAT = "memconform-nemesis-regression/1"
_TOKEN = re.compile(r"tok-w\d+-\d+")
_WRITER = re.compile(r"\b(w\d+|probe\d+)\b")
_FAULT = re.compile(r"\b[a-z]+(?:-[a-z]+)?#(\d+)\b")
_SPEC_PATH = re.compile(r"\b(pi|opencode|node):/[^\s),;]+")


def portable(text: str) -> str:
    """Text without this machine's peer paths (``pi:/x/memory-core.mjs`` -> ``pi``): ``--impl
    pi`` finds the core through ``$MEMCONFORM_PI_CORE`` wherever it is replayed (issue 22)."""
    return _SPEC_PATH.sub(lambda m: m.group(1) + (":<driver.mjs>" if m.group(1) == "node" else ""), text)


class RunLike(Protocol):
    """What export reads of a run (``faults.nemesis_run.NemesisResult`` is one)."""

    @property
    def history(self) -> History: ...

    @property
    def verdicts(self) -> Mapping[str, LinearizabilityVerdict]: ...


class NemesisFileError(Exception):
    """A file that is not a nemesis regression (or a garbled one): one line for the CLI."""


def is_nemesis_file(path: Path) -> bool:
    return path.name.endswith(SUFFIX)


def _overlap(a: Op, b: Op) -> bool:
    return a.start <= (b.end if b.end is not None else a.start) and b.start <= (a.end if a.end is not None else b.start)


def _named_ops(finding: Finding, ops: list[Op], faults: list[Op]) -> list[Op]:
    """The client ops a finding's evidence names: its tokens' writes; else its writers' ops
    while the faults it names (``family#id``) were on; else its writers' last op."""
    tokens = set(_TOKEN.findall(finding.evidence))
    named = [o for o in ops if o.op == "write_memory" and str(o.args.get("content", "")) in tokens]
    if named:
        return named
    writers = set(_WRITER.findall(finding.evidence))
    ids = {f"nemesis-{n}" for n in _FAULT.findall(finding.evidence)}
    during = [f for f in faults if f.process in ids]
    if writers and during:
        lo = min(f.start for f in during)
        hi = max(f.end if f.end is not None else f.start for f in during)
        named = [o for o in ops if o.process in writers and o.start <= hi and (o.end is None or o.end >= lo)]
        if len(writers) == 2:  # two holders: only their ops that overlapped one another
            named = [o for o in named if any(p.process != o.process and _overlap(o, p) for p in named)]
        if named:
            return named
    last: dict[str, Op] = {}
    for o in ops:
        if o.process in writers:
            last[o.process] = o
    return list(last.values())


def minimal_ops(finding: Finding, result: RunLike) -> list[Op]:
    """What the regression file keeps of the run: the ops that show the finding, for a lost,
    duplicated or split write also the ops on its topics that overlapped them (what they did
    to the topic explains it), and the faults that overlapped any of these.

    A non-linearizable store keeps the checker's smallest failing sub-history; a finding that
    names no op (an invariant, an unavailable store) keeps the faults alone — the schedule in
    the meta line is what replays it.
    """
    ops = result.history.ops()
    faults = result.history.faults()
    if finding.kind == "not-linearizable":
        verdict = result.verdicts.get(finding.path)
        chosen = list(verdict.failing_ops) if verdict is not None else []
    else:
        chosen = _named_ops(finding, ops, faults)
        topical = finding.kind in ("lost-write", "duplicated-write", "split-topic")
        topics = set() if not topical else {str(o.args.get("topic", "")).strip().lower() for o in chosen}
        for o in chosen[:]:
            end = o.end if o.end is not None else max((p.start for p in ops), default=o.start)
            chosen += [p for p in ops if p not in chosen and str(p.args.get("topic", "")).strip().lower() in topics
                       and p.start <= end and (p.end is None or p.end >= o.start)]
    if not chosen:
        return faults
    lo = min(o.start for o in chosen)
    hi = max(o.end if o.end is not None else o.start for o in chosen)
    overlapping = [f for f in faults if f.start <= hi and (f.end is None or f.end >= lo)]
    return sorted({id(o): o for o in chosen + overlapping}.values(), key=lambda o: o.start)


def _events_of(ops: Iterable[Op], history: History) -> list[Event]:
    """The recorded events of ``ops``: each invocation and what completed it."""
    by_process: dict[str, list[Event]] = {}
    for ev in sorted(history.events, key=lambda e: e.time):
        by_process.setdefault(ev.process, []).append(ev)
    out: list[Event] = []
    for op in ops:
        evs = by_process.get(op.process, [])
        for k, ev in enumerate(evs):
            if ev.type == "invoke" and ev.time == op.start:
                out.append(ev)
                if k + 1 < len(evs) and evs[k + 1].type != "invoke":
                    out.append(evs[k + 1])
                break
    return sorted(out, key=lambda e: e.time)


def named_impls(kinds: Mapping[str, Any], labels: Mapping[str, str]) -> dict[str, Any]:
    """Each slot's implementation by kind, name and version (``labels``: spec -> "name version",
    as ``preflight`` reported it), never a path on this machine; a kind with no label stays a
    kind, as older files recorded it."""
    by_kind = {spec.partition(":")[0]: label for spec, label in labels.items()}
    out: dict[str, Any] = {}
    for slot, recorded in kinds.items():
        kind = str(recorded.get("kind") if isinstance(recorded, Mapping) else recorded).partition(":")[0]
        name, _, version = by_kind.get(kind, "").partition(" ")
        out[slot] = {"kind": kind, "name": name, "version": version} if name else kind
    return out


def ran_names(impls: Mapping[str, Any]) -> list[str]:
    """The "name version" of every implementation that ran, in slot order, each once."""
    return list(dict.fromkeys(f"{v['name']} {v['version']}" for v in impls.values()
                              if isinstance(v, Mapping) and v.get("name")))


def regression_stem(finding: Finding, ran: Iterable[str]) -> str:
    """``file_stem`` named for every implementation that ran, the blamed ones first: a
    double holder of two reference writers in a run with OpenCode writers needs OpenCode to
    replay (issue 31 item 6: ``double-holder-memconform-reference-…`` stopped with "peer
    'opencode' needs a path").  The digest stays the finding's, so the key is unchanged."""
    blamed = [x.strip() for x in finding.impl.split(",") if x.strip()]
    extra = [x for x in ran if x not in blamed]
    stem = file_stem(finding)
    if not extra:
        return stem
    named = file_stem(replace(finding, impl=", ".join([*blamed, *extra])))
    return f"{named.rsplit('-', 1)[0]}-{stem.rsplit('-', 1)[1]}"


def export(
    finding: Finding,
    result: RunLike,
    *,
    directory: Path | None = None,
    runs_seen: str = "",
    labels: Mapping[str, str] | None = None,
) -> Finding:
    """Write the regression of a nemesis ``finding``; return the finding pointing at it.

    An existing file for the same regression key is kept (the same defect found twice is
    written once, as ``regressions.export`` does).  With ``labels`` each writer is recorded by
    kind, name and version, and the file is named for every implementation that ran.
    """
    target = DEFAULT_DIR if directory is None else directory
    target.mkdir(parents=True, exist_ok=True)
    impls = named_impls(dict(result.history.meta.get("impls") or {}), labels or {})
    path = target / f"{regression_stem(finding, ran_names(impls))}{SUFFIX}"
    if not path.exists():
        meta = dict(result.history.meta)
        meta["impls"] = impls
        meta["regression"] = {
            "format": FORMAT,
            "kind": finding.kind,
            "severity": finding.severity,
            "clause": finding.clause,
            "impl": finding.impl,
            "op": finding.op,
            "path": finding.path,
            "evidence": portable(finding.evidence),
            "command": portable(finding.reproduce),
            "seen": runs_seen,
        }
        kept = History(_events_of(minimal_ops(finding, result), result.history), meta=meta)
        kept.save(path)
    return finding.with_regression(str(path))


@dataclass
class NemesisRegression:
    """A loaded nemesis regression: what was found, and how to run it again."""

    path: Path
    finding: dict[str, Any]
    schedule: dict[str, Any]
    impls: dict[str, str]  # slot -> implementation kind (older files: a peer spec with its path)
    topics: list[str]
    hardened: bool
    history: History = field(repr=False)

    @property
    def scheduled(self) -> dict[str, Any] | None:
        """A scheduled run's schedule (strategy, seed, every step), when the finding came from one."""
        got = self.history.meta.get("scheduled")
        return got if isinstance(got, dict) and got.get("steps") else None

    @property
    def specs(self) -> list[str]:
        """The implementation kinds in slot order (round-robin: the first of each, in order)."""
        names = [self.impls[k].partition(":")[0] for k in sorted(self.impls, key=lambda s: int(re.sub(r"\D", "", s) or 0))]
        return list(dict.fromkeys(names))


def load(path: Path) -> NemesisRegression:
    if path.is_dir():
        raise NemesisFileError(f"{path}: is a directory; give a {SUFFIX} file")
    if not path.exists():
        raise NemesisFileError(f"{path}: no such file")
    try:
        history = History.load(path)
    except (UnicodeDecodeError, ValueError) as e:
        raise NemesisFileError(f"{path}: not a nemesis regression: {e}") from None
    meta = history.meta
    reg = meta.get("regression")
    if not isinstance(reg, dict) or reg.get("format") != FORMAT or not isinstance(meta.get("schedule"), dict):
        raise NemesisFileError(f"{path}: not a nemesis regression (no schedule and finding in its first line)")
    impls = meta.get("impls") or {}
    if not isinstance(impls, dict) or not impls:
        raise NemesisFileError(f"{path}: the regression names no implementation")
    kinds = {str(k): str(v.get("kind", "")) if isinstance(v, dict) else str(v) for k, v in impls.items()}
    return NemesisRegression(path, reg, meta["schedule"], kinds,
                             [str(t) for t in meta.get("topics") or []], bool(meta.get("hardened", False)), history)


@dataclass
class ReplayRun:
    n: int
    reproduced: bool
    seen: list[Finding]
    seconds: float
    diverged: str = ""  # a scheduled replay whose store calls left the recorded ones


def matches(found: Finding, wanted: dict[str, Any]) -> bool:
    """Whether a replay's finding is the recorded one: same kind, same implementations (the
    severity may move between violation and weakness with which faults overlapped)."""
    return found.kind == wanted.get("kind") and _impls(found.impl) == _impls(str(wanted.get("impl", "")))


def _impls(text: str) -> frozenset[str]:
    """The implementations a finding names, in any order ("a, b" is "b, a")."""
    return frozenset(x.strip() for x in text.split(",") if x.strip())


def replay(
    reg: NemesisRegression,
    peers: list[PeerSpec],
    *,
    runs: int,
    labels: dict[str, str],
    timeout: float = 30.0,
    check_budget: float = 10.0,
    on_run: Callable[[ReplayRun], None] | None = None,
) -> list[ReplayRun]:
    """Re-run the recorded schedule ``runs`` times against ``peers``; each run's findings and
    whether the recorded one is among them.  A scheduled run's steps are enforced: a run whose
    store calls differ from the recorded ones is diverged, not reproduced."""
    import time

    from .nemesis import Schedule
    from .run import run_nemesis

    schedule = Schedule.from_json(reg.schedule)
    topics = tuple(reg.topics) if reg.topics else None
    out = []
    for n in range(1, runs + 1):
        started = time.monotonic()
        kwargs: dict[str, Any] = {"timeout": timeout, "check_budget": check_budget, "hardened": reg.hardened}
        if topics:
            kwargs["topics"] = topics
        diverged = ""
        if reg.scheduled is not None:
            result, diverged = _enforce(reg.scheduled, peers, schedule, kwargs)
        else:
            result = run_nemesis(peers, schedule, **kwargs)
        seen = result.findings(labels, reg.finding.get("command", ""))
        run = ReplayRun(n, not diverged and any(matches(f, reg.finding) for f in seen), seen,
                        time.monotonic() - started, diverged)
        if on_run is not None:
            on_run(run)
        out.append(run)
    return out


def _enforce(scheduled: dict[str, Any], peers: list[PeerSpec], schedule: Any,
             kwargs: dict[str, Any]) -> tuple[Any, str]:
    """A scheduled finding's run again under its recorded picks; where it left them, if it did."""
    from .scheduled import run_scheduled
    from .strategies import Replay

    recorded = [f"{w} {c}" for w, c in scheduled["steps"]]
    done = run_scheduled(peers, schedule, Replay([str(w) for w, _ in scheduled["steps"]], strict=True),
                         seed=int(scheduled.get("seed", 0)), **kwargs)
    calls = [f"{s.writer} {s.call}" for s in done.steps]
    at = next((i for i, (a, b) in enumerate(zip(calls, recorded, strict=False)) if a != b), None)
    if at is not None:  # the first call that differs says more than where the picks ran out
        return done.result, f"step {at}: {calls[at]}, recorded {recorded[at]}"
    if done.void:
        return done.result, done.void
    if len(calls) == len(recorded):
        return done.result, ""
    at = min(len(calls), len(recorded))
    got = calls[at] if at < len(calls) else "the end"
    want = recorded[at] if at < len(recorded) else "the end"
    return done.result, f"step {at}: {got}, recorded {want}"


def describe(reg: NemesisRegression) -> str:
    f = reg.finding
    return f"[{f.get('severity')}] {f.get('kind')} {f.get('impl')}: {str(f.get('evidence', ''))[:160]}"


def to_json(runs: list[ReplayRun]) -> list[dict[str, Any]]:
    return [{"run": r.n, "reproduced": r.reproduced, "seconds": round(r.seconds, 2), "diverged": r.diverged,
             "findings": [f.to_json() for f in r.seen]} for r in runs]
