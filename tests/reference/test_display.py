"""S-DISP-1..6 (+ A-7): injection read, index entries, topic display, search.

Expected values were checked against the JS core 0.3.9 (memory-core.mjs) on the same cases.
"""

from __future__ import annotations

import errno
import os
import time
from dataclasses import asdict
from typing import Any

import pytest

from memconform.reference.errors import JsError, JsTypeError, NodeError
from memconform.reference.store import SIZE_MARKER, TOPIC_SIZE_MARKER, SearchHit, Store
from memconform.reference.text import UNDEFINED
from tests.conftest import StoreEnv
from tests.support import IDX, FaultFs, store_with

NOT_FOUND = "_(file not found)_"
UNSAFE_DIAG = "[openpi-memory] refusing to read unsafe MEMORY.md: not a regular file"


def line_marker(n: str) -> str:
    return f"\n\n<!-- memory truncated: MEMORY.md exceeds {n}-line limit; shorten the index -->"


def hooked(env: StoreEnv) -> tuple[Store, FaultFs]:
    fs = FaultFs()
    return store_with(env, fs), fs


def swap_after_probe(fs: FaultFs, path: str, target: str) -> None:
    """After the first ``lstat`` of ``path``, replace it by a symlink to ``target`` (a race)."""

    def swap(_: str) -> None:
        os.rename(path, path + ".moved")
        os.symlink(target, path)

    fs.hook("lstat", run=swap, match=lambda p: p == path, after=True)


def hits(found: list[SearchHit]) -> list[tuple[str, str, str, str]]:
    return [(h.name, h.filename, h.match_type, h.snippet) for h in found]


# --- S-DISP-1 readMemoryIndex ---------------------------------------------------------------


def test_s_disp_1_missing_index_initial_memory_creates_nothing(env: StoreEnv) -> None:
    env.config("{}")
    before = env.snapshot()
    assert env.store.read_memory_index(300) == "# Memory Index\n\n"
    assert env.snapshot() == before
    assert not env.exists("agent/memory")
    assert env.diagnostics == []


def test_s_disp_1_deleted_index_stays_absent(env: StoreEnv) -> None:
    env.config("{}")
    env.store.execute_write_memory("T", "c", "s")
    os.unlink(os.path.join(env.local, "MEMORY.md"))
    assert env.store.read_memory_index(300) == "# Memory Index\n\n"
    assert not env.exists(IDX)


def test_s_disp_1_size_truncation_exact(env: StoreEnv) -> None:
    env.config("{}")
    env.put(IDX, "# Memory Index\n\n" + "x" * 51300)
    got = env.store.read_memory_index(300)
    assert got == "# Memory Index\n\n" + "x" * (51200 - 16) + SIZE_MARKER
    assert "memory truncated: MEMORY.md exceeds size limit" in got
    assert len(got.encode()) < 51500
    assert SIZE_MARKER == (
        "\n\n<!-- memory truncated: MEMORY.md exceeds size limit; shorten the index -->"
    )


def test_s_disp_1_size_branch_slices_max_lines_and_keeps_all_when_absent(env: StoreEnv) -> None:
    env.config("{}")
    env.put(IDX, "# Memory Index\n\n" + "x" * 51300)
    # the size branch wins over the line branch; maxLines still slices the pieces
    assert env.store.read_memory_index(1) == "# Memory Index" + SIZE_MARKER
    assert env.store.read_memory_index(2) == "# Memory Index\n" + SIZE_MARKER
    full = env.store.read_memory_index()
    assert full == "# Memory Index\n\n" + "x" * (51200 - 16) + SIZE_MARKER


def test_s_disp_1_size_cut_inside_utf8_sequence_becomes_fffd(env: StoreEnv) -> None:
    env.config("{}")
    env.put(IDX, "# Ix\n" + "é" * 30000)  # 5 + 2*25597 = 51199: the cut splits one é
    got = env.store.read_memory_index(300)
    assert got == "# Ix\n" + "é" * 25597 + "\ufffd" + SIZE_MARKER


