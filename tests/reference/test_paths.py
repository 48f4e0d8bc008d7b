"""Locations and environment (S-PATH-1..8).

Values marked "Node" were observed with the JS core 0.3.9 / Node 20 ``path.join`` on the same input.
"""

from __future__ import annotations

import os
import posixpath
import pwd
import re
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memconform.harness.drivers.sandbox import SNAPSHOT_DIR
from memconform.reference.errors import JsError, NodeError
from memconform.reference.paths import (
    StorePaths,
    index_path,
    join,
    lock_path,
    normalize,
    tombstones_path,
)
from memconform.reference.session import Session
from memconform.reference.store import Store
from tests.conftest import StoreEnv
from tests.support import CONFIG_DIAG, FALLBACK_RULES, FaultFs, ends, run_python, store_with

ASSISTANT = [{"role": "assistant", "content": [{"type": "text", "text": "working on it"}]}]

settings.register_profile("memconform-paths", deadline=None, max_examples=300, database=None)
settings.load_profile("memconform-paths")


# --- S-PATH-1 agent directory ----------------------------------------------------------


def test_s_path_1_agent_dir_from_environment(env: StoreEnv) -> None:
    paths = env.store.paths
    assert paths.agent_dir == env.agent
    assert paths.memory_rules == f"{env.agent}/memory.jsonc"
    env.store.parse_rules()
    assert os.path.isfile(f"{env.agent}/memory.jsonc")


def test_s_path_1_default_is_home_pi_agent(env: StoreEnv) -> None:
    base = env.sandbox.env()
    del base["PI_CODING_AGENT_DIR"]
    home = str(env.sandbox.home)
    store = Store(base, clock=env.clock)
    assert store.paths.agent_dir == f"{home}/.pi/agent"
    assert store.paths.memory_rules == f"{home}/.pi/agent/memory.jsonc"
    store.parse_rules()
    assert os.path.isfile(f"{home}/.pi/agent/memory.jsonc")


def test_s_path_1_home_as_node_homedir() -> None:
    # os.homedir(): HOME when set, even empty (libuv); the passwd entry only when unset.
    assert StorePaths.from_env({"HOME": ""}).agent_dir == ".pi/agent"  # Node
    assert StorePaths.from_env({"HOME": "/h//x/"}).agent_dir == "/h/x/.pi/agent"
    passwd_home = pwd.getpwuid(os.getuid()).pw_dir
    assert StorePaths.from_env({}).agent_dir == join(passwd_home, ".pi", "agent")


def test_s_path_1_captured_once(env: StoreEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    variables = env.sandbox.env()
    store = Store(variables, clock=env.clock)
    variables["PI_CODING_AGENT_DIR"] = "/elsewhere"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "/elsewhere")
    assert store.paths.memory_rules == f"{env.agent}/memory.jsonc"
    store.parse_rules()
    assert os.path.isfile(f"{env.agent}/memory.jsonc")


def test_s_path_1_reads_process_environment_at_load(
    env: StoreEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", env.agent + "/x/..")
    store = Store()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "/elsewhere")
    assert store.paths.memory_rules == f"{env.agent}/memory.jsonc"


EMPTY_AGENT_CHILD = """
import json
from memconform.reference.store import Store
diags = []
store = Store(diagnostics=diags.append)
first = store.parse_rules().to_js()
second = store.parse_rules().to_js()
print(json.dumps({"first": first, "second": second, "diags": diags,
                  "rules": store.paths.memory_rules, "handoff": store.paths.handoff_file,
                  "local": store.paths.local_dir, "dir": store.get_memory_dir(),
                  "legacy": store.paths.legacy_rules}))
"""


