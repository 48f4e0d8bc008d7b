"""Every command honours what a driver's ``hello`` declares (issue 32, issue 30 items 3 and 4).

A shim (``capability_driver.mjs``: the reference behind it, its own words, outcome kinds) lacks
one capability at a time (an op, ``reset_env``, the ``virtual`` clock, a local store), and each
command must adapt, skip with the reason in its report, or refuse in one line (exit 2): never a
finding, and never a request the shim did not declare (it logs each one to ``CAP_LOG``).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from memconform.harness import cli
from memconform.harness.commands.crash import offered
from memconform.harness.commands.locks import _applicable
from memconform.harness.drivers import capabilities
from memconform.harness.drivers.capabilities import Capabilities, Missing, NotRun
from memconform.harness.drivers.peers import PeerSpec, preflight
from memconform.harness.drivers.sandbox import Sandbox
from memconform.harness.faults.cases import CASES
from memconform.harness.faults.strace import strace_unavailable
from memconform.harness.gate.cross import Pair
from memconform.harness.gate.scenarios import load_file
from memconform.harness.interleave.races import SITUATIONS, situation
from memconform.harness.reports.envelope import ImplInfo
from memconform.harness.writers.locks import cells, run_cell

SHIM = Path(__file__).resolve().parent / "capability_driver.mjs"
IMPL = f"node:{SHIM}"
CORPUS = Path(__file__).resolve().parents[2] / "scenarios" / "conformance" / "shared-store"
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
needs_strace = pytest.mark.skipif(strace_unavailable() is not None, reason=f"{strace_unavailable()}")
slow = pytest.mark.skipif(os.environ.get("MEMCONFORM_SLOW") != "1", reason="a long run: MEMCONFORM_SLOW=1")


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shim's record of undeclared requests (it must stay empty), and a clean declaration."""
    path = tmp_path / "undeclared.log"
    monkeypatch.setenv("CAP_LOG", str(path))
    for var in ("CAP_OPS", "CAP_CLOCKS", "CAP_RESET_ENV", "CAP_LOCAL", "CAP_TAG"):
        monkeypatch.delenv(var, raising=False)
    return path