@pytest.mark.parametrize(
    ("max_lines", "expected"),
    [
        (2.5, "a\nb" + line_marker("2.5")),
        (0, line_marker("0")),
        (-0.0, line_marker("0")),
        (-1, "a\nb\nc" + line_marker("-1")),
        (2, "a\nb" + line_marker("2")),
        (3, "a\nb\nc" + line_marker("3")),  # the empty piece after the final LF counts
        (4, "a\nb\nc\n"),
        (1e21, "a\nb\nc\n"),
        (UNDEFINED, "a\nb\nc\n"),
        (None, line_marker("null")),
        ("2", "a\nb" + line_marker("2")),
        ("abc", "a\nb\nc\n"),
    ],
)
def test_s_disp_1_odd_max_lines(env: StoreEnv, max_lines: object, expected: str) -> None:
    env.config("{}")
    env.put(IDX, "a\nb\nc\n")
    assert env.store.read_memory_index(max_lines) == expected
    assert env.diagnostics == []


def test_s_disp_1_a7_exactly_max_lines_lf_terminated_reports_exceeding(env: StoreEnv) -> None:
    env.config("{}")
    lines = [f"line{i}" for i in range(50)]
    env.put(IDX, "".join(line + "\n" for line in lines))
    got = env.store.read_memory_index(50)
    assert got == "\n".join(lines) + line_marker("50")
    assert got.endswith("exceeds 50-line limit; shorten the index -->")
    # without the final LF there are exactly 50 pieces: no marker
    env.put(IDX, "\n".join(lines))
    assert env.store.read_memory_index(50) == "\n".join(lines)


def test_s_disp_1_b3_fractional_config_max_lines_marker(env: StoreEnv) -> None:
    env.config('{"max_lines": 75.5}')
    env.put(IDX, "\n".join(f"l{i}" for i in range(80)))
    rules = env.store.parse_rules()
    got = env.store.read_memory_index(rules.max_lines)
    assert got == "\n".join(f"l{i}" for i in range(75)) + line_marker("75.5")


@pytest.mark.parametrize("kind", ["fifo", "symlink", "directory", "dangling"])
def test_s_disp_1_non_regular_index_refused(env: StoreEnv, kind: str) -> None:
    env.config("{}")
    os.makedirs(env.local)
    path = os.path.join(env.local, "MEMORY.md")
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        env.put("agent/memory/real.txt", "# Memory Index\n\nsecret\n")
        os.symlink(os.path.join(env.local, "real.txt"), path)
    elif kind == "directory":
        os.mkdir(path)
    else:
        os.symlink(os.path.join(env.local, "nowhere"), path)
    before = env.snapshot()
    start = time.monotonic()
    got = env.store.read_memory_index(300)
    assert time.monotonic() - start < 2.0
    if kind == "dangling":  # existsSync follows the link: missing → INITIAL_MEMORY
        assert got == "# Memory Index\n\n"
        assert env.diagnostics == []
    else:
        assert got is None
        assert env.diagnostics == [UNSAFE_DIAG]
    assert env.snapshot() == before


def test_s_disp_1_read_error_diagnostic_and_none(env: StoreEnv) -> None:
    env.config("{}")
    env.put(IDX, "# Memory Index\n\n")
    store, fs = hooked(env)
    fs.fail("pread", err=errno.EIO, nth=None)
    assert store.read_memory_index(300) is None
    assert env.diagnostics == ["[openpi-memory] failed to read MEMORY.md: EIO: i/o error, read"]


def test_s_disp_1_symlink_swapped_after_probe(env: StoreEnv) -> None:
    env.config("{}")
    env.put(IDX, "# Memory Index\n\n")
    env.put("agent/memory/real", "x")
    store, fs = hooked(env)
    path = os.path.join(env.local, "MEMORY.md")
    swap_after_probe(fs, path, os.path.join(env.local, "real"))
    assert store.read_memory_index(300) is None
    assert env.diagnostics == [
        "[openpi-memory] failed to read MEMORY.md: ELOOP: too many symbolic links encountered, "
        f"open '{path}'"
    ]


def test_s_disp_1_reads_shared_index_in_shared_mode(env: StoreEnv) -> None:
    env.shared_mode()
    env.put("home/.agents/memory/MEMORY.md", "# Shared\n")
    env.put(IDX, "# Local\n")
    env.put("agent/memory/.shared-dir-migrated", "")
    assert env.store.read_memory_index(300) == "# Shared\n"


def test_s_disp_1_memory_dir_is_a_file_reads_as_missing(env: StoreEnv) -> None:
    env.config("{}")
    env.put("agent/memory", "not a directory")
    assert env.store.read_memory_index(300) == "# Memory Index\n\n"
    assert env.diagnostics == []


# --- S-DISP-2 readIndexEntries --------------------------------------------------------------

