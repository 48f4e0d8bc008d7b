"""Write the shared-store profile's scenarios (scenarios/conformance/shared-store/**).

Run ``python tests/shared_store_corpus.py`` after changing a family; the JSON files are the
corpus (committed), this script only spares writing ~170 of them by hand.  Every scenario
works in the shared store ``home/.agents/memory/`` with shared mode switched on for every
co-writer (openpi's ``agent/memory.jsonc`` and OpenCode's ``$XDG_CONFIG_HOME/opencode/
memory.jsonc``), judges each op by its outcome kind and the store by its normalised bytes
(docs/SHARED_STORE.md), and names the SS- clauses it covers.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "scenarios" / "conformance" / "shared-store"
D = "home/.agents/memory/"
TS = "2026-08-07T01:02:50+00:00"  # the frozen clock (scenarios.DEFAULT_NOW) under TZ=UTC
CFG = {
    "agent/memory.jsonc": '{"shared_dir": true}\n',
    "home/.config/opencode/memory.jsonc": '{"shared_dir": true}\n',
}
HEAD = "# Memory Index\n\n"
BUSY_TIMES = {"max_seconds": 8}  # the time bounds themselves are issue 15's (real-time runs)
EMPTIED = "# Memory Index\n"  # the index after its only entry (no final LF) is removed (S-FMT-5)

SCENARIOS: list[dict[str, Any]] = []


def fm(name: str, desc: str, body: str, created: str = TS, updated: str = TS, extra: str = "metadata:\n  node_type: memory\n") -> str:
    """A topic file as every co-writer writes it (S-FMT-9, PEER-18)."""
    return (f"---\n{extra}name: {json.dumps(name, ensure_ascii=False)}\n"
            f"description: {json.dumps(desc, ensure_ascii=False)}\nlast_updated: {updated}\ncreated: {created}\n---\n{body}")


def entry(name: str, file: str, summary: str, stamp: str = TS, pin: bool = False) -> str:
    return f"- [{name}]({file}){' [pin]' if pin else ''} {stamp} -- {summary}"


def add(sid: str, clauses: list[str], description: str, store: dict[str, str], steps: list[dict[str, Any]],
        then: dict[str, str], *, present: tuple[str, ...] = (), clock: dict[str, str] | None = None,
        extra_given: dict[str, str] | None = None, ignore: list[dict[str, str]] | None = None) -> None:
    """One scenario; ``store``/``then`` are relative to the shared store."""
    given = dict(CFG)
    given.update({D + k: v for k, v in store.items()})
    given.update(extra_given or {})
    sc: dict[str, Any] = {
        "id": f"shared-store/{sid}",
        "clauses": clauses,
        "profiles": ["shared-store"],
        "description": description,
    }
    if clock:
        sc["clock"] = clock
    sc["given"] = {"files": given}
    sc["steps"] = steps
    t: dict[str, Any] = {"store": {D + k: v for k, v in then.items()}}
    if present:
        t["present"] = [D + p for p in present]
    t["no_other_files"] = [D.rstrip("/")]
    t["invariants"] = "all"
    if ignore:
        t["ignore"] = ignore
    sc["then"] = t
    SCENARIOS.append(sc)


def op(name: str, outcome: str | list[str], **args: Any) -> dict[str, Any]:
    return {"op": name, "args": args, "expect": {"outcome": outcome}}


def write(topic: str, content: str, summary: str, outcome: str | list[str] = "ok", **kw: Any) -> dict[str, Any]:
    return op("write_memory", outcome, topic=topic, content=content, summary=summary, **kw)


# ---------------------------------------------------------------- foreign lines survive
FOREIGN = {
    "plain-entry": ("- [Other Tool](other-tool.md) 2026-08-01T10:00:00+00:00 -- written elsewhere", {"other-tool.md": "o\n"}),
    "pinned-entry": ("- [Kept](kept.md) [pin] 2026-08-01T10:00:00+00:00 -- a pin", {"kept.md": "k\n"}),
    "date-only-stamp": ("- [Dated](dated.md) 2026-08-02 -- date only", {"dated.md": "d\n"}),
    "indented-entry": ("  - [Indented](indented.md) 2026-08-01 -- two spaces", {"indented.md": "i\n"}),
    "heading": ("## Projects", {}),
    "prose": ("Notes kept by hand: do not reorder.", {}),
    "unsafe-dotfile-entry": ("- [Hidden](.hidden.md) 2026-08-01 -- not an entry", {}),
    "unsafe-index-entry": ("- [Index](memory.md) 2026-08-01 -- not an entry", {}),
    "html-comment": ("<!-- managed by two tools -->", {}),
    "non-ascii-entry": ("- [Café ☕](cafe.md) 2026-08-01 -- überall", {"cafe.md": "c\n"}),
    "no-summary-entry": ("- [Bare](bare.md) 2026-08-01", {"bare.md": "b\n"}),
    "zulu-stamp-entry": ("- [Zulu](zulu.md) 2026-08-01T00:00:00Z -- utc stamp", {"zulu.md": "z\n"}),
    "pin-after-stamp-entry": ("- [Late Pin](late-pin.md) 2026-08-01 [pin] -- pinned after the stamp", {"late-pin.md": "p\n"}),
    "double-dash-summary-entry": ("- [Dashes](dashes.md) 2026-08-01 -- a -- b", {"dashes.md": "d\n"}),
    "brackets-summary-entry": ("- [Docs](docs.md) 2026-08-01 -- see [docs] (here)", {"docs.md": "d\n"}),
}
ACTIONS = {
    "write-new": (write("Fresh Topic", "fresh", "fresh summary"), "SS-WRITE-1",
                  lambda idx: idx + "\n" + entry("Fresh Topic", "fresh-topic.md", "fresh summary"),
                  {"fresh-topic.md": fm("Fresh Topic", "fresh summary", "\nfresh\n")}),
    "update-own": (write("Mine", "second", "mine v2", mode="replace"), "SS-WRITE-1",
                   lambda idx: idx.replace(entry("Mine", "mine.md", "mine v1", "2026-08-03T00:00:00+00:00"), entry("Mine", "mine.md", "mine v2")),
                   {"mine.md": fm("Mine", "mine v2", "\nsecond\n", created="2026-08-03T00:00:00+00:00")}),
    "pin-own": (op("pin_memory", "ok", topic="Mine", pin=True), "SS-PIN-1",
                lambda idx: idx.replace("- [Mine](mine.md) ", "- [Mine](mine.md) [pin] "), {}),
    "remove-own": (op("remove_memory", "ok", topic="Mine"), "SS-REMOVE-1",
                   lambda idx: idx.replace(entry("Mine", "mine.md", "mine v1", "2026-08-03T00:00:00+00:00") + "\n", ""), {}),
}
MINE_FILE = fm("Mine", "mine v1", "\nfirst\n", created="2026-08-03T00:00:00+00:00", updated="2026-08-03T00:00:00+00:00")
for fname, (line, files) in FOREIGN.items():
    for aname, (step, clause, after, written) in ACTIONS.items():
        idx = HEAD + line + "\n" + entry("Mine", "mine.md", "mine v1", "2026-08-03T00:00:00+00:00") + "\n"
        store = {"MEMORY.md": idx, "mine.md": MINE_FILE, **files}
        then = {"MEMORY.md": after(idx), "mine.md": MINE_FILE, **files, **written}
        extra = {".ocl-removed": "mine.md\n"} if aname == "remove-own" else {}
        add(f"foreign/{fname}-kept-by-{aname}", ["SS-IDX-2", "SS-IDX-3", clause, "S-FMT-5", "S-IDX-5"],
            f"A line another tool wrote ({fname}) is kept, byte for byte and in place, by {aname}.",
            store, [step], {**then, **extra})

# ---------------------------------------------------------------- frontmatter and bodies
FM_CASES = {
    "custom-key-survives": "owner: ocl\n",
    "metadata-block-survives": "metadata:\n  node_type: memory\n  origin: opencode\n",
    "tags-list-survives": "tags:\n  - infra\n  - db\n",
    "last-updated-by-survives": "last_updated_by: openclaude-memory\n",
}
for cname, extra in FM_CASES.items():
    old = (f"---\n{extra}name: \"Conf\"\ndescription: \"old\"\nlast_updated: 2026-08-01T00:00:00+00:00\n"
           "created: 2026-07-01T00:00:00+00:00\n---\n\nbody one\n")
    new = (f"---\n{extra}name: \"Conf\"\ndescription: \"new\"\nlast_updated: {TS}\n"
           "created: 2026-07-01T00:00:00+00:00\n---\n\nbody two\n")
    idx = HEAD + entry("Conf", "conf.md", "old", "2026-08-01T00:00:00+00:00")
    add(f"frontmatter/{cname}", ["SS-FMT-1", "S-WRITE-9", "PEER-18"],
        "A replace-mode write keeps frontmatter lines it does not maintain, and `created`.",
        {"MEMORY.md": idx, "conf.md": old}, [write("Conf", "body two", "new", mode="replace")],
        {"MEMORY.md": HEAD + entry("Conf", "conf.md", "new"), "conf.md": new})

for case, (name, summary) in {
    "quote-in-name": ('Say "hi"', "quoted"),
    "backslash-in-summary": ("Paths", "C:\\temp \\ x"),
    "unicode-name": ("Zürich ☕", "ünïcode"),
    "tab-in-summary": ("Tabs", "a\tb"),
}.items():
    from_slug = {"quote-in-name": "say-hi.md", "backslash-in-summary": "paths.md", "unicode-name": "zrich.md",
                 "tab-in-summary": "tabs.md"}[case]
    folded = " ".join(summary.split())
    add(f"frontmatter/json-quoted-{case}", ["SS-FMT-1", "SS-NAME-2", "S-FMT-9", "S-FMT-18", "PEER-18"],
        "name and description are JSON string literals; the index line carries the folded summary.",
        {"MEMORY.md": HEAD}, [write(name, "x", summary)],
        {"MEMORY.md": HEAD + "\n" + entry(name, from_slug, folded), from_slug: fm(name, folded, "\nx\n")})

add("frontmatter/created-kept-on-append", ["SS-FMT-1", "SS-FMT-2", "S-WRITE-9", "S-WRITE-10"],
    "An append keeps `created` and the old body; the new content follows a heading (its rendering is free).",
    {"MEMORY.md": HEAD + entry("Log", "log.md", "v1", "2026-08-01T00:00:00+00:00"),
     "log.md": fm("Log", "v1", "\nfirst\n", created="2026-08-01T00:00:00+00:00", updated="2026-08-01T00:00:00+00:00")},
    [write("Log", "second", "v2")],
    {"MEMORY.md": HEAD + entry("Log", "log.md", "v2"),
     "log.md": fm("Log", "v2", "\nfirst\n\n## ${STAMP}\n\nsecond\n", created="2026-08-01T00:00:00+00:00")})
add("frontmatter/replace-discards-old-body", ["SS-FMT-2", "S-WRITE-10"],
    "A replace-mode write leaves exactly the new content as the body.",
    {"MEMORY.md": HEAD + entry("State", "state.md", "v1", "2026-08-01T00:00:00+00:00"),
     "state.md": fm("State", "v1", "\nold state\n\n## 2026-08-01\n\nmore\n", created="2026-08-01T00:00:00+00:00",
                    updated="2026-08-01T00:00:00+00:00")},
    [write("State", "new state", "v2", mode="replace")],
    {"MEMORY.md": HEAD + entry("State", "state.md", "v2"),
     "state.md": fm("State", "v2", "\nnew state\n", created="2026-08-01T00:00:00+00:00")})
add("frontmatter/file-without-frontmatter-gets-one", ["SS-FMT-1", "S-WRITE-9", "S-FMT-9"],
    "A hand-written topic without frontmatter gets the default block; its text stays as the old body.",
    {"MEMORY.md": HEAD + entry("Hand", "hand.md", "v1", "2026-08-01T00:00:00+00:00"), "hand.md": "written by hand\n"},
    [write("Hand", "tool text", "v2")],
    {"MEMORY.md": HEAD + entry("Hand", "hand.md", "v2"), "hand.md": fm("Hand", "v2", "written by hand\n\n## ${STAMP}\n\ntool text\n")})
for n in range(1, 4):
    body = "".join(f"\nline{i}\n" if i == 1 else f"\n## ${{STAMP}}\n\nline{i}\n" for i in range(1, n + 2))
    add(f"frontmatter/append-{n + 1}-times-one-created", ["SS-FMT-1", "SS-FMT-2", "S-WRITE-9", "S-INV-2"],
        "Repeated appends keep one `created` line and every earlier body part.",
        {"MEMORY.md": HEAD}, [write("Journal", f"line{i}", f"s{i}") for i in range(1, n + 2)],
        {"MEMORY.md": HEAD + "\n" + entry("Journal", "journal.md", f"s{n + 1}"),
         "journal.md": fm("Journal", f"s{n + 1}", body)})

# ---------------------------------------------------------------- first writes and names
for topic, slug in {
    "PostgreSQL Setup": "postgresql-setup", "Node.js & npm!": "nodejs-npm", "  spaced   out  ": "spaced-out",
    "UPPER lower": "upper-lower", "v2 release 10": "v2-release-10", "a-b--c": "a-b-c",
}.items():
    name = topic.strip()
    add(f"names/slug-{slug}", ["SS-LAYOUT-1", "SS-NAME-1", "SS-NAME-2", "SS-WRITE-1", "S-FMT-8", "S-FMT-5", "PEER-18"],
        "A first write into a fresh store: the slug filename, the canonical entry, the topic file.",
        {"MEMORY.md": HEAD}, [write(topic, "c", "s")],
        {"MEMORY.md": HEAD + "\n" + entry(name, f"{slug}.md", "s"), f"{slug}.md": fm(name, "s", "\nc\n")})

add("names/indexed-filename-not-taken-over", ["SS-NAME-2", "S-WRITE-7", "PEER-18"],
    "A slug whose filename another topic holds in the index gets the `-2` suffix.",
    {"MEMORY.md": HEAD + entry("Slug Collision!", "slug-collision.md", "first", "2026-08-01T00:00:00+00:00"),
     "slug-collision.md": fm("Slug Collision!", "first", "\none\n", "2026-08-01T00:00:00+00:00", "2026-08-01T00:00:00+00:00")},
    [write("Slug Collision", "two", "second")],
    {"MEMORY.md": HEAD + entry("Slug Collision!", "slug-collision.md", "first", "2026-08-01T00:00:00+00:00") + "\n"
     + entry("Slug Collision", "slug-collision-2.md", "second"),
     "slug-collision.md": fm("Slug Collision!", "first", "\none\n", "2026-08-01T00:00:00+00:00", "2026-08-01T00:00:00+00:00"),
     "slug-collision-2.md": fm("Slug Collision", "second", "\ntwo\n")})
add("names/third-collision-gets-3", ["SS-NAME-2", "S-WRITE-7", "PEER-18"],
    "With `x.md` and `x-2.md` indexed for other names, the next colliding topic gets `x-3.md`.",
    {"MEMORY.md": HEAD + entry("X!", "x.md", "a", "2026-08-01") + "\n" + entry("X?", "x-2.md", "b", "2026-08-01"),
     "x.md": "a\n", "x-2.md": "b\n"},
    [write("X", "c", "c")],
    {"MEMORY.md": HEAD + entry("X!", "x.md", "a", "2026-08-01") + "\n" + entry("X?", "x-2.md", "b", "2026-08-01") + "\n"
     + entry("X", "x-3.md", "c"), "x.md": "a\n", "x-2.md": "b\n", "x-3.md": fm("X", "c", "\nc\n")})
add("names/unindexed-foreign-file-not-overwritten", ["SS-NAME-2", "SS-FMT-3", "S-WRITE-7", "PEER-12"],
    "An unindexed file of the slug's name whose frontmatter names another topic is left alone; `-2` is used.",
    {"MEMORY.md": HEAD, "notes.md": "---\nname: \"Other Notes\"\n---\nforeign\n"},
    [write("Notes", "mine", "m")],
    {"MEMORY.md": HEAD + "\n" + entry("Notes", "notes-2.md", "m"), "notes.md": "---\nname: \"Other Notes\"\n---\nforeign\n",
     "notes-2.md": fm("Notes", "m", "\nmine\n")})
add("names/case-insensitive-name-match-updates", ["SS-WRITE-1", "S-WRITE-6", "PEER-12"],
    "A write whose topic matches an entry's name case-insensitively updates that entry's file.",
    {"MEMORY.md": HEAD + entry("Redis Commands", "redis-cmds.md", "v1", "2026-08-01T00:00:00+00:00"),
     "redis-cmds.md": fm("Redis Commands", "v1", "\na\n", "2026-08-01T00:00:00+00:00", "2026-08-01T00:00:00+00:00")},
    [write("redis commands", "b", "v2", mode="replace")],
    {"MEMORY.md": HEAD + entry("redis commands", "redis-cmds.md", "v2"),
     "redis-cmds.md": fm("redis commands", "v2", "\nb\n", created="2026-08-01T00:00:00+00:00")})

# ---------------------------------------------------------------- refusals: nothing written
for case, topic in {"empty": "", "blank": "   ", "no-ascii-alnum": "你好", "only-punctuation": "!!!",
                    "memory-index-name": "MEMORY", "memory-lowercase": "memory"}.items():
    add(f"refusals/write-{case}-topic", ["SS-WRITE-2", "S-WRITE-2", "PEER-12"],
        "A topic no safe filename can be made from is refused and nothing is written.",
        {"MEMORY.md": HEAD + entry("A", "a.md", "a", "2026-08-01"), "a.md": "a\n"},
        [write(topic, "x", "s", "refused")],
        {"MEMORY.md": HEAD + entry("A", "a.md", "a", "2026-08-01"), "a.md": "a\n"})
for case, topic in {"close-bracket": "Bad]Topic", "open-paren": "Bad(Topic", "newline": "Bad\nTopic"}.items():
    add(f"refusals/write-{case}-never-breaks-the-index", ["SS-WRITE-2", "SS-IDX-5", "S-WRITE-2", "PEER-10"],
        "A topic with link characters is refused, or (PEER-10) sanitised: either way the index stays parseable.",
        {"MEMORY.md": HEAD + entry("A", "a.md", "a", "2026-08-01"), "a.md": "a\n"},
        [write(topic, "x", "s", ["refused", "ok"])],
        {"a.md": "a\n"}, ignore=[{"path": D + "*.md", "reason": "PEER-10: a sanitised topic's new file is allowed"}])
    t = SCENARIOS[-1]["then"]
    del t["no_other_files"]
    # the old bytes, then at most one well-formed entry whose name has no link character
    t["matches"] = {D + "MEMORY.md": r"# Memory Index\n\n- \[A\]\(a\.md\) 2026-08-01 -- a"
                    r"(\n- \[[^\[\]()\n\r]+\]\([a-z0-9-]+\.md\) [0-9T:+-]+ -- s)?"}
for case, (idx_extra, topic, kind) in {
    "remove-not-found": ("", "Nothing Like It", "not-found"),
    "pin-not-found": ("", "Nothing Like It", "not-found"),
    "remove-ambiguous": ("\n" + entry("Zeta Two", "zeta-two.md", "z2", "2026-08-01"), "Zeta", "refused"),
    "pin-ambiguous": ("\n" + entry("Zeta Two", "zeta-two.md", "z2", "2026-08-01"), "Zeta", "refused"),
    "remove-pinned": ("\n" + entry("Locked", "locked.md", "l", "2026-08-01", pin=True), "Locked", "refused"),
}.items():
    idx = HEAD + entry("Zeta One", "zeta-one.md", "z1", "2026-08-01") + idx_extra
    files = {"zeta-one.md": "1\n", "zeta-two.md": "2\n", "locked.md": "l\n"}
    step = op("remove_memory" if case.startswith("remove") else "pin_memory", kind, topic=topic,
              **({} if case.startswith("remove") else {"pin": True}))
    add(f"refusals/{case}-changes-nothing", ["SS-REMOVE-3" if "pinned" not in case else "SS-REMOVE-2", "S-REMOVE-2", "S-IDX-8", "PEER-13"],
        "A lookup that finds nothing, several entries, or a pinned one changes no file.",
        {"MEMORY.md": idx, **files}, [step], {"MEMORY.md": idx, **files})
for opname in ("remove_memory", "pin_memory"):
    args: dict[str, Any] = {"topic": "A"} if opname == "remove_memory" else {"topic": "A", "pin": True}
    add(f"refusals/{opname.split('_')[0]}-without-index-not-found", ["SS-REMOVE-4", "S-REMOVE-1", "PEER-13", "PEER-18"],
        "Without an index, remove and pin answer not-found and create no index.",
        {"a.md": "a\n"}, [op(opname, "not-found", **args)], {"a.md": "a\n"})
add("refusals/exact-name-wins-over-partial", ["SS-REMOVE-3", "S-IDX-8", "PEER-13"],
    "An exact name is chosen even when it is also a substring of other names.",
    {"MEMORY.md": HEAD + entry("Zeta", "zeta.md", "z", "2026-08-01") + "\n" + entry("Zeta Two", "zeta-two.md", "z2", "2026-08-01"),
     "zeta.md": "z\n", "zeta-two.md": "2\n"},
    [op("remove_memory", "ok", topic="Zeta")],
    {"MEMORY.md": HEAD + entry("Zeta Two", "zeta-two.md", "z2", "2026-08-01"), "zeta.md": "z\n", "zeta-two.md": "2\n",
     ".ocl-removed": "zeta.md\n"})

# ---------------------------------------------------------------- pins
PIN_BASE = HEAD + entry("Redis Commands", "redis-commands.md", "cmds", "2026-08-01T00:00:00+00:00")
for case, (start_pin, pin, kind) in {"pin": (False, True, "ok"), "unpin": (True, False, "ok"),
                                     "pin-already-pinned": (True, True, "ok"), "unpin-already-unpinned": (False, False, "ok")}.items():
    before = HEAD + entry("Redis Commands", "redis-commands.md", "cmds", "2026-08-01T00:00:00+00:00", pin=start_pin)
    after = HEAD + entry("Redis Commands", "redis-commands.md", "cmds", "2026-08-01T00:00:00+00:00", pin=pin)
    for how, topic in {"by-name": "Redis Commands", "by-filename": "redis-commands.md", "by-part": "redis"}.items():
        add(f"pins/{case}-{how}", ["SS-PIN-1", "SS-PIN-2", "S-PIN-2", "S-PIN-3", "PEER-14"],
            "pin_memory sets or clears the flag right after the link, and touches no topic file.",
            {"MEMORY.md": before, "redis-commands.md": "r\n"}, [op("pin_memory", kind, topic=topic, pin=pin)],
            {"MEMORY.md": after, "redis-commands.md": "r\n"})
add("pins/write-keeps-pin", ["SS-IDX-4", "S-WRITE-15", "S-IDX-3", "PEER-11"],
    "A write to a pinned topic without `pin` keeps the pin (a write never unpins).",
    {"MEMORY.md": HEAD + entry("Kept", "kept.md", "v1", "2026-08-01T00:00:00+00:00", pin=True),
     "kept.md": fm("Kept", "v1", "\na\n", "2026-08-01T00:00:00+00:00", "2026-08-01T00:00:00+00:00")},
    [write("Kept", "b", "v2", mode="replace")],
    {"MEMORY.md": HEAD + entry("Kept", "kept.md", "v2", pin=True), "kept.md": fm("Kept", "v2", "\nb\n", created="2026-08-01T00:00:00+00:00")})
add("pins/write-with-pin-pins", ["SS-IDX-4", "S-WRITE-15"],
    "A write with `pin: true` pins the new entry.", {"MEMORY.md": HEAD}, [write("Pinned New", "p", "s", pin=True)],
    {"MEMORY.md": HEAD + "\n" + entry("Pinned New", "pinned-new.md", "s", pin=True), "pinned-new.md": fm("Pinned New", "s", "\np\n")})
add("pins/pin-then-remove-refused-then-unpin-remove", ["SS-PIN-1", "SS-REMOVE-2", "SS-TOMB-1", "PEER-13", "PEER-14"],
    "A pinned entry resists removal until it is unpinned; the file stays and is tombstoned.",
    {"MEMORY.md": PIN_BASE, "redis-commands.md": "r\n"},
    [op("pin_memory", "ok", topic="Redis", pin=True), op("remove_memory", "refused", topic="Redis"),
     op("pin_memory", "ok", topic="Redis", pin=False), op("remove_memory", "ok", topic="Redis")],
    {"MEMORY.md": EMPTIED, "redis-commands.md": "r\n", ".ocl-removed": "redis-commands.md\n"})
add("pins/foreign-pinned-duplicate-keeps-one-pinned-line", ["SS-IDX-4", "SS-IDX-5", "S-IDX-4", "PEER-11"],
    "Two lines for one file, the newer pinned: maintenance keeps one line, and it is pinned.",
    {"MEMORY.md": HEAD + entry("Dup", "dup.md", "older", "2026-08-01") + "\n" + entry("Dup", "dup.md", "newer", "2026-08-02", pin=True)
     + "\n" + entry("Other", "other.md", "o", "2026-08-01"), "dup.md": "d\n", "other.md": "o\n"},
    [op("pin_memory", "ok", topic="Other", pin=True)],
    {"MEMORY.md": HEAD + entry("Dup", "dup.md", "newer", "2026-08-02", pin=True) + "\n" + entry("Other", "other.md", "o", "2026-08-01", pin=True),
     "dup.md": "d\n", "other.md": "o\n"})

# ---------------------------------------------------------------- removal and tombstones
for case, (listed, after) in {
    "creates-list": (None, "gone.md\n"),
    "appends-to-list": ("a.md\nb.md\n", "a.md\nb.md\ngone.md\n"),
    "keeps-existing-name-once": ("gone.md\n", "gone.md\n"),
}.items():
    store = {"MEMORY.md": HEAD + entry("Gone", "gone.md", "g", "2026-08-01") + "\n" + entry("Stay", "stay.md", "s", "2026-08-01"),
             "gone.md": "g\n", "stay.md": "s\n"}
    if listed is not None:
        store[".ocl-removed"] = listed
    add(f"tombstones/remove-{case}", ["SS-TOMB-1", "SS-TOMB-3", "SS-REMOVE-1", "S-REMOVE-4", "S-TOMB-3", "S-FMT-14", "PEER-6"],
        "A removal drops the entry, keeps the file, and records the filename in `.ocl-removed`.",
        store, [op("remove_memory", "ok", topic="Gone")],
        {"MEMORY.md": HEAD + entry("Stay", "stay.md", "s", "2026-08-01"), "gone.md": "g\n", "stay.md": "s\n", ".ocl-removed": after})
for case, (listed, after) in {"only-name": ("back.md\n", ""), "first-of-two": ("back.md\nz.md\n", "z.md\n"),
                              "last-of-two": ("z.md\nback.md\n", "z.md\n")}.items():
    add(f"tombstones/write-clears-{case}", ["SS-TOMB-2", "S-WRITE-12", "S-TOMB-4", "S-INV-7", "PEER-6"],
        "Writing a tombstoned topic again clears its name from the removal list (an empty list stays as a file).",
        {"MEMORY.md": HEAD, "back.md": fm("Back", "old", "\nold\n", "2026-08-01T00:00:00+00:00", "2026-08-01T00:00:00+00:00"),
         ".ocl-removed": listed},
        [write("Back", "new", "again", mode="replace")],
        {"MEMORY.md": HEAD + "\n" + entry("Back", "back.md", "again"), ".ocl-removed": after,
         "back.md": fm("Back", "again", "\nnew\n", created="2026-08-01T00:00:00+00:00")})
add("tombstones/write-other-topic-keeps-list", ["SS-TOMB-2", "SS-TOMB-3", "S-TOMB-4"],
    "Writing an unrelated topic leaves the removal list byte-identical.",
    {"MEMORY.md": HEAD, ".ocl-removed": "old.md\n", "old.md": "o\n"}, [write("New", "n", "s")],
    {"MEMORY.md": HEAD + "\n" + entry("New", "new.md", "s"), ".ocl-removed": "old.md\n", "old.md": "o\n", "new.md": fm("New", "s", "\nn\n")})
add("tombstones/pin-never-touches-list", ["SS-PIN-2", "S-PIN-5"],
    "pin_memory leaves `.ocl-removed` and the topic files alone.",
    {"MEMORY.md": PIN_BASE, "redis-commands.md": "r\n", ".ocl-removed": "x.md\n"}, [op("pin_memory", "ok", topic="Redis", pin=True)],
    {"MEMORY.md": HEAD + entry("Redis Commands", "redis-commands.md", "cmds", "2026-08-01T00:00:00+00:00", pin=True),
     "redis-commands.md": "r\n", ".ocl-removed": "x.md\n"})
add("tombstones/refused-remove-records-nothing", ["SS-TOMB-1", "SS-REMOVE-2", "S-REMOVE-3"],
    "A refused removal (pinned) records no tombstone.",
    {"MEMORY.md": HEAD + entry("P", "p.md", "p", "2026-08-01", pin=True), "p.md": "p\n"}, [op("remove_memory", "refused", topic="P")],
    {"MEMORY.md": HEAD + entry("P", "p.md", "p", "2026-08-01", pin=True), "p.md": "p\n"})
add("tombstones/remove-write-remove-cycle", ["SS-TOMB-1", "SS-TOMB-2", "S-INV-7"],
    "remove → write → remove leaves the name listed once, the entry gone, the file kept.",
    {"MEMORY.md": HEAD + entry("Cycle", "cycle.md", "c", "2026-08-01"),
     "cycle.md": fm("Cycle", "c", "\nc\n", "2026-08-01T00:00:00+00:00", "2026-08-01T00:00:00+00:00")},
    [op("remove_memory", "ok", topic="Cycle"), write("Cycle", "c2", "c2", mode="replace"), op("remove_memory", "ok", topic="Cycle")],
    {"MEMORY.md": EMPTIED, ".ocl-removed": "cycle.md\n",
     "cycle.md": fm("Cycle", "c2", "\nc2\n", created="2026-08-01T00:00:00+00:00")})
for n in (2, 3, 4):
    names = [f"t{i}" for i in range(1, n + 1)]
    idx = HEAD + "\n".join(entry(t.upper(), f"{t}.md", t, "2026-08-01") for t in names)
    add(f"tombstones/remove-{n}-in-order", ["SS-TOMB-1", "SS-TOMB-3", "S-TOMB-3", "S-FMT-14"],
        "Successive removals list the filenames in removal order, one per line, with a final LF.",
        {"MEMORY.md": idx, **{f"{t}.md": t + "\n" for t in names}},
        [op("remove_memory", "ok", topic=t.upper()) for t in reversed(names)],
        {"MEMORY.md": HEAD.rstrip("\n") + "\n", **{f"{t}.md": t + "\n" for t in names},
         ".ocl-removed": "".join(f"{t}.md\n" for t in reversed(names))})

# ---------------------------------------------------------------- maintenance: orphans, duplicates, stale
add("maintenance/orphan-entry-dropped", ["SS-IDX-5", "S-IDX-4", "S-IDX-5", "S-INV-2"],
    "An entry whose file is missing is dropped by the next mutation; other lines stay.",
    {"MEMORY.md": HEAD + entry("Gone", "gone.md", "g", "2026-08-01") + "\n" + entry("Here", "here.md", "h", "2026-08-01"), "here.md": "h\n"},
    [op("pin_memory", "ok", topic="Here", pin=True)],
    {"MEMORY.md": HEAD + entry("Here", "here.md", "h", "2026-08-01", pin=True), "here.md": "h\n"})
add("maintenance/older-duplicate-dropped", ["SS-IDX-5", "S-IDX-4"],
    "Of two lines for one file the one with the later stamp survives.",
    {"MEMORY.md": HEAD + entry("Dup v1", "dup.md", "older", "2025-01-01") + "\n" + entry("Dup v2", "dup.md", "newer", "2026-08-01")
     + "\n" + entry("O", "o.md", "o", "2026-08-01"), "dup.md": "d\n", "o.md": "o\n"},
    [op("pin_memory", "ok", topic="O", pin=True)],
    {"MEMORY.md": HEAD + entry("Dup v2", "dup.md", "newer", "2026-08-01") + "\n" + entry("O", "o.md", "o", "2026-08-01", pin=True),
     "dup.md": "d\n", "o.md": "o\n"})
add("maintenance/old-entry-flagged-stale", ["SS-IDX-6", "S-IDX-6", "PEER-11"],
    "An unpinned entry older than 180 days is flagged `[stale?]` by the next mutation (flag position free).",
    {"MEMORY.md": HEAD + entry("Old", "old.md", "aged", "2020-01-01") + "\n" + entry("O", "o.md", "o", "2026-08-01"), "old.md": "x\n", "o.md": "o\n"},
    [op("pin_memory", "ok", topic="O", pin=True)],
    {"MEMORY.md": HEAD + "- [Old](old.md) 2020-01-01 [stale?] -- aged\n" + entry("O", "o.md", "o", "2026-08-01", pin=True),
     "old.md": "x\n", "o.md": "o\n"})
add("maintenance/fresh-entry-loses-stale-flag", ["SS-IDX-6", "S-IDX-6", "PEER-11"],
    "A recent entry carrying `[stale?]` loses it at the next mutation.",
    {"MEMORY.md": HEAD + "- [Young](young.md) 2026-08-01 [stale?] -- fresh\n" + entry("O", "o.md", "o", "2026-08-01"),
     "young.md": "y\n", "o.md": "o\n"},
    [op("pin_memory", "ok", topic="O", pin=True)],
    {"MEMORY.md": HEAD + entry("Young", "young.md", "fresh", "2026-08-01") + "\n" + entry("O", "o.md", "o", "2026-08-01", pin=True),
     "young.md": "y\n", "o.md": "o\n"})
add("maintenance/pinned-old-entry-not-flagged", ["SS-IDX-6", "SS-IDX-4", "S-IDX-6"],
    "A pinned entry is never newly flagged stale, however old.",
    {"MEMORY.md": HEAD + entry("Keep", "keep.md", "old pin", "2020-01-01", pin=True) + "\n" + entry("O", "o.md", "o", "2026-08-01"),
     "keep.md": "k\n", "o.md": "o\n"},
    [op("pin_memory", "ok", topic="O", pin=True)],
    {"MEMORY.md": HEAD + entry("Keep", "keep.md", "old pin", "2020-01-01", pin=True) + "\n" + entry("O", "o.md", "o", "2026-08-01", pin=True),
     "keep.md": "k\n", "o.md": "o\n"})
add("maintenance/pinned-stale-entry-keeps-both-flags", ["SS-IDX-6", "SS-IDX-4", "S-IDX-6", "PEER-11"],
    "A pinned entry that already carries `[stale?]` keeps both flags (S-IDX-6: pinned REST unchanged).",
    {"MEMORY.md": HEAD + "- [Keep](keep.md) [pin] 2020-01-01 [stale?] -- both\n" + entry("O", "o.md", "o", "2026-08-01"),
     "keep.md": "k\n", "o.md": "o\n"},
    [op("pin_memory", "ok", topic="O", pin=True)],
    {"MEMORY.md": HEAD + "- [Keep](keep.md) [pin] 2020-01-01 [stale?] -- both\n" + entry("O", "o.md", "o", "2026-08-01", pin=True),
     "keep.md": "k\n", "o.md": "o\n"})
add("maintenance/unsafe-entry-like-line-kept", ["SS-NAME-1", "SS-IDX-2", "S-IDX-1"],
    "An entry-like line naming an unsafe file is ordinary text: kept verbatim, never opened.",
    {"MEMORY.md": HEAD + "- [Up](../up.md) 2026-08-01 -- escape\n" + entry("O", "o.md", "o", "2026-08-01"), "o.md": "o\n"},
    [op("pin_memory", "ok", topic="O", pin=True)],
    {"MEMORY.md": HEAD + "- [Up](../up.md) 2026-08-01 -- escape\n" + entry("O", "o.md", "o", "2026-08-01", pin=True), "o.md": "o\n"})

# ---------------------------------------------------------------- locks
LOCK_IDX = HEAD + entry("A", "a.md", "a", "2026-08-01")
for opname, args in {"write": ("write_memory", {"topic": "A", "content": "x", "summary": "s", "mode": "replace"}),
                     "remove": ("remove_memory", {"topic": "A"}), "pin": ("pin_memory", {"topic": "A", "pin": True})}.items():
    name, a = args
    for case, lock in {"live-owner": {"pid": "self"}, "dead-owner-young": {"pid": "dead", "age_seconds": 2},
                       "garbage-young": {"content": "not a token", "age_seconds": 5}}.items():
        add(f"locks/{opname}-busy-{case}", ["SS-LOCK-2", "SS-LOCK-3", "SS-LOCK-5", "S-LOCK-7", "S-LOCK-8", "PEER-2", "PEER-18"],
            "A lock that is not stale makes the op answer busy within the shared window and change nothing.",
            {"MEMORY.md": LOCK_IDX, "a.md": "a\n"},
            [{"op": "plant_lock", "args": {"dir": D.rstrip("/"), **lock}},
             {"op": name, "args": a, "expect": {"outcome": "busy", **BUSY_TIMES}}],
            {"MEMORY.md": LOCK_IDX, "a.md": "a\n"}, present=(".lock",), clock={"mode": "offset"})
        del SCENARIOS[-1]["then"]["invariants"]  # the planted lock stays: it is not the op's
    for case, lock in {"dead-owner-old": {"pid": "dead", "age_seconds": 30},
                       "garbage-very-old": {"content": "not a token", "age_seconds": 90}}.items():
        after = {"write": (HEAD + entry("A", "a.md", "s", "${TS}"), {"a.md": fm("A", "s", "\nx\n", "${TS}", "${TS}")}),
                 "remove": (EMPTIED, {".ocl-removed": "a.md\n"}),
                 "pin": (HEAD + entry("A", "a.md", "a", "2026-08-01", pin=True), {})}[opname]
        files = {"a.md": "a\n", **after[1]}
        add(f"locks/{opname}-reclaims-{case}", ["SS-LOCK-3", "SS-LOCK-4", "S-LOCK-2", "S-LOCK-3", "PEER-3"],
            "A stale lock (dead owner past 10 s, or unreadable past 60 s) is reclaimed, the op succeeds, no lock stays.",
            {"MEMORY.md": LOCK_IDX, "a.md": "a\n"},
            [{"op": "plant_lock", "args": {"dir": D.rstrip("/"), **lock}}, op(name, "ok", **a)],
            {"MEMORY.md": after[0], **files}, clock={"mode": "offset"})
add("locks/token-shape-of-a-held-lock", ["SS-LOCK-1", "S-FMT-13", "PEER-3"],
    "The lock file left by a co-writer names its pid first (`pid\\tms\\trand`); a foreign lock is left as it was.",
    {"MEMORY.md": LOCK_IDX, "a.md": "a\n"},
    [{"op": "plant_lock", "args": {"dir": D.rstrip("/"), "content": "999999999\t1786064570000\tforeign", "age_seconds": 1}},
     {"op": "write_memory", "args": {"topic": "B", "content": "b", "summary": "b"}, "expect": {"outcome": "busy", **BUSY_TIMES}}],
    {"MEMORY.md": LOCK_IDX, "a.md": "a\n", ".lock": "999999999\t1786064570000\tforeign"}, clock={"mode": "offset"})
del SCENARIOS[-1]["then"]["invariants"]
for opname, step in {"write": write("N", "n", "n"), "remove": op("remove_memory", "ok", topic="A"),
                     "pin": op("pin_memory", "ok", topic="A", pin=True)}.items():
    after = {"write": (LOCK_IDX + "\n" + entry("N", "n.md", "n"), {"n.md": fm("N", "n", "\nn\n")}),
             "remove": (EMPTIED, {".ocl-removed": "a.md\n"}),
             "pin": (HEAD + entry("A", "a.md", "a", "2026-08-01", pin=True), {})}[opname]
    add(f"locks/{opname}-releases-its-lock", ["SS-LOCK-4", "SS-IO-1", "S-LOCK-5", "S-INV-2"],
        "After a successful op its lock is gone and no temporary remains.",
        {"MEMORY.md": LOCK_IDX, "a.md": "a\n"}, [step], {"MEMORY.md": after[0], "a.md": "a\n", **after[1]})

# ---------------------------------------------------------------- unsafe store files
add("io/symlinked-index-refused", ["SS-IO-2", "S-IO-2", "S-WRITE-5", "PEER-4"],
    "A symlinked index is refused (an error) and neither the link nor its target changes.",
    {"real.txt": HEAD}, [write("T", "t", "t", "error")], {"real.txt": HEAD},
    present=("MEMORY.md",))
SCENARIOS[-1]["given"]["symlinks"] = {D + "MEMORY.md": "real.txt"}
add("io/index-directory-refused", ["SS-IO-2", "S-IO-2", "S-WRITE-5"],
    "An index that is a directory makes a write fail without writing a topic.",
    {"MEMORY.md/keep": "k\n"}, [write("T", "t", "t", "error")], {"MEMORY.md/keep": "k\n"}, present=("MEMORY.md",))
add("io/topic-directory-not-written-into", ["SS-IO-2", "S-WRITE-8", "PEER-12"],
    "A topic filename taken by a directory is never written into: refused, or (PEER-12) another name.",
    {"MEMORY.md": HEAD, "dir.md/x": "x\n"}, [write("Dir", "d", "d", ["refused", "ok"])], {"dir.md/x": "x\n"},
    present=("dir.md",), ignore=[{"path": D + "*", "reason": "refusing or choosing another name are both safe; the store check is dir.md's content"}])
del SCENARIOS[-1]["then"]["no_other_files"]
for target in ("MEMORY.md", "a.md", ".ocl-removed"):
    add(f"io/mode-0600-{target.strip('.').replace('.', '-').lower()}", ["SS-IO-1", "S-IO-6", "PEER-18"],
        "Every file a co-writer writes atomically ends with mode 0600.",
        {"MEMORY.md": HEAD + entry("A", "a.md", "a", "2026-08-01"), "a.md": "a\n"},
        [write("A", "b", "b", mode="replace"), op("remove_memory", "ok", topic="A")],
        {"MEMORY.md": EMPTIED, ".ocl-removed": "a.md\n", "a.md": fm("A", "b", "\nb\n")})
    SCENARIOS[-1]["then"]["modes"] = {D + target: "0600"}
add("io/dangling-symlink-index-rolled-back", ["SS-IO-2", "SS-WRITE-3", "S-WRITE-5", "S-WRITE-13", "PEER-18"],
    "A dangling-symlink index fails the write; the new topic is rolled back (no topic file remains).",
    {}, [write("T", "t", "t", "error")], {}, present=("MEMORY.md",))
SCENARIOS[-1]["given"]["symlinks"] = {D + "MEMORY.md": "nowhere.md"}

# ---------------------------------------------------------------- repair (an optional op)
add("repair/untombstoned-orphan-reindexed-tombstoned-skipped", ["SS-TOMB-4", "PEER-16", "S-TOMB-5"],
    "repair_memory (a tool that offers it) indexes an unindexed safe file but never a tombstoned one.",
    {"MEMORY.md": HEAD + entry("A", "a.md", "a", "2026-08-01"), "a.md": "a\n",
     "lost.md": "---\nname: \"Lost\"\ndescription: \"found again\"\n---\nx\n", "gone.md": "g\n", ".ocl-removed": "gone.md\n"},
    [op("repair_memory", "ok")],
    {"MEMORY.md": HEAD + entry("A", "a.md", "a", "2026-08-01") + "\n- [Lost](lost.md) ${TS} [stale?] -- found again\n",
     "a.md": "a\n", "lost.md": "---\nname: \"Lost\"\ndescription: \"found again\"\n---\nx\n", "gone.md": "g\n", ".ocl-removed": "gone.md\n"})
add("repair/consistent-index-unchanged", ["SS-TOMB-4", "PEER-16"],
    "repair_memory on a consistent index changes nothing.",
    {"MEMORY.md": HEAD + entry("A", "a.md", "a", "2026-08-01"), "a.md": "a\n"}, [op("repair_memory", "ok")],
    {"MEMORY.md": HEAD + entry("A", "a.md", "a", "2026-08-01"), "a.md": "a\n"})

# ---------------------------------------------------------------- sequences within one tool
add("sequences/write-pin-append-keeps-pin", ["SS-IDX-4", "SS-WRITE-1", "S-WRITE-15"],
    "write → pin → append: one entry, still pinned, both body parts kept.",
    {"MEMORY.md": HEAD}, [write("Seq", "one", "s1"), op("pin_memory", "ok", topic="Seq", pin=True), write("Seq", "two", "s2")],
    {"MEMORY.md": HEAD + "\n" + entry("Seq", "seq.md", "s2", pin=True), "seq.md": fm("Seq", "s2", "\none\n\n## ${STAMP}\n\ntwo\n")})
add("sequences/two-topics-one-entry-each", ["SS-IDX-5", "SS-WRITE-1", "S-INV-2"],
    "Two topics written twice each: exactly one entry per filename, in first-write order.",
    {"MEMORY.md": HEAD}, [write("One", "a", "1"), write("Two", "b", "2"), write("One", "c", "1b", mode="replace"),
                          write("Two", "d", "2b", mode="replace")],
    {"MEMORY.md": HEAD + "\n" + entry("One", "one.md", "1b") + "\n" + entry("Two", "two.md", "2b"),
     "one.md": fm("One", "1b", "\nc\n"), "two.md": fm("Two", "2b", "\nd\n")})
add("sequences/remove-then-rewrite-reindexes", ["SS-TOMB-2", "SS-REMOVE-1", "SS-WRITE-1"],
    "remove then write the same topic: a fresh entry, the tombstone cleared, the file updated in place.",
    {"MEMORY.md": HEAD + entry("Back", "back.md", "v1", "2026-08-01"),
     "back.md": fm("Back", "v1", "\nold\n", "2026-08-01T00:00:00+00:00", "2026-08-01T00:00:00+00:00")},
    [op("remove_memory", "ok", topic="Back"), write("Back", "new", "v2", mode="replace")],
    {"MEMORY.md": HEAD + entry("Back", "back.md", "v2"), ".ocl-removed": "",
     "back.md": fm("Back", "v2", "\nnew\n", created="2026-08-01T00:00:00+00:00")})
add("sequences/summary-folded-to-one-line", ["SS-IDX-1", "S-WRITE-2", "PEER-10"],
    "A multi-line summary becomes one index line (no forged entry).",
    {"MEMORY.md": HEAD}, [write("Fold", "x", "first line\nsecond line\n  third")],
    {"MEMORY.md": HEAD + "\n" + entry("Fold", "fold.md", "first line second line third"),
     "fold.md": fm("Fold", "first line second line third", "\nx\n")})
add("sequences/long-summary-capped-500", ["SS-IDX-1", "S-WRITE-2"],
    "A summary is cut to 500 code units in the index and the frontmatter.",
    {"MEMORY.md": HEAD}, [write("Long", "x", "a" * 600)],
    {"MEMORY.md": HEAD + "\n" + entry("Long", "long.md", "a" * 500), "long.md": fm("Long", "a" * 500, "\nx\n")})


# ---------------------------------------------------------------- carry-over between tools (issue 25 item 2)
# Each co-writer carries its own local store over on its first op with the shared store on: openpi
# (and the reference) from ``agent/memory/``, OpenCode from ``$XDG_CONFIG_HOME/opencode/memory/``
# (PEER-1).  Both locals are seeded alike, so whichever tool runs reads its own.  ``${CARRY}`` is
# the running tool's suffix tag (``opim`` openpi and the reference, ``oclm`` OpenCode, PEER-7);
# its sentinel and local lock live in its own local directory, outside the contract.
LOCALS = ("agent/memory/", "home/.config/opencode/memory/")
OLD = "2026-08-01T00:00:00+00:00"
SENTINELS = tuple(loc + ".shared-dir-migrated" for loc in LOCALS)
OWN_FILES = [{"path": loc + ".*", "reason": "each tool's own carry-over sentinel (S-FMT-15, PEER-1, PEER-7)"} for loc in LOCALS]
FRESH = write("Fresh", "fresh", "fresh")
FRESH_LINE = entry("Fresh", "fresh.md", "fresh")
FRESH_FILE = fm("Fresh", "fresh", "\nfresh\n")


def carry(sid: str, clauses: list[str], description: str, local: dict[str, str], store: dict[str, str],
          steps: list[dict[str, Any]], then: dict[str, str], *, done: bool = True, absent: tuple[str, ...] = (),
          present: tuple[str, ...] = (), clock: dict[str, str] | None = None, outside: dict[str, str] | None = None) -> None:
    """A carry-over scenario: ``local`` seeds both tools' local stores, which must stay as they were."""
    extra = {loc + k: v for loc in LOCALS for k, v in local.items()}
    extra.update(outside or {})
    add(f"carry-over/{sid}", clauses, description, store, steps, then, present=present, clock=clock, extra_given=extra,
        ignore=OWN_FILES if done else None)
    t = SCENARIOS[-1]["then"]
    t["unchanged"] = sorted(extra)  # S-MIGRATE-5: the local stores (and any outside file) untouched
    if absent:
        t["absent"] = [D + a for a in absent]
    if not done:
        t["absent"] = t.get("absent", []) + list(SENTINELS)


