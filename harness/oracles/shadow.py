"""The exact expectation of the store machine: every file's bytes and every result string.

``harness.oracles.kind_model`` says what *kind* of result an operation has; the store machine must also
compare bytes, so this module keeps each memory directory as text — the index as its list of
LF-split pieces, topics as frontmatter lines plus body — and applies SPEC's algorithms to it
(S-WRITE, S-REMOVE, S-PIN, S-IDX maintenance, S-RETIRE, S-MIGRATE carry-over, S-DISP reads).
It is written from SPEC, not from ``reference/``; the grammar (index lines, dates, slugs) is
``harness.oracles.grammar``, and only ECMAScript string primitives (lowercasing, trimming,
UTF-16 cuts, JSON string literals, UTF-8 coding) are shared, since those have their own
unit tests.  The shadow covers single-process runs with a frozen UTC
clock and no lock contention: exactly what the store machine does.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from memconform.reference.text import (
    WS_CLASS,
    collapse_whitespace,
    decode_utf8,
    encode_utf8,
    js_lower,
    json_string,
    trim,
    trim_end,
    trim_start,
    utf16_slice,
)

from .grammar import (
    DAY_MS,
    Line,
    date_ms,
    first_date,
    frontmatter_name,
    parse,
    safe_filename,
    to_slug,
)
from .spec import INITIAL_INDEX as INITIAL

LIMIT = 51200
RECAP = "last-session-recap.md"
DEFAULT_FM = ("metadata:", "  node_type: memory")
BUSY = "Error: memory store is busy (another tool or process holds the lock) — please retry in a moment."
NOT_FOUND_TOPIC = "_(file not found)_"

_WS = WS_CLASS[1:-1]
_SUMMARY = re.compile(f"--[{_WS}]+(.+)", re.S)
_BLOCK = re.compile("---\r?\n([\\s\\S]*?)\r?\n---\r?\n")
_PROBE = re.compile("---\r?\n([\\s\\S]*?)\r?\n---")
_NAME = re.compile(f"(?:(?<=[\\n\\r\\u2028\\u2029])|(?<![\\s\\S]))name:[{_WS}]*([^\\n\\r\\u2028\\u2029]+)")


class Uncovered(Exception):
    """The files hold something this shadow cannot represent (e.g. CR in frontmatter)."""


def stamp(ms: int) -> str:
    return datetime.fromtimestamp(ms // 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00")


def utc_day(ms: int) -> str:
    return datetime.fromtimestamp(ms // 1000, UTC).strftime("%Y-%m-%d")


# --- topic files (S-FMT-9/10, S-WRITE-7/9/10) -----------------------------------------


@dataclass(frozen=True)
class Topic:
    """A topic file: frontmatter lines (None: no block) and body; ``raw`` = planted bytes."""

    fm: tuple[str, ...] | None
    body: str
    raw: bytes | None = None

    @classmethod
    def from_bytes(cls, data: bytes) -> Topic:
        text = decode_utf8(data)
        m = _BLOCK.match(text)
        if m is None:
            return cls(None, text, data)
        g = m.group(1)
        if any(c in g for c in "\r\u2028\u2029"):
            raise Uncovered("frontmatter with CR or U+2028/2029")
        return cls(tuple(g.split("\n")), text[m.end():], data)

    def text(self) -> str:
        if self.raw is not None:
            return decode_utf8(self.raw)
        if self.fm is None:
            return self.body
        return "---\n" + "\n".join(self.fm) + "\n---\n" + self.body

    def data(self) -> bytes:
        return self.raw if self.raw is not None else encode_utf8(self.text())

    def probe_name(self) -> str | None:
        """S-WRITE-7: the ``name:`` of the first 51200 bytes' frontmatter (variant b)."""
        m = _PROBE.match(decode_utf8(self.data()[:LIMIT]))
        if m is None:
            return None
        found = _NAME.search(m.group(1))
        if found is None:
            return None
        return frontmatter_name(found.group(1))


def set_field(fm: list[str], key: str, value: str) -> None:
    for i, line in enumerate(fm):
        if line.startswith(key + ":"):
            fm[i] = f"{key}: {value}"
            return
    fm.append(f"{key}: {value}")


