"""Generated op sequences under the shared-store profile, for any co-writer (issue 25 item 6).

The other machines predict openpi's exact texts and paths, so none could run OpenCode.  This
one drives any implementation's driver with the shared store on (both tools' configurations,
SS-LAYOUT-1) and judges each answer by its outcome kind and the store by the contract alone
(docs/SHARED_STORE.md), never by a prediction of bytes:

- every op answers a kind (SS-OUT-1) among those the op allows; nothing holds the lock, so
  never ``busy``; a ``busy``, ``refused`` or ``not-found`` answer changed nothing;
- after every op: each filename has at most one entry and every entry names a regular file
  (SS-IDX-5), no lock and no temporary is left (SS-LOCK-4, SS-IO-1), topic files other than
  the one written are byte for byte as they were (SS-FMT-3), no file was deleted (SS-REMOVE-1);
- an acknowledged write of a topic leaves one entry for it whose file holds the content, and
  an append keeps every earlier content since the last replace (SS-WRITE-1, SS-FMT-2) and
  takes the file off ``.ocl-removed`` (SS-TOMB-2);
- an acknowledged remove dropped exactly one entry and no topic file, and listed it in
  ``.ocl-removed`` (SS-REMOVE-1, SS-TOMB-1); a pinned entry is never removed (SS-REMOVE-2);
- a pin sets or clears ``[pin]`` on the entry and touches no topic file nor the list
  (SS-PIN-1, SS-PIN-2); a pin is never dropped by another op (SS-IDX-4).

Each run starts from a generated store (issue 30 item 9), tidy or as co-writers leave it: two
lines for one file (either pinned), an entry whose file another tool removed, a removed file a
new topic of another name slugs to, an unindexed file of another topic, stale and pinned
entries.  The checks that need a tidy store hold after a successful mutation (maintenance
tidies it); what SS-IDX-4 and SS-REMOVE-1 allow on duplicates (a losing line's pin, a second
line a removal leaves) is not taken for a failure.

``--impl`` honesty: ``bind`` makes the machine drive exactly the named implementation (the
reference through its own server process too) or says why it cannot.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import initialize, rule

from ..drivers.peers import PeerSpec
from ..gate.scenarios import DEFAULT_NOW_MS
from ..oracles import grammar, outcome_kind
from ..oracles.spec import INDEX_NAME, LOCK_NAME, TEMP_NAME, TOMBSTONES
from . import targets
from .base import Machine, guarded

NEEDED_OPS = frozenset({"write_memory", "remove_memory", "pin_memory"})
STORE = "home/.agents/memory"
CONFIGS = {"agent/memory.jsonc": b'{"shared_dir": true}\n', "home/.config/opencode/memory.jsonc": b'{"shared_dir": true}\n'}
TOPICS = ("Alpha", "alpha", "Alpha!", "Bravo Notes", "Charlie", "Gone")
LOOKUPS = (*TOPICS, "Bravo", "alpha.md", "Delta", "Nothing Like It")
NOT_REGULAR = b"<not regular>"
OLD, NEWER, AGED = "2026-07-01T00:00:00+00:00", "2026-08-01T00:00:00+00:00", "2020-01-01T00:00:00+00:00"


def _topic(name: str, body: str) -> bytes:
    return (f'---\nname: "{name}"\ndescription: "{body}"\nlast_updated: {OLD}\ncreated: {OLD}\n---\n\n{body}\n').encode()


@st.composite
def starting_stores(draw: st.DrawFn) -> dict[str, bytes]:
    """A shared store as co-writers may leave it (empty, or any mix of untidy states)."""
    lines, files, removed = ["# Memory Index", ""], {}, []
    if draw(st.booleans()):  # two lines for one file; the older, the newer or neither pinned
        which = draw(st.sampled_from(("", "older", "newer")))
        lines += [f"- [Alpha](alpha.md){' [pin]' if which == 'older' else ''} {OLD} -- older",
                  f"- [Alpha](alpha.md){' [pin]' if which == 'newer' else ''} {NEWER} -- newer"]
        files["alpha.md"] = _topic("Alpha", "alpha from another tool")
    if draw(st.booleans()):  # another tool deleted the file, not the entry
        lines.append(f"- [Gone](gone.md) {NEWER} -- gone")
    if draw(st.booleans()):  # a removed file of another topic that "Charlie" slugs to
        files["charlie.md"] = _topic("Old Charlie", "removed elsewhere")
        removed.append("charlie.md")
    if draw(st.booleans()):  # an unindexed file of another topic that "Bravo Notes" slugs to
        files["bravo-notes.md"] = _topic("Someone Else", "unindexed")
    if draw(st.booleans()):  # stale and pinned entries
        lines += [f"- [Delta](delta.md) [pin] {AGED} -- old pin", f"- [Echo](echo.md) {AGED} -- stale"]
        files.update({"delta.md": _topic("Delta", "d"), "echo.md": _topic("Echo", "e")})
    if len(lines) == 2:
        return {}
    out = {INDEX_NAME: "\n".join(lines).encode(), **files}
    if removed:
        out[TOMBSTONES] = "".join(f"{r}\n" for r in removed).encode()
    return out


def bind(spec: PeerSpec, ops: frozenset[str], *, timeout: float = 15.0) -> str | None:
    """Drive ``spec`` (the reference too, through its server process); or why it cannot."""
    missing = sorted(NEEDED_OPS - ops)
    if missing:
        return f"the driver lacks the ops {', '.join(missing)}"
    SharedStoreMachine.target_spec = spec
    SharedStoreMachine.target_timeout = timeout
    return None


def _store(root: str) -> dict[str, bytes]:
    """The shared store's top level (regular files; anything else as a marker)."""
    out: dict[str, bytes] = {}
    base = os.path.join(root, STORE)
    for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        path = os.path.join(base, name)
        regular = os.path.isfile(path) and not os.path.islink(path)
        out[name] = Path(path).read_bytes() if regular else NOT_REGULAR
    return out