def undeclared(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def report(path: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads(path.read_text())
    return data


def violations(data: dict[str, object]) -> list[object]:
    found = data["findings"]
    assert isinstance(found, list)
    return [f for f in found if f["severity"] == "violation"]


# --- reading hello ---------------------------------------------------------------------------


def test_absent_fields_take_the_documented_defaults() -> None:
    caps = capabilities.of({"ops": ["hello", "write_memory"]}, "node:x", "node")
    assert caps.clock_modes == {"frozen", "offset"} and not caps.virtual
    assert not caps.reset_env and not caps.outcome_kinds and caps.profile is None
    assert caps.local_store and caps.carry_tag == "opim"
    assert capabilities.of({"ops": []}, "opencode:x", "opencode").carry_tag == "oclm"


def test_declared_fields_are_read() -> None:
    caps = capabilities.of({"ops": ["hello", "reset"], "reset_env": True, "clock_modes": ["virtual"],
                            "outcome_kinds": True, "profile": "shared-store", "local_store": False,
                            "carry_tag": "jst"}, "node:x", "node")
    assert caps.virtual and caps.reset_env and caps.outcome_kinds and caps.profile == "shared-store"
    assert not caps.local_store and caps.carry_tag == "jst"
    assert caps.fresh_by_reset(with_env=True)
    assert not capabilities.of({"ops": ["reset"]}).fresh_by_reset(with_env=True)
    assert capabilities.of({"ops": ["reset"]}).fresh_by_reset(with_env=False)
    assert capabilities.of({"ops": [], "carry_tag": "Bad Tag"}).carry_tag == "opim"  # not a tag: the default


def test_a_missing_op_is_one_line_naming_it() -> None:
    caps = Capabilities("node:x", frozenset({"hello", "write_memory"}))
    with pytest.raises(Missing, match=r"^interop needs op pin_memory \(node:x does not declare it"):
        capabilities.require_command(caps, "interop")
    capabilities.require_command(caps, "locks")  # write_memory is all it needs
    capabilities.require_command(caps, "races")  # likewise: a situation needing more is not run
    with pytest.raises(Missing, match=r"^races needs op write_memory"):
        capabilities.require_command(Capabilities("node:x", frozenset({"hello", "pin_memory"})), "races")


def test_a_situation_whose_clock_moves_needs_the_virtual_clock() -> None:
    frozen = Capabilities("node:x", frozenset({"hello", "write_memory", "remove_memory", "pin_memory"}))
    moving = situation("owner-dies-mid-write")
    ops = [op for script in moving.ops for op, _ in script]
    assert "needs clock_modes virtual" in (capabilities.script_needs(frozen, ops) or "")
    assert capabilities.script_needs(frozen, ["write_memory"]) is None
    assert capabilities.script_needs(frozen, ["search"]) == "driver lacks op(s) search"
    virtual = Capabilities("node:x", frozen.ops, clock_modes=frozenset({"virtual"}))
    assert capabilities.script_needs(virtual, ops) is None


def test_unjudged_clauses_are_those_no_executed_part_judged() -> None:
    got = capabilities.unjudged([("SS-IO-2", "S-IO-2")], [(("SS-IO-2", "SS-IO-3", "S-IO-3"), "driver lacks op(s) search")],
                                ("SS-",))
    assert got == {"SS-IO-3": "driver lacks op(s) search"}
    got = capabilities.unjudged([], [(("SS-IO-3", "S-IO-3"), "why")], capabilities.clause_prefixes("openpi"))
    assert set(got) == {"SS-IO-3", "S-IO-3"}
    assert capabilities.cited("two reclaimers (S-LOCK-2 step 4, S-LOCK-4) and SS-IO-2") == ("S-LOCK-2", "S-LOCK-4", "SS-IO-2")


def test_carry_over_is_not_applicable_without_a_local_store() -> None:
    from memconform.harness.gate.runner import not_applicable

    sc = load_file(CORPUS / "carry-over" / "differing-collision-gets-suffixed-copy.json")
    other = load_file(CORPUS / "pins" / sorted(p.name for p in (CORPUS / "pins").glob("*.json"))[0])
    none = Capabilities("node:x", frozenset(), local_store=False)
    assert "not applicable" in (not_applicable(sc, none) or "")
    assert not_applicable(other, none) is None
    assert not_applicable(sc, Capabilities("node:x", frozenset())) is None
    pair = Pair(PeerSpec("python"), PeerSpec("python"), (None, none))
    assert "local_store: false" in (pair.not_applicable(sc) or "")
    # a cross sequence that carries openpi's local store over (S-MIGRATE) without citing SS-CARRY
    cross = load_file(CORPUS.parents[1] / "cross" / "carry-over-pi-local-then-one-topic.json")
    assert "not applicable" in (pair.not_applicable(cross) or "")
    assert Pair(PeerSpec("python"), PeerSpec("python"), (Capabilities("a", frozenset(), carry_tag="jst"), None)
                ).carry() == {"CARRY_A": "jst", "CARRY_B": "opim"}


def test_locks_tests_the_local_mode_only_for_a_tool_with_a_local_store() -> None:
    every = cells()
    keep, not_run = _applicable(every, Capabilities("node:x", frozenset(), local_store=False), asked=False)
    assert keep and all(c.mode == "shared" for c in keep)
    assert len(not_run) == 1 and "no local store" in not_run[0].why
    with pytest.raises(Missing, match="--mode local"):
        _applicable([c for c in every if c.mode == "local"], Capabilities("node:x", frozenset(), local_store=False),
                    asked=True)
    assert _applicable(every, Capabilities("node:x", frozenset()), asked=False) == (every, [])


def test_crash_runs_only_the_op_cases_whose_ops_are_declared(capsys: pytest.CaptureFixture[str]) -> None:
    cases = list(CASES.values())
    info = ImplInfo("node:x", "x", "1", {"ops": ["hello", "set_clock", "write_memory"]})
    kept = offered(cases, info)
    assert kept and all(c.op == "write_memory" and (c.recover is None or c.recover[0] == "write_memory") for c in kept)
    assert "not run: op case" in capsys.readouterr().out
    with pytest.raises(Missing, match="driver lacks op"):
        offered(cases, ImplInfo("node:x", "x", "1", {"ops": ["hello"]}))


def test_a_report_section_lists_what_did_not_run() -> None:
    caps = Capabilities("node:x", frozenset({"hello"}), local_store=False)
    section = capabilities.coverage_section(caps, [NotRun("s", "driver lacks op(s) search", ("SS-IO-3",))], "shared-store")
    assert section["not_run"] == [{"what": "s", "why": "driver lacks op(s) search", "clauses": ["SS-IO-3"]}]
    assert section["unjudged_clauses"] == {"SS-IO-3": "driver lacks op(s) search"}
    assert section["declared"]["local_store"] is False and section["declared"]["carry_tag"] is None


# --- each command on the shim ----------------------------------------------------------------


@needs_node
def test_preflight_keeps_the_whole_hello(log: Path) -> None:
    info = preflight([PeerSpec.parse(IMPL)])[0]
    caps = capabilities.of_impl(info)
    assert info.name == "capability-shim" and not caps.local_store and not caps.virtual and not caps.reset_env
    assert undeclared(log) == []


@needs_node
def test_conformance_skips_carry_over_as_not_applicable_and_lists_what_it_did_not_judge(
        log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    got = cli.main(["conformance", "--impl", IMPL, "--run", "shared-store/carry-over/differing-*",
                    "--run", "shared-store/reads/symlinked-topic-not-followed-by-search",
                    "--run", "shared-store/pins/*", "--quiet", "--no-export", "--parallel", "1", "--json", str(out)])
    text = capsys.readouterr().out
    assert got == 0, text
    data = report(out)
    by_id = {s["id"]: s for s in data["scenarios"]}  # type: ignore[attr-defined]
    carry = by_id["shared-store/carry-over/differing-collision-gets-suffixed-copy"]
    assert carry["status"] == "skip" and "not applicable" in carry["reason"]
    section = data["capabilities"]
    assert isinstance(section, dict) and section["declared"]["local_store"] is False
    assert "SS-CARRY-2" in section["unjudged_clauses"]
    assert "warning: SS-CARRY-2 judged by no executed scenario" in text
    assert violations(data) == [] and undeclared(log) == []


@needs_node
def test_conformance_binds_a_declared_carry_over_tag(log: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A tool with a local store runs carry-over under its own tag: here the backing reference's
    ``opim`` declared explicitly, so the scenario passes as the tag it names."""
    monkeypatch.setenv("CAP_LOCAL", "1")
    monkeypatch.setenv("CAP_TAG", "opim")
    out = tmp_path / "r.json"
    got = cli.main(["conformance", "--impl", IMPL, "--run", "shared-store/carry-over/differing-*", "--quiet",
                    "--no-export", "--parallel", "1", "--json", str(out)])
    assert got == 0
    assert [s["status"] for s in report(out)["scenarios"]] == ["pass"]  # type: ignore[attr-defined]
    assert undeclared(log) == []


@needs_node
@needs_strace
def test_races_adapts_to_a_driver_without_reset_env_or_virtual_time(log: Path, tmp_path: Path) -> None:
    """No ``reset`` with an environment (a fresh writer instead), no virtual ``set_clock`` (the
    situations whose clocks move are listed as not run), exit 0 and no violation."""
    out = tmp_path / "r.json"
    got = cli.main(["races", "--impl", IMPL, "--impl", IMPL, "--situation", "no-lock", "--situation",
                    "owner-dies-mid-write", "--budget", "4", "--no-export", "--quiet", "--no-shrink", "--json", str(out)])
    data = report(out)
    assert got == 0 and violations(data) == []
    section = data["capabilities"]
    assert isinstance(section, dict)
    assert [p["what"] for p in section["not_run"]] == ["owner-dies-mid-write"]
    assert "virtual" in section["not_run"][0]["why"]
    assert undeclared(log) == []


@needs_node
@needs_strace
def test_races_refuses_a_driver_without_a_co_writer_op(log: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CAP_OPS", "set_clock,remove_memory,pin_memory,reset")
    assert cli.main(["races", "--impl", IMPL, "--budget", "2", "--no-export"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "races needs op write_memory" in err[0]
    assert undeclared(log) == []


@needs_node
@needs_strace
def test_races_runs_without_pin_what_needs_no_pin(log: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A driver without ``pin_memory`` runs the situations that only write; the generated
    programs (they draw pin and unpin) are listed as not run, with why, never a finding."""
    monkeypatch.setenv("CAP_OPS", "set_clock,write_memory,remove_memory,reset,advance_clock")
    out = tmp_path / "r.json"
    got = cli.main(["races", "--impl", IMPL, "--impl", IMPL, "--situation", "no-lock", "--situation", "program-shared",
                    "--budget", "4", "--no-export", "--quiet", "--no-shrink", "--json", str(out)])
    data = report(out)
    assert got == 0 and violations(data) == []
    section = data["capabilities"]
    assert isinstance(section, dict)
    assert [p["what"] for p in section["not_run"]] == ["program-shared"]
    assert "pin_memory" in section["not_run"][0]["why"]
    assert undeclared(log) == []


@needs_node
def test_interop_refuses_a_driver_without_a_co_writer_op(log: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CAP_OPS", "set_clock,write_memory,pin_memory")
    assert cli.main(["interop", "--impl", IMPL, "--writers", "2", "--ops", "2", "--no-export"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "interop needs op remove_memory" in err[0]


@needs_node
def test_fuzz_judges_a_shared_store_driver_by_its_profile(log: Path, tmp_path: Path) -> None:
    """The differential machine compares outcome kinds and the shared store (never the
    reference's sentences or openpi's local layout) and sends no reader op; shared_store runs."""
    out = tmp_path / "r.json"
    got = cli.main(["fuzz", "--impl", IMPL, "--machine", "differential", "--machine", "shared_store",
                    "--minutes", "0.05", "--seed", "1", "--no-export", "--quiet", "--json", str(out)])
    data = report(out)
    assert got == 0, data["findings"]
    assert violations(data) == []
    rows = {r["machine"]: r for r in data["machines"]}  # type: ignore[attr-defined]
    assert rows["differential"]["executed"] > 0 and rows["shared_store"]["executed"] > 0
    assert undeclared(log) == []


@needs_node
@needs_strace
def test_lock_protocol_skips_the_situations_a_frozen_clock_cannot_run(log: Path) -> None:
    from memconform.harness.machines import bind, lock_protocol, unbind

    try:
        assert bind("lock_protocol", PeerSpec.parse(IMPL), frozenset({"write_memory", "remove_memory", "pin_memory",
                                                                      "set_clock"})) is None
        skipped = {s.name for s in SITUATIONS if lock_protocol.not_runnable(s)}
        assert skipped == {"owner-dies-mid-write", "live-lock-turns-stale"}
    finally:
        unbind()
    assert undeclared(log) == []


@needs_node
def test_locks_needs_no_memory_dir_for_the_shared_store(log: Path) -> None:
    """A co-writer's lock cell runs on the five ops: the shared store's folder is the contract's."""
    cell = next(c for c in cells(("shared",)) if c.content == "absent")
    r = run_cell(PeerSpec.parse(IMPL), cell)
    assert r.verdict == "acquire" and r.ok, r
    assert undeclared(log) == []


@needs_node
def test_locks_refuses_the_local_mode_alone_for_a_tool_without_one(log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["locks", "--impl", IMPL, "--mode", "local", "--no-export"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "local_store: false" in err[0]


@needs_node
def test_replay_of_a_carry_over_scenario_is_not_applicable(log: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    scenario = CORPUS / "carry-over" / "differing-collision-gets-suffixed-copy.json"
    pins = sorted((CORPUS / "pins").glob("*.json"))[0]
    got = cli.main(["replay", str(scenario), str(pins), "--impl", IMPL, "--no-export", "--json", str(out)])
    data = report(out)
    assert got == 0
    assert "SS-CARRY-2" in data["capabilities"]["unjudged_clauses"]  # type: ignore[index]
    assert undeclared(log) == []


@needs_node
def test_a_pooled_race_writer_is_restarted_not_reset_without_reset_env(log: Path) -> None:
    from memconform.harness.interleave.scheduler import DriverPool

    pool = DriverPool()
    spec = PeerSpec.parse(IMPL)
    try:
        first = Sandbox.create()
        second = Sandbox.create()
        try:
            a = pool.take([spec], first, False, 10.0)[0]
            b = pool.take([spec], second, False, 10.0)[0]
            assert a is not b  # a fresh writer: the old one would have kept the first sandbox
        finally:
            first.remove()
            second.remove()
    finally:
        pool.close()
    assert undeclared(log) == []


@slow
@needs_node
@needs_strace
def test_a_narrow_correct_driver_passes_every_command(log: Path, tmp_path: Path) -> None:
    """Done-when of issue 32: frozen/offset clocks, no reset_env, no local store: exit 0 and no
    violation from races, fuzz (every machine that applies), locks and conformance."""
    for argv in (["conformance", "--impl", IMPL, "--quiet", "--parallel", "2"],
                 ["races", "--impl", IMPL, "--impl", IMPL, "--budget", "20", "--quiet"],
                 ["fuzz", "--impl", IMPL, "--minutes", "0.5", "--quiet"],
                 ["locks", "--impl", IMPL, "--quiet", "--parallel", "16"]):
        out = tmp_path / f"{argv[0]}.json"
        got = cli.main([*argv, "--no-export", "--json", str(out)])
        data = report(out)
        assert got == 0 and violations(data) == [], (argv[0], data["findings"])
        assert "capabilities" in data, argv[0]
    assert undeclared(log) == []


@needs_node
def test_store_model_refuses_a_driver_judged_by_another_profile(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Even with every reader op, a shared-store driver is not judged by openpi's texts."""
    from memconform.harness.machines import bind, unbind

    monkeypatch.setenv("CAP_OPS", "all")
    spec = PeerSpec.parse(IMPL)
    info = preflight([spec])[0]
    try:
        why = bind("store_model", spec, frozenset(capabilities.of_impl(info).ops))
    finally:
        unbind()
    assert why is not None and "shared-store profile" in why
    assert undeclared(log) == []


@needs_node
@needs_strace
def test_races_runs_no_local_store_family_on_a_tool_that_keeps_none(log: Path, tmp_path: Path) -> None:
    """``program-local`` races the first writer's local store and ``program-carry`` carries the
    tools' local stores over: on a driver that declares ``local_store: false`` they are listed as
    not run, with why.  Run anyway, program-local reported a one-writer append "lost" from a
    store the tool never had: a false S-INV-3 violation (seed 0, program-local-2)."""
    out = tmp_path / "r.json"
    got = cli.main(["races", "--impl", IMPL, "--situation", "no-lock", "--situation", "program-local",
                    "--situation", "program-carry", "--seed", "0", "--budget", "4", "--no-export", "--quiet",
                    "--no-shrink", "--json", str(out)])
    data = report(out)
    assert got == 0 and violations(data) == []
    section = data["capabilities"]
    assert isinstance(section, dict)
    assert sorted(p["what"] for p in section["not_run"]) == ["program-carry", "program-local"]
    assert all("local_store: false" in p["why"] for p in section["not_run"])
    assert undeclared(log) == []