def compose(prev: Topic | None, topic: str, summary: str, content: str, replace: bool, now: int) -> Topic:
    """S-WRITE-9/10: the new topic file."""
    fm = list(DEFAULT_FM if prev is None or prev.fm is None else prev.fm)
    t = stamp(now)
    set_field(fm, "name", json_string(topic))
    set_field(fm, "description", json_string(summary))
    set_field(fm, "last_updated", t)
    if not any(line.startswith("created:") for line in fm):
        set_field(fm, "created", t)
    if prev is None or replace:
        body = f"\n{content}\n"
    else:
        old = prev.body if prev.fm is not None else prev.text()
        body = f"{old}\n## {utc_day(now)}\n\n{content}\n"
    # what a later read sees: lone surrogates became U+FFFD on the way to disk
    return Topic(tuple(decode_utf8(encode_utf8(x)) for x in fm), decode_utf8(encode_utf8(body)))


# --- one memory directory ---------------------------------------------------------------


@dataclass
class Dir:
    exists: bool = False
    pieces: list[str] | None = None  # MEMORY.md split on LF; None: no index
    topics: dict[str, Topic] = field(default_factory=dict)  # regular files with safe names
    others: dict[str, bytes] = field(default_factory=dict)  # planted files with unsafe names
    tombstones: list[str] | None = None  # .ocl-removed; None: no file

    def write_index(self, lines: list[str]) -> None:
        self.pieces = decode_utf8(encode_utf8("\n".join(lines))).split("\n")

    def add_tombstone(self, name: str) -> None:
        names = list(self.tombstones or [])
        if name not in names:
            self.tombstones = [*names, name]

    def clear_tombstone(self, name: str) -> None:
        if self.tombstones is not None and name in self.tombstones:
            self.tombstones = [n for n in self.tombstones if n != name]

    def files(self) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        if self.pieces is not None:
            out["MEMORY.md"] = encode_utf8("\n".join(self.pieces))
        for name, t in self.topics.items():
            out[name] = t.data()
        out.update(self.others)
        if self.tombstones is not None:
            out[".ocl-removed"] = "".join(f"{n}\n" for n in self.tombstones).encode()
        return out


def maintain(lines: list[str], d: Dir, stale_days: float, now: int) -> list[str]:
    """S-IDX-4..6: one best line per filename, orphans dropped, stale flags stamped/healed."""
    parsed = [parse(x) for x in lines]
    best: dict[str, tuple[int, str]] = {}
    for i, p in enumerate(parsed):
        if p is None or p.filename not in d.topics:
            continue
        key = first_date(p.rest) or ""
        if p.filename not in best or key > best[p.filename][1]:
            best[p.filename] = (i, key)
    out: list[str] = []
    emitted: set[str] = set()
    for i, (line, p) in enumerate(zip(lines, parsed, strict=True)):
        if p is None:
            out.append(line)
        elif best.get(p.filename, (-1, ""))[0] == i and p.filename not in emitted:
            emitted.add(p.filename)
            out.append(p.render(restamp(p.rest, stale_days, now)))
    return out


def restamp(rest: str, stale_days: float, now: int) -> str:
    if "[pin]" in rest or stale_days <= 0:
        return rest
    date = first_date(rest)
    if date is None:
        return rest
    ms = date_ms(date)
    if ms is not None and math.floor((now - ms) / DAY_MS) > stale_days:
        return rest if "[stale?]" in rest else rest.replace(date, date + " [stale?]", 1)
    return rest.replace(" [stale?]", "", 1)


def find(lines: list[str], search: str) -> tuple[int, Line] | list[str] | None:
    """S-IDX-8: first exact name/filename match, else the unique substring match."""
    s = js_lower(search)
    partial: list[tuple[int, Line]] = []
    for i, line in enumerate(lines):
        p = parse(line)
        if p is None:
            continue
        name, fname = js_lower(p.name), js_lower(p.filename)
        if s in (name, fname):
            return i, p
        if s in name or s in fname:
            partial.append((i, p))
    if len(partial) == 1:
        return partial[0]
    return [p.name for _, p in partial] if partial else None


# --- the store --------------------------------------------------------------------------


