"""Corpus profiles (docs/ARCHITECTURE.md §7): tagging, selection, defaults, and the shared-store corpus's shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memconform.harness.drivers.peers import PeerSpec
from memconform.harness.gate import profiles
from memconform.harness.gate.scenarios import (
    PROFILES,
    SCENARIOS_DIR,
    Scenario,
    ScenarioError,
    discover,
    load_file,
)

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


@pytest.mark.parametrize("bad", [["Bogus Name"], [], ["openpi", "openpi"], "shared-store"])
def test_schema_refuses_bad_profiles(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ScenarioError):
        load_file(_sc(tmp_path, {"profiles": bad}))


def test_a_scenario_may_belong_to_a_profile_of_its_own(tmp_path: Path) -> None:
    """Issue 22 item 2: a user's scenarios name their own profile; the built-in corpus keeps to ours."""
    sc = load_file(_sc(tmp_path, {"profiles": ["my-tool", "shared-store"]}))
    assert sc.profiles == ("my-tool", "shared-store")
    assert profiles.known([sc]) == {"openpi", "shared-store", "my-tool"}
    assert profiles.select([sc], "my-tool") == [sc]
    assert {p for s in discover(SCENARIOS_DIR / "conformance") for p in s.profiles} == set(PROFILES)


def test_cli_runs_a_profile_the_driver_names_from_a_users_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from memconform.harness.cli import main

    own = tmp_path / "own" / "mine"
    own.mkdir(parents=True)
    data = {"id": "mine/write", "clauses": ["SS-OUT-1"], "profiles": ["my-tool"], "description": "a write is ok",
            "given": {"files": {"agent/memory.jsonc": "{}\n"}},
            "steps": [{"op": "write_memory", "args": {"topic": "A", "content": "x", "summary": "s"},
                       "expect": {"outcome": "ok:created"}}],
            "then": {"ignore": [{"path": "*", "reason": "only the outcome is this scenario's"}]}}
    (own / "write.json").write_text(json.dumps(data))
    code = main(["conformance", "--impl", "python", "--scenarios", str(tmp_path / "own"), "--profile", "my-tool",
                 "--parallel", "1", "--no-export"])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "profile: my-tool (1 of " in out
    code = main(["conformance", "--impl", "python", "--profile", "nope", "--run", "write/*", "--no-export"])
    assert code == 2 and "--profile 'nope': no such profile" in capsys.readouterr().err


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
    assert profiles.default_profile(node, hello={}) == "openpi"
    # a profile no selected scenario names is refused, never judged by another (issue 22 item 2)
    with pytest.raises(profiles.ProfileError, match="'bogus'.*--scenarios"):
        profiles.default_profile(node, hello={"profile": "bogus"})
    assert profiles.default_profile(node, hello={"profile": "bogus"}, among={"openpi", "bogus"}) == "bogus"


def test_select_by_profile(corpus: list[Scenario]) -> None:
    shared = profiles.select(corpus, "shared-store")
    openpi = profiles.select(corpus, "openpi")
    assert shared and openpi
    assert all("shared-store" in sc.profiles for sc in shared)
    assert len(shared) + len(openpi) >= len(corpus)


def test_shared_store_corpus_judges_kinds_never_sentences(corpus: list[Scenario]) -> None:
    """≥150 scenarios; every store op judged by outcome kind, none by a tool's result text (a
    reader may only be checked for what must *not* reach its result: issue 25 item 5)."""
    from memconform.harness.oracles.outcome_kind import KIND_OPS

    shared = profiles.select(corpus, "shared-store")
    assert len(shared) >= 150
    for sc in shared:
        for step in sc.steps:
            if step.is_file_action:
                continue
            e = step.expect
            assert e.outcome or (step.op not in KIND_OPS and e.result_excludes), (sc.id, step.op)
            assert not (e.has_result or e.result_matches or e.result_contains), sc.id
            assert e.error is None or e.error.message is None, sc.id
        assert sc.then.store or sc.then.matches or sc.then.no_other_files, sc.id


def test_cli_profile_runs_only_its_scenarios(capsys: pytest.CaptureFixture[str]) -> None:
    from memconform.harness.cli import main

    code = main(["conformance", "--impl", "python", "--profile", "shared-store", "--parallel", "1", "--no-export",
                 "--run", "shared-store/names/slug-*"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "profile: shared-store (6 of 6 selected scenarios)" in out
    code = main(["conformance", "--impl", "python", "--no-export", "--run", "shared-store/names/slug-*"])
    assert code == 2 and "no scenario of profile 'openpi'" in capsys.readouterr().err


def test_committed_corpus_is_what_the_generator_writes() -> None:
    """tests/shared_store_corpus.py and scenarios/conformance/shared-store/ do not drift apart."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("shared_store_corpus", ROOT / "tests" / "shared_store_corpus.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    on_disk = {}
    for p in (CORPUS / "shared-store").rglob("*.json"):
        data = json.loads(p.read_text(encoding="utf-8"))
        on_disk[data["id"]] = data
    assert {sc["id"]: sc for sc in gen.SCENARIOS} == on_disk


def test_shared_store_deviation_rows_carry_a_class() -> None:
    from memconform.harness.gate import deviations

    sid = "shared-store/names/slug-nodejs-npm"
    diff = "store MEMORY.md: line N | store MEMORY.md"
    ok = deviations.parse(f"| t | 1 | {sid} | {diff} | interop: breaks the other tool by X |\n")
    deviations.check(ok, [sid])
    assert ok[0].klass == "interop"
    assert deviations.parse(f"| t | 1 | {sid} | {diff} | harmless: another rendering |\n")[0].klass == "harmless"
    bare = deviations.parse(f"| t | 1 | {sid} | {diff} | differs somehow |\n")
    assert bare[0].klass is None
    with pytest.raises(deviations.DeviationsError, match="harmless"):
        deviations.check(bare, [sid])
    # rows of openpi-profile scenarios need no class
    deviations.check(deviations.parse(f"| t | 1 | write/x | {diff} | PEER-12 text |\n"), ["write/x"])
    # every shipped shared-store row has one
    assert all(d.klass for d in deviations.load() if d.pattern.startswith("shared-store/"))