DOCKER_LOCAL = fm("Docker Setup", "local", "\nlocal bytes\n", OLD, OLD)
DOCKER_SHARED = fm("Docker", "foreign", "\nforeign bytes\n", OLD, OLD)
LOCAL_IDX = HEAD + entry("Docker Setup", "docker-setup.md", "local", OLD) + "\n"
SHARED_IDX = HEAD + entry("Docker", "docker-setup.md", "foreign", OLD) + "\n"
CARRIED = entry("Docker Setup", "docker-setup-${CARRY}.md", "local", OLD)
carry("differing-collision-gets-suffixed-copy", ["SS-CARRY-1", "SS-CARRY-2", "SS-CARRY-5", "SS-NAME-2", "S-MIGRATE-4", "PEER-7"],
      "A local topic whose filename the shared store holds with different content is published under the tool's "
      "suffix (`-opim` / `-oclm`), the foreign file untouched; the tool's first op runs after the merge.",
      {"MEMORY.md": LOCAL_IDX, "docker-setup.md": DOCKER_LOCAL},
      {"MEMORY.md": SHARED_IDX, "docker-setup.md": DOCKER_SHARED}, [FRESH],
      {"MEMORY.md": SHARED_IDX + CARRIED + "\n\n" + FRESH_LINE, "docker-setup.md": DOCKER_SHARED,
       "docker-setup-${CARRY}.md": DOCKER_LOCAL, "fresh.md": FRESH_FILE})
