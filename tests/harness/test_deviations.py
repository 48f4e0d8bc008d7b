"""``KNOWN_DEVIATIONS.md`` names scenarios, not areas (issue 12 item 6), and the difference
each one expects (issue 25 item 1).

A row naming no scenario is refused when loading; a glob row over scenarios that did not each
fail with the row's difference becomes an error naming the row; a listed scenario that passes
is an ``xpass`` (a failure); a listed scenario that fails another way stays a failure naming
the unexpected difference; a failure nobody listed stays a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memconform.harness.cli import main
from memconform.harness.gate import deviations
from memconform.harness.gate.deviations import (
    Deviation,
    DeviationsError,
    apply,
    expected_failure,
    load,
    parse,
    signature,
)
from memconform.harness.gate.runner import Outcome
from memconform.harness.gate.scenarios import SCENARIOS_DIR, Scenario, discover
from memconform.harness.oracles.expect import Failure

CORPUS = {sc.id: sc for sc in discover(SCENARIOS_DIR / "conformance", run=["write/*"])}
IDS = sorted(CORPUS)[:4]
A, B, C, D = IDS

RESULT = "step 1 (write_memory) result"
FIRST = f"{RESULT}: first difference"  # what outcome() below fails with

TEXT = f"""# Known deviations

Prose | with a pipe is not a row.

