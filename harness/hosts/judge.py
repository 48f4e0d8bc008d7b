"""Host versus reference: every difference in what the model was shown or the store holds.

Pure: what the host did (``Observed``) against what the reference's session model says it
should have done (``Expected``), both with their sandbox roots and stamps normalised (two
sandboxes, seconds apart).  Checked: the tools offered and their parameter schemas
(S-TOOLS-1..4), the addition to the system prompt of each prompt (S-INJECT-5..8), each tool
result text (S-TOOLS-5), the follow-ups after a threshold compaction (S-INJECT-10), the store
and ``HANDOFF.md`` after the script (S-HANDOFF), the diagnostics (S-ERR-5), and that the
host consumed the whole script.  One hazard SPEC allows is shown too: a prompt on which the
model sees no memory although the extension injected it on an earlier prompt (S-INJECT-4
leaves the prompt to the host's cache; a host that does not keep it hides the memory).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

from ..oracles.findings import HAZARD, VIOLATION, Finding
from .expected import Expected, normalise
from .fake_model import Request

STORE_PATHS = ("agent/memory.jsonc", "agent/HANDOFF.md", "agent/RULES.jsonc", "agent/memory/*", "home/.agents/*",
               "home/*.md")  # the last: files outside the store a symlink points at
HEADERS = (("## Compaction Handoff", "S-INJECT-7"), ("## Memory Rules", "S-INJECT-6"), ("## Global Memory", "S-INJECT-5"))
FILE_CLAUSES = (("agent/HANDOFF.md", "S-HANDOFF-5"), ("agent/memory.jsonc", "S-CFG-3"), ("*MEMORY.md", "S-IDX-3"))


@dataclass(frozen=True)
class PromptSeen:
    """A prompt, and every request the host sent the model while it ran."""

    text: str
    requests: list[Request]

    @property
    def scripted(self) -> list[Request]:
        return [r for r in self.requests if r.scripted]


@dataclass(frozen=True)
class Observed:
    prompts: list[PromptSeen]
    summaries: list[str]
    stderr: str
    files: dict[str, bytes]
    root: str
    unplayed: int
    tools: list[dict[str, Any]]


def judge(want: Expected, seen: Observed, *, impl: str, scenario: str) -> list[Finding]:
    def finding(kind: str, clause: str, op: str, evidence: str, severity: str = VIOLATION) -> Finding:
        return Finding(kind, severity, clause, impl, op, evidence=evidence[:600],
                       reproduce=f"memconform host --impl {impl.split(' + ')[0].split()[0]}:… --run {scenario}")

    # the tools offered are seen in a model request: none before the first prompt
    out = [finding("host-tools", clause, "tools", why)
           for clause, why in (tool_differences(want.tools, seen.tools) if seen.prompts else ())]
    previous: str | None = None
    for want_p, seen_p in zip(want.prompts, seen.prompts, strict=False):
        op = f"prompt {want_p.number} ({want_p.text[:40]!r})"
        first = seen_p.scripted[0] if seen_p.scripted else None
        if first is None:
            out.append(finding("host-no-request", "S-INJECT-4", op, "the host sent the model no request for this prompt"))
            continue
        system = normalise(first.system, seen.root)
        extra = None if want_p.extra is None else normalise(want_p.extra, want.root)
        if extra is not None:
            if not system.endswith(extra):
                clause, why = prompt_difference(extra, system)
                out.append(finding("host-system-prompt", clause, op,
                                   "the extension's part of the system prompt differs from S-INJECT's: " + why))
            previous = extra
        elif previous is not None and previous not in system:
            out.append(finding("host-memory-hidden", "S-INJECT-4", op,
                               "the model's system prompt holds no memory on this non-injected prompt: the host "
                               "did not keep the prompt the extension returned earlier, so the index, rules and "
                               "handoff are hidden from the model until the next injected prompt", HAZARD))
        results = [t for r in seen_p.scripted for t in r.tool_results()]
        if len(results) != len(want_p.results):
            out.append(finding("host-tool-results", "S-TOOLS-5", op,
                               f"{len(want_p.results)} tool results expected, {len(results)} seen: {results!r}"))
        for (name, text), got in zip(want_p.results, results, strict=False):
            if text is not None and normalise(text, want.root) != normalise(got, seen.root):
                out.append(finding("host-tool-result", "S-TOOLS-5", f"{op} {name}",
                                   f"expected {normalise(text, want.root)!r}, got {normalise(got, seen.root)!r}"))
        followups = _followups(seen_p)
        if not _same_followups(want_p.followups, followups, seen.summaries):
            out.append(finding("host-followups", "S-INJECT-10", op,
                               f"follow-ups expected {[f[:80] for f in want_p.followups]!r}, seen {[f[:80] for f in followups]!r}"))
    if len(seen.prompts) != len(want.prompts):
        out.append(finding("host-prompts", "S-INJECT-4", "script", f"{len(want.prompts)} prompts, {len(seen.prompts)} ran"))
    if seen.unplayed:
        out.append(finding("host-script", "S-INJECT-10", "script",
                           f"{seen.unplayed} scripted model turn(s) never requested: the host ran fewer model calls than scripted"))
    out += [finding("host-store", clause, rel, why) for rel, clause, why in store_differences(want, seen)]
    stderr = normalise(seen.stderr, seen.root)
    for line in dict.fromkeys(normalise(d, want.root) for d in want.diagnostics):
        if line not in stderr:
            out.append(finding("host-diagnostic", "S-ERR-5", "stderr", f"expected diagnostic line {line!r} not on stderr"))
    return out


def prompt_difference(extra: str, system: str) -> tuple[str, str]:
    """The clause and first differing line of a system prompt that should end with
    ``extra`` (its first line continues the host's last line), the clause by the section the
    line belongs to (S-INJECT-5/6/7), S-INJECT-8 when none."""
    want = extra.split("\n")
    got = system.split("\n")[-len(want):]
    if len(got) < len(want):
        return "S-INJECT-8", f"the prompt has {len(got)} lines, the extension's part alone {len(want)}"
    for i, (w, g) in enumerate(zip(want, got, strict=True)):
        if w != g and not (i == 0 and g.endswith(w)):
            above = [h for h in reversed(want[:i + 1]) for header, _ in HEADERS if h.startswith(header)]
            clause = next((c for header, c in HEADERS if above and above[0].startswith(header)), "S-INJECT-8")
            return clause, f"line {i + 1} of it: expected {w!r}, got {g!r}"
    return "S-INJECT-8", "it is not at the end of the prompt"


def _same_followups(want: list[str], seen: list[str], summaries: list[str]) -> bool:
    """Equal, except that a consolidation prompt's wording is impl-defined (S-COMPACT-3/4):
    it must carry the host's summary and ``last-session-recap``, and never ``3-5 sentence``."""
    if len(want) != len(seen):
        return False
    for w, s in zip(want, seen, strict=True):
        if w == s:
            continue
        summary_ok = any(x and x in s for x in summaries) or not any(x and x in w for x in summaries)
        if w == "Continue." or "last-session-recap" not in s or "3-5 sentence" in s or not summary_ok:
            return False
    return True


def _followups(seen: PromptSeen) -> list[str]:
    out: list[str] = []
    for r in seen.scripted:
        last = r.last_user()
        if last != seen.text and last not in out and not r.tool_results():
            out.append(last)
    return out


def schema_shape(schema: dict[str, Any]) -> dict[str, Any]:
    """A parameter schema reduced to what a model can call with: names, kinds, required."""
    props: dict[str, str] = {}
    for name, rule in (schema.get("properties") or {}).items():
        consts = [a.get("const") for a in rule.get("anyOf", ()) if isinstance(a, dict) and "const" in a]
        enum = rule.get("enum") or consts
        props[name] = "one of " + "|".join(sorted(map(str, enum))) if enum else str(rule.get("type"))
    return {"properties": props, "required": sorted(schema.get("required") or [])}


def tool_differences(
    want: dict[str, dict[str, Any]], seen: list[dict[str, Any]], *, extra_required: bool = False
) -> list[tuple[str, str]]:
    """Tools missing or with parameters other than SPEC's; ``extra_required`` lets a host
    mark an optional parameter required (OpenCode does for ones with a default)."""
    by_name = {str(t.get("name")): t for t in seen}
    out: list[tuple[str, str]] = []
    for name, schema in want.items():
        if name not in by_name:
            out.append(("S-TOOLS-1", f"tool {name} not offered to the model (offered: {sorted(by_name)})"))
            continue
        expect, got = schema_shape(schema), schema_shape(by_name[name].get("parameters") or {})
        if extra_required and set(expect["required"]) <= set(got["required"]):
            got["required"] = expect["required"]
        if expect != got:
            clause = {"write_memory": "S-TOOLS-2", "remove_memory": "S-TOOLS-3"}.get(name, "S-TOOLS-4")
            out.append((clause, f"{name} parameters {got} instead of {expect}"))
    return out


def _store(files: dict[str, bytes]) -> dict[str, bytes]:
    return {k: v for k, v in files.items() if any(fnmatch.fnmatchcase(k, p) for p in STORE_PATHS)}


def store_differences(want: Expected, seen: Observed) -> list[tuple[str, str, str]]:
    expect, got = _store(want.files), _store(seen.files)
    out: list[tuple[str, str, str]] = []
    for rel in sorted(set(expect) | set(got)):
        clause = next((c for p, c in FILE_CLAUSES if fnmatch.fnmatchcase(rel, p)), "S-WRITE-1")
        if rel not in got:
            out.append((rel, clause, "missing on the host's store (the reference has it)"))
        elif rel not in expect:
            out.append((rel, clause, f"present on the host's store, not on the reference's: {got[rel][:120]!r}"))
        else:
            a = _text(rel, expect[rel], want.root)
            b = _text(rel, got[rel], seen.root)
            if a != b:
                out.append((rel, clause, _first_difference(a, b)))
    return out


def _text(rel: str, data: bytes, root: str) -> str:
    """A store file as compared: normalised; ``memory.jsonc`` without its comment lines
    (S-CFG-3: their wording is impl-defined)."""
    text = normalise(data.decode("utf-8", "replace"), root)
    if rel.endswith("memory.jsonc"):
        text = "\n".join(line for line in text.split("\n") if not line.lstrip().startswith("//"))
    return text


def _first_difference(a: str, b: str) -> str:
    la, lb = a.split("\n"), b.split("\n")
    for i, (x, y) in enumerate(zip(la, lb, strict=False)):
        if x != y:
            return f"line {i + 1}: expected {x!r}, got {y!r}"
    return f"expected {len(la)} lines, got {len(lb)}"