carry("identical-unindexed-copy-indexed-once", ["SS-CARRY-2", "S-MIGRATE-4", "PEER-7"],
      "An identical unindexed shared copy is reused: one index line, no suffixed file.",
      {"MEMORY.md": LOCAL_IDX, "docker-setup.md": DOCKER_LOCAL},
      {"MEMORY.md": HEAD, "docker-setup.md": DOCKER_LOCAL}, [FRESH],
      {"MEMORY.md": HEAD.rstrip("\n") + "\n" + entry("Docker Setup", "docker-setup.md", "local", OLD) + "\n\n" + FRESH_LINE,
       "docker-setup.md": DOCKER_LOCAL, "fresh.md": FRESH_FILE})
carry("identical-indexed-copy-adds-nothing", ["SS-CARRY-2", "S-MIGRATE-3", "S-MIGRATE-4"],
      "An identical shared copy that is already indexed adds neither a file nor a line.",
      {"MEMORY.md": LOCAL_IDX, "docker-setup.md": DOCKER_LOCAL},
      {"MEMORY.md": LOCAL_IDX, "docker-setup.md": DOCKER_LOCAL}, [FRESH],
      {"MEMORY.md": LOCAL_IDX + "\n" + FRESH_LINE, "docker-setup.md": DOCKER_LOCAL, "fresh.md": FRESH_FILE})