@dataclass
class Shadow:
    """Both memory directories, the configuration and the process flags of one store."""

    now: int
    stale_days: float = 180
    shared_mode: bool = False
    local: Dir = field(default_factory=Dir)
    shared: Dir = field(default_factory=Dir)
    sentinel: bool = False
    carried: bool = False

    def config_text(self) -> str:
        return json.dumps({"stale_after_days": self.stale_days, "shared_dir": self.shared_mode})

    def files(self) -> dict[str, bytes]:
        """Expected sandbox snapshot (DIR markers included), relative to the sandbox root."""
        out: dict[str, bytes] = {"agent": b"<dir>", "home": b"<dir>"}
        out["agent/memory.jsonc"] = self.config_text().encode()
        for rel, d in (("agent/memory", self.local), ("home/.agents/memory", self.shared)):
            if not d.exists:
                continue
            if rel.startswith("home/"):
                out["home/.agents"] = b"<dir>"
            out[rel] = b"<dir>"
            for name, data in d.files().items():
                out[f"{rel}/{name}"] = data
        if self.sentinel:
            out["agent/memory/.shared-dir-migrated"] = b""
        return out

    # --- locations and carry-over (S-PATH-4, S-MIGRATE) ----------------------------------

    def active(self) -> Dir:
        if self.shared_mode:
            self._carry_over()
            return self.shared
        return self.local

    def _carry_over(self) -> None:
        if self.carried:
            return
        if self.sentinel:
            self.carried = True
            return
        local, shared = self.local, self.shared
        if local.pieces is None:
            return
        shared.exists = True
        sraw = INITIAL if shared.pieces is None else "\n".join(shared.pieces)
        on_disk = {*shared.topics, *shared.others}
        on_disk |= {n for n in ("MEMORY.md", ".ocl-removed") if n in shared.files()}
        sindexed = {p.filename for p in map(parse, sraw.split("\n")) if p}
        removed = set(local.tombstones or []) | set(shared.tombstones or [])
        queued: list[str] = []
        for line in local.pieces:
            p = parse(line)
            if p is None or p.filename in removed or p.filename not in local.topics:
                continue
            dest = self._destination(p.filename, on_disk)
            if dest in removed:
                continue
            if dest not in on_disk:
                shared.topics[dest] = Topic.from_bytes(encode_utf8(local.topics[p.filename].text()))
                on_disk.add(dest)
            if dest not in sindexed:
                queued.append(line.replace(f"]({p.filename})", f"]({dest})", 1))
                sindexed.add(dest)
        if queued:
            shared.write_index([*trim_end(sraw).split("\n"), *queued, ""])
        elif shared.pieces is None:
            shared.write_index(sraw.split("\n"))
        self.sentinel = self.carried = True

    def _destination(self, name: str, on_disk: set[str]) -> str:
        def same(candidate: str) -> bool:
            t = self.shared.topics.get(candidate)
            return t is not None and t.text() == self.local.topics[name].text()

        if name not in on_disk or same(name):
            return name
        if not name.endswith(".md"):
            raise Uncovered("carry-over of a name without a lowercase .md (A-12)")
        base = name[:-3]
        if f"{base}-opim.md" not in on_disk or same(f"{base}-opim.md"):
            return f"{base}-opim.md"
        n = 2
        while f"{base}-opim-{n}.md" in on_disk:
            n += 1
        return f"{base}-opim-{n}.md"

    # --- write (S-WRITE) ----------------------------------------------------------------

    def write(
        self, topic: str, content: str, summary: str, pin: bool = False,
        mode: str | None = None, overwrite: bool | None = None,
    ) -> str:
        if trim(topic) == "":
            return "Invalid topic: topic must not be blank."
        if any(c in topic for c in "\r\n[]()"):
            return "Invalid topic: topic must not contain newlines or Markdown link characters."
        slug = to_slug(topic)
        if slug == "":
            return "Invalid topic: topic must contain at least one ASCII letter or number."
        topic = trim(topic)
        summary = utf16_slice(trim(collapse_whitespace(summary)), 0, 500)
        if slug == "last-session-recap":
            return (
                'Reserved topic: "last-session-recap" has been retired. Persist durable facts as '
                "their own topics; automatic session orientation is managed in HANDOFF.md."
            )
        if slug == "memory":
            return 'Invalid topic: "MEMORY.md" is reserved for the memory index.'
        d = self.active()
        d.exists = True
        lines = (INITIAL if d.pieces is None else "\n".join(d.pieces)).split("\n")
        filename = self._filename(d, lines, topic, slug)
        prev = d.topics.get(filename)
        d.topics[filename] = compose(prev, topic, summary, content, mode == "replace" or overwrite is True, self.now)
        lines = upsert(lines, filename, topic, summary, pin, self.now)
        d.write_index(maintain(lines, d, self.stale_days, self.now))
        if d is self.shared:
            d.clear_tombstone(filename)
        verb = "Created" if prev is None else "Updated"
        return f'{verb} memory topic "{topic}" ({filename}).'

    @staticmethod
    def _filename(d: Dir, lines: list[str], topic: str, slug: str) -> str:
        """S-WRITE-6/7."""
        filename, indexed, matched = f"{slug}.md", set(), False
        for line in lines:
            p = parse(line)
            if p is None:
                continue
            indexed.add(p.filename)
            if js_lower(p.name) == js_lower(topic):
                filename, matched = p.filename, True
        if matched:
            return filename
        n = 2
        while filename in indexed or filename in d.topics or filename in d.others:
            t = d.topics.get(filename)
            if filename not in indexed and t is not None:
                name = t.probe_name()
                if name is not None and js_lower(name) == js_lower(topic):
                    return filename
            filename, n = f"{slug}-{n}.md", n + 1
        return filename

    # --- remove and pin (S-REMOVE, S-PIN) -----------------------------------------------

    def _locate(self, topic: str) -> tuple[Dir, list[str], tuple[int, Line] | str]:
        d = self.active()
        d.exists = True
        if d.pieces is None:
            return d, [], "No memory index found."
        lines = list(d.pieces)
        found = find(lines, topic)
        if found is None:
            return d, lines, f'No entry found matching "{topic}".'
        if isinstance(found, list):
            return d, lines, f'Multiple entries match "{topic}", be more specific: {", ".join(found)}'
        return d, lines, found

    def remove(self, topic: str) -> str:
        d, lines, found = self._locate(topic)
        if isinstance(found, str):
            return found
        i, p = found
        if p.pinned:
            return f'Cannot remove "{p.name}" — it is pinned. Unpin it first with: /memory unpin {topic}'
        del lines[i]
        lines = maintain(lines, d, self.stale_days, self.now)
        if d is self.shared:
            d.add_tombstone(p.filename)
        d.write_index(lines)
        return f'Removed "{p.name}" from the index. Topic file is preserved on disk.'

    def pin(self, topic: str, on: bool) -> str:
        d, lines, found = self._locate(topic)
        if isinstance(found, str):
            return found
        i, p = found
        before = lines[i]
        if on == ("[pin]" in before):
            return f'"{p.name}" is already {"pinned" if on else "unpinned"}.'
        if on:
            cut = before.index(p.mid) + len(p.mid)
            lines[i] = before[:cut] + " [pin]" + before[cut:]
        else:
            lines[i] = before.replace(" [pin]", "", 1)
        lines = maintain(lines, d, self.stale_days, self.now)
        after = next(
            (x for x in lines if (q := parse(x)) is not None and q.filename == p.filename),
            lines[i] if i < len(lines) else "undefined",
        )
        d.write_index(lines)
        verb = "Pinned" if on else "Unpinned"
        return f'{verb} "{p.name}".\nBefore: {before}\n After: {after}'

    # --- recap retirement (S-RETIRE) ----------------------------------------------------

    def retire(self) -> None:
        for d in (self.local, self.shared):
            if d.pieces is None:
                continue
            kept = [
                x for x in d.pieces
                if not ((p := parse(x)) and p.filename == RECAP and "[pin]" not in p.rest.split(" -- ")[0])
            ]
            if len(kept) != len(d.pieces):
                if d is self.shared:
                    d.add_tombstone(RECAP)
                d.write_index(kept)

    # --- reads (S-DISP) -----------------------------------------------------------------

    def _bounded_index(self, d: Dir) -> tuple[str, bool] | None:
        data = d.files().get("MEMORY.md")
        if data is None:
            return None
        return decode_utf8(data[:LIMIT]), len(data) > LIMIT

    def read_index(self, max_lines: int | None) -> str | None:
        d = self.active()
        got = self._bounded_index(d)
        if got is None:
            return INITIAL
        text, truncated = got
        pieces = text.split("\n")
        if truncated:
            kept = pieces if max_lines is None else pieces[:max_lines]
            return "\n".join(kept) + "\n\n<!-- memory truncated: MEMORY.md exceeds size limit; shorten the index -->"
        if max_lines is not None and len(pieces) > max_lines:
            return "\n".join(pieces[:max_lines]) + (
                f"\n\n<!-- memory truncated: MEMORY.md exceeds {max_lines}-line limit; shorten the index -->"
            )
        return text

    def index_entries(self) -> list[dict[str, object]]:
        got = self._bounded_index(self.active())
        if got is None:
            return []
        out: list[dict[str, object]] = []
        for line in got[0].split("\n"):
            p = parse(line)
            if p is None:
                continue
            m = _SUMMARY.search(p.rest)
            out.append({
                "name": p.name, "filename": p.filename, "date": first_date(p.rest) or "—",
                "summary": m.group(1) if m else "", "pinned": p.pinned, "stale": "[stale?]" in p.rest,
            })
        return out

    def topic_content(self, filename: str) -> str:
        if not safe_filename(filename):
            return NOT_FOUND_TOPIC
        t = self.active().topics.get(filename)
        if t is None:
            return NOT_FOUND_TOPIC
        data = t.data()
        text = decode_utf8(data[:LIMIT])
        m = _BLOCK.match(text)
        body = trim_start(text[m.end():]) if m else text
        if len(data) > LIMIT:
            body += "\n\n<!-- memory truncated: topic exceeds size limit; read the file directly for the full body -->"
        return body

    def search(self, query: str) -> list[dict[str, str]]:
        q = js_lower(query)
        hits: list[dict[str, str]] = []
        seen: set[str] = set()
        for e in self.index_entries():
            name, fname, summ = str(e["name"]), str(e["filename"]), str(e["summary"])
            if q in js_lower(name) or q in js_lower(fname) or q in js_lower(summ):
                hits.append({"name": name, "filename": fname, "matchType": "index", "snippet": summ or name})
                seen.add(fname)
        d = self.active()
        if not d.exists:
            return hits
        for name in sorted(d.topics, key=lambda n: n.encode("utf-8", "surrogatepass")):
            if name in seen:
                continue
            for piece in decode_utf8(d.topics[name].data()[:LIMIT]).split("\n"):
                if q in js_lower(piece):
                    shown = name[:-3] if name.endswith(".md") else name
                    hits.append({
                        "name": shown, "filename": name, "matchType": "body",
                        "snippet": utf16_slice(trim(piece), 0, 120),
                    })
                    break
        return hits


