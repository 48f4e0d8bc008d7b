"""The peers' own suites against the reference through the facade (issue 18).

Each runs only when its env var names the peer's test file (CI has no peers); the tallies go
to stdout (``pytest -s`` or ``make peer-suites`` shows them).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memconform.harness.drivers.peer_suites import (
    OPENCODE_ENV,
    PI_ENV,
    checks_in,
    in_process_patchers,
    run_opencode,
    run_pi,
)


def named(env: str) -> Path:
    given = os.environ.get(env)
    if not given:
        pytest.skip(f"{env} does not name the peer's test file")
    path = Path(given)
    if not path.is_file():
        pytest.fail(f"{env}={given}: no such file")
    return path


def test_opencode_two_writer_suite_passes_with_the_reference_as_openpi() -> None:
    tally = run_opencode(named(OPENCODE_ENV))
    print(tally.line())
    assert tally.returncode == 0 and tally.passed, tally.output[-2000:]


def test_openpi_core_suite_fails_only_checks_that_patch_the_js_process() -> None:
    test_file = named(PI_ENV)
    checks = len(checks_in(test_file.read_text(encoding="utf-8")))
    tally = run_pi(test_file)
    print(tally.line())
    assert tally.total == checks, tally.output[-2000:]
    assert tally.failed == [], "\n".join(tally.failed)


def test_patchers_are_read_from_the_suite_source() -> None:
    """Assigning a member of fs/process (not process.env, not a comparison) marks a check."""
    source = """
await test('plain', async () => { assert.equal(fs.readFileSync(p) === x, true); });
await test("swaps rename", () => { const r = fs.renameSync; fs.renameSync = () => {}; });
await test('sets env', () => { process.env.TZ = 'UTC'; });
const s = `x`; await test(`kills`, () => { process.kill = () => {}; });
"""
    assert in_process_patchers(source) == {"swaps rename", "kills"}
    assert checks_in(source) == ["plain", "swaps rename", "sets env", "kills"]
