"""A Markdown summary of any command's JSON report, for ``$GITHUB_STEP_SUMMARY``.

GitHub shows the step summary on the run's page, so a reader sees the verdict, the counts,
the areas, the first failures with their first difference, and the findings without
downloading an artifact.  Bounded in size (GitHub caps a step summary at 1 MiB): at most
``MAX_FAILURES`` failures and ``MAX_FINDINGS`` findings, then a line saying how many more.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .html import COLUMNS, by_area, counts_row, failing, headline, row_verdict

SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
MAX_FAILURES = 20
MAX_FINDINGS = 50


def _cell(value: Any, limit: int = 300) -> str:
    text = " ".join(str(value).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render(data: Mapping[str, Any]) -> str:
    scenarios = list(data.get("scenarios", []))
    command = " ".join(data.get("command", [])) or "memconform"
    lines = [f"### {_cell(command, 120)}", "", f"**{_cell(headline(data), 400)}**", "",
             f"started {data.get('started', '?')}, {data.get('seconds', '?')} s", ""]
    if scenarios:
        lines += ["| area | " + " | ".join(COLUMNS) + " | verdict |", "|---|" + "---:|" * len(COLUMNS) + "---|"]
        for area, counts in by_area(scenarios).items():
            shown = counts_row(counts)
            lines.append(f"| {area} | " + " | ".join(str(shown[c]) for c in COLUMNS) + f" | {row_verdict(counts)} |")
        lines.append("")
        bad = failing(scenarios)
        for s in bad[:MAX_FAILURES]:
            lines.append(f"- **{_cell(s['id'])}** {s['status']} [{', '.join(s.get('clauses', []))}]"
                         + (f" `{_cell(s['path'])}`" if s.get("path") else ""))
            first = (s.get("failures") or [{}])[0]
            if first:
                lines.append(f"  - {_cell(first.get('where', ''))}: {_cell(first.get('detail') or 'differs')}")
                lines.append(f"  - expected: `{_cell(first.get('expected', ''), 200)}`")
                lines.append(f"  - actual: `{_cell(first.get('actual', ''), 200)}`")
            elif s.get("reason"):
                lines.append(f"  - {_cell(s['reason'])}")
        if len(bad) > MAX_FAILURES:
            lines.append(f"- … and {len(bad) - MAX_FAILURES} more failures (see the HTML report)")
        lines.append("")
    findings = list(data.get("findings", []))
    if findings:
        lines += ["| severity | kind | clause | evidence | reproduce |", "|---|---|---|---|---|"]
        for f in findings[:MAX_FINDINGS]:
            lines.append(f"| {f.get('severity', '')} | {f.get('kind', '')} | {_cell(f.get('clause', ''))} | "
                         f"{_cell(f.get('evidence', ''), 200)} | `{_cell(f.get('reproduce', ''), 160)}` |")
        if len(findings) > MAX_FINDINGS:
            lines.append(f"\n… and {len(findings) - MAX_FINDINGS} more findings")
        lines.append("")
    return "\n".join(lines) + "\n"


def step_summary(data: Mapping[str, Any]) -> Path | None:
    """Append the summary to ``$GITHUB_STEP_SUMMARY`` when it is set; the path written, or None."""
    target = os.environ.get(SUMMARY_ENV)
    if not target:
        return None
    path = Path(target)
    with path.open("a", encoding="utf-8") as out:
        out.write(render(data))
    return path