BOTH_TAGS = {"docker-setup-opim.md": fm("Docker Setup", "pi copy", "\npi bytes\n", OLD, OLD),
             "docker-setup-oclm.md": fm("Docker Setup", "oc copy", "\noc bytes\n", OLD, OLD)}
BOTH_IDX = (SHARED_IDX + entry("Docker Setup", "docker-setup-opim.md", "pi copy", OLD) + "\n"
            + entry("Docker Setup", "docker-setup-oclm.md", "oc copy", OLD) + "\n")
carry("own-suffix-taken-gets-numbered-copy", ["SS-CARRY-2", "SS-CARRY-5", "S-MIGRATE-4", "PEER-7"],
      "With both tools' suffixed copies already published (different content), the local copy gets the next "
      "number of its own suffix (`-opim-2` / `-oclm-2`); the other tool's copy is never taken over.",
      {"MEMORY.md": LOCAL_IDX, "docker-setup.md": DOCKER_LOCAL},
      {"MEMORY.md": BOTH_IDX, "docker-setup.md": DOCKER_SHARED, **BOTH_TAGS}, [FRESH],
      {"MEMORY.md": BOTH_IDX + entry("Docker Setup", "docker-setup-${CARRY}-2.md", "local", OLD) + "\n\n" + FRESH_LINE,
       "docker-setup.md": DOCKER_SHARED, **BOTH_TAGS, "docker-setup-${CARRY}-2.md": DOCKER_LOCAL, "fresh.md": FRESH_FILE})
