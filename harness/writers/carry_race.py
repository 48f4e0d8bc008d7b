"""Carry-over as a racing op (issue 25 item 2): every writer process is fresh, so with the
shared store on and a seeded local store its first op first carries that store over
(S-MIGRATE-1) — while the other writers already write the shared store.

``seed_locals`` plants topics (names no writer script uses, so a collision SPEC allows cannot
split them) in each tool's local store, openpi's ``agent/memory/`` and OpenCode's
``$XDG_CONFIG_HOME/opencode/memory/`` (PEER-1), each body holding a token; ``findings`` judges
the settled shared store: a carried token not reachable through the index is a lost write
(the carry-over wrote the index without the lock, or from a stale snapshot: S-MIGRATE-2,
S-INV-3), and one topic owned by two files is a split topic (``interop_checks``).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..drivers.sandbox import Sandbox
from ..oracles import interop_checks
from ..oracles.findings import VIOLATION, Finding

LOCAL_TOPICS = ("Kilo Local", "Lima Local", "Mike Local")
LOCALS = ("agent/memory/", "home/.config/opencode/memory/")
STAMP = "2026-08-01T00:00:00+00:00"


def seed_locals(sandbox: Sandbox) -> dict[str, str]:
    """Both tools' local stores with ``LOCAL_TOPICS``; topic → the token its body holds."""
    tokens = {t: f"carried-{t.split()[0].lower()}" for t in LOCAL_TOPICS}
    for local in LOCALS:
        lines = ["# Memory Index", ""]
        for topic, token in tokens.items():
            name = topic.lower().replace(" ", "-") + ".md"
            lines.append(f"- [{topic}]({name}) {STAMP} -- carried")
            sandbox.put(local + name, f'---\nname: "{topic}"\ndescription: "carried"\nlast_updated: {STAMP}\n'
                                      f'created: {STAMP}\n---\n\n{token}\n')
        sandbox.put(local + "MEMORY.md", "\n".join(lines) + "\n")
    return tokens


def findings(view: interop_checks.StoreView, tokens: Mapping[str, str], *, impl: str = "",
             reproduce: str = "") -> list[Finding]:
    """Carried topics lost from the shared index, and split topics, after the race."""
    reachable = view.reachable()
    found = [Finding("lost-write", VIOLATION, clause="S-MIGRATE-3", impl=impl, op="carry-over",
                     evidence=f"carried topic {topic!r} ({token}) is not reachable through the shared index",
                     reproduce=reproduce)
             for topic, token in tokens.items() if token not in reachable]
    return found + interop_checks.split_topics(view, reproduce=reproduce)
