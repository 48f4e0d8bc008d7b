"""``KNOWN_DEVIATIONS.md`` names scenarios, not areas (issue 12 item 6).

A row naming no scenario is refused when loading; a glob row over scenarios that did not each
fail with one first difference becomes an error naming the row; a listed scenario that passes
is an ``xpass`` (a failure); a failure nobody listed stays a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memconform.harness import deviations
from memconform.harness.cli import main
from memconform.harness.deviations import (
    Deviation,
    DeviationsError,
    apply,
    expected_failure,
    load,
    parse,
    signature,
)
from memconform.harness.oracles.expect import Failure
from memconform.harness.runner import Outcome
from memconform.harness.scenarios import SCENARIOS_DIR, Scenario, discover

CORPUS = {sc.id: sc for sc in discover(SCENARIOS_DIR / "conformance", run=["write/*"])}
IDS = sorted(CORPUS)[:4]
A, B, C, D = IDS

TEXT = f"""# Known deviations

Prose | with a pipe is not a row.

| impl | version | scenario | reason |
|---|---|---|---|
| tool | 1.0 | {A} | texts differ |
| tool | 1.0 | `{B}` | a \\| in the reason |
| other | * | {C} | any version |
"""

RESULT = "step 1 (write_memory) result"


def outcome(sid: str, status: str, where: str = RESULT, detail: str = "first difference at byte 0, line 1: …") -> Outcome:
    sc: Scenario = CORPUS[sid]
    failures = [Failure(where, "'x'", "'y'", detail)] if status == "fail" else []
    return Outcome(scenario=sc, impl="tool", status=status, failures=failures)


def rows(text: str) -> list[Deviation]:
    devs = parse(text)
    deviations.check(devs, set(CORPUS))
    return devs


# ------------------------------------------------------------------ format


def test_parse_reads_one_id_per_row_with_its_reason() -> None:
    devs = parse(TEXT, "K.md")
    assert [(d.impl, d.version, d.pattern, d.reason) for d in devs] == [
        ("tool", "1.0", A, "texts differ"),
        ("tool", "1.0", B, "a | in the reason"),
        ("other", "*", C, "any version"),
    ]
    assert [d.line for d in devs] == [7, 8, 9]
    assert not any(d.is_glob for d in devs)
    assert devs[0].row() == f"K.md:7 (tool 1.0 {A})"


def test_a_row_with_a_bare_pipe_in_its_reason_is_refused() -> None:
    with pytest.raises(DeviationsError, match="line 3: 5 cells"):
        parse(f"| impl | version | scenario | reason |\n|---|---|---|---|\n| t | 1 | {A} | a | b |\n")


def test_a_row_with_an_empty_cell_is_refused() -> None:
    with pytest.raises(DeviationsError, match="every cell"):
        parse(f"| t | 1 | {A} |  |\n")


def test_a_row_naming_no_scenario_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "K.md"
    path.write_text(TEXT + "| tool | 1.0 | write/no-such-scenario | gone |\n")
    with pytest.raises(DeviationsError, match=r"line 10: 'write/no-such-scenario' names no scenario"):
        load(path, ids=set(CORPUS))
    path.write_text(TEXT + "| tool | 1.0 | nothing/* | an area that does not exist |\n")
    with pytest.raises(DeviationsError, match="names no scenario"):
        load(path, ids=set(CORPUS))


def test_a_scenario_listed_twice_is_refused() -> None:
    with pytest.raises(DeviationsError, match="listed twice"):
        rows(TEXT + f"| tool | 1.0 | {A} | again |\n")


def test_the_shipped_list_names_each_scenario_by_its_id() -> None:
    devs = load()
    ids = deviations.corpus_ids()
    assert devs, "the shipped list is empty"
    for d in devs:
        assert not d.is_glob, f"{d.row()}: a glob in the shipped list"
        assert d.pattern in ids, d.row()
        assert d.reason.strip(), d.row()
    families = {d.impl.rstrip("?") for d in devs}
    assert {"openpi-memory", "openclaude-memory"} <= families


# ------------------------------------------------------------------ applying


def test_listed_failure_is_expected_listed_pass_is_xpass_unlisted_failure_stays() -> None:
    devs = rows(TEXT)
    run = [outcome(A, "fail"), outcome(B, "pass"), outcome(C, "fail"), outcome(D, "skip")]
    assert apply(run, "tool", "1.0", devs) == []
    assert [o.status for o in run] == ["xfail", "xpass", "fail", "skip"]
    assert run[0].reason == "texts differ"


def test_an_errored_listed_scenario_is_expected_and_other_versions_are_not_covered() -> None:
    devs = rows(TEXT)
    run = [Outcome(scenario=CORPUS[A], impl="tool", status="error", reason="no answer within 10 s")]
    apply(run, "tool", "2.0", devs)
    assert run[0].status == "error"
    apply(run, "tool", "1.0", devs)
    assert run[0].status == "xfail"
    other = [outcome(C, "fail")]
    apply(other, "other", "9.9", devs)  # version "*"
    assert other[0].status == "xfail"


def test_a_glob_over_scenarios_failing_for_different_reasons_is_refused() -> None:
    devs = rows(TEXT.replace(f"| tool | 1.0 | {A} | texts differ |", "| tool | 1.0 | write/* | an area |")
                .replace(f"| tool | 1.0 | `{B}` | a \\| in the reason |\n", ""))
    run = [outcome(A, "fail"), outcome(B, "fail", where="file agent/memory/a.md", detail="missing")]
    problems = apply(run, "tool", "1.0", devs)
    assert len(problems) == 1
    assert "write/*" in problems[0] and "different reasons" in problems[0]
    assert f"{RESULT.replace('step 1', 'step N')}: first difference" in problems[0]
    assert "file agent/memory/a.md: missing" in problems[0]
    assert [o.status for o in run] == ["error", "error"]
    assert all(o.reason == problems[0] and o.reason.startswith("KNOWN_DEVIATIONS.md:7 (tool 1.0 write/*)") for o in run)


def test_a_glob_over_a_passing_or_skipped_scenario_is_refused() -> None:
    devs = rows("| tool | 1.0 | write/* | an area |\n")
    run = [outcome(A, "fail"), outcome(B, "pass"), outcome(C, "skip")]
    problems = apply(run, "tool", "1.0", devs)
    assert len(problems) == 1 and f"{B} (pass)" in problems[0] and f"{C} (skip)" in problems[0]
    assert {o.status for o in run} == {"error"}


def test_a_glob_over_scenarios_with_one_first_difference_stands() -> None:
    devs = rows("| tool | 1.0 | write/* | one reason |\n")
    run = [outcome(A, "fail"), Outcome(scenario=CORPUS[B], impl="tool", status="fail",
                                       failures=[Failure("step 3 (write_memory) result", "'p'", "'q'", "first difference at byte 7")])]
    assert signature(run[0]) == signature(run[1])
    assert apply(run, "tool", "1.0", devs) == []
    assert [o.status for o in run] == ["xfail", "xfail"]


def test_an_exact_row_wins_over_a_glob_and_takes_its_scenario_out_of_the_glob() -> None:
    devs = rows(f"| tool | 1.0 | write/* | glob |\n| tool | 1.0 | {B} | exact |\n")
    assert expected_failure(devs, "tool", "1.0", B) == devs[1]
    run = [outcome(A, "fail"), outcome(B, "fail", where="file x", detail="missing")]
    assert apply(run, "tool", "1.0", devs) == []
    assert [(o.status, o.reason) for o in run] == [("xfail", "glob"), ("xfail", "exact")]


# ------------------------------------------------------------------ the command


def test_conformance_refuses_a_list_naming_no_scenario(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "KNOWN_DEVIATIONS.md"
    bad.write_text("| tool | 1.0 | write/no-such-scenario | gone |\n")
    monkeypatch.setattr(deviations, "DEVIATIONS_PATH", bad)
    code = main(["conformance", "--impl", "python", "--run", A, "--quiet", "--no-export"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and "write/no-such-scenario' names no scenario" in err[0], err
    assert err[0].startswith("memconform conformance: ")


PEERS = [("opencode", "MEMCONFORM_OPENCODE_PLUGIN", "openclaude-memory"), ("pi", "MEMCONFORM_PI_CORE", "openpi-memory")]


@pytest.mark.parametrize(("kind", "env", "family"), PEERS, ids=[p[0] for p in PEERS])
def test_real_peer_rows_are_its_failures_one_by_one(kind: str, env: str, family: str, tmp_path: Path) -> None:
    """Against the real peer: a sample of its rows (one per reason group) are each an
    expected failure and nothing else fails; a new failure would fail this run."""
    import json

    if not os.environ.get(env):
        pytest.skip(f"{env} not set")
    out = tmp_path / "peer.json"
    # the rows of the profile the peer runs by default (opencode: shared-store, pi: openpi)
    shared = kind == "opencode"
    listed = [d.pattern for d in load() if d.impl.rstrip("?") == family and d.pattern.startswith("shared-store/") == shared]
    sample = listed[:: max(1, len(listed) // 12)]  # rows are grouped by reason: one of each
    runs = [arg for s in sample for arg in ("--run", s)]
    code = main(["conformance", "--impl", f"{kind}:{os.environ[env]}", "--parallel", "2", "--timeout", "3",
                 "--quiet", "--no-export", "--json", str(out), *runs])
    statuses = {s["id"]: s["status"] for s in json.loads(out.read_text())["scenarios"]}
    assert code == 0, statuses
    assert statuses == dict.fromkeys(sample, "xfail")