carry("own-suffixed-identical-copy-reused", ["SS-CARRY-2", "S-MIGRATE-4", "PEER-7"],
      "An earlier, unindexed suffixed copy with the local bytes is reused: one line, no second copy.",
      {"MEMORY.md": LOCAL_IDX, "docker-setup.md": DOCKER_LOCAL},
      {"MEMORY.md": SHARED_IDX, "docker-setup.md": DOCKER_SHARED, "docker-setup-${CARRY}.md": DOCKER_LOCAL}, [FRESH],
      {"MEMORY.md": SHARED_IDX + CARRIED + "\n\n" + FRESH_LINE, "docker-setup.md": DOCKER_SHARED,
       "docker-setup-${CARRY}.md": DOCKER_LOCAL, "fresh.md": FRESH_FILE})
GONE_LOCAL = fm("Gone", "removed", "\nstill local\n", OLD, OLD)
GONE_IDX = HEAD + entry("Gone", "gone.md", "removed", OLD) + "\n"
for case, (shared_files, why) in {
    "file-kept": ({"gone.md": GONE_LOCAL}, "the shared file the removal kept"),
    "file-absent": ({}, "no shared file at all"),
    "file-differs": ({"gone.md": fm("Gone", "shared", "\nshared bytes\n", OLD, OLD)}, "a different shared file"),
}.items():
    carry(f"tombstoned-topic-not-carried-back-{case}", ["SS-CARRY-3", "SS-TOMB-4", "S-MIGRATE-3", "S-TOMB-2", "PEER-6"],
          f"A topic removed from the shared store (listed in `.ocl-removed`, {why}) that the local index still "
          "holds does not come back through carry-over: no line, no copy, the list kept.",
          {"MEMORY.md": GONE_IDX, "gone.md": GONE_LOCAL},
          {"MEMORY.md": HEAD, ".ocl-removed": "gone.md\n", **shared_files}, [FRESH],
          {"MEMORY.md": HEAD + "\n" + FRESH_LINE, ".ocl-removed": "gone.md\n", **shared_files, "fresh.md": FRESH_FILE})
carry("tombstoned-suffixed-destination-skipped", ["SS-CARRY-3", "S-MIGRATE-3", "S-MIGRATE-4", "PEER-7"],
      "A colliding local topic whose suffixed destination was removed from the shared store is not published again.",
      {"MEMORY.md": LOCAL_IDX, "docker-setup.md": DOCKER_LOCAL},
      {"MEMORY.md": SHARED_IDX, "docker-setup.md": DOCKER_SHARED, ".ocl-removed": "docker-setup-${CARRY}.md\n"}, [FRESH],
      {"MEMORY.md": SHARED_IDX + "\n" + FRESH_LINE, "docker-setup.md": DOCKER_SHARED, ".ocl-removed": "docker-setup-${CARRY}.md\n",
       "fresh.md": FRESH_FILE})
LIVE = {"op": "plant_lock", "args": {"dir": D.rstrip("/"), "pid": "self"}}
carry("deferred-while-co-writer-holds-shared-lock", ["SS-CARRY-4", "SS-LOCK-2", "S-MIGRATE-2", "S-MIGRATE-6", "PEER-7"],
      "A live co-writer holds the shared lock while the tool switches the shared store on: carry-over defers "
      "(no shared change, no sentinel), the op answers busy, the foreign lock stays.",
      {"MEMORY.md": LOCAL_IDX, "docker-setup.md": DOCKER_LOCAL},
      {"MEMORY.md": SHARED_IDX, "docker-setup.md": DOCKER_SHARED},
      [LIVE, {**FRESH, "expect": {"outcome": "busy", **BUSY_TIMES}}],
      {"MEMORY.md": SHARED_IDX, "docker-setup.md": DOCKER_SHARED}, done=False, present=(".lock",), clock={"mode": "offset"})