ENTRY_LINES = [
    "# Memory Index",
    "",
    "- [A](a.md) 2026-01-01T10:00:00+02:00 [pin] -- alpha  summary  ",
    "- [B](b.md) -- ",
    "- [C](c.md) --   ",
    "- [D](d.md) a--b -- c --  d",
    "- [E](e.md) 2026-13-01 x [stale?] --\u00a0\u00a0e",
    "\t- [F](f.md)",
    "- [G](g.md)2020-02-02Z--\tg\u2028tail",
    "- [H](.h.md) -- hidden",
    "- [I](MEMORY.md) -- idx",
]


def test_s_disp_2_entries_fields_exact(env: StoreEnv) -> None:
    env.config("{}")
    for name in "abcdefg":
        env.put(f"agent/memory/{name}.md", "x")
    env.put(IDX, "\n".join(ENTRY_LINES))
    got = [asdict(e) for e in env.store.read_index_entries()]

    def e(name: str, date: str, summary: str, pinned: bool = False, stale: bool = False) -> Any:
        return {
            "name": name,
            "filename": name.lower() + ".md",
            "date": date,
            "summary": summary,
            "pinned": pinned,
            "stale": stale,
        }

    assert got == [
        e("A", "2026-01-01T10:00:00+02:00", "alpha  summary  ", pinned=True),
        e("B", "—", ""),
        e("C", "—", " "),
        e("D", "—", "c --  d"),
        e("E", "2026-13-01", "e", stale=True),
        e("F", "—", ""),
        e("G", "2020-02-02", "g"),
    ]


def test_s_disp_2_flags_anywhere_in_rest_and_orphans_listed(env: StoreEnv) -> None:
    env.config("{}")
    env.put(IDX, "- [S](s.md) 2026-01-01 -- use [pin] and [stale?] here\n")
    (entry,) = env.store.read_index_entries()
    assert (entry.pinned, entry.stale, entry.summary) == (True, True, "use [pin] and [stale?] here")
    # maintenance never runs on reads: the orphan stays listed and the file is unchanged
    assert env.read(IDX) == "- [S](s.md) 2026-01-01 -- use [pin] and [stale?] here\n"


def test_s_disp_2_only_first_51200_bytes(env: StoreEnv) -> None:
    env.config("{}")
    env.put("agent/memory/late.md", "x")
    env.put("agent/memory/early.md", "x")
    filler = "# " + "f" * 51300
    env.put(IDX, "- [Early](early.md) -- e\n" + filler + "\n- [Late](late.md) -- l\n")
    assert [e.filename for e in env.store.read_index_entries()] == ["early.md"]
    # an entry cut by the limit is parsed from its visible prefix only
    head = "# " + "f" * (51200 - 2 - 1 - 16) + "\n"
    env.put(IDX, head + "- [Cut](late.md) -- summary beyond")
    (cut,) = env.store.read_index_entries()
    assert (cut.name, cut.filename, cut.summary) == ("Cut", "late.md", "")


@pytest.mark.parametrize("kind", ["missing", "fifo", "symlink", "directory"])
def test_s_disp_2_missing_or_non_regular_index_is_empty(env: StoreEnv, kind: str) -> None:
    env.config("{}")
    os.makedirs(env.local)
    path = os.path.join(env.local, "MEMORY.md")
    env.put("agent/memory/a.md", "x")
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        env.put("agent/memory/real.txt", "- [A](a.md) -- a\n")
        os.symlink(os.path.join(env.local, "real.txt"), path)
    elif kind == "directory":
        os.mkdir(path)
    before = env.snapshot()
    assert env.store.read_index_entries() == []
    assert env.snapshot() == before


def test_s_disp_2_open_failure_after_probe_raises(env: StoreEnv) -> None:
    env.config("{}")
    env.put(IDX, "- [A](a.md) -- a\n")
    env.put("agent/memory/real", "x")
    store, fs = hooked(env)
    path = os.path.join(env.local, "MEMORY.md")
    swap_after_probe(fs, path, os.path.join(env.local, "real"))
    with pytest.raises(NodeError) as info:
        store.read_index_entries()
    assert info.value.as_dict() == {
        "kind": "Error",
        "message": f"ELOOP: too many symbolic links encountered, open '{path}'",
        "code": "ELOOP",
    }


