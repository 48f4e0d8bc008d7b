"""The machines as collected Hypothesis tests for HypoFuzz (issue 16 item 7): pytest collects
one test per machine from ``memconform.harness.machines.campaign``, refuses the self-differential on the
reference with a reason, and runs a machine against the shared example database named by
``MEMCONFORM_HYPOTHESIS_DB`` (here a directory), in a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from memconform.harness.faults.strace import strace_unavailable


def _pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COV_CORE", "MEMCONFORM_"))}
    env |= {"MEMCONFORM_HYPOTHESIS_DB": str(tmp_path / "db"), "MEMCONFORM_EXPORT_DIR": str(tmp_path / "exp"),
            "MEMCONFORM_CAMPAIGN_EXAMPLES": "1", "MEMCONFORM_IMPL": "python"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "-rs", "--pyargs", "memconform.harness.machines.campaign", *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_every_machine_is_collected_and_one_runs_on_the_shared_database(tmp_path: Path) -> None:
    ran = _pytest(tmp_path, "-vv")  # one example per machine: a look, not a campaign
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    for name in ("store_model", "rollback", "lock_holders", "session", "shared_store"):
        assert f"Test_{name}::runTest PASSED" in ran.stdout, ran.stdout
    if strace_unavailable() is None:  # real writers under the syscall scheduler: its first example has no preemption
        assert "Test_lock_protocol::runTest PASSED" in ran.stdout and "6 passed, 1 skipped" in ran.stdout, ran.stdout
    else:
        assert "lock_protocol: the syscall scheduler needs strace" in ran.stdout and "5 passed, 2 skipped" in ran.stdout
    assert "compares the reference with a peer" in ran.stdout
    assert (tmp_path / "db").is_dir()  # the campaign's database, not ./.hypothesis
    assert not (tmp_path / ".hypothesis" / "examples").exists()
