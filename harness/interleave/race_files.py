"""A race finding as a regression: the situation, the implementations by name and version,
and the schedule (the picks, and the store calls each made), in one ``*.race.jsonl`` file that
``memconform replay`` enforces and re-runs k of n times.  Its first line is the meta (format,
situation, implementations, finding, sizes before and after shrinking), then one line a step:
``{"writer": "w1", "call": "unlink(.lock) = 0"}``.  JSON Lines, so the scenario corpus
(``*.json``) never picks it up.

No machine path is recorded: a writer's implementation is its kind (``python``, ``pi``,
``opencode``, ``node``) with the name and version it gave in ``hello``; replay finds it here
from ``--impl`` (or ``$MEMCONFORM_PI_CORE`` / ``$MEMCONFORM_OPENCODE_PLUGIN``).  A replay is
strict: the picks are followed exactly, and a run whose store calls differ from the recorded
ones is reported as diverged, not as reproduced.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..drivers.peers import PeerSpec
from ..gate.regressions import DEFAULT_DIR as SCENARIO_REGRESSIONS
from ..gate.regressions import file_stem
from ..oracles.findings import Finding
from . import slot
from .scheduler import RunResult, Situation
from .strategies import Step, switches

SUFFIX = ".race.jsonl"
DEFAULT_DIR = SCENARIO_REGRESSIONS / "races"
FORMAT = "memconform-race-regression/1"


class RaceFileError(Exception):
    """Not a race regression, or a garbled one: one line for the CLI."""


def is_race_file(path: Path) -> bool:
    return path.name.endswith(SUFFIX)


@dataclass(frozen=True)
class RaceRegression:
    path: Path
    situation: Situation
    impls: list[dict[str, str]]  # per writer: kind, name, version
    hardened: bool
    picks: list[str]
    calls: list[str]
    finding: dict[str, Any]
    before: dict[str, int]  # the schedule before shrinking: steps, switches


def _finding_json(f: Finding) -> dict[str, Any]:
    return {"kind": f.kind, "severity": f.severity, "clause": f.clause, "impl": f.impl, "evidence": f.evidence}


def to_lines(finding: Finding, shrunk: RunResult, original: RunResult, kinds: Sequence[dict[str, str]],
             hardened: bool) -> list[dict[str, Any]]:
    s = shrunk.situation
    meta = {
        "format": FORMAT,
        "situation": {"name": s.name, "lock": s.lock, "age_s": s.age_s, "why": s.why, "kill_after": s.kill_after,
                      "start_after": s.start_after, "killable": s.killable, "store": s.store, "carry": s.carry,
                      "ops": [[[op, args] for op, args in script] for script in s.ops]},
        "impls": list(kinds),
        "hardened": hardened,
        "finding": _finding_json(finding),
        "schedule": {"steps": len(shrunk.steps), "switches": switches(shrunk.picks)},
        "before_shrinking": {"steps": len(original.steps), "switches": switches(original.picks)},
    }
    return [meta, *({"writer": st.writer, "call": st.call} for st in shrunk.steps)]


def export(finding: Finding, shrunk: RunResult, original: RunResult, kinds: Sequence[dict[str, str]],
           hardened: bool, directory: Path | None = None) -> Path:
    """Write the regression; one file per finding key (a later run of the same key replaces it)."""
    directory = directory or DEFAULT_DIR
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{file_stem(finding)}-{shrunk.situation.name}{SUFFIX}"
    lines = to_lines(finding, shrunk, original, kinds, hardened)
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return path


def load(path: Path) -> RaceRegression:
    if path.is_dir():
        raise RaceFileError(f"{path}: is a directory")
    try:
        lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    except FileNotFoundError:
        raise RaceFileError(f"{path}: no such file") from None
    except (OSError, ValueError) as e:
        raise RaceFileError(f"{path}: not a race regression ({e})") from None
    data = lines[0] if lines else None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise RaceFileError(f"{path}: not a race regression (format is not {FORMAT})")
    try:
        s = data["situation"]
        ops = tuple(tuple((str(op), dict(args)) for op, args in script) for script in s["ops"])
        kill, gate, killable = s.get("kill_after"), s.get("start_after"), s.get("killable")
        sit = Situation(str(s["name"]), str(s["lock"]), float(s["age_s"]), ops, str(s.get("why", "")),
                        None if kill is None else (int(kill[0]), str(kill[1])),
                        None if gate is None else (int(gate[0]), str(gate[1])),
                        None if killable is None else int(killable), str(s.get("store", "shared")),
                        bool(s.get("carry", False)))
        steps = [(str(x["writer"]), str(x["call"])) for x in lines[1:]]
        impls = [{k: str(v) for k, v in i.items()} for i in data["impls"]]
        if len(impls) != sit.writers or any("kind" not in i for i in impls):
            raise ValueError("one implementation per writer, each with its kind")
        if not steps:
            raise ValueError("no steps")
        return RaceRegression(path, sit, impls, bool(data.get("hardened")), [w for w, _ in steps],
                              [f"{w} {c}" for w, c in steps], dict(data["finding"]),
                              dict(data.get("before_shrinking", {})))
    except (KeyError, TypeError, ValueError) as e:
        raise RaceFileError(f"{path}: garbled race regression ({e})") from None


def resolve(reg: RaceRegression, given: Sequence[PeerSpec]) -> list[PeerSpec]:
    """Each recorded writer's implementation here (``slot.resolve``: by kind)."""
    return slot.resolve([i["kind"] for i in reg.impls], list(given))