# --- S-DISP-3 readTopicContent --------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("fm.md", '---\nname: "x"\n---\n\n  \n body\n', "body\n"),
        ("crlf.md", "---\r\nname: x\r\n---\r\n\r\n  body\r\n", "body\r\n"),
        ("nofm.md", "  plain\n", "  plain\n"),
        ("empty.md", "---\n---\nbody", "---\n---\nbody"),
        ("emptyg.md", "---\n\n---\nbody", "body"),
        ("late.md", "intro\n---\na: 1\n---\nbody", "intro\n---\na: 1\n---\nbody"),
        ("dashes.md", "---\na\n----\nb\n---\nbody", "body"),
        ("Up.MD", "---\nx: 1\n---\nUP", "UP"),
    ],
)
def test_s_disp_3_topic_body(env: StoreEnv, name: str, content: str, expected: str) -> None:
    env.config("{}")
    env.put(f"agent/memory/{name}", content)
    before = env.snapshot()
    assert env.store.read_topic_content(name) == expected
    assert env.snapshot() == before


def test_s_disp_3_truncated_topic_marker(env: StoreEnv) -> None:
    env.config("{}")
    env.put("agent/memory/big.md", "---\na: 1\n---\n" + "y" * 51300)
    got = env.store.read_topic_content("big.md")
    assert got == "y" * (51200 - 13) + TOPIC_SIZE_MARKER
    assert TOPIC_SIZE_MARKER == (
        "\n\n<!-- memory truncated: topic exceeds size limit; read the file directly for "
        "the full body -->"
    )


@pytest.mark.parametrize("kind", ["symlink", "directory", "fifo", "missing"])
def test_s_disp_3_non_regular_topic_not_found(env: StoreEnv, kind: str) -> None:
    env.config("{}")
    env.put("agent/memory/homelab-server.md", "---\na: 1\n---\nsecret\n")
    path = os.path.join(env.local, "linked.md")
    if kind == "symlink":
        os.symlink(os.path.join(env.local, "homelab-server.md"), path)
    elif kind == "directory":
        os.mkdir(path)
    elif kind == "fifo":
        os.mkfifo(path)
    assert env.store.read_topic_content("linked.md") == NOT_FOUND
    assert env.store.read_topic_content("homelab-server.md") == "secret\n"


@pytest.mark.parametrize(
    "filename",
    [
        "../x.md",
        ".h.md",
        "MEMORY.md",
        "memory.md",
        "a/b.md",
        "x.txt",
        "a..b.md",
        "t\x7f.md",
        None,
        5,
        UNDEFINED,
        ["a.md"],
    ],
)
def test_s_disp_3_unsafe_filename_without_resolving_directory(
    env: StoreEnv, filename: object
) -> None:
    store, fs = hooked(env)
    before = env.snapshot()
    assert store.read_topic_content(filename) == NOT_FOUND
    assert fs.calls == []  # no configuration read, no probe
    assert env.snapshot() == before  # not even memory.jsonc is bootstrapped


def test_s_disp_3_open_failure_after_probe_raises(env: StoreEnv) -> None:
    # JS core: readTopicContent does not catch the bounded read, so a symlink swapped in
    # after the regular-file probe raises ELOOP (checked against memory-core.mjs).
    env.config("{}")
    env.put("agent/memory/t.md", "---\na: 1\n---\nbody\n")
    env.put("agent/memory/real", "x")
    store, fs = hooked(env)
    path = os.path.join(env.local, "t.md")
    swap_after_probe(fs, path, os.path.join(env.local, "real"))
    with pytest.raises(NodeError) as info:
        store.read_topic_content("t.md")
    assert info.value.code == "ELOOP"
    assert info.value.message == f"ELOOP: too many symbolic links encountered, open '{path}'"


def test_s_disp_3_reads_from_the_active_directory(env: StoreEnv) -> None:
    env.shared_mode()
    env.put("agent/memory/.shared-dir-migrated", "")
    env.put("agent/memory/t.md", "local")
    env.put("home/.agents/memory/t.md", "shared")
    assert env.store.read_topic_content("t.md") == "shared"


# --- S-DISP-4 / S-DISP-5 searchMemory -------------------------------------------------------

SORT_NAMES = [
    "zeta.md",
    "alpha.md",
    "Beta.md",
    "10.md",
    "9.md",
    "\u00e9x.md",
    "\uff21x.md",
    "\U0001f600x.md",
    "Up.MD",
    ".dot.md",
]