del SCENARIOS[-1]["then"]["invariants"]  # the planted lock stays: it is not the op's
carry("deferred-then-completed-after-release", ["SS-CARRY-4", "SS-CARRY-2", "S-MIGRATE-2", "S-MIGRATE-6", "PEER-7"],
      "Carry-over deferred by a co-writer's lock completes on the first op after the lock is gone.",
      {"MEMORY.md": LOCAL_IDX, "docker-setup.md": DOCKER_LOCAL},
      {"MEMORY.md": SHARED_IDX, "docker-setup.md": DOCKER_SHARED},
      [LIVE, {**FRESH, "expect": {"outcome": "busy", **BUSY_TIMES}},
       {"op": "delete_file", "args": {"path": D + ".lock"}}, write("Later", "later", "later")],
      {"MEMORY.md": SHARED_IDX + CARRIED + "\n\n" + entry("Later", "later.md", "later", "${TS}"), "docker-setup.md": DOCKER_SHARED,
       "docker-setup-${CARRY}.md": DOCKER_LOCAL, "later.md": fm("Later", "later", "\nlater\n", "${TS}", "${TS}")}, clock={"mode": "offset"})
SECRET = "OUTSIDE-SECRET-7f3a: never in the store\n"
UP_IDX = HEAD + "- [Up](../up.md) " + OLD + " -- escape\n" + entry("Docker Setup", "docker-setup.md", "local", OLD) + "\n"
carry("parent-entry-never-followed", ["SS-CARRY-5", "SS-NAME-1", "S-MIGRATE-3", "S-MIGRATE-5", "S-FMT-7"],
      "A local entry-like line naming `../up.md`, whose target outside the local store exists with recognisable "
      "content, is not carried: the outside file is never read, copied, indexed or changed.",
      {"MEMORY.md": UP_IDX, "docker-setup.md": DOCKER_LOCAL}, {"MEMORY.md": HEAD}, [FRESH],
      {"MEMORY.md": HEAD.rstrip("\n") + "\n" + entry("Docker Setup", "docker-setup.md", "local", OLD) + "\n\n" + FRESH_LINE,
       "docker-setup.md": DOCKER_LOCAL, "fresh.md": FRESH_FILE},
      outside={"agent/up.md": SECRET, "home/.config/opencode/up.md": SECRET})


# ---------------------------------------------------------------- reads never leave the store (issue 25 item 5)
# A symlinked index, topic or removal list whose target outside the store holds recognisable
# text, and an index line naming ``../up.md`` whose outside target exists: no reading op of any
# tool returns that text, no later write copies it in, and the outside file never changes.
OUTSIDE = "home/outside/"
LEAK = "OUTSIDE-SECRET-7f3a"
READS = {
    "read-index": ("read_index", {"maxLines": 300}), "index-entries": ("index_entries", {}),
    "get-memory-index": ("get_memory_index", {}), "search": ("search", {"query": LEAK}),
    "topic-content": ("topic_content", {"filename": "linked.md"}),
    "injection": ("system_transform", {}), "compaction-context": ("compacting_context", {}),
}
LINKED_IDX = HEAD + entry("Linked", "linked.md", "linked", OLD) + "\n" + entry("Kept", "kept.md", "kept", OLD)
KEPT = fm("Kept", "kept", "\nkept body\n", OLD, OLD)
OUTSIDE_INDEX = HEAD + entry("Secret", "kept.md", LEAK, OLD) + "\n"
OUTSIDE_TOPIC = fm("Linked", LEAK, f"\n{LEAK} body\n", OLD, OLD)


def never_read(step: dict[str, Any]) -> dict[str, Any]:
    return {**step, "expect": {"result_excludes": [LEAK]}}


for rname, (rop, rargs) in READS.items():
    add(f"reads/symlinked-index-not-followed-by-{rname}", ["SS-IO-3", "SS-IO-2", "S-IO-2", "S-IO-3", "PEER-4"],
        "An index that is a symlink to a file outside the store is never read: its text reaches no result, and a later "
        "write fails with the store and the outside file unchanged.",
        {"kept.md": KEPT}, [never_read({"op": rop, "args": rargs}), write("Fresh", "fresh", "fresh", "error")],
        {"kept.md": KEPT}, present=("MEMORY.md",), extra_given={OUTSIDE + "index.md": OUTSIDE_INDEX})
    SCENARIOS[-1]["given"]["symlinks"] = {D + "MEMORY.md": "${ROOT}/" + OUTSIDE + "index.md"}
    SCENARIOS[-1]["then"]["unchanged"] = [OUTSIDE + "index.md"]
    add(f"reads/symlinked-topic-not-followed-by-{rname}", ["SS-IO-3", "SS-IDX-5", "S-IO-1", "S-IO-3", "S-IDX-5", "PEER-4"],
        "An indexed topic that is a symlink to a file outside the store is never read: its text reaches no result; "
        "the next write drops the entry as naming no regular file and never copies the text in.",
        {"MEMORY.md": LINKED_IDX, "kept.md": KEPT}, [never_read({"op": rop, "args": rargs}), write("Fresh", "fresh", "fresh")],
        {"MEMORY.md": HEAD + entry("Kept", "kept.md", "kept", OLD) + "\n" + FRESH_LINE, "kept.md": KEPT, "fresh.md": FRESH_FILE},
        present=("linked.md",), extra_given={OUTSIDE + "topic.md": OUTSIDE_TOPIC})
    SCENARIOS[-1]["given"]["symlinks"] = {D + "linked.md": "${ROOT}/" + OUTSIDE + "topic.md"}
    SCENARIOS[-1]["then"]["unchanged"] = [OUTSIDE + "topic.md"]
# the write side of the symlinked-topic scenarios above on its own, judged from bytes: a co-writer
# with the five ops and no reader is judged on it too (issue 32 item 3)
add("io/symlinked-topic-never-read-by-a-write", ["SS-IO-3", "SS-IDX-5", "S-IO-1", "S-IO-3", "S-IDX-5", "PEER-4"],
    "The write side of the symlinked-topic scenarios under reads/, judged from the store's bytes alone so a co-writer "
    "with only the five co-writer ops is judged too (issue 32): an indexed topic that is a symlink to a file outside "
    "the store is never read by a write of another topic: the entry is dropped as naming no regular file, the outside "
    "text is never copied in, and the outside file and the link stay as they were.",
    {"MEMORY.md": LINKED_IDX, "kept.md": KEPT}, [write("Fresh", "fresh", "fresh")],
    {"MEMORY.md": HEAD + entry("Kept", "kept.md", "kept", OLD) + "\n" + FRESH_LINE, "kept.md": KEPT, "fresh.md": FRESH_FILE},
    present=("linked.md",), extra_given={OUTSIDE + "topic.md": OUTSIDE_TOPIC})
SCENARIOS[-1]["given"]["symlinks"] = {D + "linked.md": "${ROOT}/" + OUTSIDE + "topic.md"}
SCENARIOS[-1]["then"]["unchanged"] = [OUTSIDE + "topic.md"]
for oname, step in {"write": write("Fresh", "fresh", "fresh", ["error"]), "remove": op("remove_memory", ["error"], topic="Kept"),
                    "repair": op("repair_memory", ["error", "ok"])}.items():
    add(f"reads/symlinked-removal-list-not-followed-by-{oname}", ["SS-IO-3", "SS-IO-2", "SS-TOMB-4", "S-IO-2", "S-WRITE-12", "PEER-4", "PEER-6"],
        "A removal list that is a symlink to a file outside the store is never read nor written through: the op fails "
        "(or, repair, indexes nothing the outside list names) and the store and the outside file stay as they were.",
        {"MEMORY.md": HEAD + entry("Kept", "kept.md", "kept", OLD), "kept.md": KEPT, "lost.md": fm("Lost", LEAK, "\nlost\n", OLD, OLD)},
        [step], {"MEMORY.md": HEAD + entry("Kept", "kept.md", "kept", OLD), "kept.md": KEPT, "lost.md": fm("Lost", LEAK, "\nlost\n", OLD, OLD)},
        present=(".ocl-removed",), extra_given={OUTSIDE + "removed": "kept.md\n"})
    SCENARIOS[-1]["given"]["symlinks"] = {D + ".ocl-removed": "${ROOT}/" + OUTSIDE + "removed"}
    SCENARIOS[-1]["then"]["unchanged"] = [OUTSIDE + "removed"]
    if oname == "repair":  # repair may index lost.md (untombstoned here): the index is the tool's
        SCENARIOS[-1]["then"]["store"].pop(D + "MEMORY.md")
        SCENARIOS[-1]["then"]["ignore"] = [{"path": D + "MEMORY.md", "reason": "repair may index lost.md (PEER-16)"}]
        SCENARIOS[-1]["then"]["present"].append(D + "MEMORY.md")
UP = "- [Up](../up.md) " + OLD + " -- escape"
UP_IDX = HEAD + UP + "\n" + entry("Kept", "kept.md", "kept", OLD)
for oname, (step, after) in {
    "write": (write("Up", "mine", "mine"), {"MEMORY.md": UP_IDX + "\n" + entry("Up", "up.md", "mine"), "up.md": fm("Up", "mine", "\nmine\n")}),
    "pin": (op("pin_memory", "not-found", topic="Up", pin=True), {"MEMORY.md": UP_IDX}),
    "remove": (op("remove_memory", "not-found", topic="Up"), {"MEMORY.md": UP_IDX}),
    "repair": (op("repair_memory", "ok"), {"MEMORY.md": UP_IDX}),
    "search": (never_read({"op": "search", "args": {"query": LEAK}}), {"MEMORY.md": UP_IDX}),
    "topic-content": (never_read({"op": "topic_content", "args": {"filename": "../up.md"}}), {"MEMORY.md": UP_IDX}),
    "injection": (never_read({"op": "system_transform", "args": {}}), {"MEMORY.md": UP_IDX}),
}.items():
    add(f"reads/parent-entry-never-followed-by-{oname}", ["SS-NAME-1", "SS-IDX-2", "S-FMT-7", "S-IDX-1"],
        "An index line naming `../up.md`, whose target outside the store exists with recognisable text, is ordinary text: "
        "the outside file is never read, indexed or changed; a topic `Up` is a new file in the store.",
        {"MEMORY.md": UP_IDX, "kept.md": KEPT}, [step], {**after, "kept.md": KEPT}, extra_given={"home/.agents/up.md": SECRET})
    SCENARIOS[-1]["then"]["unchanged"] = ["home/.agents/up.md"]



# ---------------------------------------------------------------- what the contract answers (issue 30 item 5)
ELSEWHERE = "home/elsewhere/"
add("layout/shared-home-follows-the-home-variables", ["SS-LAYOUT-2", "SS-LAYOUT-1", "S-PATH-2", "PEER-1"],
    "With HOME and both tools' override variables moved to another directory, the shared store moves with them: the "
    "write lands in «that home»/.agents/memory/ and the store under the old home is untouched.",
    {"MEMORY.md": HEAD + entry("Decoy", "decoy.md", "decoy", OLD), "decoy.md": "decoy\n"}, [write("Moved", "m", "m")],
    {"MEMORY.md": HEAD + entry("Decoy", "decoy.md", "decoy", OLD), "decoy.md": "decoy\n"},
    extra_given={ELSEWHERE + ".agents/memory/MEMORY.md": HEAD})
