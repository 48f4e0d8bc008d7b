"""What every machine shares: step counters, failure capture, scenario export and seeded runs.

A machine records each step it performs as a scenario step (docs/ARCHITECTURE.md §4).  When a rule or an
invariant fails in Hypothesis' *final* run — the replay of the shrunk example — the recorded
steps become a regression scenario under the export directory, so every failure can be
replayed with ``memconform replay`` on any implementation.  Runs are seeded explicitly and
the seed is attached to the failure, so every failure also reproduces inside Hypothesis.
"""

from __future__ import annotations

import functools
import os
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from hypothesis import currently_in_test_context, event, seed
from hypothesis.control import current_build_context
from hypothesis.errors import HypothesisException
from hypothesis.stateful import RuleBasedStateMachine, get_state_machine_test

from ..drivers.interrupt import stopping
from . import export, profiles

EXPORT_ENV = "MEMCONFORM_EXPORT_DIR"
EXPORT_NOTE = "memconform: regression scenario written to "


@dataclass
class Stats:
    """Counters of one machine class across runs (examples, steps, executed share)."""

    examples: int = 0
    steps: int = 0
    executed: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)
    exported: list[Path] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)

    @property
    def executed_share(self) -> float:
        return self.executed / self.steps if self.steps else 0.0

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]


@dataclass
class RunConfig:
    """Process-wide settings of the current run: where to export, which seed, which impl."""

    export_dir: Path | None = None
    seed: int | None = None
    found_in: str = "memconform-reference"
    export: bool = True  # ``--no-export``: failures are reported, no scenario file written
    accept_weaknesses: bool = False  # a weakness SPEC accepts (S-INV-9) is counted, not failed (the campaign)


CONFIG = RunConfig()


def export_dir() -> Path:
    """The run's directory (``fuzz --export-dir``), else ``MEMCONFORM_EXPORT_DIR``, else a temp
    dir: a test run never writes into the repository."""
    if CONFIG.export_dir is not None:
        return CONFIG.export_dir
    env = os.environ.get(EXPORT_ENV)
    return Path(env) if env else Path(tempfile.gettempdir()) / "memconform-regressions"


def note(text: str) -> None:
    """``hypothesis.event`` when inside a test (machines are also driven by hand in tests)."""
    if currently_in_test_context():
        event(text)


def _is_final_run() -> bool:
    try:
        return bool(current_build_context().is_final)
    except HypothesisException:
        return False


