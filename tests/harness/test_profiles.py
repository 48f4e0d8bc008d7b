"""Corpus profiles (DESIGN.md §7): tagging, selection, defaults, and the shared-store corpus's shape."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memconform.harness import profiles
from memconform.harness.peers import PeerSpec
from memconform.harness.scenarios import SCENARIOS_DIR, Scenario, ScenarioError, discover, load_file

CORPUS = SCENARIOS_DIR / "conformance"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpus() -> list[Scenario]:
    return discover(CORPUS)


def _sc(tmp_path: Path, extra: dict[str, object]) -> Path:
    data = {"id": "t/x", "clauses": ["SS-IDX-1"], "steps": [{"op": "write_memory"}], **extra}
    p = tmp_path / "x.json"
    p.write_text(json.dumps(data))
    return p


def test_untagged_scenario_is_openpi(tmp_path: Path) -> None:
    assert load_file(_sc(tmp_path, {})).profiles == ("openpi",)
    assert load_file(_sc(tmp_path, {"profiles": ["openpi", "shared-store"]})).profiles == ("openpi", "shared-store")


@pytest.mark.parametrize("bad", [["bogus"], [], ["openpi", "openpi"], "shared-store"])
def test_schema_refuses_bad_profiles(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ScenarioError):
        load_file(_sc(tmp_path, {"profiles": bad}))


def test_schema_outcome_kinds(tmp_path: Path) -> None:
    ok = load_file(_sc(tmp_path, {"steps": [{"op": "write_memory", "expect": {"outcome": ["refused", "ok"]}}]}))
    assert ok.steps[0].expect.outcome == ("refused", "ok")
    with pytest.raises(ScenarioError):
        load_file(_sc(tmp_path, {"steps": [{"op": "write_memory", "expect": {"outcome": "fine"}}]}))


def test_default_profile_by_kind_and_hello() -> None:
    assert profiles.default_profile(PeerSpec("python")) == "openpi"
    assert profiles.default_profile(PeerSpec("pi", "/x.mjs")) == "openpi"
    assert profiles.default_profile(PeerSpec("opencode", "/x.mjs")) == "shared-store"
    node = PeerSpec("node", "/d.mjs")
    assert profiles.default_profile(node, hello={"profile": "shared-store"}) == "shared-store"
    assert profiles.default_profile(node, hello={"profiles": ["bogus", "shared-store", "openpi"]}) == "shared-store"
    assert profiles.default_profile(node, hello={"profile": "bogus"}) == "openpi"
    assert profiles.default_profile(node, hello={}) == "openpi"


def test_select_by_profile(corpus: list[Scenario]) -> None:
    shared = profiles.select(corpus, "shared-store")
    openpi = profiles.select(corpus, "openpi")
    assert shared and openpi
    assert all("shared-store" in sc.profiles for sc in shared)
    assert len(shared) + len(openpi) >= len(corpus)


def test_shared_store_corpus_judges_kinds_never_sentences(corpus: list[Scenario]) -> None:
    """≥150 scenarios; every op step judged by outcome kind, none by a tool's result text."""
    shared = profiles.select(corpus, "shared-store")
    assert len(shared) >= 150
    for sc in shared:
        for step in sc.steps:
            if step.is_file_action:
                continue
            e = step.expect
            assert e.outcome, (sc.id, step.op)
            assert not (e.has_result or e.result_matches or e.result_contains or e.result_excludes), sc.id
            assert e.error is None or e.error.message is None, sc.id
        assert sc.then.store or sc.then.matches or sc.then.no_other_files, sc.id


def test_cli_profile_runs_only_its_scenarios() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "memconform.harness", "conformance", "--impl", "python", "--profile", "shared-store",
         "--run", "shared-store/names/slug-*"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "profile: shared-store (6 of 6 selected scenarios)" in proc.stdout
    none = subprocess.run(
        [sys.executable, "-m", "memconform.harness", "conformance", "--impl", "python", "--run", "shared-store/names/slug-*"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert none.returncode == 2 and "no scenario of profile 'openpi'" in none.stderr
