"""On-disk formats: topic files, frontmatter recognition, HANDOFF.md, lock, removal list,
carry-over sentinel (S-FMT-9, S-FMT-10, S-FMT-12..15).

Byte-exact expectations were taken from the JS core 0.3.9 on the same inputs (frozen clock at
``NOW``, TZ=UTC).
"""

from __future__ import annotations

import os
import re
import stat

import pytest

from memconform.reference.topic import probe_name, split_block
from tests.conftest import NOW_MS, StoreEnv
from tests.support import IDX, TS, FaultFs, ends, store_with

FM_TAIL = f'description: "s"\nlast_updated: {TS}\ncreated: {TS}\n---\n'
DEFAULT_FM = '---\nmetadata:\n  node_type: memory\nname: "T"\n' + FM_TAIL


def mode_of(path: str) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


# --- S-FMT-9 topic file layout ---------------------------------------------------------


def test_s_fmt_9_new_file_example(env: StoreEnv) -> None:
    result = env.store.execute_write_memory("PostgreSQL Setup", "line1", "multi\nline   summary")
    assert result == 'Created memory topic "PostgreSQL Setup" (postgresql-setup.md).'
    assert env.read("agent/memory/postgresql-setup.md") == (
        '---\nmetadata:\n  node_type: memory\nname: "PostgreSQL Setup"\n'
        f'description: "multi line summary"\nlast_updated: {TS}\ncreated: {TS}\n---\n\nline1\n'
    )


def test_s_fmt_9_default_frontmatter_and_json_escapes(env: StoreEnv) -> None:
    env.put(IDX, "- [T](t.md) 2026-08-01 -- s")
    env.put("agent/memory/t.md", "plain body\n")
    summary = 'q"uo\\te \x01 \x7f é'
    assert env.store.execute_write_memory("T", "c", summary) == 'Updated memory topic "T" (t.md).'
    assert env.read("agent/memory/t.md") == (
        '---\nmetadata:\n  node_type: memory\nname: "T"\n'
        'description: "q\\"uo\\\\te \\u0001 \x7f é"\n'
        f"last_updated: {TS}\ncreated: {TS}\n---\nplain body\n\n## 2026-08-07\n\nc\n"
    )
    assert env.read(IDX) == f"- [T](t.md) {TS} -- {summary}"


def test_s_fmt_9_backslash_and_dollar_topic(env: StoreEnv) -> None:
    topic = "C:\\Users\\me $& $1 $$"
    assert env.store.execute_write_memory(topic, "x", 's "q" \\ \x01\x7f é\u2028end') == (
        f'Created memory topic "{topic}" (cusersme-1.md).'
    )
    assert env.read("agent/memory/cusersme-1.md") == (
        '---\nmetadata:\n  node_type: memory\nname: "C:\\\\Users\\\\me $& $1 $$"\n'
        'description: "s \\"q\\" \\\\ \\u0001\x7f é end"\n'
        f"last_updated: {TS}\ncreated: {TS}\n---\n\nx\n"
    )


def test_s_fmt_9_lone_surrogate_escaped_in_description(env: StoreEnv) -> None:
    env.store.execute_write_memory("Emoji", "c", "a" * 499 + "\U0001f600")
    raw = env.sandbox.path("agent/memory/emoji.md").read_bytes()
    assert raw.endswith(
        b"a" * 60
        + b'\\ud83d"\nlast_updated: '
        + TS.encode()
        + b"\ncreated: "
        + TS.encode()
        + b"\n---\n\nc\n"
    )
    assert env.sandbox.path(IDX).read_bytes().endswith(b" -- " + b"a" * 499 + b"\xef\xbf\xbd")


def test_s_fmt_9_b18_fields_after_u2028_in_topic(env: StoreEnv) -> None:
    # JS core: "created" is decided on the original frontmatter, then the first line-start
    # "created:" (here inside the name's line, after U+2028) is what gets replaced.
    assert env.store.execute_write_memory("X\u2028created: bad", "c", "s") == (
        'Created memory topic "X\u2028created: bad" (x-created-bad.md).'
    )
    assert env.read("agent/memory/x-created-bad.md") == (
        '---\nmetadata:\n  node_type: memory\nname: "X\u2028created: '
        f'{TS}\ndescription: "s"\nlast_updated: {TS}\n---\n\nc\n'
    )
    env.store.execute_write_memory("Y\u2028description: d", "c", "s")
    assert env.read("agent/memory/y-description-d.md") == (
        '---\nmetadata:\n  node_type: memory\nname: "Y\u2028description: "s"\n'
        f"last_updated: {TS}\ncreated: {TS}\n---\n\nc\n"
    )