def populate_search(env: StoreEnv) -> None:
    env.config("{}")
    for n in SORT_NAMES:
        env.put(
            f"agent/memory/{n}", f'---\nname: "{n}"\ndescription: "tok"\n---\n\nbody tok here\n'
        )
    env.put("agent/memory/snip.md", "   " + "a" * 119 + "\U0001f600tail QQQ  \nQQQ second\n")
    env.put("agent/memory/late.md", "z" * 51200 + "LATETOKEN")
    os.symlink(os.path.join(env.local, "zeta.md"), os.path.join(env.local, "sym.md"))
    os.mkdir(os.path.join(env.local, "sub.md"))
    os.mkfifo(os.path.join(env.local, "pipe.md"))
    env.put(
        IDX,
        "# Memory Index\n\n- [Alpha Topic](alpha.md) 2026-01-01 -- the TOK summary\n"
        "- [Nine](9.md) 2026-01-01 -- other\n",
    )


def test_s_disp_4_index_phase(env: StoreEnv) -> None:
    populate_search(env)
    assert hits(env.store.search_memory("nine")) == [("Nine", "9.md", "index", "other")]
    assert hits(env.store.search_memory("9.MD")) == [("Nine", "9.md", "index", "other")]
    assert hits(env.store.search_memory("ALPHA t")) == [
        ("Alpha Topic", "alpha.md", "index", "the TOK summary")
    ]


def test_s_disp_4_snippet_falls_back_to_name_and_index_order(env: StoreEnv) -> None:
    env.config("{}")
    for n in ("b.md", "a.md"):
        env.put(f"agent/memory/{n}", "nothing")
    env.put(IDX, "- [Key B](b.md) 2026-01-01\n- [Key A](a.md) 2026-01-01 -- has key\n")
    assert hits(env.store.search_memory("KEY")) == [
        ("Key B", "b.md", "index", "Key B"),
        ("Key A", "a.md", "index", "has key"),
    ]
    assert [h.to_js() for h in env.store.search_memory("key a")] == [
        {"name": "Key A", "filename": "a.md", "matchType": "index", "snippet": "has key"}
    ]


def test_s_disp_4_no_match_is_empty(env: StoreEnv) -> None:
    populate_search(env)
    assert env.store.search_memory("no-such-token-anywhere") == []


def test_s_disp_5_sorted_body_order_and_skips(env: StoreEnv) -> None:
    populate_search(env)
    before = env.snapshot()
    fm = 'description: "tok"'
    assert hits(env.store.search_memory("TOK")) == [
        ("Alpha Topic", "alpha.md", "index", "the TOK summary"),
        ("10", "10.md", "body", fm),
        ("9", "9.md", "body", fm),  # indexed, but not matched by the index phase
        ("Beta", "Beta.md", "body", fm),
        ("Up.MD", "Up.MD", "body", fm),  # only a lowercase ".md" is cut from the name
        ("zeta", "zeta.md", "body", fm),
        ("\u00e9x", "\u00e9x.md", "body", fm),
        ("\uff21x", "\uff21x.md", "body", fm),
        ("\U0001f600x", "\U0001f600x.md", "body", fm),
    ]
    assert env.snapshot() == before


def test_s_disp_5_snippet_cut_in_code_units(env: StoreEnv) -> None:
    populate_search(env)
    (hit,) = env.store.search_memory("qqq")
    assert hits([hit]) == [("snip", "snip.md", "body", "a" * 119 + "\ud83d")]


def test_s_disp_5_bounded_prefix_only(env: StoreEnv) -> None:
    populate_search(env)
    assert env.store.search_memory("latetoken") == []


def test_s_disp_5_empty_query_matches_first_piece_of_every_candidate(env: StoreEnv) -> None:
    populate_search(env)
    got = hits(env.store.search_memory(""))
    assert got == [
        ("Alpha Topic", "alpha.md", "index", "the TOK summary"),
        ("Nine", "9.md", "index", "other"),
        ("10", "10.md", "body", "---"),
        ("Beta", "Beta.md", "body", "---"),
        ("Up.MD", "Up.MD", "body", "---"),
        ("late", "late.md", "body", "z" * 120),
        ("snip", "snip.md", "body", "a" * 119 + "\ud83d"),
        ("zeta", "zeta.md", "body", "---"),
        ("\u00e9x", "\u00e9x.md", "body", "---"),
        ("\uff21x", "\uff21x.md", "body", "---"),
        ("\U0001f600x", "\U0001f600x.md", "body", "---"),
    ]


