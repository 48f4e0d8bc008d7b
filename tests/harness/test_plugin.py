"""The pytest plugin runs the corpus inside someone else's suite (issue 3)."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    registered = any(ep.name == "memconform" for ep in entry_points(group="pytest11"))
    plugin = [] if registered else ["-p", "memconform.harness.pytest_plugin"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, *args, str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
    )


def test_plugin_is_inert_without_the_option(tmp_path: Path) -> None:
    (tmp_path / "test_own.py").write_text("def test_own():\n    assert True\n")
    proc = _pytest(tmp_path)
    assert "1 passed" in proc.stdout, proc.stdout + proc.stderr


def test_plugin_adds_scenarios_as_tests(tmp_path: Path) -> None:
    (tmp_path / "test_own.py").write_text("def test_own():\n    assert True\n")
    proc = _pytest(tmp_path, "--memconform-impl=python", "--memconform-run=write/create-*", "-rA")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "memconform[write/create-new-topic]" in proc.stdout
    assert " passed" in proc.stdout and "failed" not in proc.stdout


def test_plugin_reports_a_failing_scenario_with_its_clause(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus" / "x"
    corpus.mkdir(parents=True)
    (corpus / "wrong.json").write_text(
        '{"id": "x/wrong", "clauses": ["S-WRITE-14"], "steps": [{"op": "write_memory", '
        '"args": {"topic": "A", "content": "c", "summary": "s"}, "expect": {"result": "nope"}}]}'
    )
    proc = _pytest(
        tmp_path / "corpus", "--memconform-impl=python", f"--memconform-scenarios={tmp_path / 'corpus'}"
    )
    assert proc.returncode == 1
    assert "scenario x/wrong on python" in proc.stdout and "S-WRITE-14" in proc.stdout


def test_plugin_refuses_a_peer_that_cannot_start_up_front(tmp_path: Path) -> None:
    """Preflight at collection: one usage error, not one failure per scenario."""
    proc = _pytest(tmp_path, f"--memconform-impl=pi:{tmp_path / 'none.mjs'}")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "none.mjs: no such file" in proc.stderr
    assert "memconform[" not in proc.stdout
