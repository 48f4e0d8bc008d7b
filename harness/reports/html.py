"""A self-contained HTML report of any command's JSON report (``envelope`` top + sections).

One file, inline CSS, no script and nothing fetched, so a CI artifact opens offline: the run
(tool, implementations, start, duration, verdict), the counts, a summary by area (the
scenario id's first part) and by clause — rows that ran nothing say ``none ran`` — every
failing scenario with its first difference and both texts, and the findings.  It is built
from the JSON, never from live objects, so ``report merge`` renders shards the same way.
"""

from __future__ import annotations

import ast
import html
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

BAD = ("fail", "error", "xpass")
RAN = ("pass", "fail", "error", "xfail", "xpass")
COLUMNS = ("pass", "fail", "xfail", "skip")


def _clause_key(clause: str) -> tuple[str, int]:
    head, _, num = clause.rpartition("-")
    return head, int(num) if num.isdigit() else 0


def row_verdict(counts: Mapping[str, int]) -> str:
    """``FAIL``, ``known`` (only listed deviations failed), ``ok``, or ``none ran``."""
    if sum(counts.get(s, 0) for s in BAD):
        return "FAIL"
    if counts.get("xfail", 0):
        return "known"
    return "ok" if sum(counts.get(s, 0) for s in RAN) else "none ran"


def _tally(groups: Iterable[tuple[str, str]]) -> dict[str, dict[str, int]]:
    per: dict[str, dict[str, int]] = defaultdict(lambda: {s: 0 for s in (*RAN, "skip")})
    for key, status in groups:
        per[key][status] = per[key].get(status, 0) + 1
    return per