SCENARIOS[-1]["env"] = {k: "${ROOT}/" + ELSEWHERE.rstrip("/") for k in ("HOME", "PI_SHARED_MEMORY_HOME", "OCL_SHARED_MEMORY_HOME")}
SCENARIOS[-1]["then"]["store"].update({ELSEWHERE + ".agents/memory/MEMORY.md": HEAD + "\n" + entry("Moved", "moved.md", "m"),
                                       ELSEWHERE + ".agents/memory/moved.md": fm("Moved", "m", "\nm\n")})
SCENARIOS[-1]["then"]["no_other_files"].append(ELSEWHERE + ".agents/memory")
for days, stamp, flagged in ((181, "2026-02-07", True), (180, "2026-02-08", False)):
    line = f"- [Aged](aged.md) {stamp}{' [stale?]' if flagged else ''} -- {days} days"
    add(f"maintenance/default-stale-after-{days}-days-{'flagged' if flagged else 'not-flagged'}",
        ["SS-IDX-7", "SS-IDX-6", "S-IDX-6", "S-CFG-1", "PEER-11"],
        f"No tool's configuration sets `stale_after_days`, so each uses 180: an entry {days} whole days old is "
        f"{'flagged' if flagged else 'not flagged'} (flagged only when older than 180 days).",
        {"MEMORY.md": HEAD + f"- [Aged](aged.md) {stamp} -- {days} days\n" + entry("O", "o.md", "o", "2026-08-01"),
         "aged.md": "a\n", "o.md": "o\n"},
        [op("pin_memory", "ok", topic="O", pin=True)],
        {"MEMORY.md": HEAD + line + "\n" + entry("O", "o.md", "o", "2026-08-01", pin=True), "aged.md": "a\n", "o.md": "o\n"})
DUP_NAMES = HEAD + entry("Dup", "foo.md", "first", OLD) + "\n" + entry("dup", "bar.md", "second", OLD)
FOO, BAR = fm("Dup", "first", "\nfoo body\n", OLD, OLD), fm("dup", "second", "\nbar body\n", OLD, OLD)
add("names/duplicate-name-write-updates-one-of-its-files", ["SS-WRITE-4", "SS-WRITE-1", "S-WRITE-6", "B-11", "PEER-12"],
    "Two entries carry the name `Dup` (case-insensitively): a write of `DUP` updates exactly one of their files and "
    "its line (openpi the last, OpenCode the first), adds no file and no line, and leaves the other as it was.",
    {"MEMORY.md": DUP_NAMES, "foo.md": FOO, "bar.md": BAR}, [write("DUP", "new", "v2", mode="replace")], {})
t_ = SCENARIOS[-1]["then"]
del t_["store"]
DUP_V2 = fm("DUP", "v2", "\nnew\n", OLD)
t_["matches"] = {  # the first line's file updated (OpenCode) or the last's (openpi, the reference)
    D + "MEMORY.md": "|".join(re.escape(s) for s in (
        HEAD + entry("DUP", "foo.md", "v2") + "\n" + entry("dup", "bar.md", "second", OLD),
        HEAD + entry("Dup", "foo.md", "first", OLD) + "\n" + entry("DUP", "bar.md", "v2"))),
    D + "foo.md": re.escape(FOO) + "|" + re.escape(DUP_V2),
    D + "bar.md": re.escape(BAR) + "|" + re.escape(DUP_V2),
}
t_["present"] = [D + "MEMORY.md", D + "foo.md", D + "bar.md"]
SUMMARY_PIN = entry("Flag", "flag.md", "use [pin] flag", OLD)
add("pins/pin-token-in-summary-either-reading", ["SS-IDX-8", "SS-TOMB-1", "S-IDX-2", "A-1", "PEER-13"],
    "An entry whose only `[pin]` is inside its summary: removing it is refused (openpi, the reference: a pin) or done "
    "(OpenCode: no pin). Either way the store agrees with the answer: refused changes nothing; done drops the line "
    "and lists the file.",
    {"MEMORY.md": HEAD + SUMMARY_PIN, "flag.md": "f\n"}, [op("remove_memory", ["refused", "ok"], topic="Flag")], {"flag.md": "f\n"})
t_ = SCENARIOS[-1]["then"]
t_["matches"] = {D + "MEMORY.md": "(" + re.escape(HEAD + SUMMARY_PIN) + "|" + re.escape(EMPTIED) + ")"}
t_["present"] = [D + "MEMORY.md"]
t_["ignore"] = [{"path": D + ".ocl-removed", "reason": "listed exactly when the tool removed (SS-TOMB-1; the invariants judge it)"}]
t_["no_other_files"] = []
t_["invariants"] = ["leftovers", "unique", "regular", "tombstones"]
PINNED_OLD = entry("Twice", "twice.md", "older, pinned", "2026-08-01", pin=True)
NEWER = entry("Twice", "twice.md", "newer", "2026-08-02")
add("pins/pinned-older-duplicate-either-kept-or-dropped", ["SS-IDX-4", "SS-IDX-5", "S-IDX-4", "PEER-11"],
    "Two lines for one file, the older pinned: maintenance keeps the newer line (SS-IDX-5); its pin is dropped "
    "(openpi, the reference) or moved onto it (OpenCode). Nothing else changes.",
    {"MEMORY.md": HEAD + PINNED_OLD + "\n" + NEWER + "\n" + entry("O", "o.md", "o", "2026-08-01"), "twice.md": "t\n", "o.md": "o\n"},
    [op("pin_memory", "ok", topic="O", pin=True)], {"twice.md": "t\n", "o.md": "o\n"})
t_ = SCENARIOS[-1]["then"]
t_["matches"] = {D + "MEMORY.md": re.escape(HEAD + "- [Twice](twice.md)") + r"( \[pin\])? "
                 + re.escape("2026-08-02 -- newer\n" + entry("O", "o.md", "o", "2026-08-01", pin=True))}
t_["present"] = [D + "MEMORY.md"]


# ---------------------------------------------------------------- SS-IO-2 for every written file (issue 30 item 6)
# A topic file, the removal list or the index is a symlink to a file outside the store holding
# recognisable text; every writing op meets it.  The verdict comes from bytes alone (no reader
# op): the outside file is unchanged, and the store is pinned whole, so the outside text in any
# store file is a difference.
IO_KEPT_IDX = HEAD + entry("Kept", "kept.md", "kept", OLD)
IO_WRITES = {
    "write-new": lambda t: write("Fresh", "fresh", "fresh", t),
    "write-append": lambda t: write("Kept", "more", "more", t),
    "write-replace": lambda t: write("Kept", "more", "more", t, mode="replace"),
    "remove": lambda t: op("remove_memory", t, topic="Kept"),
    "pin": lambda t: op("pin_memory", t, topic="Kept", pin=True),
    "repair": lambda t: op("repair_memory", t),
}
LINKED_TOPIC = fm("Kept", LEAK, f"\n{LEAK} body\n", OLD, OLD)
ANY_KIND = ["ok", "refused", "error", "not-found"]
OTHER = fm("Other", "other", "\nother body\n", OLD, OLD)
OTHER_IDX = HEAD + entry("Other", "other.md", "other", OLD)


def io_link(sid: str, clauses: list[str], description: str, store: dict[str, str], link: str, target: str,
            outside: str, step: dict[str, Any], then: dict[str, str], *, present: tuple[str, ...] = ()) -> None:
    """One SS-IO-2 scenario: ``link`` in the store points at ``target`` outside it."""
    add(f"io/{sid}", clauses, description, store, [step], then, present=(link, *present),
        extra_given={OUTSIDE + target: outside})
    SCENARIOS[-1]["given"]["symlinks"] = {D + link: "${ROOT}/" + OUTSIDE + target}
    SCENARIOS[-1]["then"]["unchanged"] = [OUTSIDE + target]
    SCENARIOS[-1]["then"]["excludes"] = {D.rstrip("/"): [LEAK]}


IO_INDEX_OUTSIDE = HEAD + entry("Kept", "kept.md", LEAK, OLD) + "\n"
for oname, make in IO_WRITES.items():
    # the index itself links outside: every op fails before anything is written (S-WRITE-5)
    io_link(f"symlinked-index-outside-{oname}", ["SS-IO-2", "SS-IO-3", "S-IO-2", "S-WRITE-5", "PEER-4"],
            f"An index that is a symlink to a file outside the store fails {oname} with the store and the outside "
            "file unchanged: nothing is written through the link, and no outside text reaches a store file.",
            {"kept.md": KEPT}, "MEMORY.md", "index.md", IO_INDEX_OUTSIDE, make(["error"]), {"kept.md": KEPT})
    # the removal list links outside
    rl_then = {"MEMORY.md": IO_KEPT_IDX, "kept.md": KEPT}
    rl_kind: list[str] = ["error"]
    if oname == "pin":  # pin never touches the list (SS-PIN-2): it may succeed
        rl_kind, rl_then = ["ok", "error"], {"kept.md": KEPT}
    if oname == "repair":
        rl_kind, rl_then = ["ok", "error"], {"kept.md": KEPT}
    io_link(f"symlinked-removal-list-outside-{oname}", ["SS-IO-2", "SS-IO-3", "SS-TOMB-1", "S-IO-2", "S-WRITE-12", "PEER-4", "PEER-6"],
            f"A removal list that is a symlink to a file outside the store is never written through by {oname}: the outside "
            "list is unchanged and its names (here `kept.md`) are never honoured or copied.",
            {"MEMORY.md": IO_KEPT_IDX, "kept.md": KEPT}, ".ocl-removed", "removed", "kept.md\n", make(rl_kind), rl_then)
    if oname in ("pin", "repair"):
        SCENARIOS[-1]["then"]["present"].append(D + "MEMORY.md")
        SCENARIOS[-1]["then"]["matches"] = {D + "MEMORY.md": re.escape(HEAD) + r"- \[Kept\]\(kept\.md\)( \[pin\])? "
                                            + re.escape(OLD) + " -- kept"}
    # an indexed topic file links outside
    tp_idx = HEAD + entry("Kept", "kept.md", "kept", OLD) + "\n" + entry("Other", "other.md", "other", OLD)
    # write-new: `kept.md` is an unindexed link that the new topic `Kept` slugs to
    step = write("Kept", "fresh", "fresh", ANY_KIND) if oname == "write-new" else make(ANY_KIND)
    io_link(f"symlinked-topic-outside-{oname}", ["SS-IO-2", "SS-IO-3", "SS-FMT-3", "S-IO-1", "S-WRITE-8", "PEER-4", "PEER-12"],
            f"A topic file that is a symlink to a file outside the store is never written through by {oname}: the outside "
            "file is unchanged and its text reaches no store file; the link may stay or be replaced, the entry may be "
            "dropped as naming no regular file (SS-IDX-5), and the other topic's file stays as it was.",
            {"MEMORY.md": OTHER_IDX if oname == "write-new" else tp_idx, "other.md": OTHER}, "kept.md", "topic.md",
            LINKED_TOPIC, step, {"other.md": OTHER}, present=("MEMORY.md",))
    SCENARIOS[-1]["then"]["present"].remove(D + "kept.md")
    SCENARIOS[-1]["then"]["ignore"] = [{"path": D + "*", "reason": "refusing, replacing the link or dropping its entry are all "
                                        "safe; judged: the outside file's bytes and no outside text in the store (excludes)"}]
    del SCENARIOS[-1]["then"]["no_other_files"]
    # a refused op leaves the entry naming the link as it found it: only mutations owe "regular" (SS-IDX-5)
    SCENARIOS[-1]["then"]["invariants"] = ["leftovers", "unique"]