def _entries(files: dict[str, bytes]) -> list[grammar.Line]:
    text = files.get(INDEX_NAME, b"").decode("utf-8", "replace")
    return [p for line in text.split("\n") if (p := grammar.parse(line)) is not None]


def _meta_pinned(line: grammar.Line) -> bool:
    """``[pin]`` in the metadata part (before the first `` -- ``): where every tool reads it (PEER-11)."""
    return "[pin]" in line.rest.split(" -- ", 1)[0]


def _fm_name(data: bytes) -> str | None:
    """The ``name:`` of a topic file's frontmatter (a JSON string or plain text), if any."""
    text = data.decode("utf-8", "replace")
    if not text.startswith("---\n") or (end := text.find("\n---", 3)) < 0:
        return None
    for line in text[4:end].split("\n"):
        if line.startswith("name:"):
            value = line[5:].strip()
            try:
                return str(json.loads(value)) if value.startswith('"') else value
            except ValueError:
                return value
    return None


def _tombstones(files: dict[str, bytes]) -> set[str]:
    return {n.strip() for n in files.get(TOMBSTONES, b"").decode("utf-8", "replace").split("\n") if n.strip()}


class SharedStoreMachine(Machine):
    """Any co-writer, generated write/remove/pin sequences, judged by the SS- contract."""

    NAME = "shared_store"
    CLAUSES = ("SS-OUT-1", "SS-IDX-5", "SS-WRITE-1", "SS-TOMB-1", "SS-PIN-1")
    EXAMPLES_SCALE = 0.25  # a driver round trip per step
    target_spec: ClassVar[PeerSpec] = PeerSpec("python")
    target_timeout: ClassVar[float] = 15.0

    @initialize(store=starting_stores())
    def start(self, store: dict[str, bytes]) -> None:
        self.target = targets.Pool.get(self.target_spec, self.target_timeout)
        self.target.fresh(DEFAULT_NOW_MS)
        for rel, data in [*CONFIGS.items(), *((f"{STORE}/{name}", data) for name, data in store.items())]:
            self.target.sandbox.put(rel, data)
            self.recorder.given_file(rel, data)
        self.impl = str(self.target.driver.hello.get("impl", self.target_spec.kind))
        self.bodies: dict[str, list[str]] = {}  # filename -> contents since its last replace
        self.n = 0

    def _call(self, op: str, args: dict[str, Any], allowed: tuple[str, ...]) -> tuple[str, dict[str, bytes], dict[str, bytes]]:
        before = _store(str(self.target.sandbox.root))
        answer = self.target.call(op, args)
        kind = outcome_kind.classify(self.impl, op, answer)
        self.recorder.step(op, args, outcome=list(allowed))
        self.executed(op, kind)
        after = _store(str(self.target.sandbox.root))
        got = answer.result if answer.ok else answer.error
        assert kind in allowed, f"{op} {args}: outcome {kind} ({got!r:.200}) not among {allowed} (SS-OUT-1)"
        if kind != "ok":
            assert after == before, f"{op} {args} answered {kind} yet changed {sorted(k for k in set(after) | set(before) if after.get(k) != before.get(k))} (SS-OUT-1)"
            return kind, before, after  # nothing changed: an untidy store stays as it was
        self._always(op, before, after)
        return kind, before, after

    def _always(self, op: str, before: dict[str, bytes], after: dict[str, bytes]) -> None:
        """After a successful mutation (an untidy start is maintenance's to tidy)."""
        left = [n for n in after if n == LOCK_NAME or TEMP_NAME.search(n)]
        assert not left, f"{op} left {left} (SS-LOCK-4, SS-IO-1)"
        gone = [n for n in before if n not in after]
        assert not gone, f"{op} deleted {gone} (SS-REMOVE-1, SS-FMT-3)"
        entries = _entries(after)
        names = [e.filename for e in entries]
        if after.get(INDEX_NAME) != before.get(INDEX_NAME):  # an ok that wrote nothing ("already pinned") maintained nothing
            dup = sorted({n for n in names if names.count(n) > 1})
            assert not dup, f"{op}: {dup} indexed more than once (SS-IDX-5)"
            orphans = [n for n in names if after.get(n, NOT_REGULAR) == NOT_REGULAR]
            assert not orphans, f"{op}: entries naming no regular file {orphans} (SS-IDX-5)"
        was = [e.filename for e in _entries(before)]
        # of several lines for one file a losing line's pin may go (SS-IDX-4): judge single lines
        pinned_before = {e.filename for e in _entries(before) if _meta_pinned(e) and was.count(e.filename) == 1}
        if op != "pin_memory":
            dropped = sorted(pinned_before - {e.filename for e in entries if _meta_pinned(e)})
            assert not dropped, f"{op} dropped the pin of {dropped} (SS-IDX-4, SS-REMOVE-2)"

    @rule(topic=st.sampled_from(TOPICS), replace=st.booleans(), pin=st.sampled_from((None, True)))
    @guarded
    def write(self, topic: str, replace: bool, pin: bool | None) -> None:
        self.n += 1
        token = f"tok{self.n}"
        args: dict[str, Any] = {"topic": topic, "content": token, "summary": f"s{self.n}"}
        if replace:
            args["mode"] = "replace"
        if pin:
            args["pin"] = True
        _kind, before, after = self._call("write_memory", args, ("ok",))
        mine = [e for e in _entries(after) if e.name.lower() == topic.lower()]
        assert mine, f"write {topic!r}: no entry for it (SS-WRITE-1)"
        hits = [e.filename for e in mine if token in after.get(e.filename, b"").decode("utf-8", "replace")]
        assert len(hits) == 1, f"write {topic!r}: its content is in {hits} of the entries {[e.filename for e in mine]} (SS-WRITE-1)"
        file = hits[0]
        if not any(e.name.lower() == topic.lower() for e in _entries(before)) and before.get(file, NOT_REGULAR) != NOT_REGULAR:
            # a new topic never takes over a file another topic holds, indexed or not (SS-NAME-2)
            owner = {e.filename: e.name for e in _entries(before)}.get(file) or _fm_name(before[file])
            assert owner is None or owner.lower() == topic.lower(), f"write {topic!r} took over {file} of {owner!r} (SS-NAME-2)"
        body = after[file].decode("utf-8", "replace")
        if replace or before.get(file) is None:
            self.bodies[file] = [token]
        else:
            kept = [t for t in self.bodies.get(file, []) if f"\n{t}\n" not in body]
            assert not kept, f"append to {file} lost {kept} (SS-FMT-2)"
            self.bodies.setdefault(file, []).append(token)
        assert file not in _tombstones(after), f"write {topic!r}: {file} still listed in {TOMBSTONES} (SS-TOMB-2)"
        others = [n for n in before if n not in (file, INDEX_NAME, TOMBSTONES) and after.get(n) != before[n]]
        assert not others, f"write {topic!r} changed other files {others} (SS-FMT-3)"
        if pin:
            assert any(_meta_pinned(e) for e in mine if e.filename == file), f"write {topic!r} with pin: not pinned (SS-IDX-4)"

    @rule(topic=st.sampled_from(LOOKUPS))
    @guarded
    def remove(self, topic: str) -> None:
        kind, before, after = self._call("remove_memory", {"topic": topic}, ("ok", "refused", "not-found"))
        if kind != "ok":
            return
        was, now = [e.filename for e in _entries(before)], [e.filename for e in _entries(after)]
        # the file removed: the one newly listed (or, already listed, the one that lost a line);
        # maintenance may drop orphans and duplicates beside it, and of several lines for one
        # file a removal may leave the others (SS-REMOVE-1, a removal-undone hazard)
        lost = {f for f in was if now.count(f) < was.count(f)}
        listed = sorted(_tombstones(after) - _tombstones(before)) or sorted(lost & _tombstones(before))
        assert len(listed) == 1 and listed[0] in lost, \
            f"remove {topic!r}: listed {listed} in {TOMBSTONES}, entries lost {sorted(lost)} (SS-REMOVE-1, SS-TOMB-1)"
        dropped = listed
        assert was.count(dropped[0]) > 1 or not any(_meta_pinned(e) for e in _entries(before) if e.filename == dropped[0]), \
            f"remove {topic!r} removed pinned {dropped[0]} (SS-REMOVE-2)"
        assert dropped[0] in _tombstones(after), f"remove {topic!r}: {dropped[0]} not listed in {TOMBSTONES} (SS-TOMB-1)"
        changed = [n for n in before if n not in (INDEX_NAME, TOMBSTONES) and after.get(n) != before[n]]
        assert not changed, f"remove {topic!r} changed {changed} (SS-REMOVE-1)"

    @rule(topic=st.sampled_from(LOOKUPS), pin=st.booleans())
    @guarded
    def pin(self, topic: str, pin: bool) -> None:
        kind, before, after = self._call("pin_memory", {"topic": topic, "pin": pin}, ("ok", "refused", "not-found"))
        if kind != "ok":
            return
        changed = [n for n in set(before) | set(after) if n != INDEX_NAME and after.get(n) != before.get(n)]
        assert not changed, f"pin {topic!r} changed {changed} (SS-PIN-2)"
        flips = [e.filename for e in _entries(after) if _meta_pinned(e) == pin]
        names = [e.filename for e in _entries(before)]
        if any(names.count(f) > 1 or before.get(f, NOT_REGULAR) == NOT_REGULAR for f in names):
            return  # the line pinned may lose to a newer duplicate (SS-IDX-4) or be an orphan maintenance drops
        was = {e.filename: _meta_pinned(e) for e in _entries(before)}
        assert any(f in was for f in flips), f"pin {topic!r} {pin}: no entry is in the requested state (SS-PIN-1)"

    def scenario_for(self, error: BaseException) -> dict[str, Any] | None:
        data = super().scenario_for(error)
        if data is not None:
            data["profiles"] = ["shared-store"]
        return data

    def teardown(self) -> None:
        self.target.done()
