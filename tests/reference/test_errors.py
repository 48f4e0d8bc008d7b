"""S-ERR-1..8: refusals, argument conversions, raised errors and their triples, diagnostics.

S-ERR-8's handoff messages are covered in the handoff tests; here: remove/pin/search and
decideCompactionAction TypeErrors.  Expected texts were checked against memory-core.mjs 0.3.9.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable

import pytest

from memconform.reference.compaction import decide_compaction_action
from memconform.reference.config import Rules, render_rules_to_markdown
from memconform.reference.errors import AggregateJsError, JsError, JsTypeError, NodeError, describe
from memconform.reference.store import Store
from memconform.reference.text import UNDEFINED
from tests.conftest import StoreEnv
from tests.support import BUSY, IDX, TS, FaultFs, ends, hold_lock, is_tmp_of, store_with

BLANK = "Invalid topic: topic must not be blank."
LINK = "Invalid topic: topic must not contain newlines or Markdown link characters."
NO_SLUG = "Invalid topic: topic must contain at least one ASCII letter or number."
RECAP = (
    'Reserved topic: "last-session-recap" has been retired. Persist durable facts as their own '
    "topics; automatic session orientation is managed in HANDOFF.md."
)
RESERVED_INDEX = 'Invalid topic: "MEMORY.md" is reserved for the memory index.'
TMP = re.compile(r"\.tmp-\d+-[0-9a-z]+$")


def faulty(env: StoreEnv) -> tuple[Store, FaultFs]:
    fs = FaultFs()
    return store_with(env, fs), fs


def seeded(env: StoreEnv) -> None:
    """A local store with a few entries (recent dates, so maintenance changes nothing)."""
    env.config("{}")
    for name in ("zeta-one", "zeta-two", "keep", "t"):
        env.put(f"agent/memory/{name}.md", f"---\nname: {name}\n---\nbody\n")
    env.put(
        IDX,
        "# Memory Index\n\n"
        "- [Zeta One](zeta-one.md) 2026-08-01 -- one\n"
        "- [Zeta Two](zeta-two.md) 2026-08-01 -- two\n"
        "- [K](keep.md) [pin] 2026-08-01 -- pinned\n"
        "- [T](t.md) 2026-08-01 -- t\n",
    )


def no_debris(env: StoreEnv) -> None:
    names = [rel for rel in env.snapshot() if rel.startswith(("agent/", "home/"))]
    assert not [n for n in names if TMP.search(n) or n.endswith("/.lock")]


MUTATIONS: dict[str, Callable[[Store], object]] = {
    "write": lambda s: s.execute_write_memory("T", "c", "s"),
    "remove": lambda s: s.execute_remove_memory("T"),
    "pin": lambda s: s.execute_pin_memory("T", True),
}


def raised_by(
    env: StoreEnv, error: type[Exception], ops: tuple[str, ...] = ("write", "remove", "pin")
) -> list[dict[str, object]]:
    """The triple each of ``ops`` on topic "T" raises, in order (each must raise ``error``)."""
    got: list[dict[str, object]] = []
    for op in ops:
        with pytest.raises(error) as info:
            MUTATIONS[op](env.store)
        got.append(describe(info.value))
    return got


# --- S-ERR-1 refusal table -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("topic", "expected"),
    [
        ("", BLANK),
        ("   ", BLANK),
        ("\ufeff\u3000", BLANK),
        (None, BLANK),
        (5, BLANK),
        (UNDEFINED, BLANK),
        (["T"], BLANK),
        ("Bad\nTopic", LINK),
        ("Bad\rTopic", LINK),
        ("Bad]Topic", LINK),
        ("Bad[Topic", LINK),
        ("Bad(Topic", LINK),
        ("Bad)Topic", LINK),
        ("Memory[", LINK),
        ("你好", NO_SLUG),
        ("!!!", NO_SLUG),
        ("_", NO_SLUG),
        ("Last Session Recap", RECAP),
        ("LAST-SESSION-RECAP", RECAP),
        ("  last session   recap ", RECAP),
        ("Memory", RESERVED_INDEX),
        (" MEMORY! ", RESERVED_INDEX),
    ],
)
def test_s_err_1_write_validation_before_any_access(
    env: StoreEnv, topic: object, expected: str
) -> None:
    store, fs = faulty(env)
    before = env.snapshot()
    assert store.execute_write_memory(topic, "content", "summary") == expected
    assert fs.calls == []
    assert env.snapshot() == before


def test_s_err_1_non_regular_target(env: StoreEnv) -> None:
    seeded(env)
    os.unlink(os.path.join(env.local, "t.md"))
    os.mkdir(os.path.join(env.local, "t.md"))
    before = env.snapshot()
    store, fs = faulty(env)
    assert (
        store.execute_write_memory("T", "c", "s") == 'Invalid topic: "t.md" is not a regular file.'
    )
    assert env.snapshot() == before
    assert ("open", os.path.join(env.local, ".lock")) in fs.paths()  # lock taken and released


def test_s_err_1_busy_for_write_remove_pin(env: StoreEnv) -> None:
    seeded(env)
    hold_lock(env.local)
    before = env.snapshot()
    start = time.monotonic()
    assert env.store.execute_write_memory("New", "c", "s") == BUSY
    assert env.store.execute_remove_memory("T") == BUSY
    assert env.store.execute_pin_memory("T", True) == BUSY
    assert 1.2 < time.monotonic() - start < 10.0
    assert env.snapshot() == before


@pytest.mark.parametrize("op", ["remove", "pin"])
def test_s_err_1_no_index_creates_the_directory(env: StoreEnv, op: str) -> None:
    env.config("{}")
    if op == "remove":
        assert env.store.execute_remove_memory("x") == "No memory index found."
    else:
        assert env.store.execute_pin_memory("x", True) == "No memory index found."
    assert os.listdir(env.local) == []


def test_s_err_1_lookup_and_state_refusals(env: StoreEnv) -> None:
    seeded(env)
    before = env.snapshot()
    s = env.store
    assert s.execute_remove_memory("Does Not Exist") == 'No entry found matching "Does Not Exist".'
    assert s.execute_pin_memory("Does Not Exist", True) == (
        'No entry found matching "Does Not Exist".'
    )
    ambiguous = 'Multiple entries match "zeta", be more specific: Zeta One, Zeta Two'
    assert s.execute_remove_memory("zeta") == ambiguous
    assert s.execute_pin_memory("zeta", True) == ambiguous
    assert s.execute_remove_memory("KEEP.md") == (
        'Cannot remove "K" — it is pinned. Unpin it first with: /memory unpin KEEP.md'
    )
    assert s.execute_pin_memory("k", True) == '"K" is already pinned.'
    assert s.execute_pin_memory("Zeta One", False) == '"Zeta One" is already unpinned.'
    assert env.snapshot() == before


# --- S-ERR-2 unusual argument types ---------------------------------------------------------


@pytest.mark.parametrize(
    ("summary", "content", "description", "body"),
    [
        (5, [1, [2, 3]], "5", "1,2,3"),
        (None, {}, "null", "[object Object]"),
        (UNDEFINED, UNDEFINED, "undefined", "undefined"),
        (True, None, "true", "null"),
        ([1, None], 2.5, "1,", "2.5"),
        ({"a": 1}, -0.0, "[object Object]", "0"),
        (1e21, True, "1e+21", "true"),
    ],
)
def test_s_err_2_summary_and_content_to_string(
    env: StoreEnv, summary: object, content: object, description: str, body: str
) -> None:
    env.config("{}")
    assert (
        env.store.execute_write_memory("T", content, summary) == 'Created memory topic "T" (t.md).'
    )
    assert env.read("agent/memory/t.md") == (
        f'---\nmetadata:\n  node_type: memory\nname: "T"\ndescription: "{description}"\n'
        f"last_updated: {TS}\ncreated: {TS}\n---\n\n{body}\n"
    )
    assert env.read(IDX) == f"# Memory Index\n\n\n- [T](t.md) {TS} -- {description}"


def test_s_err_2_mode_overwrite_and_pin_conversions(env: StoreEnv) -> None:
    env.config("{}")
    s = env.store
    s.execute_write_memory("M", "one", "s")
    s.execute_write_memory("M", "two", "s", mode="bogus")
    s.execute_write_memory("M", "three", "s", overwrite="yes")
    s.execute_write_memory("M", "four", "s", mode="REPLACE")
    day = "\n\n## 2026-08-07\n\n"
    assert env.read("agent/memory/m.md").split("\n---\n", 1)[1] == (
        f"\none{day}two{day}three{day}four\n"
    )
    s.execute_write_memory("M", "five", "s", overwrite=True)
    assert env.read("agent/memory/m.md").split("\n---\n", 1)[1] == "\nfive\n"
    s.execute_write_memory("P", "p", "s", pin="yes")
    s.execute_write_memory("Q", "q", "s", pin=0)
    assert env.read(IDX).split("\n")[-2:] == [
        f"- [P](p.md) [pin] {TS} -- s",
        f"- [Q](q.md) {TS} -- s",
    ]


def test_s_err_2_pin_memory_non_boolean_pin(env: StoreEnv) -> None:
    env.config("{}")
    s = env.store
    s.execute_write_memory("P", "p", "s", pin=True)
    s.execute_write_memory("Q", "q", "s")
    p0 = f"- [P](p.md) [pin] {TS} -- s"
    p2 = f"- [P](p.md) [pin] [pin] {TS} -- s"
    q0 = f"- [Q](q.md) {TS} -- s"
    q1 = f"- [Q](q.md) [pin] {TS} -- s"
    assert s.execute_pin_memory("P", "yes") == f'Pinned "P".\nBefore: {p0}\n After: {p2}'
    assert s.execute_pin_memory("Q", 1) == f'Pinned "Q".\nBefore: {q0}\n After: {q1}'
    assert s.execute_pin_memory("P", 0) == f'Unpinned "P".\nBefore: {p2}\n After: {p0}'
    assert s.execute_pin_memory("Q", None) == f'Unpinned "Q".\nBefore: {q1}\n After: {q0}'
    assert s.execute_pin_memory("Q") == f'Unpinned "Q".\nBefore: {q0}\n After: {q0}'


def test_s_err_2_empty_topic_matches_every_entry(env: StoreEnv) -> None:
    env.config("{}")
    env.put("agent/memory/a.md", "x")
    env.put(IDX, "# Memory Index\n\n- [Only](a.md) 2026-08-01 -- s\n")
    assert env.store.execute_pin_memory("", True) == (
        'Pinned "Only".\nBefore: - [Only](a.md) 2026-08-01 -- s\n'
        " After: - [Only](a.md) [pin] 2026-08-01 -- s"
    )
    env.put("agent/memory/b.md", "x")
    env.put(
        IDX, "# Memory Index\n\n- [Only](a.md) 2026-08-01 -- s\n- [Two](b.md) 2026-08-01 -- s\n"
    )
    assert env.store.execute_remove_memory("") == (
        'Multiple entries match "", be more specific: Only, Two'
    )


def test_s_err_2_read_topic_content_and_search_non_strings(env: StoreEnv) -> None:
    seeded(env)
    assert env.store.read_topic_content(5) == "_(file not found)_"
    assert env.store.read_topic_content(None) == "_(file not found)_"
    with pytest.raises(JsTypeError):
        env.store.search_memory(5)


# --- S-ERR-3 raised errors ---------------------------------------------------------------------


def test_s_err_3_fifo_index_raises_promptly(env: StoreEnv) -> None:
    env.config("{}")
    os.makedirs(env.local)
    os.mkfifo(os.path.join(env.local, "MEMORY.md"))
    before = env.snapshot()
    start = time.monotonic()
    unsafe = {"kind": "Error", "message": f"Unsafe non-regular file: {env.local}/MEMORY.md"}
    assert raised_by(env, JsError) == [unsafe] * 3
    assert time.monotonic() - start < 3.0
    assert env.snapshot() == before


def test_s_err_3_enospc_in_topic_write_propagates_after_rollback(env: StoreEnv) -> None:
    seeded(env)
    before = env.snapshot()
    store, fs = faulty(env)
    fs.fail("write", match=is_tmp_of("/new.md"), err=errno.ENOSPC)
    with pytest.raises(NodeError) as info:
        store.execute_write_memory("New", "c", "s")
    assert describe(info.value) == {
        "kind": "Error",
        "message": "ENOSPC: no space left on device, write",
        "code": "ENOSPC",
    }
    assert env.snapshot() == before


def test_s_err_3_index_rename_failure_rolls_back(env: StoreEnv) -> None:
    seeded(env)
    before = env.snapshot()
    store, fs = faulty(env)
    fs.fail("rename", match=ends("/MEMORY.md"), err=errno.EACCES)
    with pytest.raises(NodeError) as info:
        store.execute_write_memory("T", "new body", "new summary")
    err = describe(info.value)
    assert err["code"] == "EACCES"
    assert re.fullmatch(
        rf"EACCES: permission denied, rename '{re.escape(env.local)}/MEMORY\.md\.tmp-\d+-[0-9a-z]+'"
        rf" -> '{re.escape(env.local)}/MEMORY\.md'",
        str(err["message"]),
    )
    assert env.snapshot() == before  # topic restored byte for byte, no temporaries, no lock


def test_s_err_3_aggregate_rollback_error(env: StoreEnv) -> None:
    seeded(env)
    store, fs = faulty(env)
    fs.fail("rename", match=ends("/MEMORY.md"), err=errno.EIO)
    fs.fail("unlink", match=ends("/new.md"), err=errno.EBUSY)
    with pytest.raises(AggregateJsError) as info:
        store.execute_write_memory("New", "c", "s")
    topic, index = f"{env.local}/new.md", f"{env.local}/MEMORY.md"
    got = describe(info.value)
    assert got["kind"] == "AggregateError"
    assert got["message"] == f"Memory update and rollback failed; inspect {topic} and {index}."
    assert "code" not in got
    errors = got["errors"]
    assert isinstance(errors, list) and [e["code"] for e in errors] == ["EIO", "EBUSY"]
    assert errors[1]["message"] == f"EBUSY: resource busy or locked, unlink '{topic}'"
    assert not env.exists("agent/memory/.lock")


def test_s_err_3_lock_creation_failure_propagates(env: StoreEnv) -> None:
    seeded(env)
    store, fs = faulty(env)
    lock = f"{env.local}/.lock"
    fs.fail("open", match=lambda p: p == lock, err=errno.ENOENT)
    before = env.snapshot()
    with pytest.raises(NodeError) as info:
        store.execute_remove_memory("T")
    assert describe(info.value) == {
        "kind": "Error",
        "message": f"ENOENT: no such file or directory, open '{lock}'",
        "code": "ENOENT",
    }
    assert env.snapshot() == before


def test_s_err_3_never_raising_operations(env: StoreEnv) -> None:
    env.config("{}")
    env.put(IDX, "- [R](last-session-recap.md) 2026-08-01 -- r\n")
    store, fs = faulty(env)
    fs.fail("open", match=ends("/MEMORY.md"), nth={1, 2}, err=errno.EIO)
    fs.fail("open", match=ends("/memory.jsonc"), err=errno.EMFILE)
    assert store.parse_rules() == Rules()
    store.retire_recap_entries()  # returns nothing, raises nothing
    assert store.read_memory_index(300) is None
    index = f"{env.local}/MEMORY.md"
    assert env.diagnostics == [
        f"[openpi-memory] memory.jsonc parse failed, using defaults: EMFILE: too many open files, "
        f"open '{env.agent}/memory.jsonc'",
        "[openpi-memory] failed to retire last-session-recap index entries: EIO: i/o error, "
        f"open '{index}'",
        f"[openpi-memory] failed to read MEMORY.md: EIO: i/o error, open '{index}'",
    ]


# --- S-ERR-4 degraded reads ----------------------------------------------------------------------


def test_s_err_4_degraded_reads(env: StoreEnv) -> None:
    os.mkfifo(os.path.join(env.agent, "memory.jsonc"))
    start = time.monotonic()
    assert env.store.parse_rules() == Rules()
    assert time.monotonic() - start < 2.0
    os.unlink(os.path.join(env.agent, "memory.jsonc"))
    env.config("{}")
    assert env.store.read_memory_index(300) == "# Memory Index\n\n"
    assert env.store.read_index_entries() == []
    assert env.store.read_topic_content("nope.md") == "_(file not found)_"
    assert env.store.read_handoff() == ""
    os.makedirs(os.path.join(env.local, "MEMORY.md"))
    assert env.store.read_memory_index(300) is None
    assert env.store.read_index_entries() == []


# --- S-ERR-5 diagnostics ---------------------------------------------------------------------


def test_s_err_5_one_stderr_line_per_diagnostic(env: StoreEnv) -> None:
    env.config("null")
    env.put("agent/memory/MEMORY.md", "x")
    os.makedirs(os.path.join(env.shared, "MEMORY.md"))
    code = (
        "import sys\nfrom reference.store import Store\nfrom reference.session import Session\n"
        "s = Store()\ns.parse_rules(); s.parse_rules(); s.read_memory_index(300)\n"
        "s.retire_recap_entries()\n"
        "Session(s).session_before_compact({'reason': 'threshold', "
        "'preparation': {'messagesToSummarize': []}})\n"
        "print('done')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env.sandbox.env(),
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.stdout == "done\n"
    assert out.stderr.splitlines() == [
        "[openpi-memory] memory.jsonc parse failed, using defaults: Cannot read properties of "
        "null (reading 'always_persist')",
        "[openpi-memory] failed to retire last-session-recap index entries: Unsafe non-regular "
        f"file: {env.shared}/MEMORY.md",
        "[openpi-memory] compaction produced no handoff (no assistant text survived filtering)",
    ]


def test_s_err_5_parse_failure_deduplicated_per_message(env: StoreEnv) -> None:
    s = env.store
    env.config("{")
    s.parse_rules()
    s.parse_rules()
    env.config("{}")
    s.parse_rules()  # a success does not reset the memory
    env.config("{")
    s.parse_rules()
    env.config("null")
    s.parse_rules()
    env.config("{")
    s.parse_rules()
    prefix = "[openpi-memory] memory.jsonc parse failed, using defaults: "
    assert env.diagnostics == [
        prefix + "Expected property name or '}' in JSON at position 1",
        prefix + "Cannot read properties of null (reading 'always_persist')",
        prefix + "Expected property name or '}' in JSON at position 1",
    ]
    # a fresh process forgets (S-INV-10)
    env.new_store().parse_rules()
    assert len(env.diagnostics) == 4


def test_s_err_5_contexts(env: StoreEnv) -> None:
    env.config("{}")
    os.makedirs(env.local)
    os.mkfifo(os.path.join(env.local, "MEMORY.md"))
    env.store.read_memory_index(300)
    os.unlink(os.path.join(env.local, "MEMORY.md"))
    env.put(IDX, "- [R](last-session-recap.md) 2026-08-01 -- r\n")
    hold_lock(env.local)
    env.store.retire_recap_entries()
    os.unlink(os.path.join(env.local, ".lock"))
    # carry-over that cannot terminate normally is reported and leaves no sentinel
    env.config('{"shared_dir": true}')
    env.put(IDX, "- [U](Up.MD) 2026-08-01 -- u\n")
    env.put("agent/memory/Up.MD", "local\n")
    env.put("home/.agents/memory/Up.MD", "foreign\n")
    assert env.store.get_memory_dir() == env.shared
    assert env.diagnostics[:2] == [
        "[openpi-memory] refusing to read unsafe MEMORY.md: not a regular file",
        f"[openpi-memory] recap cleanup deferred: {BUSY}",
    ]
    assert len(env.diagnostics) == 3
    assert env.diagnostics[2].startswith("[openpi-memory] shared_dir carry-over failed: ")
    assert not env.exists("agent/memory/.shared-dir-migrated")
    no_debris(env)


# --- S-ERR-6 inert malformed content ---------------------------------------------------------


def test_s_err_6_malformed_index_lines_preserved(env: StoreEnv) -> None:
    env.config('{"unknown_key": 1, "always_persist": "not an array", "never_persist": {}}')
    lines = [
        "# Memory Index",
        "",
        "- [Hidden](.hidden.md) 2020-01-01 -- x",
        "- [Up](../up.md) 2020-01-01 -- x",
        "- [Index](MEMORY.md) 2020-01-01 -- x",
        "- [Bracket [x]](bad.md) 2020-01-01 -- x",
        "* [Star](star.md) 2020-01-01 -- x",
        "prose line",
    ]
    env.put("agent/memory/odd.md", "x")
    env.put(IDX, "\n".join([*lines, "- [Odd](odd.md) 2026-13-45 -- bad date"]))
    rules = env.store.parse_rules()
    assert (rules.always_persist, rules.never_persist) == ([], [])
    assert render_rules_to_markdown(rules) == ""
    assert env.store.execute_write_memory("New", "c", "s") == 'Created memory topic "New" (new.md).'
    assert env.read(IDX) == "\n".join(
        [*lines, "- [Odd](odd.md) 2026-13-45 -- bad date", f"- [New](new.md) {TS} -- s"]
    )
    assert [e.filename for e in env.store.read_index_entries()] == ["odd.md", "new.md"]


def test_s_err_6_unsafe_removal_list_lines_ignored_and_dropped(env: StoreEnv) -> None:
    env.shared_mode()
    env.put("agent/memory/.shared-dir-migrated", "")
    env.put("home/.agents/memory/x.md", "x")
    env.put("home/.agents/memory/MEMORY.md", "# Memory Index\n\n- [X](x.md) 2026-08-01 -- x\n")
    env.put("home/.agents/memory/.ocl-removed", "../evil.md\n.hidden.md\nok.md\r\n\nMEMORY.md\n")
    assert env.store.execute_remove_memory("X").startswith('Removed "X"')
    assert env.read("home/.agents/memory/.ocl-removed") == "x.md\n"


# --- S-ERR-7 errno messages ------------------------------------------------------------------


def test_s_err_7_memory_dir_replaced_by_file(env: StoreEnv) -> None:
    env.config("{}")
    env.put("agent/memory", "a regular file")
    before = env.snapshot()
    expected = {
        "kind": "Error",
        "message": f"EEXIST: file already exists, mkdir '{env.agent}/memory'",
        "code": "EEXIST",
    }
    assert raised_by(env, NodeError) == [expected] * 3
    with pytest.raises(NodeError) as info:
        env.store.search_memory("x")
    assert describe(info.value) == {
        "kind": "Error",
        "message": f"ENOTDIR: not a directory, scandir '{env.agent}/memory'",
        "code": "ENOTDIR",
    }
    assert env.snapshot() == before


def test_s_err_7_symlinked_index_eloop(env: StoreEnv) -> None:
    env.config("{}")
    env.put("agent/memory/real.md", "# Memory Index\n\n")
    os.symlink(os.path.join(env.local, "real.md"), os.path.join(env.local, "MEMORY.md"))
    before = env.snapshot()
    expected = {
        "kind": "Error",
        "message": f"ELOOP: too many symbolic links encountered, open '{env.local}/MEMORY.md'",
        "code": "ELOOP",
    }
    assert raised_by(env, NodeError) == [expected] * 3
    assert env.snapshot() == before


def test_s_err_7_agent_dir_is_a_file_enotdir(env: StoreEnv) -> None:
    os.rmdir(env.agent)
    with open(env.agent, "w") as f:
        f.write("file")
    with pytest.raises(NodeError) as info:
        env.store.execute_write_memory("T", "c", "s")
    assert describe(info.value) == {
        "kind": "Error",
        "message": f"ENOTDIR: not a directory, mkdir '{env.agent}/memory'",
        "code": "ENOTDIR",
    }
    assert env.diagnostics == [
        "[openpi-memory] memory.jsonc parse failed, using defaults: EEXIST: file already exists, "
        f"mkdir '{env.agent}'"
    ]


def test_s_err_7_real_rename_failure_two_paths(env: StoreEnv) -> None:
    seeded(env)
    store, fs = faulty(env)
    index = f"{env.local}/MEMORY.md"

    def index_becomes_directory(_: str) -> None:
        os.rename(index, index + ".saved")
        os.makedirs(index + "/inside")

    fs.hook("rename", run=index_becomes_directory, match=lambda p: p == index)
    with pytest.raises(NodeError) as info:
        store.execute_write_memory("New", "c", "s")
    got = describe(info.value)
    assert got["code"] == "EISDIR"  # Linux: renaming a file over a directory
    assert re.fullmatch(
        r"EISDIR: illegal operation on a directory, rename "
        rf"'{re.escape(index)}\.tmp-\d+-[0-9a-z]+' -> '{re.escape(index)}'",
        str(got["message"]),
    )
    assert not env.exists("agent/memory/new.md")  # the new topic was rolled back


def test_s_err_7_descriptor_calls_have_no_path(env: StoreEnv) -> None:
    seeded(env)
    store, fs = faulty(env)
    fs.fail("write", match=is_tmp_of("/MEMORY.md"), err=errno.EIO)
    with pytest.raises(NodeError) as info:
        store.execute_remove_memory("T")
    assert describe(info.value) == {
        "kind": "Error",
        "message": "EIO: i/o error, write",
        "code": "EIO",
    }


def test_s_err_7_index_is_a_directory_is_a_safety_refusal(env: StoreEnv) -> None:
    env.config("{}")
    os.makedirs(os.path.join(env.local, "MEMORY.md"))
    unsafe = {"kind": "Error", "message": f"Unsafe non-regular file: {env.local}/MEMORY.md"}
    assert raised_by(env, JsError, ("write", "remove")) == [unsafe] * 2
    assert sorted(os.listdir(env.local)) == ["MEMORY.md"]


# --- S-ERR-8 TypeErrors (remove/pin/search/decideCompactionAction) ---------------------------

TOPIC_ERRORS: list[tuple[object, str]] = [
    (UNDEFINED, "Cannot read properties of undefined (reading 'toLowerCase')"),
    (None, "Cannot read properties of null (reading 'toLowerCase')"),
    (5, "search.toLowerCase is not a function"),
    ([], "search.toLowerCase is not a function"),
    ({}, "search.toLowerCase is not a function"),
    (True, "search.toLowerCase is not a function"),
]


@pytest.mark.parametrize(("topic", "message"), TOPIC_ERRORS)
@pytest.mark.parametrize("op", ["remove", "pin"])
def test_s_err_8_remove_pin_non_string_topic(
    env: StoreEnv, op: str, topic: object, message: str
) -> None:
    seeded(env)
    store, fs = faulty(env)
    before = env.snapshot()
    with pytest.raises(JsTypeError) as info:
        if op == "remove":
            store.execute_remove_memory(topic)
        else:
            store.execute_pin_memory(topic, True)
    assert describe(info.value) == {"kind": "TypeError", "message": message}
    assert env.snapshot() == before
    lock = f"{env.local}/.lock"
    assert ("open", lock) in fs.paths() and ("unlink", lock) in fs.paths()  # taken and released


@pytest.mark.parametrize(("topic", "_message"), TOPIC_ERRORS)
def test_s_err_8_without_index_no_type_error(env: StoreEnv, topic: object, _message: str) -> None:
    env.config("{}")
    assert env.store.execute_remove_memory(topic) == "No memory index found."
    assert env.store.execute_pin_memory(topic, True) == "No memory index found."
    assert os.listdir(env.local) == []


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (UNDEFINED, "Cannot read properties of undefined (reading 'toLowerCase')"),
        (None, "Cannot read properties of null (reading 'toLowerCase')"),
        (0, "query.toLowerCase is not a function"),
        (["x"], "query.toLowerCase is not a function"),
        ({"q": 1}, "query.toLowerCase is not a function"),
        (False, "query.toLowerCase is not a function"),
    ],
)
def test_s_err_8_search_non_string_query(env: StoreEnv, query: object, message: str) -> None:
    seeded(env)
    before = env.snapshot()
    with pytest.raises(JsTypeError) as info:
        env.store.search_memory(query)
    assert describe(info.value) == {"kind": "TypeError", "message": message}
    assert env.snapshot() == before


@pytest.mark.parametrize(
    ("handoff", "outcome"),
    [
        (5, "handoffText.toLowerCase is not a function"),
        (True, "handoffText.toLowerCase is not a function"),
        ([1], "handoffText.toLowerCase is not a function"),
        ([], "handoffText.toLowerCase is not a function"),
        ({}, "handoffText.toLowerCase is not a function"),
        (0, "none"),
        (False, "none"),
        ("", "none"),
        (None, "none"),
        (UNDEFINED, "none"),
        ("pending x", "continue"),
    ],
)
def test_s_err_8_decide_compaction_non_string_handoff(handoff: object, outcome: str) -> None:
    rules = Rules()
    if outcome in ("none", "continue"):
        assert decide_compaction_action(rules, handoff) == {"action": outcome}
    else:
        with pytest.raises(JsTypeError) as info:
            decide_compaction_action(rules, handoff)
        assert describe(info.value) == {"kind": "TypeError", "message": outcome}
    # either switch short-circuits before the handoff is looked at
    consolidate = dataclasses.replace(rules, consolidate_on_compact=True)
    resume = dataclasses.replace(rules, auto_resume_after_threshold=True)
    assert decide_compaction_action(consolidate, handoff) == {"action": "consolidate"}
    assert decide_compaction_action(resume, handoff) == {"action": "continue"}
