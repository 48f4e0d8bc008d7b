"""Scenario files: load, validate against the schema, type, select, substitute (docs/ARCHITECTURE.md §4).

A scenario is language-neutral JSON; this module reads and checks it once, into frozen
``Scenario`` / ``Step`` / ``Expect`` values that the runner and the oracles consume, so no
other module walks the raw JSON.  Running one is ``runner.py``'s job.
"""

from __future__ import annotations

import base64
import fnmatch
import json
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from ..drivers.validation import first_error

# The corpus is package data of the one namespace: memconform/scenarios in a wheel, the
# repository's scenarios/ (linked from memconform/) in a clone.
SCENARIOS_DIR = Path(str(resources.files("memconform") / "scenarios"))
SCHEMA_PATH = SCENARIOS_DIR / "scenario.schema.json"
DEFAULT_NOW = "2026-08-07T01:02:50Z"
DEFAULT_TZ = "UTC"
_PLACEHOLDER = re.compile(r"\$\{(AGENT|HOME|LOCAL|SHARED|ROOT|PID|CARRY(?:_[AB])?)\}")
# Step ops the harness performs on the sandbox itself; every other op goes to the driver.
FILE_ACTIONS = frozenset(
    {"put_file", "delete_file", "mkfifo", "mkdir", "symlink", "plant_lock", "advance_clock", "chmod"}
)
Content = str | dict[str, str]  # file content: UTF-8 text, or {"base64": ...}
# docs/ARCHITECTURE.md §7.  A scenario without ``profiles`` is openpi's: the whole of SPEC.md, result
# texts included.  Joining the shared-store contract is a claim its author makes explicitly.
PROFILES = ("openpi", "shared-store")
DEFAULT_PROFILES = ("openpi",)


class ScenarioError(Exception):
    """A malformed scenario file: names the file and the JSON path."""

    def __init__(self, path: Path | str, json_path: str, message: str) -> None:
        super().__init__(f"{path}: {json_path}: {message}")
        self.path, self.json_path, self.message = str(path), json_path, message


@dataclass(frozen=True)
class Clock:
    """The clock a scenario runs under: an instant, a zone, and frozen or moving."""

    now: str = DEFAULT_NOW
    tz: str = DEFAULT_TZ
    mode: str = "frozen"  # frozen | offset

    @property
    def now_ms(self) -> int:
        return instant_ms(self.now)


@dataclass(frozen=True)
class ErrorExpect:
    """What an error answer must carry; ``code`` may be expected to be null (``has_code``)."""

    kind: str | None = None
    code: str | None = None
    has_code: bool = False
    message: str | None = None
    message_matches: str | None = None


@dataclass(frozen=True)
class Expect:
    """A step's expectation; ``result`` may be expected to be null (``has_result``)."""

    result: Any = None
    has_result: bool = False
    result_matches: str | None = None
    result_contains: tuple[str, ...] = ()
    result_excludes: tuple[str, ...] = ()
    error: ErrorExpect | None = None
    stderr_contains: tuple[str, ...] = ()
    max_seconds: float | None = None
    min_seconds: float | None = None
    outcome: tuple[str, ...] = ()  # shared-store profile: the accepted kinds (oracles.outcome_kind)

    @property
    def wants_result(self) -> bool:
        """Some expectation is about the result, so an error answer is a failure."""
        return bool(
            self.has_result or self.result_matches is not None or self.result_contains or self.result_excludes
        )


@dataclass(frozen=True)
class Step:
    """One request to the driver, or one file action the harness performs itself."""

    op: str
    args: dict[str, Any] = field(default_factory=dict)
    expect: Expect = Expect()
    worker: str | None = None
    timeout: float | None = None  # this step's own per-op timeout (s)
    note: str = ""
    by: str | None = None  # cross-tool sequences: "A" (--impl) or "B" (--with) runs it

    @property
    def is_file_action(self) -> bool:
        return self.op in FILE_ACTIONS