class Machine(RuleBasedStateMachine):
    """Base of the memconform machines: counts steps and exports the final failing example."""

    NAME: ClassVar[str] = "machine"
    CLAUSES: ClassVar[tuple[str, ...]] = ("S-INV-2",)
    EXPORT_UNDER: ClassVar[str] = ""  # a sub-folder of the export dir (host scenarios: "hosts")
    stats: ClassVar[Stats] = Stats()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.stats = Stats()

    def __init__(self) -> None:
        super().__init__()
        self.recorder = export.Recorder(self.NAME)
        self._failed: BaseException | None = None
        type(self).stats.examples += 1

    # --- counting ---------------------------------------------------------------------

    def executed(self, rule: str, outcome: str = "ok", *, ran: bool = True) -> None:
        """One step: ``ran`` says whether it reached the system under test (the share)."""
        if stopping():  # Ctrl-C whose KeyboardInterrupt a gc callback swallowed: stop at this step
            raise KeyboardInterrupt
        stats = type(self).stats
        stats.steps += 1
        stats.executed += ran
        stats.outcomes[f"{rule}: {outcome}"] += 1
        note(f"{rule}: {outcome}")

    # --- failures ---------------------------------------------------------------------

    def scenario_for(self, error: BaseException) -> dict[str, Any] | None:
        """The regression scenario of this (final) failing run; machines refine it."""
        self.recorder.clause(*self.CLAUSES)
        then = self.recorder.then
        if not any(k in then for k in ("files", "matches", "absent", "unchanged", "ignore")):
            # the replay checks the steps' results; every changed file must still be pinned or
            # ignored with a reason (harness.oracles.expect.uncovered)
            reason = f"the {self.NAME} machine pins the op results; its files are checked by its invariants"
            then["ignore"] = [{"path": "agent/*", "reason": reason}, {"path": "home/*", "reason": reason}]
        return self.recorder.scenario(error, found_in=CONFIG.found_in, seed=CONFIG.seed)

    def on_failure(self, error: BaseException) -> None:
        if self._failed is error:
            return
        self._failed = error
        if not _is_final_run():
            return
        stats = type(self).stats
        stats.failures.append(f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")
        if not CONFIG.export:
            return
        try:
            path = self.export_failure(error)
            if path is not None:
                stats.exported.append(path)
                error.add_note(f"{EXPORT_NOTE}{path}")
        except Exception as e:  # export must never hide the real failure
            error.add_note(f"memconform: exporting the regression failed: {e!r}")

    def export_failure(self, error: BaseException) -> Path | None:
        """Write the final failing example under ``export_dir``: a regression scenario (a
        machine whose failures are another kind of file overrides this)."""
        data = self.scenario_for(error)
        return None if data is None else export.write(data, export_dir() / self.EXPORT_UNDER)


F = TypeVar("F", bound=Callable[..., Any])


def guarded(fn: F) -> F:
    """Wrap a rule or invariant so its failure is exported before Hypothesis sees it."""

    @functools.wraps(fn)
    def wrapper(self: Machine, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(self, *args, **kwargs)
        except HypothesisException:
            raise
        except Exception as e:
            self.on_failure(e)
            raise

    return wrapper  # type: ignore[return-value]


def assert_same_files(
    expected: dict[str, bytes], actual: dict[str, bytes], expected_label: str, actual_label: str,
    heading: str = "files differ",
) -> None:
    """Fail with every differing path and the first one's two versions (store and differential
    machines alike)."""
    if actual == expected:
        return
    diff = sorted(k for k in set(actual) | set(expected) if actual.get(k) != expected.get(k))
    first = diff[0]
    raise AssertionError(
        f"{heading} at {diff}: {first}:\n"
        f"  {expected_label} {expected.get(first)!r}\n  {actual_label} {actual.get(first)!r}"
    )


# --- running ------------------------------------------------------------------------------


@contextmanager
def pinned_environment() -> Iterator[None]:
    """UTC and umask 022 for the run (SPEC C-2, C-7), restored afterwards."""
    old_tz, old_mask = os.environ.get("TZ"), os.umask(0o022)
    os.environ["TZ"] = "UTC"
    time.tzset()
    try:
        yield
    finally:
        os.umask(old_mask)
        if old_tz is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = old_tz
        time.tzset()


def run_machine(
    machine: type[Machine],
    *,
    profile: str | None = None,
    seed_value: int | None = None,
    export_to: Path | None = None,
    found_in: str | None = None,
    export: bool = True,
    **overrides: Any,
) -> Stats:
    """Run one machine under a profile with an explicit seed; returns its counters.

    A failure propagates with the seed and the rerun command attached as notes.
    """
    chosen = random.SystemRandom().randrange(2**32) if seed_value is None else seed_value
    scale = getattr(machine, "EXAMPLES_SCALE", 1.0)
    base = profiles.profile(profile)
    if "max_examples" not in overrides:
        overrides["max_examples"] = max(1, round(base.max_examples * scale))
    test = seed(chosen)(get_state_machine_test(machine, settings=profiles.profile(profile, **overrides)))
    previous = (CONFIG.export_dir, CONFIG.seed, CONFIG.found_in, CONFIG.export)
    CONFIG.export_dir, CONFIG.seed, CONFIG.export = export_to or CONFIG.export_dir, chosen, export
    if found_in is not None:
        CONFIG.found_in = found_in
    stats = machine.stats
    t0 = time.monotonic()
    try:
        with pinned_environment():
            test()
    except BaseException as e:
        e.add_note(
            f"memconform: machine {machine.NAME} failed with seed {chosen}; rerun with "
            f"`memconform fuzz --machine {machine.NAME} --seed {chosen} --profile "
            f"{profiles.profile_name(profile)}`"
        )
        print(f"memconform: {machine.NAME} seed {chosen}", file=sys.stderr)
        raise
    finally:
        stats.seconds += time.monotonic() - t0
        CONFIG.export_dir, CONFIG.seed, CONFIG.found_in, CONFIG.export = previous
    return stats