@dataclass(frozen=True)
class ReplayRun:
    n: int
    reproduced: bool
    diverged: str
    seen: list[str]
    seconds: float


def replay(reg: RaceRegression, peers: Sequence[PeerSpec], *, runs: int, labels: dict[str, str] | None = None,
           timeout: float = 30.0, hardened: bool | None = None,
           on_run: Callable[[ReplayRun], None] | None = None) -> list[ReplayRun]:
    """Enforce the recorded picks ``runs`` times (one writer per recorded implementation, in
    order): reproduced when the run made the recorded store calls and shows the finding's kind."""
    from .scheduler import run_schedule
    from .strategies import Diverged, Replay

    out = []
    kind = str(reg.finding.get("kind"))
    for n in range(1, runs + 1):
        diverged = ""
        seen: list[str] = []
        seconds = 0.0
        try:
            r = run_schedule(peers, reg.situation, Replay(reg.picks, strict=True),
                             hardened=reg.hardened if hardened is None else hardened, labels=labels, timeout=timeout)
            seconds = r.seconds
            seen = sorted({f.kind for f in r.findings})
            if r.void:
                raise Diverged(f"void run: {r.void}")
            calls = [f"{st.writer} {st.call}" for st in r.steps]
            if calls != reg.calls:
                at = next((i for i, (a, b) in enumerate(zip(calls, reg.calls, strict=False)) if a != b),
                          min(len(calls), len(reg.calls)))
                got = calls[at] if at < len(calls) else "the end"
                want = reg.calls[at] if at < len(reg.calls) else "the end"
                diverged = f"step {at}: {got}, recorded {want}"
        except Diverged as e:
            diverged = str(e)
        run = ReplayRun(n, not diverged and kind in seen, diverged, seen, seconds)
        out.append(run)
        if on_run is not None:
            on_run(run)
    return out


def describe(reg: RaceRegression) -> str:
    impls = ", ".join(f"{i.get('name', i['kind'])} {i.get('version', '')}".strip() for i in reg.impls)
    return (f"{reg.finding.get('severity')} {reg.finding.get('kind')} in {reg.situation.name} "
            f"({impls}{', hardened' if reg.hardened else ''}): {len(reg.picks)} steps, {switches(reg.picks)} switches")


def steps_text(steps: Sequence[Step], writers: Sequence[str] | None = None) -> list[str]:
    """The racing calls, one line a step, for the terminal."""
    return [f"{i:3d} {s.writer} {s.call}" for i, s in enumerate(steps) if writers is None or s.writer in writers]