@dataclass(frozen=True)
class Given:
    """The sandbox before the first step."""

    files: dict[str, Content] = field(default_factory=dict)
    fifos: tuple[str, ...] = ()
    dirs: tuple[str, ...] = ()
    symlinks: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Then:
    """The sandbox after the last step; ``invariants`` is ``"all"`` or check names."""

    files: dict[str, Content] = field(default_factory=dict)
    matches: dict[str, str] = field(default_factory=dict)
    absent: tuple[str, ...] = ()
    present: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    modes: dict[str, str] = field(default_factory=dict)
    invariants: str | tuple[str, ...] | None = None
    no_other_files: tuple[str, ...] = ()
    ignore: tuple[Ignore, ...] = ()
    store: dict[str, Content] = field(default_factory=dict)  # compared under oracles.store_norm
    excludes: dict[str, tuple[str, ...]] = field(default_factory=dict)  # dir -> texts no file under it holds


@dataclass(frozen=True)
class Ignore:
    """A changed file ``then`` deliberately leaves unpinned (``path`` may be a glob), and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class Scenario:
    """A scenario file, typed.  ``data`` keeps the JSON as read, for exporters and tools.

    Build one with ``load_file`` (schema-checked) or ``Scenario.from_data``; ``bind`` fills
    in placeholders.
    """

    id: str
    clauses: tuple[str, ...]
    data: dict[str, Any]
    path: Path
    clock: Clock
    steps: tuple[Step, ...]
    given: Given
    then: Then
    env: dict[str, str]
    fresh_process: bool
    faults: tuple[dict[str, Any], ...]  # ``regression.inject``: syscall faults under strace
    placeholders: frozenset[str]  # the placeholder names used anywhere in the file
    profiles: tuple[str, ...] = DEFAULT_PROFILES  # docs/ARCHITECTURE.md §7: the contracts it belongs to

    @classmethod
    def from_data(cls, data: dict[str, Any], path: Path) -> Scenario:
        """The typed form of a scenario's JSON, assumed valid against the schema."""
        given, then = data.get("given", {}), data.get("then", {})
        invariants = then.get("invariants")
        return cls(
            id=data["id"],
            clauses=tuple(data["clauses"]),
            data=data,
            path=path,
            clock=Clock(**data.get("clock", {})),
            steps=tuple(_step(s) for s in data.get("steps", ())),  # a host scenario has a script instead
            given=Given(
                dict(given.get("files", {})), tuple(given.get("fifos", ())), tuple(given.get("dirs", ())),
                dict(given.get("symlinks", {})),
            ),
            then=Then(
                dict(then.get("files", {})), dict(then.get("matches", {})), tuple(then.get("absent", ())),
                tuple(then.get("present", ())), tuple(then.get("unchanged", ())), dict(then.get("modes", {})),
                invariants if invariants is None or isinstance(invariants, str) else tuple(invariants),
                tuple(then.get("no_other_files", ())),
                tuple(Ignore(str(i["path"]), str(i["reason"])) for i in then.get("ignore", ())),
                dict(then.get("store", {})),
                {d: tuple(v) for d, v in then.get("excludes", {}).items()},
            ),
            env=dict(data.get("env", {})),
            fresh_process=bool(data.get("fresh_process")),
            faults=_faults(data.get("regression", {}).get("inject")),
            placeholders=frozenset(_PLACEHOLDER.findall(json.dumps(data))),
            profiles=tuple(data.get("profiles", DEFAULT_PROFILES)),
        )

    def bind(self, names: dict[str, str]) -> Scenario:
        """This scenario with the placeholders ``names`` gives filled in (others stay)."""
        if not self.placeholders & names.keys():
            return self
        return Scenario.from_data(substitute(self.data, names), self.path)

    @property
    def is_regression(self) -> bool:
        """A replayable finding (``regression`` block): it pins the defect it reproduces, not
        every byte the implementation that showed it happened to leave."""
        return "regression" in self.data

    @property
    def needs_fresh_process(self) -> bool:
        return self.fresh_process or bool(self.env)

    @property
    def real_time(self) -> bool:
        """``real_time``: it must run on the real clock and a quiet machine (serial tail)."""
        return bool(self.data.get("real_time"))

    @property
    def driver_ops(self) -> set[str]:
        """The ops the driver must offer (file actions are the harness's own)."""
        return {s.op for s in self.steps if not s.is_file_action}