def test_s_disp_5_orphan_body_once_and_tombstoned_searched(env: StoreEnv) -> None:
    env.config("{}")
    env.put("agent/memory/orphan-body.md", "intro\n  the ZZTOKEN is here  \n")
    env.put("agent/memory/both.md", "body ZZTOKEN too\n")
    env.put("agent/memory/gone.md", "ZZTOKEN gone\n")
    env.put("agent/memory/.ocl-removed", "gone.md\n")
    env.put(IDX, "- [Both](both.md) 2026-01-01 -- zztoken in summary\n")
    assert hits(env.store.search_memory("zztoken")) == [
        ("Both", "both.md", "index", "zztoken in summary"),
        ("gone", "gone.md", "body", "ZZTOKEN gone"),
        ("orphan-body", "orphan-body.md", "body", "the ZZTOKEN is here"),
    ]


def test_s_disp_5_frontmatter_only_token_found(env: StoreEnv) -> None:
    env.config("{}")
    env.put("agent/memory/t.md", '---\nname: "Secret Name"\n---\n\nbody\n')
    assert hits(env.store.search_memory("secret")) == [("t", "t.md", "body", 'name: "Secret Name"')]


def test_s_disp_5_missing_directory_stops_without_creating(env: StoreEnv) -> None:
    env.config("{}")
    before = env.snapshot()
    assert env.store.search_memory("x") == []
    assert env.snapshot() == before
    assert not env.exists("agent/memory")


def test_s_disp_5_memory_dir_is_a_file_raises_enotdir(env: StoreEnv) -> None:
    env.config("{}")
    env.put("agent/memory", "file")
    before = env.snapshot()
    with pytest.raises(NodeError) as info:
        env.store.search_memory("x")
    assert info.value.as_dict() == {
        "kind": "Error",
        "message": f"ENOTDIR: not a directory, scandir '{env.local}'",
        "code": "ENOTDIR",
    }
    assert env.snapshot() == before


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (UNDEFINED, "Cannot read properties of undefined (reading 'toLowerCase')"),
        (None, "Cannot read properties of null (reading 'toLowerCase')"),
        (5, "query.toLowerCase is not a function"),
        ([], "query.toLowerCase is not a function"),
        ({}, "query.toLowerCase is not a function"),
        (True, "query.toLowerCase is not a function"),
    ],
)
def test_s_disp_4_non_string_query_raises(env: StoreEnv, query: object, message: str) -> None:
    populate_search(env)
    with pytest.raises(JsTypeError) as info:
        env.store.search_memory(query)
    assert (info.value.kind, info.value.message) == ("TypeError", message)


# --- S-DISP-6 reads never write --------------------------------------------------------------


def test_s_disp_6_display_and_search_never_write(env: StoreEnv) -> None:
    populate_search(env)
    env.put("agent/memory/.lock", "1\t2\tx")  # a held lock does not matter to readers
    store, fs = hooked(env)
    before = env.snapshot()
    store.read_memory_index(300)
    store.read_memory_index(2)
    store.read_index_entries()
    store.read_topic_content("alpha.md")
    store.read_topic_content("missing.md")
    store.search_memory("tok")
    store.search_memory("")
    assert env.snapshot() == before
    assert not fs.named("mkdir")


def test_s_disp_6_only_bootstrap_and_carry_over_side_effects(env: StoreEnv) -> None:
    # no configuration: the first resolution bootstraps memory.jsonc and nothing else
    before = env.snapshot()
    assert env.store.search_memory("x") == []
    created = set(env.snapshot()) - set(before)
    assert created == {"agent/memory.jsonc"}
    # shared mode with a local store: resolution carries it over (allowed side effect)
    env.shared_mode()
    env.put("agent/memory/a.md", "alpha body")
    env.put(IDX, "# Memory Index\n\n- [A](a.md) 2026-01-01 -- a\n")
    local_before = {k: v for k, v in env.snapshot().items() if k.startswith("agent/memory/")}
    assert hits(env.store.search_memory("a")) == [("A", "a.md", "index", "a")]
    after = env.snapshot()
    assert after["home/.agents/memory/a.md"] == b"alpha body"
    assert "agent/memory/.shared-dir-migrated" in after
    for rel, data in local_before.items():
        assert after[rel] == data
    # once carried over, reads change nothing
    again = env.snapshot()
    env.store.read_index_entries()
    env.store.read_memory_index(300)
    env.store.read_topic_content("a.md")
    assert env.snapshot() == again


def test_s_disp_6_errors_are_not_swallowed_into_writes(env: StoreEnv) -> None:
    env.config("{}")
    env.put("agent/memory", "file")
    before = env.snapshot()
    with pytest.raises(JsError):
        env.store.search_memory("q")
    assert env.store.read_index_entries() == []
    assert env.snapshot() == before