# ---------------------------------------------------------------- untidy stores (issue 30 item 9)
# Co-writers leave stores that are not tidy: two lines for one file, a tombstoned file a new topic
# of another name slugs to, entries whose file another tool removed or replaced.  Every write,
# remove, pin and repair clause is judged starting from them too, not only from clean stores.
DUP_A = entry("Dup", "dup.md", "older", "2026-07-01T00:00:00+00:00")
DUP_B = entry("Dup", "dup.md", "newer", OLD)
DUP_FILE = fm("Dup", "newer", "\ndup body\n", OLD, OLD)
UNTIDY_OTHER = entry("Other", "other.md", "other", OLD)
OTHER_F = fm("Other", "other", "\nother body\n", OLD, OLD)
DUP_IDX = HEAD + DUP_A + "\n" + DUP_B + "\n" + UNTIDY_OTHER
add("untidy/duplicate-lines-write-leaves-one-entry", ["SS-WRITE-1", "SS-IDX-5", "SS-FMT-2", "S-IDX-3", "S-IDX-4", "S-WRITE-12"],
    "Two lines for one file (a co-writer's race): a write of that topic updates the file and leaves exactly one entry for it.",
    {"MEMORY.md": DUP_IDX, "dup.md": DUP_FILE, "other.md": OTHER_F}, [write("Dup", "more", "v3")],
    {"MEMORY.md": HEAD + entry("Dup", "dup.md", "v3") + "\n" + UNTIDY_OTHER, "other.md": OTHER_F,
     "dup.md": fm("Dup", "v3", "\ndup body\n\n## ${STAMP}\n\nmore\n", OLD)})
add("untidy/duplicate-lines-remove-drops-the-found-entry", ["SS-REMOVE-1", "SS-TOMB-1", "SS-IDX-5", "S-REMOVE-4", "S-IDX-4"],
    "Two lines for one file: removing the topic drops the line it finds, keeps the file and lists it once; the other "
    "line goes too (OpenCode) or stays (openpi, the reference: S-REMOVE-4), which the gate reports as a "
    "`removal-undone` hazard, since the removed topic is still indexed.",
    {"MEMORY.md": DUP_IDX, "dup.md": DUP_FILE, "other.md": OTHER_F}, [op("remove_memory", "ok", topic="Dup")],
    {"dup.md": DUP_FILE, "other.md": OTHER_F, ".ocl-removed": "dup.md\n"})
SCENARIOS[-1]["then"]["matches"] = {D + "MEMORY.md": re.escape(HEAD) + "(" + re.escape(DUP_B + "\n") + ")?" + re.escape(UNTIDY_OTHER)}
SCENARIOS[-1]["then"]["present"] = [D + "MEMORY.md"]
add("untidy/duplicate-lines-pin-keeps-one-pinned-entry", ["SS-PIN-1", "SS-IDX-4", "SS-IDX-5", "S-PIN-2", "S-IDX-4"],
    "Two lines for one file, the newer second: pinning the topic pins the line it finds; maintenance keeps one line, "
    "pinned (the newer line pinned) or not (the older pinned line lost, SS-IDX-4 allows it) — the answer is ok either way.",
    {"MEMORY.md": DUP_IDX, "dup.md": DUP_FILE, "other.md": OTHER_F}, [op("pin_memory", "ok", topic="Dup", pin=True)],
    {"dup.md": DUP_FILE, "other.md": OTHER_F})
SCENARIOS[-1]["then"]["matches"] = {D + "MEMORY.md": re.escape(HEAD) + r"- \[Dup\]\(dup\.md\)( \[pin\])? "
                                    + r"2026-0[78]-01T00:00:00\+00:00 -- (older|newer)\n" + re.escape(UNTIDY_OTHER)}
SCENARIOS[-1]["then"]["present"] = [D + "MEMORY.md"]
TOMB_NOTES = fm("Old Notes", "old notes", "\nold notes body\n", OLD, OLD)
add("untidy/tombstoned-file-of-another-topic-not-taken-over", ["SS-NAME-2", "SS-TOMB-2", "SS-WRITE-1", "S-WRITE-7", "S-TOMB-4", "PEER-12"],
    "`notes.md` was removed (listed, kept, unindexed) and belongs to topic `Old Notes`; a new topic `Notes` slugs to it: "
    "the write takes `notes-2.md`, never overwrites the removed file, and leaves its tombstone alone.",
    {"MEMORY.md": HEAD + UNTIDY_OTHER, "other.md": OTHER_F, "notes.md": TOMB_NOTES, ".ocl-removed": "notes.md\n"},
    [write("Notes", "mine", "m")],
    {"MEMORY.md": HEAD + UNTIDY_OTHER + "\n" + entry("Notes", "notes-2.md", "m"), "other.md": OTHER_F, "notes.md": TOMB_NOTES,
     ".ocl-removed": "notes.md\n", "notes-2.md": fm("Notes", "m", "\nmine\n")})
add("untidy/tombstoned-file-of-the-same-topic-written-again", ["SS-TOMB-2", "SS-WRITE-1", "SS-FMT-1", "S-WRITE-12", "S-TOMB-4", "PEER-6"],
    "`notes.md` was removed (listed, kept, unindexed) and belongs to topic `Notes`; writing `Notes` again reuses it and "
    "takes it off the removal list.",
    {"MEMORY.md": HEAD + UNTIDY_OTHER, "other.md": OTHER_F, "notes.md": fm("Notes", "old", "\nold\n", OLD, OLD),
     ".ocl-removed": "notes.md\n"},
    [write("Notes", "new", "again", mode="replace")],
    {"MEMORY.md": HEAD + UNTIDY_OTHER + "\n" + entry("Notes", "notes.md", "again"), "other.md": OTHER_F,
     "notes.md": fm("Notes", "again", "\nnew\n", OLD), ".ocl-removed": ""})
ORPHAN_IDX = HEAD + entry("Gone", "gone.md", "gone", OLD) + "\n" + UNTIDY_OTHER
add("untidy/orphan-entry-write-recreates-its-file", ["SS-WRITE-1", "SS-IDX-5", "S-WRITE-6", "S-IDX-3"],
    "Another tool deleted `gone.md` but left its entry: a write of `Gone` creates the file again under the entry's name, "
    "one entry.",
    {"MEMORY.md": ORPHAN_IDX, "other.md": OTHER_F}, [write("Gone", "back", "back")],
    {"MEMORY.md": HEAD + entry("Gone", "gone.md", "back") + "\n" + UNTIDY_OTHER, "other.md": OTHER_F,
     "gone.md": fm("Gone", "back", "\nback\n")})
add("untidy/orphan-entry-remove-records-it", ["SS-REMOVE-1", "SS-TOMB-1", "SS-IDX-5", "S-REMOVE-4"],
    "Another tool deleted `gone.md` but left its entry: removing `Gone` drops the entry and lists the name.",
    {"MEMORY.md": ORPHAN_IDX, "other.md": OTHER_F}, [op("remove_memory", "ok", topic="Gone")],
    {"MEMORY.md": HEAD + UNTIDY_OTHER, "other.md": OTHER_F, ".ocl-removed": "gone.md\n"})
add("untidy/orphan-entry-pin-leaves-no-entry", ["SS-PIN-1", "SS-PIN-2", "SS-IDX-5", "S-PIN-4", "S-IDX-4"],
    "Another tool deleted `gone.md` but left its entry: pinning `Gone` finds the entry, and maintenance drops it as an "
    "orphan; no file is created.",
    {"MEMORY.md": ORPHAN_IDX, "other.md": OTHER_F}, [op("pin_memory", "ok", topic="Gone", pin=True)],
    {"MEMORY.md": HEAD + UNTIDY_OTHER, "other.md": OTHER_F})
REPLACED = "---\nname: \"Someone Else\"\ndescription: \"theirs\"\n---\ntheirs\n"
add("untidy/entry-whose-file-another-topic-replaced-is-updated-in-place", ["SS-WRITE-1", "SS-FMT-1", "S-WRITE-6", "S-WRITE-9"],
    "Another tool replaced `mine.md` with a file naming another topic while the entry `Mine` still names it: a write of "
    "`Mine` follows the entry (the index decides, SS-WRITE-1) and rewrites the frontmatter's name.",
    {"MEMORY.md": HEAD + entry("Mine", "mine.md", "mine", OLD) + "\n" + UNTIDY_OTHER, "mine.md": REPLACED, "other.md": OTHER_F},
    [write("Mine", "mine again", "m2", mode="replace")],
    {"MEMORY.md": HEAD + entry("Mine", "mine.md", "m2") + "\n" + UNTIDY_OTHER, "other.md": OTHER_F,
     "mine.md": "---\nname: \"Mine\"\ndescription: \"m2\"\nlast_updated: " + TS + "\ncreated: " + TS + "\n---\n\nmine again\n"})
add("untidy/entry-whose-file-became-a-directory-is-refused", ["SS-IO-2", "SS-WRITE-1", "S-WRITE-8", "PEER-12"],
    "Another tool (or a restore) put a directory where `mine.md` was: a write of `Mine` never writes into it and "
    "changes nothing.",
    {"MEMORY.md": HEAD + entry("Mine", "mine.md", "mine", OLD) + "\n" + UNTIDY_OTHER, "mine.md/x": "x\n", "other.md": OTHER_F},
    [write("Mine", "m", "m", ["refused", "error"])],
    {"MEMORY.md": HEAD + entry("Mine", "mine.md", "mine", OLD) + "\n" + UNTIDY_OTHER, "mine.md/x": "x\n", "other.md": OTHER_F},
    present=("mine.md",))
SCENARIOS[-1]["then"]["invariants"] = ["leftovers", "unique"]  # the refused op leaves the foreign entry as it found it
UNTIDY_REPAIR = HEAD + DUP_A + "\n" + DUP_B + "\n" + entry("Gone", "gone.md", "gone", OLD) + "\n" + UNTIDY_OTHER
add("untidy/repair-on-a-mixed-store", ["SS-TOMB-4", "SS-IDX-5", "PEER-16", "S-TOMB-5"],
    "repair (a tool that offers it) on duplicates, an orphan, an unindexed removed file and an unindexed new one: it "
    "indexes only the new one, never the removed one; duplicates and the orphan are maintenance's.",
    {"MEMORY.md": UNTIDY_REPAIR, "dup.md": DUP_FILE, "other.md": OTHER_F, "notes.md": TOMB_NOTES, ".ocl-removed": "notes.md\n",
     "found.md": "---\nname: \"Found\"\ndescription: \"found\"\n---\nfound\n"},
    [op("repair_memory", "ok")],
    {"dup.md": DUP_FILE, "other.md": OTHER_F, "notes.md": TOMB_NOTES, ".ocl-removed": "notes.md\n",
     "found.md": "---\nname: \"Found\"\ndescription: \"found\"\n---\nfound\n"})
SCENARIOS[-1]["then"]["matches"] = {D + "MEMORY.md": r"(?!.*\(notes\.md\)).*- \[Found\]\(found\.md\).*"}
SCENARIOS[-1]["then"]["present"] = [D + "MEMORY.md"]


def main() -> int:
    if OUT.exists():
        shutil.rmtree(OUT)
    ids = set()
    for sc in SCENARIOS:
        assert sc["id"] not in ids, sc["id"]
        ids.add(sc["id"])
        path = OUT / (sc["id"].removeprefix("shared-store/") + ".json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(sc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(SCENARIOS)} shared-store scenarios under {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
