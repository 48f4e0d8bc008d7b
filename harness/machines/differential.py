"""The same rules sent to the reference and to a peer, through the peer protocol.

Two drivers (``python -m memconform.reference serve`` and the peer's), two sandboxes, one sequence of
operations and file actions.  After every step the answers and the two sandboxes must agree:
results exactly and errors by kind and code, files byte for byte — after replacing each
sandbox's root by placeholders, treating lock and temporary names as volatile and comparing
``memory.jsonc`` by parsed value (``oracles.expect.normalise_files``).  The peer is
``MEMCONFORM_PI_CORE`` (or whatever ``configure_peer`` was given); without one the machine
is not run.  ``fuzz`` binds it to the named peer (``bind``); for ``python`` it would compare
the reference with itself, so it runs only when asked for by name.  A failure exports the steps with the reference's answers as expectations, so
``memconform replay`` passes on the reference and fails on the peer.
"""

from __future__ import annotations

import atexit
import json
import shutil
import time
from dataclasses import dataclass
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule

from ..drivers.peers import (
    Answer,
    Driver,
    DriverError,
    PeerSpec,
    PeerUnavailable,
    configured_peers,
    preflight,
    start_driver,
)
from ..drivers.sandbox import Sandbox, snapshot
from ..gate.profiles import ProfileError, default_profile
from ..gate.regressions import content
from ..gate.scenarios import DEFAULT_NOW_MS
from ..oracles.expect import normalise_files
from ..oracles.grammar import parse
from ..oracles.outcome_kind import KIND_OPS, SAME_DETAIL, outcome_of
from . import strategies as S
from .base import CONFIG, Machine, assert_same_files, guarded

NOW_MS = DEFAULT_NOW_MS
SCRIBBLES = (
    b"\xef\xbb\xbf# Memory Index\n\n- [A](a.md) 2026-01-01 -- bom\n",
    b"# Memory Index\r\n\r\n- [Crlf](crlf.md) 2020-01-01 [stale?] -- crlf\r\n",
    b"---\r\nname: \"Crlf\"\r\n---\r\nbody\r\n",
    b"---\n---\nno block",
    b"\xff\xfe\xc3 broken utf-8 \xe2\x82",
    b"- [U](Up.MD) 2026-01-01 -- upper extension\n",
)
STORE_DIRS = ("agent/memory", "home/.agents/memory")


@dataclass
class Side:
    """One implementation: its driver and its sandbox (kept across examples)."""

    spec: PeerSpec
    sandbox: Sandbox
    driver: Driver

    @classmethod
    def start(cls, spec: PeerSpec) -> Side:
        sandbox = Sandbox.create()
        driver = start_driver(spec, sandbox.env(), cwd=str(sandbox.root), timeout=15.0)
        return cls(spec, sandbox, driver)

    @property
    def names(self) -> dict[str, str]:
        sb = self.sandbox
        return {
            "LOCAL": str(sb.local_dir), "SHARED": str(sb.shared_dir), "AGENT": str(sb.agent_dir),
            "HOME": str(sb.home), "ROOT": str(sb.root),
        }

    def fresh(self, now_ms: int) -> None:
        """An empty sandbox and a fresh-process driver (``reset``) for a new example."""
        for sub in ("agent", "home"):
            shutil.rmtree(self.sandbox.root / sub, ignore_errors=True)
            (self.sandbox.root / sub).mkdir()
        if self.driver.proc is None or self.driver.proc.poll() is not None:
            self.driver = start_driver(self.spec, self.sandbox.env(), cwd=str(self.sandbox.root), timeout=15.0)
        elif "reset" in self.driver.ops:
            self.driver.call("reset")
        else:
            self.driver.close()
            self.driver = start_driver(self.spec, self.sandbox.env(), cwd=str(self.sandbox.root), timeout=15.0)
        self.set_clock(now_ms)

    def set_clock(self, now_ms: int) -> None:
        iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now_ms // 1000)) + f".{now_ms % 1000:03d}Z"
        answer = self.driver.call("set_clock", {"now": iso, "mode": "frozen", "tz": "UTC"})
        assert answer.ok, f"{self.spec.name}: set_clock refused: {answer.error}"

    def normalised(self, value: Any) -> Any:
        text = json.dumps(value, ensure_ascii=False)
        for key in ("LOCAL", "SHARED", "AGENT", "HOME", "ROOT"):
            text = text.replace(json.dumps(self.names[key])[1:-1], "${" + key + "}")
        return json.loads(text)

    def files(self) -> dict[str, bytes]:
        return normalise_files(snapshot(self.sandbox.root), self.names)

    def close(self) -> None:
        self.driver.close()
        self.sandbox.remove()