def _faults(inject: Any) -> tuple[dict[str, Any], ...]:
    """``regression.inject``: one fault object or a list of them (anything else: none)."""
    faults = [inject] if isinstance(inject, dict) else inject if isinstance(inject, list) else []
    return tuple(faults) if all(isinstance(f, dict) for f in faults) else ()


def _step(data: dict[str, Any]) -> Step:
    e = data.get("expect", {})
    err = e.get("error")
    error = None
    if err is not None:
        error = ErrorExpect(
            err.get("kind"), err.get("code"), "code" in err, err.get("message"), err.get("message_matches")
        )
    expect = Expect(
        e.get("result"), "result" in e, e.get("result_matches"), tuple(e.get("result_contains", ())),
        tuple(e.get("result_excludes", ())), error, tuple(e.get("stderr_contains", ())),
        e.get("max_seconds"), e.get("min_seconds"), _kinds(e.get("outcome")),
    )
    return Step(data["op"], dict(data.get("args", {})), expect, data.get("worker"), data.get("timeout"), data.get("note", ""),
                data.get("by"))


def _kinds(outcome: Any) -> tuple[str, ...]:
    """``expect.outcome``: one kind or a list of accepted kinds."""
    if outcome is None:
        return ()
    return (outcome,) if isinstance(outcome, str) else tuple(outcome)


def instant_ms(text: str) -> int:
    """Epoch ms of an ISO-8601 instant (``Z`` or an offset; none means UTC)."""
    stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return round(stamp.timestamp() * 1000)


def iso_instant(ms: int) -> str:
    """``YYYY-MM-DDTHH:MM:SS.mmmZ`` of epoch ms: the instant ``set_clock`` is sent."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def load_file(path: Path, *, validate: bool = True) -> Scenario:
    """Read, schema-check (unless ``validate`` is off) and type one scenario file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise ScenarioError(path, "$", f"not UTF-8: {e}") from None
    except json.JSONDecodeError as e:
        raise ScenarioError(path, "$", f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    error = first_error(SCHEMA_PATH, data) if validate else None
    if error is not None:
        raise ScenarioError(path, *error)
    return Scenario.from_data(data, path)


def discover(
    root: Path | None = None,
    run: list[str] | None = None,
    skip: list[str] | None = None,
    *,
    validate: bool = True,
) -> list[Scenario]:
    """Every scenario under ``root`` (default: ``scenarios/conformance``), sorted by id.

    ``run``/``skip`` are globs over scenario ids.  Duplicate ids are an error.  ``validate``
    off skips the JSON Schema check (a third of the gate's fixed cost) for a corpus already
    checked elsewhere: the built-in one, which the test suite validates file by file.
    """
    base = root or SCENARIOS_DIR / "conformance"
    found: dict[str, Scenario] = {}
    for path in sorted(base.rglob("*.json")):
        if path.name.endswith(".schema.json"):
            continue
        sc = load_file(path, validate=validate)
        if sc.id in found:
            raise ScenarioError(path, "$.id", f"duplicate id {sc.id!r} (also {found[sc.id].path})")
        found[sc.id] = sc
    selected = [
        sc
        for sid, sc in sorted(found.items())
        if (not run or any(fnmatch.fnmatchcase(sid, g) for g in run))
        and not (skip and any(fnmatch.fnmatchcase(sid, g) for g in skip))
    ]
    return selected


def content_bytes(content: str | dict[str, str]) -> bytes:
    """A scenario file content: a string (UTF-8; lone surrogates → U+FFFD) or base64."""
    if isinstance(content, dict):
        return base64.b64decode(content["base64"])
    return content.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


def substitute(value: Any, names: dict[str, str]) -> Any:
    """Replace ``${AGENT}`` … placeholders everywhere in a JSON value."""
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda m: names.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        return [substitute(v, names) for v in value]
    if isinstance(value, dict):
        return {substitute(k, names): substitute(v, names) for k, v in value.items()}  # paths too: ${CARRY}
    return value


DEFAULT_NOW_MS = instant_ms(DEFAULT_NOW)
"""The fixed instant every scenario, machine and faulted run pins its clock to, in epoch ms."""
