"""Deviation rows you can copy (issue 30 item 7): ``memconform report deviations REPORT.json``
prints a run's failures as rows that ``--deviations FILE`` reads back as expected failures; a
file that is not a rows table is refused naming its line, a missing one is a usage error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memconform.harness.cli import main
from memconform.harness.gate import deviations

ROOT = Path(__file__).resolve().parents[2]
PIN_BY_NAME = ROOT / "scenarios/conformance/shared-store/pins/pin-by-name.json"


def _wrong_scenarios(tmp_path: Path) -> Path:
    """Two scenarios the reference fails: an outcome it never answers, and a store it never leaves."""
    d = tmp_path / "mine"
    d.mkdir()
    data = json.loads(PIN_BY_NAME.read_text(encoding="utf-8"))
    data["id"] = "mine/wrong-outcome"
    data["steps"][0]["expect"]["outcome"] = "refused"
    (d / "wrong-outcome.json").write_text(json.dumps(data), encoding="utf-8")
    data = json.loads(PIN_BY_NAME.read_text(encoding="utf-8"))
    data["id"] = "mine/wrong-store"
    store = data["then"]["store"]
    key = next(k for k in store if k.endswith("MEMORY.md"))
    store[key] = store[key].replace(" [pin]", "") + "|piped|"
    (d / "wrong-store.json").write_text(json.dumps(data), encoding="utf-8")
    return d


def test_the_printed_rows_are_read_back_and_make_the_failures_expected(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = _wrong_scenarios(tmp_path)
    run = ["conformance", "--impl", "python", "--scenarios", str(mine), "--run", "mine/*", "--profile", "shared-store",
           "--quiet", "--no-export"]
    assert main([*run, "--json", str(tmp_path / "r.json")]) == 1
    capsys.readouterr()
    assert main(["report", "deviations", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr()
    rows = out.out.splitlines()
    assert rows[0] == deviations.HEADER and len(rows) == 4, out.out
    assert "2 rows" in out.err
    (tmp_path / "rows.md").write_text(out.out, encoding="utf-8")
    parsed = deviations.parse(out.out, "rows.md", require_table=True)
    assert sorted(d.pattern for d in parsed) == ["mine/wrong-outcome", "mine/wrong-store"]
    assert all(d.impl == "memconform-reference" and d.klass == "interop" for d in parsed)
    assert main([*run, "--deviations", str(tmp_path / "rows.md"), "--json", str(tmp_path / "r2.json")]) == 0
    again = json.loads((tmp_path / "r2.json").read_text(encoding="utf-8"))
    assert [s["status"] for s in again["scenarios"]] == ["xfail", "xfail"]


def test_a_cross_sequence_is_keyed_by_the_pair_and_a_passing_listed_one_is_named() -> None:
    report = {
        "impls": [{"spec": "node:x.mjs", "name": "tool-a", "version": "1"},
                  {"spec": "python", "name": "memconform-reference", "version": "0.1.0"}],
        "scenarios": [
            {"id": "cross/x", "status": "fail", "reason": "", "failures": [
                {"where": "foreign-loss step 1 (write_memory by A: tool-a 1)", "detail": "foreign-loss (SS-IDX-3)"},
                {"where": "deviation KNOWN.md:3 (…)", "detail": "a difference the row does not list"}]},
            {"id": "shared-store/y", "status": "error", "reason": "node:x.mjs: no answer after 3.5 s", "failures": []},
            {"id": "shared-store/z", "status": "xpass", "reason": "", "failures": []},
            {"id": "shared-store/w", "status": "pass", "reason": "", "failures": []},
        ],
    }
    rows, passing = deviations.rows_from_report(report, "harmless: because")
    assert rows == [
        "| tool-a+memconform-reference | 1+0.1.0 | cross/x | foreign-loss step 1 (write_memory by A: tool-a 1): foreign-loss "
        "| foreign-loss step 1 (write_memory by A: tool-a 1) | harmless: because |",
        "| tool-a | 1 | shared-store/y | error: no answer after N s | - | harmless: because |",
    ]
    assert passing == ["shared-store/z"]


def test_a_pipe_in_a_cell_is_escaped_and_read_back() -> None:
    row = deviations.render_row("t", "1", "shared-store/a", "file a|b: differs", ["file a|b", "step 1"], "interop: x|y")
    (d,) = deviations.parse(deviations.HEADER + "\n|---|\n" + row + "\n")
    assert (d.first, d.differing, d.reason) == ("file a|b: differs", ("file a|b", "step 1"), "interop: x|y")


@pytest.mark.parametrize(("text", "line", "says"), [
    ("garbage\n", "line 1", "not a deviations file"),
    ("\n\n{\"verdict\": \"pass\"}\n", "line 3", "not a deviations file"),
    ("# mine\n\n| a | b |\n", "line 3", "2 cells"),
    ("| impl | version | scenario | reason |\n", "line 1", "a header other than"),
    (deviations.HEADER + "\n|---|\n| t | 1 | shared-store/pins/pin-by-name | x |\n", "line 3", "4 cells"),
])
def test_a_file_that_is_not_a_rows_table_is_refused_naming_the_line(
        text: str, line: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.md"
    bad.write_text(text, encoding="utf-8")
    code = main(["conformance", "--impl", "python", "--run", "shared-store/pins/pin-by-name", "--profile", "shared-store",
                 "--quiet", "--no-export", "--deviations", str(bad)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and f"bad.md: {line}: " in err[0] and says in err[0], err
    assert "scenario error" not in err[0]


def test_a_missing_deviations_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["conformance", "--impl", "python", "--run", "shared-store/pins/pin-by-name", "--profile", "shared-store",
                 "--quiet", "--no-export", "--deviations", str(tmp_path / "nope.md")])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err == f"memconform conformance: --deviations {tmp_path / 'nope.md'}: no such file"


def test_report_deviations_refuses_what_is_not_a_conformance_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "x.json").write_text('{"verdict": "pass"}', encoding="utf-8")
    assert main(["report", "deviations", str(tmp_path / "x.json")]) == 2
    assert "not a conformance report" in capsys.readouterr().err
    assert main(["report", "deviations", str(tmp_path / "missing.json")]) == 2
    shutil.rmtree(tmp_path)
