"""The HTML page and the Markdown step summary (issue 16 item 3): a planted failure shows its
first difference and both texts, areas and clauses are counted, a clause that ran nothing
says so, findings are listed, the page fetches nothing, and ``$GITHUB_STEP_SUMMARY`` gets
the summary when set."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memconform.harness import cli
from memconform.harness.gate.selection import BUILTIN
from memconform.harness.reports import html as html_report
from memconform.harness.reports import markdown as markdown_report

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
    assert "mismatch" in text  # the finding the failure is (its kind, never a severity name)
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


def _wide_report() -> dict[str, Any]:
    """A report whose findings hold long unbroken text (paths, commands), as a real one does."""
    long_path = "/work/" + "very-long-directory-name/" * 12 + "scenario.json"
    finding = {"severity": "hazard", "kind": "raw-error", "clause": "S-ERR-7,S-CFG-8,S-PATH-8",
               "impl": "memconform-reference 0.1.0", "op": "remove_memory", "evidence": "ENOTDIR:" + "x" * 300,
               "reproduce": f"memconform replay {long_path} --impl python", "regression": long_path}
    scenarios = [{"id": f"area/s{i}", "clauses": ["S-FMT-1"], "path": "p", "status": "pass", "seconds": 0.1}
                 for i in range(30)]
    scenarios.append({"id": "area/known", "clauses": ["S-FMT-1"], "path": "p", "status": "xfail", "seconds": 0.1,
                      "reason": "listed"})
    return {"tool": {"name": "memconform", "version": "0"}, "command": ["memconform"], "impls": [],
            "verdict": "hazard", "summary": {"by_severity": {"hazard": 1}, "by_kind": {}}, "stats": {},
            "findings": [finding], "scenarios": scenarios}


def test_passed_scenarios_are_listed_folded() -> None:
    page = html_report.render(_wide_report())
    assert "<details><summary>Passed (30)</summary>" in page and "area/s29" in page
    assert "<details><summary>Expected failures (listed deviations) (1)</summary>" in page
    assert page.index("Passed (30)") > page.index("Failures (0)")  # after what needs reading


def test_the_findings_table_is_fixed_to_the_page_width() -> None:
    """The page fits 1,280 px: the findings table is as wide as the body (at most 1200 px),
    its columns' shares add up to the whole and its cells wrap anywhere."""
    page = html_report.render(_wide_report())
    assert "max-width:1200px" in page and "td{overflow-wrap:anywhere}" in page
    assert "table.wide{table-layout:fixed;width:100%}" in page and '<table class="wide">' in page
    assert sum(html_report.FINDING_WIDTHS.values()) == 100
    assert set(html_report.FINDING_WIDTHS) == set(html_report.FINDING_COLUMNS)


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed (apt-get install chromium)")
def test_the_page_fits_1280_px_in_chromium(tmp_path: Path) -> None:
    page = html_report.render(_wide_report()).replace(
        "</body>", "<script>document.title='W='+document.documentElement.scrollWidth</script></body>")
    (tmp_path / "p.html").write_text(page, encoding="utf-8")
    dom = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,900",
                          "--dump-dom", (tmp_path / "p.html").as_uri()], capture_output=True, text=True, timeout=120,
                         check=False).stdout
    width = int(re.search(r"<title>W=(\d+)</title>", dom).group(1))  # type: ignore[union-attr]
    print(f"HTML report width in a 1280 px window: {width} px")
    assert width <= 1280
