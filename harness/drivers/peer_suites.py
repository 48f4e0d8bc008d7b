"""The peers' own JS test suites, run against the reference through the facade (issue 18).

The facade (``harness/drivers/node/reference-core.mjs``) has openpi's ``memory-core.mjs`` API; each
export is answered by a ``serve`` process. Two suites written by the peers' authors run
against it unchanged:

- openclaude-memory's ``tests/shared-store-test.mjs``, given the facade as the openpi core:
  an OpenCode writer and the reference writing one shared store in parallel processes.
- openpi-memory's ``tests/core.test.mjs``, in a temporary copy of the peer's tree whose
  ``extensions/memory-core.mjs`` is the facade.

A check that replaces a member of Node's ``fs`` or ``process`` (``fs.renameSync = …``,
``process.kill = …``) injects faults into the JS process only; the reference runs in another
process and never sees them, so such a check is *not applicable*. Which checks do that is
read from the suite's source, never listed here. Nothing of the peers is kept in the repo.

``python -m memconform.harness.drivers.peer_suites`` runs the suites the environment names
(MEMCONFORM_OPENCODE_TESTS, MEMCONFORM_PI_TESTS) and prints their tallies (``make peer-suites``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

FACADE = Path(__file__).resolve().parent / "node" / "reference-core.mjs"
OPENCODE_ENV = "MEMCONFORM_OPENCODE_TESTS"
PI_ENV = "MEMCONFORM_PI_TESTS"
TIMEOUT_S = 600.0

_TEST_START = re.compile(r"\bawait\s+test\(\s*(['\"`])((?:\\.|(?!\1).)*)\1")
# Replacing a member of Node's fs or process (process.env excluded: the JS core too reads it
# at import only); `==`/`===` comparisons are not assignments.
_IN_PROCESS_PATCH = re.compile(r"\b(?:fs|process)\.(?!env\b)\w+\s*=(?!=)")
_RESULT = re.compile(r"^\s*(PASS|FAIL)\s{2}(.*)$")


@dataclass
class Tally:
    """A suite's outcome: checks by verdict; ``not_applicable`` patch the JS process itself."""

    suite: str
    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    not_applicable: list[str] = field(default_factory=list)
    returncode: int = 0
    output: str = ""

    @property
    def total(self) -> int:
        return len(self.passed) + len(self.failed) + len(self.not_applicable)

    def line(self) -> str:
        return (
            f"{self.suite}: {len(self.passed)} passed, {len(self.failed)} failed, "
            f"{len(self.not_applicable)} not applicable (of {self.total})"
        )


def checks_in(source: str) -> list[str]:
    """The names of a suite's checks (``await test('name', …)``), in order."""
    return [m.group(2) for m in _TEST_START.finditer(source)]


def in_process_patchers(source: str) -> set[str]:
    """Names of the checks whose body (up to the next check) assigns to a member of fs/process."""
    starts = list(_TEST_START.finditer(source))
    out = set()
    for here, after in zip(starts, [*starts[1:], None], strict=True):
        body = source[here.end() : after.start() if after else len(source)]
        if _IN_PROCESS_PATCH.search(body):
            out.add(here.group(2))
    return out


def _env(home: str, python: str) -> dict[str, str]:
    """The caller's environment with every storage root in ``home`` (never the real home)."""
    env = dict(os.environ)
    env.update(
        HOME=home,
        XDG_CONFIG_HOME=os.path.join(home, "config"),
        PI_CODING_AGENT_DIR=os.path.join(home, "pi"),
        PI_SHARED_MEMORY_HOME=home,
        OCL_SHARED_MEMORY_HOME=home,
        MEMCONFORM_PYTHON=python,
    )
    return env


def run_opencode(test_file: Path, *, python: str = sys.executable) -> Tally:
    """openclaude's two-writer test with the facade as the openpi core: one check."""
    with tempfile.TemporaryDirectory(prefix="memconform-peer-suite-") as home:
        proc = subprocess.run(
            ["node", str(test_file), str(FACADE)],
            cwd=test_file.parent.parent,
            env=_env(home, python),
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    tally = Tally("openclaude tests/shared-store-test.mjs", returncode=proc.returncode)
    tally.output = proc.stdout + proc.stderr
    (tally.passed if proc.returncode == 0 else tally.failed).append(test_file.name)
    return tally


def run_pi(test_file: Path, *, python: str = sys.executable) -> Tally:
    """openpi's core suite in a temporary copy of its tree, the facade as its core."""
    peer_root = test_file.resolve().parent.parent
    patchers = in_process_patchers(test_file.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="memconform-peer-suite-") as home:
        tree = Path(home) / "peer"
        shutil.copytree(peer_root, tree, ignore=shutil.ignore_patterns(".git", "node_modules"))
        core = tree / "extensions" / "memory-core.mjs"
        core.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(FACADE, core)
        proc = subprocess.run(
            ["node", str(tree / test_file.resolve().relative_to(peer_root))],
            cwd=tree,
            env=_env(home, python),
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    tally = Tally("openpi tests/core.test.mjs", returncode=proc.returncode)
    tally.output = proc.stdout + proc.stderr
    for line in tally.output.splitlines():
        m = _RESULT.match(line)
        if m is None:
            continue
        verdict, name = m.groups()
        if name in patchers:
            tally.not_applicable.append(name)
        else:
            (tally.passed if verdict == "PASS" else tally.failed).append(name)
    return tally


def main() -> int:
    """Run what the environment names; exit 1 if a suite has an applicable failure."""
    runs = [(OPENCODE_ENV, run_opencode), (PI_ENV, run_pi)]
    bad = False
    for env, run in runs:
        given = os.environ.get(env)
        if not given:
            print(f"{env} not set: suite skipped")
            continue
        tally = run(Path(given))
        print(tally.line())
        for name in tally.failed:
            print(f"  FAILED {name}")
        for name in tally.not_applicable:
            print(f"  not applicable (patches the JS process's fs/process) {name}")
        bad = bad or bool(tally.failed) or tally.total == 0
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