def test_s_path_1_empty_agent_dir_is_relative_and_bootstrap_fails(tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    variables = {**os.environ, "PI_CODING_AGENT_DIR": "", "HOME": str(tmp_path), "TZ": "UTC"}
    out = run_python(EMPTY_AGENT_CHILD, env=variables, cwd=cwd)
    assert (out["rules"], out["handoff"], out["local"], out["dir"]) == (
        "memory.jsonc",
        "HANDOFF.md",
        "memory",
        "memory",
    )
    assert out["legacy"] == "memory/RULES.jsonc"
    assert out["first"] == out["second"] == FALLBACK_RULES
    assert out["diags"] == [CONFIG_DIAG + "ENOENT: no such file or directory, mkdir ''"]  # Node
    assert list(cwd.iterdir()) == []


def test_s_path_1_empty_agent_dir_reads_config_in_cwd(tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "memory.jsonc").write_text('{"max_lines": 66, "shared_dir": false}')
    variables = {**os.environ, "PI_CODING_AGENT_DIR": "", "HOME": str(tmp_path), "TZ": "UTC"}
    out = run_python(EMPTY_AGENT_CHILD, env=variables, cwd=cwd)
    assert out["first"]["maxLines"] == 66
    assert out["diags"] == []
    assert sorted(p.name for p in cwd.iterdir()) == ["memory.jsonc"]


# --- S-PATH-2 shared home ----------------------------------------------------------------


def test_s_path_2_shared_home_from_environment(env: StoreEnv, tmp_path: Path) -> None:
    other = tmp_path / "T"
    other.mkdir()
    store = env.new_store(PI_SHARED_MEMORY_HOME=str(other))
    assert store.paths.shared_dir == f"{other}/.agents/memory"
    env.shared_mode()
    assert store.get_memory_dir() == f"{other}/.agents/memory"
    assert store.execute_write_memory("T", "c", "s") == 'Created memory topic "T" (t.md).'
    assert (other / ".agents" / "memory" / "t.md").is_file()
    assert not os.path.exists(env.shared)


def test_s_path_2_shared_home_defaults_to_home(env: StoreEnv) -> None:
    base = env.sandbox.env()
    del base["PI_SHARED_MEMORY_HOME"]
    base["HOME"] = str(env.sandbox.root)
    store = Store(base, clock=env.clock)
    assert store.paths.shared_dir == f"{env.sandbox.root}/.agents/memory"
    assert StorePaths.from_env(
        {"PI_CODING_AGENT_DIR": "/a", "PI_SHARED_MEMORY_HOME": ""}
    ).shared_dir == (".agents/memory")
    assert StorePaths.from_env({"PI_CODING_AGENT_DIR": "/a", "HOME": "/h"}).shared_dir == (
        "/h/.agents/memory"
    )


# --- S-PATH-3 fixed paths ---------------------------------------------------------------


def test_s_path_3_fixed_paths(env: StoreEnv) -> None:
    p = env.store.paths
    a = env.agent
    assert (p.local_dir, p.memory_rules, p.handoff_file) == (
        f"{a}/memory",
        f"{a}/memory.jsonc",
        f"{a}/HANDOFF.md",
    )
    assert (p.legacy_rules, p.legacy_rules_backup, p.legacy_handoff, p.carry_over_sentinel) == (
        f"{a}/memory/RULES.jsonc",
        f"{a}/memory/RULES.jsonc.bak",
        f"{a}/memory/HANDOFF.md",
        f"{a}/memory/.shared-dir-migrated",
    )
    assert p.shared_dir == f"{env.sandbox.home}/.agents/memory"


def test_s_path_3_shared_mode_moves_only_index_and_topics(env: StoreEnv) -> None:
    env.put("agent/memory/MEMORY.md", "# Memory Index\n\n- [L](l.md) 2026-01-01 -- l\n")
    env.put("agent/memory/l.md", "local\n")
    env.shared_mode()
    assert env.store.execute_write_memory("T", "c", "s") == 'Created memory topic "T" (t.md).'
    assert env.store.write_handoff(ASSISTANT, "threshold", 3) == "written"
    assert env.exists("agent/HANDOFF.md")
    assert env.exists("agent/memory.jsonc")
    assert env.exists("agent/memory/.shared-dir-migrated")
    shared = sorted(os.listdir(env.shared))
    assert "HANDOFF.md" not in shared and "memory.jsonc" not in shared
    assert {"MEMORY.md", "t.md", "l.md"} <= set(shared)
    assert env.store.read_handoff().startswith("## 2026-08-07T01:02:50+00:00 (threshold)\n")


# --- S-PATH-4 active directory ------------------------------------------------------------


def test_s_path_4_active_directory_resolved_each_call(env: StoreEnv) -> None:
    assert env.store.get_memory_index() == f"{env.local}/MEMORY.md"
    env.shared_mode()
    assert env.store.get_memory_index() == f"{env.shared}/MEMORY.md"
    assert env.store.execute_write_memory("S", "c", "s") == 'Created memory topic "S" (s.md).'
    env.config('{"shared_dir": false}')
    assert env.store.get_memory_dir() == env.local
    assert env.store.execute_write_memory("L", "c", "s") == 'Created memory topic "L" (l.md).'
    assert os.path.isfile(f"{env.shared}/s.md") and os.path.isfile(f"{env.local}/l.md")
    assert not os.path.exists(f"{env.local}/s.md") and not os.path.exists(f"{env.shared}/l.md")


def test_s_path_4_shared_resolution_runs_carry_over_first(env: StoreEnv) -> None:
    env.put("agent/memory/MEMORY.md", "# Memory Index\n\n- [L](l.md) 2026-01-01 -- l\n")
    env.put("agent/memory/l.md", "local\n")
    env.shared_mode()
    assert not os.path.exists(env.shared)
    assert env.store.get_memory_dir() == env.shared
    assert env.read("home/.agents/memory/l.md") == "local\n"


# --- S-PATH-5 files inside a memory directory ---------------------------------------------


def test_s_path_5_names_inside_a_directory(env: StoreEnv) -> None:
    d = env.local
    assert (index_path(d), lock_path(d), tombstones_path(d)) == (
        f"{d}/MEMORY.md",
        f"{d}/.lock",
        f"{d}/.ocl-removed",
    )
    seen: list[tuple[str, str, bool]] = []

    def hook(op: str, path: str) -> None:
        seen.append((op, path, os.path.exists(f"{d}/.lock")))

    fs = FaultFs()
    fs.hook("rename", run=lambda path: hook("rename", path), nth=None)
    fs.hook("open", run=lambda path: hook("open", path), nth=None)
    store = store_with(env, fs)
    assert store.execute_write_memory("T", "c", "s") == 'Created memory topic "T" (t.md).'
    renames = [(p, locked) for op, p, locked in seen if op == "rename"]
    assert renames == [(f"{d}/t.md", True), (f"{d}/MEMORY.md", True)]
    temps = [p for op, p, _ in seen if op == "open" and p.startswith(d + "/") and ".tmp-" in p]
    assert len(temps) == 2
    for tmp, target in zip(temps, ("t.md", "MEMORY.md"), strict=True):
        assert re.fullmatch(re.escape(f"{d}/{target}") + r"\.tmp-\d+-[0-9a-z]+", tmp)
    assert sorted(os.listdir(d)) == ["MEMORY.md", "t.md"]


def test_s_path_5_tombstones_live_in_the_shared_directory(env: StoreEnv) -> None:
    env.shared_mode()
    env.store.execute_write_memory("T", "c", "s")
    assert env.store.execute_remove_memory("T") == (
        'Removed "T" from the index. Topic file is preserved on disk.'
    )
    assert env.read("home/.agents/memory/.ocl-removed") == "t.md\n"


# --- S-PATH-6 shared mode is the acquired directory -----------------------------------------


def test_s_path_6_flag_change_during_write_keeps_shared_mode(env: StoreEnv) -> None:
    env.shared_mode()
    env.store.get_memory_dir()
    env.put("home/.agents/memory/.ocl-removed", "t.md\nother.md\n")
    flipped: list[str] = []

    def flip(path: str) -> None:
        assert os.path.exists(f"{env.shared}/.lock")  # the shared lock is held
        env.config('{"shared_dir": false}')
        flipped.append(path)

    fs = FaultFs()
    fs.hook("rename", run=flip, match=ends("/t.md"))  # the first rename onto t.md
    store = store_with(env, fs)
    assert store.execute_write_memory("T", "c", "s") == 'Created memory topic "T" (t.md).'
    assert flipped == [f"{env.shared}/t.md"]
    assert env.read("home/.agents/memory/.ocl-removed") == "other.md\n"
    assert env.exists("home/.agents/memory/MEMORY.md")
    assert store.get_memory_dir() == env.local


def test_s_path_6_local_dir_equal_to_shared_dir_is_shared_mode(env: StoreEnv) -> None:
    agent = f"{env.sandbox.home}/.agents"
    store = env.new_store(PI_CODING_AGENT_DIR=agent)
    assert store.paths.local_dir == store.paths.shared_dir
    assert store.parse_rules().shared_dir is False
    store.execute_write_memory("T", "c", "s")
    assert store.execute_remove_memory("T") == (
        'Removed "T" from the index. Topic file is preserved on disk.'
    )
    assert env.read("home/.agents/memory/.ocl-removed") == "t.md\n"  # Node


def test_s_path_6_string_equality_only(env: StoreEnv) -> None:
    shared = env.store.paths.shared_dir
    assert env.store.is_shared(shared)
    assert not env.store.is_shared(shared + "/")
    assert not env.store.is_shared(env.local)
    os.makedirs(env.shared)
    alias = f"{env.sandbox.root}/alias"
    os.symlink(env.shared, alias)
    assert not env.store.is_shared(alias)


# --- S-PATH-7 path.join semantics ----------------------------------------------------------


@pytest.mark.parametrize(
    ("segments", "joined"),
    [  # Node: path.join(...segments)
        (["//tmp//a/", "b"], "/tmp/a/b"),
        (["", "memory"], "memory"),
        (["", "memory.jsonc"], "memory.jsonc"),
        (["/tmp/x/../y/", "memory.jsonc"], "/tmp/y/memory.jsonc"),
        (["a", "..", ".."], ".."),
        (["/", "..", "x"], "/x"),
        (["./a/", "./b/"], "a/b/"),
        (["a/b/../..", ""], "."),
        (["a/b/../../", ""], "./"),
        (["/a/b/", ".."], "/a"),
        (["..", "a"], "../a"),
        (["/..", "a"], "/a"),
        (["a", "/b/", "//c//"], "a/b/c/"),
        (["", ""], "."),
        (["x", "."], "x"),
        (["x/", "./"], "x/"),
        (["//", ""], "/"),
        ([".", "."], "."),
        (["./", "..", "../"], "../../"),
        (["a", ".../b"], "a/.../b"),
        (["é/ü", "../ö"], "é/ö"),
    ],
)
def test_s_path_7_join_table(segments: list[str], joined: str) -> None:
    assert join(*segments) == joined


def node_join_model(*segments: str) -> str:
    """Node's join, modelled with posixpath: leading '//' collapses, a trailing '/' stays."""
    raw = "/".join(s for s in segments if s)
    if not raw:
        return "."
    out = posixpath.normpath(raw)
    if out.startswith("//"):
        out = out[1:]
    if raw.endswith("/") and out != "/":
        out += "/"
    return out


@given(
    st.lists(
        st.text(st.sampled_from(["/", ".", "a", "b", "é"]), max_size=6), min_size=1, max_size=4
    )
)
def test_s_path_7_join_matches_node_model(segments: list[str]) -> None:
    joined = join(*segments)
    assert joined == node_join_model(*segments)
    assert "//" not in joined and "/./" not in joined
    assert normalize(joined) == joined


def test_s_path_7_environment_values_are_normalised(env: StoreEnv) -> None:
    raw = f"{env.sandbox.root}//x/../agent/./"
    store = env.new_store(PI_CODING_AGENT_DIR=raw, PI_SHARED_MEMORY_HOME=f"{env.sandbox.home}/")
    assert store.paths.memory_rules == f"{env.agent}/memory.jsonc"
    assert store.paths.local_dir == env.local
    assert store.paths.shared_dir == env.shared
    assert StorePaths.from_env({"PI_CODING_AGENT_DIR": "/tmp/x/../y/"}).memory_rules == (
        "/tmp/y/memory.jsonc"
    )


def test_s_path_7_observable_strings_use_joined_paths(env: StoreEnv) -> None:
    raw = f"{env.sandbox.root}//x/../agent/./"
    os.mkfifo(f"{env.agent}/memory.jsonc")
    store = env.new_store(PI_CODING_AGENT_DIR=raw)
    store.parse_rules()
    assert env.diagnostics == [CONFIG_DIAG + f"Unsafe non-regular file: {env.agent}/memory.jsonc"]
    os.unlink(f"{env.agent}/memory.jsonc")
    os.makedirs(env.local)
    os.mkfifo(f"{env.local}/MEMORY.md")
    with pytest.raises(JsError) as caught:
        store.execute_write_memory("T", "c", "s")
    assert caught.value.message == f"Unsafe non-regular file: {env.local}/MEMORY.md"
    os.unlink(f"{env.local}/MEMORY.md")
    session = Session(store)
    prompt = session.before_agent_start({"systemPrompt": "S"})
    assert prompt is not None
    text = prompt["systemPrompt"]
    assert f"\n\nMemory dir: {env.local}\n\n# Memory Index\n\n" in text
    assert f"Edit {env.agent}/memory.jsonc to customise." in text
    assert raw not in text and "//" not in text.replace("https://", "")


# --- S-PATH-8 directory creation -----------------------------------------------------------


@pytest.mark.parametrize("op", ["remove", "pin"])
def test_s_path_8_remove_and_pin_leave_an_empty_directory(env: StoreEnv, op: str) -> None:
    store = env.store
    result = (
        store.execute_remove_memory("x") if op == "remove" else store.execute_pin_memory("x", True)
    )
    assert result == "No memory index found."
    assert os.path.isdir(env.local) and os.listdir(env.local) == []
    assert sorted(os.listdir(env.agent)) == ["memory", "memory.jsonc"]


def test_s_path_8_reads_create_only_the_configuration(env: StoreEnv) -> None:
    store = env.store
    assert store.read_memory_index(300) == "# Memory Index\n\n"
    assert store.read_index_entries() == []
    assert store.search_memory("x") == []
    assert store.read_topic_content("a.md") == "_(file not found)_"
    assert store.read_handoff() == ""
    assert store.get_memory_dir() == env.local
    files = sorted(k for k, v in env.snapshot().items() if v != SNAPSHOT_DIR)
    assert files == ["agent/memory.jsonc"]  # Node: the same single file
    assert os.listdir(env.agent) == ["memory.jsonc"] and os.listdir(env.sandbox.home) == []


def test_s_path_8_parse_rules_creates_agent_dir_only_when_config_missing(env: StoreEnv) -> None:
    os.rmdir(env.agent)
    env.store.parse_rules()
    assert os.listdir(env.agent) == ["memory.jsonc"]
    before = os.stat(env.agent)
    env.store.parse_rules()
    assert os.stat(env.agent).st_mtime_ns == before.st_mtime_ns


def test_s_path_8_handoff_write_does_not_create_agent_dir(env: StoreEnv) -> None:
    missing = f"{env.sandbox.root}/missing/agent"
    store = env.new_store(PI_CODING_AGENT_DIR=missing)
    with pytest.raises(NodeError) as caught:
        store.write_handoff(ASSISTANT, "threshold", 3)
    assert caught.value.code == "ENOENT"
    assert not os.path.exists(f"{env.sandbox.root}/missing")


def test_s_path_8_carry_over_creates_the_shared_directory(env: StoreEnv) -> None:
    env.put("agent/memory/MEMORY.md", "# Memory Index\n\n- [L](l.md) 2026-01-01 -- l\n")
    env.put("agent/memory/l.md", "local\n")
    env.shared_mode()
    assert env.store.read_memory_index(300) is not None
    assert os.path.isdir(env.shared)
    assert stat.S_ISREG(os.lstat(f"{env.shared}/MEMORY.md").st_mode)


def test_s_path_8_no_index_and_shared_mode_creates_nothing_on_read(env: StoreEnv) -> None:
    env.shared_mode()
    assert env.store.read_memory_index(300) == "# Memory Index\n\n"
    assert env.store.read_index_entries() == []
    assert not os.path.exists(env.shared)