def test_s_fmt_9_replace_keeps_created_and_other_fields(env: StoreEnv) -> None:
    env.put(IDX, "- [Old](old.md) 2026-08-01 -- o")
    env.put(
        "agent/memory/old.md",
        '---\nname: "Old"\ncreated: 2020-01-01T00:00:00+00:00\nlast_updated: x\n---\nold body\n',
    )
    result = env.store.execute_write_memory("Old", "fresh", "o2", overwrite=True)
    assert result == 'Updated memory topic "Old" (old.md).'
    assert env.read("agent/memory/old.md") == (
        '---\nname: "Old"\ncreated: 2020-01-01T00:00:00+00:00\n'
        f'last_updated: {TS}\ndescription: "o2"\n---\n\nfresh\n'
    )


# --- S-FMT-10 frontmatter recognition ---------------------------------------------------

# (original topic text, readTopicContent result, file after an append write of "c")
BLOCK_CASES: list[tuple[str, str, str]] = [
    (
        '---\r\nname: "T"\r\nx: 1\r\n---\r\nbody\r\n',
        "body\r\n",
        '---\nname: "T"\nx: 1\n' + FM_TAIL + "body\r\n\n## 2026-08-07\n\nc\n",
    ),
    (
        "---\nname: a\r\n---\r\nB\n",
        "B\n",
        '---\nname: "T"\n' + FM_TAIL + "B\n\n## 2026-08-07\n\nc\n",
    ),
    (
        "---\nname: x\n--- x\n---\nbody\n",
        "body\n",
        '---\nname: "T"\n--- x\n' + FM_TAIL + "body\n\n## 2026-08-07\n\nc\n",
    ),
    (
        "---\nname: x\n----\nmore\n---\nbody\n",
        "body\n",
        '---\nname: "T"\n----\nmore\n' + FM_TAIL + "body\n\n## 2026-08-07\n\nc\n",
    ),
    (
        "---\n\n---\nbody\n",
        "body\n",
        '---\n\nname: "T"\n' + FM_TAIL + "body\n\n## 2026-08-07\n\nc\n",
    ),
    (
        "---\nname: x\n---",
        "---\nname: x\n---",
        DEFAULT_FM + "---\nname: x\n---\n## 2026-08-07\n\nc\n",
    ),
    (
        "---\n---\nbody\n",
        "---\n---\nbody\n",
        DEFAULT_FM + "---\n---\nbody\n\n## 2026-08-07\n\nc\n",
    ),
    (
        "\n---\nname: x\n---\nbody\n",
        "\n---\nname: x\n---\nbody\n",
        DEFAULT_FM + "\n---\nname: x\n---\nbody\n\n## 2026-08-07\n\nc\n",
    ),
    (
        "---\nx: 1\rname: Bar\n---\nbody\n",
        "body\n",
        '---\nx: 1\rname: "T"\n' + FM_TAIL + "body\n\n## 2026-08-07\n\nc\n",
    ),
    (
        "---\nk: v\n---\n\n \t body\n\n",
        "body\n\n",
        '---\nk: v\nname: "T"\n' + FM_TAIL + "\n \t body\n\n\n## 2026-08-07\n\nc\n",
    ),
]


@pytest.mark.parametrize(("original", "displayed", "written"), BLOCK_CASES)
def test_s_fmt_10_block_variants(
    env: StoreEnv, original: str, displayed: str, written: str
) -> None:
    env.put(IDX, "- [T](t.md) 2026-08-01 -- s")
    env.put("agent/memory/t.md", original)
    assert env.store.read_topic_content("t.md") == displayed
    assert env.store.execute_write_memory("T", "c", "s") == 'Updated memory topic "T" (t.md).'
    assert env.read("agent/memory/t.md") == written


def test_s_fmt_10_split_block_shortest_g() -> None:
    p = split_block("---\na\n---\nb\n---\nc")
    assert (p.frontmatter, p.body) == ("a", "b\n---\nc")
    p = split_block("---\n\n---\n")
    assert (p.frontmatter, p.body) == ("", "")
    p = split_block("---\n---\n")
    assert p.frontmatter is None


