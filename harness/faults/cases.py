"""The op-case catalogue: each operation kind to crash or fault, with the store before it.

Shared by the in-process explorer and the real kills, so both crash the same operations
from the same stores; the fixture texts are the stores' files in SPEC's formats.

Two kinds of case (issue 30 item 1): those laid out over the two JS tools' private stores
(``LAYOUTS``: the reference, pi and OpenCode only), and those over the **shared store** alone
(``OpCase.shared``): what docs/SHARED_STORE.md lets any co-writer do there (write in each
mode, remove, pin, repair where offered).  The shared cases apply to every implementation,
a third tool's ``node:`` driver included, whose ``hello`` offers their op (``applies``);
such a driver finds the shared store switched on in both JS tools' configuration places,
as the scenarios put it (docs/IMPLEMENTING.md §1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..oracles.crash_judge import SHARED_REL, Intent, State
from ..oracles.spec import INITIAL_INDEX, TOMBSTONES


@dataclass(frozen=True)
class Layout:
    """Where an implementation keeps its local store and configuration (relative paths)."""

    local: str
    config: str


LAYOUTS: dict[str, Layout] = {
    "python": Layout("agent/memory", "agent/memory.jsonc"),
    "pi": Layout("agent/memory", "agent/memory.jsonc"),
    "opencode": Layout("home/.config/opencode/memory", "home/.config/opencode/memory.jsonc"),
}
CONFIGS = tuple(lay.config for lay in LAYOUTS.values())
"""Where a case's ``{C}`` goes for a tool of no known layout: both JS tools' places."""
STAMP = "2026-08-01T00:00:00+00:00"


def topic_text(name: str, summary: str, body: str) -> str:
    return (
        f'---\nmetadata:\n  node_type: memory\nname: "{name}"\ndescription: "{summary}"\n'
        f"last_updated: {STAMP}\ncreated: {STAMP}\n---\n\n{body}\n"
    )


def entry(name: str, fname: str, summary: str) -> str:
    return f"- [{name}]({fname}) {STAMP} -- {summary}"


LOCAL_CFG = '{"shared_dir": false}\n'
SHARED_CFG = '{"shared_dir": true}\n'
INDEX_B = INITIAL_INDEX + entry("B", "b.md", "bee") + "\n"
INDEX_AB = INITIAL_INDEX + entry("A", "a.md", "ay") + "\n" + entry("B", "b.md", "bee") + "\n"
TOPIC_A = topic_text("A", "ay", "alpha")
TOPIC_B = topic_text("B", "bee", "beta")
HANDOFF_OLD = "## 2026-08-06T10:00:00+00:00 (manual)\n\n- earlier work\n"
MESSAGES = [{"role": "assistant", "content": [{"type": "text", "text": "- fixed the build\n- next step: deploy"}]}]


@dataclass(frozen=True)
class OpCase:
    """One operation kind to crash: the store before it, the call, and what it may change.

    ``given`` paths use ``{L}`` (the implementation's local store), ``{S}`` (the shared store)
    and ``{C}`` (its configuration file).  ``recover`` is the next operation a fresh process
    runs after the crash (by default the same call again).
    """

    name: str
    kind: str
    given: dict[str, str]
    op: str
    args: dict[str, Any]
    intent: Intent
    recover: tuple[str, dict[str, Any]] | None = None
    impls: frozenset[str] = frozenset({"python", "pi", "opencode"})
    description: str = ""

    @property
    def shared(self) -> bool:
        """Laid out over the shared store alone (and the configuration that switches it on):
        any co-writer can run it, whatever its private layout."""
        on_shared = [rel for rel in self.given if rel.startswith(("{S}/", SHARED_REL + "/"))]
        return bool(on_shared) and all(rel in on_shared or rel == "{C}" or rel in CONFIGS for rel in self.given)

    def applies(self, impl: str, ops: frozenset[str] | None = None) -> bool:
        """Whether ``impl`` (a ``PeerSpec.kind``) can run this case: its layout is known or
        the case is a shared one, and its driver offers the op (``ops``: hello's, when known)."""
        known = self.shared or impl in LAYOUTS
        return known and (impl not in LAYOUTS or impl in self.impls) and (ops is None or self.op in ops)

    def files(self, impl: str) -> State:
        lay = LAYOUTS.get(impl)
        if lay is None and not self.shared:
            raise ValueError(f"op case {self.name} is laid out over the JS tools' private stores, not for {impl}")
        out: State = {}
        for rel, text in self.given.items():
            if lay is None and rel == "{C}":
                out.update({c: text.encode("utf-8") for c in CONFIGS})
                continue
            rel = rel.replace("{S}", SHARED_REL)
            if lay is not None:
                rel = rel.replace("{L}", lay.local).replace("{C}", lay.config)
            out[rel] = text.encode("utf-8")
        return out

    def recovery(self) -> tuple[str, dict[str, Any]]:
        return self.recover if self.recover is not None else (self.op, self.args)


def _case(name: str, kind: str, given: dict[str, str], op: str, args: dict[str, Any], **kw: Any) -> OpCase:
    return OpCase(name, kind, given, op, args, **kw)


_LOCAL_AB = {"{C}": LOCAL_CFG, "{L}/MEMORY.md": INDEX_AB, "{L}/a.md": TOPIC_A, "{L}/b.md": TOPIC_B}
_SHARED_AB = {"{C}": SHARED_CFG, "{S}/MEMORY.md": INDEX_AB, "{S}/a.md": TOPIC_A, "{S}/b.md": TOPIC_B}
_PI_ONLY = frozenset({"python", "pi"})
_UNINDEXED_C = {**_SHARED_AB, "{S}/c.md": topic_text("C", "sea", "gamma"), "{S}/d.md": topic_text("D", "dee", "delta"),
                f"{{S}}/{TOMBSTONES}": "d.md\n"}

CASES: dict[str, OpCase] = {
    c.name: c
    for c in [
        _case(
            "write-create", "write",
            {"{C}": LOCAL_CFG, "{L}/MEMORY.md": INDEX_B, "{L}/b.md": TOPIC_B},
            "write_memory", {"topic": "A", "content": "alpha", "summary": "ay"},
            intent=Intent("write", writes=frozenset({"a.md"})),
            description="a new topic next to an indexed one",
        ),
        _case(
            "write-append", "write", dict(_LOCAL_AB),
            "write_memory", {"topic": "A", "content": "more", "summary": "ay two"},
            intent=Intent("write", writes=frozenset({"a.md"})),
        ),
        _case(
            "write-replace", "write", dict(_LOCAL_AB),
            "write_memory", {"topic": "A", "content": "fresh", "summary": "ay three", "mode": "replace"},
            intent=Intent("write", writes=frozenset({"a.md"})),
        ),
        _case(
            "write-shared-tombstoned", "write",
            {"{C}": SHARED_CFG, "{S}/MEMORY.md": INDEX_B, "{S}/b.md": TOPIC_B, "{S}/a.md": TOPIC_A,
             f"{{S}}/{TOMBSTONES}": "a.md\n"},
            "write_memory", {"topic": "A", "content": "back", "summary": "ay again"},
            intent=Intent("write", writes=frozenset({"a.md"})),
            description="shared write of a tombstoned topic: index, then tombstone cleared",
        ),
        _case(
            "remove", "remove", dict(_LOCAL_AB),
            "remove_memory", {"topic": "A"}, intent=Intent("remove", removes=frozenset({"a.md"})),
        ),
        _case(
            "remove-shared", "remove", dict(_SHARED_AB),
            "remove_memory", {"topic": "A"}, intent=Intent("remove", removes=frozenset({"a.md"})),
            description="tombstone recorded before the index drops the entry",
        ),
        _case(
            "write-shared", "write", dict(_SHARED_AB),
            "write_memory", {"topic": "C", "content": "gamma", "summary": "sea"},
            intent=Intent("write", writes=frozenset({"c.md"})),
            description="a new topic in the shared store, beside another tool's topics",
        ),
        _case(
            "write-shared-append", "write", dict(_SHARED_AB),
            "write_memory", {"topic": "A", "content": "more", "summary": "ay two"},
            intent=Intent("write", writes=frozenset({"a.md"})),
            description="an append to a topic of the shared store",
        ),
        _case(
            "write-shared-replace", "write", dict(_SHARED_AB),
            "write_memory", {"topic": "A", "content": "fresh", "summary": "ay three", "mode": "replace"},
            intent=Intent("write", writes=frozenset({"a.md"})),
            description="a replace-mode write in the shared store",
        ),
        _case(
            "unpin-shared", "pin",
            {**_SHARED_AB, "{S}/MEMORY.md": INITIAL_INDEX + entry("A", "a.md", "ay") + "\n"
             + entry("B", "b.md", "bee").replace("(b.md)", "(b.md) [pin]") + "\n"},
            "pin_memory", {"topic": "B", "pin": False}, intent=Intent("pin"),
            description="unpinning rewrites the shared index",
        ),
        _case(
            "repair-shared", "repair", dict(_UNINDEXED_C),
            "repair_memory", {}, intent=Intent("repair", writes=frozenset({"c.md"})), impls=frozenset({"opencode"}),
            description="repair indexes the unindexed c.md and skips the tombstoned d.md (where offered)",
        ),
        _case(
            "pin-shared", "pin", dict(_SHARED_AB),
            "pin_memory", {"topic": "B", "pin": True}, intent=Intent("pin"),
            description="an index rewrite in the shared store",
        ),
        _case(
            "pin", "pin", dict(_LOCAL_AB),
            "pin_memory", {"topic": "A", "pin": True}, intent=Intent("pin"),
        ),
        _case(
            "retire", "retire",
            {"{C}": LOCAL_CFG,
             "{L}/MEMORY.md": INDEX_B + entry("Recap", "last-session-recap.md", "old recap") + "\n",
             "{L}/b.md": TOPIC_B, "{L}/last-session-recap.md": topic_text("Recap", "old recap", "recap"),
             "{S}/MEMORY.md": INITIAL_INDEX + entry("Recap", "last-session-recap.md", "shared recap") + "\n",
             "{S}/last-session-recap.md": topic_text("Recap", "shared recap", "recap")},
            "retire_recaps", {}, intent=Intent("retire", removes=frozenset({"last-session-recap.md"})),
            impls=_PI_ONLY,
        ),
        _case(
            "carry-over", "carry-over",
            {"{C}": SHARED_CFG, "{L}/MEMORY.md": INDEX_AB, "{L}/a.md": TOPIC_A, "{L}/b.md": TOPIC_B,
             "{S}/MEMORY.md": INITIAL_INDEX + entry("C", "c.md", "sea") + "\n",
             "{S}/c.md": topic_text("C", "sea", "gamma"), "{S}/b.md": topic_text("B", "other", "foreign")},
            "memory_dir", {}, intent=Intent("carry-over"),
            description="copy a.md, b.md as b-<suffix>.md, append both lines, then the sentinel",
        ),
        _case(
            "config-create", "config", {}, "parse_rules", {}, intent=Intent("config"),
        ),
        _case(
            "handoff-write", "handoff", {"agent/HANDOFF.md": HANDOFF_OLD},
            "write_handoff", {"messages": MESSAGES, "reason": "manual"}, intent=Intent("handoff"),
            recover=("read_handoff", {}), impls=_PI_ONLY,
        ),
        _case(
            "handoff-replace", "handoff", {"agent/HANDOFF.md": HANDOFF_OLD},
            "replace_latest_handoff", {"summary": "## Goal\nship it", "reason": "threshold"},
            intent=Intent("handoff"), recover=("read_handoff", {}), impls=_PI_ONLY,
        ),
    ]
}
