"""OpenCode with the openclaude plugin against the reference: what the two share.

The plugin is a peer, not openpi (SPEC §20): its injection texts, rule rendering, result
texts and handoff differ by design (PEER-9, PEER-12..15), so its run is judged on what the
shared-store contract and S-TOOLS make common: the three tools offered with parameters a
model can call as SPEC's (S-TOOLS-1..4; its extra ``repair_memory`` is PEER-16's; it shows
``pin`` and ``mode`` as required, having defaults for them, which a call without them
shows harmless), every index entry of the store shown to the model when a prompt begins
(PEER-15: it injects on every request; later requests of a run follow its own tool calls), a
result for every tool call, the whole script consumed, and the index the script leaves
compared under the shared-store normalisation
(``oracles.store_norm``: entries by parsed fields, any stamp for a stamp).
"""

from __future__ import annotations

import re

from ..oracles.findings import VIOLATION, Finding
from ..oracles.store_norm import index_differences
from .expected import Expected, normalise
from .judge import Observed, tool_differences

# Where each store lies: the reference's (pi's) layout, and OpenCode's local store.
INDEXES = (("agent/memory/MEMORY.md", "home/.config/opencode/memory/MEMORY.md"),
           ("home/.agents/memory/MEMORY.md", "home/.agents/memory/MEMORY.md"))
_LINK = re.compile(r"\]\(([^)]*)\)")


def judge_opencode(want: Expected, seen: Observed, *, impl: str, scenario: str) -> list[Finding]:
    def finding(kind: str, clause: str, op: str, evidence: str) -> Finding:
        return Finding(kind, VIOLATION, clause, impl, op, evidence=evidence[:600],
                       reproduce=f"memconform host --impl opencode-host:… --run {scenario}")

    out = [finding("host-tools", clause, "tools", why)
           for clause, why in (tool_differences(want.tools, seen.tools, extra_required=True) if seen.prompts else ())]
    for want_p, seen_p in zip(want.prompts, seen.prompts, strict=False):
        op = f"prompt {want_p.number} ({want_p.text[:40]!r})"
        if not seen_p.scripted:
            out.append(finding("host-no-request", "PEER-15", op, "the host sent the model no request for this prompt"))
            continue
        # the index as the prompt began: later requests of the run follow its own tool calls
        hidden = [f for f in _LINK.findall(want_p.index) if f"]({f})" not in seen_p.scripted[0].system]
        if hidden:
            out.append(finding("host-index-hidden", "PEER-15", op, f"index entries not in the system prompt: {hidden}"))
        results = [t for r in seen_p.scripted for t in r.tool_results()]
        if len(results) != len(want_p.results):
            out.append(finding("host-tool-results", "S-TOOLS-5", op,
                               f"{len(want_p.results)} tool results expected, {len(results)} seen: {results!r}"))
    if seen.unplayed:
        out.append(finding("host-script", "S-TOOLS-5", "script",
                           f"{seen.unplayed} scripted model turn(s) never requested: the host ran fewer model calls than scripted"))
    for ours, theirs in INDEXES:
        expect, got = want.files.get(ours), seen.files.get(theirs)
        if expect is None and got is None:
            continue
        if expect is None or got is None:
            out.append(finding("host-store", "SS-IDX-1", theirs, "missing" if got is None else "present, the reference has none"))
            continue
        pattern = normalise(expect.decode("utf-8", "replace"), want.root)  # stamps as ${TS}/${DATE}
        for why in index_differences(pattern, got.decode("utf-8", "replace")):
            out.append(finding("host-store", "SS-IDX-3", theirs, why))
    return out