def test_s_fmt_10_name_probe_needs_no_eol_after_closing_dashes(env: StoreEnv) -> None:
    assert probe_name("---\nname: T\n---") == "T"
    assert probe_name("---\nname: T\n---tail") == "T"
    assert probe_name("x---\nname: T\n---\n") is None
    env.put("agent/memory/t.md", "---\nname: T\n---")
    env.put("agent/memory/u.md", "---\nname: Other\n---\n")
    assert env.store.execute_write_memory("T", "c", "s") == 'Updated memory topic "T" (t.md).'
    assert env.store.execute_write_memory("U", "d", "s") == 'Created memory topic "U" (u-2.md).'
    assert env.read("agent/memory/t.md") == DEFAULT_FM + "---\nname: T\n---\n## 2026-08-07\n\nc\n"
    assert env.read("agent/memory/u.md") == "---\nname: Other\n---\n"
    assert env.read(IDX) == (f"# Memory Index\n\n\n- [T](t.md) {TS} -- s\n- [U](u-2.md) {TS} -- s")


# --- S-FMT-12 HANDOFF.md ----------------------------------------------------------------


def assistant(text: str) -> list[dict[str, object]]:
    return [{"role": "assistant", "content": [{"type": "text", "text": text}]}]


def test_s_fmt_12_sections_and_final_lf(env: StoreEnv) -> None:
    s = env.store
    assert s.write_handoff(assistant("did a"), "manual", 3) == "written"
    assert env.read("agent/HANDOFF.md") == f"## {TS} (manual)\n\n- did a\n\n"
    assert s.replace_latest_handoff_with_compaction_summary("## Goal\nsum", "threshold", 3) == (
        "written"
    )
    assert env.read("agent/HANDOFF.md") == f"## {TS} Consolidation (threshold)\n\n### Goal\nsum\n\n"


def test_s_fmt_12_preamble_counts_as_a_section(env: StoreEnv) -> None:
    env.put("agent/HANDOFF.md", "preamble text\n## old (x)\n\n- old")
    env.store.write_handoff(assistant("did a"), "manual", 3)
    assert env.read("agent/HANDOFF.md") == (
        f"preamble text\n\n## old (x)\n\n- old\n\n\n## {TS} (manual)\n\n- did a\n\n"
    )
    env.put("agent/HANDOFF.md", "preamble text\n## old (x)\n\n- old")
    env.store.write_handoff(assistant("did a"), "manual", 2)
    assert env.read("agent/HANDOFF.md") == (
        f"## old (x)\n\n- old\n\n\n## {TS} (manual)\n\n- did a\n\n"
    )


def test_s_fmt_12_blank_preamble_is_not_a_section(env: StoreEnv) -> None:
    env.put("agent/HANDOFF.md", "  \n\n## old (x)\n\n- old\n")
    env.store.write_handoff(assistant("did a"), "manual", 3)
    env.store.replace_latest_handoff_with_compaction_summary("S", "threshold", 3)
    assert env.read("agent/HANDOFF.md") == (
        f"## old (x)\n\n- old\n\n\n\n## {TS} Consolidation (threshold)\n\nS\n\n"
    )


def test_s_fmt_12_read_returns_last_section(env: StoreEnv) -> None:
    env.put("agent/HANDOFF.md", "preamble text\n## old (x)\n\n- old")
    env.store.write_handoff(assistant("did a\nnext b"), "manual", 3)
    assert env.store.read_handoff() == f"## {TS} (manual)\n\n- did a\n- next b"


# --- S-FMT-13 lock content ---------------------------------------------------------------


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o002])
def test_s_fmt_13_lock_token_and_mode(env: StoreEnv, umask: int) -> None:
    os.umask(umask)
    seen: list[tuple[bytes, int]] = []
    lock = os.path.join(env.local, ".lock")

    def hook(_dst: str) -> None:
        with open(lock, "rb") as f:
            seen.append((f.read(), mode_of(lock)))

    fs = FaultFs()
    fs.hook("rename", run=hook, nth=None)
    store = store_with(env, fs)
    assert store.execute_write_memory("T", "c", "s") == 'Created memory topic "T" (t.md).'
    assert len(seen) == 2  # topic and index renames
    content, mode = seen[0]
    assert seen[1] == seen[0]
    m = re.fullmatch(rb"(\d+)\t(\d+)\t([0-9a-z]+)", content)
    assert m is not None, content
    assert int(m.group(1)) == os.getpid()
    assert int(m.group(2)) == NOW_MS
    assert mode == 0o666 & ~umask
    assert not env.exists("agent/memory/.lock")