class _Pool:
    """Drivers persist across Hypothesis examples: starting node per example would dominate."""

    sides: ClassVar[dict[str, tuple[Side, Side]]] = {}

    @classmethod
    def pair(cls, peer: PeerSpec) -> tuple[Side, Side]:
        if peer.name not in cls.sides:
            cls.sides[peer.name] = (Side.start(PeerSpec("python")), Side.start(peer))
        return cls.sides[peer.name]

    @classmethod
    def close(cls) -> None:
        for a, b in cls.sides.values():
            a.close()
            b.close()
        cls.sides.clear()


atexit.register(_Pool.close)


def configure_peer(spec: PeerSpec | None, by_kinds: bool = False) -> None:
    """Choose the peer the machine compares the reference with (None: the environment's), and
    whether it is judged by the shared-store profile (``by_kinds``)."""
    DifferentialMachine.peer = spec
    DifferentialMachine.by_kinds = by_kinds


def bind(spec: PeerSpec, ops: frozenset[str], *, timeout: float = 15.0) -> str | None:
    """Compare the reference with ``spec`` (unsupported ops are skipped steps), by the profile
    it is judged by: under ``openpi`` result texts and files at openpi's paths; under any other
    (a driver whose hello declares shared-store) outcome kinds and the shared store only.
    OpenCode is refused: its listed deviations from the reference's bytes would each be a
    difference, and the shared_store machine judges it by the contract instead.
    """
    if spec.kind == "opencode":
        return ("compares the shared store with the reference's byte for byte, where OpenCode's listed deviations "
                "(KNOWN_DEVIATIONS.md: its append heading, its [stale?] handling) would each be a difference; the "
                "shared_store machine judges it by the contract")
    try:
        info = preflight([spec], timeout=timeout)[0]
        profile = default_profile(spec, info.hello)
    except (PeerUnavailable, DriverError, ProfileError) as e:
        return str(e).splitlines()[0] if str(e) else type(e).__name__
    # a co-writer judged by the shared-store contract: outcome kinds and the shared store only
    configure_peer(spec, by_kinds=profile != "openpi")
    return None


def current_peer() -> PeerSpec | None:
    if DifferentialMachine.peer is not None:
        return DifferentialMachine.peer
    peers = [p for p in configured_peers() if p.kind == "pi"]
    return peers[0] if peers else None


def _kind(outcome: str) -> str:
    """An outcome with the details both tools may say for one thing made the same."""
    kind, _, detail = outcome.partition(":")
    return f"{kind}:{SAME_DETAIL.get(detail, detail)}" if detail else kind


def _short(value: object) -> str:
    text = repr(value.get("result") if isinstance(value, dict) and value.get("ok") else value)
    return text if len(text) <= 120 else text[:117] + "..."


def _answer(answer: Answer) -> dict[str, Any]:
    if answer.ok:
        return {"ok": True, "result": answer.result}
    err = answer.error or {}
    return {"ok": False, "kind": err.get("kind"), "code": err.get("code")}