| impl | version | scenario | first difference | differing | reason |
|---|---|---|---|---|---|
| tool | 1.0 | {A} | {FIRST} | {RESULT} | texts differ |
| tool | 1.0 | `{B}` | {FIRST} | {RESULT} | a \\| in the reason |
| other | * | {C} | {FIRST} | {RESULT} | any version |
"""


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
    assert {(d.first, d.differing) for d in devs} == {(FIRST, (RESULT,))}
    assert [(d.impl, d.version, d.pattern, d.reason) for d in devs] == [
        ("tool", "1.0", A, "texts differ"),
        ("tool", "1.0", B, "a | in the reason"),
        ("other", "*", C, "any version"),
    ]
    assert [d.line for d in devs] == [7, 8, 9]
    assert not any(d.is_glob for d in devs)
    assert devs[0].row() == f"K.md:7 (tool 1.0 {A})"


def test_a_row_with_a_bare_pipe_in_its_reason_is_refused() -> None:
    with pytest.raises(DeviationsError, match="line 3: 7 cells"):
        parse(f"{deviations.HEADER}\n|---|---|---|---|---|---|\n| t | 1 | {A} | {FIRST} | {RESULT} | a | b |\n")


def test_a_row_with_an_empty_cell_or_without_its_difference_is_refused() -> None:
    head = f"{deviations.HEADER}\n|---|---|---|---|---|---|\n"
    with pytest.raises(DeviationsError, match="every cell"):
        parse(f"{head}| t | 1 | {A} | {FIRST} |  | why |\n")
    with pytest.raises(DeviationsError, match="4 cells"):  # the format before issue 25: no difference named
        parse(f"{head}| t | 1 | {A} | why |\n")


def test_a_table_headed_otherwise_is_refused_naming_its_line() -> None:
    """Issue 30: a header other than HEADER (an old or foreign table) is not read as rows."""
    with pytest.raises(DeviationsError, match="line 2: a header other than"):
        parse(f"prose\n| impl | version | scenario | reason |\n| t | 1 | {A} | why |\n")


def test_a_row_naming_no_scenario_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "K.md"
    path.write_text(TEXT + f"| tool | 1.0 | write/no-such-scenario | {FIRST} | {RESULT} | gone |\n")
    with pytest.raises(DeviationsError, match=r"line 10: 'write/no-such-scenario' names no scenario"):
        load(path, ids=set(CORPUS))
    path.write_text(TEXT + f"| tool | 1.0 | nothing/* | {FIRST} | {RESULT} | an area that does not exist |\n")
    with pytest.raises(DeviationsError, match="names no scenario"):
        load(path, ids=set(CORPUS))


def test_a_scenario_listed_twice_is_refused() -> None:
    with pytest.raises(DeviationsError, match="listed twice"):
        rows(TEXT + f"| tool | 1.0 | {A} | {FIRST} | {RESULT} | again |\n")


def test_the_shipped_list_names_each_scenario_by_its_id() -> None:
    devs = load()
    ids = deviations.corpus_ids()
    assert devs, "the shipped list is empty"
    for d in devs:
        assert not d.is_glob, f"{d.row()}: a glob in the shipped list"
        assert d.pattern in ids, d.row()
        assert d.reason.strip(), d.row()
        assert d.first and (d.differing or d.first.startswith("error: ")), d.row()
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
    devs = rows(TEXT.replace(f"| {A} | {FIRST} | {RESULT} |", f"| {A} | error: no answer within N s | - |"))
    def errored() -> list[Outcome]:
        return [Outcome(scenario=CORPUS[A], impl="tool", status="error",
                        reason="tool: no answer within 10 s (/tmp/x/memconform-ab12/agent)")]  # impl: the spec's name
    assert deviations.difference(errored()[0]) == ("error: no answer within N s (…/agent)", ())
    run = errored()
    apply(run, "tool", "2.0", devs)
    assert run[0].status == "error"
    devs = rows(TEXT.replace(f"| {A} | {FIRST} | {RESULT} |", f"| {A} | error: no answer within N s (…/agent) | - |"))
    run = errored()
    apply(run, "tool", "1.0", devs)
    assert run[0].status == "xfail"
    other = [outcome(C, "fail")]
    apply(other, "other", "9.9", devs)  # version "*"
    assert other[0].status == "xfail"


def test_a_glob_over_scenarios_failing_for_different_reasons_is_refused() -> None:
    devs = rows(TEXT.replace(f"| tool | 1.0 | {A} |", "| tool | 1.0 | write/* |")
                .replace(f"| tool | 1.0 | `{B}` | {FIRST} | {RESULT} | a \\| in the reason |\n", ""))
    run = [outcome(A, "fail"), outcome(B, "fail", where="file agent/memory/a.md", detail="missing")]
    problems = apply(run, "tool", "1.0", devs)
    assert len(problems) == 1
    assert "write/*" in problems[0] and "different reasons" in problems[0]
    assert f"{RESULT.replace('step 1', 'step N')}: first difference" in problems[0]
    assert "file agent/memory/a.md: missing" in problems[0]
    assert [o.status for o in run] == ["error", "error"]
    assert all(o.reason == problems[0] and o.reason.startswith("KNOWN_DEVIATIONS.md:7 (tool 1.0 write/*)") for o in run)


def test_a_glob_over_scenarios_failing_alike_but_not_as_the_row_says_is_refused() -> None:
    devs = rows("| tool | 1.0 | write/* | file a.md: missing | file a.md | one reason |\n")
    run = [outcome(A, "fail"), outcome(B, "fail")]
    problems = apply(run, "tool", "1.0", devs)
    assert len(problems) == 1 and "otherwise than the row says" in problems[0]
    assert [o.status for o in run] == ["error", "error"]


def test_a_glob_over_a_passing_or_skipped_scenario_is_refused() -> None:
    devs = rows(f"| tool | 1.0 | write/* | {FIRST} | {RESULT} | an area |\n")
    run = [outcome(A, "fail"), outcome(B, "pass"), outcome(C, "skip")]
    problems = apply(run, "tool", "1.0", devs)
    assert len(problems) == 1 and f"{B} (pass)" in problems[0] and f"{C} (skip)" in problems[0]
    assert {o.status for o in run} == {"error"}


def test_a_glob_over_scenarios_with_one_first_difference_stands() -> None:
    devs = rows(f"| tool | 1.0 | write/* | {FIRST} | {RESULT} | one reason |\n")
    run = [outcome(A, "fail"), Outcome(scenario=CORPUS[B], impl="tool", status="fail",
                                       failures=[Failure("step 3 (write_memory) result", "'p'", "'q'", "first difference at byte 7")])]
    assert signature(run[0]) == signature(run[1])
    assert apply(run, "tool", "1.0", devs) == []
    assert [o.status for o in run] == ["xfail", "xfail"]


def test_an_exact_row_wins_over_a_glob_and_takes_its_scenario_out_of_the_glob() -> None:
    devs = rows(f"| tool | 1.0 | write/* | {FIRST} | {RESULT} | glob |\n"
                f"| tool | 1.0 | {B} | file x: missing | file x | exact |\n")
    assert expected_failure(devs, "tool", "1.0", B) == devs[1]
    run = [outcome(A, "fail"), outcome(B, "fail", where="file x", detail="missing")]
    assert apply(run, "tool", "1.0", devs) == []
    assert [(o.status, o.reason) for o in run] == [("xfail", "glob"), ("xfail", "exact")]


def test_a_listed_scenario_failing_another_way_is_a_failure_naming_the_difference() -> None:
    """Issue 25 item 1: the row's difference plus a second one (a second bug in the same
    scenario) is not the listed deviation; nor is a different first difference."""
    devs = rows(TEXT)
    second = outcome(A, "fail")
    second.failures.append(Failure("step 2 (remove_memory) outcome", "ok", "refused: 'x'", "outcome refused"))
    other = outcome(B, "fail", where="file agent/memory/a.md", detail="missing")
    run = [second, other]
    assert apply(run, "tool", "1.0", devs) == []
    assert [o.status for o in run] == ["fail", "fail"]
    assert "also differs: step 2 (remove_memory) outcome" in second.reason
    assert second.reason.startswith(f"KNOWN_DEVIATIONS.md:7 (tool 1.0 {A}) lists another difference")
    assert f"expected first difference {FIRST!r}, got 'file agent/memory/a.md: missing'" in other.reason
    assert f"no longer differs: {RESULT}" in other.reason
    assert second.failures[-1].where.startswith("deviation KNOWN_DEVIATIONS.md:7")
    assert second.failures[-1].detail == "a difference the row does not list"


def test_deviations_files_add_rows_under_the_same_refusals(tmp_path: Path) -> None:
    mine = tmp_path / "MINE.md"
    mine.write_text(f"{deviations.HEADER}\n|---|---|---|---|---|---|\n| tool | 1.0 | {A} | {FIRST} | {RESULT} | mine |\n")
    devs = deviations.load_all([mine])
    assert devs[-1].reason == "mine" and devs[-1].path == str(mine)
    assert len(devs) == len(load()) + 1
    mine.write_text(mine.read_text() + f"| tool | 1.0 | {A} | {FIRST} | {RESULT} | twice |\n")
    with pytest.raises(DeviationsError, match="listed twice"):
        deviations.load_all([mine])
    mine.write_text(f"| tool | 1.0 | x/* | {FIRST} | {RESULT} | none |\n")
    with pytest.raises(DeviationsError, match="names no scenario"):
        deviations.load_all([mine])
    own = tmp_path / "own"
    (own / "x").mkdir(parents=True)
    (own / "x" / "mine.json").write_text('{"id": "x/mine"}')
    assert deviations.load_all([mine], [own])[-1].pattern == "x/*"
    with pytest.raises(DeviationsError, match="no such file"):
        deviations.load_all([tmp_path / "nope.md"])


# ------------------------------------------------------------------ the command


def test_conformance_refuses_a_list_naming_no_scenario(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "KNOWN_DEVIATIONS.md"
    bad.write_text(f"| tool | 1.0 | write/no-such-scenario | {FIRST} | {RESULT} | gone |\n")
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


def test_conformance_refuses_a_bad_deviations_file_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "MINE.md"
    mine.write_text(f"| tool | 1.0 | write/no-such-scenario | {FIRST} | {RESULT} | gone |\n")
    conformance = ["conformance", "--impl", "python", "--deviations", str(mine), "--run", A, "--quiet", "--no-export"]
    replay = ["replay", "--impl", "python", "--deviations", str(mine), "--no-export", str(CORPUS[A].path)]
    for argv in (conformance, replay):
        code = main(argv)
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and "MINE.md" in err[0] and "names no scenario" in err[0], err


def test_a_users_row_keyed_by_hello_name_makes_a_failure_expected(tmp_path: Path) -> None:
    """``--deviations`` rows are keyed by the name and version ``hello`` reports; here the
    reference fails a scenario of the user's own folder exactly as the row says."""
    import json

    own = tmp_path / "own" / "mine"
    own.mkdir(parents=True)
    (own / "w.json").write_text(json.dumps({
        "id": "mine/wrong-text", "clauses": ["S-WRITE-2"], "description": "expects another text",
        "steps": [{"op": "write_memory", "args": {"topic": "A", "content": "x", "summary": "s"},
                   "expect": {"result": "Saved!"}}],
        "then": {"ignore": [{"path": "*", "reason": "only the result is this scenario's"}]}}))
    mine = tmp_path / "MINE.md"
    mine.write_text(f"{deviations.HEADER}\n|---|---|---|---|---|---|\n"
                    f"| memconform-reference | * | mine/wrong-text | {FIRST} | {RESULT} | our own words |\n")
    out = tmp_path / "r.json"
    code = main(["conformance", "--impl", "python", "--only-scenarios", "--scenarios", str(tmp_path / "own"),
                 "--deviations", str(mine), "--quiet", "--no-export", "--json", str(out)])
    assert code == 0
    assert [s["status"] for s in json.loads(out.read_text())["scenarios"]] == ["xfail"]
    mine.write_text(mine.read_text().replace("| * |", "| 9.9.9 |"))  # another version: not covered
    assert main(["conformance", "--impl", "python", "--only-scenarios", "--scenarios", str(tmp_path / "own"),
                 "--deviations", str(mine), "--quiet", "--no-export", "--json", str(out)]) == 1
