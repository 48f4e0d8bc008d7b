"""A store — the reference, or any implementation's driver — against the shadow, on real files.

The machine is registered (and exports, and is rerun) as ``store_model``; the module is named
for what it compares with: ``harness.oracles.shadow``, the exact SPEC-written store.

It drives whatever ``bind`` chose (``machines.targets``): by default the reference ``Server``
in process (fast), else a driver process through the peer protocol, pooled and ``reset``
between examples.  The shadow predicts openpi's result texts and files byte for byte (SPEC is
written from them), so ``python`` and ``pi:`` are driven; ``opencode:`` words its results
differently and has no search or index readers, so the machine refuses it (``refusal``).
Driver stderr is not checked: it is the implementation's console, not SPEC's diagnostics.

Every rule runs one operation on the store and the same operation on the shadow
(``shadow.py``), then compares the result string exactly; after every step the whole sandbox
is compared byte for byte with the shadow's files.  Rules cover write (append, replace,
overwrite, pin), remove, pin/unpin, recap retirement, search, the index reads, the clock
(stale stamping), shared mode with carry-over, and a human editing the store behind its back.
Tampering the shadow cannot represent (a scribbled topic with CR frontmatter) switches to
invariant-only checking until the files are representable again (resynchronised from disk).
While the run stays inside ``harness.oracles.kind_model``'s domain, the kind model's result
kinds are checked too (``kinds``), since the linearizability checker relies on them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule

from memconform.reference.store import Store
from memconform.reference.text import trim

from ..drivers.peers import PeerSpec
from ..drivers.sandbox import snapshot
from ..gate.regressions import content
from ..gate.scenarios import DEFAULT_NOW_MS
from ..oracles import kind_model
from ..oracles.grammar import first_date, parse
from ..oracles.invariants import check_store
from ..oracles.shadow import Dir, Shadow, Topic, Uncovered, dir_from_files
from . import strategies as S
from .base import Machine, assert_same_files, guarded
from .targets import Target, opener

NEEDED_OPS = frozenset({
    "reset", "set_clock", "write_memory", "remove_memory", "pin_memory", "retire_recaps",
    "search", "read_index", "index_entries", "topic_content",
})

NOW_MS = DEFAULT_NOW_MS
_NOTHING = object()
SCRIBBLES = (
    b"---\r\nname: CR\r\nx: 1\r\n---\r\nbody\r\n",  # CRLF inside the frontmatter: uncovered
    b"no frontmatter at all\n",
    b"---\n---\nbody",
    b"\xff\xfe invalid utf-8 \xc3",
)
WRITTEN = {"created", "updated", "removed", "pinned", "unpinned"}


def bind(spec: PeerSpec, ops: frozenset[str], *, timeout: float = 15.0) -> str | None:
    """Make the machine drive ``spec``; or say in one line why it cannot."""
    if spec.kind == "opencode":
        return ("the shadow predicts openpi's result texts and files; opencode words its results "
                "differently and has no search/index readers (use `memconform conformance`)")
    missing = sorted(NEEDED_OPS - ops)
    if missing:
        return f"the driver lacks the ops {', '.join(missing)}"
    if spec.kind == "node" and (why := _not_openpi(spec, timeout)):
        return why
    StoreShadowMachine.target_spec = None if spec.kind == "python" else spec
    StoreShadowMachine.target_timeout = timeout
    return None


def _not_openpi(spec: PeerSpec, timeout: float) -> str | None:
    """Why a driver is not judged by the shadow's openpi texts and layout (its hello declares
    another profile, issue 32), or None."""
    from ..drivers.peers import DriverError, PeerUnavailable, preflight
    from ..gate.profiles import ProfileError, default_profile

    try:
        info = preflight([spec], timeout=timeout)[0]
        profile = default_profile(spec, info.hello)
    except (PeerUnavailable, DriverError, ProfileError) as e:
        return str(e).splitlines()[0] if str(e) else type(e).__name__
    if profile == "openpi" and info.hello.get("outcome_kinds") is not True:
        return None
    return (f"the shadow predicts openpi's result texts and files; the driver's hello declares the {profile} profile"
            f"{' and outcome kinds' if info.hello.get('outcome_kinds') is True else ''} (the shared_store machine judges it)")


class StoreShadowMachine(Machine):
    """Store vs shadow: exact results and files after every step (S-WRITE … S-DISP, S-INV-2)."""

    NAME = "store_model"
    CLAUSES = ("S-WRITE-12", "S-IDX-4", "S-INV-2")
    store_class: ClassVar[type[Store]] = Store
    target_spec: ClassVar[PeerSpec | None] = None  # None: the reference in process
    target_timeout: ClassVar[float] = 15.0

    def __init__(self) -> None:
        super().__init__()
        spec = type(self).target_spec
        self.target: Target = opener(spec, timeout=self.target_timeout, store_class=self.store_class)(NOW_MS)
        self.sandbox = self.target.sandbox
        self.shadow = Shadow(NOW_MS)
        self.covered = True
        # the kind model's state; None once the run leaves its domain (tampering, flags …)
        self.kinds: kind_model.State | None = kind_model.State()
        self.last_written: tuple[str, str] | None = None  # (directory rel, filename)

    def teardown(self) -> None:
        self.target.done()

    # --- helpers --------------------------------------------------------------------------

    @property
    def root(self) -> Path:
        return self.sandbox.root

    def _rel(self, d: Dir) -> str:
        return "agent/memory" if d is self.shadow.local else "home/.agents/memory"

    def _target(self) -> Dir:
        """The directory the next operation will use (no carry-over triggered here)."""
        return self.shadow.shared if self.shadow.shared_mode else self.shadow.local

    def _expect(self, fn: Any) -> Any:
        if not self.covered:
            return _NOTHING
        try:
            return fn()
        except Uncovered:
            self.covered = False
            self.kinds = None
            return _NOTHING

    def _call(self, op: str, args: dict[str, Any]) -> Any:
        """One op on the target; an error answer fails the step (SPEC ops return texts)."""
        answer = self.target.call(op, args)
        if not answer.ok:
            self.recorder.step(op, args)
            raise AssertionError(f"{op} {args!r} raised on {self.target.name}: {answer.error}")
        return answer.result

    def _check(self, op: str, args: dict[str, Any], expected: Any, actual: Any) -> None:
        self.recorder.step(op, args, **({} if expected is _NOTHING else {"result": expected}))
        if expected is not _NOTHING:
            assert actual == expected, (
                f"{op} {args!r}:\n  shadow:    {expected!r}\n  {self.target.name}: {actual!r}"
            )

    def _check_kind(self, op: str, args: dict[str, Any], actual: str) -> None:
        if self.kinds is None:
            return
        self.kinds, kind = kind_model.apply(self.kinds, op, args)
        got = kind_model.result_kind(actual)
        assert kind == got, f"harness.oracles.kind_model says {kind!r} for {op} {args!r}; the store said {actual!r}"

    def _after_mutation(self, kind: str) -> None:
        """S-INV-2 on the directory just mutated (only checks that hold after tampering)."""
        if kind not in WRITTEN:
            return
        directory = self.root / ("home/.agents/memory" if self.shadow.shared_mode else "agent/memory")
        violations = check_store(directory, ("leftovers", "unique", "regular"))
        assert not violations, "; ".join(map(str, violations))

    def _put(self, d: Dir, name: str, data: bytes) -> None:
        path = self.root / self._rel(d) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        d.exists = True
        self.recorder.put_file(f"{self._rel(d)}/{name}", data)

    # --- setup ----------------------------------------------------------------------------

    @initialize(stale_days=st.sampled_from((180, 0, 2)))
    @guarded
    def configure(self, stale_days: int) -> None:
        self.shadow.stale_days = stale_days
        text = self.shadow.config_text().encode()
        (self.root / "agent" / "memory.jsonc").write_bytes(text)
        self.recorder.given_file("agent/memory.jsonc", text)
        self.recorder.clause("S-CFG-9")
        self.executed("configure")

    # --- operations ---------------------------------------------------------------------

    @rule(topic=S.topics, text=S.contents, summary=S.summaries, pin=st.booleans(), mode=S.modes)
    @guarded
    def write(self, topic: str, text: str, summary: str, pin: bool, mode: dict[str, Any]) -> None:
        self._write("write", topic, text, summary, pin, mode)

    @rule(data=st.data(), text=S.contents, summary=S.summaries, pin=st.booleans(), mode=S.modes)
    @guarded
    def rewrite(self, data: st.DataObject, text: str, summary: str, pin: bool, mode: dict[str, Any]) -> None:
        """A write to a name already indexed, or a variant of it (update, case, collision)."""
        names = [p.name for p in map(parse, self._target().pieces or []) if p]
        if not names:
            return self._write("rewrite", data.draw(S.topics), text, summary, pin, mode)
        name = data.draw(st.sampled_from(names))
        topic = data.draw(st.sampled_from((name, name.upper(), name.lower(), name + "!", f" {name} ")))
        return self._write("rewrite", topic, text, summary, pin, mode)

    def _write(self, label: str, topic: str, text: str, summary: str, pin: bool, mode: dict[str, Any]) -> None:
        args: dict[str, Any] = {"topic": topic, "content": text, "summary": summary, "pin": pin, **mode}
        if "[pin]" in summary or trim(topic) == "pin":
            # a flag token in the summary, or S-PIN-2: in the link text `[pin](pin.md)`
            # (pin_memory reads the whole line), is outside harness.oracles.kind_model
            self.kinds = None
        expected = self._expect(
            lambda: self.shadow.write(topic, text, summary, pin, mode.get("mode"), mode.get("overwrite"))
        )
        actual = self._call("write_memory", args)
        self._check("write_memory", args, expected, actual)
        kind = kind_model.result_kind(actual)
        if kind != "invalid":
            self._check_kind("write_memory", args, actual)
        self._after_mutation(kind)
        self.executed(label, kind)

    def _lookup(self, data: st.DataObject) -> str:
        """A lookup: often an indexed name or filename (or a case/partial variant of one)."""
        names = [x for p in map(parse, self._target().pieces or []) if p for x in (p.name, p.filename)]
        if names and data.draw(st.integers(0, 3)) > 0:
            name = data.draw(st.sampled_from(names))
            return data.draw(st.sampled_from((name, name.upper(), name.lower(), name[: max(1, len(name) // 2)])))
        return data.draw(S.lookups)

    @rule(data=st.data())
    @guarded
    def remove(self, data: st.DataObject) -> None:
        topic = self._lookup(data)
        expected = self._expect(lambda: self.shadow.remove(topic))
        actual = self._call("remove_memory", {"topic": topic})
        self._check("remove_memory", {"topic": topic}, expected, actual)
        self._check_kind("remove_memory", {"topic": topic}, actual)
        self._after_mutation(kind_model.result_kind(actual))
        self.executed("remove", kind_model.result_kind(actual))

    @rule(data=st.data(), on=st.booleans())
    @guarded
    def pin(self, data: st.DataObject, on: bool) -> None:
        topic = self._lookup(data)
        expected = self._expect(lambda: self.shadow.pin(topic, on))
        actual = self._call("pin_memory", {"topic": topic, "pin": on})
        self._check("pin_memory", {"topic": topic, "pin": on}, expected, actual)
        self._check_kind("pin_memory", {"topic": topic, "pin": on}, actual)
        self._after_mutation(kind_model.result_kind(actual))
        self.executed("pin", kind_model.result_kind(actual))

    @rule()
    @guarded
    def retire(self) -> None:
        self._expect(self.shadow.retire)
        self._call("retire_recaps", {})
        self.recorder.step("retire_recaps", {}, result=None)
        self.recorder.clause("S-RETIRE-3")
        self.executed("retire")

    @rule(query=S.queries)
    @guarded
    def search(self, query: str) -> None:
        expected = self._expect(lambda: self.shadow.search(query))
        actual = self._call("search", {"query": query})
        self._check("search", {"query": query}, expected, actual)
        self.executed("search", f"{min(len(actual), 3)}+ hits")

    @rule(max_lines=st.sampled_from((None, 300, 2, 5)))
    @guarded
    def read_index(self, max_lines: int | None) -> None:
        expected = self._expect(lambda: self.shadow.read_index(max_lines))
        args: dict[str, Any] = {} if max_lines is None else {"maxLines": max_lines}
        actual = self._call("read_index", args)
        self._check("read_index", args, expected, actual)
        self.executed("read_index")

    @rule()
    @guarded
    def index_entries(self) -> None:
        expected = self._expect(self.shadow.index_entries)
        actual = self._call("index_entries", {})
        self._check("index_entries", {}, expected, actual)
        self.executed("index_entries", f"{min(len(actual), 3)}+ entries")

    @rule(data=st.data())
    @guarded
    def topic_content(self, data: st.DataObject) -> None:
        known = sorted(self._target().topics)
        pool = st.sampled_from(S.FILENAME_POOL + S.UNSAFE_FILES)
        use_known = bool(known) and data.draw(st.booleans())
        filename = data.draw(st.sampled_from(known)) if use_known else data.draw(pool)
        expected = self._expect(lambda: self.shadow.topic_content(filename))
        actual = self._call("topic_content", {"filename": filename})
        self._check("topic_content", {"filename": filename}, expected, actual)
        self.executed("topic_content")

    @rule(seconds=st.sampled_from((3600, 86_400, 3 * 86_400, 200 * 86_400)))
    @guarded
    def advance_clock(self, seconds: int) -> None:
        self.shadow.now += seconds * 1000
        self.target.set_clock(self.shadow.now)
        self.recorder.step("advance_clock", {"seconds": seconds})
        self.recorder.clause("S-IDX-6")
        self.executed("advance_clock")

    @rule()
    @guarded
    def toggle_shared(self) -> None:
        self.shadow.shared_mode = not self.shadow.shared_mode
        text = self.shadow.config_text().encode()
        (self.root / "agent" / "memory.jsonc").write_bytes(text)
        self.recorder.put_file("agent/memory.jsonc", text)
        self.recorder.clause("S-MIGRATE-3", "S-TOMB-1")
        self.kinds = None
        self.executed("toggle_shared", "on" if self.shadow.shared_mode else "off")

    # --- a human behind the store's back --------------------------------------------------

    @rule(data=st.data(), kind=st.sampled_from(("add_line", "duplicate_line")))
    @guarded
    def tamper_index(self, data: st.DataObject, kind: str) -> None:
        """Hand edits of MEMORY.md: orphan, recap, unsafe and prose lines; duplicate entries."""
        d = self._target()
        entries = [i for i, x in enumerate(d.pieces or []) if parse(x) is not None]
        if kind == "duplicate_line" and entries and d.pieces is not None:
            line = d.pieces[data.draw(st.sampled_from(entries))]
            p = parse(line)
            assert p is not None
            new_date = data.draw(st.sampled_from((None, "2020-01-01", "2030-01-01T00:00:00+00:00")))
            if new_date is not None:
                old = first_date(p.rest)
                line = p.render(p.rest.replace(old, new_date, 1) if old else f" {new_date}{p.rest}")
            self.recorder.clause("S-IDX-4", "A-5")
        else:
            line = data.draw(st.sampled_from(S.PLANTED_LINES))
            p = parse(line)
            if p is not None and p.filename not in d.topics and data.draw(st.booleans()):
                self._put_topic(d, p.filename, Topic(None, f"planted body of {p.filename}\n"))
            self.recorder.clause("S-IDX-5", "S-RETIRE-3")
            kind = "add_line"
        pieces = ["# Memory Index", "", ""] if d.pieces is None else list(d.pieces)
        pieces.insert(data.draw(st.integers(0, len(pieces))), line)
        self._put(d, "MEMORY.md", "\n".join(pieces).encode())
        d.pieces = pieces
        self.kinds = None
        self.executed("tamper_index", kind)

    @rule(
        data=st.data(),
        kind=st.sampled_from(("delete_topic", "edit_frontmatter", "plant_topic", "plant_unsafe", "scribble")),
    )
    @guarded
    def tamper_files(self, data: st.DataObject, kind: str) -> None:
        """Hand edits of the files: deletions, frontmatter edits, planted and scribbled files."""
        d = self._target()
        if kind in ("delete_topic", "edit_frontmatter") and not d.topics:
            kind = "plant_topic"
        self.kinds = None
        if kind == "delete_topic":
            name = data.draw(st.sampled_from(sorted(d.topics)))
            os.unlink(self.root / self._rel(d) / name)
            del d.topics[name]
            self.recorder.delete_file(f"{self._rel(d)}/{name}")
        elif kind == "edit_frontmatter":
            name = data.draw(st.sampled_from(sorted(d.topics)))
            self._put_topic(d, name, self._edited(d.topics[name], data))
            self.recorder.clause("S-WRITE-7", "S-WRITE-9")
        elif kind == "plant_topic":  # unindexed, as another tool or a restored backup leaves it
            name = data.draw(st.sampled_from(("Alpha", "Zeta", "Ghost", "Hidden", "alpha beta")))
            filename = data.draw(st.sampled_from((*S.FILENAME_POOL[:4], "hidden.md", "alpha-beta.md")))
            t = Topic(("metadata:", "  node_type: memory", f"name: '{name}'"), "\nplanted needle\n")
            self._put_topic(d, filename, t)
            self.recorder.clause("S-WRITE-7")
        elif kind == "plant_unsafe":
            name = data.draw(st.sampled_from(S.UNSAFE_FILES))
            d.others[name] = b"needle in an unsafe file\nname: x\n"
            self._put(d, name, d.others[name])
            self.recorder.clause("S-FMT-7")
        else:  # arbitrary bytes: may leave the shadow's domain (then resynchronised)
            name = data.draw(st.sampled_from(sorted(d.topics) or ["scribble.md"]))
            raw = data.draw(st.one_of(st.binary(max_size=40), st.sampled_from(SCRIBBLES)))
            self._put(d, name, raw)
            try:
                d.topics[name] = Topic.from_bytes(raw)
            except Uncovered:
                self.covered = False
                kind += " (uncovered)"
        self.executed("tamper_files", kind)

    @staticmethod
    def _edited(t: Topic, data: st.DataObject) -> Topic:
        edit = data.draw(st.sampled_from(("custom", "drop_created", "rename", "strip")))
        body = t.body if t.fm is not None else t.text()
        fm = list(t.fm or ())
        if edit == "strip":
            return Topic(None, body)
        if t.fm is None:
            return Topic(("name: 'Hand Made'",), body)
        if edit == "custom":
            return Topic((*fm, "custom_key: hand edited"), body)
        if edit == "drop_created":
            return Topic(tuple(x for x in fm if not x.startswith("created:")), body)
        value = data.draw(st.sampled_from(("'Alpha'", '"Zeta One"', "Ghost", "'It's'", '"bad" json')))
        at = next((i for i, x in enumerate(fm) if x.startswith("name:")), len(fm))
        fm[at : at + 1] = [f"name: {value}"]
        return Topic(tuple(fm), body)

    def _put_topic(self, d: Dir, name: str, t: Topic) -> None:
        self._put(d, name, t.data())
        d.topics[name] = t

    # --- after every step -----------------------------------------------------------------

    @invariant()
    @guarded
    def files_match(self) -> None:
        actual = snapshot(self.root)
        if not self.covered:
            self._resync(actual)
        if self.covered:
            assert_same_files(self.shadow.files(), actual, "shadow:   ", f"{self.target.name}:",
                              "files differ from the shadow")
        leftovers = check_store(self.root / "agent/memory", ("leftovers",))
        leftovers += check_store(self.root / "home/.agents/memory", ("leftovers",))
        assert not leftovers, "; ".join(map(str, leftovers))
        assert not self.target.diagnostics(), f"unexpected diagnostics: {self.target.diagnostics()}"

    def _resync(self, files: dict[str, bytes]) -> None:
        try:
            local = dir_from_files(files, "agent/memory")
            shared = dir_from_files(files, "home/.agents/memory")
        except Uncovered:
            return
        self.shadow.local, self.shadow.shared = local, shared
        self.shadow.sentinel = "agent/memory/.shared-dir-migrated" in files
        self.covered = True

    # --- export ---------------------------------------------------------------------------

    def scenario_for(self, error: BaseException) -> dict[str, Any] | None:
        if self.covered:
            files = self.shadow.files()
            dirs = [rel for rel in ("agent/memory", "home/.agents/memory") if files.get(rel) == b"<dir>"]
            then: dict[str, Any] = {
                "files": {
                    rel: content(data) for rel, data in sorted(files.items())
                    if data != b"<dir>" and rel != "agent/memory.jsonc"
                },
            }
            if dirs:
                then["no_other_files"] = dirs
            absent = [rel for rel in ("agent/memory", "home/.agents/memory") if rel not in dirs]
            if absent:
                then["absent"] = absent
            self.recorder.then = then
        else:
            self.recorder.then = {"invariants": "all"}
            self.recorder.notes.append("The shadow had lost track of the files; only invariants are checked.")
        return super().scenario_for(error)