class DifferentialMachine(Machine):
    """Reference vs a peer over the protocol: identical answers and identical files."""

    NAME = "differential"
    CLAUSES = ("S-WRITE-12", "S-IDX-4", "S-DISP-5")
    EXAMPLES_SCALE = 1.0
    peer: ClassVar[PeerSpec | None] = None
    by_kinds: ClassVar[bool] = False
    """The shared-store profile (issue 32): a store op's outcome kind, not its text, and the
    shared store's files, not openpi's local layout; the store always shared, the readers
    (whose results are each tool's own words) and the tool's private configuration left out."""

    def __init__(self) -> None:
        super().__init__()
        spec = current_peer()
        if spec is None:
            raise RuntimeError("the differential machine needs a peer (MEMCONFORM_PI_CORE)")
        self.ref, self.other = _Pool.pair(spec)
        self.now = NOW_MS
        self.unsupported = False
        self.shared = self.by_kinds
        self.stale_days = 180
        for side in (self.ref, self.other):
            side.fresh(self.now)
        CONFIG.found_in = spec.name

    # --- plumbing -------------------------------------------------------------------------

    def executed(self, rule: str, outcome: str = "ok", *, ran: bool = True) -> None:
        if self.unsupported:
            self.unsupported, outcome, ran = False, "unsupported by a driver", False
        super().executed(rule, outcome, ran=ran)

    def _both(self, op: str, args: dict[str, Any]) -> Any:
        """Send one op to both; they must agree (results exactly, errors by kind and code)."""
        if self.by_kinds:
            return self._both_kinds(op, args)
        a = self.ref.normalised(_answer(self.ref.driver.call(op, args)))
        b = self.other.normalised(_answer(self.other.driver.call(op, args)))
        if "unsupported" in (a.get("kind"), b.get("kind")):
            self.unsupported = True  # docs/ARCHITECTURE.md §3: a driver that cannot do an op says so
            return None
        step = self.recorder.step(op, args)
        if a["ok"]:
            step["expect"] = {"result": a["result"]}
        else:
            step["expect"] = {"error": {"kind": a["kind"], **({"code": a["code"]} if a["code"] else {})}}
        if a != b:
            brief = f"reference {_short(a)} vs {self.other.spec.kind} {_short(b)}"
            raise AssertionError(
                f"{op} {json.dumps(args, ensure_ascii=False)}: {brief}\n"
                f"  reference: {a!r}\n  {self.other.spec.kind}: {b!r}"
            )
        return a.get("result")

    def _both_kinds(self, op: str, args: dict[str, Any]) -> Any:
        """The shared-store profile: a store op's outcome kinds must agree (SS-OUT-1); any
        other op is not judged (its result is the tool's own words) and not sent."""
        if op not in KIND_OPS:
            self.unsupported = True
            return None
        a, b = self.ref.driver.call(op, args), self.other.driver.call(op, args)
        if b.error is not None and b.error.get("kind") == "unsupported":
            self.unsupported = True
            return None
        ka = _kind(outcome_of("memconform-reference", op, a))
        kb = _kind(outcome_of(str(self.other.driver.hello.get("impl", "")), op, b))
        self.recorder.step(op, args)["expect"] = {"outcome": ka}
        if ka != kb:
            raise AssertionError(f"{op} {json.dumps(args, ensure_ascii=False)}: outcome kind: reference {ka} vs "
                                 f"{self.other.spec.kind} {kb} (SS-OUT-1)")
        return a.result if a.ok else None

    def _put(self, rel: str, data: bytes) -> None:
        for side in (self.ref, self.other):
            path = side.sandbox.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        self.recorder.put_file(rel, data)

    def _delete(self, rel: str) -> None:
        for side in (self.ref, self.other):
            (side.sandbox.root / rel).unlink()
        self.recorder.delete_file(rel)

    def _active(self) -> str:
        return STORE_DIRS[1] if self.shared else STORE_DIRS[0]

    def _index_lines(self) -> list[str] | None:
        path = self.ref.sandbox.root / self._active() / "MEMORY.md"
        return path.read_bytes().decode("utf-8", "replace").split("\n") if path.is_file() else None

    def _topics(self) -> list[str]:
        d = self.ref.sandbox.root / self._active()
        return sorted(p.name for p in d.iterdir() if p.is_file() and p.name.endswith(".md") and p.name != "MEMORY.md") if d.is_dir() else []

    def _config(self) -> bytes:
        return json.dumps({"stale_after_days": self.stale_days, "shared_dir": self.shared}).encode()

    # --- rules (those of the store machine, sent to both) ---------------------------------

    @initialize(stale_days=st.sampled_from((180, 0, 2)))
    @guarded
    def configure(self, stale_days: int) -> None:
        self.stale_days = 180 if self.by_kinds else stale_days  # a co-writer's configuration is its own
        for side in (self.ref, self.other):
            (side.sandbox.root / "agent/memory.jsonc").write_bytes(self._config())
        self.recorder.given_file("agent/memory.jsonc", self._config())
        self.executed("configure")

    @rule(topic=S.topics, text=S.contents, summary=S.summaries, pin=st.booleans(), mode=S.modes)
    @guarded
    def write(self, topic: str, text: str, summary: str, pin: bool, mode: dict[str, Any]) -> None:
        self._both("write_memory", {"topic": topic, "content": text, "summary": summary, "pin": pin, **mode})
        self.executed("write")

    @rule(topic=S.exotic_topics, text=S.exotic, summary=st.one_of(S.exotic, S.summaries), query=S.exotic)
    @guarded
    def exotic(self, topic: str, text: str, summary: str, query: str) -> None:
        """Characters where ECMAScript and Python defaults differ: write, then look them up."""
        self._both("write_memory", {"topic": topic, "content": text, "summary": summary})
        self._both("search", {"query": query})
        self._both("pin_memory", {"topic": query, "pin": True})
        self.executed("exotic")

    @rule(data=st.data(), text=S.contents, summary=S.summaries, pin=st.booleans(), mode=S.modes)
    @guarded
    def rewrite(self, data: st.DataObject, text: str, summary: str, pin: bool, mode: dict[str, Any]) -> None:
        names = [p.name for p in map(parse, self._index_lines() or []) if p]
        topic = data.draw(st.sampled_from(names)) if names else data.draw(S.topics)
        topic = data.draw(st.sampled_from((topic, topic.upper(), topic.lower(), topic + "!")))
        self._both("write_memory", {"topic": topic, "content": text, "summary": summary, "pin": pin, **mode})
        self.executed("rewrite")

    def _lookup(self, data: st.DataObject) -> str:
        names = [x for p in map(parse, self._index_lines() or []) if p for x in (p.name, p.filename)]
        if names and data.draw(st.integers(0, 3)) > 0:
            name = data.draw(st.sampled_from(names))
            return data.draw(st.sampled_from((name, name.upper(), name[: max(1, len(name) // 2)])))
        return data.draw(S.lookups)

    @rule(data=st.data())
    @guarded
    def remove(self, data: st.DataObject) -> None:
        self._both("remove_memory", {"topic": self._lookup(data)})
        self.executed("remove")

    @rule(data=st.data(), on=st.booleans())
    @guarded
    def pin(self, data: st.DataObject, on: bool) -> None:
        self._both("pin_memory", {"topic": self._lookup(data), "pin": on})
        self.executed("pin")

    @rule(what=st.sampled_from(("retire_recaps", "index_entries", "read_index", "read_index_2")))
    @guarded
    def read(self, what: str) -> None:
        if what == "read_index_2":
            self._both("read_index", {"maxLines": 2})
        else:
            self._both(what, {})
        self.executed("read", what)

    @rule(query=S.queries)
    @guarded
    def search(self, query: str) -> None:
        self._both("search", {"query": query})
        self.executed("search")

    @rule(data=st.data())
    @guarded
    def topic_content(self, data: st.DataObject) -> None:
        known = self._topics()
        pool = st.sampled_from(S.FILENAME_POOL + S.UNSAFE_FILES)
        use_known = bool(known) and data.draw(st.booleans())
        filename = data.draw(st.sampled_from(known)) if use_known else data.draw(pool)
        self._both("topic_content", {"filename": filename})
        self.executed("topic_content")

    @rule(seconds=st.sampled_from((3600, 86_400, 200 * 86_400)))
    @guarded
    def advance_clock(self, seconds: int) -> None:
        self.now += seconds * 1000
        for side in (self.ref, self.other):
            side.set_clock(self.now)
        self.recorder.step("advance_clock", {"seconds": seconds})
        self.executed("advance_clock")

    @rule()
    @guarded
    def toggle_shared(self) -> None:
        if self.by_kinds:  # a co-writer writes the shared store; its local one is its own
            self.executed("toggle_shared", "not judged under the shared-store profile", ran=False)
            return
        self.shared = not self.shared
        self._put("agent/memory.jsonc", self._config())
        self.executed("toggle_shared")

    @rule(data=st.data(), kind=st.sampled_from(
        ("add_line", "duplicate_line", "delete_topic", "plant_topic", "plant_unsafe", "scribble", "edit_name")
    ))
    @guarded
    def tamper(self, data: st.DataObject, kind: str) -> None:
        """The same hand edit in both sandboxes (computed from the reference's files)."""
        lines = self._index_lines()
        topics = self._topics()
        rel = self._active()
        if kind == "delete_topic" and topics:
            self._delete(f"{rel}/{data.draw(st.sampled_from(topics))}")
        elif kind == "plant_topic":
            name = data.draw(st.sampled_from(("alpha.md", "zeta.md", "ghost.md", "alpha-2.md")))
            topic = data.draw(st.sampled_from(("Alpha", "Zeta", "Ghost")))
            self._put(f"{rel}/{name}", f"---\nname: '{topic}'\n---\nplanted needle\n".encode())
        elif kind == "plant_unsafe":
            self._put(f"{rel}/{data.draw(st.sampled_from(S.UNSAFE_FILES))}", b"needle unsafe\n")
        elif kind == "scribble":  # arbitrary bytes: decoding, CR, BOM, frontmatter variants
            target = data.draw(st.sampled_from([*topics, "MEMORY.md", "scribble.md"]))
            raw = data.draw(st.one_of(st.binary(max_size=60), st.sampled_from(SCRIBBLES)))
            self._put(f"{rel}/{target}", raw)
        elif kind == "edit_name":  # S-WRITE-7 probes the frontmatter name of unindexed files
            name = data.draw(st.sampled_from(("alpha.md", "zeta-one.md", "alpha-2.md")))
            value = data.draw(st.sampled_from(S.NAME_VALUES))
            sep = data.draw(st.sampled_from(("\n", "\r\n", "\r")))
            text = f"---{sep}x: 1{sep}name: {value}{sep}Zeta{sep}---{sep}body{sep}"
            self._put(f"{rel}/{name}", text.encode())
        else:
            pieces = ["# Memory Index", "", ""] if lines is None else list(lines)
            entries = [x for x in pieces if parse(x) is not None]
            if kind == "duplicate_line" and entries:
                line = data.draw(st.sampled_from(entries))
            else:
                line = data.draw(st.sampled_from(S.PLANTED_LINES))
                kind = "add_line"
            pieces.insert(data.draw(st.integers(0, len(pieces))), line)
            self._put(f"{rel}/MEMORY.md", "\n".join(pieces).encode())
        self.executed("tamper", kind)

    # --- after every step -----------------------------------------------------------------

    @invariant()
    @guarded
    def same_files(self) -> None:
        if self.by_kinds:  # the shared store only: a co-writer's private files are its own (SS-LAYOUT-1)
            shared = STORE_DIRS[1] + "/"
            assert_same_files({k: v for k, v in self.ref.files().items() if k.startswith(shared)},
                              {k: v for k, v in self.other.files().items() if k.startswith(shared)},
                              "reference:", f"{self.other.spec.kind}:", "shared stores differ")
            return
        assert_same_files(self.ref.files(), self.other.files(), "reference:", f"{self.other.spec.kind}:")

    def scenario_for(self, error: BaseException) -> dict[str, Any] | None:
        files = self.ref.files()
        dirs = [d for d in STORE_DIRS if files.get(d) == b"<dir>"]
        self.recorder.then = {
            "files": {
                rel: content(data) for rel, data in sorted(files.items())
                if rel.startswith(tuple(d + "/" for d in STORE_DIRS)) and data != b"<dir>" and not rel.endswith("/.lock")
            },
            **({"no_other_files": dirs} if dirs else {}),
        }
        return super().scenario_for(error)