def upsert(lines: list[str], filename: str, name: str, summary: str, pin: bool, now: int) -> list[str]:
    """S-IDX-3."""
    out = list(lines)
    for i, line in enumerate(out):
        p = parse(line)
        if p is not None and p.filename == filename:
            out[i] = render_entry(name, filename, p.pinned or pin, stamp(now), summary)
            return out
    out.append(render_entry(name, filename, pin, stamp(now), summary))
    return out


def render_entry(name: str, filename: str, pinned: bool, ts: str, summary: str) -> str:
    return f"- [{name}]({filename}){' [pin]' if pinned else ''} {ts} -- {summary}"


def dir_from_files(files: dict[str, bytes], rel: str) -> Dir:
    """Resynchronise one directory from a sandbox snapshot (after out-of-model tampering)."""
    d = Dir(exists=files.get(rel) == b"<dir>")
    prefix = rel + "/"
    for path, data in files.items():
        if not path.startswith(prefix) or "/" in path[len(prefix):]:
            continue
        name = path[len(prefix):]
        if data in (b"<dir>", b"<fifo>", b"<socket>") or data.startswith(b"-> "):
            raise Uncovered(f"non-regular {path}")
        if name == "MEMORY.md":
            d.pieces = decode_utf8(data).split("\n")
        elif name == ".ocl-removed":
            d.tombstones = [n for n in decode_utf8(data).split("\n") if safe_filename(n)]
        elif name == ".shared-dir-migrated":
            continue
        elif safe_filename(name):
            d.topics[name] = Topic.from_bytes(data)
        else:
            d.others[name] = data
    return d
