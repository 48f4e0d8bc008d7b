"""``write_memory`` (S-WRITE-1..16) and the Appendix items it exposes (A-10, B-4, B-5, B-9,
B-15, B-18, B-19).

Every expected string and file below was checked against the JS core 0.3.9 with the same
frozen clock and zone.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from pathlib import Path

import pytest

from memconform.reference.clock import ControlledClock
from memconform.reference.errors import AggregateJsError, JsError, NodeError
from memconform.reference.fs import Fs
from memconform.reference.lock import LOCK_BUSY_MESSAGE
from memconform.reference.text import UNDEFINED
from tests.conftest import NOW_MS, StoreEnv, set_tz
from tests.support import LOCAL, SHARED, TS, FaultFs, RecordingFs, ends, store_with

DAY = "2026-08-07"

BLANK = "Invalid topic: topic must not be blank."
LINK = "Invalid topic: topic must not contain newlines or Markdown link characters."
NO_SLUG = "Invalid topic: topic must contain at least one ASCII letter or number."
RESERVED = (
    'Reserved topic: "last-session-recap" has been retired. Persist durable facts as their own '
    "topics; automatic session orientation is managed in HANDOFF.md."
)
INDEX_RESERVED = 'Invalid topic: "MEMORY.md" is reserved for the memory index.'


# --- helpers ---------------------------------------------------------------------------


def new_topic(name_json: str, desc_json: str, body: str, ts: str = TS) -> str:
    """The bytes of a freshly created topic file (S-FMT-9)."""
    return (
        f"---\nmetadata:\n  node_type: memory\nname: {name_json}\ndescription: {desc_json}\n"
        f"last_updated: {ts}\ncreated: {ts}\n---\n\n{body}\n"
    )


def raw(env: StoreEnv, rel: str) -> bytes:
    return env.sandbox.path(rel).read_bytes()


def temporaries(env: StoreEnv) -> list[str]:
    return [p for p in env.snapshot() if ".tmp-" in p]


# --- S-WRITE-1 inputs and output -------------------------------------------------------


def test_s_write_1_defaults_pin_false_mode_append_and_absent_values(env: StoreEnv) -> None:
    store = env.store
    assert store.execute_write_memory(topic="T") == 'Created memory topic "T" (t.md).'
    assert raw(env, LOCAL + "t.md") == new_topic('"T"', '"undefined"', "undefined").encode()
    assert raw(env, LOCAL + "MEMORY.md") == (
        f"# Memory Index\n\n\n- [T](t.md) {TS} -- undefined".encode()
    )
    # default mode appends, default pin keeps the line unpinned
    assert store.execute_write_memory(topic="T", content="two", summary="s") == (
        'Updated memory topic "T" (t.md).'
    )
    body = env.read(LOCAL + "t.md").split("\n---\n", 1)[1]
    assert body == f"\nundefined\n\n## {DAY}\n\ntwo\n"
    assert env.read(LOCAL + "MEMORY.md").endswith(f"- [T](t.md) {TS} -- s")


def test_s_write_1_overwrite_accepted_outside_schema(env: StoreEnv) -> None:
    env.store.execute_write_memory(topic="O", content="a", summary="s")
    out = env.store.execute_write_memory(topic="O", content="b", summary="s", overwrite=True)
    assert out == 'Updated memory topic "O" (o.md).'
    assert env.read(LOCAL + "o.md").endswith("---\n\nb\n")


# --- S-WRITE-2 validation --------------------------------------------------------------

INVALID_TOPICS: list[tuple[object, str]] = [
    ("", BLANK),
    ("   ", BLANK),
    ("\ufeff\u3000\u00a0", BLANK),
    (UNDEFINED, BLANK),
    (None, BLANK),
    (5, BLANK),
    (True, BLANK),
    (["a"], BLANK),
    ({"topic": "a"}, BLANK),
    ("Bad\nTopic", LINK),
    ("Bad\rTopic", LINK),
    ("Bad]Topic", LINK),
    ("Bad[Topic", LINK),
    ("Bad(Topic", LINK),
    ("Bad)Topic", LINK),
    ("你好[", LINK),  # step 2 before step 3
    (" ] ", LINK),
    ("你好", NO_SLUG),
    ("_", NO_SLUG),
    ("!!!", NO_SLUG),
    ("\u0085", NO_SLUG),  # U+0085 is not whitespace: not blank, but no slug
    ("Last Session Recap", RESERVED),
    ("LAST-SESSION-RECAP", RESERVED),
    ("  last  session--recap!  ", RESERVED),
    ("MEMORY", INDEX_RESERVED),
    (" memory ", INDEX_RESERVED),
    ("Memory!", INDEX_RESERVED),
]


@pytest.mark.parametrize(("topic", "message"), INVALID_TOPICS)
def test_s_write_2_validation_before_any_filesystem_access(
    env: StoreEnv, topic: object, message: str
) -> None:
    fs = RecordingFs()
    store = store_with(env, fs)
    before = env.snapshot()
    out = store.execute_write_memory(topic=topic, content="c", summary="s", pin=True)
    assert out == message
    assert fs.calls == []  # no configuration read, no directory creation
    assert env.snapshot() == before
    assert not env.exists("agent/memory.jsonc")


def test_s_write_2_reserved_topics_create_no_file_or_entry(env: StoreEnv) -> None:
    env.store.execute_write_memory(topic="Keep", content="k", summary="k")
    before = env.snapshot()
    for topic in ("Last Session Recap", "LAST-SESSION-RECAP", "last-session-recap"):
        assert env.store.execute_write_memory(topic=topic, content="c", summary="s") == RESERVED
    assert env.snapshot() == before


def test_s_write_2_b19_hyphen_only_topics_are_stored_as_dash_md(env: StoreEnv) -> None:
    assert env.store.execute_write_memory(topic="-", content="c", summary="s") == (
        'Created memory topic "-" (-.md).'
    )
    assert env.store.execute_write_memory(topic="  --  ", content="d", summary="t") == (
        'Created memory topic "--" (--2.md).'
    )
    assert env.read(LOCAL + "MEMORY.md") == (
        f"# Memory Index\n\n\n- [-](-.md) {TS} -- s\n- [--](--2.md) {TS} -- t"
    )


def test_s_write_2_topic_trimmed_and_unicode_whitespace_slug(env: StoreEnv) -> None:
    out = env.store.execute_write_memory(topic="\u3000A\ufeffB\u00a0 ", content="x", summary="y")
    assert out == 'Created memory topic "A\ufeffB" (a-b.md).'
    out = env.store.execute_write_memory(topic="a\u001cb", content="x", summary="y")
    assert out == 'Created memory topic "a\u001cb" (ab.md).'
    assert raw(env, LOCAL + "ab.md").startswith(
        b'---\nmetadata:\n  node_type: memory\nname: "a\\u001cb"\n'
    )


def test_s_write_2_multiline_summary_stored_as_one_line(env: StoreEnv) -> None:
    summary = "first line\n- [Forged](forged.md) -- injected\nlast line"
    env.store.execute_write_memory(topic="Sum", content="c", summary=summary)
    one = "first line - [Forged](forged.md) -- injected last line"
    assert env.read(LOCAL + "MEMORY.md") == f"# Memory Index\n\n\n- [Sum](sum.md) {TS} -- {one}"
    assert f'description: "{one}"\n' in env.read(LOCAL + "sum.md")
    assert not env.exists(LOCAL + "forged.md")


def test_s_write_2_summary_whitespace_folded_and_tostring(env: StoreEnv) -> None:
    store = env.store
    store.execute_write_memory(topic="W1", content="c", summary="\t a\u00a0\u00a0b\ufeff\u2028c  ")
    store.execute_write_memory(topic="W2", content="c", summary=None)
    store.execute_write_memory(topic="W3", content="c", summary=["a", None, 3])
    store.execute_write_memory(topic="W4", content="c", summary=True)
    store.execute_write_memory(topic="W5", content="c", summary={"k": 1})
    store.execute_write_memory(topic="W6", content="c", summary=1e21)
    assert env.read(LOCAL + "MEMORY.md") == (
        "# Memory Index\n\n\n"
        f"- [W1](w1.md) {TS} -- a b c\n"
        f"- [W2](w2.md) {TS} -- null\n"
        f"- [W3](w3.md) {TS} -- a,,3\n"
        f"- [W4](w4.md) {TS} -- true\n"
        f"- [W5](w5.md) {TS} -- [object Object]\n"
        f"- [W6](w6.md) {TS} -- 1e+21"
    )


def test_s_write_2_summary_cap_500_code_units(env: StoreEnv) -> None:
    env.store.execute_write_memory(topic="Cap", content="c", summary="b" * 501)
    assert env.read(LOCAL + "MEMORY.md").endswith(" -- " + "b" * 500)
    assert f'description: "{"b" * 500}"\n' in env.read(LOCAL + "cap.md")


def test_s_write_2_summary_cap_splits_surrogate_pair(env: StoreEnv) -> None:
    env.store.execute_write_memory(topic="Sur", content="c", summary="a" * 499 + "\U0001f600")
    index = raw(env, LOCAL + "MEMORY.md")
    assert index == f"# Memory Index\n\n\n- [Sur](sur.md) {TS} -- ".encode() + b"a" * 499 + (
        b"\xef\xbf\xbd"
    )
    topic = raw(env, LOCAL + "sur.md")
    assert b'description: "' + b"a" * 499 + b'\\ud83d"\n' in topic
    # 250 emoji = 500 units exactly: nothing split
    env.store.execute_write_memory(topic="Sur2", content="c", summary="\U0001f600" * 251)
    assert env.read(LOCAL + "MEMORY.md").endswith(" -- " + "\U0001f600" * 250)


# --- S-WRITE-3 replace selection ------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "overwrite", "replaces"),
    [
        ("replace", UNDEFINED, True),
        ("append", True, True),
        (UNDEFINED, True, True),
        ("replace", False, True),
        ("REPLACE", UNDEFINED, False),
        ("overwrite", UNDEFINED, False),
        ("bogus", UNDEFINED, False),
        (None, 1, False),
        ("append", "true", False),
        (UNDEFINED, UNDEFINED, False),
    ],
)
def test_s_write_3_replace_iff_mode_replace_or_overwrite_true(
    env: StoreEnv, mode: object, overwrite: object, replaces: bool
) -> None:
    env.store.execute_write_memory(topic="M", content="one", summary="s")
    kwargs: dict[str, object] = {}
    if mode is not UNDEFINED:
        kwargs["mode"] = mode
    if overwrite is not UNDEFINED:
        kwargs["overwrite"] = overwrite
    env.store.execute_write_memory(topic="M", content="two", summary="s", **kwargs)
    body = env.read(LOCAL + "m.md").split("\n---\n", 1)[1]
    assert body == ("\ntwo\n" if replaces else f"\none\n\n## {DAY}\n\ntwo\n")


# --- S-WRITE-4 under the lock ----------------------------------------------------------


def test_s_write_4_busy_lock_returns_busy_message_and_writes_nothing(env: StoreEnv) -> None:
    env.put(LOCAL + ".lock", f"{os.getpid()}\t{NOW_MS}\tlive")
    env.put(LOCAL + "MEMORY.md", "# Memory Index\n\n")
    env.store.parse_rules()  # bootstrap memory.jsonc first
    before = env.snapshot()
    start = time.monotonic()
    out = env.store.execute_write_memory(topic="T", content="c", summary="s")
    elapsed = time.monotonic() - start
    assert out == LOCK_BUSY_MESSAGE
    assert 0.4 <= elapsed < 3.0
    assert env.snapshot() == before


def test_s_write_4_creates_directory_and_releases_lock(env: StoreEnv) -> None:
    assert not env.exists(LOCAL)
    env.store.execute_write_memory(topic="T", content="c", summary="s")
    assert sorted(os.listdir(env.local)) == ["MEMORY.md", "t.md"]


# --- S-WRITE-5 index snapshot ----------------------------------------------------------


def test_s_write_5_missing_index_starts_from_initial_memory(env: StoreEnv) -> None:
    env.store.execute_write_memory(topic="T", content="c", summary="s")
    assert raw(env, LOCAL + "MEMORY.md") == f"# Memory Index\n\n\n- [T](t.md) {TS} -- s".encode()


def test_s_write_5_a10_index_read_unbounded(env: StoreEnv) -> None:
    prose = "".join(f"note {i:04d} " + "x" * 90 + "\n" for i in range(600))
    index = "# Memory Index\n\n" + prose + "- [Late](late.md) 2026-08-01 -- late\n"
    assert len(index.encode()) > 51200 + 100
    env.put(LOCAL + "MEMORY.md", index)
    env.put(LOCAL + "late.md", "old\n")
    out = env.store.execute_write_memory(topic="Late", content="new", summary="s2")
    assert out == 'Updated memory topic "Late" (late.md).'
    expected = "# Memory Index\n\n" + prose + f"- [Late](late.md) {TS} -- s2\n"
    assert env.read(LOCAL + "MEMORY.md") == expected
    assert not env.exists(LOCAL + "late-2.md")


def test_s_write_5_symlinked_index_raises_eloop_before_writing(env: StoreEnv) -> None:
    env.put("elsewhere.md", "# Memory Index\n\n")
    os.makedirs(env.local)
    os.symlink(env.sandbox.path("elsewhere.md"), env.sandbox.path(LOCAL + "MEMORY.md"))
    env.store.parse_rules()  # bootstrap memory.jsonc first
    before = env.snapshot()
    with pytest.raises(NodeError) as info:
        env.store.execute_write_memory(topic="T", content="c", summary="s")
    index = f"{env.local}/MEMORY.md"
    assert (info.value.kind, info.value.code) == ("Error", "ELOOP")
    assert info.value.message == f"ELOOP: too many symbolic links encountered, open '{index}'"
    assert env.snapshot() == before


def test_s_write_5_fifo_index_refused_promptly(env: StoreEnv) -> None:
    os.makedirs(env.local)
    os.mkfifo(env.sandbox.path(LOCAL + "MEMORY.md"))
    env.store.parse_rules()  # bootstrap memory.jsonc first
    before = env.snapshot()
    start = time.monotonic()
    with pytest.raises(JsError) as info:
        env.store.execute_write_memory(topic="T", content="c", summary="s")
    assert time.monotonic() - start < 2.0
    assert info.value.kind == "Error" and info.value.code is None
    assert info.value.message == f"Unsafe non-regular file: {env.local}/MEMORY.md"
    assert env.snapshot() == before


def test_s_write_5_directory_index_refused(env: StoreEnv) -> None:
    os.makedirs(env.sandbox.path(LOCAL + "MEMORY.md"))
    env.store.parse_rules()  # bootstrap memory.jsonc first
    before = env.snapshot()
    with pytest.raises(JsError, match="^Unsafe non-regular file: .*/MEMORY.md$"):
        env.store.execute_write_memory(topic="T", content="c", summary="s")
    assert env.snapshot() == before


def test_s_write_5_dangling_index_symlink_fails_at_index_write_and_rolls_back(
    env: StoreEnv,
) -> None:
    os.makedirs(env.local)
    os.symlink(env.sandbox.path("nowhere.md"), env.sandbox.path(LOCAL + "MEMORY.md"))
    env.store.parse_rules()  # bootstrap memory.jsonc first
    before = env.snapshot()
    with pytest.raises(JsError) as info:
        env.store.execute_write_memory(topic="T", content="c", summary="s")
    assert info.value.message == f"Unsafe non-regular file: {env.local}/MEMORY.md"
    assert env.snapshot() == before  # the new topic was unlinked again


# --- S-WRITE-6 filename by name --------------------------------------------------------


def test_s_write_6_b11_last_matching_line_wins(env: StoreEnv) -> None:
    env.put(
        LOCAL + "MEMORY.md",
        "# Memory Index\n\n- [Dup](foo.md) 2026-08-01 -- a\n- [dup](bar.md) 2026-08-01 -- b\n",
    )
    env.put(LOCAL + "foo.md", "x")
    env.put(LOCAL + "bar.md", "y")
    assert env.store.execute_write_memory(topic="DUP", content="c", summary="s") == (
        'Updated memory topic "DUP" (bar.md).'
    )
    assert env.read(LOCAL + "MEMORY.md") == (
        f"# Memory Index\n\n- [Dup](foo.md) 2026-08-01 -- a\n- [DUP](bar.md) {TS} -- s\n"
    )
    assert raw(env, LOCAL + "foo.md") == b"x"


def test_s_write_6_matched_name_keeps_custom_filename(env: StoreEnv) -> None:
    env.put(LOCAL + "MEMORY.md", "- [Weird Name](Custom File.MD) 2026-08-01 -- a\n")
    env.put(LOCAL + "Custom File.MD", "body\n")
    assert env.store.execute_write_memory(topic=" weird name ", content="c", summary="s") == (
        'Updated memory topic "weird name" (Custom File.MD).'
    )
    assert env.read(LOCAL + "MEMORY.md") == f"- [weird name](Custom File.MD) {TS} -- s\n"


# --- S-WRITE-7 collision resolution ----------------------------------------------------


def test_s_write_7_slug_collision_gets_numeric_suffix(env: StoreEnv) -> None:
    s = env.store
    assert s.execute_write_memory(topic="Slug Collision!", content="c", summary="s") == (
        'Created memory topic "Slug Collision!" (slug-collision.md).'
    )
    assert s.execute_write_memory(topic="Slug Collision", content="c", summary="s") == (
        'Created memory topic "Slug Collision" (slug-collision-2.md).'
    )
    assert s.execute_write_memory(topic="slug  collision?", content="c", summary="s") == (
        'Created memory topic "slug  collision?" (slug-collision-3.md).'
    )


def test_s_write_7_removed_indexed_file_not_taken_over(env: StoreEnv) -> None:
    s = env.store
    s.execute_write_memory(topic="Owner+Audit", content="c", summary="s")
    owner = raw(env, LOCAL + "owneraudit.md")
    s.execute_remove_memory(topic="Owner+Audit")
    assert s.execute_write_memory(topic="OwnerAudit", content="c2", summary="s2") == (
        'Created memory topic "OwnerAudit" (owneraudit-2.md).'
    )
    assert raw(env, LOCAL + "owneraudit.md") == owner
    assert raw(env, LOCAL + "owneraudit-2.md") == new_topic('"OwnerAudit"', '"s2"', "c2").encode()


def test_s_write_7_indexed_file_never_reused_even_if_frontmatter_names_topic(
    env: StoreEnv,
) -> None:
    env.put(LOCAL + "MEMORY.md", "- [Other](foo.md) 2026-08-01 -- o\n")
    env.put(LOCAL + "foo.md", "---\nname: foo\n---\n")
    env.put(LOCAL + "foo-2.md", "---\nname: bar\n---\n")
    assert env.store.execute_write_memory(topic="foo", content="c", summary="s") == (
        'Created memory topic "foo" (foo-3.md).'
    )


PROBE_CASES: list[tuple[str, str, str, str]] = [
    # (file, content, topic, chosen filename)
    ("foo.md", "---\nname: 'Foo'\n---\nbody\n", "foo", "foo.md"),
    ("its.md", "---\nname: 'It's'\n---\nb\n", "It's", "its.md"),
    ("bar.md", '---\nname: "B\\u0061r"\n---\n', "bar", "bar.md"),
    ("esc.md", '---\nname: "\\u0045sc"   \n---\nb\n', "ESC", "esc.md"),
    ("baz.md", '---\nname: "Baz" trailing\n---\n', "Baz", "baz-2.md"),
    ("baz.md", '---\nname: "Baz" trailing\n---\n', '"Baz" trailing', "baz-trailing.md"),
    ("qq.md", '---\nname: "qq"\n---\n', '"qq"', "qq-2.md"),
    ("un.md", '---\r\nname: "un\r\n---\r\n', '"un', "un.md"),
    ("lone.md", "---\nname: '\n---\n", "lone", "lone-2.md"),
    ("sp.md", "---\nname:   \n---\n", "sp", "sp-2.md"),
    ("two.md", "---\nname:\nname: two\n---\n", "two", "two-2.md"),
    ("cs.md", "---\nName: cs\n---\n", "cs", "cs-2.md"),
    ("bom.md", "\ufeff---\nname: bom\n---\nbody\n", "bom", "bom-2.md"),
    ("empty.md", "---\n\n---\n", "empty", "empty-2.md"),
    ("noeol.md", "---\nname: noeol\n---", "noeol", "noeol.md"),
    ("late.md", "---\nx: 1\nbody\n---\nname: late\n", "late", "late-2.md"),
    ("plain.md", "name: plain\n", "plain", "plain-2.md"),
    ("u28.md", "---\nfoo\u2028name: U28\n---\n", "u28", "u28.md"),
    ("ws.md", "---\n  name: ws\n---\n", "ws", "ws-2.md"),
]


@pytest.mark.parametrize(("file", "content", "topic", "chosen"), PROBE_CASES)
def test_s_write_7_unindexed_file_reused_only_when_frontmatter_names_topic(
    env: StoreEnv, file: str, content: str, topic: str, chosen: str
) -> None:
    env.put(LOCAL + file, content)
    verb = "Updated" if chosen == file else "Created"
    out = env.store.execute_write_memory(topic=topic, content="c", summary="s")
    assert out == f'{verb} memory topic "{topic}" ({chosen}).'
    if chosen != file:
        assert env.read(LOCAL + file) == content


def test_s_write_7_b9_empty_name_line_takes_next_line(env: StoreEnv) -> None:
    env.put(LOCAL + "qux.md", "---\nname:\n  Qux\n---\n")
    assert env.store.execute_write_memory(topic="qux", content="c", summary="s") == (
        'Updated memory topic "qux" (qux.md).'
    )
    # the write replaces the (empty) first name line; the continuation line stays
    assert env.read(LOCAL + "qux.md") == (
        f'---\nname: "qux"\n  Qux\ndescription: "s"\nlast_updated: {TS}\ncreated: {TS}\n'
        f"---\n\n## {DAY}\n\nc\n"
    )


def test_s_write_7_b18_name_after_lone_cr_is_found(env: StoreEnv) -> None:
    env.put(LOCAL + "cr.md", "---\nx: 1\rname: Cr\n---\n")
    assert env.store.execute_write_memory(topic="cr", content="c", summary="s") == (
        'Updated memory topic "cr" (cr.md).'
    )
    assert env.read(LOCAL + "cr.md").startswith('---\nx: 1\rname: "cr"\ndescription: "s"\n')


def test_s_write_7_name_probe_reads_only_first_51200_bytes(env: StoreEnv) -> None:
    env.put(LOCAL + "big.md", "---\nx: " + "y" * 51300 + "\nname: big\n---\n")
    assert env.store.execute_write_memory(topic="big", content="c", summary="s") == (
        'Created memory topic "big" (big-2.md).'
    )


def test_s_write_7_symlinked_candidate_skipped_and_kept(env: StoreEnv) -> None:
    env.put("target.md", "---\nname: ln\n---\n")
    os.makedirs(env.local)
    os.symlink(env.sandbox.path("target.md"), env.sandbox.path(LOCAL + "ln.md"))
    assert env.store.execute_write_memory(topic="ln", content="c", summary="s") == (
        'Created memory topic "ln" (ln-2.md).'
    )
    assert os.path.islink(env.sandbox.path(LOCAL + "ln.md"))
    assert env.read("target.md") == "---\nname: ln\n---\n"


# --- S-WRITE-8 non-regular target ------------------------------------------------------


def test_s_write_8_indexed_directory_target_refused(env: StoreEnv) -> None:
    env.put(LOCAL + "MEMORY.md", "# I\n\n- [Dir](dir.md) 2026-08-01 -- d\n")
    os.makedirs(env.sandbox.path(LOCAL + "dir.md"))
    env.store.parse_rules()  # bootstrap memory.jsonc first
    before = env.snapshot()
    out = env.store.execute_write_memory(topic="Dir", content="c", summary="s")
    assert out == 'Invalid topic: "dir.md" is not a regular file.'
    assert env.snapshot() == before  # lock taken and released, nothing written


def test_s_write_8_indexed_fifo_target_refused_promptly(env: StoreEnv) -> None:
    env.put(LOCAL + "MEMORY.md", "- [F](f.md) 2026-08-01 -- d\n")
    os.mkfifo(env.sandbox.path(LOCAL + "f.md"))
    env.store.parse_rules()  # bootstrap memory.jsonc first
    before = env.snapshot()
    start = time.monotonic()
    out = env.store.execute_write_memory(topic="F", content="c", summary="s")
    assert time.monotonic() - start < 2.0
    assert out == 'Invalid topic: "f.md" is not a regular file.'
    assert env.snapshot() == before


def test_s_write_8_unindexed_directory_gets_suffix(env: StoreEnv) -> None:
    os.makedirs(env.sandbox.path(LOCAL + "d2.md"))
    assert env.store.execute_write_memory(topic="D2", content="c", summary="s") == (
        'Created memory topic "D2" (d2-2.md).'
    )


def test_s_write_8_b4_dangling_symlink_at_slug_raises_nothing_left(env: StoreEnv) -> None:
    env.put(LOCAL + "MEMORY.md", "# I\n")
    os.symlink(env.sandbox.path("nowhere.md"), env.sandbox.path(LOCAL + "dang.md"))
    env.store.parse_rules()  # bootstrap memory.jsonc first
    before = env.snapshot()
    with pytest.raises(JsError) as info:
        env.store.execute_write_memory(topic="Dang", content="c", summary="s")
    assert (info.value.kind, info.value.code) == ("Error", None)
    assert info.value.message == f"Unsafe non-regular file: {env.local}/dang.md"
    assert env.snapshot() == before


# --- S-WRITE-9 frontmatter -------------------------------------------------------------


def test_s_write_9_new_file_layout_byte_exact(env: StoreEnv) -> None:
    env.store.execute_write_memory(
        topic="PostgreSQL Setup", content="line1", summary="multi line summary"
    )
    assert raw(env, LOCAL + "postgresql-setup.md") == (
        b'---\nmetadata:\n  node_type: memory\nname: "PostgreSQL Setup"\n'
        b'description: "multi line summary"\n'
        b"last_updated: 2026-08-07T01:02:50+00:00\ncreated: 2026-08-07T01:02:50+00:00\n"
        b"---\n\nline1\n"
    )


def test_s_write_9_append_refreshes_fields_and_keeps_one_created(env: StoreEnv) -> None:
    env.store.execute_write_memory(topic="T", content="a", summary="one")
    env.clock.advance(3_600_000)
    env.store.execute_write_memory(topic="t", content="b", summary="two")
    later = "2026-08-07T02:02:50+00:00"
    assert env.read(LOCAL + "t.md") == (
        f'---\nmetadata:\n  node_type: memory\nname: "t"\ndescription: "two"\n'
        f"last_updated: {later}\ncreated: {TS}\n---\n\na\n\n## {DAY}\n\nb\n"
    )
    assert env.read(LOCAL + "t.md").count("created:") == 1


def test_s_write_9_replace_refreshes_description(env: StoreEnv) -> None:
    env.store.execute_write_memory(topic="R", content="a", summary="old summary")
    env.store.execute_write_memory(topic="R", content="b", summary="new summary", mode="replace")
    text = env.read(LOCAL + "r.md")
    assert 'description: "new summary"\n' in text and "old summary" not in text


def test_s_write_9_merge_keeps_other_lines_crlf_normalised(env: StoreEnv) -> None:
    env.put(
        LOCAL + "a.md",
        "---\r\nx: 1\rname: Bar\r\ncreated: old\r\nlast_updated_by: me\r\n---\r\nbody\r\n",
    )
    env.put(LOCAL + "MEMORY.md", "- [A](a.md) 2026-01-01 -- a\n")
    env.store.execute_write_memory(topic="A", content="new", summary="sa")
    assert env.read(LOCAL + "a.md") == (
        '---\nx: 1\rname: "A"\ncreated: old\nlast_updated_by: me\ndescription: "sa"\n'
        f"last_updated: {TS}\n---\nbody\r\n\n## {DAY}\n\nnew\n"
    )


def test_s_write_9_spec_example_cr_line_start(env: StoreEnv) -> None:
    env.put(LOCAL + "bar.md", "---\nx: 1\rname: Bar\n---\n")
    env.store.execute_write_memory(topic="bar", content="c", summary="s")
    assert env.read(LOCAL + "bar.md") == (
        f'---\nx: 1\rname: "bar"\ndescription: "s"\nlast_updated: {TS}\ncreated: {TS}\n'
        f"---\n\n## {DAY}\n\nc\n"
    )


def test_s_write_9_custom_keys_and_all_created_lines_survive(env: StoreEnv) -> None:
    env.put(
        LOCAL + "e.md",
        "---\nmetadata:\n  x: y\ncustom: 1\ncreated: 2020\ncreated: 2021\n---\nold\n",
    )
    env.put(LOCAL + "MEMORY.md", "- [E](e.md) x -- e\n")
    env.store.execute_write_memory(topic="E", content="new", summary="se", mode="replace")
    assert env.read(LOCAL + "e.md") == (
        '---\nmetadata:\n  x: y\ncustom: 1\ncreated: 2020\ncreated: 2021\nname: "E"\n'
        f'description: "se"\nlast_updated: {TS}\n---\n\nnew\n'
    )


def test_s_write_9_empty_block_and_dash_variants(env: StoreEnv) -> None:
    env.put(LOCAL + "d.md", "---\n\n---\nold body\n")
    env.put(LOCAL + "c.md", "---\n---\nbody\n")
    env.put(LOCAL + "MEMORY.md", "- [D](d.md) [pin] -- d\n- [C](c.md) -- c\n")
    env.store.execute_write_memory(topic="D", content="new", summary="sd")
    env.store.execute_write_memory(topic="C", content="new", summary="sc")
    assert env.read(LOCAL + "d.md") == (
        f'---\n\nname: "D"\ndescription: "sd"\nlast_updated: {TS}\ncreated: {TS}\n'
        f"---\nold body\n\n## {DAY}\n\nnew\n"
    )
    # `---\n---\n` is no block: default frontmatter, old text kept as body
    assert env.read(LOCAL + "c.md") == (
        f'---\nmetadata:\n  node_type: memory\nname: "C"\ndescription: "sc"\n'
        f"last_updated: {TS}\ncreated: {TS}\n---\n---\n---\nbody\n\n## {DAY}\n\nnew\n"
    )


def test_s_write_9_json_escapes_in_name_and_description(env: StoreEnv) -> None:
    topic = 'C:\\Users\\me $& $1 $$ "q"\t\u007f\u2029x'
    env.store.execute_write_memory(topic=topic, content="$&", summary='$\' \\ "q"')
    text = raw(env, "agent/memory/cusersme-1-q-x.md").decode()
    assert 'name: "C:\\\\Users\\\\me $& $1 $$ \\"q\\"\\t\u007f\u2029x"\n' in text
    assert 'description: "$\' \\\\ \\"q\\""\n' in text
    assert text.endswith("---\n\n$&\n")


def test_s_write_9_b18_u2028_topic_moves_description_into_name_line(env: StoreEnv) -> None:
    env.store.execute_write_memory(topic="y\u2028description: z", content="c", summary="s")
    assert env.read(LOCAL + "y-description-z.md") == (
        f'---\nmetadata:\n  node_type: memory\nname: "y\u2028description: "s"\n'
        f"last_updated: {TS}\ncreated: {TS}\n---\n\nc\n"
    )


def test_s_write_9_b18_created_test_uses_frontmatter_before_fields(env: StoreEnv) -> None:
    env.store.execute_write_memory(topic="x\u2028created: y", content="c", summary="s")
    assert env.read(LOCAL + "x-created-y.md") == (
        f'---\nmetadata:\n  node_type: memory\nname: "x\u2028created: {TS}\n'
        f'description: "s"\nlast_updated: {TS}\n---\n\nc\n'
    )


# --- S-WRITE-10 body -------------------------------------------------------------------


def test_s_write_10_append_twice_then_replace(env: StoreEnv) -> None:
    s = env.store
    s.execute_write_memory(topic="B", content="line1", summary="s")
    s.execute_write_memory(topic="B", content="line2", summary="s")
    assert env.read(LOCAL + "b.md").split("\n---\n", 1)[1] == f"\nline1\n\n## {DAY}\n\nline2\n"
    s.execute_write_memory(topic="B", content="line3", summary="s", mode="replace")
    body = env.read(LOCAL + "b.md").split("\n---\n", 1)[1]
    assert body == "\nline3\n"
    s.execute_write_memory(topic="B", content="line3", summary="s", mode="replace")
    assert env.read(LOCAL + "b.md").split("\n---\n", 1)[1] == "\nline3\n"


def test_s_write_10_replace_without_frontmatter_discards_old_text(env: StoreEnv) -> None:
    env.put(LOCAL + "MEMORY.md", "- [B](b.md) -- b\n")
    env.put(LOCAL + "b.md", "no frontmatter\n")
    env.store.execute_write_memory(topic="B", content="r", summary="sb2", mode="replace")
    assert env.read(LOCAL + "b.md") == new_topic('"B"', '"sb2"', "r")


def test_s_write_10_append_to_file_without_block_keeps_whole_text(env: StoreEnv) -> None:
    env.put(LOCAL + "noeol.md", "---\nname: noeol\n---")
    env.store.execute_write_memory(topic="noeol", content="c", summary="s")
    assert env.read(LOCAL + "noeol.md") == (
        '---\nmetadata:\n  node_type: memory\nname: "noeol"\ndescription: "s"\n'
        f"last_updated: {TS}\ncreated: {TS}\n---\n---\nname: noeol\n---\n## {DAY}\n\nc\n"
    )


def test_s_write_10_content_tostring(env: StoreEnv) -> None:
    s = env.store
    for topic, content, text in [
        ("C1", 12.5, "12.5"),
        ("C2", None, "null"),
        ("C3", {"x": 1}, "[object Object]"),
        ("C4", [1, [2, 3]], "1,2,3"),
        ("C5", False, "false"),
    ]:
        s.execute_write_memory(topic=topic, content=content, summary="s")
        assert env.read(LOCAL + topic.lower() + ".md").endswith(f"---\n\n{text}\n")


def test_s_write_10_heading_is_utc_date_stamps_local(env: StoreEnv) -> None:
    set_tz("Asia/Kolkata")
    clock = ControlledClock(1772310600000)  # 2026-03-01T02:00:00+05:30
    store = store_with(env, Fs(), clock)
    store.execute_write_memory(topic="K", content="a", summary="s")
    store.execute_write_memory(topic="K", content="b", summary="s")
    assert env.read(LOCAL + "k.md") == (
        '---\nmetadata:\n  node_type: memory\nname: "K"\ndescription: "s"\n'
        "last_updated: 2026-03-01T02:00:00+05:30\ncreated: 2026-03-01T02:00:00+05:30\n"
        "---\n\na\n\n## 2026-02-28\n\nb\n"
    )
    assert env.read(LOCAL + "MEMORY.md") == (
        "# Memory Index\n\n\n- [K](k.md) 2026-03-01T02:00:00+05:30 -- s"
    )


def test_s_write_10_negative_half_hour_zone(env: StoreEnv) -> None:
    set_tz("America/St_Johns")
    env.store.execute_write_memory(topic="N", content="a", summary="s")
    assert env.read(LOCAL + "MEMORY.md") == (
        "# Memory Index\n\n\n- [N](n.md) 2026-08-06T22:32:50-02:30 -- s"
    )


# --- S-WRITE-11 shared pre-state -------------------------------------------------------


def test_s_write_11_shared_removal_list_errors_propagate_before_writes(env: StoreEnv) -> None:
    env.shared_mode()
    env.put(SHARED + "MEMORY.md", "# I\n\n- [T](t.md) 2026-08-01 -- old\n")
    env.put(SHARED + "t.md", "t")
    os.makedirs(env.sandbox.path(SHARED + ".ocl-removed"))
    env.store.get_memory_dir()
    before = env.snapshot()
    for topic in ("T", "U"):
        with pytest.raises(JsError) as info:
            env.store.execute_write_memory(topic=topic, content="c", summary="s")
        assert info.value.message == f"Unsafe non-regular file: {env.shared}/.ocl-removed"
    assert env.snapshot() == before


def test_s_write_11_dangling_symlink_list_raises_eloop(env: StoreEnv) -> None:
    env.shared_mode()
    env.put(SHARED + "MEMORY.md", "# I\n")
    os.symlink(env.sandbox.path("nowhere"), env.sandbox.path(SHARED + ".ocl-removed"))
    env.store.get_memory_dir()
    before = env.snapshot()
    fs = RecordingFs()
    with pytest.raises(NodeError) as info:
        store_with(env, fs).execute_write_memory(topic="T", content="c", summary="s")
    assert fs.named("rename") == []  # raised before any write
    assert info.value.code == "ELOOP"
    assert info.value.message == (
        f"ELOOP: too many symbolic links encountered, open '{env.shared}/.ocl-removed'"
    )
    assert env.snapshot() == before


def test_s_write_11_local_mode_never_reads_removal_list(env: StoreEnv) -> None:
    os.makedirs(env.local)
    os.mkfifo(env.sandbox.path(LOCAL + ".ocl-removed"))
    fs = RecordingFs()
    store = store_with(env, fs)
    assert store.execute_write_memory(topic="T", content="c", summary="s") == (
        'Created memory topic "T" (t.md).'
    )
    assert not [a for call in fs.calls for a in call if isinstance(a, str) and ".ocl-removed" in a]


# --- S-WRITE-12 commit -----------------------------------------------------------------


def test_s_write_12_commit_order_topic_index_tombstone(env: StoreEnv) -> None:
    env.shared_mode()
    env.put(SHARED + "MEMORY.md", "# I\n\n- [T](t.md) 2026-08-01 -- old\n")
    env.put(SHARED + "t.md", "t")
    env.put(SHARED + ".ocl-removed", "t.md\nx.md\n")
    fs = RecordingFs()
    store = store_with(env, fs)
    store.execute_write_memory(topic="T", content="c", summary="s")
    targets = [dst for _, _, dst in fs.named("rename")]
    assert targets == [
        f"{env.shared}/t.md",
        f"{env.shared}/MEMORY.md",
        f"{env.shared}/.ocl-removed",
    ]
    assert env.read(SHARED + ".ocl-removed") == "x.md\n"


def test_s_write_12_shared_rewrite_clears_tombstone(env: StoreEnv) -> None:
    env.shared_mode()
    s = env.store
    s.execute_write_memory(topic="Temp Notes", content="c", summary="s")
    s.execute_remove_memory(topic="Temp Notes")
    assert env.read(SHARED + ".ocl-removed") == "temp-notes.md\n"
    assert s.execute_write_memory(topic="Temp Notes", content="c2", summary="s2") == (
        'Updated memory topic "Temp Notes" (temp-notes.md).'
    )
    assert env.read(SHARED + ".ocl-removed") == ""
    assert env.read(SHARED + "MEMORY.md") == (
        f"# Memory Index\n\n\n- [Temp Notes](temp-notes.md) {TS} -- s2"
    )


def test_s_write_12_index_stamp_from_its_own_clock_read(env: StoreEnv) -> None:
    class Ticking(ControlledClock):
        def now_ms(self) -> int:
            self.advance(1000)
            return super().now_ms()

    store = store_with(env, Fs(), Ticking(NOW_MS))
    store.execute_write_memory(topic="T", content="c", summary="s")
    text = env.read(LOCAL + "t.md")
    stamp_topic = text.split("last_updated: ", 1)[1][:25]
    stamp_index = env.read(LOCAL + "MEMORY.md").split("(t.md) ", 1)[1][:25]
    assert stamp_index > stamp_topic


def test_s_write_12_maintains_index_on_write(env: StoreEnv) -> None:
    env.put(
        LOCAL + "MEMORY.md",
        "# I\n\n- [A](a.md) 2025-01-01 -- 1\n- [A2](a.md) 2026-01-01 -- 2\n"
        "- [Orph](orph.md) 2026-01-01 -- o\nprose\n",
    )
    env.put(LOCAL + "a.md", "a")
    env.store.execute_write_memory(topic="New", content="c", summary="s")
    assert env.read(LOCAL + "MEMORY.md") == (
        f"# I\n\n- [A2](a.md) 2026-01-01 [stale?] -- 2\nprose\n\n- [New](new.md) {TS} -- s"
    )


def test_s_write_12_a1_stale_token_in_summary_healed_in_index_only(env: StoreEnv) -> None:
    env.store.execute_write_memory(topic="Q", content="c", summary="a [stale?] b")
    assert env.read(LOCAL + "MEMORY.md") == f"# Memory Index\n\n\n- [Q](q.md) {TS} -- a b"
    assert 'description: "a [stale?] b"\n' in env.read(LOCAL + "q.md")


def test_s_write_12_a1_pin_token_in_summary_reads_as_pinned(env: StoreEnv) -> None:
    env.store.execute_write_memory(topic="Q2", content="c", summary="use [pin] flag")
    assert env.read(LOCAL + "MEMORY.md") == (
        f"# Memory Index\n\n\n- [Q2](q2.md) {TS} -- use [pin] flag"
    )
    assert env.store.execute_pin_memory(topic="Q2", pin=True) == '"Q2" is already pinned.'


# --- S-WRITE-13 rollback ---------------------------------------------------------------


def test_s_write_13_index_rename_failure_rolls_back_topic(env: StoreEnv) -> None:
    env.put(LOCAL + "MEMORY.md", "# I\n\n- [T](t.md) 2026-08-01 -- old\n")
    env.put(LOCAL + "t.md", "---\nname: T\n---\nold\n")
    env.store.parse_rules()  # bootstrap memory.jsonc first
    before = env.snapshot()
    fs = FaultFs()
    fs.fail("rename", match=ends("/MEMORY.md"), err=errno.EIO)
    with pytest.raises(NodeError) as info:
        store_with(env, fs).execute_write_memory(topic="T", content="c", summary="s")
    err = info.value
    assert (err.kind, err.code) == ("Error", "EIO")
    assert err.message.startswith("EIO: i/o error, rename '") and err.message.endswith(
        f"' -> '{env.local}/MEMORY.md'"
    )
    assert env.snapshot() == before  # topic, index byte-identical; no lock, no temporaries


def test_s_write_13_new_topic_unlinked_on_failure(env: StoreEnv) -> None:
    env.put(LOCAL + "MEMORY.md", "# I\n")
    env.store.parse_rules()  # bootstrap memory.jsonc first
    before = env.snapshot()
    fs = FaultFs()
    fs.fail("rename", match=ends("/MEMORY.md"), err=errno.ENOSPC)
    with pytest.raises(NodeError) as info:
        store_with(env, fs).execute_write_memory(topic="New", content="c", summary="s")
    assert info.value.code == "ENOSPC"
    assert env.snapshot() == before


def test_s_write_13_rollback_failure_raises_aggregate(env: StoreEnv) -> None:
    env.put(LOCAL + "MEMORY.md", "# I\n\n- [T](t.md) 2026-08-01 -- old\n")
    env.put(LOCAL + "t.md", "old\n")
    fs = FaultFs()
    fs.fail("rename", match=ends("/MEMORY.md"), err=errno.EIO)
    fs.fail("rename", match=ends("/t.md"), nth=2, err=errno.EROFS)
    with pytest.raises(AggregateJsError) as info:
        store_with(env, fs).execute_write_memory(topic="T", content="c", summary="s")
    err = info.value
    assert err.kind == "AggregateError" and err.code is None
    assert err.message == (
        f"Memory update and rollback failed; inspect {env.local}/t.md and {env.local}/MEMORY.md."
    )
    assert [(e.code, e.syscall) for e in err.errors if isinstance(e, NodeError)] == [
        ("EIO", "rename"),
        ("EROFS", "rename"),
    ]
    assert len(err.errors) == 2
    # the topic keeps its new text (restoring it failed); the index was never replaced
    assert env.read(LOCAL + "MEMORY.md") == "# I\n\n- [T](t.md) 2026-08-01 -- old\n"
    assert env.read(LOCAL + "t.md").endswith(f"old\n\n## {DAY}\n\nc\n")
    assert not env.exists(LOCAL + ".lock") and temporaries(env) == []


def test_s_write_13_unlink_failure_during_rollback_raises_aggregate(env: StoreEnv) -> None:
    env.put(LOCAL + "MEMORY.md", "# I\n")
    fs = FaultFs()
    fs.fail("rename", match=ends("/MEMORY.md"), err=errno.EIO)
    fs.fail("unlink", match=ends("/n.md"), err=errno.EACCES)
    with pytest.raises(AggregateJsError) as info:
        store_with(env, fs).execute_write_memory(topic="N", content="c", summary="s")
    assert info.value.message == (
        f"Memory update and rollback failed; inspect {env.local}/n.md and {env.local}/MEMORY.md."
    )
    assert [getattr(e, "code", None) for e in info.value.errors] == ["EIO", "EACCES"]
    assert not env.exists(LOCAL + ".lock")


def test_s_write_13_restores_index_after_written_and_readds_tombstone(env: StoreEnv) -> None:
    env.shared_mode()
    env.put(SHARED + "MEMORY.md", "# I\n\n- [T](t.md) 2026-08-01 -- old\n")
    env.put(SHARED + "t.md", "---\nname: T\n---\nold\n")
    env.store.execute_remove_memory(topic="T")
    before = env.snapshot()
    assert before[SHARED + ".ocl-removed"] == b"t.md\n"
    # the tombstone is cleared (renamed into place) but removing its temporary fails
    fs = FaultFs()
    fs.fail("unlink", match=lambda p: ".ocl-removed.tmp-" in p, err=errno.EACCES)
    with pytest.raises(NodeError) as info:
        store_with(env, fs).execute_write_memory(topic="T", content="c", summary="s")
    assert info.value.code == "EACCES"
    # the temporary had already been renamed; index, topic and tombstone are restored
    assert env.snapshot() == before


def test_s_write_13_b5_missing_index_restored_as_initial_memory(env: StoreEnv) -> None:
    env.shared_mode()
    env.store.get_memory_dir()
    env.put(SHARED + ".ocl-removed", "b.md\n")
    fs = FaultFs()
    fs.fail("rename", match=ends("/.ocl-removed"), err=errno.EIO)
    with pytest.raises(NodeError):
        store_with(env, fs).execute_write_memory(topic="B", content="c", summary="s")
    assert env.read(SHARED + "MEMORY.md") == "# Memory Index\n\n"
    assert not env.exists(SHARED + "b.md")
    assert env.read(SHARED + ".ocl-removed") == "b.md\n"
    assert sorted(os.listdir(env.shared)) == [".ocl-removed", "MEMORY.md"]


# --- S-WRITE-14 result -----------------------------------------------------------------


def test_s_write_14_created_then_updated(env: StoreEnv) -> None:
    s = env.store
    assert s.execute_write_memory(topic="  PostgreSQL Setup ", content="a", summary="s") == (
        'Created memory topic "PostgreSQL Setup" (postgresql-setup.md).'
    )
    assert s.execute_write_memory(topic="postgresql setup", content="b", summary="s") == (
        'Updated memory topic "postgresql setup" (postgresql-setup.md).'
    )


def test_s_write_14_b15_entry_without_file_reports_created(env: StoreEnv) -> None:
    env.put(LOCAL + "MEMORY.md", "# I\n\n- [Gone](gone.md) 2026-08-01 -- g\n")
    assert env.store.execute_write_memory(topic="Gone", content="c", summary="s") == (
        'Created memory topic "Gone" (gone.md).'
    )
    assert env.read(LOCAL + "MEMORY.md") == f"# I\n\n- [Gone](gone.md) {TS} -- s\n"


# --- S-WRITE-15 pinning through write --------------------------------------------------


def test_s_write_15_pin_true_and_truthy_values_pin(env: StoreEnv) -> None:
    s = env.store
    s.execute_write_memory(topic="P1", content="c", summary="s", pin=True)
    s.execute_write_memory(topic="P2", content="c", summary="s", pin=1)
    s.execute_write_memory(topic="P3", content="c", summary="s", pin="yes")
    s.execute_write_memory(topic="P4", content="c", summary="s", pin="")
    s.execute_write_memory(topic="P5", content="c", summary="s", pin=0)
    assert env.read(LOCAL + "MEMORY.md") == (
        "# Memory Index\n\n\n"
        f"- [P1](p1.md) [pin] {TS} -- s\n- [P2](p2.md) [pin] {TS} -- s\n"
        f"- [P3](p3.md) [pin] {TS} -- s\n- [P4](p4.md) {TS} -- s\n- [P5](p5.md) {TS} -- s"
    )


def test_s_write_15_write_never_unpins(env: StoreEnv) -> None:
    env.put(
        LOCAL + "MEMORY.md", "# I\n\n- [Topic](topic.md) [pin] 2025-01-01 [stale?] -- summary\n"
    )
    env.put(LOCAL + "topic.md", "b")
    env.store.execute_write_memory(topic="Topic", content="c", summary="new", pin=False)
    assert env.read(LOCAL + "MEMORY.md") == f"# I\n\n- [Topic](topic.md) [pin] {TS} -- new\n"


# --- S-WRITE-16 footprint --------------------------------------------------------------


def _allowed(path: str, allowed: list[str]) -> bool:
    return any(path == a or path.startswith(a + ".tmp-") for a in allowed)


def test_s_write_16_local_write_touches_only_its_files(env: StoreEnv) -> None:
    fs = RecordingFs()
    store = store_with(env, fs)
    store.execute_write_memory(topic="T", content="c", summary="s")
    store.execute_write_memory(topic="T", content="d", summary="s")
    d = env.local
    allowed = [
        env.agent,
        f"{env.agent}/memory.jsonc",
        d,
        f"{d}/.lock",
        f"{d}/t.md",
        f"{d}/MEMORY.md",
    ]
    touched = fs.mutated_paths()
    assert touched and all(_allowed(p, allowed) for p in touched), touched
    snap = env.snapshot()
    assert sorted(snap) == [
        "agent",
        "agent/memory",
        "agent/memory.jsonc",
        "agent/memory/MEMORY.md",
        "agent/memory/t.md",
        "home",
    ]


def test_s_write_16_shared_write_touches_removal_list_only_when_listed(env: StoreEnv) -> None:
    env.shared_mode()
    env.store.get_memory_dir()
    env.put(SHARED + ".ocl-removed", "t.md\n")
    fs = RecordingFs()
    store = store_with(env, fs)
    store.execute_write_memory(topic="T", content="c", summary="s")
    d = env.shared
    allowed = [d, f"{d}/.lock", f"{d}/t.md", f"{d}/MEMORY.md", f"{d}/.ocl-removed"]
    touched = fs.mutated_paths()
    assert all(_allowed(p, allowed) for p in touched), touched
    assert f"{d}/.ocl-removed" in touched
    fs.calls.clear()
    store.execute_write_memory(topic="U", content="c", summary="s")
    assert f"{d}/.ocl-removed" not in fs.mutated_paths()
    mode = stat.S_IMODE(Path(d, "t.md").stat().st_mode)
    assert mode == 0o600