def test_s_fmt_13_tokens_differ_between_acquisitions(env: StoreEnv) -> None:
    tokens: list[bytes] = []
    lock = os.path.join(env.local, ".lock")

    def hook(_dst: str) -> None:
        with open(lock, "rb") as f:
            tokens.append(f.read())

    fs = FaultFs()
    fs.hook("rename", run=hook, match=ends("MEMORY.md"), nth=None)
    store = store_with(env, fs)
    store.execute_write_memory("A", "c", "s")
    store.execute_write_memory("B", "c", "s")
    assert len(tokens) == 2 and tokens[0] != tokens[1]
    assert tokens[0].split(b"\t")[:2] == tokens[1].split(b"\t")[:2]


# --- S-FMT-14 removal list --------------------------------------------------------------


def test_s_fmt_14_removal_list_format(env: StoreEnv) -> None:
    env.shared_mode()
    s = env.store
    tomb = os.path.join(env.shared, ".ocl-removed")
    s.execute_write_memory("A", "a", "a")
    s.execute_write_memory("B", "b", "b")
    assert not os.path.lexists(tomb)
    s.execute_remove_memory("A")
    s.execute_remove_memory("B")
    assert env.read("home/.agents/memory/.ocl-removed") == "a.md\nb.md\n"
    assert mode_of(tomb) == 0o600
    assert s.execute_write_memory("A", "a2", "a") == 'Updated memory topic "A" (a.md).'
    assert env.read("home/.agents/memory/.ocl-removed") == "b.md\n"
    assert s.execute_write_memory("B", "b2", "b") == 'Updated memory topic "B" (b.md).'
    assert env.read("home/.agents/memory/.ocl-removed") == ""
    assert mode_of(tomb) == 0o600
    assert env.read("home/.agents/memory/MEMORY.md") == (
        f"# Memory Index\n\n\n- [A](a.md) {TS} -- a\n- [B](b.md) {TS} -- b"
    )


def test_s_fmt_14_existing_list_rewritten_0600(env: StoreEnv) -> None:
    env.shared_mode()
    env.put("home/.agents/memory/.ocl-removed", "b.md\nc.md\n")
    os.chmod(os.path.join(env.shared, ".ocl-removed"), 0o644)
    env.store.execute_write_memory("B", "b", "b")
    assert env.read("home/.agents/memory/.ocl-removed") == "c.md\n"
    assert mode_of(os.path.join(env.shared, ".ocl-removed")) == 0o600


# --- S-FMT-15 carry-over sentinel -------------------------------------------------------


def test_s_fmt_15_sentinel_empty_0600(env: StoreEnv) -> None:
    env.put(IDX, "# Memory Index\n\n- [A](a.md) 2026-08-01 -- a\n")
    env.put("agent/memory/a.md", "a\n")
    env.shared_mode()
    assert env.store.get_memory_dir() == env.shared
    sentinel = os.path.join(env.local, ".shared-dir-migrated")
    assert env.sandbox.path("agent/memory/.shared-dir-migrated").read_bytes() == b""
    assert mode_of(sentinel) == 0o600
    assert env.read("home/.agents/memory/MEMORY.md") == (
        "# Memory Index\n- [A](a.md) 2026-08-01 -- a\n"
    )
    # its presence alone means "done": a fresh process copies nothing more
    env.put("agent/memory/b.md", "b\n")
    env.put(IDX, "# Memory Index\n\n- [B](b.md) 2026-08-01 -- b\n")
    assert env.new_store().get_memory_dir() == env.shared
    assert not env.exists("home/.agents/memory/b.md")


def test_s_fmt_15_no_sentinel_without_local_index(env: StoreEnv) -> None:
    env.shared_mode()
    assert env.store.get_memory_dir() == env.shared
    assert not env.exists("agent/memory/.shared-dir-migrated")