def by_area(scenarios: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Status counts per area (``format`` of ``format/date-recognition-forms``)."""
    per = _tally((str(s["id"]).split("/", 1)[0] if "/" in str(s["id"]) else "(top)", s["status"]) for s in scenarios)
    return dict(sorted(per.items()))


def by_clause(scenarios: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Status counts per SPEC clause a scenario cites."""
    per = _tally((c, s["status"]) for s in scenarios for c in s.get("clauses", []))
    return {c: per[c] for c in sorted(per, key=_clause_key)}


def counts_row(counts: Mapping[str, int]) -> dict[str, int]:
    """The four columns shown: pass, fail (fail+error+xpass), xfail, skip."""
    return {"pass": counts.get("pass", 0), "fail": sum(counts.get(s, 0) for s in BAD),
            "xfail": counts.get("xfail", 0), "skip": counts.get("skip", 0)}


def failing(scenarios: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [s for s in scenarios if s.get("status") in BAD]


def headline(data: Mapping[str, Any]) -> str:
    """``fail: 661 passed, 1 failed … (memconform conformance on memconform-reference 0.1.0)``."""
    stats = data.get("stats", {})
    parts = [f"{stats[k]} {k}" for k in ("passed", "failed", "xfail", "xpass", "errors", "skipped") if stats.get(k)]
    impls = ", ".join(f"{i.get('name')} {i.get('version')}" for i in data.get("impls", []))
    sev = data.get("summary", {}).get("by_severity", {})
    found = ", ".join(f"{v} {k}" for k, v in sev.items() if v) or "no findings"
    return f"{data.get('verdict', '?')}: {', '.join(parts) or 'no counts'}; {found}" + (f" ({impls})" if impls else "")


# --- HTML ------------------------------------------------------------------------------------

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1200px;color:#222;padding:0 1em}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}
td.n{text-align:right}.verdict{font-weight:bold;padding:2px 8px;border-radius:4px}
.pass,.ok{background:#d8f5d8}.fail,.FAIL,.error{background:#f8d0d0}.known,.hazardous{background:#fbeec2}
.none{background:#eee;color:#666}pre{background:#f6f6f6;padding:6px;white-space:pre-wrap;word-break:break-all;margin:2px 0}
.diff{display:grid;grid-template-columns:1fr 1fr;gap:8px}.lbl{font-size:.85em;color:#555}
.fd{background:#fff3c4;padding:4px 6px;font-family:monospace}.scn{border:1px solid #e4b4b4;padding:8px;margin:10px 0}
.interrupted{background:#fbeec2}td{overflow-wrap:anywhere}
table.wide{table-layout:fixed;width:100%}table.wide td{font-size:.9em;vertical-align:top}
ul.ids{columns:3 20em;font-family:monospace;font-size:.85em;margin:.3em 0}
"""
# the page fits 1,280 px: the body is at most 1200 px wide, and the one table whose cells hold
# long unbroken text (findings: evidence, commands, paths) is fixed to the body's width, its
# cells wrapping anywhere; these are its columns' shares
FINDING_WIDTHS = {"severity": 7, "kind": 9, "clause": 8, "impl": 10, "op": 10, "evidence": 26, "reproduce": 16,
                  "regression": 14}


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _table(head: Iterable[str], rows: Iterable[Iterable[str]], widths: Mapping[str, int] | None = None) -> str:
    """A table; with ``widths`` (percent per column) a fixed one as wide as the page."""
    names = list(head)
    cols = "".join(f'<col style="width:{widths.get(h, 10)}%">' for h in names) if widths else ""
    th = f"<tr>{''.join(f'<th>{_e(h)}</th>' for h in names)}</tr>" if any(names) else ""
    body = "".join("<tr>" + "".join(r) + "</tr>" for r in rows)
    css = ' class="wide"' if widths else ""
    return f"<table{css}>{cols}{th}{body}</table>"


PASSED_FOLDS = (("pass", "Passed"), ("xfail", "Expected failures (listed deviations)"), ("skip", "Skipped"))


def folded(scenarios: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every scenario that did not fail, by status, each list folded (``<details>``): the page
    says what passed without making the reader scroll past it."""
    out = []
    by_status: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for s in scenarios:
        by_status[str(s.get("status"))].append(s)
    for status, title in PASSED_FOLDS:
        rows = by_status.get(status, [])
        if rows:
            items = "".join(f"<li title='{_e(s.get('reason', ''))}'>{_e(s['id'])}</li>" for s in rows)
            out.append(f"<details><summary>{_e(title)} ({len(rows)})</summary><ul class='ids'>{items}</ul></details>")
    return out


def _count_rows(per: Mapping[str, Mapping[str, int]]) -> list[list[str]]:
    rows = []
    for key, counts in per.items():
        shown = counts_row(counts)
        v = row_verdict(counts)
        css = "none" if v == "none ran" else v
        rows.append([f"<td>{_e(key)}</td>", *(f'<td class="n">{shown[c]}</td>' for c in COLUMNS),
                     f'<td class="{_e(css)}">{_e(v)}</td>'])
    return rows


def as_text(shown: Any) -> str:
    """A failure's side as the text it stands for: a ``b'…'`` or ``'…'`` repr (how the oracles
    show values) decoded, so the page shows real lines; anything else as it is."""
    text = str(shown)
    if text[:2] in ("b'", 'b"') or text[:1] in ("'", '"'):
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):  # cut at 400 characters: not a whole literal
            return text
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        if isinstance(value, str):
            return value
    return text


def _failure_html(s: Mapping[str, Any]) -> str:
    parts = [f'<div class="scn" id="{_e(s["id"])}"><b>{_e(s["id"])}</b> '
             f'<span class="verdict {_e(s["status"])}">{_e(s["status"].upper())}</span> '
             f'[{_e(", ".join(s.get("clauses", [])))}]']
    if s.get("path"):
        parts.append(f'<div class="lbl">file: {_e(s["path"])}</div>')
    if s.get("reason"):
        parts.append(f"<div>{_e(s['reason'])}</div>")
    for f in s.get("failures", []):
        parts.append(f'<div><b>{_e(f.get("where", ""))}</b></div>')
        parts.append(f'<div class="fd">{_e(f.get("detail") or "differs")}</div>')
        parts.append('<div class="diff"><div><div class="lbl">expected</div>'
                     f'<pre>{_e(as_text(f.get("expected", "")))}</pre></div><div><div class="lbl">actual</div>'
                     f'<pre>{_e(as_text(f.get("actual", "")))}</pre></div></div>')
    if str(s.get("stderr", "")).strip():
        tail = "\n".join(str(s["stderr"]).strip().splitlines()[-20:])
        parts.append(f'<details><summary>driver stderr</summary><pre>{_e(tail)}</pre></details>')
    parts.append("</div>")
    return "\n".join(parts)


FINDING_COLUMNS = ("severity", "kind", "clause", "impl", "op", "evidence", "reproduce", "regression")


def render(data: Mapping[str, Any]) -> str:
    """The HTML page of one JSON report."""
    scenarios = list(data.get("scenarios", []))
    tool = data.get("tool", {})
    verdict = str(data.get("verdict", "?"))
    out = ["<!doctype html><html><head><meta charset='utf-8'>",
           f"<title>memconform report: {_e(verdict)}</title><style>{CSS}</style></head><body>",
           f"<h1>memconform report <span class='verdict {_e(verdict)}'>{_e(verdict)}</span></h1>",
           f"<p>{_e(headline(data))}</p>"]
    meta = [("tool", f"{tool.get('name', 'memconform')} {tool.get('version', '')}"),
            ("command", " ".join(data.get("command", []))),
            ("implementations", "; ".join(f"{i.get('spec')} = {i.get('name')} {i.get('version')}"
                                          for i in data.get("impls", []))),
            ("started", data.get("started", "")), ("seconds", data.get("seconds", ""))]
    out.append(_table(("", ""), ([f"<th>{_e(k)}</th>", f"<td>{_e(v)}</td>"] for k, v in meta)))
    stats = data.get("stats", {})
    if stats:
        out.append("<h2>Counts</h2>")
        out.append(_table(("", ""), ([f"<th>{_e(k)}</th>", f'<td class="n">{_e(v)}</td>'] for k, v in stats.items())))
    if scenarios:
        head = ("", *COLUMNS, "verdict")
        out.append("<h2>By area</h2>" + _table(("area", *head[1:]), _count_rows(by_area(scenarios))))
        bad = failing(scenarios)
        out.append(f"<h2>Failures ({len(bad)})</h2>")
        out.extend(_failure_html(s) for s in bad)
        if not bad:
            out.append("<p>none</p>")
        out.extend(folded(scenarios))
    findings = list(data.get("findings", []))
    out.append(f"<h2>Findings ({len(findings)})</h2>")
    if findings:
        out.append(_table(FINDING_COLUMNS, ([f"<td class='{_e(f.get('severity', ''))}'>{_e(f.get(c, ''))}</td>"
                                             if c == "severity" else f"<td>{_e(f.get(c, ''))}</td>"
                                             for c in FINDING_COLUMNS] for f in findings), FINDING_WIDTHS))
    else:
        out.append("<p>none</p>")
    if scenarios:
        out.append("<h2>By clause</h2>" + _table(("clause", *COLUMNS, "verdict"), _count_rows(by_clause(scenarios))))
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def write(path: Path, data: Mapping[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(data), encoding="utf-8")
    return path
