"""The HTML page and the Markdown step summary (issue 16 item 3): a planted failure shows its
first difference and both texts, areas and clauses are counted, a clause that ran nothing
says so, findings are listed, the page fetches nothing, and ``$GITHUB_STEP_SUMMARY`` gets
the summary when set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memconform.harness import cli
from memconform.harness.reports import html as html_report
from memconform.harness.reports import markdown as markdown_report
from memconform.harness.selection import BUILTIN

PLANTED_FROM = "write/append-adds-utc-dated-heading"
PLANTED = "mine/append-expects-line-2"


def plant(root: Path) -> Path:
    """A copy of a passing scenario whose expected file says ``line 2`` where the store writes
    ``line2``: a failure with a known first difference."""
    data = json.loads((BUILTIN / f"{PLANTED_FROM}.json").read_text("utf-8"))
    data["id"] = PLANTED
    name = "agent/memory/postgresql-setup.md"
    data["then"]["files"][name] = data["then"]["files"][name].replace("\nline2\n", "\nline 2\n")
    (root / "mine").mkdir(parents=True, exist_ok=True)
    (root / "mine" / "append-expects-line-2.json").write_text(json.dumps(data, indent=2))
    return root


def planted_report(tmp_path: Path, *extra: str) -> tuple[int, dict[str, Any], Path]:
    root = plant(tmp_path / "corpus")
    out, page = tmp_path / "r.json", tmp_path / "r.html"
    code = cli.main(["conformance", "--only-scenarios", "--scenarios", str(root), "--quiet", "--no-export",
                     "--json", str(out), "--html", str(page), *extra])
    return code, json.loads(out.read_text("utf-8")), page


def test_the_page_shows_the_planted_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv(markdown_report.SUMMARY_ENV, str(summary))
    code, data, page = planted_report(tmp_path)
    assert code == 1 and data["verdict"] == "fail"
    text = page.read_text("utf-8")
    assert "<script" not in text and "src=" not in text and "<link" not in text  # self-contained
    assert PLANTED in text and "first difference at byte" in text
    assert "line 2" in text and "line2" in text  # both texts
    assert "By area" in text and "By clause" in text and "S-WRITE-9" in text
    assert "deviation" in text  # the finding the failure is
    md = summary.read_text("utf-8")
    assert PLANTED in md and "first difference at byte" in md and "| mine |" in md
    printed = capsys.readouterr().out
    assert f"wrote HTML report {page}" in printed and f"wrote step summary {summary}" in printed


def test_a_clause_that_ran_nothing_says_so() -> None:
    data = {"verdict": "pass", "stats": {}, "findings": [], "scenarios": [
        {"id": "a/one", "clauses": ["S-X-1"], "status": "pass", "path": "a.json", "seconds": 0.1},
        {"id": "a/two", "clauses": ["S-X-2"], "status": "skip", "path": "b.json", "seconds": 0.0},
        {"id": "b/three", "clauses": ["S-X-3"], "status": "xfail", "path": "c.json", "seconds": 0.0},
    ]}
    clauses = html_report.by_clause(data["scenarios"])
    assert [html_report.row_verdict(clauses[c]) for c in ("S-X-1", "S-X-2", "S-X-3")] == ["ok", "none ran", "known"]
    page = html_report.render(data)
    assert "none ran" in page
    assert "| b | 0 | 0 | 1 | 0 | known |" in markdown_report.render(data)


def test_no_step_summary_without_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(markdown_report.SUMMARY_ENV, raising=False)
    assert markdown_report.step_summary({"verdict": "pass"}) is None
